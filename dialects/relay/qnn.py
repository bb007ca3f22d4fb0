"""Quantized ops (TVM's relay/qnn): quantize, dequantize, requantize, and the
integer conv2d, dense, batch_matmul, add, mul and global_avg_pool2d.

Quantized tensors are `i8` (int8), `ui8` (uint8) or `i32` (int32); quantize,
dequantize and requantize also take `i16` (int16) and `ui16` (uint16), the
activations of ONNX's 16-bit QDQ models (the integer conv2d, dense,
batch_matmul, add, mul and pooling take 8-bit data only). A real
value `r` is represented by `q` with `r = scale * (q - zero_point)`.

Quantization parameters are operands, in TVM QNN's order: each scale is a
`tensor<f32>` and each zero point a `tensor<i32>` (or of the quantized type,
as ONNX stores them), either per-tensor (rank 0, or one element) or
per-channel (1-d with one value per index of the op's channel `axis`).
Rounding and saturation are onnxruntime's: values are computed in float32,
rounded half to even, and clamped to the output type's range. When a
parameter is a `relay.constant`, the verifier checks its values too: every
scale positive and finite, every zero point within the quantized type.

Generic form of each op (`axis` defaults to -1 as in TVM; `out_dtype` is
optional, and must name the result's element type when given):

    "relay.qnn.quantize"(%data, %output_scale, %output_zero_point)
        <{axis = 1 : i64, out_dtype = "uint8"}>
        : (tensor<1x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<1x8xui8>
    "relay.qnn.dequantize"(%data, %input_scale, %input_zero_point) <{axis = -1 : i64}>
        : (tensor<1x8xi8>, tensor<f32>, tensor<i32>) -> tensor<1x8xf32>
    "relay.qnn.requantize"(%data, %input_scale, %input_zero_point, %output_scale,
        %output_zero_point) <{axis = 1 : i64, out_dtype = "int8"}>
        : (tensor<1x8x4x4xi32>, tensor<8xf32>, tensor<i32>, tensor<f32>, tensor<i32>)
        -> tensor<1x8x4x4xi8>
    "relay.qnn.conv2d"(%data, %kernel, %input_zero_point, %kernel_zero_point,
        %input_scale, %kernel_scale) <{padding = array<i64: 1, 1>, ...}>
        : (tensor<1x3x8x8xui8>, tensor<8x3x3x3xi8>, tensor<i32>, tensor<8xi32>,
           tensor<f32>, tensor<8xf32>) -> tensor<1x8x8x8xi32>
    "relay.qnn.dense"(%data, %weight, %input_zero_point, %kernel_zero_point,
        %input_scale, %kernel_scale)
        : (tensor<4x16xui8>, tensor<8x16xi8>, tensor<i32>, tensor<i32>, tensor<f32>,
           tensor<8xf32>) -> tensor<4x8xi32>
    "relay.qnn.batch_matmul"(%x, %y, %x_zero_point, %y_zero_point, %x_scale, %y_scale)
        <{transpose_a = false, transpose_b = true}>
        : (tensor<2x4x16xi8>, tensor<2x8x16xi8>, tensor<i32>, tensor<i32>, tensor<f32>,
           tensor<f32>) -> tensor<2x4x8xi32>
    "relay.qnn.add"(%lhs, %rhs, %lhs_scale, %lhs_zero_point, %rhs_scale,
        %rhs_zero_point, %output_scale, %output_zero_point)
        : (tensor<4x8xui8>, tensor<8xui8>, tensor<f32>, tensor<i32>, tensor<f32>,
           tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<4x8xui8>
    "relay.qnn.mul"(...)                     (the operands of relay.qnn.add)
    "relay.qnn.global_avg_pool2d"(%data, %input_scale, %input_zero_point,
        %output_scale, %output_zero_point)
        : (tensor<1x8x4x4xui8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>)
        -> tensor<1x8x1x1xui8>
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    Float32Type,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.relay.base import (
    InferredOp,
    _check_layout,
    _error,
    _opt_i64,
    _pair,
    _string_attr,
    bool_attr,
    broadcast_shapes,
    i64_array,
    i64_attr,
    normalize_axis,
)
from byoc.dialects.relay.constant import ConstantOp
from byoc.dialects.relay.nn import (
    batch_matmul_output_shape,
    conv2d_output_shape,
    dense_output_shape,
    global_pool2d_output_shape,
)

# --- Quantized types ---------------------------------------------------------------

INT8 = IntegerType(8)
UINT8 = IntegerType(8, Signedness.UNSIGNED)
INT32 = IntegerType(32)
INT16 = IntegerType(16)
UINT16 = IntegerType(16, Signedness.UNSIGNED)

DTYPES: dict[str, Attribute] = {
    "int8": INT8,
    "uint8": UINT8,
    "int16": INT16,
    "uint16": UINT16,
    "int32": INT32,
    "float32": f32,
}
"""TVM's dtype names (the `out_dtype` values) and their element types; the
MLIR spellings `i8`, `ui8`, `i16`, `ui16`, `i32`, `f32` are accepted too."""

_ALIASES = {
    "i8": "int8",
    "ui8": "uint8",
    "i16": "int16",
    "ui16": "uint16",
    "i32": "int32",
    "f32": "float32",
}

QUANTIZED_TYPES = (INT8, UINT8, INT16, UINT16, INT32)
"""Element types a quantized tensor may have."""

_RANGES: dict[Attribute, tuple[int, int]] = {
    INT8: (-128, 127),
    UINT8: (0, 255),
    INT16: (-(2**15), 2**15 - 1),
    UINT16: (0, 2**16 - 1),
    INT32: (-(2**31), 2**31 - 1),
}


def dtype_name(element: Attribute) -> str:
    """TVM's name of an element type ("int8", ...), or its MLIR spelling."""
    for name, typ in DTYPES.items():
        if typ == element:
            return name
    return str(element)


def type_range(element: Attribute) -> tuple[int, int]:
    """The smallest and largest value of a quantized element type."""
    return _RANGES[element]


def is_quantized(element: Attribute) -> bool:
    """Whether `element` is a quantized element type (i8, ui8, i16, ui16, i32)."""
    return element in _RANGES


# --- Checks ------------------------------------------------------------------------


def _tensor(typ: Attribute, op_name: str, what: str) -> TensorType:
    if not isinstance(typ, TensorType):
        raise _error(op_name, f"{what} must be a tensor, got {typ}")
    if any(d < 0 for d in typ.get_shape()):
        raise _error(op_name, f"{what} must have a static shape, got {typ}")
    return typ


def quantized_tensor(
    typ: Attribute, op_name: str, what: str, allowed: Sequence[Attribute] = QUANTIZED_TYPES
) -> TensorType:
    """`typ` as a static tensor of one of the `allowed` integer element types."""
    tensor = _tensor(typ, op_name, what)
    if tensor.element_type not in allowed:
        names = ", ".join(str(a) for a in allowed)
        raise _error(
            op_name,
            f"{what} must have a quantized element type ({names}), got "
            f"{tensor.element_type}",
        )
    return tensor


def _float_tensor(typ: Attribute, op_name: str, what: str) -> TensorType:
    tensor = _tensor(typ, op_name, what)
    if not isinstance(tensor.element_type, Float32Type):
        raise _error(op_name, f"{what} must have element type f32, got {tensor.element_type}")
    return tensor


def _param_size(
    typ: TensorType, op_name: str, what: str, channels: int | None, axis: int | None
) -> int:
    """How many values a scale or zero point holds: 1 (per-tensor) or
    `channels` (per-channel along `axis`); anything else is an error."""
    shape = typ.get_shape()
    if len(shape) > 1:
        raise _error(op_name, f"{what} must be a scalar or 1-d, got shape {list(shape)}")
    size = math.prod(shape)
    if size == 1:
        return 1
    if channels is None:
        raise _error(
            op_name, f"{what} must be per-tensor (one value), got shape {list(shape)}"
        )
    if size != channels:
        where = f"along axis {axis}" if axis is not None else "output channels"
        raise _error(
            op_name,
            f"{what} has {size} values but the data has {channels} channels ({where})",
        )
    return size


def check_scale(
    value: Attribute, op_name: str, what: str, channels: int | None = None, axis: int | None = None
) -> None:
    """A scale: an f32 tensor, per-tensor or with one value per channel."""
    _param_size(_float_tensor(value, op_name, what), op_name, what, channels, axis)


def check_zero_point(
    value: Attribute,
    op_name: str,
    what: str,
    channels: int | None = None,
    axis: int | None = None,
) -> None:
    """A zero point: an integer tensor (i32 or a quantized type), per-tensor or
    with one value per channel."""
    typ = quantized_tensor(value, op_name, what)
    _param_size(typ, op_name, what, channels, axis)


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The values of `value` when a `relay.constant` defines it, else None."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        try:
            return owner.to_numpy()
        except VerifyException:
            return None
    return None


def check_scale_values(array: np.ndarray, what: str) -> str | None:
    """Why these scale values are invalid (not all positive and finite), or None."""
    flat = np.asarray(array, np.float64).reshape(-1)
    bad = ~(np.isfinite(flat) & (flat > 0))
    if not bad.any():
        return None
    index = int(np.argmax(bad))
    where = f" (channel {index})" if flat.size > 1 else ""
    return f"{what} must be positive and finite, got {flat[index]:g}{where}"


def check_zero_point_values(
    array: np.ndarray, element: Attribute, what: str
) -> str | None:
    """Why these zero points do not fit quantized type `element`, or None."""
    low, high = type_range(element)
    flat = np.asarray(array, np.int64).reshape(-1)
    bad = (flat < low) | (flat > high)
    if not bad.any():
        return None
    index = int(np.argmax(bad))
    where = f" (channel {index})" if flat.size > 1 else ""
    return (
        f"{what} {int(flat[index])}{where} is out of the range of "
        f"{dtype_name(element)} [{low}, {high}]"
    )


def _check_param_values(
    op_name: str,
    scales: Sequence[tuple[str, SSAValue]],
    zero_points: Sequence[tuple[str, SSAValue, Attribute]],
) -> None:
    """Check the values of constant parameters (scales > 0, zero points in range)."""
    for what, value in scales:
        array = constant_value(value)
        if array is not None:
            why = check_scale_values(array, what)
            if why:
                raise _error(op_name, why)
    for what, value, element in zero_points:
        array = constant_value(value)
        if array is not None:
            why = check_zero_point_values(array, element, what)
            if why:
                raise _error(op_name, why)


def _out_element(
    op_name: str, attrs: Mapping[str, Any], default: Attribute, allowed: Sequence[Attribute]
) -> Attribute:
    """The element type `out_dtype` names (`default` when absent)."""
    name = attrs.get("out_dtype")
    if name is None:
        return default
    element = DTYPES.get(_ALIASES.get(name, name))
    if element is None or element not in allowed:
        names = ", ".join(f'"{dtype_name(a)}"' for a in allowed)
        raise _error(op_name, f'out_dtype "{name}" is not one of {names}')
    return element


def _opt_dtype(out_dtype: str | None) -> StringAttr | None:
    return None if out_dtype is None else _string_attr(out_dtype)


class QnnOp(InferredOp, abc.ABC):
    """A quantized op: shapes and types checked by `infer_type`, and the values of
    constant quantization parameters by `verify_`."""

    def verify_(self) -> None:
        super().verify_()
        scales, zero_points = self.parameters()
        _check_param_values(self.name, scales, zero_points)

    def parameters(
        self,
    ) -> tuple[list[tuple[str, SSAValue]], list[tuple[str, SSAValue, Attribute]]]:
        """The scale operands (name, value) and the zero point operands (name,
        value, the quantized type they must fit)."""
        raise NotImplementedError

    def _element(self, value: SSAValue) -> Attribute:
        typ = value.type
        assert isinstance(typ, TensorType)
        return typ.element_type


# --- quantize, dequantize, requantize ----------------------------------------------


def _check_channel_params(
    op_name: str,
    shape: Sequence[int],
    axis: int,
    params: Sequence[tuple[str, Attribute]],
) -> None:
    """Check scales (`*scale`) and zero points of an op with a channel `axis`:
    each per-tensor, or per-channel with `shape[axis]` values. The axis only
    matters (and must be valid) when some parameter is per-channel."""
    for what, typ in params:
        tensor = (
            _float_tensor(typ, op_name, what)
            if what.endswith("scale")
            else quantized_tensor(typ, op_name, what)
        )
        dims = tensor.get_shape()
        if len(dims) > 1:
            raise _error(op_name, f"{what} must be a scalar or 1-d, got shape {list(dims)}")
        if math.prod(dims) == 1:
            continue
        if not shape:
            raise _error(
                op_name, f"{what} must be per-tensor for a scalar, got shape {list(dims)}"
            )
        ax = normalize_axis(axis, len(shape), op_name)
        _param_size(tensor, op_name, what, shape[ax], ax)


@irdl_op_definition
class QuantizeOp(QnnOp):
    """Quantizes f32 `data`: `q = clamp(round(data / output_scale) +
    output_zero_point)`, the division in float32, rounded half to even, clamped to
    the range of `out_dtype` (int8 by default; uint8, int16, uint16 or int32). Per-channel
    parameters lie along `axis` (ONNX QuantizeLinear)."""

    name = "relay.qnn.quantize"

    data = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$data `,` $output_scale `,` $output_zero_point attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        output_scale: SSAValue,
        output_zero_point: SSAValue,
        axis: int = -1,
        out_dtype: str = "int8",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, output_scale, output_zero_point],
            {"axis": i64_attr(axis), "out_dtype": _opt_dtype(out_dtype)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = _float_tensor(operand_types[0], cls.name, "data")
        _check_channel_params(
            cls.name,
            data.get_shape(),
            attrs["axis"],
            [("output_scale", operand_types[1]), ("output_zero_point", operand_types[2])],
        )
        out = _out_element(cls.name, attrs, INT8, QUANTIZED_TYPES)
        return TensorType(out, data.get_shape())

    def parameters(self):
        return (
            [("output_scale", self.output_scale)],
            [("output_zero_point", self.output_zero_point, self._element(self.result))],
        )


@irdl_op_definition
class DequantizeOp(QnnOp):
    """Dequantizes `data` (i8, ui8, i16, ui16 or i32) to f32:
    `(data - input_zero_point) * input_scale`, the difference exact, the product
    in float32. Per-channel parameters lie along `axis` (ONNX DequantizeLinear)."""

    name = "relay.qnn.dequantize"

    data = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$data `,` $input_scale `,` $input_zero_point attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        input_scale: SSAValue,
        input_zero_point: SSAValue,
        axis: int = -1,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, input_scale, input_zero_point],
            {"axis": i64_attr(axis)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = quantized_tensor(operand_types[0], cls.name, "data")
        _check_channel_params(
            cls.name,
            data.get_shape(),
            attrs["axis"],
            [("input_scale", operand_types[1]), ("input_zero_point", operand_types[2])],
        )
        out = _out_element(cls.name, attrs, f32, (f32,))
        return TensorType(out, data.get_shape())

    def parameters(self):
        return (
            [("input_scale", self.input_scale)],
            [("input_zero_point", self.input_zero_point, self._element(self.data))],
        )


@irdl_op_definition
class RequantizeOp(QnnOp):
    """Converts quantized `data` to other quantization parameters:
    `q = clamp(round(float(data - input_zero_point) * (input_scale /
    output_scale)) + output_zero_point)`, the ratio and product in float32,
    rounded half to even, clamped to `out_dtype` (int8 by default) — the
    requantization onnxruntime's QLinearConv and QLinearMatMul apply to their
    int32 accumulators. Either scale (and zero point) may be per-channel along
    `axis`."""

    name = "relay.qnn.requantize"

    data = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$data `,` $input_scale `,` $input_zero_point `,` $output_scale `,` "
        "$output_zero_point attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        input_scale: SSAValue,
        input_zero_point: SSAValue,
        output_scale: SSAValue,
        output_zero_point: SSAValue,
        axis: int = -1,
        out_dtype: str = "int8",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, input_scale, input_zero_point, output_scale, output_zero_point],
            {"axis": i64_attr(axis), "out_dtype": _opt_dtype(out_dtype)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = quantized_tensor(operand_types[0], cls.name, "data")
        names = ("input_scale", "input_zero_point", "output_scale", "output_zero_point")
        _check_channel_params(
            cls.name, data.get_shape(), attrs["axis"], list(zip(names, operand_types[1:]))
        )
        out = _out_element(cls.name, attrs, INT8, QUANTIZED_TYPES)
        return TensorType(out, data.get_shape())

    def parameters(self):
        return (
            [("input_scale", self.input_scale), ("output_scale", self.output_scale)],
            [
                ("input_zero_point", self.input_zero_point, self._element(self.data)),
                ("output_zero_point", self.output_zero_point, self._element(self.result)),
            ],
        )


# --- Integer conv2d, dense, batch_matmul ---------------------------------------------

_INPUT_TYPES = (INT8, UINT8)


def _accumulator(cls_name: str, attrs: Mapping[str, Any]) -> Attribute:
    return _out_element(cls_name, attrs, INT32, (INT32,))


@irdl_op_definition
class QnnConv2dOp(QnnOp):
    """Integer 2-d convolution of NCHW `data` (i8/ui8) with OIHW `kernel` (i8/ui8),
    accumulated exactly in int32:
    `out[n, o, y, x] = sum (data_padded[...] - input_zero_point) * (kernel[o, ...] -
    kernel_zero_point[o])`, the geometry and attributes of `relay.nn.conv2d`; the
    padding holds `input_zero_point` (it adds nothing). `kernel_zero_point` and
    `kernel_scale` may be per output channel; `input_scale` and `kernel_scale` do
    not change the result (they describe it: its scale is their product, what a
    following `relay.qnn.requantize` takes as its input scale)."""

    name = "relay.qnn.conv2d"

    data = operand_def(TensorType)
    kernel = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    kernel_zero_point = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    kernel_scale = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = opt_prop_def(IntegerAttr[I64])
    kernel_size = opt_prop_def(DenseArrayBase.constr(i64))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("OIHW"))
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$data `,` $kernel `,` $input_zero_point `,` $kernel_zero_point `,` "
        "$input_scale `,` $kernel_scale attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        kernel: SSAValue,
        input_zero_point: SSAValue,
        kernel_zero_point: SSAValue,
        input_scale: SSAValue,
        kernel_scale: SSAValue,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        channels: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        out_dtype: str | None = "int32",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, kernel, input_zero_point, kernel_zero_point, input_scale, kernel_scale],
            {
                "strides": _pair(strides),
                "padding": i64_array(padding),
                "dilation": _pair(dilation),
                "groups": i64_attr(groups),
                "channels": _opt_i64(channels),
                "kernel_size": None if kernel_size is None else _pair(kernel_size),
                "out_dtype": _opt_dtype(out_dtype),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "data_layout", "NCHW")
        _check_layout(cls.name, attrs, "kernel_layout", "OIHW")
        data = quantized_tensor(operand_types[0], cls.name, "data", _INPUT_TYPES)
        kernel = quantized_tensor(operand_types[1], cls.name, "kernel", _INPUT_TYPES)
        shape = conv2d_output_shape(
            data.get_shape(),
            kernel.get_shape(),
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["groups"],
            attrs["channels"],
            attrs["kernel_size"],
            cls.name,
        )
        out_channels = shape[1]
        check_zero_point(operand_types[2], cls.name, "input_zero_point")
        check_zero_point(operand_types[3], cls.name, "kernel_zero_point", out_channels)
        check_scale(operand_types[4], cls.name, "input_scale")
        check_scale(operand_types[5], cls.name, "kernel_scale", out_channels)
        return TensorType(_accumulator(cls.name, attrs), shape)

    def parameters(self):
        return (
            [("input_scale", self.input_scale), ("kernel_scale", self.kernel_scale)],
            [
                ("input_zero_point", self.input_zero_point, self._element(self.data)),
                ("kernel_zero_point", self.kernel_zero_point, self._element(self.kernel)),
            ],
        )


@irdl_op_definition
class QnnDenseOp(QnnOp):
    """Integer `data [..., K]` (i8/ui8) times the transposed `weight [N, K]`
    (i8/ui8), accumulated exactly in int32: `out[..., n] = sum_k (data[..., k] -
    input_zero_point) * (weight[n, k] - kernel_zero_point[n])`. `kernel_zero_point`
    and `kernel_scale` may be per output unit (N values); the scales only describe
    the result (its scale is `input_scale * kernel_scale`)."""

    name = "relay.qnn.dense"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    kernel_zero_point = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    kernel_scale = operand_def(TensorType)
    result = result_def(TensorType)
    units = opt_prop_def(IntegerAttr[I64])
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$data `,` $weight `,` $input_zero_point `,` $kernel_zero_point `,` "
        "$input_scale `,` $kernel_scale attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        input_zero_point: SSAValue,
        kernel_zero_point: SSAValue,
        input_scale: SSAValue,
        kernel_scale: SSAValue,
        units: int | None = None,
        out_dtype: str | None = "int32",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, weight, input_zero_point, kernel_zero_point, input_scale, kernel_scale],
            {"units": _opt_i64(units), "out_dtype": _opt_dtype(out_dtype)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = quantized_tensor(operand_types[0], cls.name, "data", _INPUT_TYPES)
        weight = quantized_tensor(operand_types[1], cls.name, "weight", _INPUT_TYPES)
        shape = dense_output_shape(
            data.get_shape(), weight.get_shape(), attrs["units"], cls.name
        )
        units = shape[-1]
        check_zero_point(operand_types[2], cls.name, "input_zero_point")
        check_zero_point(operand_types[3], cls.name, "kernel_zero_point", units)
        check_scale(operand_types[4], cls.name, "input_scale")
        check_scale(operand_types[5], cls.name, "kernel_scale", units)
        return TensorType(_accumulator(cls.name, attrs), shape)

    def parameters(self):
        return (
            [("input_scale", self.input_scale), ("kernel_scale", self.kernel_scale)],
            [
                ("input_zero_point", self.input_zero_point, self._element(self.data)),
                ("kernel_zero_point", self.kernel_zero_point, self._element(self.weight)),
            ],
        )


@irdl_op_definition
class QnnBatchMatmulOp(QnnOp):
    """Integer batched `x [B, M, K]` times the transposed `y [B, N, K]` (defaults
    `transpose_a = false`, `transpose_b = true` as `relay.nn.batch_matmul`; a
    batch of 1 broadcasts), accumulated exactly in int32:
    `out[b, m, n] = sum_k (x[b, m, k] - x_zero_point) * (y[b, n, k] - y_zero_point)`.
    Every parameter is per-tensor."""

    name = "relay.qnn.batch_matmul"

    x = operand_def(TensorType)
    y = operand_def(TensorType)
    x_zero_point = operand_def(TensorType)
    y_zero_point = operand_def(TensorType)
    x_scale = operand_def(TensorType)
    y_scale = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = prop_def(BoolAttr, default_value=bool_attr(False))
    transpose_b = prop_def(BoolAttr, default_value=bool_attr(True))
    out_dtype = opt_prop_def(StringAttr)

    assembly_format = (
        "$x `,` $y `,` $x_zero_point `,` $y_zero_point `,` $x_scale `,` $y_scale "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        x: SSAValue,
        y: SSAValue,
        x_zero_point: SSAValue,
        y_zero_point: SSAValue,
        x_scale: SSAValue,
        y_scale: SSAValue,
        transpose_a: bool = False,
        transpose_b: bool = True,
        out_dtype: str | None = "int32",
        result_type: Attribute | None = None,
    ):
        self._build(
            [x, y, x_zero_point, y_zero_point, x_scale, y_scale],
            {
                "transpose_a": bool_attr(transpose_a),
                "transpose_b": bool_attr(transpose_b),
                "out_dtype": _opt_dtype(out_dtype),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        x = quantized_tensor(operand_types[0], cls.name, "x", _INPUT_TYPES)
        y = quantized_tensor(operand_types[1], cls.name, "y", _INPUT_TYPES)
        shape = batch_matmul_output_shape(
            x.get_shape(), y.get_shape(), attrs["transpose_a"], attrs["transpose_b"], cls.name
        )
        check_zero_point(operand_types[2], cls.name, "x_zero_point")
        check_zero_point(operand_types[3], cls.name, "y_zero_point")
        check_scale(operand_types[4], cls.name, "x_scale")
        check_scale(operand_types[5], cls.name, "y_scale")
        return TensorType(_accumulator(cls.name, attrs), shape)

    def parameters(self):
        return (
            [("x_scale", self.x_scale), ("y_scale", self.y_scale)],
            [
                ("x_zero_point", self.x_zero_point, self._element(self.x)),
                ("y_zero_point", self.y_zero_point, self._element(self.y)),
            ],
        )


# --- Elementwise: add, mul -----------------------------------------------------------


class QnnBinaryOp(QnnOp, abc.ABC):
    """A quantized elementwise binary op with numpy broadcasting: `lhs` and `rhs`
    of one quantized type (i8 or ui8), the result of that type, per-tensor
    parameters. `lhs_axis` and `rhs_axis` are TVM's (per-channel parameters are
    not supported, so they are only kept)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_scale = operand_def(TensorType)
    lhs_zero_point = operand_def(TensorType)
    rhs_scale = operand_def(TensorType)
    rhs_zero_point = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    lhs_axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))
    rhs_axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))

    assembly_format = (
        "$lhs `,` $rhs `,` $lhs_scale `,` $lhs_zero_point `,` $rhs_scale `,` "
        "$rhs_zero_point `,` $output_scale `,` $output_zero_point attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        lhs_scale: SSAValue,
        lhs_zero_point: SSAValue,
        rhs_scale: SSAValue,
        rhs_zero_point: SSAValue,
        output_scale: SSAValue,
        output_zero_point: SSAValue,
        result_type: Attribute | None = None,
    ):
        self._build(
            [
                lhs,
                rhs,
                lhs_scale,
                lhs_zero_point,
                rhs_scale,
                rhs_zero_point,
                output_scale,
                output_zero_point,
            ],
            {},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        lhs = quantized_tensor(operand_types[0], cls.name, "lhs", _INPUT_TYPES)
        rhs = quantized_tensor(operand_types[1], cls.name, "rhs", _INPUT_TYPES)
        if lhs.element_type != rhs.element_type:
            raise _error(
                cls.name,
                f"lhs and rhs have different element types {lhs.element_type} and "
                f"{rhs.element_type}",
            )
        shape = broadcast_shapes(lhs.get_shape(), rhs.get_shape(), cls.name)
        names = ("lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point")
        names += ("output_scale", "output_zero_point")
        for what, typ in zip(names, operand_types[2:]):
            if what.endswith("scale"):
                check_scale(typ, cls.name, what)
            else:
                check_zero_point(typ, cls.name, what)
        return TensorType(lhs.element_type, shape)

    def parameters(self):
        element = self._element(self.lhs)
        return (
            [
                ("lhs_scale", self.lhs_scale),
                ("rhs_scale", self.rhs_scale),
                ("output_scale", self.output_scale),
            ],
            [
                ("lhs_zero_point", self.lhs_zero_point, element),
                ("rhs_zero_point", self.rhs_zero_point, element),
                ("output_zero_point", self.output_zero_point, element),
            ],
        )


@irdl_op_definition
class QnnAddOp(QnnBinaryOp):
    """Quantized `lhs + rhs` as onnxruntime's QLinearAdd:
    `q = clamp(round(lhs_scale / output_scale * (lhs - lhs_zero_point) +
    rhs_scale / output_scale * (rhs - rhs_zero_point)) + output_zero_point)`,
    in float32, rounded once, half to even."""

    name = "relay.qnn.add"


@irdl_op_definition
class QnnMulOp(QnnBinaryOp):
    """Quantized `lhs * rhs` as onnxruntime's QLinearMul:
    `q = clamp(round(float((lhs - lhs_zero_point) * (rhs - rhs_zero_point)) *
    (lhs_scale * rhs_scale / output_scale) + output_zero_point))`: the integer
    product exact, the rest in float32 (the zero point added before rounding),
    rounded half to even."""

    name = "relay.qnn.mul"


# --- Pooling ---------------------------------------------------------------------------


@irdl_op_definition
class QnnGlobalAvgPool2dOp(QnnOp):
    """The quantized mean over H and W of NCHW `data` (i8/ui8), as onnxruntime's
    QLinearGlobalAveragePool: with `N = H * W`,
    `q = clamp(round(float(sum - N * input_zero_point) * (input_scale /
    (output_scale * N))) + output_zero_point)`, the sum exact, the rest in float32,
    rounded half to even. The result is `[N, C, 1, 1]` of `data`'s type."""

    name = "relay.qnn.global_avg_pool2d"

    data = operand_def(TensorType)
    input_scale = operand_def(TensorType)
    input_zero_point = operand_def(TensorType)
    output_scale = operand_def(TensorType)
    output_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))

    assembly_format = (
        "$data `,` $input_scale `,` $input_zero_point `,` $output_scale `,` "
        "$output_zero_point attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        input_scale: SSAValue,
        input_zero_point: SSAValue,
        output_scale: SSAValue,
        output_zero_point: SSAValue,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, input_scale, input_zero_point, output_scale, output_zero_point],
            {},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "layout", "NCHW")
        data = quantized_tensor(operand_types[0], cls.name, "data", _INPUT_TYPES)
        shape = global_pool2d_output_shape(data.get_shape(), cls.name)
        check_scale(operand_types[1], cls.name, "input_scale")
        check_zero_point(operand_types[2], cls.name, "input_zero_point")
        check_scale(operand_types[3], cls.name, "output_scale")
        check_zero_point(operand_types[4], cls.name, "output_zero_point")
        return TensorType(data.element_type, shape)

    def parameters(self):
        element = self._element(self.data)
        return (
            [("input_scale", self.input_scale), ("output_scale", self.output_scale)],
            [
                ("input_zero_point", self.input_zero_point, element),
                ("output_zero_point", self.output_zero_point, element),
            ],
        )


QNN_OPS: tuple[type[QnnOp], ...] = (
    QuantizeOp,
    DequantizeOp,
    RequantizeOp,
    QnnConv2dOp,
    QnnDenseOp,
    QnnBatchMatmulOp,
    QnnAddOp,
    QnnMulOp,
    QnnGlobalAvgPool2dOp,
)
"""Every quantized op."""
