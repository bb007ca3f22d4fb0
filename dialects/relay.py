"""The relay dialect: static-shape tensor operators named and ordered as in TVM Relay.

Every op works on ranked, statically shaped float `tensor<...>` values. Op and
attribute names, operand order and attribute defaults follow TVM Relay;
attributes are properties (printed in the attr-dict of the custom form, as
`<{...}>` in the generic form). Verifiers infer the result type with the plain
`*_output_shape` functions below (which tests and other passes may call too)
and reject anything else with a message naming the op and the operand or
attribute.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    BoolAttr,
    Builtin,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]

# --- Shape inference: plain functions on shapes and Python attribute values ---


def _error(op_name: str, message: str) -> VerifyException:
    return VerifyException(f"'{op_name}': {message}")


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], op_name: str
) -> tuple[int, ...]:
    """The numpy broadcast of two shapes, or a VerifyException naming `op_name`."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for dim, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise VerifyException(
                f"'{op_name}': operand shapes {list(lhs)} and {list(rhs)} do not "
                f"broadcast (dimension {dim}: {x} vs {y})"
            )
        out.append(max(x, y) if x != 1 else y)
    return tuple(out)


def normalize_axis(
    axis: int, rank: int, op_name: str, what: str = "axis"
) -> int:
    """`axis` in `[0, rank)`, counting negative axes from the end (as numpy)."""
    if not -rank <= axis < rank:
        raise _error(op_name, f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(
    axes: Sequence[int], rank: int, op_name: str, what: str = "axis"
) -> tuple[int, ...]:
    """Each of `axes` (the attribute `what`) normalised by `normalize_axis`;
    repeated axes are an error."""
    out = tuple(normalize_axis(a, rank, op_name) for a in axes)
    if len(set(out)) != len(out):
        raise _error(op_name, f"{what} {list(axes)} repeats an axis")
    return out


def _check_pair(
    values: Sequence[int], op_name: str, what: str, minimum: int = 1
) -> tuple[int, int]:
    if len(values) != 2:
        raise _error(op_name, f"{what} must have 2 values, got {list(values)}")
    if any(v < minimum for v in values):
        adjective = "positive" if minimum == 1 else "non-negative"
        raise _error(op_name, f"{what} must be {adjective}, got {list(values)}")
    return values[0], values[1]


def normalize_padding(
    padding: Sequence[int], op_name: str
) -> tuple[int, int, int, int]:
    """Relay's 1, 2 or 4 padding values as (top, left, bottom, right)."""
    if any(p < 0 for p in padding):
        raise _error(op_name, f"padding must be non-negative, got {list(padding)}")
    if len(padding) == 1:
        return (padding[0], padding[0], padding[0], padding[0])
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    if len(padding) == 4:
        return (padding[0], padding[1], padding[2], padding[3])
    raise _error(
        op_name,
        f"padding must have 1, 2 or 4 values (top, left, bottom, right), "
        f"got {list(padding)}",
    )


def _check_rank(shape: Sequence[int], rank: int, op_name: str, what: str) -> None:
    if len(shape) != rank:
        raise _error(op_name, f"{what} must have rank {rank}, got shape {list(shape)}")


def _window_outputs(
    size: int,
    pad: int,
    kernel: int,
    stride: int,
    dilation: int,
    ceil_mode: bool,
    op_name: str,
    what: str,
) -> int:
    """How many windows fit along one spatial dimension (Relay's conv/pool rule)."""
    span = dilation * (kernel - 1) + 1
    if size + pad < span:
        raise _error(
            op_name,
            f"the {what} window ({span} with dilation) does not fit the padded "
            f"input ({size + pad})",
        )
    if ceil_mode:
        return (size + pad - span + stride - 1) // stride + 1
    return (size + pad - span) // stride + 1


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
    _check_rank(data, 4, op_name, "data (NCHW)")
    _check_rank(weight, 4, op_name, "weight (OIHW)")
    sh, sw = _check_pair(strides, op_name, "strides")
    dh, dw = _check_pair(dilation, op_name, "dilation")
    top, left, bottom, right = normalize_padding(padding, op_name)
    if groups < 1:
        raise _error(op_name, f"groups must be positive, got {groups}")
    n, c, h, w = data
    o, i, kh, kw = weight
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
    if kernel_size is not None and tuple(kernel_size) != (kh, kw):
        raise _error(
            op_name,
            f"kernel_size {list(kernel_size)} does not match the weight's kernel "
            f"{[kh, kw]}",
        )
    oh = _window_outputs(h, top + bottom, kh, sh, dh, False, op_name, "kernel height")
    ow = _window_outputs(w, left + right, kw, sw, dw, False, op_name, "kernel width")
    return (n, o, oh, ow)


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
    _check_rank(data, 4, op_name, "data (NCHW)")
    kh, kw = _check_pair(pool_size, op_name, "pool_size")
    sh, sw = _check_pair(strides, op_name, "strides")
    dh, dw = _check_pair(dilation, op_name, "dilation")
    top, left, bottom, right = normalize_padding(padding, op_name)
    n, c, h, w = data
    oh = _window_outputs(h, top + bottom, kh, sh, dh, ceil_mode, op_name, "pool height")
    ow = _window_outputs(w, left + right, kw, sw, dw, ceil_mode, op_name, "pool width")
    return (n, c, oh, ow)


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


def reshape_output_shape(
    data: Sequence[int], newshape: Sequence[int], op_name: str = "relay.reshape"
) -> Shape:
    """Relay's `newshape` resolved against `data`.

    Positive values are sizes; 0 copies the dimension of `data` at the same
    position; -1 is inferred from the remaining elements (at most one); -2
    copies all remaining dimensions; -3 merges the next two dimensions; -4 splits
    the next dimension into the two values that follow it (one may be -1).
    """
    shape = tuple(data)
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    while i < len(newshape):
        value = newshape[i]
        if value > 0:
            out.append(value)
            src += 1
        elif value == 0:
            if src >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: 0 at position {i} copies a "
                    f"dimension that data {list(shape)} does not have",
                )
            out.append(shape[src])
            src += 1
        elif value == -1:
            if infer_at >= 0:
                raise _error(
                    op_name, f"newshape {list(newshape)} has more than one -1"
                )
            infer_at = len(out)
            out.append(1)
            src += 1
        elif value == -2:
            out.extend(shape[src:])
            src = len(shape)
        elif value == -3:
            if src + 1 >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -3 at position {i} needs two "
                    f"dimensions of data {list(shape)} to merge",
                )
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif value == -4:
            if i + 2 >= len(newshape) or src >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} needs a "
                    f"dimension of data and two sizes after it",
                )
            d0, d1, d2 = shape[src], newshape[i + 1], newshape[i + 2]
            if d1 == -1 and d2 == -1 or d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} must be "
                    f"followed by two positive sizes (one may be -1)",
                )
            if d1 == -1:
                d1 = d0 // d2
            elif d2 == -1:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} cannot split "
                    f"dimension {d0} into {newshape[i + 1]} x {newshape[i + 2]}",
                )
            out.extend((d1, d2))
            src += 1
            i += 2
        else:
            raise _error(
                op_name,
                f"newshape {list(newshape)} has the unsupported value {value} "
                f"(sizes are positive; 0, -1, -2, -3, -4 are special)",
            )
        i += 1
    total = math.prod(shape)
    if infer_at >= 0:
        known = math.prod(d for k, d in enumerate(out) if k != infer_at)
        if known == 0 or total % known:
            raise _error(
                op_name,
                f"newshape {list(newshape)}: cannot infer the -1 for data "
                f"{list(shape)} ({total} elements)",
            )
        out[infer_at] = total // known
    if math.prod(out) != total:
        raise _error(
            op_name,
            f"newshape {list(newshape)} gives {out} ({math.prod(out)} elements) "
            f"but data {list(shape)} has {total} elements",
        )
    return tuple(out)


def transpose_axes(
    rank: int, axes: Sequence[int] | None, op_name: str = "relay.transpose"
) -> tuple[int, ...]:
    """The permutation `axes` normalised; none or empty means reversing the axes."""
    if not axes:
        return tuple(reversed(range(rank)))
    if len(axes) != rank:
        raise _error(
            op_name, f"axes {list(axes)} must have one entry per dimension ({rank})"
        )
    return normalize_axes(axes, rank, op_name, "axes")


def transpose_output_shape(
    data: Sequence[int], axes: Sequence[int] | None = None, op_name: str = "relay.transpose"
) -> Shape:
    """`data`'s dimensions permuted by `axes` (reversed when `axes` is None or empty)."""
    return tuple(data[a] for a in transpose_axes(len(data), axes, op_name))


def concatenate_output_shape(
    shapes: Sequence[Sequence[int]], axis: int = 0, op_name: str = "relay.concatenate"
) -> Shape:
    """The inputs joined along `axis`; all other dimensions must agree."""
    if not shapes:
        raise _error(op_name, "needs at least one input")
    first = tuple(shapes[0])
    ax = normalize_axis(axis, len(first), op_name)
    size = 0
    for index, shape in enumerate(shapes):
        if len(shape) != len(first) or any(
            a != b for k, (a, b) in enumerate(zip(shape, first)) if k != ax
        ):
            raise _error(
                op_name,
                f"input {index} has shape {list(shape)}, which does not match "
                f"input 0 {list(first)} outside axis {ax}",
            )
        size += shape[ax]
    return (*first[:ax], size, *first[ax + 1 :])


def batch_flatten_output_shape(
    data: Sequence[int], op_name: str = "relay.nn.batch_flatten"
) -> Shape:
    """`[N, d1, d2, ...]` -> `[N, d1 * d2 * ...]`."""
    if len(data) < 1:
        raise _error(op_name, "data must have rank at least 1, got a scalar")
    return (data[0], math.prod(data[1:]))


def squeeze_output_shape(
    data: Sequence[int], axis: Sequence[int] | None = None, op_name: str = "relay.squeeze"
) -> Shape:
    """`data` without the size-1 dimensions `axis` (all size-1 ones when None)."""
    if axis is None:
        return tuple(d for d in data if d != 1)
    axes = normalize_axes(axis, len(data), op_name)
    for a in axes:
        if data[a] != 1:
            raise _error(op_name, f"cannot squeeze axis {a} of size {data[a]}")
    return tuple(d for k, d in enumerate(data) if k not in axes)


def expand_dims_output_shape(
    data: Sequence[int],
    axis: int,
    num_newaxis: int = 1,
    op_name: str = "relay.expand_dims",
) -> Shape:
    """`data` with `num_newaxis` size-1 dimensions inserted at `axis` (in `[-rank-1, rank]`)."""
    rank = len(data)
    if not -rank - 1 <= axis <= rank:
        raise _error(op_name, f"axis {axis} is out of range for rank {rank} (+1)")
    if num_newaxis < 0:
        raise _error(op_name, f"num_newaxis must be non-negative, got {num_newaxis}")
    ax = axis + rank + 1 if axis < 0 else axis
    return (*data[:ax], *(1,) * num_newaxis, *data[ax:])


def reduce_axes(
    rank: int,
    axis: Sequence[int] | None = None,
    exclude: bool = False,
    op_name: str = "relay.sum",
) -> tuple[int, ...]:
    """The axes a Relay reduction reduces, sorted.

    None or an empty list means every axis (as in Relay); with `exclude` the
    reduction runs over every axis not listed.
    """
    if not axis:
        return tuple(range(rank))
    axes = sorted(normalize_axes(axis, rank, op_name))
    if exclude:
        return tuple(a for a in range(rank) if a not in axes)
    return tuple(axes)


def reduce_output_shape(
    data: Sequence[int],
    axis: Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
    op_name: str = "relay.sum",
) -> Shape:
    """`data` with the reduced axes dropped (or kept as size 1 with `keepdims`)."""
    axes = reduce_axes(len(data), axis, exclude, op_name)
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(data))
    return tuple(d for k, d in enumerate(data) if k not in axes)


# --- Types and attributes ----------------------------------------------------


def tensor_of(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    """The static-shape float tensor type of `value`, or a VerifyException."""
    typ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(typ, TensorType):
        raise VerifyException(f"'{op_name}': {what} must be a tensor, got {typ}")
    if any(d < 0 for d in typ.get_shape()):
        raise VerifyException(
            f"'{op_name}': {what} must have a static shape, got {typ}"
        )
    if not isinstance(typ.element_type, AnyFloat):
        raise VerifyException(
            f"'{op_name}': {what} must have a float element type, got "
            f"{typ.element_type}"
        )
    return typ


def check_result(op: IRDLOperation, shape: Sequence[int], element: Attribute) -> None:
    """Check that `op`'s single result is `tensor<shape x element>`."""
    result = op.results[0].type
    assert isinstance(result, TensorType)
    if tuple(result.get_shape()) != tuple(shape) or result.element_type != element:
        expected = TensorType(element, shape)
        raise VerifyException(
            f"'{op.name}': result type {result} does not match the inferred type "
            f"{expected}"
        )


def _tensors(
    op_name: str, named: Sequence[tuple[str, Attribute]]
) -> list[TensorType]:
    """The tensor types of `named` operands, which must share one element type."""
    types = [tensor_of(typ, op_name, what) for what, typ in named]
    first_name, first = named[0][0], types[0]
    for (what, _), typ in zip(named[1:], types[1:]):
        if typ.element_type != first.element_type:
            raise _error(
                op_name,
                f"{what} has element type {typ.element_type} but {first_name} has "
                f"{first.element_type}",
            )
    return types


# Attributes are immutable: building one is the main cost of creating an op, so
# the constructors share them.


@functools.lru_cache(maxsize=1024)
def i64_attr(value: int) -> IntegerAttr:
    """`value : i64`."""
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=1024)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def i64_array(values: int | Sequence[int]) -> DenseArrayBase:
    """`array<i64: values...>` (an int becomes a one-element array)."""
    if isinstance(values, int):
        return _i64_array((values,))
    return _i64_array(tuple(int(v) for v in values))


_TRUE = IntegerAttr.from_bool(True)
_FALSE = IntegerAttr.from_bool(False)


def bool_attr(value: bool) -> IntegerAttr:
    """`true` / `false` (an `i1` IntegerAttr)."""
    return _TRUE if value else _FALSE


def float_attr(value: float, typ: AnyFloat = f32) -> FloatAttr:
    """`value : f32` (or the given float type)."""
    return FloatAttr(float(value), typ)


@functools.lru_cache(maxsize=256)
def _string_attr(value: str) -> StringAttr:
    return StringAttr(value)


@functools.lru_cache(maxsize=1024)
def _array_values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(attr.get_values())


_I1 = IntegerType(1)


def python_value(attr: Attribute | None) -> object:
    """A property as a Python value: int, bool, float, str, tuple of ints, or None."""
    if attr is None:
        return None
    if isinstance(attr, DenseArrayBase):
        return _array_values(attr)
    if isinstance(attr, IntegerAttr):
        if attr.type == _I1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


class RelayOp(IRDLOperation, abc.ABC):
    """Base of all relay ops: attributes live in properties, printed in attr-dict."""

    irdl_options = (ParsePropInAttrDict(),)

    def __post_init__(self) -> None:
        super().__post_init__()  # fills in default-valued properties
        # Properties in declaration order, however they were written or built, so
        # the generic form of an op is one text.
        order = self.get_irdl_definition().properties
        if len(self.properties) > 1 and list(self.properties) != [
            name for name in order if name in self.properties
        ]:
            props = self.properties
            self.properties = {k: props[k] for k in order if k in props} | props

    @classmethod
    def attrs_from(cls, properties: Mapping[str, Attribute]) -> dict[str, Any]:
        """Every declared property of `cls` as a Python value, defaults filled in."""
        definitions = cls.get_irdl_definition().properties
        return {
            name: python_value(properties.get(name, d.default_value))
            for name, d in definitions.items()
        }

    def attrs(self) -> dict[str, Any]:
        """This op's properties as Python values (see `python_value`), with defaults."""
        return self.attrs_from(self.properties)


class InferredOp(RelayOp, abc.ABC):
    """A relay op with one result whose type `infer_type` computes."""

    traits = traits_def(Pure())

    @classmethod
    def infer_type(
        cls, operand_types: Sequence[Attribute], attrs: Mapping[str, Any]
    ) -> TensorType:
        """The result type for these operand types and attribute values, or a
        VerifyException naming the op and the offending operand or attribute."""
        raise NotImplementedError

    def verify_(self) -> None:
        inferred = self.infer_type(self.operand_types, self.attrs())
        check_result(self, inferred.get_shape(), inferred.element_type)

    def _build(
        self,
        operands: Sequence[SSAValue | Sequence[SSAValue]],
        properties: Mapping[str, Attribute | None],
        result_type: Attribute | None,
    ) -> None:
        """Initialise with `operands` (a list for a variadic operand), the
        non-None `properties` and `result_type`, inferred when None."""
        props = {k: v for k, v in properties.items() if v is not None}
        if result_type is None:
            flat = [
                v
                for operand in operands
                for v in ([operand] if isinstance(operand, SSAValue) else operand)
            ]
            result_type = self.infer_type([v.type for v in flat], self.attrs_from(props))
        super().__init__(operands=operands, result_types=[result_type], properties=props)


def _opt_array(values: int | Sequence[int] | None) -> DenseArrayBase | None:
    return None if values is None else i64_array(values)


def _pair(values: int | Sequence[int]) -> DenseArrayBase:
    """`(v, v)` for an int (as Relay's Python API), else the values as given."""
    return i64_array((values, values) if isinstance(values, int) else values)


def _opt_i64(value: int | None) -> IntegerAttr | None:
    return None if value is None else i64_attr(value)


def _check_layout(op_name: str, attrs: Mapping[str, Any], name: str, want: str) -> None:
    if attrs[name] != want:
        raise _error(
            op_name, f'{name} "{attrs[name]}" is not supported (only "{want}")'
        )


# --- Elementwise ops ---------------------------------------------------------


class ElementwiseBinaryOp(RelayOp, abc.ABC):
    """Elementwise binary op with numpy broadcasting on operands of one dtype."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None
    ):
        if result_type is None:
            lt, rt = lhs.type, rhs.type
            assert isinstance(lt, TensorType) and isinstance(rt, TensorType)
            shape = broadcast_shapes(lt.get_shape(), rt.get_shape(), self.name)
            result_type = TensorType(lt.element_type, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        lt = tensor_of(self.lhs, self.name, "lhs")
        rt = tensor_of(self.rhs, self.name, "rhs")
        if lt.element_type != rt.element_type:
            raise VerifyException(
                f"'{self.name}': operands have different element types "
                f"{lt.element_type} and {rt.element_type}"
            )
        shape = broadcast_shapes(lt.get_shape(), rt.get_shape(), self.name)
        check_result(self, shape, lt.element_type)


class ElementwiseUnaryOp(RelayOp, abc.ABC):
    """Elementwise unary op: the result has the operand's type."""

    data = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, result_type: Attribute | None = None):
        super().__init__(
            operands=[data], result_types=[result_type or data.type]
        )

    def verify_(self) -> None:
        typ = tensor_of(self.data, self.name, "data")
        check_result(self, typ.get_shape(), typ.element_type)


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Elementwise `lhs + rhs`."""

    name = "relay.add"


@irdl_op_definition
class SubtractOp(ElementwiseBinaryOp):
    """Elementwise `lhs - rhs`."""

    name = "relay.subtract"


@irdl_op_definition
class MultiplyOp(ElementwiseBinaryOp):
    """Elementwise `lhs * rhs`."""

    name = "relay.multiply"


@irdl_op_definition
class DivideOp(ElementwiseBinaryOp):
    """Elementwise `lhs / rhs` (IEEE division)."""

    name = "relay.divide"


@irdl_op_definition
class MaximumOp(ElementwiseBinaryOp):
    """Elementwise `max(lhs, rhs)` (NaN if either is NaN, as numpy.maximum)."""

    name = "relay.maximum"


@irdl_op_definition
class MinimumOp(ElementwiseBinaryOp):
    """Elementwise `min(lhs, rhs)` (NaN if either is NaN, as numpy.minimum)."""

    name = "relay.minimum"


@irdl_op_definition
class PowerOp(ElementwiseBinaryOp):
    """Elementwise `lhs ** rhs` (C `powf`: NaN for a negative base and a
    non-integer exponent)."""

    name = "relay.power"


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """Elementwise `max(data, 0)`."""

    name = "relay.nn.relu"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "relay.tanh"


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    """Elementwise `e ** data`."""

    name = "relay.exp"


@irdl_op_definition
class NegativeOp(ElementwiseUnaryOp):
    """Elementwise `-data`."""

    name = "relay.negative"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    """Elementwise `|data|`."""

    name = "relay.abs"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    """Elementwise natural logarithm (-inf at 0, NaN below)."""

    name = "relay.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    """Elementwise square root (NaN below 0)."""

    name = "relay.sqrt"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    """Elementwise `1 / sqrt(data)`."""

    name = "relay.rsqrt"


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    """Elementwise logistic function `1 / (1 + exp(-data))`."""

    name = "relay.sigmoid"


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    """Elementwise Gauss error function."""

    name = "relay.erf"


@irdl_op_definition
class ClipOp(ElementwiseUnaryOp):
    """Elementwise `min(max(data, a_min), a_max)`; `a_min`, `a_max` are float
    attributes (any float type) with `a_min <= a_max`."""

    name = "relay.clip"

    a_min = prop_def(FloatAttr)
    a_max = prop_def(FloatAttr)

    def __init__(
        self,
        data: SSAValue,
        a_min: float | FloatAttr,
        a_max: float | FloatAttr,
        result_type: Attribute | None = None,
    ):
        if not isinstance(a_min, FloatAttr):
            a_min = FloatAttr(float(a_min), f64)
        if not isinstance(a_max, FloatAttr):
            a_max = FloatAttr(float(a_max), f64)
        RelayOp.__init__(
            self,
            operands=[data],
            result_types=[result_type or data.type],
            properties={"a_min": a_min, "a_max": a_max},
        )

    def verify_(self) -> None:
        super().verify_()
        low, high = self.a_min.value.data, self.a_max.value.data
        if not low <= high:
            raise _error(self.name, f"a_min ({low}) must not exceed a_max ({high})")


@irdl_op_definition
class BiasAddOp(InferredOp):
    """`data + bias` with the 1-d `bias` laid along `axis` of `data`
    (default 1, the channels of NCHW; negative axes count from the end)."""

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
        data, bias = _tensors(cls.name, [("data", operand_types[0]), ("bias", operand_types[1])])
        shape = bias_add_output_shape(
            data.get_shape(), bias.get_shape(), attrs["axis"], cls.name
        )
        return TensorType(data.element_type, shape)


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


class Pool2dOp(InferredOp, abc.ABC):
    """A 2-d pool over the H, W dimensions of NCHW data."""

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
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
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
    """The maximum over each `pool_size` window of NCHW `data`; padding
    counts as -inf. `ceil_mode` adds windows as Relay does
    (`(H + pad - span + stride - 1) / stride + 1` outputs)."""

    name = "relay.nn.max_pool2d"


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


# --- Shape manipulation ----------------------------------------------------------


@irdl_op_definition
class ReshapeOp(InferredOp):
    """`data` with the same elements in row-major order and the shape `newshape`
    (Relay's special values: 0 copies a dimension, -1 is inferred, -2, -3, -4;
    see `reshape_output_shape`). `newshape` is stored as given."""

    name = "relay.reshape"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    newshape = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        newshape: Sequence[int],
        result_type: Attribute | None = None,
    ):
        self._build([data], {"newshape": i64_array(newshape)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = reshape_output_shape(data.get_shape(), attrs["newshape"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class TransposeOp(InferredOp):
    """`data` with its axes permuted: `out.shape[i] = data.shape[axes[i]]`;
    no `axes` (or an empty list) reverses them."""

    name = "relay.transpose"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axes = opt_prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axes: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        self._build([data], {"axes": _opt_array(axes)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = transpose_output_shape(data.get_shape(), attrs["axes"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class ConcatenateOp(InferredOp):
    """The operands joined along `axis` (default 0). Relay takes a tuple; here
    the tensors are the (one or more) operands."""

    name = "relay.concatenate"

    data = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(0))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: Sequence[SSAValue],
        axis: int = 0,
        result_type: Attribute | None = None,
    ):
        self._build([list(data)], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        if not operand_types:
            raise _error(cls.name, "needs at least one input")
        types = _tensors(
            cls.name, [(f"input {i}", t) for i, t in enumerate(operand_types)]
        )
        shape = concatenate_output_shape(
            [t.get_shape() for t in types], attrs["axis"], cls.name
        )
        return TensorType(types[0].element_type, shape)


@irdl_op_definition
class BatchFlattenOp(InferredOp):
    """`[N, d1, d2, ...]` -> `[N, d1 * d2 * ...]`, elements in row-major order."""

    name = "relay.nn.batch_flatten"

    data = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, result_type: Attribute | None = None):
        self._build([data], {}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        return TensorType(
            data.element_type, batch_flatten_output_shape(data.get_shape(), cls.name)
        )


@irdl_op_definition
class SqueezeOp(InferredOp):
    """`data` without the size-1 dimensions listed in `axis` (every size-1
    dimension when `axis` is absent; none for an empty list)."""

    name = "relay.squeeze"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        self._build([data], {"axis": _opt_array(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = squeeze_output_shape(data.get_shape(), attrs["axis"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class ExpandDimsOp(InferredOp):
    """`data` with `num_newaxis` (default 1) size-1 dimensions inserted before
    dimension `axis` (`axis` in `[-rank-1, rank]`)."""

    name = "relay.expand_dims"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    num_newaxis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: int,
        num_newaxis: int = 1,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {"axis": i64_attr(axis), "num_newaxis": i64_attr(num_newaxis)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = expand_dims_output_shape(
            data.get_shape(), attrs["axis"], attrs["num_newaxis"], cls.name
        )
        return TensorType(data.element_type, shape)


# --- Reductions ----------------------------------------------------------------


class ReduceOp(InferredOp, abc.ABC):
    """A reduction over `axis` (every axis when absent or empty, as Relay; the
    other axes with `exclude`), keeping reduced axes as size 1 with `keepdims`."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(BoolAttr, default_value=bool_attr(False))
    exclude = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: int | Sequence[int] | None = None,
        keepdims: bool = False,
        exclude: bool = False,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "axis": _opt_array(axis),
                "keepdims": bool_attr(keepdims),
                "exclude": bool_attr(exclude),
            },
            result_type,
        )

    def reduced_axes(self) -> tuple[int, ...]:
        """The (sorted, non-negative) axes this op reduces."""
        attrs = self.attrs()
        typ = self.data.type
        assert isinstance(typ, TensorType)
        return reduce_axes(
            len(typ.get_shape()), attrs["axis"], attrs["exclude"], self.name
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])])
        shape = reduce_output_shape(
            data.get_shape(),
            attrs["axis"],
            attrs["keepdims"],
            attrs["exclude"],
            cls.name,
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class SumOp(ReduceOp):
    """The sum of `data` over the reduced axes."""

    name = "relay.sum"


@irdl_op_definition
class MeanOp(ReduceOp):
    """The arithmetic mean of `data` over the reduced axes."""

    name = "relay.mean"


@irdl_op_definition
class MaxOp(ReduceOp):
    """The maximum of `data` over the reduced axes."""

    name = "relay.max"


# --- Constants -------------------------------------------------------------------

_NUMPY_FLOATS: dict[str, np.dtype] = {
    "f16": np.dtype("<f2"),
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
}
_FLOAT_TYPES: dict[int, AnyFloat] = {
    2: Float16Type(),
    4: Float32Type(),
    8: Float64Type(),
}


def _element_dtype(typ: Attribute, op_name: str = "relay.constant") -> np.dtype:
    dtype = _NUMPY_FLOATS.get(str(typ))
    if dtype is None:
        raise _error(op_name, f"element type {typ} has no numpy equivalent")
    return dtype


def _resource_bytes(handle: str) -> bytes:
    """The data of builtin resource `handle` (MLIR blob: 4-byte alignment, then data)."""
    interface = Builtin.get_interface(OpAsmDialectInterface)
    blob = interface.lookup(handle) if interface else None
    if not blob:
        raise VerifyException(
            f"'relay.constant': dense_resource<{handle}> has no data (the "
            f"resource is missing from the file's dialect_resources or was elided)"
        )
    return bytes.fromhex(blob[2:])[4:]


@irdl_op_definition
class ConstantOp(RelayOp):
    """A constant tensor: the `value` property, a `dense<...>` elements
    attribute (or a `dense_resource<...>` blob, as MLIR writes large weights).

    Build it from numpy with `ConstantOp.from_numpy(array)` (one copy of the
    bytes, no per-element Python work) and read it with `to_numpy()`. The custom
    form prints large values as one hex string without unpacking them.
    """

    name = "relay.constant"

    result = result_def(TensorType)
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    @staticmethod
    def from_numpy(array: np.ndarray | float) -> ConstantOp:
        """A constant holding `array` (float16/32/64; other dtypes become f32)."""
        array = np.asarray(array)
        if array.dtype not in (np.float16, np.float32, np.float64):
            array = array.astype(np.float32)
        typ = _FLOAT_TYPES[array.dtype.itemsize]
        data = np.ascontiguousarray(array, dtype=_NUMPY_FLOATS[str(typ)]).tobytes()
        attr = DenseIntOrFPElementsAttr(TensorType(typ, array.shape), BytesAttr(data))
        return ConstantOp(attr)

    def to_numpy(self) -> np.ndarray:
        """The value as a read-only numpy array of the result's shape and dtype."""
        value = self.value
        typ = value.type
        assert isinstance(typ, TensorType)
        dtype = _element_dtype(typ.element_type, self.name)
        if isinstance(value, DenseResourceAttr):
            data = _resource_bytes(value.resource_handle.data)
        else:
            data = value.data.data
        array = np.frombuffer(data, dtype=dtype)
        shape = tuple(typ.get_shape())
        if array.size == 1 and math.prod(shape) != 1:
            return np.broadcast_to(array[0], shape)
        return array.reshape(shape)

    def verify_(self) -> None:
        typ = tensor_of(self.value.type, self.name, "value")
        if self.result.type != typ:
            raise _error(
                self.name,
                f"result type {self.result.type} does not match the value's type {typ}",
            )
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            count = len(self.value)
            size = math.prod(typ.get_shape())
            if count not in (1, size):
                raise _error(
                    self.name, f"value has {count} elements but its type {typ} has {size}"
                )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        position = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error(
                f"'relay.constant': expected a dense<...> or dense_resource<...> "
                f"value, got {value}",
                position,
            )
        op = cls(value)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        value = self.value
        if isinstance(value, DenseIntOrFPElementsAttr) and len(value) > 100:
            # xDSL unpacks every element to Python floats before choosing the hex
            # form (about 1 s for 25 MB); print the same text straight from the bytes.
            data = value.data.data
            words = np.frombuffer(
                data, dtype={2: np.uint16, 4: np.uint32, 8: np.uint64}[
                    value.get_element_type().compile_time_size
                ]
            )
            if not (words == words[0]).all():
                printer.print_string(f'dense<"0x{data.hex().upper()}"> : ')
                printer.print_attribute(value.type)
                return
        printer.print_attribute(value)


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
    ConstantOp,
)
"""Every relay op."""

Relay = Dialect("relay", list(RELAY_OPS), [])
