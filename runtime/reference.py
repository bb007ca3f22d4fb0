"""The reference interpreter: what every relay op means, in numpy.

Every backend and the host are tested against it. It runs the graph level
(relay ops, extern.region, extern.call, func.call) one op at a time, with
no compilation. Kernels get `(op, input arrays)` and read attributes through
`op.attrs()`; sums, products and transcendental functions other than numpy's
own float32 ones are computed in float64 and rounded once to the result's
dtype, so a float32 op gives float32 results close to exact.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from byoc.dialects import relay
from byoc.dialects.extern import CallOp, RegionOp, YieldOp
from byoc.dialects.relay.constant import numpy_dtype_of
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.reference_qnn import QNN_REFERENCE

Kernel = Callable[[Operation, list[np.ndarray]], np.ndarray]

def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a builtin element type (floats, i1, 8- to 64-bit integers)."""
    dtype = numpy_dtype_of(element_type)
    if dtype is None:
        raise ByocError(f"error: element type {element_type} is not supported")
    return np.dtype(dtype)


def _elementwise(fn: Callable[..., np.ndarray]) -> Kernel:
    return lambda op, args: fn(*args)


def _safe_divisor(y: np.ndarray) -> np.ndarray:
    """Integer divisors with 0 and -1 replaced by 1: a remainder by them is 0,
    and numpy would warn (by 0) or trap (INT_MIN % -1)."""
    risky = y == 0
    if np.issubdtype(y.dtype, np.signedinteger):
        risky |= y == -1
    return np.where(risky, y.dtype.type(1), y)


def _remainder(floored: bool) -> Kernel:
    """relay.floor_mod (numpy's mod) or relay.mod (C's fmod and %)."""
    fn = np.mod if floored else np.fmod

    def kernel(op, args):
        x, y = args
        if np.issubdtype(x.dtype, np.integer):
            return fn(x, _safe_divisor(y))
        with np.errstate(invalid="ignore", divide="ignore"):
            return fn(x, y)

    return kernel


def _shift(left: bool) -> Kernel:
    """relay.left_shift / right_shift: amounts below 0 or at least the width
    leave what the sign alone gives (-1 shifting a negative value right, else 0)."""

    def kernel(op, args):
        x, y = np.broadcast_arrays(*args)
        width = x.dtype.itemsize * 8
        in_range = (y >= 0) & (y < width)
        if not left and np.issubdtype(x.dtype, np.signedinteger):
            return np.right_shift(x, np.where(in_range, y, y.dtype.type(width - 1)))
        amount = np.where(in_range, y, y.dtype.type(0))
        shifted = np.left_shift(x, amount) if left else np.right_shift(x, amount)
        return np.where(in_range, shifted, x.dtype.type(0))

    return kernel


def _cumsum(op, args):
    (x,) = args
    attrs = op.attrs()
    axis = relay.normalize_axis(int(attrs["axis"]), x.ndim, op.name)
    if attrs["reverse"]:
        x = np.flip(x, axis)
    sums = np.cumsum(x, axis=axis, dtype=x.dtype)  # in order, in the data's type
    if attrs["exclusive"] and x.shape[axis]:
        sums = np.concatenate(
            [np.zeros_like(np.take(sums, [0], axis)), np.take(sums, range(x.shape[axis] - 1), axis)],
            axis,
        )
    return np.flip(sums, axis) if attrs["reverse"] else sums


def _trilu(op, args):
    attrs = op.attrs()
    keep = np.triu if attrs["upper"] else np.tril
    rows, columns = args[0].shape[-2:]
    # Beyond the matrix every k keeps all or nothing; numpy wants a C long.
    return keep(args[0], min(max(int(attrs["k"]), -rows - 1), columns + 1))


def _wide(x: np.ndarray) -> np.ndarray:
    """`x` in float64 (or wider): accumulations in the reference round once, at the end."""
    return np.asarray(x, dtype=np.promote_types(x.dtype, np.float64))


def _as(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=like.dtype)


def _in_wide(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """An elementwise kernel computed in float64 and rounded to the input's dtype."""
    return lambda op, args: _as(fn(_wide(args[0])), args[0])


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: np.ndarray) -> np.ndarray:
    # math.erf is accurate to double precision; scipy is not a dependency.
    return _erf64(x) if x.size else np.zeros_like(x)


def _clip(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    attrs = _attrs(op)
    (x,) = args
    element = op.results[0].type.element_type  # type: ignore[attr-defined]
    if x.dtype.kind in "iu":
        low, high = relay.integer_clip_bounds(element, attrs["a_min"], attrs["a_max"])
        return np.clip(x, low, high).astype(x.dtype)
    low, high = x.dtype.type(attrs["a_min"]), x.dtype.type(attrs["a_max"])
    return np.minimum(np.maximum(x, low), high)


def _activation(fn: Callable[..., np.ndarray], *names: str) -> Kernel:
    """An elementwise kernel with float attributes `names`, passed to `fn` after
    the data, computed in float64 and rounded to the input's dtype."""

    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        attrs = _attrs(op)
        return _as(fn(_wide(args[0]), *(attrs[n] for n in names)), args[0])

    return kernel


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(alpha * x + beta, 0.0, 1.0)


def _gelu(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x = _wide(args[0])
    if _attrs(op)["approximate"] == "tanh":
        curve = np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))
    else:
        curve = _erf(x / math.sqrt(2.0))
    return _as(0.5 * x * (1.0 + curve), args[0])


def _prelu(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, alpha = args
    axis = relay.normalize_axis(_attrs(op)["axis"], data.ndim, op.name)
    return np.where(data < 0, data * _along(alpha, axis, data.ndim), data)


def _attrs(op: Operation) -> dict[str, Any]:
    assert isinstance(op, relay.RelayOp)
    return op.attrs()


def _along(vector: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A 1-d `vector` shaped to broadcast along `axis` of a rank-`rank` array."""
    shape = [1] * rank
    shape[axis] = vector.shape[0]
    return vector.reshape(shape)


def _bias_add(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, bias = args
    axis = relay.normalize_axis(_attrs(op)["axis"], data.ndim, op.name)
    return data + _along(bias, axis, data.ndim)


# --- Linear algebra ---


def _dense(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, weight = args
    return _as(_wide(data) @ _wide(weight).T, data)


def _matmul(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    a, b = _wide(args[0]), _wide(args[1])
    attrs = _attrs(op)
    if attrs["transpose_a"]:
        a = np.swapaxes(a, -1, -2)
    if attrs["transpose_b"]:
        b = b.T
    return _as(a @ b, args[0])


def _batch_matmul(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x, y = _wide(args[0]), _wide(args[1])
    attrs = _attrs(op)
    if attrs["transpose_a"]:
        x = np.swapaxes(x, -1, -2)
    if attrs["transpose_b"]:
        y = np.swapaxes(y, -1, -2)
    return _as(np.matmul(x, y), args[0])


# --- Convolution and pooling ---


def _windows(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
) -> np.ndarray:
    """Every window of the last `len(kernel)` axes of `x`: shape
    `(..., O1, ..., On, K1, ..., Kn)`."""
    n = len(kernel)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(-n, 0)))
    steps = (*(slice(None, None, s) for s in strides), *(slice(None, None, d) for d in dilation))
    return view[(Ellipsis, *steps)]


def _pad_spatial(
    x: np.ndarray, pads: Sequence[int], extra: Sequence[int], value: float
) -> np.ndarray:
    """`x` padded on its last `len(extra)` axes: `pads` (begins..., ends...)
    plus `extra` more at each end."""
    n = len(extra)
    widths = [(0, 0)] * (x.ndim - n) + [
        (pads[d], pads[d + n] + extra[d]) for d in range(n)
    ]
    return np.pad(x, widths, constant_values=value)


_OUT_AXES, _TAP_AXES = "xyz", "ijk"


def _conv(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, weight = args
    attrs = _attrs(op)
    spatial = data.ndim - 2
    pads = relay.normalize_padding_nd(attrs["padding"], spatial, op.name)
    groups = attrs["groups"]
    n, c = data.shape[:2]
    o, i, *kernel = weight.shape
    padded = _pad_spatial(_wide(data), pads, (0,) * spatial, 0.0)
    win = _windows(padded, kernel, attrs["strides"], attrs["dilation"])
    outs = win.shape[2 : 2 + spatial]
    win = win.reshape(n, groups, c // groups, *outs, *kernel)
    w = _wide(weight).reshape(groups, o // groups, i, *kernel)
    out_axes, taps = _OUT_AXES[-spatial:], _TAP_AXES[-spatial:]
    out = np.einsum(f"ngc{out_axes}{taps},goc{taps}->ngo{out_axes}", win, w, optimize=True)
    return _as(out.reshape(n, o, *outs), data)


def _conv_transpose(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """Each kernel tap scatters `data x weight[:, :, tap]` over a strided
    window of the full (unpadded) output, which is then cropped by the padding."""
    data, weight = args
    attrs = _attrs(op)
    spatial = data.ndim - 2
    pads = relay.normalize_padding_nd(attrs["padding"], spatial, op.name)
    strides, dilation = attrs["strides"], attrs["dilation"]
    groups = attrs["groups"]
    n, c, *sizes = data.shape
    _, per_group, *kernel = weight.shape
    outs = op.results[0].type.get_shape()[2:]  # type: ignore[attr-defined]
    full = [
        max((sizes[d] - 1) * strides[d] + dilation[d] * (kernel[d] - 1) + 1, pads[d] + outs[d])
        for d in range(spatial)
    ]
    total = np.zeros((n, groups, per_group, *full))
    x = _wide(data).reshape(n, groups, c // groups, *sizes)
    w = _wide(weight).reshape(groups, c // groups, per_group, *kernel)
    for tap in itertools.product(*(range(k) for k in kernel)):
        contribution = np.einsum("ngc...,gco->ngo...", x, w[(Ellipsis, *tap)])
        window = tuple(
            slice(t * dl, t * dl + (size - 1) * s + 1, s)
            for t, dl, size, s in zip(tap, dilation, sizes, strides)
        )
        total[(Ellipsis, *window)] += contribution
    crop = tuple(slice(pads[d], pads[d] + outs[d]) for d in range(spatial))
    out = total[(Ellipsis, *crop)].reshape(n, groups * per_group, *outs)
    return _as(out, data)


def _dense_packed(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, packed = args
    return _dense(op, [data, relay.unpack_dense_weight(packed, _attrs(op)["units"])])


def _conv2d_packed(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, packed = args
    attrs = _attrs(op)
    return _conv(op, [data, relay.unpack_conv2d_weight(packed, attrs["groups"], attrs["channels"], attrs["kernel_layout"])])


def _pool_geometry(
    op: Operation, data: np.ndarray
) -> tuple[dict[str, Any], tuple[int, ...], tuple[int, ...]]:
    """Attributes, explicit padding (begins..., ends...) and the extra end
    padding `ceil_mode` needs."""
    attrs = _attrs(op)
    spatial = data.ndim - 2
    pads = relay.normalize_padding_nd(attrs["padding"], spatial, op.name)
    out = relay.pool_output_shape(
        data.shape,
        attrs["pool_size"],
        attrs["strides"],
        attrs["padding"],
        attrs["dilation"],
        attrs["ceil_mode"],
        op.name,
        spatial,
    )
    extra = []
    for dim in range(spatial):
        span = attrs["dilation"][dim] * (attrs["pool_size"][dim] - 1) + 1
        needed = (out[2 + dim] - 1) * attrs["strides"][dim] + span
        have = data.shape[2 + dim] + pads[dim] + pads[dim + spatial]
        extra.append(max(0, needed - have))
    return attrs, pads, tuple(extra)


def _max_pool(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs, pads, extra = _pool_geometry(op, data)
    spatial = len(extra)
    lowest = np.iinfo(data.dtype).min if data.dtype.kind in "iu" else -np.inf
    padded = _pad_spatial(data, pads, extra, lowest)
    win = _windows(padded, attrs["pool_size"], attrs["strides"], attrs["dilation"])
    return win.max(axis=tuple(range(-spatial, 0)))


def _avg_pool(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs, pads, extra = _pool_geometry(op, data)
    spatial = len(extra)
    axes = tuple(range(-spatial, 0))
    size, strides, dilation = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    total = _windows(_pad_spatial(_wide(data), pads, extra, 0.0), size, strides, dilation)
    total = total.sum(axis=axes)
    # The divisor: real elements in the window, plus the explicit padding if
    # count_include_pad; the extra ceil_mode padding never counts.
    sizes = data.shape[2:]
    if attrs["count_include_pad"]:
        padded_sizes = [sizes[d] + pads[d] + pads[d + spatial] for d in range(spatial)]
        counted = _pad_spatial(np.ones(padded_sizes), (0,) * (2 * spatial), extra, 0.0)
    else:
        counted = _pad_spatial(np.ones(sizes), pads, extra, 0.0)
    count = _windows(counted, size, strides, dilation).sum(axis=axes)
    return _as(total / np.maximum(count, 1.0), data)


def _global_avg_pool2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return _as(_wide(data).mean(axis=(2, 3), keepdims=True), data)


# --- Normalisation ---


def _softmax(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    x = _wide(data)
    axis = _attrs(op)["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return _as(e / e.sum(axis=axis, keepdims=True), data)


def _log_softmax(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    x = _wide(data)
    axis = _attrs(op)["axis"]
    shifted = x - x.max(axis=axis, keepdims=True)
    return _as(shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)), data)


def _normalize(
    op: Operation,
    data: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    axis: int,
) -> np.ndarray:
    attrs = _attrs(op)
    out = (_wide(data) - mean) / np.sqrt(var + attrs["epsilon"])
    if attrs["scale"]:
        out = out * _along(_wide(gamma), axis, data.ndim)
    if attrs["center"]:
        out = out + _along(_wide(beta), axis, data.ndim)
    return _as(out, data)


def _batch_norm(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, gamma, beta, mean, var = args
    axis = relay.normalize_axis(_attrs(op)["axis"], data.ndim, op.name)
    return _normalize(
        op,
        data,
        _along(_wide(mean), axis, data.ndim),
        _along(_wide(var), axis, data.ndim),
        gamma,
        beta,
        axis,
    )


def _layer_norm(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, gamma, beta = args
    axis = relay.normalize_axis(_attrs(op)["axis"], data.ndim, op.name)
    x = _wide(data)
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return _normalize(op, data, mean, var, gamma, beta, axis)


def _instance_norm(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, gamma, beta = args
    attrs = _attrs(op)
    axis = relay.normalize_axis(attrs["axis"], data.ndim, op.name)
    axes = relay.instance_norm_axes(data.ndim, axis, op.name)
    x = _wide(data)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return _normalize(op, data, mean, var, gamma, beta, axis)


def _lrn(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs = _attrs(op)
    axis = relay.normalize_axis(attrs["axis"], data.ndim, op.name)
    size = attrs["size"]
    squares = np.moveaxis(_wide(data) ** 2, axis, 0)
    before, after = (size - 1) // 2, size // 2
    padded = np.pad(squares, [(before, after)] + [(0, 0)] * (data.ndim - 1))
    channels = squares.shape[0]
    total = sum(padded[k : k + channels] for k in range(size))
    scale = (attrs["bias"] + attrs["alpha"] / size * np.moveaxis(total, 0, axis)) ** attrs["beta"]
    return _as(_wide(data) / scale, data)


# --- Shape manipulation ---


def _reshape(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    shape = relay.reshape_output_shape(data.shape, _attrs(op)["newshape"], op.name)
    return data.reshape(shape)


def _transpose(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return data.transpose(relay.transpose_axes(data.ndim, _attrs(op)["axes"], op.name))


def _concatenate(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(args, axis=_attrs(op)["axis"])


def _batch_flatten(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return data.reshape(relay.batch_flatten_output_shape(data.shape, op.name))


def _squeeze(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return data.reshape(relay.squeeze_output_shape(data.shape, _attrs(op)["axis"], op.name))


def _expand_dims(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs = _attrs(op)
    shape = relay.expand_dims_output_shape(
        data.shape, attrs["axis"], attrs["num_newaxis"], op.name
    )
    return data.reshape(shape)


def _take(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, indices = args
    attrs = _attrs(op)
    axis, mode = attrs["axis"], attrs["mode"]
    if axis is None:
        data, axis = data.reshape(-1), 0
    axis = relay.normalize_axis(axis, data.ndim, op.name)
    n = data.shape[axis]
    index = indices.astype(np.int64)
    if mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif mode == "wrap":
        index = np.mod(index, n)
    else:  # "fast": [-n, n), as numpy
        bad = (index < -n) | (index >= n)
        if bad.any():
            raise ByocError(
                f"error: '{op.name}': index {int(index[bad][0])} is out of range for "
                f"axis {axis} of size {n}"
            )
    return np.take(data, index, axis=axis)


def _gather(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, indices = args
    axis = relay.normalize_axis(_attrs(op)["axis"], data.ndim, op.name)
    n = data.shape[axis]
    index = indices.astype(np.int64)
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise ByocError(
            f"error: '{op.name}': index {int(index[bad][0])} is out of range for "
            f"axis {axis} of size {n}"
        )
    # Indices may cover less of data than its shape along the other axes.
    window = tuple(slice(0, m) if d != axis else slice(None) for d, m in enumerate(index.shape))
    return np.take_along_axis(data[window], np.where(index < 0, index + n, index), axis=axis)


def _strided_slice(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    assert isinstance(op, relay.StridedSliceOp)
    return data[tuple(slice(r.start, r.stop if r.stop >= 0 else None, r.step) for r in op.ranges())]


def _tile(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return np.tile(data, _attrs(op)["reps"])


def _broadcast_to(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    return np.broadcast_to(data, _attrs(op)["shape"])


def _pad(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs = _attrs(op)
    width = attrs["pad_width"]
    pairs = [(width[2 * i], width[2 * i + 1]) for i in range(data.ndim)]
    if attrs["pad_mode"] == "constant":
        value = np.asarray(attrs["pad_value"]).astype(data.dtype)
        return np.pad(data, pairs, mode="constant", constant_values=value)
    return np.pad(data, pairs, mode=attrs["pad_mode"])


def _where(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    condition, x, y = args
    return np.where(condition, x, y)


def _cast(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    typ = op.results[0].type
    assert isinstance(typ, TensorType)
    dtype = numpy_dtype(typ.element_type)
    if data.dtype.kind == "f" and dtype.kind in "iu":
        return np.trunc(data).astype(dtype)  # toward zero, as C converts
    return data.astype(dtype)


def _depth_to_space(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs = _attrs(op)
    b = attrs["block_size"]
    n, c, h, w = data.shape
    if attrs["mode"] == "DCR":
        blocks = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        blocks = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return blocks.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    attrs = _attrs(op)
    b = attrs["block_size"]
    n, c, h, w = data.shape
    blocks = data.reshape(n, c, h // b, b, w // b, b)
    if attrs["mode"] == "DCR":
        blocks = blocks.transpose(0, 3, 5, 1, 2, 4)
    else:
        blocks = blocks.transpose(0, 1, 3, 5, 2, 4)
    return blocks.reshape(n, c * b * b, h // b, w // b)


def _nearest(x: np.ndarray, rounding: str) -> np.ndarray:
    floor = np.floor(x)
    fraction = x - floor
    if rounding == "floor":
        return floor
    if rounding == "ceil":
        return np.ceil(x)
    if rounding == "round_prefer_floor":
        return floor + (fraction > 0.5)
    if rounding == "round_prefer_ceil":
        return floor + (fraction >= 0.5)
    return np.where(x < 0, -np.floor(-x + 0.5), np.floor(x + 0.5))  # half away from 0


def _resize2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (data,) = args
    assert isinstance(op, relay.Resize2dOp)
    attrs = _attrs(op)
    method = attrs["method"]
    mode = attrs["coordinate_transformation_mode"]
    x = _wide(data)
    taps: list[tuple[np.ndarray, np.ndarray]] = []  # per axis: (indices [O, K], weights [O, K])
    inside = np.ones(tuple(attrs["size"]), dtype=bool)
    for axis in (2, 3):
        coordinates = op.axis_coordinates(axis)
        n = data.shape[axis]
        if mode == "tf_crop_and_resize":
            outside = (coordinates < 0) | (coordinates > n - 1)
            inside &= ~outside[:, None] if axis == 2 else ~outside[None, :]
        if method == "nearest_neighbor":
            rounding = relay.rounding_of(method, mode, attrs["rounding_method"])
            index = _nearest(coordinates, rounding)[:, None]
            weight = np.ones_like(index)
        elif method == "linear":
            clamped = np.clip(coordinates, 0, n - 1)
            low = np.floor(clamped)
            index = np.stack([low, low + 1], axis=-1)
            fraction = (clamped - low)[:, None]
            weight = np.concatenate([1 - fraction, fraction], axis=-1)
        else:
            low = np.floor(coordinates)
            index = low[:, None] + np.arange(-1, 3)
            weight = relay.cubic_weights(coordinates - low, attrs["cubic_alpha"])
            if attrs["cubic_exclude"]:
                weight = np.where((index < 0) | (index > n - 1), 0.0, weight)
                weight = weight / weight.sum(axis=-1, keepdims=True)
        taps.append((np.clip(index, 0, n - 1).astype(np.int64), weight))
    (hi, hw), (wi, ww) = taps
    out = np.zeros((*data.shape[:2], *attrs["size"]))
    for a in range(hi.shape[1]):
        rows = x[:, :, hi[:, a], :]
        for b in range(wi.shape[1]):
            out += hw[:, a][:, None] * ww[:, b][None, :] * rows[:, :, :, wi[:, b]]
    if mode == "tf_crop_and_resize":
        out = np.where(inside, out, attrs["extrapolation_value"])
    return _as(out, data)


# --- Reductions ---


def _reduction(fn: Callable[..., np.ndarray], wide: bool) -> Kernel:
    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        (data,) = args
        assert isinstance(op, relay.ReduceOp)
        axes = op.reduced_axes()
        keepdims = _attrs(op)["keepdims"]
        return _as(fn(_wide(data) if wide else data, axis=axes, keepdims=keepdims), data)

    return kernel


def _extreme(x: np.ndarray, lowest: bool) -> float | int | bool:
    """The smallest (or largest) value of `x`'s dtype: -inf, the smallest
    integer, False."""
    if x.dtype == np.bool_:
        return not lowest
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return int(info.min if lowest else info.max)
    return -np.inf if lowest else np.inf


def _max(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    # An empty reduction gives the identity of max (numpy would raise).
    return np.max(x, axis=axis, keepdims=keepdims, initial=_extreme(x, True))


def _min(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    # An empty reduction gives the identity of min.
    return np.min(x, axis=axis, keepdims=keepdims, initial=_extreme(x, False))


def _arg_extreme(is_max: bool) -> Kernel:
    """relay.argmax / argmin: the reduced axes moved last and flattened (their
    row-major position), numpy's first extreme (a NaN is one), or the last with
    `select_last_index` (the first of the reversed rows)."""

    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        (data,) = args
        assert isinstance(op, relay.ArgReduceOp)
        axes = op.reduced_axes()
        attrs = _attrs(op)
        kept = [d for d in range(data.ndim) if d not in axes]
        rows = np.transpose(data, (*kept, *axes)).reshape(*(data.shape[d] for d in kept), -1)
        find = np.argmax if is_max else np.argmin
        if attrs["select_last_index"]:
            index = rows.shape[-1] - 1 - find(rows[..., ::-1], axis=-1)
        else:
            index = find(rows, axis=-1)
        if attrs["keepdims"]:
            index = index.reshape([1 if d in axes else n for d, n in enumerate(data.shape)])
        return np.asarray(index, np.int32)

    return kernel


def _constant(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, relay.ConstantOp)
    return op.to_numpy()


REFERENCE: dict[str, Kernel] = {
    relay.AddOp.name: _elementwise(np.add),
    relay.SubtractOp.name: _elementwise(np.subtract),
    relay.MultiplyOp.name: _elementwise(np.multiply),
    relay.DivideOp.name: _elementwise(np.divide),
    relay.MaximumOp.name: _elementwise(np.maximum),
    relay.MinimumOp.name: _elementwise(np.minimum),
    relay.PowerOp.name: _elementwise(np.power),
    relay.ReluOp.name: _elementwise(lambda x: np.maximum(x, x.dtype.type(0))),
    relay.TanhOp.name: _elementwise(np.tanh),
    relay.ExpOp.name: _elementwise(np.exp),
    relay.NegativeOp.name: _elementwise(np.negative),
    relay.AbsOp.name: _elementwise(np.abs),
    relay.LogOp.name: _elementwise(np.log),
    relay.SqrtOp.name: _elementwise(np.sqrt),
    relay.RsqrtOp.name: _in_wide(lambda x: 1.0 / np.sqrt(x)),
    relay.SigmoidOp.name: _in_wide(lambda x: 1.0 / (1.0 + np.exp(-x))),
    relay.ErfOp.name: _in_wide(_erf),
    relay.SinOp.name: _elementwise(np.sin),
    relay.CosOp.name: _elementwise(np.cos),
    relay.TanOp.name: _elementwise(np.tan),
    relay.AsinOp.name: _elementwise(np.arcsin),
    relay.AcosOp.name: _elementwise(np.arccos),
    relay.AtanOp.name: _elementwise(np.arctan),
    relay.SinhOp.name: _elementwise(np.sinh),
    relay.CoshOp.name: _elementwise(np.cosh),
    relay.AsinhOp.name: _elementwise(np.arcsinh),
    relay.AcoshOp.name: _elementwise(np.arccosh),
    relay.AtanhOp.name: _elementwise(np.arctanh),
    relay.SignOp.name: _elementwise(np.sign),
    relay.FloorOp.name: _elementwise(np.floor),
    relay.CeilOp.name: _elementwise(np.ceil),
    relay.RoundOp.name: _elementwise(np.round),  # halves to even
    relay.ReciprocalOp.name: _elementwise(np.reciprocal),
    relay.SoftplusOp.name: _in_wide(_softplus),
    relay.SoftsignOp.name: _in_wide(lambda x: x / (1.0 + np.abs(x))),
    relay.HardSwishOp.name: _in_wide(lambda x: x * _hard_sigmoid(x, 1.0 / 6.0, 0.5)),
    relay.LeakyReluOp.name: _activation(lambda x, a: np.where(x < 0, a * x, x), "alpha"),
    relay.EluOp.name: _activation(
        lambda x, a: np.where(x < 0, a * np.expm1(x), x), "alpha"
    ),
    relay.SeluOp.name: _activation(
        lambda x, a, g: g * np.where(x > 0, x, a * np.expm1(x)), "alpha", "gamma"
    ),
    relay.HardSigmoidOp.name: _activation(_hard_sigmoid, "alpha", "beta"),
    relay.ShrinkOp.name: _activation(
        lambda x, bias, lambd: np.where(
            x < -lambd, x + bias, np.where(x > lambd, x - bias, 0.0)
        ),
        "bias",
        "lambd",
    ),
    relay.GeluOp.name: _gelu,
    relay.PReluOp.name: _prelu,
    relay.ClipOp.name: _clip,
    relay.BiasAddOp.name: _bias_add,
    relay.DenseOp.name: _dense,
    relay.DensePackedOp.name: _dense_packed,
    relay.MatmulOp.name: _matmul,
    relay.BatchMatmulOp.name: _batch_matmul,
    relay.Conv2dOp.name: _conv,
    relay.Conv3dOp.name: _conv,
    relay.Conv2dTransposeOp.name: _conv_transpose,
    relay.Conv3dTransposeOp.name: _conv_transpose,
    relay.MaxPool2dOp.name: _max_pool,
    relay.AvgPool2dOp.name: _avg_pool,
    relay.MaxPool3dOp.name: _max_pool,
    relay.AvgPool3dOp.name: _avg_pool,
    relay.Conv2dPackedOp.name: _conv2d_packed,
    relay.GlobalAvgPool2dOp.name: _global_avg_pool2d,
    relay.SoftmaxOp.name: _softmax,
    relay.LogSoftmaxOp.name: _log_softmax,
    relay.BatchNormOp.name: _batch_norm,
    relay.LayerNormOp.name: _layer_norm,
    relay.LrnOp.name: _lrn,
    relay.InstanceNormOp.name: _instance_norm,
    relay.ReshapeOp.name: _reshape,
    relay.TransposeOp.name: _transpose,
    relay.ConcatenateOp.name: _concatenate,
    relay.BatchFlattenOp.name: _batch_flatten,
    relay.SqueezeOp.name: _squeeze,
    relay.ExpandDimsOp.name: _expand_dims,
    relay.TakeOp.name: _take,
    relay.GatherOp.name: _gather,
    relay.StridedSliceOp.name: _strided_slice,
    relay.TileOp.name: _tile,
    relay.BroadcastToOp.name: _broadcast_to,
    relay.PadOp.name: _pad,
    relay.WhereOp.name: _where,
    relay.CastOp.name: _cast,
    relay.DepthToSpaceOp.name: _depth_to_space,
    relay.SpaceToDepthOp.name: _space_to_depth,
    relay.Resize2dOp.name: _resize2d,
    relay.SumOp.name: _reduction(np.sum, wide=True),
    relay.MeanOp.name: _reduction(np.mean, wide=True),
    relay.MaxOp.name: _reduction(_max, wide=False),
    relay.MinOp.name: _reduction(_min, wide=False),
    relay.ProdOp.name: _reduction(np.prod, wide=True),
    relay.EqualOp.name: _elementwise(np.equal),
    relay.NotEqualOp.name: _elementwise(np.not_equal),
    relay.LessOp.name: _elementwise(np.less),
    relay.LessEqualOp.name: _elementwise(np.less_equal),
    relay.GreaterOp.name: _elementwise(np.greater),
    relay.GreaterEqualOp.name: _elementwise(np.greater_equal),
    relay.LogicalAndOp.name: _elementwise(np.logical_and),
    relay.LogicalOrOp.name: _elementwise(np.logical_or),
    relay.LogicalXorOp.name: _elementwise(np.logical_xor),
    relay.LogicalNotOp.name: _elementwise(np.logical_not),
    relay.CumsumOp.name: _cumsum,
    relay.TriluOp.name: _trilu,
    relay.ModOp.name: _remainder(floored=False),
    relay.FloorModOp.name: _remainder(floored=True),
    relay.LeftShiftOp.name: _shift(left=True),
    relay.RightShiftOp.name: _shift(left=False),
    relay.ArgmaxOp.name: _arg_extreme(True),
    relay.ArgminOp.name: _arg_extreme(False),
    relay.ConstantOp.name: _constant,
    **QNN_REFERENCE,
}
"""numpy meaning of each relay op, by op name."""


class ReferenceInterpreter:
    """Runs functions of a relay module on numpy arrays."""

    def __init__(self, module: ModuleOp):
        self.functions = {
            op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)
        }

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run function `name` on `args`; returns its results."""
        function = self.functions.get(name)
        if function is None or not function.body.blocks:
            raise ByocError(f"error: no function @{name} with a body to run")
        return self.run_block(function.body.block, args)

    def run_block(self, block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run the ops of `block` with its arguments bound to `args`."""
        env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args))
        with np.errstate(all="ignore"):  # IEEE results, as compiled code gives
            for op in block.ops:
                inputs = [env[v] for v in op.operands]
                if isinstance(op, (func.ReturnOp, YieldOp)):
                    return inputs
                if isinstance(op, RegionOp):
                    outputs = self.run_block(op.body.block, inputs)
                elif isinstance(op, CallOp):
                    outputs = self.call(op.callee.root_reference.data, inputs)
                elif isinstance(op, func.CallOp):
                    outputs = self.call(op.callee.root_reference.data, inputs)
                else:
                    kernel = REFERENCE.get(op.name)
                    if kernel is None:
                        raise ByocError(
                            f"error: the reference interpreter has no meaning for "
                            f"'{op.name}'"
                        )
                    try:
                        outputs = [kernel(op, inputs)]
                    except ByocError as err:
                        raise _located(err, op) from None
                for result, value in zip(op.results, outputs, strict=True):
                    env[result] = _as_type(value, result.type)
        raise ByocError("error: block has no terminator")


def _located(err: ByocError, op: Operation) -> ByocError:
    """`err`, an op's refusal of its values (an index out of range), naming
    the op's place when it has one and the message does not."""
    from byoc.frontend.parse import location_of

    message = str(err)
    where = location_of(op)
    if where is None or not message.startswith("error:"):
        return err
    return ByocError(f"{where}: {message}")


def _as_type(value: np.ndarray, typ: Attribute) -> np.ndarray:
    """`value` with the dtype and shape of tensor type `typ`."""
    if isinstance(typ, TensorType):
        array = np.asarray(value, dtype=numpy_dtype(typ.element_type))
        return array.reshape(tuple(typ.get_shape()))
    return np.asarray(value)


def run_reference(
    module: ModuleOp, args: Sequence[np.ndarray], entry: str = "main"
) -> list[np.ndarray]:
    """Results of `entry` on `args`, computed with numpy."""
    return ReferenceInterpreter(module).call(entry, args)
