"""Converters of shape and data-movement ONNX operators, and of the nodes
that only name values (Constant, Identity, Dropout)."""


from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import (
    Converter,
    Node,
    shape_of,
)
from byoc.frontend.onnx.loader import (
    _onnx,
)

if TYPE_CHECKING:
    pass

Shape = tuple[int, ...]


def _identity(node: Node) -> SSAValue | None:
    if node.is_constant(0):
        node.graph.constants[node.outputs[0]] = node.graph.constants[node.inputs[0]]
        return None
    return node.value(0)


def _dropout(node: Node) -> SSAValue | None:
    if node.has(2) and bool(np.asarray(node.constant(2, "training_mode")).item()):
        raise node.error("training_mode=true is not supported (inference only)")
    node.only_first_output()
    return _identity(node)


def _constant(node: Node) -> None:
    onnx = _onnx()
    attrs = node.attributes
    if "value" in attrs:
        array = onnx.numpy_helper.to_array(attrs["value"])
    elif "value_float" in attrs:
        array = np.array(attrs["value_float"], np.float32)
    elif "value_floats" in attrs:
        array = np.array(attrs["value_floats"], np.float32)
    elif "value_int" in attrs:
        array = np.array(attrs["value_int"], np.int64)
    elif "value_ints" in attrs:
        array = np.array(attrs["value_ints"], np.int64)
    else:
        kinds = ", ".join(sorted(attrs)) or "none"
        raise node.error(f"only tensor, float and int values are supported (got {kinds})")
    node.graph.constants[node.outputs[0]] = array


def _flatten(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    rank = len(shape)
    axis = int(node.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    if axis == 1:
        return node.emit(relay.BatchFlattenOp(data))
    target = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    return node.emit(relay.ReshapeOp(data, target))


def _reshape(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    if node.graph.opset < 5:
        requested = [int(v) for v in node.ints("shape", []) or []]
    else:
        requested = [int(v) for v in np.asarray(node.constant(1, "the shape")).reshape(-1)]
    allowzero = bool(node.attr("allowzero", 0))
    out: list[int] = []
    infer = None
    for i, value in enumerate(requested):
        if value == 0 and not allowzero:
            if i >= len(shape):
                raise node.error(
                    f"shape {requested}: 0 at position {i} copies a dimension the "
                    f"input {list(shape)} does not have"
                )
            out.append(shape[i])
        elif value == -1:
            if infer is not None:
                raise node.error(f"shape {requested} has more than one -1")
            infer = i
            out.append(1)
        elif value < 0:
            raise node.error(f"shape {requested} has the invalid value {value}")
        else:
            out.append(value)
    total = math.prod(shape)
    if infer is not None:
        known = math.prod(d for i, d in enumerate(out) if i != infer)
        if known == 0 or total % known:
            raise node.error(
                f"shape {requested}: cannot infer the -1 for input {list(shape)}"
            )
        out[infer] = total // known
    if 0 in out:
        raise node.error(f"shape {out} has a zero-size dimension, which byoc does not support")
    if math.prod(out) != total:
        raise node.error(
            f"shape {requested} gives {out} ({math.prod(out)} elements) but the "
            f"input {list(shape)} has {total}"
        )
    return node.emit(relay.ReshapeOp(data, out))


def _transpose(node: Node) -> SSAValue:
    data = node.value(0)
    perm = node.ints("perm")
    if perm is None:
        perm = list(reversed(range(len(shape_of(data)))))
    return node.emit(relay.TransposeOp(data, perm))


def _concat(node: Node) -> SSAValue:
    values = [node.value(i) for i in range(len(node.inputs)) if node.has(i)]
    if "axis" not in node.attributes:
        raise node.error("the axis attribute is required")
    rank = len(shape_of(values[0]))
    axis = relay.normalize_axis(int(node.attr("axis")), rank, "Concat")
    return node.emit(relay.ConcatenateOp(values, axis=axis))


def _axes(node: Node, since: int) -> list[int] | None:
    """The `axes` of a node: an attribute before opset `since`, an input from it on."""
    if node.graph.opset < since:
        return node.ints("axes")
    if not node.has(1):
        return None
    return [int(v) for v in np.asarray(node.constant(1, "axes")).reshape(-1)]


def _unsqueeze(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    axes = _axes(node, 13)
    if not axes:
        raise node.error("axes are required")
    rank = len(shape) + len(axes)
    axes = sorted(relay.normalize_axes(axes, rank, "Unsqueeze", "axes"))
    if len(axes) == 1:
        return node.emit(relay.ExpandDimsOp(data, axes[0]))
    out = list(shape)
    for axis in axes:
        out.insert(axis, 1)
    return node.emit(relay.ReshapeOp(data, out))


def _squeeze(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    axes = _axes(node, 13)
    if axes is None:
        return node.emit(relay.SqueezeOp(data))
    axes = list(relay.normalize_axes(axes, len(shape), "Squeeze", "axes"))
    return node.emit(relay.SqueezeOp(data, axes))


def _gather(node: Node) -> SSAValue:
    data = node.value(0)
    axis = relay.normalize_axis(int(node.attr("axis", 0)), len(shape_of(data)), "Gather")
    # "fast": ONNX's indices are in [-n, n); the compiled code fails on others.
    return node.emit(relay.TakeOp(data, node.value(1), axis=axis, mode="fast"))


CONVERTERS: dict[str, Converter] = {
    "Gather": _gather,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Constant": _constant,
    "Identity": _identity,
    "Dropout": _dropout,
}
