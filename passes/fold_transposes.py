"""byoc-fold-transposes: a transpose feeding a matrix product becomes the
product's transpose flag, so the product reads its operand in place instead
of a transposed copy.

    batch_matmul(transpose(x, (0, 2, 1)), y)   => batch_matmul(x, y, transpose_a = !ta)
    matmul(a, transpose(b))                    => matmul(a, b, transpose_b = !tb)
    dense(x, transpose(w))                     => matmul(x, w)

Attention as PyTorch exports it reads the keys as
`reshape(transpose(k, (0, 2, 3, 1)))` (heads split and transposed in one
permutation): the swap of the last two axes moves into the flag and what
remains, `transpose(k, (0, 2, 1, 3))`, copies whole rows (the innermost
axis stays in place), as the queries' and values' transposes do. Such a
rewrite needs the transpose and reshape to have no other user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import (
    SweepPass,
    insert_before,
    replace_op,
    set_operand,
    shape_of,
)
from byoc.passes.simplify_shapes import (
    moves_only_unit_axes,
    permutation,
    reshape_source,
)


def swaps_last_two(perm: Sequence[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and tuple(perm) == (*range(rank - 2), rank - 1, rank - 2)


def untransposed(value: SSAValue, anchor: Operation) -> SSAValue | None:
    """A value whose last two axes swapped give `value`, reading it with fewer
    or cheaper copies (new ops go before `anchor`); None if there is none."""
    owner = value.owner
    if isinstance(owner, relay.TransposeOp) and swaps_last_two(permutation(owner)):
        return owner.data
    if not isinstance(owner, relay.ReshapeOp) or not value.has_one_use():
        return None
    # reshape(transpose(x, perm)) merging only the axes before the last two.
    transpose = owner.data.owner
    if not isinstance(transpose, relay.TransposeOp) or not owner.data.has_one_use():
        return None
    middle, out = shape_of(owner.data), shape_of(value)
    if len(middle) < 2 or len(out) < 2 or middle[-2:] != out[-2:]:
        return None
    perm = list(permutation(transpose))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    source = transpose.data
    if perm == sorted(perm) or moves_only_unit_axes(perm, shape_of(source)):
        source = reshape_source(source)  # already in the order wanted: no copy
    elif perm[-1] == len(perm) - 1:
        source = insert_before(relay.TransposeOp(source, perm), anchor)
    else:
        return None  # still an element-by-element transpose: nothing gained
    target = (*out[:-2], out[-1], out[-2])
    if shape_of(source) == target:
        return source
    return insert_before(relay.ReshapeOp(source, target), anchor)


def flip(op: Operation, flag: str) -> None:
    op.properties[flag] = relay.bool_attr(not op.attrs()[flag])


def fold_transposes(op: Operation) -> bool:
    """Move transposes of `op`'s operands into its flags; whether it did."""
    if isinstance(op, relay.DenseOp):
        weight = op.weight.owner
        if isinstance(weight, relay.TransposeOp) and len(shape_of(op.weight)) == 2:
            replace_op(op, insert_before(relay.MatmulOp(op.data, weight.data), op))
            return True
        return False
    if isinstance(op, relay.BatchMatmulOp):
        operands = ((0, "transpose_a"), (1, "transpose_b"))
    elif isinstance(op, relay.MatmulOp):
        operands = ((1, "transpose_b"),)
        if len(shape_of(op.tensor_a)) >= 2:
            operands = ((0, "transpose_a"), *operands)
    else:
        return False
    changed = False
    for index, flag in operands:
        source = untransposed(op.operands[index], op)
        if source is not None:
            set_operand(op, index, source)
            flip(op, flag)
            changed = True
    return changed


@dataclass(frozen=True)
class FoldTransposesPass(SweepPass):
    """Turns transposes feeding dense, matmul and batch_matmul into their
    transpose flags."""

    name = "byoc-fold-transposes"

    def rewrite(self, op: Operation) -> object:
        return fold_transposes(op)
