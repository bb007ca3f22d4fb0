"""Converters of quantized ONNX operators: QuantizeLinear and DequantizeLinear
(the QDQ format onnxruntime's `quantize_static` writes), and the operator forms
QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger.

Quantization parameters must be constants (initializers or Constant nodes).
They are checked here, so a bad one is reported against its ONNX node: every
scale positive and finite, zero points of the quantized type, per-channel
parameters with one value per channel along `axis`. Scales become `tensor<f32>`
constants and zero points `tensor<i32>` ones (TVM QNN's convention), rank 0
when per-tensor. Integer initializers read as data (quantized weights, int32
biases) become integer `relay.constant`s.

The QDQ groups themselves (DequantizeLinear -> Conv -> QuantizeLinear, ...) are
imported as they are, float op and all; `byoc-fake-quantization-to-integer`
turns them into quantized ops before partitioning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.dialects.relay.qnn import (
    DTYPES,
    check_scale_values,
    dtype_name,
)
from byoc.frontend.onnx.graph import Converter, Node, set_name, shape_of
from byoc.frontend.onnx.nn import _check_spatial_rank, _pads_2d, _pair, _spatial, _to_2d

Shape = tuple[int, ...]

_QUANTIZED = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}
"""The types the operator forms (QLinearConv, ...) and the integer ops take."""
_QDQ_TYPES = {**_QUANTIZED, np.dtype(np.int16): "int16", np.dtype(np.uint16): "uint16"}
"""The types QuantizeLinear makes and DequantizeLinear reads (int32 too): the
16-bit ones are the activations of A16W8 models."""
_ONNX_TYPES = {3: np.dtype(np.int8), 2: np.dtype(np.uint8), 5: np.dtype(np.int16), 4: np.dtype(np.uint16)}
"""TensorProto.DataType of QuantizeLinear's `output_dtype`."""


@dataclass
class Params:
    """One scale and zero point of a node, checked, as relay constants."""

    scale: SSAValue
    zero_point: SSAValue
    scale_values: np.ndarray
    zero_point_values: np.ndarray
    dtype: str
    """The quantized type the zero point belongs to ("int8", "uint8", "int32")."""

    @property
    def per_channel(self) -> bool:
        return self.scale_values.size > 1 or self.zero_point_values.size > 1


def integer_value(node: Node, i: int, what: str) -> SSAValue:
    """Input `i` as a relay value of its own (integer) type: a constant
    (materialised once per initializer) or the value a node computed."""
    if not node.is_constant(i):
        return node.value(i)
    name = node.inputs[i]
    graph = node.graph
    value = graph.materialized.get(name)
    if value is None:
        array = node.constant(i, what)
        if array.dtype not in (np.int8, np.uint8, np.int16, np.uint16, np.int32):
            raise node.error(
                f"{what} ('{name}') is {array.dtype}; quantized tensors must be int8, "
                "uint8, int16, uint16 or int32"
            )
        value = node.emit(relay.ConstantOp.from_numpy(array))
        set_name(value, name)
        graph.materialized[name] = value
    return value


def _element_dtype(
    node: Node, value: SSAValue, what: str, allowed: tuple[str, ...] = ("int8", "uint8", "int32")
) -> str:
    element = value.type.element_type  # type: ignore[attr-defined]
    name = dtype_name(element)
    if name not in allowed:
        raise node.error(f"{what} is {name}; expected {', '.join(allowed[:-1])} or {allowed[-1]}")
    return name


def params(
    node: Node,
    scale_index: int,
    zero_point_index: int,
    data_shape: Shape,
    axis: int | None,
    dtype: str,
    what: str,
) -> Params:
    """The scale and zero point inputs of `node` for quantized type `dtype`
    (zero point 0 when absent), checked against `data_shape` along `axis`
    (None: they must be per-tensor)."""
    scale = np.asarray(node.constant(scale_index, f"{what} scale"))
    if scale.dtype.kind != "f":
        raise node.error(f"{what} scale must be a float tensor, got {scale.dtype}")
    scale = scale.astype(np.float32)
    if node.has(zero_point_index):
        zero_point = np.asarray(node.constant(zero_point_index, f"{what} zero point"))
        if zero_point.dtype.name != dtype:
            raise node.error(
                f"{what} zero point is {zero_point.dtype.name} but the quantized "
                f"tensor is {dtype}"
            )
    else:
        zero_point = np.zeros((), np.dtype(dtype))
    why = check_scale_values(scale, f"{what} scale")
    if why:
        raise node.error(why)
    if dtype == "int32" and np.any(zero_point != 0):
        raise node.error(f"{what} zero point of an int32 tensor must be 0")
    scale_flat, zero_flat = _per_channel(node, scale, zero_point, data_shape, axis, what)
    scale_value = _parameter(node, scale_flat, scale_index, "scale")
    zero_value = _parameter(node, zero_flat.astype(np.int32), zero_point_index, "zero_point")
    return Params(scale_value, zero_value, scale_flat, zero_flat.astype(np.int64), dtype)


def _per_channel(
    node: Node,
    scale: np.ndarray,
    zero_point: np.ndarray,
    data_shape: Shape,
    axis: int | None,
    what: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point as rank 0 (per-tensor) or 1-d per-channel arrays."""
    out = []
    for kind, array in (("scale", scale), ("zero point", zero_point)):
        if array.ndim > 1:
            raise node.error(
                f"{what} {kind} must be a scalar or 1-d, got shape {list(array.shape)}"
            )
        if array.size == 1:
            out.append(array.reshape(()))
            continue
        if axis is None:
            raise node.error(
                f"{what} {kind} must be per-tensor (one value), got shape "
                f"{list(array.shape)}"
            )
        rank = len(data_shape)
        if not -rank <= axis < rank:
            raise node.error(f"axis {axis} is out of range for rank {rank}")
        channels = data_shape[axis]
        if array.size != channels:
            raise node.error(
                f"{what} {kind} has {array.size} values but the input has {channels} "
                f"channels along axis {axis % rank} (shape {list(data_shape)})"
            )
        out.append(array)
    scale_out, zero_out = out
    if scale_out.ndim != zero_out.ndim:  # one per-channel, the other per-tensor
        size = max(scale_out.size, zero_out.size)
        scale_out = np.broadcast_to(scale_out, (size,)).copy()
        zero_out = np.broadcast_to(zero_out, (size,)).copy()
    return scale_out, zero_out


def _parameter(node: Node, array: np.ndarray, index: int, kind: str) -> SSAValue:
    """A relay constant for a scale or zero point, shared by the nodes that read
    the same initializer the same way."""
    source = node.inputs[index] if index >= 0 and node.has(index) else ""
    key = f"{source}#{kind}#{array.dtype}#{array.shape}" if source else None
    cache = node.graph.materialized
    if key is not None and key in cache:
        return cache[key]
    value = node.emit(relay.ConstantOp.from_numpy(array))
    if source:
        set_name(value, source)
        cache[key] = value  # type: ignore[index]
    return value


def _check_no_blocks(node: Node) -> None:
    if int(node.attr("block_size", 0)) != 0:
        raise node.error("blocked quantization (block_size) is not supported")


def _quantize_linear(node: Node) -> SSAValue:
    _check_no_blocks(node)
    data = node.value(0)
    shape = shape_of(data)
    if node.has(2):
        dtype = np.asarray(node.constant(2, "the zero point")).dtype
    else:
        output_dtype = int(node.attr("output_dtype", 0))
        if output_dtype != 0 and output_dtype not in _ONNX_TYPES:
            raise node.error(
                f"output_dtype {output_dtype} is not supported (only uint8, int8, "
                "uint16 and int16)"
            )
        dtype = _ONNX_TYPES.get(output_dtype, np.dtype(np.uint8))
    name = _QDQ_TYPES.get(dtype)
    if name is None:
        raise node.error(
            f"quantizing to {dtype} is not supported (only uint8, int8, uint16 and int16)"
        )
    axis = int(node.attr("axis", 1))
    p = params(node, 1, 2, shape, axis, name, "the output")
    return node.emit(
        relay.QuantizeOp(data, p.scale, p.zero_point, axis=axis, out_dtype=name)
    )


def _dequantize_linear(node: Node) -> SSAValue:
    _check_no_blocks(node)
    data = integer_value(node, 0, "the input")
    dtype = _element_dtype(node, data, "the input", (*_QDQ_TYPES.values(), "int32"))
    axis = int(node.attr("axis", 1))
    p = params(node, 1, 2, shape_of(data), axis, dtype, "the input")
    return node.emit(relay.DequantizeOp(data, p.scale, p.zero_point, axis=axis))


# --- The operator forms ------------------------------------------------------------


def _scales_product(a: Params, b: Params) -> np.ndarray:
    """`a_scale * b_scale` in float32, as onnxruntime computes it."""
    return (a.scale_values.astype(np.float32) * b.scale_values.astype(np.float32)).astype(
        np.float32
    )


def _requantize(
    node: Node, acc: SSAValue, in_scale: np.ndarray, out: Params, axis: int
) -> SSAValue:
    """The int32 accumulator `acc` (scale `in_scale`, zero point 0) in `out`'s
    quantization."""
    scale = node.emit(relay.ConstantOp.from_numpy(in_scale))
    zero = node.emit(relay.ConstantOp.from_numpy(np.zeros((), np.int32)))
    return node.emit(
        relay.RequantizeOp(
            acc, scale, zero, out.scale, out.zero_point, axis=axis, out_dtype=out.dtype
        )
    )


def _integer_params(
    node: Node, index: int, value: SSAValue, what: str, axis: int | None, channels_shape: Shape
) -> Params:
    """The zero point input of ConvInteger or MatMulInteger (0 when absent),
    with the scale 1 they imply."""
    dtype = _element_dtype(node, value, what)
    if node.has(index):
        zero_point = np.asarray(node.constant(index, f"{what} zero point"))
        if zero_point.dtype.name != dtype:
            raise node.error(
                f"{what} zero point is {zero_point.dtype.name} but {what} is {dtype}"
            )
    else:
        zero_point = np.zeros((), np.int32)
    one = np.ones((), np.float32)
    _, flat = _per_channel(node, one, zero_point, channels_shape, axis, what)
    zero = _parameter(node, flat.astype(np.int32), index, "zero_point")
    scale = _parameter(node, one, -1, "scale")
    return Params(scale, zero, one, flat.astype(np.int64), dtype)


def _conv(
    node: Node,
    x_index: int,
    w_index: int,
    x_params: Params | None,
    w_params: Params | None,
    zero_indices: tuple[int, int] | None,
) -> SSAValue:
    """`relay.qnn.conv2d` of a QLinearConv or ConvInteger node (int32 result)."""
    data = integer_value(node, x_index, "x")
    shape = shape_of(data)
    _check_spatial_rank(node, shape)
    weight = integer_value(node, w_index, "w")
    weight_shape = shape_of(weight)
    if zero_indices is not None:  # ConvInteger: zero points only
        x_params = _integer_params(node, zero_indices[0], data, "x", None, shape)
        w_params = _integer_params(node, zero_indices[1], weight, "w", 0, weight_shape)
    assert x_params is not None and w_params is not None
    if x_params.dtype not in _QUANTIZED.values() or w_params.dtype not in _QUANTIZED.values():
        raise node.error("x and w must be int8 or uint8")
    kernel = list(weight_shape[2:])
    declared = node.ints("kernel_shape")
    if declared is not None and list(declared) != kernel:
        raise node.error(
            f"kernel_shape {declared} does not match the weight's kernel {kernel}"
        )
    strides, dilations, pads = _spatial(node, shape, kernel)
    one_d = len(shape) == 3
    if one_d:
        data = _to_2d(node, data)
        weight = node.emit(
            relay.ReshapeOp(weight, (*weight_shape[:2], 1, kernel[0]))
        )
    out = node.emit(
        relay.QnnConv2dOp(
            data,
            weight,
            x_params.zero_point,
            w_params.zero_point,
            x_params.scale,
            w_params.scale,
            strides=_pair(strides),
            padding=_pads_2d(pads),
            dilation=_pair(dilations),
            groups=int(node.attr("group", 1)),
        )
    )
    if one_d:
        n, o, _, length = shape_of(out)
        out = node.emit(relay.ReshapeOp(out, (n, o, length)))
    return out


def _qlinear_conv(node: Node) -> SSAValue:
    x = integer_value(node, 0, "x")
    w = integer_value(node, 3, "w")
    x_params = params(node, 1, 2, shape_of(x), None, _element_dtype(node, x, "x"), "x")
    w_params = params(node, 4, 5, shape_of(w), 0, _element_dtype(node, w, "w"), "w")
    acc = _conv(node, 0, 3, x_params, w_params, None)
    if node.has(8):
        bias = integer_value(node, 8, "B")
        if _element_dtype(node, bias, "B") != "int32":
            raise node.error("the bias B must be int32")
        acc = node.emit(relay.BiasAddOp(acc, bias, axis=1))
    y_dtype = (
        np.asarray(node.constant(7, "y zero point")).dtype.name if node.has(7) else "uint8"
    )
    if y_dtype not in _QUANTIZED.values():
        raise node.error(f"y must be int8 or uint8, got {y_dtype}")
    y = params(node, 6, 7, shape_of(acc), None, y_dtype, "y")
    return _requantize(node, acc, _scales_product(x_params, w_params), y, axis=1)


def _conv_integer(node: Node) -> SSAValue:
    return _conv(node, 0, 1, None, None, (2, 3))


def _matmul(
    node: Node, a_index: int, b_index: int, a_params: Params, b_params: Params
) -> SSAValue:
    """`relay.qnn.dense` (constant 2-d B) or `relay.qnn.batch_matmul` of a
    QLinearMatMul or MatMulInteger node (int32 result)."""
    a = integer_value(node, a_index, "A")
    a_shape = shape_of(a)
    if b_params.per_channel and not node.is_constant(b_index):
        raise node.error("a per-column B zero point or scale needs a constant B")
    if node.is_constant(b_index) and len(node.shape(b_index)) == 2 and len(a_shape) >= 1:
        b = node.constant(b_index, "B")
        weight = node.emit(relay.ConstantOp.from_numpy(np.ascontiguousarray(b.T)))
        set_name(weight, f"{node.inputs[b_index]}_T")
        return node.emit(
            relay.QnnDenseOp(
                a, weight, a_params.zero_point, b_params.zero_point, a_params.scale,
                b_params.scale,
            )
        )
    b = integer_value(node, b_index, "B")
    b_shape = shape_of(b)
    if len(a_shape) != len(b_shape) or len(a_shape) not in (2, 3):
        raise node.error(
            f"a product of two computed tensors needs both of rank 2 or 3, got "
            f"{list(a_shape)} and {list(b_shape)}"
        )
    if len(a_shape) == 2:
        a = node.emit(relay.ReshapeOp(a, (1, *a_shape)))
        b = node.emit(relay.ReshapeOp(b, (1, *b_shape)))
    out = node.emit(
        relay.QnnBatchMatmulOp(
            a, b, a_params.zero_point, b_params.zero_point, a_params.scale,
            b_params.scale, transpose_b=False,
        )
    )
    if len(a_shape) == 2:
        out = node.emit(relay.ReshapeOp(out, shape_of(out)[1:]))
    return out


def _qlinear_matmul(node: Node) -> SSAValue:
    a = integer_value(node, 0, "a")
    b = integer_value(node, 3, "b")
    a_params = params(node, 1, 2, shape_of(a), None, _element_dtype(node, a, "a"), "a")
    b_params = params(node, 4, 5, shape_of(b), -1, _element_dtype(node, b, "b"), "b")
    acc = _matmul(node, 0, 3, a_params, b_params)
    y_dtype = (
        np.asarray(node.constant(7, "y zero point")).dtype.name if node.has(7) else "uint8"
    )
    if y_dtype not in _QUANTIZED.values():
        raise node.error(f"y must be int8 or uint8, got {y_dtype}")
    y = params(node, 6, 7, shape_of(acc), None, y_dtype, "y")
    return _requantize(node, acc, _scales_product(a_params, b_params), y, axis=-1)


def _matmul_integer(node: Node) -> SSAValue:
    a = integer_value(node, 0, "A")
    b = integer_value(node, 1, "B")
    a_params = _integer_params(node, 2, a, "A", None, shape_of(a))
    b_params = _integer_params(node, 3, b, "B", -1, shape_of(b))
    return _matmul(node, 0, 1, a_params, b_params)


CONVERTERS: dict[str, Converter] = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
    "ConvInteger": _conv_integer,
    "MatMulInteger": _matmul_integer,
}

__all__ = ["CONVERTERS", "DTYPES", "Params", "integer_value", "params"]
