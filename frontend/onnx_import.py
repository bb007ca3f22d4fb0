"""Importing ONNX models: `from_onnx` turns an ONNX graph into relay IR, built
through the Python API (never through text), with `@main` taking the graph
inputs and returning the graph outputs.

Shapes must be static (`input_shapes` can pin dynamic dimensions); only float32
tensors are imported; initializers and `Constant` nodes become `relay.constant`
when they are used as data and stay numpy arrays when they are read at import
time (Reshape's shape, Unsqueeze's axes, ...). Every op made for ONNX node `i`
(0-based) gets the location `<model>:<i+1>:1`, so later diagnostics point at the
node, and each result is named after the ONNX tensor it computes.

`import onnx` happens on the first call, so byoc itself works without onnx.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FunctionType,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import relay
from byoc.frontend.diagnostics import ByocError

if TYPE_CHECKING:
    import onnx

Shape = tuple[int, ...]


def _onnx() -> Any:
    """The onnx package, imported on first use."""
    try:
        import onnx
    except ImportError:
        raise ByocError(
            "error: importing ONNX models needs the onnx package "
            "(pip install 'byoc[onnx]')"
        ) from None
    return onnx


def is_onnx_source(source: object) -> bool:
    """Whether `source` is an ONNX model: a `.onnx` path or an `onnx.ModelProto`."""
    if isinstance(source, (str, Path)):
        return str(source).lower().endswith(".onnx") and "\n" not in str(source)
    onnx = sys.modules.get("onnx")  # a ModelProto exists only if onnx is loaded
    return onnx is not None and isinstance(source, onnx.ModelProto)


# --- Loading -------------------------------------------------------------------


def load_model(source: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """The ModelProto of `source` and the name to use in messages."""
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source, "<onnx model>"
    if not isinstance(source, (str, Path)):
        raise ByocError(
            f"error: cannot import a {type(source).__name__} as ONNX; pass a path "
            "or an onnx.ModelProto"
        )
    name = str(source)
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ByocError(
            f"error: {name}: cannot read the file: {err.strerror or err}"
        ) from None
    try:
        model = onnx.load_from_string(data)
    except Exception as err:  # protobuf's DecodeError, and anything odd it raises
        raise ByocError(
            f"error: {name}: not an ONNX model, or a truncated one (cannot decode "
            f"the protobuf: {err})"
        ) from None
    _load_external_data(model, path, name)
    return model, name


def _load_external_data(model: onnx.ModelProto, path: Path, name: str) -> None:
    """Read tensors stored next to the model (`onnx.save(..., save_as_external_data=True)`)."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if not any(uses_external_data(t) for t in model.graph.initializer):
        return
    try:
        load_external_data_for_model(model, str(path.parent))
    except Exception as err:
        raise ByocError(
            f"error: {name}: cannot read the model's external weights: {err}"
        ) from None


def _check_model(model: onnx.ModelProto, name: str) -> None:
    """Reject what decodes as protobuf but is no model (a truncated or foreign file).

    Not `onnx.checker`: it refuses models onnxruntime runs (graph outputs
    without a shape, for one); the strict shape inference that follows checks
    types and shapes node by node.
    """
    graph = model.graph
    if model.ir_version <= 0 or not model.HasField("graph") or not graph.output:
        raise ByocError(
            f"error: {name}: not an ONNX model, or a truncated one (no IR version, "
            "graph or graph outputs)"
        )
    if not any(e.domain in ("", "ai.onnx") for e in model.opset_import):
        raise ByocError(
            f"error: {name}: the model imports no ai.onnx operator set (a truncated "
            "file?)"
        )
    for index, node in enumerate(graph.node):
        if not node.op_type:
            raise ByocError(f"error: {name}: node #{index} has no op type")


def default_opset(model: onnx.ModelProto) -> int:
    """The version of the default (`ai.onnx`) operator set the model imports."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


# --- Shapes and types ------------------------------------------------------------


def _dims(type_proto: Any) -> list[int | str | None] | None:
    """The dimensions of a tensor type: ints, dim_param names, or None (unknown)."""
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(dim.dim_value)
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return dims


def _dtype_name(elem_type: int) -> str:
    onnx = _onnx()
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except Exception:
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def _pin_input_shapes(
    model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]], name: str
) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs in `shapes` have those static shapes."""
    onnx = _onnx()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    by_name = {i.name: i for i in model.graph.input}
    for input_name, shape in shapes.items():
        value = by_name.get(input_name)
        if value is None:
            raise ByocError(
                f"error: {name}: input_shapes names '{input_name}', which is not a "
                f"graph input (inputs: {', '.join(sorted(by_name)) or 'none'})"
            )
        dims = value.type.tensor_type.shape
        dims.ClearField("dim")
        for size in shape:
            dims.dim.add().dim_value = int(size)
    # Stale shapes of intermediate values would conflict with the pinned ones.
    del model.graph.value_info[:]
    return model


def _infer_shapes(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    onnx = _onnx()
    try:
        return onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=True, data_prop=True
        )
    except Exception as err:
        message = str(err).strip()
        raise ByocError(f"error: {name}: ONNX shape inference failed: {message}") from None


# --- The conversion --------------------------------------------------------------


class Node:
    """One ONNX node being converted: its inputs, attributes and error wording."""

    def __init__(self, graph: GraphImporter, proto: onnx.NodeProto, index: int):
        onnx = _onnx()
        self.graph = graph
        self.proto = proto
        self.index = index
        self.op_type = proto.op_type
        self.name = proto.name
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attributes: dict[str, Any] = {
            a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute
        }
        self.check_shapes = True

    @property
    def label(self) -> str:
        """`'conv_9' (Conv)`; unnamed nodes by their position."""
        name = f"'{self.name}'" if self.name else f"#{self.index}"
        return f"{name} ({self.op_type})"

    def error(self, message: str) -> ByocError:
        return ByocError(f"error: {self.graph.filename}: node {self.label}: {message}")

    # Attributes

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attributes.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.attributes.get(name)
        if value is None:
            return None if default is None else list(default)
        return [int(v) for v in value]

    # Inputs

    def has(self, i: int) -> bool:
        """Whether optional input `i` is given."""
        return i < len(self.inputs) and self.inputs[i] != ""

    def value(self, i: int) -> SSAValue:
        """Input `i` as a float32 relay value."""
        if not self.has(i):
            raise self.error(f"input {i} is missing")
        return self.graph.value(self.inputs[i], self)

    def constant(self, i: int, what: str) -> np.ndarray:
        """Input `i`, which must be known at import time (an initializer or Constant)."""
        array = self.graph.constants.get(self.inputs[i]) if self.has(i) else None
        if array is None:
            raise self.error(
                f"{what} (input {i}, '{self.inputs[i] if self.has(i) else ''}') must "
                "be a constant: an initializer or the output of a Constant node"
            )
        return array

    def optional_constant(self, i: int, what: str) -> np.ndarray | None:
        return self.constant(i, what) if self.has(i) else None

    def is_constant(self, i: int) -> bool:
        return self.has(i) and self.inputs[i] in self.graph.constants

    def shape(self, i: int) -> Shape:
        """The static shape of input `i`."""
        if self.is_constant(i):
            return tuple(self.graph.constants[self.inputs[i]].shape)
        return shape_of(self.value(i))

    def only_first_output(self) -> None:
        """Reject nodes whose optional extra outputs are used."""
        extra = [o for o in self.outputs[1:] if o]
        if extra:
            raise self.error(
                f"only the first output is supported; the node also produces "
                f"{', '.join(repr(o) for o in extra)}"
            )

    # Building

    def emit(self, op: Operation) -> SSAValue:
        return self.graph.emit(op)

    def const(self, array: np.ndarray | float, name: str | None = None) -> SSAValue:
        """A new float32 relay.constant (named `name`, e.g. a transposed initializer)."""
        value = self.graph.emit(
            relay.ConstantOp.from_numpy(np.asarray(array, np.float32))
        )
        if name:
            set_name(value, name)
        return value


def shape_of(value: SSAValue) -> Shape:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


Converter = Callable[[Node], Sequence[SSAValue] | SSAValue | None]


class GraphImporter:
    """Builds `@main` from one ONNX graph, node by node in graph order."""

    def __init__(self, model: onnx.ModelProto, filename: str):
        self.model = model
        self.filename = filename
        self.opset = default_opset(model)
        self.values: dict[str, SSAValue] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.materialized: dict[str, SSAValue] = {}
        self.block = Block()
        self.location: FileLineColLoc | None = None
        self.file_attr = StringAttr(filename)
        self.inferred: dict[str, list[int | str | None] | None] = {}

    # Values

    def emit(self, op: Operation) -> SSAValue:
        if self.location is not None:
            op.location = self.location
        self.block.add_op(op)
        return op.results[0]

    def value(self, name: str, node: Node | None) -> SSAValue:
        """The relay value of ONNX tensor `name` (constants become relay.constant once)."""
        value = self.values.get(name)
        if value is None:
            value = self.materialized.get(name)
        if value is not None:
            return value
        array = self.constants.get(name)
        if array is None:
            where = f"node {node.label}" if node else "the graph"
            raise ByocError(
                f"error: {self.filename}: {where} uses '{name}', which no node, "
                "input or initializer defines"
            )
        if array.dtype != np.float32:
            what = f"node {node.label}: " if node else ""
            raise ByocError(
                f"error: {self.filename}: {what}tensor '{name}' is {array.dtype}; "
                "byoc imports only float32 tensors as data"
            )
        value = self.emit(relay.ConstantOp.from_numpy(array))
        set_name(value, name)
        self.materialized[name] = value
        return value

    # The graph

    def run(self) -> ModuleOp:
        graph = self.model.graph
        for value_info in (*graph.input, *graph.value_info, *graph.output):
            self.inferred[value_info.name] = _dims(value_info.type)
        for tensor in graph.initializer:
            self.constants[tensor.name] = _to_numpy(tensor, self.filename)

        arg_types = []
        inputs = [i for i in graph.input if i.name not in self.constants]
        for value_info in inputs:
            arg_types.append(self._input_type(value_info))
        self.block = Block(arg_types=arg_types)
        for value_info, arg in zip(inputs, self.block.args):
            self.values[value_info.name] = arg
            set_name(arg, value_info.name)

        for index, proto in enumerate(graph.node):
            node = Node(self, proto, index)
            self.location = FileLineColLoc(self.file_attr, IntAttr(index + 1), IntAttr(1))
            self._convert(node)
        self.location = None

        results = []
        for value_info in graph.output:
            self._check_float(value_info, "output")
            results.append(self.value(value_info.name, None))
        self.block.add_op(func.ReturnOp(*results))
        main = func.FuncOp(
            "main",
            FunctionType.from_lists(arg_types, [v.type for v in results]),
            Region(self.block),
        )
        return ModuleOp([main])

    def _check_float(self, value_info: Any, what: str) -> None:
        if not value_info.type.HasField("tensor_type"):
            raise ByocError(
                f"error: {self.filename}: {what} '{value_info.name}' is not a tensor"
            )
        elem = value_info.type.tensor_type.elem_type
        if elem not in (0, 1):  # UNDEFINED (not declared), FLOAT
            raise ByocError(
                f"error: {self.filename}: {what} '{value_info.name}' is "
                f"{_dtype_name(elem)}; byoc imports only float32 tensors"
            )

    def _input_type(self, value_info: Any) -> TensorType:
        self._check_float(value_info, "input")
        dims = _dims(value_info.type)
        name = value_info.name
        if dims is None or any(not isinstance(d, int) for d in dims):
            shown = "unknown" if dims is None else (
                "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
            )
            raise ByocError(
                f"error: {self.filename}: input '{name}' has a dynamic shape "
                f"{shown}; byoc needs static shapes (pin it with "
                f"input_shapes={{'{name}': [...]}}, or byoc-import --input-shape "
                f"{name}=d0,d1,...)"
            )
        return TensorType(f32, dims)

    def _convert(self, node: Node) -> None:
        converter = CONVERTERS[node.op_type]
        try:
            produced = converter(node)
        except VerifyException as err:
            raise node.error(str(err)) from None
        if produced is None:
            return  # the converter recorded its outputs itself (constants)
        values = [produced] if isinstance(produced, SSAValue) else list(produced)
        for output, value in zip(node.outputs, values):
            if not output:
                continue
            self.values[output] = value
            if value.name_hint is None:
                set_name(value, output)
            if node.check_shapes:
                self._check_inferred(node, output, shape_of(value))

    def _check_inferred(self, node: Node, output: str, shape: Shape) -> None:
        """The imported shape must be ONNX's; a difference is an importer bug."""
        dims = self.inferred.get(output)
        if dims is None or any(not isinstance(d, int) for d in dims):
            return
        if tuple(dims) != shape:
            raise node.error(
                f"internal error: output '{output}' has shape {list(shape)} but "
                f"ONNX infers {dims}"
            )


def set_name(value: SSAValue, onnx_name: str) -> None:
    """Name `value` after an ONNX tensor, as far as SSA names allow."""
    name = re.sub(r"[^\w$.-]", "_", onnx_name)
    if not name or not re.match(r"[A-Za-z_$.-]", name):
        name = "v" + name
    value.name_hint = name


def _to_numpy(tensor: Any, filename: str) -> np.ndarray:
    onnx = _onnx()
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as err:
        raise ByocError(
            f"error: {filename}: cannot read tensor '{tensor.name}': {err}"
        ) from None


# --- Converters: one per ONNX op ---------------------------------------------------


def _unary(op_type: type[relay.ElementwiseUnaryOp]) -> Converter:
    return lambda node: node.emit(op_type(node.value(0)))


def _binary(op_type: type[relay.ElementwiseBinaryOp]) -> Converter:
    return lambda node: node.emit(op_type(node.value(0), node.value(1)))


def _variadic(op_type: type[relay.ElementwiseBinaryOp]) -> Converter:
    def convert(node: Node) -> SSAValue:
        values = [node.value(i) for i in range(len(node.inputs)) if node.has(i)]
        if not values:
            raise node.error("needs at least one input")
        result = values[0]
        for value in values[1:]:
            result = node.emit(op_type(result, value))
        return result

    return convert


def _pow(node: Node) -> SSAValue:
    if node.is_constant(1):
        # The exponent may be an integer tensor (Pow's T1 and T2 differ).
        exponent = node.constant(1, "the exponent")
        if exponent.dtype.kind in "iub":
            return node.emit(relay.PowerOp(node.value(0), node.const(exponent)))
    return node.emit(relay.PowerOp(node.value(0), node.value(1)))


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


def _clip(node: Node) -> SSAValue:
    if node.graph.opset < 11:
        low = float(node.attr("min", -3.4028234663852886e38))
        high = float(node.attr("max", 3.4028234663852886e38))
    else:
        low_array = node.optional_constant(1, "min")
        high_array = node.optional_constant(2, "max")
        low = -math.inf if low_array is None else float(np.asarray(low_array).item())
        high = math.inf if high_array is None else float(np.asarray(high_array).item())
    if low > high:
        low = high  # ONNX: every element becomes max
    return node.emit(relay.ClipOp(node.value(0), low, high))


def _softmax(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    rank = len(shape)
    if node.graph.opset >= 13:
        axis = relay.normalize_axis(node.attr("axis", -1), rank, "Softmax")
        return node.emit(relay.SoftmaxOp(data, axis=axis))
    # Before opset 13 the input is seen as 2-d: [prod(dims < axis), prod(dims >= axis)].
    axis = relay.normalize_axis(node.attr("axis", 1), rank, "Softmax")
    if axis == rank - 1:
        return node.emit(relay.SoftmaxOp(data, axis=-1))
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    out = node.emit(relay.SoftmaxOp(node.emit(relay.ReshapeOp(data, flat)), axis=1))
    return node.emit(relay.ReshapeOp(out, shape))


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
    if len(shape) not in (3, 4):
        raise node.error(
            f"only 1-d and 2-d {node.op_type} is supported; the input has shape "
            f"{list(shape)} ({len(shape) - 2} spatial dimensions)"
        )


def _to_2d(node: Node, value: SSAValue) -> SSAValue:
    """`[N, C, L]` as `[N, C, 1, L]` (1-d convolutions and pools run as 2-d)."""
    n, c, length = shape_of(value)
    return node.emit(relay.ReshapeOp(value, (n, c, 1, length)))


def _pads_2d(pads: Sequence[int]) -> tuple[int, int, int, int]:
    """ONNX 2-d pads `[top, left, bottom, right]`; 1-d `[begin, end]` as `[0, b, 0, e]`."""
    if len(pads) == 2:
        return (0, pads[0], 0, pads[1])
    return (pads[0], pads[1], pads[2], pads[3])


def _pair(values: Sequence[int]) -> tuple[int, int]:
    return (1, values[0]) if len(values) == 1 else (values[0], values[1])


def _conv(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    _check_spatial_rank(node, shape)
    weight_shape = node.shape(1)
    kernel = list(weight_shape[2:])
    declared = node.ints("kernel_shape")
    if declared is not None and list(declared) != kernel:
        raise node.error(
            f"kernel_shape {declared} does not match the weight's kernel {kernel}"
        )
    strides, dilations, pads = _spatial(node, shape, kernel)
    group = int(node.attr("group", 1))
    one_d = len(shape) == 3
    if not one_d:
        weight = node.value(1)
    else:
        data = _to_2d(node, data)
        weight_2d = (*weight_shape[:2], 1, kernel[0])
        if node.is_constant(1):
            weight = node.const(node.constant(1, "W").reshape(weight_2d), node.inputs[1])
        else:
            weight = node.emit(relay.ReshapeOp(node.value(1), weight_2d))
    out = node.emit(
        relay.Conv2dOp(
            data,
            weight,
            strides=_pair(strides),
            padding=_pads_2d(pads),
            dilation=_pair(dilations),
            groups=group,
        )
    )
    if node.has(2):
        out = node.emit(relay.BiasAddOp(out, node.value(2), axis=1))
    if one_d:
        n, o, _, length = shape_of(out)
        out = node.emit(relay.ReshapeOp(out, (n, o, length)))
    return out


def _pool(node: Node) -> SSAValue:
    node.only_first_output()
    data = node.value(0)
    shape = shape_of(data)
    _check_spatial_rank(node, shape)
    kernel = node.ints("kernel_shape")
    if kernel is None:
        raise node.error("the kernel_shape attribute is required")
    if len(kernel) != len(shape) - 2:
        raise node.error(
            f"kernel_shape {kernel} does not match the input's {len(shape) - 2} "
            "spatial dimensions"
        )
    strides, dilations, pads = _spatial(node, shape, kernel)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    if ceil_mode:
        ceil_mode = _keep_ceil_mode(node, shape[2:], kernel, strides, dilations, pads)
    one_d = len(shape) == 3
    if one_d:
        data = _to_2d(node, data)
    options = dict(
        pool_size=_pair(kernel),
        strides=_pair(strides),
        padding=_pads_2d(pads),
        dilation=_pair(dilations),
        ceil_mode=ceil_mode,
    )
    if node.op_type == "MaxPool":
        # storage_order only changes the Indices output, refused above.
        out = node.emit(relay.MaxPool2dOp(data, **options))
    else:
        out = node.emit(
            relay.AvgPool2dOp(
                data, count_include_pad=bool(node.attr("count_include_pad", 0)), **options
            )
        )
    if one_d:
        n, c, _, length = shape_of(out)
        out = node.emit(relay.ReshapeOp(out, (n, c, length)))
    return out


def _keep_ceil_mode(
    node: Node,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> bool:
    """relay's `ceil_mode` for an ONNX pool with `ceil_mode=1`.

    onnxruntime (and PyTorch) drop a last window that would start in the end
    padding; onnx's shape inference keeps it. We follow onnxruntime: where a
    window is dropped the count is the floor one, so ceil_mode turns off.
    """
    n = len(sizes)
    ceil_ok, floor_ok = True, True
    for i, (size, k, s, d) in enumerate(zip(sizes, kernel, strides, dilations)):
        room = size + pads[i] + pads[i + n] - ((k - 1) * d + 1)
        ceil_out, floor_out = -(-room // s) + 1, room // s + 1
        wanted = ceil_out - 1 if (ceil_out - 1) * s >= size + pads[i] else ceil_out
        ceil_ok &= wanted == ceil_out
        floor_ok &= wanted == floor_out
    if ceil_ok:
        return True
    if not floor_ok:
        raise node.error(
            "ceil_mode=1 adds a window along one spatial axis and drops it along "
            "the other (it would start in the end padding); relay's pools cannot "
            "express that"
        )
    node.check_shapes = False  # onnx's shape inference keeps the dropped window
    return False


def _global_average_pool(node: Node) -> SSAValue:
    data = node.value(0)
    shape = shape_of(data)
    if len(shape) == 4:
        return node.emit(relay.GlobalAvgPool2dOp(data))
    if len(shape) < 3:
        raise node.error(f"the input must have spatial dimensions, got shape {list(shape)}")
    return node.emit(
        relay.MeanOp(data, axis=tuple(range(2, len(shape))), keepdims=True)
    )


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


def _batch_normalization(node: Node) -> SSAValue:
    if node.attr("training_mode", 0):
        raise node.error("training_mode=1 is not supported (inference only)")
    node.only_first_output()
    data = node.value(0)
    if len(shape_of(data)) < 2:
        raise node.error("the input must have a channel dimension (rank >= 2)")
    params = [node.value(i) for i in range(1, 5)]
    epsilon = float(node.attr("epsilon", 1e-5))
    return node.emit(relay.BatchNormOp(data, *params, axis=1, epsilon=epsilon))


def _layer_normalization(node: Node) -> SSAValue:
    node.only_first_output()
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


# Shape manipulation


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


def _reduce_mean(node: Node) -> SSAValue:
    data = node.value(0)
    rank = len(shape_of(data))
    axes = _axes(node, 18)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return data
        axes = list(range(rank))
    axes = list(relay.normalize_axes(axes, rank, "ReduceMean", "axes"))
    if not axes:
        return data  # a rank-0 input
    return node.emit(relay.MeanOp(data, axis=axes, keepdims=keepdims))


CONVERTERS: dict[str, Converter] = {
    "Add": _binary(relay.AddOp),
    "Sub": _binary(relay.SubtractOp),
    "Mul": _binary(relay.MultiplyOp),
    "Div": _binary(relay.DivideOp),
    "Pow": _pow,
    "Max": _variadic(relay.MaximumOp),
    "Min": _variadic(relay.MinimumOp),
    "Sqrt": _unary(relay.SqrtOp),
    "Erf": _unary(relay.ErfOp),
    "Relu": _unary(relay.ReluOp),
    "Sigmoid": _unary(relay.SigmoidOp),
    "Tanh": _unary(relay.TanhOp),
    "Exp": _unary(relay.ExpOp),
    "Log": _unary(relay.LogOp),
    "Neg": _unary(relay.NegativeOp),
    "Abs": _unary(relay.AbsOp),
    "Clip": _clip,
    "Softmax": _softmax,
    "Conv": _conv,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global_average_pool,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_normalization,
    "LayerNormalization": _layer_normalization,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "ReduceMean": _reduce_mean,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Constant": _constant,
    "Identity": _identity,
    "Dropout": _dropout,
}
"""ONNX op type (default domain) -> its converter."""

SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(CONVERTERS))
"""The ONNX operators `from_onnx` imports."""


def unsupported_nodes(model: onnx.ModelProto) -> list[str]:
    """`'name' (OpType)` of every node `from_onnx` cannot import, in graph order."""
    found = []
    for index, node in enumerate(model.graph.node):
        in_default_domain = node.domain in ("", "ai.onnx")
        if in_default_domain and node.op_type in CONVERTERS:
            continue
        name = f"'{node.name}'" if node.name else f"#{index}"
        op = node.op_type if in_default_domain else f"{node.domain}.{node.op_type}"
        found.append(f"{name} ({op})")
    return found


def from_onnx(
    source: str | Path | onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Relay IR for an ONNX model: a `.onnx` path or an `onnx.ModelProto`.

    `input_shapes` pins graph inputs to static shapes (for models exported with
    dynamic dimensions). Raises ByocError for unreadable files, unsupported
    nodes (all of them, in one message), dynamic shapes and non-float32 tensors.
    """
    model, name = load_model(source)
    _check_model(model, name)
    unsupported = unsupported_nodes(model)
    if unsupported:
        count = len(unsupported)
        raise ByocError(
            f"error: {name}: {count} unsupported ONNX node{'s' if count != 1 else ''}: "
            + ", ".join(unsupported)
        )
    if input_shapes:
        model = _pin_input_shapes(model, input_shapes, name)
    model = _infer_shapes(model, name)
    module = GraphImporter(model, name).run()
    from byoc.frontend.parse import verify_module

    verify_module(module, name)
    return module
