"""byoc-simplify-shapes: chains of data-movement ops collapsed, so a value is
copied at most once between two computations.

    reshape(reshape(x))         => reshape(x)       (also squeeze, expand_dims,
                                                      batch_flatten: all reshapes)
    transpose(transpose(x, b), a) => transpose(x, b∘a)  (nothing if the identity)
    transpose(x, p)             => reshape(x)       when p moves only size-1 axes
    softmax(reshape(x))         => reshape(softmax(x))  along the last axis, which
                                                      the reshape keeps (also
                                                      log_softmax)

A chain that ends where it started (a reshape back to the input's shape)
disappears: ONNX's MatMul of 4-d attention scores is a reshape to 3-d, a
batch matmul and a reshape back, its Softmax runs on the 4-d scores and the
next MatMul reshapes them to 3-d again; the softmax then reads the batch
matmul's result itself (cblas runs the two together) and both reshapes go. One sweep in program order: each op's source has already been
collapsed when the op is visited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import SweepPass, insert_before, replace_op, shape_of

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


def simplify_shape_op(op: Operation) -> bool:
    """Collapse `op` with the data-movement op before it; whether it changed."""
    if isinstance(op, ROW_OPS):
        return sink_reshape(op)
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
    axes become reshapes; reshapes move after a softmax along the last axis."""

    name = "byoc-simplify-shapes"

    def rewrite(self, op: Operation) -> object:
        return simplify_shape_op(op)
