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
    _onnx_type_name,
)

if TYPE_CHECKING:
    pass

Shape = tuple[int, ...]


def _identity(node: Node) -> SSAValue | None:
    if node.is_constant(0):
        node.graph.constants[node.outputs[0]] = node.graph.constants[node.inputs[0]]
        return None
    return node.value(0)


def _dropout(node: Node) -> SSAValue | list[SSAValue] | None:
    if node.has(2) and bool(np.asarray(node.constant(2, "training_mode")).item()):
        raise node.error("training_mode=true is not supported (inference only)")
    mask = node.outputs[1] if len(node.outputs) > 1 else ""
    if not mask or mask not in node.graph.used:
        return _identity(node)
    # Inference keeps every element: the mask is all true.
    true = node.emit(relay.ConstantOp.from_numpy(np.array(True)))
    return [node.value(0), node.emit(relay.BroadcastToOp(true, node.shape(0)))]


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


def _gather_elements(node: Node) -> SSAValue:
    data = node.value(0)
    axis = relay.normalize_axis(int(node.attr("axis", 0)), len(shape_of(data)), "GatherElements")
    return node.emit(relay.GatherOp(data, node.value(1), axis=axis))


def _constant_ints(node: Node, i: int, what: str) -> list[int]:
    return [int(v) for v in np.asarray(node.constant(i, what)).reshape(-1)]


def _one_int(node: Node, i: int, what: str) -> int:
    values = _constant_ints(node, i, what)
    if len(values) != 1:
        raise node.error(f"input {i} ({what}) must hold one integer, got {len(values)}")
    return values[0]


def _cumsum(node: Node) -> SSAValue:
    data = node.value(0)
    rank = len(shape_of(data))
    if rank == 0:
        raise node.error("input 0 must have at least one dimension")
    axis = relay.normalize_axis(_one_int(node, 1, "axis"), rank, "CumSum")
    return node.emit(
        relay.CumsumOp(
            data,
            axis=axis,
            exclusive=bool(int(node.attr("exclusive", 0))),
            reverse=bool(int(node.attr("reverse", 0))),
        )
    )


def _trilu(node: Node) -> SSAValue:
    k = _one_int(node, 1, "k") if node.has(1) else 0
    return node.emit(relay.TriluOp(node.value(0), k=k, upper=bool(int(node.attr("upper", 1)))))


def _slice(node: Node) -> SSAValue:
    data = node.value(0)
    rank = len(shape_of(data))
    if node.graph.opset < 10:
        starts, ends = node.ints("starts", []) or [], node.ints("ends", []) or []
        axes = node.ints("axes")
        steps = None
    else:
        starts = _constant_ints(node, 1, "starts")
        ends = _constant_ints(node, 2, "ends")
        axes = _constant_ints(node, 3, "axes") if node.has(3) else None
        steps = _constant_ints(node, 4, "steps") if node.has(4) else None
    if axes is None:
        axes = list(range(len(starts)))
    axes = list(relay.normalize_axes(axes, rank, "Slice", "axes"))
    return node.emit(relay.StridedSliceOp(data, starts, ends, steps, axes))


def _split(node: Node) -> list[SSAValue]:
    from byoc.frontend.onnx.fold import split_sizes

    data = node.value(0)
    shape = shape_of(data)
    axis = relay.normalize_axis(int(node.attr("axis", 0)), len(shape), "Split")
    values = []
    offset = 0
    for size in split_sizes(node, shape[axis]):
        values.append(
            node.emit(relay.StridedSliceOp(data, [offset], [offset + size], [1], [axis]))
        )
        offset += size
    return values


def _tile(node: Node) -> SSAValue:
    data = node.value(0)
    reps = _constant_ints(node, 1, "repeats")
    if len(reps) != len(shape_of(data)):
        raise node.error(f"repeats {reps} must have one value per dimension of the input")
    return node.emit(relay.TileOp(data, reps))


def _expand(node: Node) -> SSAValue:
    data = node.value(0)
    requested = _constant_ints(node, 1, "the shape")
    try:
        target = np.broadcast_shapes(shape_of(data), tuple(requested))
    except ValueError:
        raise node.error(
            f"shape {requested} does not broadcast with the input {list(shape_of(data))}"
        ) from None
    if tuple(target) == shape_of(data):
        return data
    return node.emit(relay.BroadcastToOp(data, target))


def _pad(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    rank = len(shape)
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise node.error(f'mode "{mode}" is not supported (constant, reflect, edge)')
    if node.graph.opset < 11:
        pads = node.ints("pads", []) or node.ints("paddings", []) or []
        value = float(node.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = _constant_ints(node, 1, "pads")
        value = 0.0
        if node.has(2):
            value = np.asarray(node.constant(2, "constant_value")).reshape(-1)[0].item()
        axes = (
            list(relay.normalize_axes(_constant_ints(node, 3, "axes"), rank, "Pad", "axes"))
            if node.has(3)
            else list(range(rank))
        )
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} must have two values per padded axis ({len(axes)})")
    before = [0] * rank
    after = [0] * rank
    for k, axis in enumerate(axes):
        before[axis], after[axis] = pads[k], pads[len(axes) + k]
    if any(p < 0 for p in before + after):
        # Negative pads crop: slice them off first.
        begin = [max(-p, 0) for p in before]
        end = [shape[a] - max(-after[a], 0) for a in range(rank)]
        data = node.emit(relay.StridedSliceOp(data, begin, end, None, list(range(rank))))
        before = [max(p, 0) for p in before]
        after = [max(p, 0) for p in after]
    if not any(before + after):
        return data
    width = [p for pair in zip(before, after) for p in pair]
    return node.emit(relay.PadOp(data, width, float(value), mode))


def _where(node: Node) -> SSAValue:
    return node.emit(relay.WhereOp(node.value(0), node.value(1), node.value(2)))


_CAST_NAMES = {
    10: "float16",
    1: "float32",
    11: "float64",
    9: "bool",
    3: "int8",
    2: "uint8",
    5: "int16",
    6: "int32",
    7: "int64",
    4: "uint16",
    12: "uint32",
    13: "uint64",
}
"""ONNX element types -> relay.cast's dtype names."""


def _cast_to(node: Node, data: SSAValue, to: int) -> SSAValue:
    name = _CAST_NAMES.get(to)
    if name is None:
        raise node.error(f"casting to {_onnx_type_name(to)} is not supported")
    if relay.CAST_DTYPES[name] == data.type.element_type:  # type: ignore[attr-defined]
        return data
    return node.emit(relay.CastOp(data, name))


def _cast(node: Node) -> SSAValue:
    return _cast_to(node, node.value(0), int(node.attr("to")))


def _cast_like(node: Node) -> SSAValue:
    onnx = _onnx()
    target = node.value(1).type.element_type  # type: ignore[attr-defined]
    for to, name in _CAST_NAMES.items():
        if relay.CAST_DTYPES[name] == target:
            return _cast_to(node, node.value(0), to)
    raise node.error(f"casting to {target} is not supported")  # pragma: no cover
    del onnx


def _depth_to_space(node: Node) -> SSAValue:
    mode = node.attr("mode", "DCR")
    return node.emit(
        relay.DepthToSpaceOp(node.value(0), int(node.attr("blocksize")), mode=mode)
    )


def _space_to_depth(node: Node) -> SSAValue:
    mode = node.attr("mode", "DCR")
    return node.emit(
        relay.SpaceToDepthOp(node.value(0), int(node.attr("blocksize")), mode=mode)
    )


_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}


def _resize(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    rank = len(shape)
    opset = node.graph.opset
    mode = node.attr("mode", "nearest")
    method = _RESIZE_METHODS.get(mode)
    if method is None:
        raise node.error(f'mode "{mode}" is not supported (nearest, linear, cubic)')
    if node.op_type == "Upsample" or opset < 11:
        # Upsample and Resize-10: scales only, asymmetric coordinates; nearest
        # floors (and, as onnxruntime, ceils when shrinking).
        if node.op_type == "Upsample" and opset < 9:
            scales = [float(v) for v in node.attributes.get("scales", [])]
        else:
            scales = [float(v) for v in np.asarray(node.constant(1, "scales")).reshape(-1)]
        axes = list(range(rank))
        sizes = None
        coordinates = "asymmetric"
        shrinking = [s < 1 for s, d in zip(scales, shape) if s != 1]
        rounding = "ceil" if shrinking and all(shrinking) else "floor"
        roi_values = None
        options: dict[str, object] = {}
    else:
        if node.attr("antialias", 0):
            raise node.error("antialias is not supported")
        axes = node.ints("axes") or list(range(rank))
        axes = list(relay.normalize_axes(axes, rank, "Resize", "axes"))
        scales = sizes = None
        if node.has(3):
            sizes = _constant_ints(node, 3, "sizes")
        elif node.has(2) and np.asarray(node.constant(2, "scales")).size:
            scales = [float(v) for v in np.asarray(node.constant(2, "scales")).reshape(-1)]
        else:
            raise node.error("needs scales or sizes")
        coordinates = node.attr("coordinate_transformation_mode", "half_pixel")
        rounding = node.attr("nearest_mode", "round_prefer_floor")
        roi_values = (
            [float(v) for v in np.asarray(node.constant(1, "roi")).reshape(-1)]
            if node.has(1) and coordinates == "tf_crop_and_resize"
            else None
        )
        options = {
            "cubic_alpha": float(node.attr("cubic_coeff_a", -0.75)),
            "cubic_exclude": int(node.attr("exclude_outside", 0)),
            "extrapolation_value": float(node.attr("extrapolation_value", 0.0)),
        }
    count = len(axes)
    if sizes is not None:
        if len(sizes) != count:
            raise node.error(f"sizes {sizes} must have one value per axis ({count})")
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        factors = [sizes[k] / shape[a] for k, a in enumerate(axes)]
        if policy in ("not_larger", "not_smaller"):
            pick = min if policy == "not_larger" else max
            common = pick(factors)
            factors = [common] * count
            sizes = [int(np.round(common * shape[a])) for a in axes]
        elif policy != "stretch":
            raise node.error(f'keep_aspect_ratio_policy "{policy}" is not supported')
    else:
        assert scales is not None
        if len(scales) != count:
            raise node.error(f"scales {scales} must have one value per axis ({count})")
        factors = scales
        sizes = [int(shape[a] * s) for a, s in zip(axes, scales)]
    out = list(shape)
    scale_of = [1.0] * rank
    for k, axis in enumerate(axes):
        out[axis] = sizes[k]
        scale_of[axis] = float(factors[k])
    resized = [a for a in range(rank) if out[a] != shape[a] or scale_of[a] != 1.0]
    if coordinates == "tf_crop_and_resize" and roi_values is not None:
        # A roi that is not the whole image crops even an axis that keeps its size.
        whole = [0.0] * count + [1.0] * count
        resized = sorted(set(resized) | {axes[k] for k in range(count) if roi_values[k] != whole[k] or roi_values[count + k] != whole[count + k]})
    if not resized:
        return data
    if resized[0] < rank - 2 or rank < 2:
        raise node.error(
            f"only the last two axes can be resized (input {list(shape)}, output {out})"
        )
    if any(out[a] < 1 for a in range(rank)):
        raise node.error(f"the output shape {out} has an empty axis")
    # As NCHW: the last two axes are H and W, the one before C, the rest N.
    padded = (1,) * (4 - rank) + tuple(shape)
    four_d = (int(np.prod(padded[:-3], dtype=np.int64)), *padded[-3:])
    image = data
    if tuple(shape) != four_d:
        image = node.emit(relay.ReshapeOp(data, four_d))
    roi = None
    if coordinates == "tf_crop_and_resize":
        if roi_values is None:
            raise node.error("tf_crop_and_resize needs a roi")
        starts, ends = roi_values[:count], roi_values[count:]
        start_of = {a: starts[k] for k, a in enumerate(axes)}
        end_of = {a: ends[k] for k, a in enumerate(axes)}
        roi = [start_of.get(rank - 2, 0.0), start_of.get(rank - 1, 0.0), end_of.get(rank - 2, 1.0), end_of.get(rank - 1, 1.0)]
    resized_image = node.emit(
        relay.Resize2dOp(
            image,
            (out[-2], out[-1]),
            method=method,
            coordinate_transformation_mode=coordinates,
            rounding_method=rounding if method == "nearest_neighbor" else "",
            roi=roi,
            scale=(scale_of[-2], scale_of[-1]),
            **options,  # type: ignore[arg-type]
        )
    )
    if tuple(out) == (*four_d[:2], out[-2], out[-1]):
        return resized_image
    return node.emit(relay.ReshapeOp(resized_image, out))


CONVERTERS: dict[str, Converter] = {
    "Slice": _slice,
    "Split": _split,
    "Tile": _tile,
    "Expand": _expand,
    "Pad": _pad,
    "Where": _where,
    "Cast": _cast,
    "CastLike": _cast_like,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "Resize": _resize,
    "Upsample": _resize,
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "CumSum": _cumsum,
    "Trilu": _trilu,
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
