"""The graph importer: `GraphImporter` builds `@main` node by node, each
node handed to its converter as a `Node` (inputs, attributes, error wording)."""


from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
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
from byoc.dialects.relay.constant import element_type_of_dtype, numpy_dtype_of
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.onnx.loader import (
    _dims,
    _dtype_name,
    _onnx,
    default_opset,
)

if TYPE_CHECKING:
    import onnx

    from byoc.frontend.onnx.weights import LeanWeights

Shape = tuple[int, ...]

RUNTIME_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.float16,
        np.float32,
        np.float64,
        np.bool_,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
    )
)
"""The dtypes a tensor computed at run time may have (folded values may have any)."""
RUNTIME_DTYPE_NAMES = "float16, float32, float64, bool and 8- to 64-bit (unsigned) integer"

_ONNX_DTYPES = frozenset({1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13})
"""ONNX TensorProto element types of RUNTIME_DTYPES."""


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
        """Input `i` as a relay value (a known one becomes a relay.constant)."""
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
        """Reject nodes whose optional extra outputs are used (named but unused
        ones, such as Dropout's mask in many exported models, are fine)."""
        extra = [o for o in self.outputs[1:] if o and o in self.graph.used]
        if extra:
            raise self.error(
                f"only the first output is supported; the node also produces "
                f"{', '.join(repr(o) for o in extra)}"
            )

    # Building

    def emit(self, op: Operation) -> SSAValue:
        return self.graph.emit(op)

    def const(self, array: np.ndarray | float, name: str | None = None) -> SSAValue:
        """A new float32 relay.constant (named `name`, e.g. a transposed
        initializer); a float16 array (from a float16 initializer) stays float16.
        Other arrays become float32 whatever numpy computed them in."""
        array = np.asarray(array)
        if array.dtype != np.float16:
            array = array.astype(np.float32)
        value = self.graph.emit(relay.ConstantOp.from_numpy(array))
        if name:
            set_name(value, name)
        return value

    def const_like(self, value: float, like: SSAValue) -> SSAValue:
        """A scalar relay.constant of `like`'s element type (f16 and f64 data
        stay in their type, where `const` is float32)."""
        dtype = numpy_dtype_of(like.type.element_type)  # type: ignore[attr-defined]
        return self.graph.emit(relay.ConstantOp.from_numpy(np.asarray(value, dtype)))


def shape_of(value: SSAValue) -> Shape:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


Converter = Callable[[Node], Sequence[SSAValue] | SSAValue | None]
Folder = Callable[[Node], Sequence[np.ndarray] | None]
"""`node -> its outputs` when they can be computed at import, else None."""


class GraphImporter:
    """Builds `@main` from one ONNX graph, node by node in graph order."""

    def __init__(
        self,
        model: onnx.ModelProto,
        filename: str,
        converters: Mapping[str, Converter],
        fold: Folder | None = None,
        weights: LeanWeights | None = None,
    ):
        self.converters = converters
        self.fold = fold
        self.weights = weights
        """Where initializers without data in `model` have it (load_lean_model)."""
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
        self.used: set[str] = set()  # tensors some node or the graph output reads

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
        if array.dtype not in RUNTIME_DTYPES:
            what = f"node {node.label}: " if node else ""
            raise ByocError(
                f"error: {self.filename}: {what}tensor '{name}' is {array.dtype}; "
                f"byoc runs only {RUNTIME_DTYPE_NAMES} tensors"
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
            stripped = self.weights.array(tensor, self.filename) if self.weights else None
            self.constants[tensor.name] = (
                stripped if stripped is not None else _to_numpy(tensor, self.filename)
            )
        self.used = {name for proto in graph.node for name in proto.input}
        self.used.update(value_info.name for value_info in graph.output)

        arg_types = []
        inputs = [i for i in graph.input if i.name not in self.constants]
        self._check_static(inputs)
        for value_info in inputs:
            arg_types.append(self._input_type(value_info))
        self.block = Block(arg_types=arg_types)
        for value_info, arg in zip(inputs, self.block.args):
            self.values[value_info.name] = arg
            set_name(arg, value_info.name)

        for index, proto in enumerate(graph.node):
            node = Node(self, proto, index)
            self.location = FileLineColLoc(self.file_attr, IntAttr(index + 1), IntAttr(1))
            try:
                self._convert(node)
            except ByocError:
                raise
            except Exception as err:  # noqa: BLE001 - no converter may end in a traceback
                raise node.error(
                    f"cannot import this node ({type(err).__name__}: {err})"
                ) from err
        self.location = None

        results = []
        for value_info in graph.output:
            self._check_type(value_info, "output")
            results.append(self.value(value_info.name, None))
        self.block.add_op(func.ReturnOp(*results))
        main = func.FuncOp(
            "main",
            FunctionType.from_lists(arg_types, [v.type for v in results]),
            Region(self.block),
        )
        return ModuleOp([main])

    def _check_type(self, value_info: Any, what: str) -> TensorType | None:
        """The relay element type of a graph input or output (None: undeclared)."""
        if not value_info.type.HasField("tensor_type"):
            raise ByocError(
                f"error: {self.filename}: {what} '{value_info.name}' is not a tensor"
            )
        elem = value_info.type.tensor_type.elem_type
        if elem == 0:  # UNDEFINED: not declared
            return None
        onnx = _onnx()
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem) if elem in _ONNX_DTYPES else None
        if dtype is None or np.dtype(dtype) not in RUNTIME_DTYPES:
            raise ByocError(
                f"error: {self.filename}: {what} '{value_info.name}' is "
                f"{_dtype_name(elem)}; byoc runs only {RUNTIME_DTYPE_NAMES} tensors"
            )
        return element_type_of_dtype(dtype)

    def _check_static(self, inputs: Sequence[Any]) -> None:
        """One error naming every input with a symbolic (or unknown) dimension,
        and the flags that pin them."""
        dynamic = []
        for value_info in inputs:
            dims = _dims(value_info.type)
            if dims is None or any(not isinstance(d, int) for d in dims):
                dynamic.append((value_info.name, dims))
        if not dynamic:
            return
        described, flags, pins = [], [], []
        symbols: list[str] = []
        unknown = 0
        for name, dims in dynamic:
            if dims is None:
                described.append(f"'{name}' (no declared shape)")
                wanted = ["D0", "D1", "..."]
            else:
                shown = ", ".join("?" if d is None else str(d) for d in dims)
                described.append(f"'{name}' (shape [{shown}])")
                wanted = [
                    str(d) if isinstance(d, int) else f"<{d or f'dim {k}'}>"
                    for k, d in enumerate(dims)
                ]
                symbols += [d for d in dims if isinstance(d, str) and d not in symbols]
                unknown += sum(1 for d in dims if d is None)
            flags.append(f"--input-shape {name}={','.join(wanted)}")
            pins.append(f"'{name}': [{', '.join(wanted)}]")
        parts = []
        if symbols:
            parts.append(
                f"symbolic dimension{'s' if len(symbols) > 1 else ''} {', '.join(symbols)}"
            )
        if unknown:
            parts.append(f"{unknown} unknown dimension{'s' if unknown > 1 else ''}")
        if not parts:
            parts.append("no declared shape")
        subject = (
            f"input {described[0]} has"
            if len(dynamic) == 1
            else f"inputs {', '.join(described)} have"
        )
        raise ByocError(
            f"error: {self.filename}: {subject} {' and '.join(parts)}; byoc compiles "
            f"static shapes: pin them with {' '.join(flags)} (from Python: "
            f"input_shapes={{{', '.join(pins)}}})"
        )

    def _input_type(self, value_info: Any) -> TensorType:
        element = self._check_type(value_info, "input") or f32
        dims = _dims(value_info.type)
        assert dims is not None and all(isinstance(d, int) for d in dims)
        return TensorType(element, dims)

    def _convert(self, node: Node) -> None:
        if self.fold is not None:
            folded = self.fold(node)
            if folded is not None:
                for output, array in zip(node.outputs, folded):
                    if output:
                        self.constants[output] = array
                        self._check_inferred(node, output, array.shape)
                return
        converter = self.converters.get(node.op_type)
        if converter is None:
            computed = [n for n in node.inputs if n and n not in self.constants]
            raise node.error(
                "supported only on values known at import (from initializers, "
                "constants and shapes), but "
                + ", ".join(repr(n) for n in computed)
                + (" is" if len(computed) == 1 else " are")
                + " computed at run time"
            )
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
    """Name `value` after an ONNX tensor, as far as SSA names allow.

    Any ONNX name is valid (`' 4'`, `{2`, `_5`): characters MLIR's lexer does
    not take become `_`, and a name xDSL would reduce to nothing (it drops a
    trailing `_<digits>`) or that cannot start an identifier gets a `v`."""
    name = _NOT_IN_NAMES.sub("_", onnx_name)
    if not _NAME_START.match(name) or _NUMBER_SUFFIX.fullmatch(name):
        name = "v" + name
    value.name_hint = name


_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_$.-]")
_NAME_START = re.compile(r"[A-Za-z_$.-]")
_NUMBER_SUFFIX = re.compile(r"_[0-9]+")


def _to_numpy(tensor: Any, filename: str) -> np.ndarray:
    onnx = _onnx()
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as err:
        raise ByocError(
            f"error: {filename}: cannot read tensor '{tensor.name}': {err}"
        ) from None


