"""Converters of neural-network ONNX operators: Softmax, Conv, pools, Gemm,
MatMul and the normalisations."""


from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import f16, f32, f64
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import (
    Converter,
    Node,
    shape_of,
)

if TYPE_CHECKING:
    pass

Shape = tuple[int, ...]


def _softmax(op_type: type[relay.SoftmaxBase]) -> Converter:
    """Softmax or LogSoftmax: along `axis` from opset 13, before it over the
    input seen as 2-d `[prod(dims < axis), prod(dims >= axis)]`."""

    def convert(node: Node) -> SSAValue:
        data = node.value(0)
        shape = shape_of(data)
        rank = len(shape)
        if node.graph.opset >= 13:
            axis = relay.normalize_axis(node.attr("axis", -1), rank, node.op_type)
            return node.emit(op_type(data, axis=axis))
        axis = relay.normalize_axis(node.attr("axis", 1), rank, node.op_type)
        if axis == rank - 1:
            return node.emit(op_type(data, axis=-1))
        flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        out = node.emit(op_type(node.emit(relay.ReshapeOp(data, flat)), axis=1))
        return node.emit(relay.ReshapeOp(out, shape))

    return convert


# Convolution and pooling


def _auto_pads(
    node: Node,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int] | None:
    """ONNX pads `[begin..., end...]` for `auto_pad`, or None for NOTSET."""
    mode = node.attr("auto_pad", "NOTSET")
    if mode == "NOTSET":
        return None
    if mode == "VALID":
        return [0] * (2 * len(sizes))
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(
            f"auto_pad '{mode}' is not valid (NOTSET, VALID, SAME_UPPER, SAME_LOWER)"
        )
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _spatial(node: Node, data_shape: Shape, kernel: Sequence[int]) -> tuple[
    list[int], list[int], list[int]
]:
    """strides, dilations and pads `[begin..., end...]` of a conv or pool node."""
    n = len(kernel)
    strides = node.ints("strides", [1] * n) or [1] * n
    dilations = node.ints("dilations", [1] * n) or [1] * n
    pads = node.ints("pads", [0] * 2 * n) or [0] * 2 * n
    for what, values, count in (
        ("strides", strides, n),
        ("dilations", dilations, n),
        ("pads", pads, 2 * n),
    ):
        if len(values) != count:
            raise node.error(f"{what} {values} must have {count} values")
    auto = _auto_pads(node, data_shape[2:], kernel, strides, dilations)
    return strides, dilations, auto if auto is not None else pads


def _check_spatial_rank(node: Node, shape: Shape) -> None:
    if len(shape) not in (3, 4, 5):
        raise node.error(
            f"only 1-d, 2-d and 3-d {node.op_type} is supported; the input has shape "
            f"{list(shape)} ({len(shape) - 2} spatial dimensions)"
        )


def _to_2d(node: Node, value: SSAValue) -> SSAValue:
    """`[N, C, L]` as `[N, C, 1, L]` (1-d convolutions and pools run as 2-d)."""
    n, c, length = shape_of(value)
    return node.emit(relay.ReshapeOp(value, (n, c, 1, length)))


def _from_2d(node: Node, value: SSAValue) -> SSAValue:
    """`[N, C, 1, L]` back to `[N, C, L]`."""
    n, c, _, length = shape_of(value)
    return node.emit(relay.ReshapeOp(value, (n, c, length)))


def _pads_2d(pads: Sequence[int]) -> tuple[int, int, int, int]:
    """ONNX 2-d pads `[top, left, bottom, right]`; 1-d `[begin, end]` as `[0, b, 0, e]`."""
    if len(pads) == 2:
        return (0, pads[0], 0, pads[1])
    return (pads[0], pads[1], pads[2], pads[3])


def _pair(values: Sequence[int]) -> tuple[int, int]:
    return (1, values[0]) if len(values) == 1 else (values[0], values[1])


def _weight_2d(node: Node, shape: Shape) -> SSAValue:
    """A 1-d conv's weight `[A, B, K]` as `[A, B, 1, K]`."""
    shape_2d = (*shape[:2], 1, shape[2])
    if node.is_constant(1):
        return node.const(node.constant(1, "W").reshape(shape_2d), node.inputs[1])
    return node.emit(relay.ReshapeOp(node.value(1), shape_2d))


def _kernel_of(node: Node) -> tuple[Shape, list[int]]:
    """The weight's shape and kernel, checked against `kernel_shape`."""
    weight_shape = node.shape(1)
    kernel = list(weight_shape[2:])
    declared = node.ints("kernel_shape")
    if declared is not None and list(declared) != kernel:
        raise node.error(
            f"kernel_shape {declared} does not match the weight's kernel {kernel}"
        )
    return weight_shape, kernel


def _conv(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    _check_spatial_rank(node, shape)
    weight_shape, kernel = _kernel_of(node)
    if len(weight_shape) != len(shape):
        raise node.error(
            f"the weight has shape {list(weight_shape)}; a {len(shape) - 2}-d Conv "
            f"needs rank {len(shape)}"
        )
    strides, dilations, pads = _spatial(node, shape, kernel)
    group = int(node.attr("group", 1))
    if len(shape) == 5:
        out = node.emit(
            relay.Conv3dOp(
                data, node.value(1), strides, pads, dilations, groups=group
            )
        )
    else:
        one_d = len(shape) == 3
        weight = _weight_2d(node, weight_shape) if one_d else node.value(1)
        out = node.emit(
            relay.Conv2dOp(
                _to_2d(node, data) if one_d else data,
                weight,
                strides=_pair(strides),
                padding=_pads_2d(pads),
                dilation=_pair(dilations),
                groups=group,
            )
        )
    if node.has(2):
        out = node.emit(relay.BiasAddOp(out, node.value(2), axis=1))
    return _from_2d(node, out) if len(shape) == 3 else out


def _conv_transpose_pads(
    node: Node,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    output_padding: list[int],
) -> list[int]:
    """ConvTranspose's pads `[begin..., end...]`: from `output_shape` or
    SAME_* as the ONNX spec computes them (a negative total becomes more
    `output_padding`, which is updated), else the `pads` attribute."""
    n = len(sizes)
    mode = node.attr("auto_pad", "NOTSET")
    if mode not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise node.error(
            f"auto_pad '{mode}' is not valid (NOTSET, VALID, SAME_UPPER, SAME_LOWER)"
        )
    target = node.ints("output_shape")
    if target is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        target = [size * stride for size, stride in zip(sizes, strides)]
    if target is None:
        if mode == "VALID":
            return [0] * (2 * n)
        pads = node.ints("pads", [0] * 2 * n) or [0] * 2 * n
        if len(pads) != 2 * n:
            raise node.error(f"pads {pads} must have {2 * n} values")
        return pads
    target = list(target)[-n:]
    if len(target) != n:
        raise node.error(f"output_shape {node.ints('output_shape')} must have {n} values")
    begins, ends = [], []
    for d in range(n):
        total = (
            strides[d] * (sizes[d] - 1)
            + output_padding[d]
            + (kernel[d] - 1) * dilations[d]
            + 1
            - target[d]
        )
        if total < 0:
            # A larger output than the transposed convolution makes grows at
            # the end (zeros, plus the bias), as in onnxruntime.
            output_padding[d] -= total
            total = 0
        small = total // 2
        begin, end = (small, total - small) if mode == "SAME_UPPER" else (total - small, small)
        begins.append(begin)
        ends.append(end)
    return begins + ends


def _conv_transpose(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    _check_spatial_rank(node, shape)
    weight_shape, kernel = _kernel_of(node)
    if len(weight_shape) != len(shape):
        raise node.error(
            f"the weight has shape {list(weight_shape)}; a {len(shape) - 2}-d "
            f"ConvTranspose needs rank {len(shape)}"
        )
    n = len(kernel)
    strides = node.ints("strides", [1] * n) or [1] * n
    dilations = node.ints("dilations", [1] * n) or [1] * n
    output_padding = list(node.ints("output_padding", [0] * n) or [0] * n)
    for what, values in (
        ("strides", strides),
        ("dilations", dilations),
        ("output_padding", output_padding),
    ):
        if len(values) != n:
            raise node.error(f"{what} {values} must have {n} values")
    pads = _conv_transpose_pads(node, shape[2:], kernel, strides, dilations, output_padding)
    group = int(node.attr("group", 1))
    if n == 3:
        out = node.emit(
            relay.Conv3dTransposeOp(
                data,
                node.value(1),
                strides,
                pads,
                dilations,
                groups=group,
                output_padding=output_padding,
            )
        )
    else:
        one_d = n == 1
        weight = _weight_2d(node, weight_shape) if one_d else node.value(1)
        out = node.emit(
            relay.Conv2dTransposeOp(
                _to_2d(node, data) if one_d else data,
                weight,
                strides=_pair(strides),
                padding=_pads_2d(pads),
                dilation=_pair(dilations),
                groups=group,
                output_padding=(0, output_padding[0]) if one_d else output_padding,
            )
        )
    if node.has(2):
        out = node.emit(relay.BiasAddOp(out, node.value(2), axis=1))
    return _from_2d(node, out) if n == 1 else out


def _pool_kernel(node: Node, shape: Shape) -> list[int]:
    """A pool's `kernel_shape`, checked against the input's spatial rank."""
    _check_spatial_rank(node, shape)
    kernel = node.ints("kernel_shape")
    if kernel is None:
        raise node.error("the kernel_shape attribute is required")
    if len(kernel) != len(shape) - 2:
        raise node.error(
            f"kernel_shape {kernel} does not match the input's {len(shape) - 2} "
            "spatial dimensions"
        )
    return kernel


def _pool(node: Node) -> SSAValue:
    node.only_first_output()
    data = node.value(0)
    shape = shape_of(data)
    kernel = _pool_kernel(node, shape)
    strides, dilations, pads = _spatial(node, shape, kernel)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    count_include_pad = bool(node.attr("count_include_pad", 0))
    if ceil_mode:
        ceil_mode, pads = _keep_ceil_mode(
            node, shape[2:], kernel, strides, dilations, pads, count_include_pad
        )
    # storage_order only changes the Indices output, refused above.
    return _emit_pool(
        node, node.op_type == "MaxPool", data, kernel, strides, pads, dilations,
        ceil_mode, count_include_pad,
    )


def _emit_pool(
    node: Node,
    is_max: bool,
    data: SSAValue,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> SSAValue:
    """A relay max or avg pool over 1, 2 or 3 spatial dims (1-d as 2-d);
    ONNX `pads` are `[begin..., end...]`."""
    shape = shape_of(data)
    extra = {} if is_max else {"count_include_pad": count_include_pad}
    if len(shape) == 5:
        op_type = relay.MaxPool3dOp if is_max else relay.AvgPool3dOp
        return node.emit(
            op_type(data, kernel, strides, pads, dilations, ceil_mode, **extra)
        )
    one_d = len(shape) == 3
    op_type = relay.MaxPool2dOp if is_max else relay.AvgPool2dOp
    out = node.emit(
        op_type(
            _to_2d(node, data) if one_d else data,
            _pair(kernel),
            _pair(strides),
            _pads_2d(pads),
            _pair(dilations),
            ceil_mode,
            **extra,
        )
    )
    return _from_2d(node, out) if one_d else out


def _keep_ceil_mode(
    node: Node,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    count_include_pad: bool,
) -> tuple[bool, list[int]]:
    """relay's `ceil_mode`, and the pads, for an ONNX pool with `ceil_mode=1`.

    onnxruntime (and PyTorch) drop a last window that would start in the end
    padding; onnx's shape inference keeps it. We follow onnxruntime: where
    every axis keeps its ceil window, relay's ceil_mode; where none does, the
    floor count; where they differ, the floor count with more end padding on
    the axes that keep it (which neither a max nor an average without
    count_include_pad sees).
    """
    ceil_ok, floor_ok, grown = _ceil_windows(sizes, kernel, strides, dilations, pads)
    if ceil_ok:
        return True, list(pads)
    node.check_shapes = False  # onnx's shape inference keeps the dropped window
    if floor_ok:
        return False, list(pads)
    if node.op_type == "AveragePool" and count_include_pad:
        raise node.error(
            "ceil_mode=1 adds a window along one spatial axis and drops it along "
            "the other (it would start in the end padding); with count_include_pad "
            "relay's pools cannot express that"
        )
    return False, grown


def _ceil_windows(
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> tuple[bool, bool, list[int]]:
    """For `ceil_mode=1` as onnxruntime counts windows (a last one that would
    start in the end padding is dropped): whether that is the ceil count on
    every axis, whether it is the floor count on every axis, and the pads
    whose end padding grows so that the floor count is that count."""
    n = len(sizes)
    ceil_ok, floor_ok = True, True
    grown = list(pads)
    for i, (size, k, s, d) in enumerate(zip(sizes, kernel, strides, dilations)):
        span = (k - 1) * d + 1
        room = size + pads[i] + pads[i + n] - span
        ceil_out, floor_out = -(-room // s) + 1, room // s + 1
        wanted = ceil_out - 1 if (ceil_out - 1) * s >= size + pads[i] else ceil_out
        ceil_ok &= wanted == ceil_out
        floor_ok &= wanted == floor_out
        if wanted != floor_out:
            grown[i + n] += (wanted - 1) * s + span - (size + pads[i] + pads[i + n])
    return ceil_ok, floor_ok, grown


def _lp_power(node: Node, data: SSAValue, p: int) -> SSAValue:
    """`|x| ** p` for an integer `p >= 1`, by multiplication up to p = 4."""
    if p == 2:
        return node.emit(relay.MultiplyOp(data, data))
    magnitude = node.emit(relay.AbsOp(data))
    if p > 4:
        return node.emit(relay.PowerOp(magnitude, node.const(np.float32(p))))
    out = magnitude
    for _ in range(p - 1):
        out = node.emit(relay.MultiplyOp(out, magnitude))
    return out


def _lp_root(node: Node, total: SSAValue, p: int) -> SSAValue:
    """`total ** (1 / p)`."""
    if p == 1:
        return total
    if p == 2:
        return node.emit(relay.SqrtOp(total))
    return node.emit(relay.PowerOp(total, node.const(np.float32(1.0 / p))))


def _lp_order(node: Node) -> int:
    p = int(node.attr("p", 2))
    if p < 1:
        raise node.error(f"p must be a positive integer, got {p}")
    return p


def _lp_pool(node: Node) -> SSAValue:
    """LpPool: `(sum |x|^p over the window) ** (1/p)`, the sum as an average
    with count_include_pad times the window size. Zero padding adds nothing to
    the sum, so ceil_mode's extra windows become more end padding, and every
    window's divisor is the whole window."""
    data = node.value(0)
    shape = shape_of(data)
    kernel = _pool_kernel(node, shape)
    p = _lp_order(node)
    strides, dilations, pads = _spatial(node, shape, kernel)
    if node.attr("ceil_mode", 0):
        ceil_ok, _, pads = _ceil_windows(shape[2:], kernel, strides, dilations, pads)
        if not ceil_ok:
            node.check_shapes = False  # onnx's shape inference keeps the dropped window
    mean = _emit_pool(
        node, False, _lp_power(node, data, p), kernel, strides, pads, dilations,
        False, True,
    )
    total = node.emit(relay.MultiplyOp(mean, node.const(np.float32(math.prod(kernel)))))
    return _lp_root(node, total, p)


def _global_lp_pool(node: Node) -> SSAValue:
    """GlobalLpPool: `(sum |x|^p over the spatial axes) ** (1/p)`."""
    data = node.value(0)
    rank = len(shape_of(data))
    if rank < 3:
        raise node.error(
            f"the input must have spatial dimensions, got shape {list(shape_of(data))}"
        )
    p = _lp_order(node)
    powered = _lp_power(node, data, p)
    total = node.emit(relay.SumOp(powered, axis=tuple(range(2, rank)), keepdims=True))
    return _lp_root(node, total, p)


def _global_pool(op_type: type[relay.ReduceOp]) -> Converter:
    """GlobalAveragePool / GlobalMaxPool: a reduction over the spatial axes."""

    def convert(node: Node) -> SSAValue:
        data = node.value(0)
        shape = shape_of(data)
        if len(shape) == 4 and op_type is relay.MeanOp:
            return node.emit(relay.GlobalAvgPool2dOp(data))
        if len(shape) < 3:
            raise node.error(
                f"the input must have spatial dimensions, got shape {list(shape)}"
            )
        return node.emit(op_type(data, axis=tuple(range(2, len(shape))), keepdims=True))

    return convert


# Linear algebra


def _gemm(node: Node) -> SSAValue:
    alpha = float(node.attr("alpha", 1.0))
    beta = float(node.attr("beta", 1.0))
    trans_a = bool(node.attr("transA", 0))
    trans_b = bool(node.attr("transB", 0))
    a = node.value(0)
    if node.is_constant(1):
        # dense's weight is [N, K]; transposing and scaling a constant is free.
        b = node.constant(1, "B")
        weight = b if trans_b else b.T
        if alpha != 1.0:
            weight = weight * np.float32(alpha)
            alpha = 1.0
        if trans_a:
            a = node.emit(relay.TransposeOp(a, (1, 0)))
        if weight is b:
            weight_value = node.value(1)  # shared with other users of the initializer
        else:
            weight_value = node.const(weight, f"{node.inputs[1]}_T")
        out = node.emit(relay.DenseOp(a, weight_value))
    elif trans_b and not trans_a:
        out = node.emit(relay.DenseOp(a, node.value(1)))
    else:
        out = node.emit(
            relay.MatmulOp(a, node.value(1), transpose_a=trans_a, transpose_b=trans_b)
        )
    if alpha != 1.0:
        out = node.emit(relay.MultiplyOp(out, node.const(alpha)))
    if not node.has(2) or beta == 0.0:
        return out
    n = shape_of(out)[1]
    if node.is_constant(2):
        c_array = node.constant(2, "C")
        if beta == 1.0 and c_array.shape == (n,) and n > 1:
            return node.emit(relay.BiasAddOp(out, node.value(2), axis=1))
        bias = c_array.astype(np.float32) * np.float32(beta)
        if bias.size == n and n > 1 and bias.ndim >= 1 and bias.shape[-1] == n:
            bias_value = node.const(bias.reshape(n), node.inputs[2])
            return node.emit(relay.BiasAddOp(out, bias_value, axis=1))
        return node.emit(relay.AddOp(out, node.const(bias, node.inputs[2])))
    c = node.value(2)
    if beta != 1.0:
        c = node.emit(relay.MultiplyOp(c, node.const(beta)))
    if shape_of(c) == (n,) and n > 1:
        return node.emit(relay.BiasAddOp(out, c, axis=1))
    return node.emit(relay.AddOp(out, c))


def _broadcast_to(node: Node, value: SSAValue, shape: Shape) -> SSAValue:
    """`value` repeated along its size-1 axes to `shape` (same rank), by concatenation."""
    for axis, (have, want) in enumerate(zip(shape_of(value), shape)):
        if have != want:
            value = node.emit(relay.ConcatenateOp([value] * want, axis=axis))
    return value


def _matmul(node: Node) -> SSAValue:
    a = node.value(0)
    a_shape = shape_of(a)
    b_shape = node.shape(1)
    if not a_shape or not b_shape:
        raise node.error("MatMul inputs must have rank at least 1")
    if len(b_shape) == 2:
        # [..., M, K] x [K, N]: dense with the transposed constant, else matmul.
        if node.is_constant(1):
            weight = node.const(node.constant(1, "B").T, f"{node.inputs[1]}_T")
            return node.emit(relay.DenseOp(a, weight))
        return node.emit(relay.MatmulOp(a, node.value(1)))
    if len(b_shape) == 1:
        # [..., K] x [K] -> [...]: as a matrix of one column, then drop it.
        (k,) = b_shape
        if node.is_constant(1):
            out = node.emit(
                relay.DenseOp(a, node.const(node.constant(1, "B").reshape(1, k)))
            )
        else:
            column = node.emit(relay.ReshapeOp(node.value(1), (k, 1)))
            out = node.emit(relay.MatmulOp(a, column))
        return node.emit(relay.ReshapeOp(out, a_shape[:-1]))
    # Batched: numpy broadcasting over the leading dimensions, as [B, M, K] x [B, K, N].
    squeeze_m = len(a_shape) == 1
    if squeeze_m:
        a = node.emit(relay.ReshapeOp(a, (1, a_shape[0])))
        a_shape = (1, a_shape[0])
    m, k = a_shape[-2:]
    n = b_shape[-1]
    batch = relay.broadcast_shapes(a_shape[:-2], b_shape[:-2], "MatMul")
    x = _batched(node, a, a_shape, batch)
    if node.is_constant(1):
        b = node.constant(1, "B")
        b = np.broadcast_to(b, (*([1] * (len(batch) + 2 - b.ndim)), *b.shape))
        if math.prod(b.shape[:-2]) != 1:
            b = np.broadcast_to(b, (*batch, k, n))
        y = node.const(np.swapaxes(b.reshape(-1, k, n), 1, 2))
        out = node.emit(relay.BatchMatmulOp(x, y, transpose_b=True))
    else:
        y = _batched(node, node.value(1), b_shape, batch)
        out = node.emit(relay.BatchMatmulOp(x, y, transpose_b=False))
    final = (*batch, n) if squeeze_m else (*batch, m, n)
    return node.emit(relay.ReshapeOp(out, final))


def _batched(node: Node, value: SSAValue, shape: Shape, batch: Shape) -> SSAValue:
    """`value [..., R, C]` as `[B, R, C]`: B is 1 or the full broadcast batch."""
    lead = (1,) * (len(batch) - len(shape[:-2])) + tuple(shape[:-2])
    if math.prod(lead) != 1 and lead != batch:
        value = node.emit(relay.ReshapeOp(value, (*lead, *shape[-2:])))
        value = _broadcast_to(node, value, (*batch, *shape[-2:]))
        lead = batch
    target = (math.prod(lead), *shape[-2:])
    if shape_of(value) == target:
        return value
    return node.emit(relay.ReshapeOp(value, target))


# Normalisation


def _batch_normalization(node: Node) -> SSAValue | list[SSAValue]:
    data = node.value(0)
    shape = shape_of(data)
    if len(shape) < 2:
        raise node.error("the input must have a channel dimension (rank >= 2)")
    epsilon = float(node.attr("epsilon", 1e-5))
    if node.attr("training_mode", 0):
        return _batch_norm_training(node, data, epsilon)
    node.only_first_output()
    params = [node.value(i) for i in range(1, 5)]
    return node.emit(relay.BatchNormOp(data, *params, axis=1, epsilon=epsilon))


def _batch_norm_training(node: Node, data: SSAValue, epsilon: float) -> list[SSAValue]:
    """BatchNormalization with training_mode=1: normalised by the batch's own
    statistics (the population variance over every axis but the channels),
    with the running mean and variance updated by `momentum`."""
    shape = shape_of(data)
    channels = (shape[1],)
    axes = (0, *range(2, len(shape)))
    mean = node.emit(relay.MeanOp(data, axes))
    per_channel = (1, *channels, *(1,) * (len(shape) - 2))
    centered = node.emit(
        relay.SubtractOp(data, node.emit(relay.ReshapeOp(mean, per_channel)))
    )
    variance = node.emit(relay.MeanOp(node.emit(relay.MultiplyOp(centered, centered)), axes))
    out = node.emit(
        relay.BatchNormOp(
            data, node.value(1), node.value(2), mean, variance, axis=1, epsilon=epsilon
        )
    )
    momentum = float(node.attr("momentum", 0.9))

    def running(i: int, batch: SSAValue) -> SSAValue:
        kept = node.emit(relay.MultiplyOp(node.value(i), node.const(np.float32(momentum))))
        new = node.emit(relay.MultiplyOp(batch, node.const(np.float32(1.0 - momentum))))
        return node.emit(relay.AddOp(kept, new))

    return [out, running(3, mean), running(4, variance)]


def _layer_normalization(node: Node) -> SSAValue | list[SSAValue]:
    out = _layer_norm(node)
    if not any(o in node.graph.used for o in node.outputs[1:] if o):
        return out
    # The optional Mean and InvStdDev outputs (stash_type float32: what the
    # data already is), computed apart from relay.nn.layer_norm, which
    # returns only the normalised data.
    data = node.value(0)
    rank = len(shape_of(data))
    axis = relay.normalize_axis(int(node.attr("axis", -1)), rank, "LayerNormalization")
    axes = tuple(range(axis, rank))
    mean = node.emit(relay.MeanOp(data, axes, keepdims=True))
    centered = node.emit(relay.SubtractOp(data, mean))
    variance = node.emit(
        relay.MeanOp(node.emit(relay.MultiplyOp(centered, centered)), axes, keepdims=True)
    )
    epsilon = node.const(np.float32(node.attr("epsilon", 1e-5)))
    inv_std_dev = node.emit(relay.RsqrtOp(node.emit(relay.AddOp(variance, epsilon))))
    return [out, mean, inv_std_dev]


def _rms_normalization(node: Node) -> SSAValue:
    """`x / sqrt(mean(x^2 over axes axis..) + epsilon) * scale` (opset 23),
    computed in float32 when stash_type asks for it and the data is narrower."""
    data = node.value(0)
    element = data.type.element_type  # type: ignore[attr-defined]
    if element not in (f16, f32, f64):
        raise node.error(f"input 0 must be a float tensor, got {element}")
    stash_type = int(node.attr("stash_type", 1))
    if stash_type != 1:
        raise node.error(f"stash_type {stash_type} is not supported (1, float32, is)")
    rank = len(shape_of(data))
    axis = relay.normalize_axis(int(node.attr("axis", -1)), rank, "RMSNormalization")
    axes = tuple(range(axis, rank))
    x = node.emit(relay.CastOp(data, "float32")) if element == f16 else data
    square_mean = node.emit(relay.MeanOp(node.emit(relay.MultiplyOp(x, x)), axes, keepdims=True))
    epsilon = node.const_like(float(node.attr("epsilon", 1e-5)), x)
    inv_rms = node.emit(relay.RsqrtOp(node.emit(relay.AddOp(square_mean, epsilon))))
    normalized = node.emit(relay.MultiplyOp(x, inv_rms))
    if element == f16:
        normalized = node.emit(relay.CastOp(normalized, "float16"))
    return node.emit(relay.MultiplyOp(normalized, node.value(1)))


def _layer_norm(node: Node) -> SSAValue:
    """LayerNormalization's first output, the normalised data."""
    data = node.value(0)
    shape = shape_of(data)
    rank = len(shape)
    axis = relay.normalize_axis(int(node.attr("axis", -1)), rank, "LayerNormalization")
    epsilon = float(node.attr("epsilon", 1e-5))
    normalized = shape[axis:]
    size = math.prod(normalized)
    has_bias = node.has(2)
    if (
        axis == rank - 1
        and node.shape(1) == (size,)
        and (not has_bias or node.shape(2) == (size,))
    ):
        # relay.nn.layer_norm needs a beta operand even without a bias.
        beta = node.value(2) if has_bias else node.const(np.zeros(size, np.float32))
        return node.emit(
            relay.LayerNormOp(
                data, node.value(1), beta, axis=-1, epsilon=epsilon, center=has_bias
            )
        )
    # Over several trailing axes, or with a scale that broadcasts: normalise the
    # flattened axes; constant parameters are flattened along, others are
    # applied afterwards with numpy broadcasting.
    gamma = _flat_parameter(node, 1, normalized)
    beta = _flat_parameter(node, 2, normalized) if has_bias else None
    flat = node.emit(relay.ReshapeOp(data, (*shape[:axis], size)))
    out = node.emit(
        relay.LayerNormOp(
            flat,
            gamma if gamma is not None else node.const(np.ones(size, np.float32)),
            beta if beta is not None else node.const(np.zeros(size, np.float32)),
            axis=-1,
            epsilon=epsilon,
            scale=gamma is not None,
            center=beta is not None,
        )
    )
    out = node.emit(relay.ReshapeOp(out, shape))
    if gamma is None:
        out = node.emit(relay.MultiplyOp(out, node.value(1)))
    if has_bias and beta is None:
        out = node.emit(relay.AddOp(out, node.value(2)))
    return out


def _flat_parameter(node: Node, i: int, normalized: Shape) -> SSAValue | None:
    """LayerNormalization's scale or bias as a `[size]` constant, or None when it
    is not a constant."""
    if not node.is_constant(i):
        return None
    array = node.constant(i, "scale" if i == 1 else "bias")
    try:
        flat = np.broadcast_to(array, normalized).reshape(-1)
    except ValueError:
        raise node.error(
            f"input {i} has shape {list(array.shape)}, which does not broadcast to "
            f"the normalised shape {list(normalized)}"
        ) from None
    return node.const(flat, node.inputs[i])


def _instance_normalization(node: Node) -> SSAValue:
    data = node.value(0)
    if len(shape_of(data)) < 3:
        raise node.error(
            f"the input must be N x C x D1 x ... (rank >= 3), got {list(shape_of(data))}"
        )
    epsilon = float(node.attr("epsilon", 1e-5))
    return node.emit(
        relay.InstanceNormOp(data, node.value(1), node.value(2), axis=1, epsilon=epsilon)
    )


def _lrn(node: Node) -> SSAValue:
    size = node.attr("size")
    if size is None:
        raise node.error("the size attribute is required")
    data = node.value(0)
    if len(shape_of(data)) < 2:
        raise node.error(f"the input must have channels (rank >= 2), got {list(shape_of(data))}")
    return node.emit(
        relay.LrnOp(
            data,
            size=int(size),
            axis=1,
            bias=float(node.attr("bias", 1.0)),
            alpha=float(node.attr("alpha", 1e-4)),
            beta=float(node.attr("beta", 0.75)),
        )
    )


# Shape manipulation


CONVERTERS: dict[str, Converter] = {
    "Softmax": _softmax(relay.SoftmaxOp),
    "LogSoftmax": _softmax(relay.LogSoftmaxOp),
    "Conv": _conv,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global_pool(relay.MeanOp),
    "GlobalMaxPool": _global_pool(relay.MaxOp),
    "LpPool": _lp_pool,
    "GlobalLpPool": _global_lp_pool,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_normalization,
    "LayerNormalization": _layer_normalization,
    "RMSNormalization": _rms_normalization,
    "LRN": _lrn,
    "InstanceNormalization": _instance_normalization,
}
