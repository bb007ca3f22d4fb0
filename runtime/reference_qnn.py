"""What the quantized relay ops (`relay.qnn.*`) mean, in numpy, rounding and
saturating as onnxruntime does.

Integer products and sums are exact (int64, wrapped to int32 results as
onnxruntime's int32 accumulators wrap); everything involving a scale is
float32, in onnxruntime's order of operations, rounded half to even
(`np.rint`) and clamped to the output type. NaN quantizes to the type's
smallest value (onnxruntime's vector kernels clamp with `maxps`, which keeps the
bound when the value is NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation

from byoc.dialects import relay
from byoc.dialects.relay.constant import numpy_dtype_of
from byoc.dialects.relay.qnn import type_range

F32 = np.float32


def _element(op: Operation) -> Attribute:
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    return typ.element_type


def along(param: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A per-tensor or per-channel parameter shaped to broadcast along `axis`
    (negative counts from the end) of a rank-`rank` array; a per-tensor one is
    a scalar, whatever the axis."""
    flat = np.asarray(param).reshape(-1)
    if flat.size == 1:
        return flat[0]
    shape = [1] * rank
    shape[axis] = flat.size
    return flat.reshape(shape)


def saturate(values: np.ndarray, element: Attribute) -> np.ndarray:
    """Float or integer `values` (already rounded) clamped to quantized type
    `element` and converted to its dtype; NaN becomes the smallest value."""
    low, high = type_range(element)
    wide = np.asarray(values, np.float64)
    wide = np.where(np.isnan(wide), low, wide)
    return np.clip(wide, low, high).astype(numpy_dtype_of(element))


def requantize_values(
    acc: np.ndarray, multiplier: np.ndarray | np.float32, zero_point: np.ndarray | int, element: Attribute
) -> np.ndarray:
    """`clamp(round(float32(acc) * multiplier) + zero_point)`: onnxruntime's
    MlasRequantizeOutput (the accumulator converted to float32, one float32
    product, rounded half to even)."""
    product = np.asarray(acc).astype(F32) * np.asarray(multiplier, F32)
    return saturate(np.rint(product).astype(np.float64) + zero_point, element)


def _axis(op: Operation) -> int:
    return op.attrs()["axis"]  # type: ignore[attr-defined]


def _quantize(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, scale, zero_point = args
    axis = _axis(op)
    s = along(scale, axis, data.ndim).astype(F32)
    z = along(zero_point, axis, data.ndim).astype(np.float64)
    with np.errstate(all="ignore"):
        scaled = np.asarray(data, F32) / s
    return saturate(np.rint(scaled).astype(np.float64) + z, _element(op))


def _dequantize(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, scale, zero_point = args
    axis = _axis(op)
    s = along(scale, axis, data.ndim).astype(F32)
    z = along(zero_point, axis, data.ndim).astype(np.int64)
    return (data.astype(np.int64) - z).astype(F32) * s


def _requantize(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, in_scale, in_zero, out_scale, out_zero = args
    rank = data.ndim
    axis = _axis(op)
    multiplier = along(in_scale, axis, rank).astype(F32) / along(out_scale, axis, rank).astype(F32)
    shifted = data.astype(np.int64) - along(in_zero, axis, rank).astype(np.int64)
    return requantize_values(shifted, multiplier, along(out_zero, axis, rank).astype(np.int64), _element(op))


def _wrap32(values: np.ndarray) -> np.ndarray:
    """int64 sums as int32, wrapping as an int32 accumulator would."""
    return values.astype(np.int64).astype(np.int32)


def _qnn_conv2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    from byoc.runtime.reference import _windows

    data, kernel, data_zero, kernel_zero = args[:4]
    attrs = op.attrs()  # type: ignore[attr-defined]
    top, left, bottom, right = relay.normalize_padding(attrs["padding"], op.name)
    groups = attrs["groups"]
    n, c, _, _ = data.shape
    o, i, kh, kw = kernel.shape
    x = data.astype(np.int64) - np.int64(np.asarray(data_zero).reshape(-1)[0])
    w = kernel.astype(np.int64) - along(kernel_zero, 0, 4).astype(np.int64)
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    win = _windows(padded, (kh, kw), attrs["strides"], attrs["dilation"])
    oh, ow = win.shape[2], win.shape[3]
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    w = np.broadcast_to(w, kernel.shape).reshape(groups, o // groups, i, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", win, w, optimize=True)
    return _wrap32(out.reshape(n, o, oh, ow))


def _qnn_dense(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, weight, data_zero, kernel_zero = args[:4]
    x = data.astype(np.int64) - np.int64(np.asarray(data_zero).reshape(-1)[0])
    w = weight.astype(np.int64) - along(kernel_zero, 0, 2).astype(np.int64)
    return _wrap32(x @ np.broadcast_to(w, weight.shape).T)


def _qnn_batch_matmul(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x, y, x_zero, y_zero = args[:4]
    attrs = op.attrs()  # type: ignore[attr-defined]
    a = x.astype(np.int64) - np.int64(np.asarray(x_zero).reshape(-1)[0])
    b = y.astype(np.int64) - np.int64(np.asarray(y_zero).reshape(-1)[0])
    if attrs["transpose_a"]:
        a = np.swapaxes(a, -1, -2)
    if attrs["transpose_b"]:
        b = np.swapaxes(b, -1, -2)
    return _wrap32(np.matmul(a, b))


def _scalars(args: list[np.ndarray]) -> list[np.ndarray]:
    """Per-tensor parameters as scalars (scales float32, zero points int64)."""
    out = []
    for array in args:
        value = np.asarray(array).reshape(-1)[0]
        out.append(F32(value) if np.asarray(array).dtype.kind == "f" else np.int64(value))
    return out


def _qnn_add(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    lhs, rhs = args[:2]
    ls, lz, rs, rz, os_, oz = _scalars(args[2:])
    left = (ls / os_) * (lhs.astype(np.int64) - lz).astype(F32)
    right = (rs / os_) * (rhs.astype(np.int64) - rz).astype(F32)
    return saturate(np.rint(left + right).astype(np.float64) + oz, _element(op))


def _qnn_mul(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    lhs, rhs = args[:2]
    ls, lz, rs, rz, os_, oz = _scalars(args[2:])
    product = (lhs.astype(np.int64) - lz) * (rhs.astype(np.int64) - rz)
    # onnxruntime's QLinearMul adds the zero point in float32, then rounds.
    scaled = product.astype(F32) * (ls * rs / os_) + F32(oz)
    return saturate(np.rint(scaled), _element(op))


def _qnn_global_avg_pool2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data = args[0]
    in_scale, in_zero, out_scale, out_zero = _scalars(args[1:])
    count = data.shape[2] * data.shape[3]
    total = data.astype(np.int64).sum(axis=(2, 3), keepdims=True) - in_zero * count
    multiplier = in_scale / (out_scale * F32(count))
    return requantize_values(total, multiplier, out_zero, _element(op))


QNN_REFERENCE: dict[str, Callable[[Operation, list[np.ndarray]], np.ndarray]] = {
    relay.QuantizeOp.name: _quantize,
    relay.DequantizeOp.name: _dequantize,
    relay.RequantizeOp.name: _requantize,
    relay.QnnConv2dOp.name: _qnn_conv2d,
    relay.QnnDenseOp.name: _qnn_dense,
    relay.QnnBatchMatmulOp.name: _qnn_batch_matmul,
    relay.QnnAddOp.name: _qnn_add,
    relay.QnnMulOp.name: _qnn_mul,
    relay.QnnGlobalAvgPool2dOp.name: _qnn_global_avg_pool2d,
}
"""numpy meaning of each quantized op, by op name."""
