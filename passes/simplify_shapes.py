"""byoc-simplify-shapes: chains of data-movement ops collapsed, so a value is
copied at most once between two computations.

    reshape(reshape(x))         => reshape(x)       (also squeeze, expand_dims,
                                                      batch_flatten: all reshapes)
    transpose(transpose(x, b), a) => transpose(x, b∘a)  (nothing if the identity)
    transpose(x, p)             => reshape(x)       when p moves only size-1 axes
    softmax(reshape(x))         => reshape(softmax(x))  along the last axis, which
                                                      the reshape keeps (also
                                                      log_softmax)
    add(reshape(x), m)          => reshape(add(x, m'))  when m varies only along
                                                      trailing axes the reshape
                                                      keeps (any elementwise
                                                      binary op, either side)

A chain that ends where it started (a reshape back to the input's shape)
disappears: ONNX's MatMul of 4-d attention scores is a reshape to 3-d, a
batch matmul and a reshape back, its Softmax runs on the 4-d scores and the
next MatMul reshapes them to 3-d again; the softmax then reads the batch
matmul's result itself (cblas runs the two together) and both reshapes go.
An additive attention mask [1, 1, 1, S] between the 4-d scores and their
softmax (transformers' exports) stands between that reshape and the softmax:
the add moves before the reshape, onto the batch matmul's 3-d scores (the
mask's rows broadcast the same over heads and query rows either way), and
the softmax's reshape then cancels as above. One sweep in program order:
each op's source has already been collapsed when the op is visited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import SweepPass, insert_before, replace_op, shape_of
from byoc.passes.graph_edit import constant_of, new_constant  # a constant mask

RESHAPES = (relay.ReshapeOp, relay.SqueezeOp, relay.ExpandDimsOp, relay.BatchFlattenOp)
"""Ops that keep the row-major order of the elements and change only the shape."""


def permutation(op: relay.TransposeOp) -> tuple[int, ...]:
    """`op`'s axes, normalised (none means reversed)."""
    rank = len(shape_of(op.data))
    return relay.transpose_axes(rank, op.attrs()["axes"], op.name)


def moves_only_unit_axes(perm: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether transposing `shape` by `perm` keeps the order of every axis larger
    than 1 (so it is a reshape: the elements stay in row-major order)."""
    kept = [a for a in perm if shape[a] != 1]
    return kept == sorted(kept)


def reshape_source(value: SSAValue) -> SSAValue:
    """The value `value` is a reshape of, looking through one reshape or one
    transpose of size-1 axes (chains before it are already collapsed)."""
    owner = value.owner
    if isinstance(owner, RESHAPES):
        return owner.operands[0]
    if isinstance(owner, relay.TransposeOp) and moves_only_unit_axes(
        permutation(owner), shape_of(owner.data)
    ):
        return owner.data
    return value


def reshaped(source: SSAValue, op: Operation) -> SSAValue:
    """`source` given the shape of `op`'s result, through a new reshape inserted
    before `op` unless the shapes already agree."""
    result = op.results[0]
    if source.type == result.type:
        return source
    return insert_before(relay.ReshapeOp(source, shape_of(result)), op)


ROW_OPS = (relay.SoftmaxOp, relay.LogSoftmaxOp)
"""Ops normalising rows along one axis: along the last one they commute with a
reshape that keeps it."""


def sink_reshape(op: relay.SoftmaxOp | relay.LogSoftmaxOp) -> bool:
    """`op` along the last axis of a reshape that keeps that axis computed on
    the reshape's input, the reshape moved after it; whether it was."""
    source = reshape_source(op.data)
    if source is op.data:
        return False
    shape, before = shape_of(op.data), shape_of(source)
    last = len(shape) - 1
    if relay.normalize_axis(op.attrs()["axis"], len(shape), op.name) != last:
        return False
    if not before or before[-1] != shape[-1]:
        return False
    rows = insert_before(type(op)(source, axis=-1), op)
    replace_op(op, reshaped(rows, op))
    return True


def kept_trailing_axes(before: Sequence[int], after: Sequence[int]) -> int:
    """How many trailing axes a reshape from `before` to `after` keeps (their
    sizes equal, so each of their elements keeps its index along them)."""
    kept = 0
    while kept < min(len(before), len(after)) and before[-1 - kept] == after[-1 - kept]:
        kept += 1
    return kept


def reshaped_where_defined(value: SSAValue, shape: Sequence[int], user: Operation) -> SSAValue:
    """`value` reshaped to `shape` by a reshape placed right after `value` is
    defined (first in the block for an argument), not before `user`: a
    composite whose chain `user` joins may read only values defined before
    the chain starts (an attention mask beside batch_matmul -> add ->
    softmax)."""
    reshape = relay.ReshapeOp(value, shape)
    reshape.location = getattr(user, "location", None) or reshape.location
    owner = value.owner
    block = user.parent
    assert block is not None
    if isinstance(owner, Operation) and owner.parent is block:
        block.insert_op_after(reshape, owner)
    else:
        first = block.first_op
        assert first is not None
        block.insert_op_before(reshape, first)
    return reshape.results[0]


def sink_reshape_through_binary(op: relay.ElementwiseBinaryOp) -> bool:
    """`op` of a reshape and a value broadcast along every axis but trailing
    ones the reshape keeps, computed on the reshape's input, the reshape moved
    after it; whether it was. The other operand is reshaped to those trailing
    axes (a mask [1, 1, 1, S] becomes [1, 1, S] on [H, S, S] scores), so `op`'s
    result has the input's shape; a constant one becomes a new constant."""
    for side in (0, 1):
        source = reshape_source(op.operands[side])
        if source is op.operands[side]:
            continue
        other = op.operands[1 - side]
        shape, before, broadcast = shape_of(op.operands[side]), shape_of(source), shape_of(other)
        if shape_of(op.results[0]) != shape or not before:
            continue  # the other operand widens the result: not a pure broadcast
        kept = kept_trailing_axes(before, shape)
        leading = broadcast[: max(0, len(broadcast) - kept)]
        if any(size != 1 for size in leading):
            continue  # it varies along an axis the reshape changes
        tail = broadcast[len(leading):]
        if len(tail) != len(broadcast) and (array := constant_of(other)) is not None:
            other = new_constant(array.reshape(tail), other, op)  # a causal mask
        elif len(tail) != len(broadcast):
            other = reshaped_where_defined(other, tail, op)
        operands = (source, other) if side == 0 else (other, source)
        computed = insert_before(type(op)(*operands), op)
        replace_op(op, reshaped(computed, op))
        return True
    return False


def simplify_shape_op(op: Operation) -> bool:
    """Collapse `op` with the data-movement op before it; whether it changed."""
    if isinstance(op, ROW_OPS):
        return sink_reshape(op)
    if isinstance(op, relay.ElementwiseBinaryOp):
        return sink_reshape_through_binary(op)
    if isinstance(op, RESHAPES):
        source = reshape_source(op.operands[0])
        if source is op.operands[0] and source.type != op.results[0].type:
            return False
        replace_op(op, reshaped(source, op))
        return True
    if not isinstance(op, relay.TransposeOp):
        return False
    source, perm = op.data, permutation(op)
    inner = source.owner
    if isinstance(inner, relay.TransposeOp):
        first = permutation(inner)
        source, perm = inner.data, tuple(first[a] for a in perm)
    if moves_only_unit_axes(perm, shape_of(source)):
        replace_op(op, reshaped(reshape_source(source), op))
        return True
    if source is op.data:
        return False
    replace_op(op, insert_before(relay.TransposeOp(source, perm), op))
    return True


@dataclass(frozen=True)
class SimplifyShapesPass(SweepPass):
    """Collapses chains of reshapes and of transposes; transposes of size-1
    axes become reshapes; reshapes move after a softmax along the last axis
    and after elementwise binary ops whose other operand varies only along
    trailing axes they keep."""

    name = "byoc-simplify-shapes"

    def rewrite(self, op: Operation) -> object:
        return simplify_shape_op(op)
