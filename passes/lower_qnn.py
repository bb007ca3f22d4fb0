"""Lowerings of the quantized relay ops (`relay.qnn.*`) to loop nests of the
loop-level IR, for both exits (the host, and a backend's C).

Integer products and sums are exact in i32 (as the accumulators of
onnxruntime's kernels, wrapping on overflow); anything involving a scale is
f32 in onnxruntime's order of operations. Rounding is half to even without a
libm call: a value already clamped to the output range (|v| < 2^22) rounds
exactly by adding and subtracting 1.5 * 2^23, which C compilers and LLVM keep
(no fast-math) and vectorise. Clamping compares with `ogt`/`olt` and selects,
so NaN becomes the type's smallest value, as in the reference.

Quantization parameters are memrefs like any operand (constants become
globals), read once per element or per channel; the loops are the plain ones of
`lower_nn` (tap by tap for conv2d, dot products for dense).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    IntegerType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from byoc.dialects import relay
from byoc.dialects.relay.qnn import type_range
from byoc.passes.loop_nests import (
    BodyBuilder,
    broadcast_indices,
    compare_floats,
    compare_integers,
    element_type_of,
    is_unsigned,
    select,
    shape_of,
)
from byoc.passes.lower_nn import (
    Index,
    _windows,
    accumulate,
    binary,
    entry_alloca,
    index_add,
    index_mul,
    load,
    nest,
    store,
    sweep_taps,
)

if TYPE_CHECKING:
    from byoc.passes.convert_relay_to_loops import OpLowering

I32 = IntegerType(32)


ROUNDING_MAGIC = 12582912.0
"""1.5 * 2^23: adding it to a float32 of magnitude below 2^22 and subtracting it
again rounds the float to an integer, half to even."""


# --- Scalars -------------------------------------------------------------------------


def to_i32(b: BodyBuilder, value: SSAValue) -> SSAValue:
    """An integer scalar widened to i32 (zero-extended when it is unsigned)."""
    typ = value.type
    assert isinstance(typ, IntegerType)
    if typ.width.data == 32:
        return value
    op = arith.ExtUIOp if is_unsigned(typ) else arith.ExtSIOp
    return b.scalar(op, value, result_type=I32)


def to_f32(b: BodyBuilder, value: SSAValue) -> SSAValue:
    """An i32 scalar as f32."""
    return b.scalar(arith.SIToFPOp, value, result_type=f32)


def select_float(b: BodyBuilder, predicate: str, x: SSAValue, bound: SSAValue) -> SSAValue:
    """`x` if `x <predicate> bound` (ordered: false for NaN), else `bound`."""
    return select(b, compare_floats(b, predicate, x, bound), x, bound)


def select_int(b: BodyBuilder, predicate: str, x: SSAValue, bound: SSAValue) -> SSAValue:
    """`x` if `x <predicate> bound` (signed), else `bound`."""
    return select(b, compare_integers(b, predicate, x, bound), x, bound)


def saturate_round(
    b: BodyBuilder,
    value: SSAValue,
    zero_point: SSAValue,
    element: Attribute,
    bounds: tuple[int, int] | None = None,
) -> SSAValue:
    """`clamp(round_half_even(value) + zero_point)` as `element` (i8, ui8, i16,
    ui16, i32):
    `value` f32, `zero_point` i32; clamped to `bounds` (within the type) when
    given, as a following clip would."""
    low, high = type_range(element) if bounds is None else bounds
    zp_f = to_f32(b, zero_point)
    low_f = binary(b, arith.SubfOp, b.constant(float(low), f32), zp_f)
    high_f = binary(b, arith.SubfOp, b.constant(float(high), f32), zp_f)
    clamped = select_float(b, "ogt", value, low_f)
    clamped = select_float(b, "olt", clamped, high_f)
    wide = element == I32
    if not wide:
        # |clamped| <= 65535 + |zero point| < 2^22: the magic constant rounds exactly.
        magic = b.constant(ROUNDING_MAGIC, f32)
        rounded = binary(b, arith.SubfOp, binary(b, arith.AddfOp, clamped, magic), magic)
        as_int = b.scalar(arith.FPToSIOp, rounded, result_type=I32)
        result = binary(b, arith.AddiOp, as_int, zero_point)
        return b.scalar(arith.TruncIOp, result, result_type=element)
    # int32 results: floats of 2^23 and more are integers already; round the
    # rest, then add the zero point and clamp in 64 bits.
    magic = b.constant(ROUNDING_MAGIC, f32)
    negative = compare_floats(b, "olt", clamped, b.constant(0.0, f32))
    neg_clamped = b.scalar(arith.NegfOp, clamped)
    magnitude = b.scalar(arith.SelectOp, negative, neg_clamped, clamped, result_type=f32)
    small = compare_floats(b, "olt", magnitude, b.constant(4194304.0, f32))
    rounded = binary(b, arith.SubfOp, binary(b, arith.AddfOp, magnitude, magic), magic)
    magnitude = b.scalar(arith.SelectOp, small, rounded, magnitude, result_type=f32)
    neg_magnitude = b.scalar(arith.NegfOp, magnitude)
    signed = b.scalar(arith.SelectOp, negative, neg_magnitude, magnitude, result_type=f32)
    as_int = b.scalar(arith.FPToSIOp, signed, result_type=i64)
    zp64 = b.scalar(arith.ExtSIOp, zero_point, result_type=i64)
    total = binary(b, arith.AddiOp, as_int, zp64)
    total = select_int(b, "sgt", total, b.constant(low, i64))
    total = select_int(b, "slt", total, b.constant(high, i64))
    return b.scalar(arith.TruncIOp, total, result_type=I32)


def parameter(b: BodyBuilder, source: SSAValue, channel: Index | None) -> SSAValue:
    """One value of a scale or zero point memref: its only value, or the one
    of `channel` when it is per-channel. Zero points come out as i32."""
    shape = shape_of(source)
    if pymath.prod(shape) == 1 or channel is None:
        value = load(b, source, [0] * len(shape))
    else:
        value = load(b, source, [channel])
    return value if isinstance(value.type, AnyFloat) else to_i32(b, value)


def _channel(op: Operation, ivs: Sequence[Index], params: Sequence[SSAValue]) -> Index | None:
    """The channel index of an op with an `axis` (None when every parameter is
    per-tensor)."""
    if all(pymath.prod(shape_of(p)) == 1 for p in params) or not ivs:
        return None
    axis = relay.normalize_axis(op.attrs()["axis"], len(ivs), op.name)  # type: ignore[attr-defined]
    return ivs[axis]


# --- quantize, dequantize, requantize ------------------------------------------------


def lower_quantize(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.quantize`: `saturate(round(x / scale) + zero_point)`."""
    (data, scale, zero), (out,) = operands, results
    inner, ivs = nest(b, shape_of(out))
    channel = _channel(op, ivs, (scale, zero))
    scaled = binary(inner, arith.DivfOp, load(inner, data, ivs), parameter(inner, scale, channel))
    value = saturate_round(inner, scaled, parameter(inner, zero, channel), element_type_of(out))
    store(inner, value, out, ivs)


def lower_dequantize(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.dequantize`: `float(x - zero_point) * scale`."""
    (data, scale, zero), (out,) = operands, results
    inner, ivs = nest(b, shape_of(out))
    channel = _channel(op, ivs, (scale, zero))
    shifted = binary(
        inner, arith.SubiOp, to_i32(inner, load(inner, data, ivs)), parameter(inner, zero, channel)
    )
    value = binary(inner, arith.MulfOp, to_f32(inner, shifted), parameter(inner, scale, channel))
    store(inner, value, out, ivs)


def requantized(
    b: BodyBuilder,
    acc: SSAValue,
    multiplier: SSAValue,
    zero_point: SSAValue,
    element: Attribute,
) -> SSAValue:
    """`saturate(round(float(acc) * multiplier) + zero_point)` (onnxruntime's
    MlasRequantizeOutput)."""
    product = binary(b, arith.MulfOp, to_f32(b, acc), multiplier)
    return saturate_round(b, product, zero_point, element)


def lower_requantize(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.requantize`, the ratio of the scales computed per channel."""
    (data, in_scale, in_zero, out_scale, out_zero), (out,) = operands, results
    inner, ivs = nest(b, shape_of(out))
    channel = _channel(op, ivs, operands[1:])
    multiplier = binary(
        inner, arith.DivfOp, parameter(inner, in_scale, channel), parameter(inner, out_scale, channel)
    )
    shifted = binary(
        inner, arith.SubiOp, to_i32(inner, load(inner, data, ivs)), parameter(inner, in_zero, channel)
    )
    value = requantized(inner, shifted, multiplier, parameter(inner, out_zero, channel), element_type_of(out))
    store(inner, value, out, ivs)


# --- Integer conv2d, dense, batch_matmul ---------------------------------------------


def lower_qnn_conv2d(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.conv2d` to int32 output planes accumulated tap by tap
    (as `relay.nn.conv2d`): taps in the padding are skipped, which is what
    padding with the input zero point means."""
    assert isinstance(op, relay.QnnConv2dOp)
    (data, weight, data_zero, weight_zero, _, _), (out,) = operands, results
    n_out, channels_in, kh, kw = shape_of(weight)
    groups = op.attrs()["groups"]
    per_group = n_out // groups
    rows, cols = _windows(op, data, out, (kh, kw))
    zero = b.constant(0, I32)
    x_zero = parameter(b, data_zero, None)

    plane_b, (n, g, o_in_group) = nest(b, (shape_of(data)[0], groups, per_group), ["n", "g", "o"])
    o = index_add(plane_b, index_mul(plane_b, g, per_group), o_in_group)
    w_zero = parameter(plane_b, weight_zero, o)
    fill_b, (oy, ox) = nest(plane_b, (rows.outputs, cols.outputs), ["oy", "ox"])
    store(fill_b, zero, out, [n, o, oy, ox])
    c_b, (c,) = nest(plane_b, (channels_in,), ["c"])
    channel = index_add(c_b, index_mul(c_b, g, channels_in), c)

    def tap(x_b: BodyBuilder, i: Index, j: Index, at: list[Index], src: list[Index]):
        w = binary(x_b, arith.SubiOp, to_i32(x_b, load(x_b, weight, [o, c, i, j])), w_zero)
        x = binary(x_b, arith.SubiOp, to_i32(x_b, load(x_b, data, [n, channel, *src])), x_zero)
        accumulate(x_b, arith.AddiOp, out, at, binary(x_b, arith.MuliOp, x, w))

    sweep_taps(c_b, rows, cols, [n, o], tap)


def _dot(
    b: BodyBuilder,
    out: SSAValue,
    at: Sequence[Index],
    depth: int,
    lhs: SSAValue,
    lhs_at,
    lhs_zero: SSAValue,
    rhs: SSAValue,
    rhs_at,
    rhs_zero: SSAValue,
) -> None:
    """`out[at] = sum_k (lhs[lhs_at(k)] - lhs_zero) * (rhs[rhs_at(k)] - rhs_zero)`,
    accumulated in a scalar (integer sums vectorise without reordering worries)."""
    acc = entry_alloca(b, (), I32, "acc")
    store(b, b.constant(0, I32), acc, [])
    k_b, (k,) = nest(b, (depth,), ["k"])
    x = binary(k_b, arith.SubiOp, to_i32(k_b, load(k_b, lhs, lhs_at(k))), lhs_zero)
    w = binary(k_b, arith.SubiOp, to_i32(k_b, load(k_b, rhs, rhs_at(k))), rhs_zero)
    accumulate(k_b, arith.AddiOp, acc, [], binary(k_b, arith.MuliOp, x, w))
    store(b, load(b, acc, []), out, at)


def lower_qnn_dense(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.dense` to one int32 dot product per output along k."""
    (data, weight, data_zero, weight_zero, _, _), (out,) = operands, results
    shape = shape_of(out)
    units, depth = shape_of(weight)
    x_zero = parameter(b, data_zero, None)
    row_b, rows = nest(b, shape[:-1], "m")
    n_b, (n,) = nest(row_b, (units,), ["n"])
    w_zero = parameter(n_b, weight_zero, n)
    _dot(
        n_b, out, [*rows, n], depth,
        data, lambda k: [*rows, k], x_zero,
        weight, lambda k: [n, k], w_zero,
    )


def lower_qnn_batch_matmul(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.batch_matmul` (transposes; a batch of 1 broadcasts)."""
    assert isinstance(op, relay.QnnBatchMatmulOp)
    (x, y, x_zero_m, y_zero_m, _, _), (out,) = operands, results
    attrs = op.attrs()
    transpose_a, transpose_b = attrs["transpose_a"], attrs["transpose_b"]
    x_shape, y_shape = shape_of(x), shape_of(y)
    depth = x_shape[1] if transpose_a else x_shape[2]
    x_zero = parameter(b, x_zero_m, None)
    y_zero = parameter(b, y_zero_m, None)
    inner, (t, m, n) = nest(b, shape_of(out), ["t", "m", "n"])
    tx = 0 if x_shape[0] == 1 else t
    ty = 0 if y_shape[0] == 1 else t
    _dot(
        inner, out, [t, m, n], depth,
        x, (lambda k: [tx, k, m]) if transpose_a else (lambda k: [tx, m, k]), x_zero,
        y, (lambda k: [ty, n, k]) if transpose_b else (lambda k: [ty, k, n]), y_zero,
    )


# --- add, mul, global_avg_pool2d ----------------------------------------------------------


def _load_broadcast(b: BodyBuilder, source: SSAValue, ivs: Sequence[Index]) -> SSAValue:
    shape = shape_of(source)
    indices = broadcast_indices(b, ivs, shape)  # type: ignore[arg-type]
    return load(b, source, indices)


def lower_qnn_binary(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.add` (two rescaled terms, one rounding) and
    `relay.qnn.mul` (the integer product, requantized)."""
    lhs, rhs, ls_m, lz_m, rs_m, rz_m, os_m, oz_m = operands
    (out,) = results
    ls, lz, rs, rz, os_, oz = (parameter(b, p, None) for p in (ls_m, lz_m, rs_m, rz_m, os_m, oz_m))
    element = element_type_of(out)
    inner, ivs = nest(b, shape_of(out))
    left = binary(inner, arith.SubiOp, to_i32(inner, _load_broadcast(inner, lhs, ivs)), lz)
    right = binary(inner, arith.SubiOp, to_i32(inner, _load_broadcast(inner, rhs, ivs)), rz)
    if isinstance(op, relay.QnnAddOp):
        left_f = binary(inner, arith.MulfOp, binary(inner, arith.DivfOp, ls, os_), to_f32(inner, left))
        right_f = binary(inner, arith.MulfOp, binary(inner, arith.DivfOp, rs, os_), to_f32(inner, right))
        value = saturate_round(inner, binary(inner, arith.AddfOp, left_f, right_f), oz, element)
    else:
        # onnxruntime adds the zero point in float32 before rounding.
        multiplier = binary(inner, arith.DivfOp, binary(inner, arith.MulfOp, ls, rs), os_)
        product = binary(inner, arith.MuliOp, left, right)
        scaled = binary(inner, arith.MulfOp, to_f32(inner, product), multiplier)
        shifted = binary(inner, arith.AddfOp, scaled, to_f32(inner, oz))
        value = saturate_round(inner, shifted, b.constant(0, I32), element)
    store(inner, value, out, ivs)


def lower_qnn_global_avg_pool2d(
    b: BodyBuilder, op: Operation, operands: Sequence[SSAValue], results: Sequence[SSAValue]
) -> None:
    """Lowers `relay.qnn.global_avg_pool2d`: an exact int32 sum per plane, then
    requantized by `input_scale / (output_scale * H * W)`."""
    (data, in_scale, in_zero, out_scale, out_zero), (out,) = operands, results
    batch, channels, height, width = shape_of(data)
    count = height * width
    multiplier = binary(
        b,
        arith.DivfOp,
        parameter(b, in_scale, None),
        binary(b, arith.MulfOp, parameter(b, out_scale, None), b.constant(float(count), f32)),
    )
    bias = binary(b, arith.MuliOp, parameter(b, in_zero, None), b.constant(count, I32))
    o_zero = parameter(b, out_zero, None)
    plane_b, (n, c) = nest(b, (batch, channels), ["n", "c"])
    acc = entry_alloca(b, (), I32, "acc")
    store(plane_b, b.constant(0, I32), acc, [])
    pix_b, (y, x) = nest(plane_b, (height, width), ["y", "x"])
    accumulate(pix_b, arith.AddiOp, acc, [], to_i32(pix_b, load(pix_b, data, [n, c, y, x])))
    total = binary(plane_b, arith.SubiOp, load(plane_b, acc, []), bias)
    value = requantized(plane_b, total, multiplier, o_zero, element_type_of(out))
    store(plane_b, value, out, [n, c, 0, 0])


QNN_LOWERINGS: dict[type[Operation], OpLowering] = {
    relay.QuantizeOp: lower_quantize,
    relay.DequantizeOp: lower_dequantize,
    relay.RequantizeOp: lower_requantize,
    relay.QnnConv2dOp: lower_qnn_conv2d,
    relay.QnnDenseOp: lower_qnn_dense,
    relay.QnnBatchMatmulOp: lower_qnn_batch_matmul,
    relay.QnnAddOp: lower_qnn_binary,
    relay.QnnMulOp: lower_qnn_binary,
    relay.QnnGlobalAvgPool2dOp: lower_qnn_global_avg_pool2d,
}
"""Quantized relay op class -> its lowering, for `LOWERINGS`."""

