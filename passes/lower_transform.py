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
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerType,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.dialects import relay
from byoc.passes.loop_nests import (
    INDEX,
    BodyBuilder,
    compare_floats,
    compare_integers,
    copy_nest,
    element_type_of,
    select,
    shape_of,
    unsigned_order,
    wrapping,
)
from byoc.passes.lower_nn import (
    Index,
    entry_alloca,
    fill,
    for_range,
    index_add,
    index_max,
    index_min,
    index_mul,
    index_sub,
    load,
    nest,
    store,
    value_of,
)
from byoc.passes.lower_resize import lower_resize2d

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
        negative = compare_integers(b, "slt", rest, b.index(0))
        return select(b, negative, b.scalar(arith.AddiOp, rest, n), rest)
    negative = compare_integers(b, "slt", index, b.index(0))
    wrapped = select(b, negative, b.scalar(arith.AddiOp, index, n), index)
    # Unsigned: a still-negative index compares as huge.
    bad = compare_integers(b, "uge", wrapped, n)
    assert status is not None
    status.fail_if(b, bad)
    return select(b, bad, b.index(0), wrapped)


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


def lower_gather(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> SSAValue | None:
    """Lowers `relay.gather`: one nest over the indices, each index normalised
    ([-n, n), else a failure status) and used along the axis."""
    assert isinstance(op, relay.GatherOp)
    (data, indices), (out,) = operands, results
    shape = shape_of(out)
    if pymath.prod(shape) == 0:
        return None
    data_shape = shape_of(data)
    axis = relay.normalize_axis(int(op.attrs()["axis"]), len(data_shape), op.name)
    status = Status(b)
    inner, ivs = nest(b, shape, "i")
    raw = as_index(inner, load(inner, indices, ivs))
    picked = normalized_index(inner, raw, data_shape[axis], "fast", status)
    store(inner, load(inner, data, [*ivs[:axis], picked, *ivs[axis + 1 :]]), out, ivs)
    return status.value(b)


def lower_cumsum(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.cumsum`: for each position off the axis, the first sum is
    the first element (0 when exclusive), each next one the previous sum (read
    back from the output) plus the next element, in order along the axis or,
    with `reverse`, against it (numpy's sequential order: bit for bit)."""
    assert isinstance(op, relay.CumsumOp)
    (data,), (out,) = operands, results
    shape = shape_of(out)
    if pymath.prod(shape) == 0:
        return
    attrs = op.attrs()
    axis = relay.normalize_axis(int(attrs["axis"]), len(shape), op.name)
    exclusive, reverse = bool(attrs["exclusive"]), bool(attrs["reverse"])
    n = shape[axis]
    typ = element_type_of(out)
    integer = isinstance(typ, IntegerType)
    body, ivs = nest(b, (*shape[:axis], *shape[axis + 1 :]))

    def at(i: Index) -> list[Index]:
        return [*ivs[:axis], i, *ivs[axis:]]

    first = n - 1 if reverse else 0
    start = body.constant(0, typ) if exclusive else load(body, data, at(first))
    store(body, start, out, at(first))
    if n == 1:
        return
    step, j = for_range(body, 1, n, "j")
    current = index_sub(step, n - 1, j) if reverse else j
    previous = index_add(step, current, 1 if reverse else -1)
    element = load(step, data, at(previous if exclusive else current))
    total = load(step, out, at(previous))
    if integer:
        total = wrapping(step, arith.AddiOp, total, element)
    else:
        total = step.scalar(arith.AddfOp, total, element)
    store(step, total, out, at(current))


def lower_trilu(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.trilu`: one nest over the output; an element is copied
    where `j - i` is on the kept side of `k`, else 0."""
    assert isinstance(op, relay.TriluOp)
    (data,), (out,) = operands, results
    shape = shape_of(out)
    if pymath.prod(shape) == 0:
        return
    attrs = op.attrs()
    upper = bool(attrs["upper"])
    # Beyond the matrix every k keeps all or nothing: clamped, k stays a small index.
    k = min(max(int(attrs["k"]), -shape[-2] - 1), shape[-1] + 1)
    inner, ivs = nest(b, shape)
    row, column = ivs[-2], ivs[-1]
    offset = index_sub(inner, column, row)  # j - i, a signed index
    if isinstance(offset, int):
        keep: SSAValue | bool = offset >= k if upper else offset <= k
    else:
        keep = compare_integers(inner, "sge" if upper else "sle", offset, value_of(inner, k))
    typ = element_type_of(out)
    zero = inner.constant(0.0 if isinstance(typ, AnyFloat) else 0, typ)
    if isinstance(keep, bool):
        store(inner, load(inner, data, ivs) if keep else zero, out, ivs)
        return
    store(inner, select(inner, keep, load(inner, data, ivs), zero), out, ivs)


# --- Conversion and selection: scalar builders -----------------------------------------



def convert_scalar(
    b: BodyBuilder, value: SSAValue, source: Attribute, target: Attribute
) -> SSAValue:
    """`value` of element type `source` converted to `target` as `relay.cast`
    does, with signless arith ops only: floats round, floats to integers
    truncate toward zero (through i32 for narrower targets, so they wrap),
    integers extend by their signedness or wrap, anything to `i1` is `!= 0`."""
    if source == target:
        return value
    if isinstance(target, IntegerType) and target.width.data == 1:
        if isinstance(source, AnyFloat):
            zero = b.constant(0.0, source)
            return compare_floats(b, "une", value, zero)  # NaN is true, as numpy's astype(bool)
        zero = b.constant(0, source)
        return compare_integers(b, "ne", value, zero)
    if isinstance(source, AnyFloat) and isinstance(target, AnyFloat):
        wider = target.bitwidth > source.bitwidth
        return b.scalar(arith.ExtFOp if wider else arith.TruncFOp, value, result_type=target)
    if isinstance(source, AnyFloat):
        assert isinstance(target, IntegerType)
        width = target.width.data
        if width == 64 and unsigned_order(target) and source.bitwidth > 16:
            return _float_to_u64(b, value, source, target)
        if width == 64 or (width == 32 and not unsigned_order(target)):
            return b.scalar(arith.FPToSIOp, value, result_type=target)
        # Through a signed integer wide enough for every value of the target
        # (i32 for 8 and 16 bits, so out-of-range values wrap; i64 for ui32).
        wide = b.scalar(arith.FPToSIOp, value, result_type=i64 if width == 32 else i32)
        return b.scalar(arith.TruncIOp, wide, result_type=target)
    assert isinstance(source, IntegerType)
    if isinstance(target, AnyFloat):
        if unsigned_order(source) and source.width.data == 64:
            return _u64_to_float(b, value, target)
        if unsigned_order(source):
            wide = i64 if source.width.data == 32 else i32
            value = b.scalar(arith.ExtUIOp, value, result_type=wide)
        return b.scalar(arith.SIToFPOp, value, result_type=target)
    assert isinstance(target, IntegerType)
    width, wanted = source.width.data, target.width.data
    if wanted > width:
        extend = arith.ExtUIOp if unsigned_order(source) else arith.ExtSIOp
        return b.scalar(extend, value, result_type=target)
    if wanted < width:
        return b.scalar(arith.TruncIOp, value, result_type=target)
    # Same width, other signedness (i8 <-> ui8): the bits stay.
    extend = arith.ExtUIOp if unsigned_order(source) else arith.ExtSIOp
    wide = b.scalar(extend, value, result_type=IntegerType(2 * width))
    return b.scalar(arith.TruncIOp, wide, result_type=target)


def _float_to_u64(
    b: BodyBuilder, value: SSAValue, source: Attribute, target: IntegerType
) -> SSAValue:
    """A float in [0, 2^64) as ui64 with signed conversions only: values from
    2^63 up convert `value - 2^63` and set the top bit again."""
    top = b.constant(2.0**63, source)
    big = compare_floats(b, "oge", value, top)
    low = b.scalar(arith.SubfOp, value, top)
    converted = b.scalar(arith.FPToSIOp, select(b, big, low, value), result_type=target)
    flipped = b.scalar(arith.XOrIOp, converted, b.constant(1 << 63, target))
    return select(b, big, flipped, converted)


def _u64_to_float(b: BodyBuilder, value: SSAValue, target: Attribute) -> SSAValue:
    """A ui64 as a float with signed conversions only: a value with its top
    bit set converts halved (the lost bit kept as a sticky bit, so it rounds
    as the whole value would) and doubles."""
    one = b.constant(1, value.type)
    top = b.scalar(arith.ShRUIOp, value, b.constant(63, value.type))
    big = compare_integers(b, "ne", top, b.constant(0, value.type))
    halved = b.scalar(
        arith.OrIOp,
        b.scalar(arith.ShRUIOp, value, one),
        b.scalar(arith.AndIOp, value, one),
    )
    converted = b.scalar(arith.SIToFPOp, select(b, big, halved, value), result_type=target)
    doubled = b.scalar(arith.AddfOp, converted, converted)
    return select(b, big, doubled, converted)


def where_scalar(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    """`relay.where` on one element: `select(condition, x, y)`."""
    return b.scalar(arith.SelectOp, args[0], args[1], args[2], result_type=typ)


def cast_scalar(op: Operation) -> Callable[[BodyBuilder, Sequence[SSAValue], Attribute], SSAValue]:
    """`relay.cast` on one element (see `convert_scalar`)."""
    assert isinstance(op, relay.CastOp)
    typ = op.data.type
    assert isinstance(typ, TensorType)
    source = typ.element_type

    def build(b: BodyBuilder, args: Sequence[SSAValue], target: Attribute) -> SSAValue:
        return convert_scalar(b, args[0], source, target)

    return build


# --- Slicing, tiling, broadcasting ------------------------------------------------------


def lower_strided_slice(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.strided_slice` to a nest over the output reading
    `data[start + i * step]` along each axis."""
    assert isinstance(op, relay.StridedSliceOp)
    out = results[0]
    if pymath.prod(shape_of(out)) == 0:
        return
    inner, ivs = nest(b, shape_of(out))
    source = [
        index_add(inner, index_mul(inner, iv, r.step), r.start)
        for iv, r in zip(ivs, op.ranges())
    ]
    store(inner, load(inner, operands[0], source), out, ivs)


def lower_tile(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.tile` to a nest over (repeat, element) pairs of each axis:
    the output index is `repeat * size + element`, the input index `element`
    (no division)."""
    data, out = operands[0], results[0]
    if pymath.prod(shape_of(out)) == 0:
        return
    data_shape = shape_of(data)
    rank = len(shape_of(out))
    padded = (1,) * (rank - len(data_shape)) + data_shape
    reps = [o // d for o, d in zip(shape_of(out), padded)]
    extents = [e for pair in zip(reps, padded) for e in pair]
    inner, ivs = nest(b, extents)
    out_index = [
        index_add(inner, index_mul(inner, ivs[2 * axis], padded[axis]), ivs[2 * axis + 1])
        for axis in range(rank)
    ]
    in_index = [ivs[2 * axis + 1] for axis in range(rank - len(data_shape), rank)]
    store(inner, load(inner, data, in_index), out, out_index)


def lower_broadcast_to(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.broadcast_to` to one broadcasting copy nest."""
    copy_nest(b, operands[0], results[0])


# --- Padding ---------------------------------------------------------------------------


def _scalar_constant(b: BodyBuilder, value: float, element: Attribute) -> SSAValue:
    """`value` as a constant of element type `element` (an integer one truncates)."""
    if isinstance(element, AnyFloat):
        return b.constant(value, element)
    assert isinstance(element, IntegerType)
    if element.width.data == 1:
        return b.constant(int(value != 0), element)
    return b.constant(int(value), element)


def _padded_source(
    b: BodyBuilder, index: Index, before: int, size: int, mode: str
) -> Index:
    """The input index an "edge" or "reflect" pad reads at output `index`."""
    j = index_sub(b, index, before)
    if mode == "edge":
        return index_min(b, index_max(b, j, 0), size - 1)
    # reflect: -j before the start, 2(n-1) - j past the end (pads are < n).
    if isinstance(j, int):
        return -j if j < 0 else (2 * (size - 1) - j if j > size - 1 else j)
    low = select(b, compare_integers(b, "slt", j, b.index(0)), b.scalar(arith.SubiOp, b.index(0), j), j)
    high = b.scalar(arith.SubiOp, b.index(2 * (size - 1)), low)
    return select(b, compare_integers(b, "slt", b.index(size - 1), low), high, low)


def lower_pad(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.pad`: "constant" fills the output with the value and
    copies the input inside it; "edge" and "reflect" run one nest over the
    output, mapping the indices of the padded axes back into the input."""
    assert isinstance(op, relay.PadOp)
    data, out = operands[0], results[0]
    attrs = op.attrs()
    width = attrs["pad_width"]
    data_shape = shape_of(data)
    if pymath.prod(shape_of(out)) == 0:
        return
    if attrs["pad_mode"] == "constant":
        value = _scalar_constant(b, attrs["pad_value"], element_type_of(out))  # type: ignore[arg-type]
        if shape_of(out) != data_shape:
            fill(b, out, value)
        if pymath.prod(data_shape) == 0:
            return
        inner, ivs = nest(b, data_shape)
        target = [index_add(inner, iv, width[2 * k]) for k, iv in enumerate(ivs)]  # type: ignore[index]
        store(inner, load(inner, data, ivs), out, target)
        return
    inner, ivs = nest(b, shape_of(out))
    source = [
        _padded_source(inner, iv, width[2 * k], data_shape[k], attrs["pad_mode"])  # type: ignore[index, arg-type]
        if width[2 * k] or width[2 * k + 1]  # type: ignore[index]
        else iv
        for k, iv in enumerate(ivs)
    ]
    store(inner, load(inner, data, source), out, ivs)


# --- Depth and space ---------------------------------------------------------------------


def lower_depth_to_space(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.depth_to_space` to a nest over (n, c, h, i, w, j) writing
    `out[n, c, h*b + i, w*b + j]` in order."""
    attrs = op.attrs()
    block = int(attrs["block_size"])  # type: ignore[arg-type]
    n, c, h, w = shape_of(results[0])
    h, w = h // block, w // block
    inner, (iv_n, iv_c, iv_h, iv_i, iv_w, iv_j) = nest(b, (n, c, h, block, w, block))
    if attrs["mode"] == "DCR":
        channel = index_add(inner, index_mul(inner, index_add(inner, index_mul(inner, iv_i, block), iv_j), c), iv_c)
    else:
        channel = index_add(inner, index_mul(inner, iv_c, block * block), index_add(inner, index_mul(inner, iv_i, block), iv_j))
    value = load(inner, operands[0], [iv_n, channel, iv_h, iv_w])
    row = index_add(inner, index_mul(inner, iv_h, block), iv_i)
    column = index_add(inner, index_mul(inner, iv_w, block), iv_j)
    store(inner, value, results[0], [iv_n, iv_c, row, column])


def lower_space_to_depth(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.space_to_depth` to a nest writing the output in order:
    over (n, i, j, c, h, w) in mode "DCR", (n, c, i, j, h, w) in "CRD"."""
    attrs = op.attrs()
    block = int(attrs["block_size"])  # type: ignore[arg-type]
    n, c, h, w = shape_of(operands[0])
    h, w = h // block, w // block
    if attrs["mode"] == "DCR":
        inner, (iv_n, iv_i, iv_j, iv_c, iv_h, iv_w) = nest(b, (n, block, block, c, h, w))
        offset = index_add(inner, index_mul(inner, iv_i, block), iv_j)
        channel = index_add(inner, index_mul(inner, offset, c), iv_c)
    else:
        inner, (iv_n, iv_c, iv_i, iv_j, iv_h, iv_w) = nest(b, (n, c, block, block, h, w))
        offset = index_add(inner, index_mul(inner, iv_i, block), iv_j)
        channel = index_add(inner, index_mul(inner, iv_c, block * block), offset)
    row = index_add(inner, index_mul(inner, iv_h, block), iv_i)
    column = index_add(inner, index_mul(inner, iv_w, block), iv_j)
    value = load(inner, operands[0], [iv_n, iv_c, row, column])
    store(inner, value, results[0], [iv_n, channel, iv_h, iv_w])


TransformLowering = Callable[
    [BodyBuilder, Operation, Sequence[SSAValue], Sequence[SSAValue]], SSAValue | None
]

TRANSFORM_LOWERINGS: dict[type[Operation], TransformLowering] = {
    relay.TakeOp: lower_take,
    relay.GatherOp: lower_gather,
    relay.CumsumOp: lower_cumsum,
    relay.TriluOp: lower_trilu,
    relay.StridedSliceOp: lower_strided_slice,
    relay.TileOp: lower_tile,
    relay.BroadcastToOp: lower_broadcast_to,
    relay.PadOp: lower_pad,
    relay.DepthToSpaceOp: lower_depth_to_space,
    relay.SpaceToDepthOp: lower_space_to_depth,
    relay.Resize2dOp: lower_resize2d,
}
"""The lowerings of `relay.TRANSFORM_OPS`, for convert-relay-to-loops' `LOWERINGS`."""
