"""The relay dialect: static-shape tensor operators named and ordered as in TVM Relay.

Every op works on ranked, statically shaped float `tensor<...>` values (the
quantized ops of `qnn` on i8/ui8/i32 ones too). Op and
attribute names, operand order and attribute defaults follow TVM Relay;
attributes are properties (printed in the attr-dict of the custom form, as
`<{...}>` in the generic form). Verifiers infer the result type with the plain
`*_output_shape` functions of each family (which tests and other passes may call too)
and reject anything else with a message naming the op and the operand or
attribute.

The ops live in one module per family, as TVM splits `relay/op`: `tensor`
(elementwise), `nn`, `transform` (data movement), `reduce`, `constant`,
`qnn` (quantized: int8/uint8/int32 tensors, `relay.qnn.*`);
`base` holds what they share. Everything is re-exported here, so
`from byoc.dialects import relay; relay.AddOp` is the way to name an op.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from byoc.dialects.relay.base import (
    InferredOp,
    RelayOp,
    Shape,
    bool_attr,
    broadcast_shapes,
    check_result,
    float_attr,
    i64_array,
    i64_attr,
    integer_range,
    is_integer_element,
    normalize_axes,
    normalize_axis,
    normalize_padding,
    python_value,
    tensor_of,
)
from byoc.dialects.relay.constant import (
    ConstantOp,
)
from byoc.dialects.relay.nn import (
    AvgPool2dOp,
    BatchMatmulOp,
    BatchNormOp,
    BiasAddOp,
    Conv2dOp,
    DenseOp,
    GlobalAvgPool2dOp,
    LayerNormOp,
    LogSoftmaxOp,
    LrnOp,
    MatmulOp,
    MaxPool2dOp,
    Pool2dOp,
    SoftmaxBase,
    SoftmaxOp,
    batch_matmul_output_shape,
    batch_norm_output_shape,
    bias_add_output_shape,
    conv2d_output_shape,
    dense_output_shape,
    global_pool2d_output_shape,
    layer_norm_output_shape,
    matmul_output_shape,
    pool2d_output_shape,
)
from byoc.dialects.relay.qnn import (
    QNN_OPS,
    DequantizeOp,
    QnnAddOp,
    QnnBatchMatmulOp,
    QnnConv2dOp,
    QnnDenseOp,
    QnnGlobalAvgPool2dOp,
    QnnMulOp,
    QnnOp,
    QuantizeOp,
    RequantizeOp,
)
from byoc.dialects.relay.reduce import (
    MaxOp,
    MeanOp,
    ReduceOp,
    SumOp,
    reduce_axes,
    reduce_output_shape,
)
from byoc.dialects.relay.tensor import (
    AbsOp,
    AddOp,
    ClipOp,
    DivideOp,
    ElementwiseBinaryOp,
    ElementwiseUnaryOp,
    ErfOp,
    ExpOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MultiplyOp,
    NegativeOp,
    PowerOp,
    ReluOp,
    RsqrtOp,
    SigmoidOp,
    SqrtOp,
    SubtractOp,
    TanhOp,
    integer_clip_bounds,
)
from byoc.dialects.relay.transform import (
    BatchFlattenOp,
    ConcatenateOp,
    ExpandDimsOp,
    ReshapeOp,
    SqueezeOp,
    TransposeOp,
    batch_flatten_output_shape,
    concatenate_output_shape,
    expand_dims_output_shape,
    reshape_output_shape,
    squeeze_output_shape,
    transpose_axes,
    transpose_output_shape,
)

# --- Families ----------------------------------------------------------------------

BINARY_OPS: tuple[type[ElementwiseBinaryOp], ...] = (
    AddOp,
    SubtractOp,
    MultiplyOp,
    DivideOp,
    MaximumOp,
    MinimumOp,
    PowerOp,
)
"""Elementwise binary ops with numpy broadcasting; built as `Op(lhs, rhs)`."""

UNARY_OPS: tuple[type[ElementwiseUnaryOp], ...] = (
    ReluOp,
    TanhOp,
    ExpOp,
    NegativeOp,
    AbsOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    SigmoidOp,
    ErfOp,
)
"""Elementwise unary ops without attributes; built as `Op(data)`."""

ELEMENTWISE_OPS: tuple[type[RelayOp], ...] = (
    *BINARY_OPS,
    *UNARY_OPS,
    ClipOp,
    BiasAddOp,
)
"""Ops where each output element depends on one element of each operand
(`ClipOp` has attributes; `BiasAddOp` indexes its bias by one axis)."""

MATMUL_OPS: tuple[type[InferredOp], ...] = (DenseOp, MatmulOp, BatchMatmulOp)
CONV_OPS: tuple[type[InferredOp], ...] = (Conv2dOp,)
POOL_OPS: tuple[type[InferredOp], ...] = (MaxPool2dOp, AvgPool2dOp, GlobalAvgPool2dOp)
NORMALIZATION_OPS: tuple[type[InferredOp], ...] = (
    SoftmaxOp,
    LogSoftmaxOp,
    BatchNormOp,
    LayerNormOp,
    LrnOp,
)
SHAPE_OPS: tuple[type[InferredOp], ...] = (
    ReshapeOp,
    TransposeOp,
    ConcatenateOp,
    BatchFlattenOp,
    SqueezeOp,
    ExpandDimsOp,
)
"""Ops that only move elements (reshape, transpose, concatenate, ...)."""
REDUCTION_OPS: tuple[type[ReduceOp], ...] = (SumOp, MeanOp, MaxOp)

RELAY_OPS: tuple[type[RelayOp], ...] = (
    *ELEMENTWISE_OPS,
    *MATMUL_OPS,
    *CONV_OPS,
    *POOL_OPS,
    *NORMALIZATION_OPS,
    *SHAPE_OPS,
    *REDUCTION_OPS,
    *QNN_OPS,
    ConstantOp,
)
"""Every relay op."""

Relay = Dialect("relay", list(RELAY_OPS), [])

__all__ = [
    "AbsOp",
    "AddOp",
    "AvgPool2dOp",
    "BINARY_OPS",
    "BatchFlattenOp",
    "BatchMatmulOp",
    "BatchNormOp",
    "BiasAddOp",
    "CONV_OPS",
    "ClipOp",
    "ConcatenateOp",
    "ConstantOp",
    "Conv2dOp",
    "DenseOp",
    "DequantizeOp",
    "DivideOp",
    "ELEMENTWISE_OPS",
    "ElementwiseBinaryOp",
    "ElementwiseUnaryOp",
    "ErfOp",
    "ExpOp",
    "ExpandDimsOp",
    "GlobalAvgPool2dOp",
    "InferredOp",
    "LayerNormOp",
    "LogOp",
    "LogSoftmaxOp",
    "LrnOp",
    "MATMUL_OPS",
    "MatmulOp",
    "MaxOp",
    "MaxPool2dOp",
    "MaximumOp",
    "MeanOp",
    "MinimumOp",
    "MultiplyOp",
    "NORMALIZATION_OPS",
    "NegativeOp",
    "POOL_OPS",
    "Pool2dOp",
    "PowerOp",
    "QNN_OPS",
    "QnnAddOp",
    "QnnBatchMatmulOp",
    "QnnConv2dOp",
    "QnnDenseOp",
    "QnnGlobalAvgPool2dOp",
    "QnnMulOp",
    "QnnOp",
    "QuantizeOp",
    "REDUCTION_OPS",
    "RELAY_OPS",
    "ReduceOp",
    "Relay",
    "RelayOp",
    "ReluOp",
    "RequantizeOp",
    "ReshapeOp",
    "RsqrtOp",
    "SHAPE_OPS",
    "Shape",
    "SigmoidOp",
    "SoftmaxBase",
    "SoftmaxOp",
    "SqrtOp",
    "SqueezeOp",
    "SubtractOp",
    "SumOp",
    "TanhOp",
    "TransposeOp",
    "UNARY_OPS",
    "batch_flatten_output_shape",
    "batch_matmul_output_shape",
    "batch_norm_output_shape",
    "bias_add_output_shape",
    "bool_attr",
    "broadcast_shapes",
    "check_result",
    "concatenate_output_shape",
    "conv2d_output_shape",
    "dense_output_shape",
    "expand_dims_output_shape",
    "float_attr",
    "global_pool2d_output_shape",
    "i64_array",
    "i64_attr",
    "integer_clip_bounds",
    "integer_range",
    "is_integer_element",
    "layer_norm_output_shape",
    "matmul_output_shape",
    "normalize_axes",
    "normalize_axis",
    "normalize_padding",
    "pool2d_output_shape",
    "python_value",
    "reduce_axes",
    "reduce_output_shape",
    "reshape_output_shape",
    "squeeze_output_shape",
    "tensor_of",
    "transpose_axes",
    "transpose_output_shape",
]
