"""Lowerings of the data-movement relay ops beyond plain copies (TVM's
relay/op/transform: take, ...) to loop nests of the loop-level IR.

Used by convert-relay-to-loops (`TRANSFORM_LOWERINGS`). They work on any
element type: they load and store elements, and compute only on indices.
An op that can meet a bad index at run time (take in "fast" mode) returns an
`i32` status, nonzero when it did, instead of reading out of bounds.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, i1, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from byoc.dialects import relay
from byoc.passes.loop_nests import INDEX, BodyBuilder, shape_of
from byoc.passes.lower_nn import (
    Index,
    entry_alloca,
    index_max,
    index_min,
    load,
    nest,
    store,
    value_of,
)

_SLT = IntegerAttr(2, i64)  # arith.cmpi predicates
_UGE = IntegerAttr(9, i64)


def _cmpi(b: BodyBuilder, predicate: IntegerAttr, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(arith.CmpiOp, x, y, result_type=i1, properties={"predicate": predicate})


def _select(b: BodyBuilder, cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(arith.SelectOp, cond, x, y, result_type=x.type)


def as_index(b: BodyBuilder, value: SSAValue) -> SSAValue:
    """An `i32`/`i64` scalar as an `index`."""
    return b.scalar(arith.IndexCastOp, value, result_type=INDEX)


def _if(b: BodyBuilder, cond: SSAValue) -> BodyBuilder:
    """A builder inside the then-block of a new `scf.if cond` (no else)."""
    body = Block()
    terminator = scf.YieldOp.create()
    body.add_op(terminator)
    b.insert(scf.IfOp.create(operands=(cond,), regions=(Region(body), Region())))
    return b.at(body, terminator)


class Status:
    """An `i32` status cell at the function entry: 0 until `fail_if` sees a
    true condition; `value` reads it after the loops."""

    def __init__(self, b: BodyBuilder):
        self.cell = entry_alloca(b, (), i32, "status")
        store(b, b.constant(0, i32), self.cell, [])

    def fail_if(self, b: BodyBuilder, cond: SSAValue) -> None:
        inner = _if(b, cond)
        store(inner, inner.constant(1, i32), self.cell, [])

    def value(self, b: BodyBuilder) -> SSAValue:
        return load(b, self.cell, [])


def normalized_index(
    b: BodyBuilder, index: SSAValue, size: int, mode: str, status: Status | None
) -> Index:
    """`index` (an `index` value) mapped into `[0, size)` as `relay.take`'s
    `mode` says; for "fast", an index outside `[-size, size)` sets `status` and
    reads element 0 instead."""
    if mode == "clip":
        return index_min(b, index_max(b, index, 0), size - 1)
    n = b.index(size)
    if mode == "wrap":
        rest = b.scalar(arith.RemSIOp, index, n)
        negative = _cmpi(b, _SLT, rest, b.index(0))
        return _select(b, negative, b.scalar(arith.AddiOp, rest, n), rest)
    negative = _cmpi(b, _SLT, index, b.index(0))
    wrapped = _select(b, negative, b.scalar(arith.AddiOp, index, n), index)
    # Unsigned: a still-negative index compares as huge.
    bad = _cmpi(b, _UGE, wrapped, n)
    assert status is not None
    status.fail_if(b, bad)
    return _select(b, bad, b.index(0), wrapped)


def _delinearize(b: BodyBuilder, offset: Index, extents: Sequence[int]) -> list[Index]:
    """The row-major indices of `offset` in a block of `extents`."""
    indices: list[Index] = []
    stride = pymath.prod(extents)
    for position, extent in enumerate(extents):
        stride //= extent
        index = value_of(b, offset)
        if stride != 1:
            index = b.scalar(arith.DivUIOp, index, b.index(stride))
        if position != 0:
            index = b.scalar(arith.RemUIOp, index, b.index(extent))
        indices.append(index)
    return indices


def lower_take(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> SSAValue | None:
    """Lowers `relay.take`: a nest over the outer and index dimensions reads
    each index once, normalises it, then copies the inner block it selects."""
    assert isinstance(op, relay.TakeOp)
    data, indices = operands
    out = results[0]
    attrs = op.attrs()
    mode = str(attrs["mode"])
    data_shape, index_shape = shape_of(data), shape_of(indices)
    if pymath.prod(shape_of(out)) == 0:
        return None
    status = Status(b) if mode == "fast" else None
    if attrs["axis"] is None:
        size = pymath.prod(data_shape)
        inner, ivs = nest(b, index_shape, "j")
        raw = as_index(inner, load(inner, indices, ivs))
        flat = normalized_index(inner, raw, size, mode, status)
        value = load(inner, data, _delinearize(inner, flat, data_shape))
        store(inner, value, out, ivs)
        return status.value(b) if status else None
    axis = relay.normalize_axis(int(attrs["axis"]), len(data_shape), op.name)  # type: ignore[arg-type]
    outer, post = data_shape[:axis], data_shape[axis + 1 :]
    mid, ivs = nest(b, (*outer, *index_shape), "i")
    outer_ivs, index_ivs = ivs[: len(outer)], ivs[len(outer) :]
    raw = as_index(mid, load(mid, indices, index_ivs))
    picked = normalized_index(mid, raw, data_shape[axis], mode, status)
    inner, post_ivs = nest(mid, post, "k")
    value = load(inner, data, [*outer_ivs, picked, *post_ivs])
    store(inner, value, out, [*outer_ivs, *index_ivs, *post_ivs])
    return status.value(b) if status else None


TransformLowering = Callable[
    [BodyBuilder, Operation, Sequence[SSAValue], Sequence[SSAValue]], SSAValue | None
]

TRANSFORM_LOWERINGS: dict[type[Operation], TransformLowering] = {
    relay.TakeOp: lower_take,
}
"""The lowerings of `relay.TRANSFORM_OPS`, for convert-relay-to-loops' `LOWERINGS`."""
