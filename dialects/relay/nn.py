"""Neural-network ops (TVM's relay/op/nn): bias_add, dense and matmuls,
convolution, pooling, softmax and the norms, with their shape functions."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
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

from byoc.dialects.relay.base import (
    InferredOp,
    Shape,
    _check_layout,
    _check_rank,
    _check_tuple,
    _error,
    _ntuple,
    _opt_i64,
    _pair,
    _string_attr,
    _tensors,
    _window_outputs,
    bool_attr,
    float_attr,
    i64_array,
    i64_attr,
    normalize_axis,
    normalize_padding_nd,
)


_DATA_LAYOUTS = {2: "NCHW", 3: "NCDHW"}
_KERNEL_LAYOUTS = {2: "OIHW", 3: "OIDHW"}
_TRANSPOSED_KERNEL_LAYOUTS = {2: "IOHW", 3: "IODHW"}
_DIM_NAMES = {2: ("height", "width"), 3: ("depth", "height", "width")}


def conv_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Sequence[int] | None = None,
    op_name: str = "relay.nn.conv2d",
    spatial: int = 2,
) -> Shape:
    """Output of a convolution over `spatial` dims (2: NCHW x OIHW, 3: NCDHW x
    OIDHW), grouped and depthwise included."""
    _check_rank(data, spatial + 2, op_name, f"data ({_DATA_LAYOUTS[spatial]})")
    _check_rank(weight, spatial + 2, op_name, f"weight ({_KERNEL_LAYOUTS[spatial]})")
    strides = _check_tuple(strides, spatial, op_name, "strides")
    dilation = _check_tuple(dilation, spatial, op_name, "dilation")
    pads = normalize_padding_nd(padding, spatial, op_name)
    if groups < 1:
        raise _error(op_name, f"groups must be positive, got {groups}")
    n, c, *sizes = data
    o, i, *kernel = weight
    if c % groups:
        raise _error(
            op_name, f"data has {c} channels, which groups={groups} does not divide"
        )
    if i * groups != c:
        raise _error(
            op_name,
            f"data has {c} channels but weight expects {i * groups} (groups={groups})",
        )
    if o % groups:
        raise _error(
            op_name,
            f"weight has {o} output channels, which groups={groups} does not divide",
        )
    if channels is not None and channels != o:
        raise _error(
            op_name, f"channels={channels} does not match the weight's {o} output channels"
        )
    if kernel_size is not None and tuple(kernel_size) != tuple(kernel):
        raise _error(
            op_name,
            f"kernel_size {list(kernel_size)} does not match the weight's kernel "
            f"{list(kernel)}",
        )
    outs = tuple(
        _window_outputs(
            sizes[d],
            pads[d] + pads[d + spatial],
            kernel[d],
            strides[d],
            dilation[d],
            False,
            op_name,
            f"kernel {_DIM_NAMES[spatial][d]}",
        )
        for d in range(spatial)
    )
    return (n, o, *outs)


def conv2d_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Sequence[int] | None = None,
    op_name: str = "relay.nn.conv2d",
) -> Shape:
    """NCHW output of an NCHW x OIHW convolution (grouped and depthwise included)."""
    return conv_output_shape(
        data, weight, strides, padding, dilation, groups, channels, kernel_size, op_name, 2
    )


def conv_transpose_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Sequence[int] | None = None,
    output_padding: Sequence[int] | None = None,
    op_name: str = "relay.nn.conv2d_transpose",
    spatial: int = 2,
) -> Shape:
    """Output of a transposed convolution over `spatial` dims (2: NCHW x IOHW,
    3: NCDHW x IODHW): along each dim `(size - 1) * stride - pad_begin - pad_end
    + dilation * (kernel - 1) + output_padding + 1`; `groups * O` channels."""
    _check_rank(data, spatial + 2, op_name, f"data ({_DATA_LAYOUTS[spatial]})")
    _check_rank(
        weight, spatial + 2, op_name, f"weight ({_TRANSPOSED_KERNEL_LAYOUTS[spatial]})"
    )
    strides = _check_tuple(strides, spatial, op_name, "strides")
    dilation = _check_tuple(dilation, spatial, op_name, "dilation")
    extra = _check_tuple(
        output_padding or (0,) * spatial, spatial, op_name, "output_padding", minimum=0
    )
    pads = normalize_padding_nd(padding, spatial, op_name)
    if groups < 1:
        raise _error(op_name, f"groups must be positive, got {groups}")
    n, c, *sizes = data
    i, per_group, *kernel = weight
    if c % groups:
        raise _error(
            op_name, f"data has {c} channels, which groups={groups} does not divide"
        )
    if i != c:
        raise _error(op_name, f"data has {c} channels but weight expects {i}")
    o = per_group * groups
    if channels is not None and channels != o:
        raise _error(
            op_name,
            f"channels={channels} does not match the weight's {o} output channels "
            f"({per_group} per group, groups={groups})",
        )
    if kernel_size is not None and tuple(kernel_size) != tuple(kernel):
        raise _error(
            op_name,
            f"kernel_size {list(kernel_size)} does not match the weight's kernel "
            f"{list(kernel)}",
        )
    outs = []
    for d in range(spatial):
        size = (
            (sizes[d] - 1) * strides[d]
            - pads[d]
            - pads[d + spatial]
            + dilation[d] * (kernel[d] - 1)
            + extra[d]
            + 1
        )
        if size < 1:
            raise _error(
                op_name,
                f"the output would have {size} elements along the "
                f"{_DIM_NAMES[spatial][d]} (the padding removes more than the "
                "transposed convolution makes)",
            )
        outs.append(size)
    return (n, o, *outs)


def pool_output_shape(
    data: Sequence[int],
    pool_size: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool = False,
    op_name: str = "relay.nn.max_pool2d",
    spatial: int = 2,
) -> Shape:
    """Output of a max/avg pool over the last `spatial` dims of N C spatial...
    data (Relay's rule, also under `ceil_mode`)."""
    _check_rank(data, spatial + 2, op_name, f"data ({_DATA_LAYOUTS[spatial]})")
    kernel = _check_tuple(pool_size, spatial, op_name, "pool_size")
    strides = _check_tuple(strides, spatial, op_name, "strides")
    dilation = _check_tuple(dilation, spatial, op_name, "dilation")
    pads = normalize_padding_nd(padding, spatial, op_name)
    n, c, *sizes = data
    outs = tuple(
        _window_outputs(
            sizes[d],
            pads[d] + pads[d + spatial],
            kernel[d],
            strides[d],
            dilation[d],
            ceil_mode,
            op_name,
            f"pool {_DIM_NAMES[spatial][d]}",
        )
        for d in range(spatial)
    )
    return (n, c, *outs)


def pool2d_output_shape(
    data: Sequence[int],
    pool_size: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
    op_name: str = "relay.nn.max_pool2d",
) -> Shape:
    """NCHW output of a 2-d max/avg pool (Relay's rule, also under `ceil_mode`)."""
    return pool_output_shape(
        data, pool_size, strides, padding, dilation, ceil_mode, op_name, 2
    )


def global_pool2d_output_shape(
    data: Sequence[int], op_name: str = "relay.nn.global_avg_pool2d"
) -> Shape:
    """[N, C, 1, 1] for NCHW data."""
    _check_rank(data, 4, op_name, "data (NCHW)")
    return (data[0], data[1], 1, 1)


def dense_output_shape(
    data: Sequence[int],
    weight: Sequence[int],
    units: int | None = None,
    op_name: str = "relay.nn.dense",
) -> Shape:
    """`data [..., K]` x `weight [N, K]` -> `[..., N]`."""
    if len(data) < 1:
        raise _error(op_name, "data must have rank at least 1, got a scalar")
    _check_rank(weight, 2, op_name, "weight")
    if data[-1] != weight[1]:
        raise _error(
            op_name,
            f"data has {data[-1]} input features but weight expects {weight[1]}",
        )
    if units is not None and units != weight[0]:
        raise _error(
            op_name, f"units={units} does not match the weight's {weight[0]} rows"
        )
    return (*data[:-1], weight[0])


def matmul_output_shape(
    tensor_a: Sequence[int],
    tensor_b: Sequence[int],
    transpose_a: bool = False,
    transpose_b: bool = False,
    units: int | None = None,
    op_name: str = "relay.nn.matmul",
) -> Shape:
    """`a [..., M, K]` (or `[..., K, M]`) x 2-d `b [K, N]` (or `[N, K]`) -> `[..., M, N]`."""
    if len(tensor_a) < (2 if transpose_a else 1):
        raise _error(
            op_name, f"tensor_a has too small a rank: shape {list(tensor_a)}"
        )
    _check_rank(tensor_b, 2, op_name, "tensor_b")
    k_a = tensor_a[-2] if transpose_a else tensor_a[-1]
    n, k_b = tensor_b if transpose_b else tensor_b[::-1]
    if k_a != k_b:
        raise _error(
            op_name,
            f"tensor_a has reduction size {k_a} but tensor_b has {k_b} "
            f"(transpose_a={transpose_a}, transpose_b={transpose_b})",
        )
    if units is not None and units != n:
        raise _error(op_name, f"units={units} does not match the output size {n}")
    out = list(tensor_a)
    if transpose_a:
        out[-2] = tensor_a[-1]
    out[-1] = n
    return tuple(out)


def batch_matmul_output_shape(
    x: Sequence[int],
    y: Sequence[int],
    transpose_a: bool = False,
    transpose_b: bool = True,
    op_name: str = "relay.nn.batch_matmul",
) -> Shape:
    """`x [B, M, K]` x `y [B, N, K]` -> `[B, M, N]` (default transposes; B broadcasts from 1)."""
    _check_rank(x, 3, op_name, "x")
    _check_rank(y, 3, op_name, "y")
    bx, m, kx = (x[0], x[2], x[1]) if transpose_a else x
    by, n, ky = y if transpose_b else (y[0], y[2], y[1])
    if bx != by and bx != 1 and by != 1:
        raise _error(op_name, f"batch sizes {bx} and {by} do not broadcast")
    if kx != ky:
        raise _error(
            op_name,
            f"x has reduction size {kx} but y has {ky} "
            f"(transpose_a={transpose_a}, transpose_b={transpose_b})",
        )
    return (by if bx == 1 else bx, m, n)


def _check_channel_vector(
    data: Sequence[int],
    vector: Sequence[int],
    axis: int,
    op_name: str,
    what: str,
) -> None:
    if tuple(vector) != (data[axis],):
        raise _error(
            op_name,
            f"{what} has shape {list(vector)} but data has {data[axis]} elements "
            f"along axis {axis}",
        )


def bias_add_output_shape(
    data: Sequence[int],
    bias: Sequence[int],
    axis: int = 1,
    op_name: str = "relay.nn.bias_add",
) -> Shape:
    """`data`'s shape; `bias` must be 1-d with `data.shape[axis]` elements."""
    ax = normalize_axis(axis, len(data), op_name)
    _check_channel_vector(data, bias, ax, op_name, "bias")
    return tuple(data)


def batch_norm_output_shape(
    data: Sequence[int],
    gamma: Sequence[int],
    beta: Sequence[int],
    moving_mean: Sequence[int],
    moving_var: Sequence[int],
    axis: int = 1,
    op_name: str = "relay.nn.batch_norm",
) -> Shape:
    """`data`'s shape; each parameter is 1-d with `data.shape[axis]` elements."""
    ax = normalize_axis(axis, len(data), op_name)
    for what, shape in (
        ("gamma", gamma),
        ("beta", beta),
        ("moving_mean", moving_mean),
        ("moving_var", moving_var),
    ):
        _check_channel_vector(data, shape, ax, op_name, what)
    return tuple(data)


def layer_norm_output_shape(
    data: Sequence[int],
    gamma: Sequence[int],
    beta: Sequence[int],
    axis: int = -1,
    op_name: str = "relay.nn.layer_norm",
) -> Shape:
    """`data`'s shape; `gamma`, `beta` are 1-d with `data.shape[axis]` elements."""
    ax = normalize_axis(axis, len(data), op_name)
    _check_channel_vector(data, gamma, ax, op_name, "gamma")
    _check_channel_vector(data, beta, ax, op_name, "beta")
    return tuple(data)

@irdl_op_definition
class BiasAddOp(InferredOp):
    """`data + bias` with the 1-d `bias` laid along `axis` of `data`
    (default 1, the channels of NCHW; negative axes count from the end). Both
    float, or both one integer type (an int32 accumulator plus its int32 bias;
    integer sums wrap)."""

    name = "relay.nn.bias_add"

    data = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))

    assembly_format = (
        "$data `,` $bias attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        bias: SSAValue,
        axis: int = 1,
        result_type: Attribute | None = None,
    ):
        self._build([data, bias], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data, bias = _tensors(
            cls.name,
            [("data", operand_types[0]), ("bias", operand_types[1])],
            integers=True,
        )
        shape = bias_add_output_shape(
            data.get_shape(), bias.get_shape(), attrs["axis"], cls.name
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class PReluOp(InferredOp):
    """Elementwise `data` where `data >= 0`, else `alpha * data`, with the 1-d
    `alpha` laid along `axis` of `data` (default 1, the channels)."""

    name = "relay.nn.prelu"

    data = operand_def(TensorType)
    alpha = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))

    assembly_format = (
        "$data `,` $alpha attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        alpha: SSAValue,
        axis: int = 1,
        result_type: Attribute | None = None,
    ):
        self._build([data, alpha], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data, alpha = _tensors(
            cls.name, [("data", operand_types[0]), ("alpha", operand_types[1])]
        )
        ax = normalize_axis(attrs["axis"], len(data.get_shape()), cls.name)
        _check_channel_vector(data.get_shape(), alpha.get_shape(), ax, cls.name, "alpha")
        return data


# --- Linear algebra ------------------------------------------------------------


@irdl_op_definition
class DenseOp(InferredOp):
    """`data [..., K]` times the transposed `weight [N, K]`: `[..., N]`
    (`out[..., n] = sum_k data[..., k] * weight[n, k]`); `units`, if given, must be N."""

    name = "relay.nn.dense"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    units = opt_prop_def(IntegerAttr[I64])

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        units: int | None = None,
        result_type: Attribute | None = None,
    ):
        self._build([data, weight], {"units": _opt_i64(units)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        shape = dense_output_shape(
            data.get_shape(), weight.get_shape(), attrs["units"], cls.name
        )
        return TensorType(data.element_type, shape)


DENSE_PANEL = 32
"""Rows of a dense weight (output features) per panel of `relay.nn.dense_packed`."""


def pack_dense_weight(weight: Any) -> Any:
    """A dense weight `[N, K]` (numpy) as `relay.nn.dense_packed` reads it:
    `[ceil(N / 32), K, 32]`, panels of 32 rows side by side (each panel's
    element `[k, j]` is row `32 p + j`), the last panel padded with zeros."""
    from byoc.dialects.relay.constant import filled_array

    n, k = weight.shape
    full, rest = divmod(n, DENSE_PANEL)

    def fill(out: Any) -> None:
        # Straight into the result (no padded copy): the whole panels, then the
        # rows of the last one; its padding is already zero.
        out[:full] = weight[: full * DENSE_PANEL].reshape(full, DENSE_PANEL, k).transpose(0, 2, 1)
        if rest:
            out[full, :, :rest] = weight[full * DENSE_PANEL :].T

    return filled_array((full + (rest > 0), k, DENSE_PANEL), weight.dtype, fill)


def unpack_dense_weight(packed: Any, units: int) -> Any:
    """The `[units, K]` dense weight a packed one holds."""
    panels, k, block = packed.shape
    return packed.transpose(0, 2, 1).reshape(panels * block, k)[:units]


@irdl_op_definition
class DensePackedOp(InferredOp):
    """`relay.nn.dense` with its weight packed at compile time into the panels
    a kernel reads (`pack_dense_weight`): `weight [ceil(N/32), K, 32]`.
    `units` (N) is required: the padding hides it. Computes what
    `relay.nn.dense` computes on `unpack_dense_weight(weight, units)`."""

    name = "relay.nn.dense_packed"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    units = prop_def(IntegerAttr[I64])

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        units: int,
        result_type: Attribute | None = None,
    ):
        self._build([data, weight], {"units": i64_attr(units)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        _check_rank(weight.get_shape(), 3, cls.name, "weight (packed [ceil(N/32), K, 32])")
        panels, depth, block = weight.get_shape()
        units = attrs["units"]
        if block != DENSE_PANEL or units < 1 or panels != -(-units // DENSE_PANEL):
            raise _error(
                cls.name,
                f"weight has shape {list(weight.get_shape())}; units={units} packed "
                f"have [{-(-units // DENSE_PANEL) if units > 0 else 0}, K, {DENSE_PANEL}]",
            )
        shape = dense_output_shape(data.get_shape(), (units, depth), None, cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class MatmulOp(InferredOp):
    """`tensor_a [..., M, K]` times the 2-d `tensor_b [K, N]`: `[..., M, N]`;
    `transpose_a` reads a as `[..., K, M]`, `transpose_b` reads b as `[N, K]`."""

    name = "relay.nn.matmul"

    tensor_a = operand_def(TensorType)
    tensor_b = operand_def(TensorType)
    result = result_def(TensorType)
    units = opt_prop_def(IntegerAttr[I64])
    transpose_a = prop_def(BoolAttr, default_value=bool_attr(False))
    transpose_b = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = (
        "$tensor_a `,` $tensor_b attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        tensor_a: SSAValue,
        tensor_b: SSAValue,
        units: int | None = None,
        transpose_a: bool = False,
        transpose_b: bool = False,
        result_type: Attribute | None = None,
    ):
        self._build(
            [tensor_a, tensor_b],
            {
                "units": _opt_i64(units),
                "transpose_a": bool_attr(transpose_a),
                "transpose_b": bool_attr(transpose_b),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        a, b = _tensors(
            cls.name, [("tensor_a", operand_types[0]), ("tensor_b", operand_types[1])]
        )
        shape = matmul_output_shape(
            a.get_shape(),
            b.get_shape(),
            attrs["transpose_a"],
            attrs["transpose_b"],
            attrs["units"],
            cls.name,
        )
        return TensorType(a.element_type, shape)


@irdl_op_definition
class BatchMatmulOp(InferredOp):
    """Batched `x [B, M, K]` times the transposed `y [B, N, K]`: `[B, M, N]`
    (defaults `transpose_a = false`, `transpose_b = true` as in Relay; a batch of
    1 broadcasts)."""

    name = "relay.nn.batch_matmul"

    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = prop_def(BoolAttr, default_value=bool_attr(False))
    transpose_b = prop_def(BoolAttr, default_value=bool_attr(True))

    assembly_format = "$x `,` $y attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        x: SSAValue,
        y: SSAValue,
        transpose_a: bool = False,
        transpose_b: bool = True,
        result_type: Attribute | None = None,
    ):
        self._build(
            [x, y],
            {
                "transpose_a": bool_attr(transpose_a),
                "transpose_b": bool_attr(transpose_b),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        x, y = _tensors(cls.name, [("x", operand_types[0]), ("y", operand_types[1])])
        shape = batch_matmul_output_shape(
            x.get_shape(),
            y.get_shape(),
            attrs["transpose_a"],
            attrs["transpose_b"],
            cls.name,
        )
        return TensorType(x.element_type, shape)


# --- Convolution and pooling ---------------------------------------------------


@irdl_op_definition
class Conv2dOp(InferredOp):
    """2-d cross-correlation of NCHW `data` with OIHW `weight`:
    `out[n, o, y, x] = sum_{c, i, j} data_padded[n, g*C/G + c, y*sh + i*dh, x*sw + j*dw]
    * weight[o, c, i, j]` with `g = o / (O/G)`. `padding` has 1, 2 or 4 values
    (top, left, bottom, right); `groups == C` with `O == C * multiplier` is
    depthwise. `channels` and `kernel_size`, if given, must match the weight."""

    name = "relay.nn.conv2d"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = opt_prop_def(IntegerAttr[I64])
    kernel_size = opt_prop_def(DenseArrayBase.constr(i64))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("OIHW"))

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        channels: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        data_layout: str = "NCHW",
        kernel_layout: str = "OIHW",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, weight],
            {
                "strides": _pair(strides),
                "padding": i64_array(padding),
                "dilation": _pair(dilation),
                "groups": i64_attr(groups),
                "channels": _opt_i64(channels),
                "kernel_size": None if kernel_size is None else _pair(kernel_size),
                "data_layout": _string_attr(data_layout),
                "kernel_layout": _string_attr(kernel_layout),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "data_layout", "NCHW")
        _check_layout(cls.name, attrs, "kernel_layout", "OIHW")
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        shape = conv2d_output_shape(
            data.get_shape(),
            weight.get_shape(),
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["groups"],
            attrs["channels"],
            attrs["kernel_size"],
            cls.name,
        )
        return TensorType(data.element_type, shape)



PACKED_KERNEL_LAYOUTS = {"OIHW8o": 8, "OIHW32o": 32, "winograd8o": 8, "winograd4x4_8o": 8}
"""The weight layouts of `relay.nn.conv2d_packed`, by their output-channel block.
"winograd8o" holds 3x3 kernels g transformed for Winograd's F(2x2, 3x3):
`WINOGRAD_G @ g @ WINOGRAD_G.T`, 4x4 each, where the others hold KH x KW;
"winograd4x4_8o" for F(4x4, 3x3): `WINOGRAD4_G @ g @ WINOGRAD4_G.T`, 6x6 each."""

WINOGRAD_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
"""F(2x2, 3x3)'s kernel transform G (Lavin and Gray)."""

WINOGRAD4_G = (
    (1 / 4, 0.0, 0.0),
    (-1 / 6, -1 / 6, -1 / 6),
    (-1 / 6, 1 / 6, -1 / 6),
    (1 / 24, 1 / 12, 1 / 6),
    (1 / 24, -1 / 12, 1 / 6),
    (0.0, 0.0, 1.0),
)
"""F(4x4, 3x3)'s kernel transform G (Lavin and Gray)."""

WINOGRAD_LAYOUTS = {"winograd8o": WINOGRAD_G, "winograd4x4_8o": WINOGRAD4_G}
"""The Winograd-transformed layouts of `relay.nn.conv2d_packed`, by their G."""


def packed_weight_shape(
    weight: Sequence[int], groups: int, kernel_layout: str, op_name: str = "relay.nn.conv2d_packed"
) -> Shape:
    """The packed shape `[G * ceil(O/G / b), I, KH, KW, b]` of an OIHW weight
    (KH = KW = 4 for "winograd8o", 6 for "winograd4x4_8o", whose kernels must
    be 3x3)."""
    block = PACKED_KERNEL_LAYOUTS.get(kernel_layout)
    if block is None:
        known = ", ".join(f'"{k}"' for k in PACKED_KERNEL_LAYOUTS)
        raise _error(op_name, f'kernel_layout "{kernel_layout}" is not one of {known}')
    o, i, kh, kw = weight
    if groups < 1 or o % groups:
        raise _error(op_name, f"channels={o} is not a multiple of groups={groups}")
    if kernel_layout in WINOGRAD_LAYOUTS:
        if (kh, kw) != (3, 3):
            raise _error(op_name, f'kernel_layout "{kernel_layout}" needs a 3x3 kernel, not {kh}x{kw}')
        kh = kw = len(WINOGRAD_LAYOUTS[kernel_layout])
    return (groups * -(-(o // groups) // block), i, kh, kw, block)


def pack_conv2d_weight(weight: Any, groups: int, kernel_layout: str) -> Any:
    """An OIHW weight (numpy) in a packed layout of `relay.nn.conv2d_packed`: per
    group, its output channels in blocks of b side by side (the last block padded
    with zeros), each block `[I, KH, KW, b]`."""
    import numpy as np

    from byoc.dialects.relay.constant import filled_array

    shape = packed_weight_shape(weight.shape, groups, kernel_layout)
    if kernel_layout in WINOGRAD_LAYOUTS:
        g = np.array(WINOGRAD_LAYOUTS[kernel_layout])
        weight = np.einsum("ai,ocij,bj->ocab", g, weight.astype(np.float64), g).astype(weight.dtype)
    o, i, kh, kw = weight.shape
    blocks, _, _, _, block = shape
    per_group = blocks // groups
    full, rest = divmod(o // groups, block)
    grouped = weight.reshape(groups, o // groups, i, kh, kw)

    def fill(out: Any) -> None:
        # Straight into the result (no padded copy): each group's whole blocks,
        # then the channels of its last one; the padding is already zero.
        out = out.reshape(groups, per_group, i, kh, kw, block)
        whole = grouped[:, : full * block].reshape(groups, full, block, i, kh, kw)
        out[:, :full] = whole.transpose(0, 1, 3, 4, 5, 2)
        if rest:
            out[:, full, ..., :rest] = grouped[:, full * block :].transpose(0, 2, 3, 4, 1)

    return filled_array(shape, weight.dtype, fill)


def unpack_conv2d_weight(
    packed: Any, groups: int, channels: int, kernel_layout: str = "OIHW8o"
) -> Any:
    """The OIHW weight of `channels` output channels a packed weight holds (a
    Winograd-transformed one's 3x3 kernels through G's left inverse: exact up
    to rounding)."""
    import numpy as np

    blocks, i, kh, kw, block = packed.shape
    per_group = blocks // groups
    weight = packed.transpose(0, 4, 1, 2, 3).reshape(groups, per_group * block, i, kh, kw)
    weight = weight[:, : channels // groups].reshape(channels, i, kh, kw)
    if kernel_layout in WINOGRAD_LAYOUTS:
        inverse = np.linalg.pinv(np.array(WINOGRAD_LAYOUTS[kernel_layout]))
        weight = np.einsum("ia,ocab,jb->ocij", inverse, weight.astype(np.float64), inverse)
        weight = weight.astype(packed.dtype)
    return weight


@irdl_op_definition
class Conv2dPackedOp(InferredOp):
    """`relay.nn.conv2d` with its weight packed at compile time into the layout a
    kernel reads: `kernel_layout` "OIHW8o" or "OIHW32o" is `[G * ceil(O/G / b),
    I, KH, KW, b]`, the output channels of each group in blocks of b side by side,
    the last block of a group padded with zeros (`pack_conv2d_weight`);
    "winograd8o" is "OIHW8o" of 3x3 kernels transformed for Winograd's
    F(2x2, 3x3), 4x4 each (`WINOGRAD_G`), "winograd4x4_8o" for F(4x4, 3x3),
    6x6 each (`WINOGRAD4_G`).
    `channels` (O) is required: the padding hides it. Computes what
    `relay.nn.conv2d` computes on `unpack_conv2d_weight(weight)`."""

    name = "relay.nn.conv2d_packed"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = prop_def(IntegerAttr[I64])
    kernel_layout = prop_def(StringAttr)

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        channels: int,
        kernel_layout: str,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, weight],
            {
                "strides": _pair(strides),
                "padding": i64_array(padding),
                "dilation": _pair(dilation),
                "groups": i64_attr(groups),
                "channels": i64_attr(channels),
                "kernel_layout": _string_attr(kernel_layout),
            },
            result_type,
        )

    @classmethod
    def unpacked_weight_shape(cls, operand_types, attrs) -> Shape:
        """The OIHW shape of the weight before packing."""
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        _check_rank(weight.get_shape(), 5, cls.name, "weight (packed OIHWbo)")
        _, i, kh, kw, _ = weight.get_shape()
        if attrs["kernel_layout"] in WINOGRAD_LAYOUTS:
            kh = kw = 3  # G g G^T of a 3x3 g is 4x4 (6x6)
        shape = (attrs["channels"], i, kh, kw)
        want = packed_weight_shape(shape, attrs["groups"], attrs["kernel_layout"], cls.name)
        if tuple(weight.get_shape()) != want:
            raise _error(
                cls.name,
                f"weight has shape {list(weight.get_shape())}; {attrs['channels']} "
                f"channels in groups={attrs['groups']} packed as "
                f"{attrs['kernel_layout']} have {list(want)}",
            )
        return shape

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = _tensors(cls.name, [("data", operand_types[0])])[0]
        shape = conv2d_output_shape(
            data.get_shape(),
            cls.unpacked_weight_shape(operand_types, attrs),
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["groups"],
            op_name=cls.name,
        )
        return TensorType(data.element_type, shape)


class Pool2dOp(InferredOp, abc.ABC):
    """A 2-d pool over the H, W dimensions of NCHW data."""

    INTEGER_DATA: ClassVar[bool] = False
    """Whether integer data is allowed (a maximum is, a mean would have to round)."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    pool_size = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    ceil_mode = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        pool_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        layout: str = "NCHW",
        result_type: Attribute | None = None,
        **extra: Attribute,
    ):
        self._build(
            [data],
            {
                "pool_size": _pair(pool_size),
                "strides": _pair(strides),
                "padding": i64_array(padding),
                "dilation": _pair(dilation),
                "ceil_mode": bool_attr(ceil_mode),
                "layout": _string_attr(layout),
                **extra,
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "layout", "NCHW")
        (data,) = _tensors(
            cls.name, [("data", operand_types[0])], integers=cls.INTEGER_DATA
        )
        shape = pool2d_output_shape(
            data.get_shape(),
            attrs["pool_size"],
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["ceil_mode"],
            cls.name,
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class MaxPool2dOp(Pool2dOp):
    """The maximum over each `pool_size` window of NCHW `data` (float or
    integer); padding counts as -inf (the type's smallest value for integers).
    `ceil_mode` adds windows as Relay does (`(H + pad - span + stride - 1) /
    stride + 1` outputs)."""

    name = "relay.nn.max_pool2d"

    INTEGER_DATA: ClassVar[bool] = True


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """The mean over each `pool_size` window of NCHW `data`. The divisor counts
    the real elements of the window, plus the explicit padding when
    `count_include_pad` (never the extra `ceil_mode` padding), as Relay/ONNX."""

    name = "relay.nn.avg_pool2d"

    count_include_pad = prop_def(
        BoolAttr, default_value=bool_attr(False)
    )

    def __init__(
        self,
        data: SSAValue,
        pool_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        layout: str = "NCHW",
        result_type: Attribute | None = None,
    ):
        super().__init__(
            data,
            pool_size,
            strides,
            padding,
            dilation,
            ceil_mode,
            layout,
            result_type,
            count_include_pad=bool_attr(count_include_pad),
        )


def _conv_properties(
    spatial: int,
    strides: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
    channels: int | None,
    kernel_size: int | Sequence[int] | None,
    data_layout: str,
    kernel_layout: str,
) -> dict[str, Attribute | None]:
    return {
        "strides": _ntuple(strides, spatial),
        "padding": i64_array(padding),
        "dilation": _ntuple(dilation, spatial),
        "groups": i64_attr(groups),
        "channels": _opt_i64(channels),
        "kernel_size": None if kernel_size is None else _ntuple(kernel_size, spatial),
        "data_layout": _string_attr(data_layout),
        "kernel_layout": _string_attr(kernel_layout),
    }


@irdl_op_definition
class Conv3dOp(InferredOp):
    """3-d cross-correlation of NCDHW `data` with OIDHW `weight`, conv2d with a
    depth dimension: `out[n, o, z, y, x] = sum_{c, k, i, j}
    data_padded[n, g*C/G + c, z*sd + k*dd, y*sh + i*dh, x*sw + j*dw] * weight[o, c, k, i, j]`
    with `g = o / (O/G)`. `padding` has 1, 3 or 6 values (front, top, left,
    back, bottom, right). `channels` and `kernel_size`, if given, must match the
    weight."""

    name = "relay.nn.conv3d"

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = opt_prop_def(IntegerAttr[I64])
    kernel_size = opt_prop_def(DenseArrayBase.constr(i64))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCDHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("OIDHW"))

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        strides: int | Sequence[int] = (1, 1, 1),
        padding: int | Sequence[int] = (0, 0, 0),
        dilation: int | Sequence[int] = (1, 1, 1),
        groups: int = 1,
        channels: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        data_layout: str = "NCDHW",
        kernel_layout: str = "OIDHW",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, weight],
            _conv_properties(
                3, strides, padding, dilation, groups, channels, kernel_size,
                data_layout, kernel_layout,
            ),
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "data_layout", "NCDHW")
        _check_layout(cls.name, attrs, "kernel_layout", "OIDHW")
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        shape = conv_output_shape(
            data.get_shape(),
            weight.get_shape(),
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["groups"],
            attrs["channels"],
            attrs["kernel_size"],
            cls.name,
            3,
        )
        return TensorType(data.element_type, shape)


class ConvTransposeOp(InferredOp, abc.ABC):
    """A transposed convolution over SPATIAL dims: the gradient of a conv with
    the same attributes, each input element scattering `data * weight` over a
    window of the output (see the concrete ops)."""

    SPATIAL: ClassVar[int] = 2

    @classmethod
    def infer_type(cls, operand_types, attrs):
        spatial = cls.SPATIAL
        _check_layout(cls.name, attrs, "data_layout", _DATA_LAYOUTS[spatial])
        _check_layout(cls.name, attrs, "kernel_layout", _TRANSPOSED_KERNEL_LAYOUTS[spatial])
        data, weight = _tensors(
            cls.name, [("data", operand_types[0]), ("weight", operand_types[1])]
        )
        shape = conv_transpose_output_shape(
            data.get_shape(),
            weight.get_shape(),
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["groups"],
            attrs["channels"],
            attrs["kernel_size"],
            attrs["output_padding"],
            cls.name,
            spatial,
        )
        return TensorType(data.element_type, shape)

    def _init_transpose(
        self,
        data: SSAValue,
        weight: SSAValue,
        strides: int | Sequence[int],
        padding: int | Sequence[int],
        dilation: int | Sequence[int],
        groups: int,
        channels: int | None,
        kernel_size: int | Sequence[int] | None,
        data_layout: str,
        kernel_layout: str,
        output_padding: int | Sequence[int],
        result_type: Attribute | None,
    ) -> None:
        spatial = self.SPATIAL
        properties = _conv_properties(
            spatial, strides, padding, dilation, groups, channels, kernel_size,
            data_layout, kernel_layout,
        )
        properties["output_padding"] = _ntuple(output_padding, spatial)
        self._build([data, weight], properties, result_type)


@irdl_op_definition
class Conv2dTransposeOp(ConvTransposeOp):
    """2-d transposed convolution of NCHW `data` with IOHW `weight` `[C, O/G, KH, KW]`:
    every input element adds `data[n, c, y, x] * weight[c, o, i, j]` to output
    `[n, g*O/G + o, y*sh + i*dh - top, x*sw + j*dw - left]` (`g = c / (C/G)`),
    when that lies in the output. The output has `(H - 1) * sh - top - bottom +
    dh * (KH - 1) + output_padding[0] + 1` rows (columns likewise); `padding`
    has 1, 2 or 4 values (top, left, bottom, right)."""

    name = "relay.nn.conv2d_transpose"
    SPATIAL: ClassVar[int] = 2

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = opt_prop_def(IntegerAttr[I64])
    kernel_size = opt_prop_def(DenseArrayBase.constr(i64))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("IOHW"))
    output_padding = prop_def(
        DenseArrayBase.constr(i64), default_value=i64_array((0, 0))
    )

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        channels: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        data_layout: str = "NCHW",
        kernel_layout: str = "IOHW",
        output_padding: int | Sequence[int] = (0, 0),
        result_type: Attribute | None = None,
    ):
        self._init_transpose(
            data, weight, strides, padding, dilation, groups, channels, kernel_size,
            data_layout, kernel_layout, output_padding, result_type,
        )


@irdl_op_definition
class Conv3dTransposeOp(ConvTransposeOp):
    """3-d transposed convolution of NCDHW `data` with IODHW `weight`, as
    conv2d_transpose with a depth dimension; `padding` has 1, 3 or 6 values
    (front, top, left, back, bottom, right)."""

    name = "relay.nn.conv3d_transpose"
    SPATIAL: ClassVar[int] = 3

    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    groups = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    channels = opt_prop_def(IntegerAttr[I64])
    kernel_size = opt_prop_def(DenseArrayBase.constr(i64))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCDHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("IODHW"))
    output_padding = prop_def(
        DenseArrayBase.constr(i64), default_value=i64_array((0, 0, 0))
    )

    assembly_format = (
        "$data `,` $weight attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        weight: SSAValue,
        strides: int | Sequence[int] = (1, 1, 1),
        padding: int | Sequence[int] = (0, 0, 0),
        dilation: int | Sequence[int] = (1, 1, 1),
        groups: int = 1,
        channels: int | None = None,
        kernel_size: int | Sequence[int] | None = None,
        data_layout: str = "NCDHW",
        kernel_layout: str = "IODHW",
        output_padding: int | Sequence[int] = (0, 0, 0),
        result_type: Attribute | None = None,
    ):
        self._init_transpose(
            data, weight, strides, padding, dilation, groups, channels, kernel_size,
            data_layout, kernel_layout, output_padding, result_type,
        )


class Pool3dOp(InferredOp, abc.ABC):
    """A 3-d pool over the D, H, W dimensions of NCDHW data."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    pool_size = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    padding = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0, 0)))
    dilation = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1, 1)))
    layout = prop_def(StringAttr, default_value=StringAttr("NCDHW"))
    ceil_mode = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        pool_size: int | Sequence[int] = (1, 1, 1),
        strides: int | Sequence[int] = (1, 1, 1),
        padding: int | Sequence[int] = (0, 0, 0),
        dilation: int | Sequence[int] = (1, 1, 1),
        ceil_mode: bool = False,
        layout: str = "NCDHW",
        result_type: Attribute | None = None,
        **extra: Attribute,
    ):
        self._build(
            [data],
            {
                "pool_size": _ntuple(pool_size, 3),
                "strides": _ntuple(strides, 3),
                "padding": i64_array(padding),
                "dilation": _ntuple(dilation, 3),
                "ceil_mode": bool_attr(ceil_mode),
                "layout": _string_attr(layout),
                **extra,
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "layout", "NCDHW")
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = pool_output_shape(
            data.get_shape(),
            attrs["pool_size"],
            attrs["strides"],
            attrs["padding"],
            attrs["dilation"],
            attrs["ceil_mode"],
            cls.name,
            3,
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class MaxPool3dOp(Pool3dOp):
    """The maximum over each `pool_size` window of NCDHW `data`, as max_pool2d
    with a depth dimension (padding counts as -inf; `padding` has 1, 3 or 6
    values)."""

    name = "relay.nn.max_pool3d"


@irdl_op_definition
class AvgPool3dOp(Pool3dOp):
    """The mean over each `pool_size` window of NCDHW `data`, as avg_pool2d with
    a depth dimension (the divisor counts the real elements of the window, plus
    the explicit padding when `count_include_pad`)."""

    name = "relay.nn.avg_pool3d"

    count_include_pad = prop_def(BoolAttr, default_value=bool_attr(False))

    def __init__(
        self,
        data: SSAValue,
        pool_size: int | Sequence[int] = (1, 1, 1),
        strides: int | Sequence[int] = (1, 1, 1),
        padding: int | Sequence[int] = (0, 0, 0),
        dilation: int | Sequence[int] = (1, 1, 1),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        layout: str = "NCDHW",
        result_type: Attribute | None = None,
    ):
        super().__init__(
            data,
            pool_size,
            strides,
            padding,
            dilation,
            ceil_mode,
            layout,
            result_type,
            count_include_pad=bool_attr(count_include_pad),
        )


@irdl_op_definition
class GlobalAvgPool2dOp(InferredOp):
    """The mean over H and W of NCHW `data`: `[N, C, 1, 1]`."""

    name = "relay.nn.global_avg_pool2d"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, data: SSAValue, layout: str = "NCHW", result_type: Attribute | None = None
    ):
        self._build([data], {"layout": _string_attr(layout)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        _check_layout(cls.name, attrs, "layout", "NCHW")
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        return TensorType(
            data.element_type, global_pool2d_output_shape(data.get_shape(), cls.name)
        )


# --- Normalisation -------------------------------------------------------------


class SoftmaxBase(InferredOp, abc.ABC):
    """An op normalising `data` along one `axis` (default -1)."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, data: SSAValue, axis: int = -1, result_type: Attribute | None = None
    ):
        self._build([data], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        normalize_axis(attrs["axis"], len(data.get_shape()), cls.name)
        return data


@irdl_op_definition
class SoftmaxOp(SoftmaxBase):
    """`exp(data) / sum(exp(data))` along `axis`."""

    name = "relay.nn.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxBase):
    """`data - log(sum(exp(data)))` along `axis`."""

    name = "relay.nn.log_softmax"


def _check_epsilon(op_name: str, attrs: Mapping[str, Any]) -> None:
    epsilon = attrs["epsilon"]
    assert isinstance(epsilon, float)
    if not epsilon >= 0:
        raise _error(op_name, f"epsilon must be non-negative, got {epsilon}")


@irdl_op_definition
class BatchNormOp(InferredOp):
    """Inference-mode batch normalisation along `axis` (default 1, channels):
    `(data - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta`, without
    `gamma` unless `scale` and without `beta` unless `center`.

    Relay's batch_norm returns a 3-tuple (data, mean, var); here it has ONE
    result, the normalised data (the only one inference uses).
    """

    name = "relay.nn.batch_norm"

    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    moving_mean = operand_def(TensorType)
    moving_var = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    epsilon = prop_def(FloatAttr, default_value=float_attr(1e-5))
    center = prop_def(BoolAttr, default_value=bool_attr(True))
    scale = prop_def(BoolAttr, default_value=bool_attr(True))

    assembly_format = (
        "$data `,` $gamma `,` $beta `,` $moving_mean `,` $moving_var attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        gamma: SSAValue,
        beta: SSAValue,
        moving_mean: SSAValue,
        moving_var: SSAValue,
        axis: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, gamma, beta, moving_mean, moving_var],
            {
                "axis": i64_attr(axis),
                "epsilon": float_attr(epsilon),
                "center": bool_attr(center),
                "scale": bool_attr(scale),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        names = ("data", "gamma", "beta", "moving_mean", "moving_var")
        types = _tensors(cls.name, list(zip(names, operand_types)))
        _check_epsilon(cls.name, attrs)
        batch_norm_output_shape(
            *(t.get_shape() for t in types), attrs["axis"], cls.name
        )
        return types[0]


@irdl_op_definition
class LayerNormOp(InferredOp):
    """Normalises `data` along `axis` (default -1) to mean 0 and variance 1
    (population variance, plus `epsilon`), then `* gamma` if `scale` and
    `+ beta` if `center`, both laid along `axis`."""

    name = "relay.nn.layer_norm"

    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(-1))
    epsilon = prop_def(FloatAttr, default_value=float_attr(1e-5))
    center = prop_def(BoolAttr, default_value=bool_attr(True))
    scale = prop_def(BoolAttr, default_value=bool_attr(True))

    assembly_format = (
        "$data `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        gamma: SSAValue,
        beta: SSAValue,
        axis: int = -1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, gamma, beta],
            {
                "axis": i64_attr(axis),
                "epsilon": float_attr(epsilon),
                "center": bool_attr(center),
                "scale": bool_attr(scale),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        names = ("data", "gamma", "beta")
        types = _tensors(cls.name, list(zip(names, operand_types)))
        _check_epsilon(cls.name, attrs)
        layer_norm_output_shape(
            *(t.get_shape() for t in types), attrs["axis"], cls.name
        )
        return types[0]




@irdl_op_definition
class LrnOp(InferredOp):
    """Local response normalisation across `axis` (default 1, the channels):
    `out[c] = data[c] / (bias + alpha / size * sum_j data[j]^2) ** beta`, the sum
    over the window `j` from `c - (size - 1) // 2` to `c + size // 2` clipped to
    the axis (ONNX's window: centred for odd `size`, as TVM's)."""

    name = "relay.nn.lrn"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    size = prop_def(IntegerAttr[I64], default_value=i64_attr(5))
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    bias = prop_def(FloatAttr, default_value=float_attr(2.0))
    alpha = prop_def(FloatAttr, default_value=float_attr(1e-5))
    beta = prop_def(FloatAttr, default_value=float_attr(0.75))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        size: int = 5,
        axis: int = 1,
        bias: float = 2.0,
        alpha: float = 1e-5,
        beta: float = 0.75,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "size": i64_attr(size),
                "axis": i64_attr(axis),
                "bias": float_attr(bias),
                "alpha": float_attr(alpha),
                "beta": float_attr(beta),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        normalize_axis(attrs["axis"], len(data.get_shape()), cls.name)
        if attrs["size"] < 1:
            raise _error(cls.name, f"size must be positive, got {attrs['size']}")
        return data


def instance_norm_axes(rank: int, axis: int, op_name: str = "relay.nn.instance_norm") -> tuple[int, ...]:
    """The axes instance_norm averages over: every axis but 0 (the batch) and `axis`."""
    ax = normalize_axis(axis, rank, op_name)
    return tuple(d for d in range(1, rank) if d != ax)


@irdl_op_definition
class InstanceNormOp(InferredOp):
    """Normalises each instance and channel of `data` to mean 0 and variance 1
    (population variance, plus `epsilon`) over every axis but 0 (the batch) and
    `axis` (default 1, the channels), then `* gamma` if `scale` and `+ beta` if
    `center`, both laid along `axis`."""

    name = "relay.nn.instance_norm"

    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))
    epsilon = prop_def(FloatAttr, default_value=float_attr(1e-5))
    center = prop_def(BoolAttr, default_value=bool_attr(True))
    scale = prop_def(BoolAttr, default_value=bool_attr(True))

    assembly_format = (
        "$data `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        gamma: SSAValue,
        beta: SSAValue,
        axis: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, gamma, beta],
            {
                "axis": i64_attr(axis),
                "epsilon": float_attr(epsilon),
                "center": bool_attr(center),
                "scale": bool_attr(scale),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        names = ("data", "gamma", "beta")
        data, gamma, beta = _tensors(cls.name, list(zip(names, operand_types)))
        _check_epsilon(cls.name, attrs)
        shape = data.get_shape()
        if len(shape) < 2:
            raise _error(cls.name, f"data must have rank at least 2, got shape {list(shape)}")
        ax = normalize_axis(attrs["axis"], len(shape), cls.name)
        _check_channel_vector(shape, gamma.get_shape(), ax, cls.name, "gamma")
        _check_channel_vector(shape, beta.get_shape(), ax, cls.name, "beta")
        return data
