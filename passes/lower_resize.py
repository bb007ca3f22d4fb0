"""Lowering of `relay.image.resize2d` to loops of the loop-level IR.

Resizing is separable: each output row reads the same input rows and each
output column the same input columns. So a first loop per axis fills small
tables (input indices, interpolation weights, whether the coordinate is inside
a tf_crop_and_resize window), computing each output index's input coordinate
in float64 exactly as the reference does (`relay.source_coordinates`); the
main nest over (n, c, y, x) then only loads, weighs and adds. No libm: floors
are conversions of non-negative values.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    MemRefType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.loop_nests import (
    INDEX,
    BodyBuilder,
    alloc,
    compare_floats,
    compare_integers,
    dealloc,
    element_type_of,
    select,
    shape_of,
)
from byoc.passes.lower_nn import Index, load, nest, store, value_of



def _f(b: BodyBuilder, value: float) -> SSAValue:
    return b.constant(value, f64)


def _op(b: BodyBuilder, op_type: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(op_type, x, y)


def _to_f64(b: BodyBuilder, index: Index) -> SSAValue:
    as_int = b.scalar(arith.IndexCastOp, value_of(b, index), result_type=i64)
    return b.scalar(arith.SIToFPOp, as_int, result_type=f64)


def _clamp(b: BodyBuilder, x: SSAValue, low: float, high: float) -> SSAValue:
    x = select(b, compare_floats(b, "olt", x, _f(b, low)), _f(b, low), x)
    return select(b, compare_floats(b, "ogt", x, _f(b, high)), _f(b, high), x)


def _floor(b: BodyBuilder, x: SSAValue) -> SSAValue:
    """`floor(x)` as an i64, for `x >= -1`: a conversion (which truncates) of
    `x + 1 >= 0`, minus 1."""
    shifted = b.scalar(arith.FPToSIOp, _op(b, arith.AddfOp, x, _f(b, 1.0)), result_type=i64)
    return _op(b, arith.SubiOp, shifted, b.constant(1, i64))


def _clamp_index(b: BodyBuilder, x: SSAValue, size: int) -> SSAValue:
    zero, last = b.constant(0, i64), b.constant(size - 1, i64)
    x = select(b, compare_integers(b, "slt", x, zero), zero, x)
    return select(b, compare_integers(b, "slt", last, x), last, x)


def _coordinate(
    b: BodyBuilder, index: Index, in_size: int, out_size: int, scale: float, mode: str,
    roi: tuple[float, float], length: float,
) -> SSAValue:
    """The input coordinate of output `index` (float64), in the operation order
    of `relay.source_coordinates`."""
    if mode == "align_corners" and length == 1:
        return _f(b, 0.0)
    if mode == "pytorch_half_pixel" and length == 1:
        return _f(b, -0.5)
    if mode == "tf_crop_and_resize" and length == 1:
        start, end = roi
        return _f(b, (end - start) * float(in_size - 1) / 2.0 + start * float(in_size - 1))
    x = _to_f64(b, index)
    if mode == "align_corners":
        scaled = _op(b, arith.MulfOp, x, _f(b, float(in_size - 1)))
        return _op(b, arith.DivfOp, scaled, _f(b, length - 1))
    if mode == "asymmetric":
        return _op(b, arith.DivfOp, x, _f(b, scale))
    if mode == "tf_crop_and_resize":
        start, end = roi
        scaled = _op(b, arith.MulfOp, x, _f(b, (end - start) * float(in_size - 1)))
        divided = _op(b, arith.DivfOp, scaled, _f(b, length - 1))
        return _op(b, arith.AddfOp, divided, _f(b, start * float(in_size - 1)))
    centred = _op(b, arith.DivfOp, _op(b, arith.AddfOp, x, _f(b, 0.5)), _f(b, scale))
    if mode == "tf_half_pixel_for_nn":
        return centred
    shifted = _op(b, arith.SubfOp, centred, _f(b, 0.5))  # half_pixel, pytorch_half_pixel
    if mode == "half_pixel_symmetric":
        return _op(b, arith.AddfOp, _f(b, in_size / 2 * (1 - out_size / length)), shifted)
    return shifted


def _nearest(b: BodyBuilder, x: SSAValue, size: int, rounding: str) -> SSAValue:
    """The index nearest coordinate `x` by `rounding`, in `[0, size)`."""
    x = _clamp(b, x, -1.0, float(size))
    low = _floor(b, x)
    if rounding != "floor":
        fraction = _op(b, arith.SubfOp, x, b.scalar(arith.SIToFPOp, low, result_type=f64))
        predicate, threshold = {
            "ceil": ("ogt", 0.0),
            "round_prefer_floor": ("ogt", 0.5),
            "round_prefer_ceil": ("oge", 0.5),
            "round": ("oge", 0.5),  # x >= 0 once clamped: half away from zero
        }[rounding]
        up = compare_floats(b, predicate, fraction, _f(b, threshold))
        low = select(b, up, _op(b, arith.AddiOp, low, b.constant(1, i64)), low)
    return _clamp_index(b, low, size)


def _cubic_weight(b: BodyBuilder, d: SSAValue, alpha: float, near: bool) -> SSAValue:
    """The cubic-convolution weight at distance `d` (`near`: |d| <= 1)."""
    if near:  # ((a + 2) d - (a + 3)) d d + 1
        t = _op(b, arith.SubfOp, _op(b, arith.MulfOp, _f(b, alpha + 2), d), _f(b, alpha + 3))
        t = _op(b, arith.MulfOp, _op(b, arith.MulfOp, t, d), d)
        return _op(b, arith.AddfOp, t, _f(b, 1.0))
    # ((a d - 5 a) d + 8 a) d - 4 a
    t = _op(b, arith.SubfOp, _op(b, arith.MulfOp, _f(b, alpha), d), _f(b, 5 * alpha))
    t = _op(b, arith.AddfOp, _op(b, arith.MulfOp, t, d), _f(b, 8 * alpha))
    return _op(b, arith.SubfOp, _op(b, arith.MulfOp, t, d), _f(b, 4 * alpha))


class AxisTables:
    """For one resized axis: per output index, the input indices it reads
    (`taps` of them), their weights, and whether it is inside the crop window."""

    def __init__(self, b: BodyBuilder, op: relay.Resize2dOp, axis: int, buffers: list[SSAValue]):
        attrs = op.attrs()
        method = str(attrs["method"])
        mode = str(attrs["coordinate_transformation_mode"])
        data_type = op.data.type
        in_size = data_type.get_shape()[axis]  # type: ignore[attr-defined]
        out_size = int(attrs["size"][axis - 2])  # type: ignore[index]
        given = attrs["scale"][axis - 2] if attrs["scale"] else None  # type: ignore[index]
        scale, length = relay.axis_geometry(in_size, out_size, given)  # type: ignore[arg-type]
        roi = attrs["roi"]
        window = (0.0, 1.0) if roi is None else (float(roi[axis - 2]), float(roi[axis]))  # type: ignore[index]
        self.taps = {"nearest_neighbor": 1, "linear": 2, "cubic": 4}[method]
        self.cropped = mode == "tf_crop_and_resize"

        def table(element, name: str) -> SSAValue:
            buffer = alloc(b, MemRefType(element, (out_size, self.taps)))
            buffer.name_hint = name
            buffers.append(buffer)
            return buffer

        self.index = table(i64, f"{'yx'[axis - 2]}_index")
        self.weight = table(f64, f"{'yx'[axis - 2]}_weight") if method != "nearest_neighbor" else None
        self.inside = None
        if self.cropped:
            self.inside = alloc(b, MemRefType(i1, (out_size,)))
            buffers.append(self.inside)
        inner, (o,) = nest(b, (out_size,), "o")
        x = _coordinate(inner, o, in_size, out_size, scale, mode, window, length)
        if self.inside is not None:
            below = compare_floats(inner, "olt", x, _f(inner, 0.0))
            above = compare_floats(inner, "ogt", x, _f(inner, float(in_size - 1)))
            outside = _op(inner, arith.OrIOp, below, above)
            store(inner, _op(inner, arith.XOrIOp, outside, inner.constant(1, i1)), self.inside, [o])
        if method == "nearest_neighbor":
            rounding = relay.rounding_of(method, mode, str(attrs["rounding_method"]))
            store(inner, _nearest(inner, x, in_size, rounding), self.index, [o, 0])
            return
        if method == "linear":
            x = _clamp(inner, x, 0.0, float(in_size - 1))
            low = inner.scalar(arith.FPToSIOp, x, result_type=i64)  # x >= 0
            fraction = _op(inner, arith.SubfOp, x, inner.scalar(arith.SIToFPOp, low, result_type=f64))
            high = _clamp_index(inner, _op(inner, arith.AddiOp, low, inner.constant(1, i64)), in_size)
            store(inner, low, self.index, [o, 0])
            store(inner, high, self.index, [o, 1])
            assert self.weight is not None
            store(inner, _op(inner, arith.SubfOp, _f(inner, 1.0), fraction), self.weight, [o, 0])
            store(inner, fraction, self.weight, [o, 1])
            return
        # cubic: taps low - 1 .. low + 2 at distances t + 1, t, 1 - t, 2 - t
        x = _clamp(inner, x, -1.0, float(in_size))
        low = _floor(inner, x)
        t = _op(inner, arith.SubfOp, x, inner.scalar(arith.SIToFPOp, low, result_type=f64))
        alpha = float(attrs["cubic_alpha"])  # type: ignore[arg-type]
        one, two = _f(inner, 1.0), _f(inner, 2.0)
        distances = [
            (_op(inner, arith.AddfOp, t, one), False),
            (t, True),
            (_op(inner, arith.SubfOp, one, t), True),
            (_op(inner, arith.SubfOp, two, t), False),
        ]
        weights = [_cubic_weight(inner, d, alpha, near) for d, near in distances]
        indices = [_op(inner, arith.AddiOp, low, inner.constant(k, i64)) for k in (-1, 0, 1, 2)]
        if attrs["cubic_exclude"]:
            zero = _f(inner, 0.0)
            kept = []
            for index, weight in zip(indices, weights):
                below = compare_integers(inner, "slt", index, inner.constant(0, i64))
                above = compare_integers(inner, "slt", inner.constant(in_size - 1, i64), index)
                kept.append(select(inner, _op(inner, arith.OrIOp, below, above), zero, weight))
            total = kept[0]
            for weight in kept[1:]:
                total = _op(inner, arith.AddfOp, total, weight)
            weights = [_op(inner, arith.DivfOp, weight, total) for weight in kept]
        assert self.weight is not None
        for k, (index, weight) in enumerate(zip(indices, weights)):
            store(inner, _clamp_index(inner, index, in_size), self.index, [o, k])
            store(inner, weight, self.weight, [o, k])


def lower_resize2d(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.image.resize2d`: tables per axis, then a nest over the
    output that sums the weighted taps in float64 and rounds once."""
    assert isinstance(op, relay.Resize2dOp)
    data, out = operands[0], results[0]
    if pymath.prod(shape_of(out)) == 0:
        return
    element = element_type_of(out)
    assert isinstance(element, AnyFloat)
    buffers: list[SSAValue] = []
    rows = AxisTables(b, op, 2, buffers)
    columns = AxisTables(b, op, 3, buffers)
    n, c, height, width = shape_of(out)
    outer, (iv_n, iv_c, iv_y) = nest(b, (n, c, height), "i")
    row_index = [
        outer.scalar(arith.IndexCastOp, load(outer, rows.index, [iv_y, k]), result_type=INDEX)
        for k in range(rows.taps)
    ]
    row_weight = [load(outer, rows.weight, [iv_y, k]) for k in range(rows.taps)] if rows.weight else None
    inner, (iv_x,) = nest(outer, (width,), "x")
    column_index = [
        inner.scalar(arith.IndexCastOp, load(inner, columns.index, [iv_x, k]), result_type=INDEX)
        for k in range(columns.taps)
    ]
    column_weight = (
        [load(inner, columns.weight, [iv_x, k]) for k in range(columns.taps)]
        if columns.weight
        else None
    )
    if row_weight is None or column_weight is None:
        value = load(inner, data, [iv_n, iv_c, row_index[0], column_index[0]])
    else:
        total: SSAValue | None = None
        for a in range(rows.taps):
            for k in range(columns.taps):
                tap = load(inner, data, [iv_n, iv_c, row_index[a], column_index[k]])
                if element != f64:
                    tap = inner.scalar(arith.ExtFOp, tap, result_type=f64)
                weight = _op(inner, arith.MulfOp, row_weight[a], column_weight[k])
                term = _op(inner, arith.MulfOp, weight, tap)
                total = term if total is None else _op(inner, arith.AddfOp, total, term)
        assert total is not None
        value = total if element == f64 else inner.scalar(arith.TruncFOp, total, result_type=element)
    if rows.inside is not None and columns.inside is not None:
        inside = _op(inner, arith.AndIOp, load(inner, rows.inside, [iv_y]), load(inner, columns.inside, [iv_x]))
        fill_value = inner.constant(float(op.attrs()["extrapolation_value"]), element)  # type: ignore[arg-type]
        value = select(inner, inside, value, fill_value)
    store(inner, value, out, [iv_n, iv_c, iv_y, iv_x])
    for buffer in buffers:
        dealloc(b, buffer)
