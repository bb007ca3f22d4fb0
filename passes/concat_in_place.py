"""Concatenations written in place: which values of a function are computed
straight into their slice of a concatenation's buffer.

Along an axis whose leading dimensions are all 1 (the channels of an NCHW
tensor at batch 1: SqueezeNet's fire modules, Inception's blocks, DenseNet's
dense blocks), each operand of a `relay.concatenate` is one contiguous run of
its result. Its producer can then write that run itself (destination-passing:
every lowering and every external function writes the buffer it is given), and
the concatenation copies nothing. Nested concatenations (DenseNet's `x1 =
concat(x0, y1)`, `x2 = concat(x1, y2)`, ...) share one buffer, the outermost
one's: its *root*.

This is sound because a value is written once, by its producer, and never
changed: other readers of a slice (DenseNet's batch norm of `x1`) read the same
bytes a separate buffer would hold, and slices of one root never overlap unless
one concatenation holds the other, whose own op only copies the operands not
written in place. Values whose buffer exists before the function runs (its
arguments, constants), values the function returns (their buffer is the
caller's) and a value a concatenation reads twice are copied as before.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import CompileTimeFixedBitwidthType, TensorType
from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay


def contiguous_slices(op: Operation) -> bool:
    """Whether `op` is a `relay.concatenate` whose operands are contiguous runs
    of its result (every dimension before the axis is 1), of fixed-size elements."""
    if not isinstance(op, relay.ConcatenateOp):
        return False
    typ = op.result.type
    if not isinstance(typ, TensorType) or not isinstance(
        typ.element_type, CompileTimeFixedBitwidthType
    ):
        return False
    shape = typ.get_shape()
    axis = relay.normalize_axis(op.attrs()["axis"], len(shape), op.name)  # type: ignore[arg-type]
    return all(d == 1 for d in shape[:axis])


def writable_in_place(op: Operation) -> bool:
    """Whether some operand of `op` (a concatenation with contiguous slices, not
    returned) could be written in place: one an op of the same function
    computes, not a constant. A backend leaves such concatenations to the
    host, which writes them in place."""
    return (
        contiguous_slices(op)
        and not any(isinstance(use.operation, func.ReturnOp) for use in op.results[0].uses)
        and any(
            isinstance(v.owner, Operation) and not isinstance(v.owner, relay.ConstantOp)
            for v in op.operands
        )
    )


@dataclass(frozen=True)
class Slice:
    """Where a value lives: `offset` bytes into the buffer of `root` (the result
    of the outermost concatenation holding it; a root is its own slice at 0)."""

    root: SSAValue
    offset: int


def tensor_bytes(value: SSAValue) -> int:
    """Bytes of the buffer of `value`, a tensor of fixed-size elements."""
    typ = value.type
    assert isinstance(typ, TensorType)
    element = typ.element_type
    assert isinstance(element, CompileTimeFixedBitwidthType)
    return math.prod(typ.get_shape()) * element.compile_time_size


def plan_slices(
    ops: Sequence[Operation], kept: Collection[SSAValue]
) -> dict[SSAValue, Slice]:
    """The values of `ops` (one block, in program order) that live in a slice of
    a concatenation's buffer, and the concatenations holding them, each mapped to
    its place in its root's buffer.

    `kept`: values that must keep a buffer of their own (the function's returned
    values). An operand is written in place when it is a result of an op of
    `ops` other than a constant, not kept, and not already placed (in another
    concatenation, or earlier in this one). Two linear sweeps: forward to pick
    each operand's parent, backward to resolve roots and absolute offsets.
    """
    parent: dict[SSAValue, tuple[SSAValue, int]] = {}
    concats: list[Operation] = []
    for op in ops:
        if not contiguous_slices(op) or op.results[0] in kept:
            continue
        result = op.results[0]
        offset = 0
        placed = False
        for value in op.operands:
            size = tensor_bytes(value)
            owner = value.owner
            if (
                size
                and isinstance(owner, Operation)
                and not isinstance(owner, relay.ConstantOp)
                and value not in kept
                and value not in parent
            ):
                parent[value] = (result, offset)
                placed = True
            offset += size
        if placed:
            concats.append(op)
    slices: dict[SSAValue, Slice] = {}
    # A concatenation comes after the ones it holds: resolving from the last one
    # gives each its root before its operands are resolved.
    for op in reversed(concats):
        result = op.results[0]
        here = slices.get(result)
        if here is None:
            here = slices[result] = Slice(result, 0)
        for value in op.operands:
            found = parent.get(value)
            if found is not None and found[0] is result:
                slices[value] = Slice(here.root, here.offset + found[1])
    return slices


def copied_operands(op: Operation, slices: dict[SSAValue, Slice]) -> list[bool]:
    """For each operand of `op`, a concatenation in `slices`, whether its op must
    still copy it (it was not written in place)."""
    here = slices[op.results[0]]
    copied: list[bool] = []
    offset = here.offset
    for value in op.operands:
        place = slices.get(value)
        copied.append(place is None or place.root is not here.root or place.offset != offset)
        offset += tensor_bytes(value)
    return copied
