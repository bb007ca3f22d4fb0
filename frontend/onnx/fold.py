"""Folding at import: ONNX nodes whose inputs are all known when the model is
imported are evaluated with numpy and never reach the relay IR.

This is how shape computation (`Shape -> Gather -> Concat -> Reshape`, the
`ConstantOfShape` that builds a weight, an index computed with `Range`) stays
out of the compiled model: relay values have static shapes, so every shape is
known at import, and so is everything computed from shapes and constants. The
results are numpy arrays of any dtype in `GraphImporter.constants`; they become
relay constants only where a runtime op reads them as data.

`FOLDERS` maps an ONNX op type to `(node, inputs) -> outputs`, with `inputs` the
numpy values of the node's inputs (None for an absent optional one). `Shape`
and `Size` read only their input's static shape, so they fold whatever it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from byoc.frontend.onnx.graph import Node
from byoc.frontend.onnx.loader import _onnx

Inputs = Sequence[np.ndarray | None]
Folder = Callable[[Node, Inputs], Sequence[np.ndarray]]

SHAPE_READERS = frozenset({"Shape", "Size"})
"""Op types that fold whatever their input is: they read only its static shape."""


def _first(x: np.ndarray | None, node: Node, what: str) -> np.ndarray:
    if x is None:
        raise node.error(f"{what} is missing")
    return x


def _ints(x: np.ndarray | None) -> list[int]:
    return [] if x is None else [int(v) for v in np.asarray(x).reshape(-1)]


def _scalar(x: np.ndarray) -> object:
    return np.asarray(x).reshape(-1)[0].item()


def _axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


# --- Shapes ------------------------------------------------------------------------


def _shape(node: Node, inputs: Inputs) -> list[np.ndarray]:
    shape = node.shape(0)
    rank = len(shape)
    start = int(node.attr("start", 0))
    end = node.attr("end")
    # Shape-15's start/end clamp to [0, rank] after counting negatives from the end.
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    return [np.array(shape[start:stop], np.int64)]


def _size(node: Node, inputs: Inputs) -> list[np.ndarray]:
    return [np.array(math.prod(node.shape(0)), np.int64)]


def _constant_of_shape(node: Node, inputs: Inputs) -> list[np.ndarray]:
    shape = _ints(_first(inputs[0], node, "the shape"))
    if any(d < 0 for d in shape):
        raise node.error(f"shape {shape} has a negative dimension")
    value = node.attributes.get("value")
    fill = (
        np.zeros(1, np.float32)
        if value is None
        else _onnx().numpy_helper.to_array(value).reshape(-1)
    )
    return [np.full(shape, fill[0], fill.dtype)]


def _range(node: Node, inputs: Inputs) -> list[np.ndarray]:
    start, limit, delta = (_first(x, node, "an input") for x in inputs[:3])
    if _scalar(delta) == 0:
        raise node.error("delta is 0")
    count = max(math.ceil((_scalar(limit) - _scalar(start)) / _scalar(delta)), 0)
    # start + i * delta in the inputs' dtype, as the ONNX definition writes it.
    steps = np.arange(count, dtype=start.dtype)
    return [(start.reshape(()) + steps * delta.reshape(())).astype(start.dtype)]


def _cast(node: Node, inputs: Inputs) -> list[np.ndarray]:
    onnx = _onnx()
    to = node.attr("to")
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(int(to))
    except Exception:
        raise node.error(f"cannot cast to ONNX type {to}") from None
    return [_as_dtype(_first(inputs[0], node, "the input"), dtype)]


def _cast_like(node: Node, inputs: Inputs) -> list[np.ndarray]:
    like = _first(inputs[1], node, "target_type")
    return [_as_dtype(_first(inputs[0], node, "the input"), like.dtype)]


def _as_dtype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if x.dtype.kind == "f" and np.dtype(dtype).kind in "iub":
        # C's conversion truncates toward zero (numpy's too; NaN/inf are UB).
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(dtype)
    return x.astype(dtype)


# --- Data movement -------------------------------------------------------------------


def _gather(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data, indices = inputs[0], inputs[1]
    assert data is not None and indices is not None
    axis = _axis(node, int(node.attr("axis", 0)), data.ndim)
    size = data.shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise node.error(
            f"an index of {indices.reshape(-1).tolist()[:8]} is out of range for "
            f"axis {axis} of size {size}"
        )
    return [np.take(data, indices.astype(np.int64), axis=axis)]


def _slice(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    if node.graph.opset < 10:
        starts, ends = node.ints("starts", []), node.ints("ends", [])
        axes = node.ints("axes")
        steps = None
    else:
        starts, ends = _ints(inputs[1]), _ints(inputs[2])
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
        steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else None
    assert starts is not None and ends is not None
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps must have one value per axis")
    index: list[slice] = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise node.error("a step is 0")
        # Python's slices clamp exactly as ONNX's Slice does.
        index[_axis(node, axis, data.ndim)] = slice(start, end, step)
    return [data[tuple(index)]]


def _concat(node: Node, inputs: Inputs) -> list[np.ndarray]:
    arrays = [x for x in inputs if x is not None]
    axis = _axis(node, int(node.attr("axis", 0)), arrays[0].ndim)
    return [np.concatenate(arrays, axis=axis)]


def _axes_of(node: Node, inputs: Inputs, since: int) -> list[int] | None:
    if node.graph.opset < since:
        return node.ints("axes")
    if len(inputs) < 2 or inputs[1] is None:
        return None
    return _ints(inputs[1])


def _unsqueeze(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    axes = _axes_of(node, inputs, 13) or []
    rank = data.ndim + len(axes)
    normalized = sorted(_axis(node, a, rank) for a in axes)
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} repeat an axis")
    out = data
    for axis in normalized:
        out = np.expand_dims(out, axis)
    return [out]


def _squeeze(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    axes = _axes_of(node, inputs, 13)
    if axes is None:
        return [np.squeeze(data)]
    normalized = tuple(_axis(node, a, data.ndim) for a in axes)
    if any(data.shape[a] != 1 for a in normalized):
        raise node.error(f"cannot squeeze axes {axes} of shape {list(data.shape)}")
    return [np.squeeze(data, axis=normalized)]


def _reshape(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    if node.graph.opset < 5:
        requested = node.ints("shape", []) or []
    else:
        requested = _ints(inputs[1])
    allowzero = bool(node.attr("allowzero", 0))
    shape = [
        data.shape[i] if v == 0 and not allowzero and i < data.ndim else v
        for i, v in enumerate(requested)
    ]
    try:
        return [data.reshape(shape)]
    except ValueError:
        raise node.error(
            f"cannot reshape {list(data.shape)} to {requested}"
        ) from None


def _flatten(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    axis = int(node.attr("axis", 1))
    axis = axis + data.ndim if axis < 0 else axis
    return [data.reshape(math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))]


def _transpose(node: Node, inputs: Inputs) -> list[np.ndarray]:
    return [np.transpose(_first(inputs[0], node, "data"), node.ints("perm"))]


def _expand(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    shape = _ints(inputs[1])
    try:
        target = np.broadcast_shapes(data.shape, tuple(shape))
    except ValueError:
        raise node.error(f"shape {shape} does not broadcast with {list(data.shape)}") from None
    return [np.broadcast_to(data, target).copy()]


def _tile(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    repeats = _ints(inputs[1])
    if len(repeats) != data.ndim or any(r < 0 for r in repeats):
        raise node.error(f"repeats {repeats} must be {data.ndim} non-negative values")
    return [np.tile(data, repeats)]


def _split(node: Node, inputs: Inputs) -> list[np.ndarray]:
    data = _first(inputs[0], node, "data")
    axis = _axis(node, int(node.attr("axis", 0)), data.ndim)
    sizes = split_sizes(node, data.shape[axis])
    offsets = np.cumsum(sizes)[:-1]
    return list(np.split(data, offsets, axis=axis))


def split_sizes(node: Node, length: int) -> list[int]:
    """The sizes of Split's outputs along its axis of size `length`."""
    count = len(node.outputs)
    if node.graph.opset < 13:
        sizes = node.ints("split")
    elif node.has(1):
        sizes = _ints(node.constant(1, "split"))
    else:
        sizes = None
    if sizes is None:
        parts = int(node.attr("num_outputs", count))
        if parts < 1:
            raise node.error(f"num_outputs {parts} must be positive")
        chunk = -(-length // parts)  # ONNX-18: the last chunk may be smaller
        sizes = [min(chunk, max(length - i * chunk, 0)) for i in range(parts)]
    if len(sizes) != count or sum(sizes) != length or any(s < 0 for s in sizes):
        raise node.error(
            f"split sizes {sizes} must be {count} non-negative values adding up to "
            f"the axis size {length}"
        )
    return sizes


def _identity(node: Node, inputs: Inputs) -> list[np.ndarray]:
    return [_first(inputs[0], node, "the input")]


def _nonzero(node: Node, inputs: Inputs) -> list[np.ndarray]:
    return [np.array(np.nonzero(_first(inputs[0], node, "the input")), np.int64)]


# --- Arithmetic, comparisons, logic --------------------------------------------------


def _elementwise(fn: Callable[..., np.ndarray]) -> Folder:
    def fold(node: Node, inputs: Inputs) -> list[np.ndarray]:
        arrays = [_first(x, node, "an input") for x in inputs]
        out = np.asarray(fn(*arrays))
        # numpy promotes mixed operands; ONNX keeps the first input's type
        # (comparisons give bool).
        if out.dtype != np.bool_ or arrays[0].dtype == np.bool_:
            out = out.astype(arrays[0].dtype, copy=False)
        return [out]

    return fold


def _compare(fn: Callable[..., np.ndarray]) -> Folder:
    def fold(node: Node, inputs: Inputs) -> list[np.ndarray]:
        a, b = (_first(x, node, "an input") for x in inputs[:2])
        return [np.asarray(fn(a, b), np.bool_)]

    return fold


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        if (b == 0).any():
            raise ZeroDivisionError("integer division by zero")
        # C's integer division truncates toward zero.
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient)
    return np.divide(a, b)


def _mod(node: Node, inputs: Inputs) -> list[np.ndarray]:
    a, b = (_first(x, node, "an input") for x in inputs[:2])
    if a.dtype.kind in "iu" and (b == 0).any():
        raise node.error("integer modulo by zero")
    fn = np.fmod if node.attr("fmod", 0) else np.mod
    return [np.asarray(fn(a, b)).astype(a.dtype)]


def _variadic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Folder:
    def fold(node: Node, inputs: Inputs) -> list[np.ndarray]:
        arrays = [x for x in inputs if x is not None]
        out = arrays[0]
        for x in arrays[1:]:
            out = fn(out, x)
        return [np.asarray(out).astype(arrays[0].dtype, copy=False)]

    return fold


def _mean(node: Node, inputs: Inputs) -> list[np.ndarray]:
    arrays = [x for x in inputs if x is not None]
    total = _variadic(np.add)(node, arrays)[0]
    return [(total / len(arrays)).astype(arrays[0].dtype)]


def _where(node: Node, inputs: Inputs) -> list[np.ndarray]:
    condition, x, y = (_first(v, node, "an input") for v in inputs[:3])
    return [np.where(condition.astype(bool), x, y).astype(x.dtype)]


def _reduce(fn: Callable[..., np.ndarray], axes_input_since: int) -> Folder:
    def fold(node: Node, inputs: Inputs) -> list[np.ndarray]:
        data = _first(inputs[0], node, "data")
        axes = _axes_of(node, inputs, axes_input_since)
        keepdims = bool(node.attr("keepdims", 1))
        if not axes:
            if node.attr("noop_with_empty_axes", 0):
                return [data]
            axes = list(range(data.ndim))
        normalized = tuple(_axis(node, a, data.ndim) for a in axes)
        # Float sums and products round once, at the end, as the reference does.
        wide = data.astype(np.float64) if data.dtype.kind == "f" else data
        out = fn(wide, axis=normalized, keepdims=keepdims)
        return [np.asarray(out).astype(data.dtype, copy=False)]

    return fold


def _clip(node: Node, inputs: Inputs) -> list[np.ndarray]:
    x = _first(inputs[0], node, "the input")
    if node.graph.opset < 11:
        low, high = node.attr("min"), node.attr("max")
    else:
        low = None if len(inputs) < 2 or inputs[1] is None else _scalar(inputs[1])
        high = None if len(inputs) < 3 or inputs[2] is None else _scalar(inputs[2])
    out = x
    if low is not None:
        out = np.maximum(out, low)
    if high is not None:
        out = np.minimum(out, high)
    return [np.asarray(out).astype(x.dtype)]


def _float_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Folder:
    return _elementwise(fn)


FOLDERS: dict[str, Folder] = {
    "Shape": _shape,
    "Size": _size,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Gather": _gather,
    "Slice": _slice,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Expand": _expand,
    "Tile": _tile,
    "Split": _split,
    "Identity": _identity,
    "NonZero": _nonzero,
    "Add": _elementwise(np.add),
    "Sub": _elementwise(np.subtract),
    "Mul": _elementwise(np.multiply),
    "Div": _elementwise(_div),
    "Mod": _mod,
    "Pow": _elementwise(np.power),
    "Neg": _elementwise(np.negative),
    "Abs": _elementwise(np.abs),
    "Sign": _elementwise(np.sign),
    "Sqrt": _float_unary(np.sqrt),
    "Exp": _float_unary(np.exp),
    "Log": _float_unary(np.log),
    "Floor": _float_unary(np.floor),
    "Ceil": _float_unary(np.ceil),
    "Round": _float_unary(np.round),  # numpy rounds half to even, as ONNX
    "Reciprocal": _float_unary(np.reciprocal),
    "Relu": _elementwise(lambda x: np.maximum(x, 0)),
    "Clip": _clip,
    "Max": _variadic(np.maximum),
    "Min": _variadic(np.minimum),
    "Sum": _variadic(np.add),
    "Mean": _mean,
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "LessOrEqual": _compare(np.less_equal),
    "Greater": _compare(np.greater),
    "GreaterOrEqual": _compare(np.greater_equal),
    "Not": _elementwise(np.logical_not),
    "And": _elementwise(np.logical_and),
    "Or": _elementwise(np.logical_or),
    "Xor": _elementwise(np.logical_xor),
    "Where": _where,
    "ReduceSum": _reduce(np.sum, 13),
    "ReduceProd": _reduce(np.prod, 18),
    "ReduceMin": _reduce(np.min, 18),
    "ReduceMax": _reduce(np.max, 18),
    "ReduceMean": _reduce(np.mean, 18),
}
"""ONNX op type -> its numpy evaluation on inputs known at import."""


def fold(node: Node) -> list[np.ndarray] | None:
    """`node`'s outputs if it can be evaluated at import, else None.

    It can when its op type has a folder and every input it is given is known
    (`Shape` and `Size`: whatever their input)."""
    folder = FOLDERS.get(node.op_type)
    if folder is None:
        return None
    constants = node.graph.constants
    if node.op_type in SHAPE_READERS:
        inputs: list[np.ndarray | None] = []
    else:
        if not all(name in constants for name in node.inputs if name):
            return None
        inputs = [constants[name] if name else None for name in node.inputs]
    try:
        with np.errstate(all="ignore"):  # IEEE results, as compiled code gives
            outputs = folder(node, inputs)
    except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError) as err:
        raise node.error(f"cannot evaluate at import: {err}") from None
    return [np.asarray(x) for x in outputs]


def folding_nodes(model: object) -> set[int]:
    """Indices of the nodes of `model`'s graph that `fold` will evaluate at
    import, found without evaluating anything: those with a folder whose inputs
    all come from initializers, `Constant` nodes or other folding nodes."""
    graph = model.graph  # type: ignore[attr-defined]
    known = {tensor.name for tensor in graph.initializer}
    found: set[int] = set()
    for index, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant":
            known.update(node.output)
        elif node.op_type in FOLDERS and (
            node.op_type in SHAPE_READERS
            or all(name in known for name in node.input if name)
        ):
            found.add(index)
            known.update(node.output)
    return found
