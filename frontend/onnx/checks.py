"""What `onnx.checker` checks, as located errors, once per model before any
converter runs: converters may then trust names and attribute types.

- SSA: every value is defined once (graph inputs, initializers, node outputs)
  and before the nodes that read it; graph outputs are defined.
- Nodes against their operator's schema (`onnx.defs`, at the model's opset):
  input and output counts, no attribute the operator does not have, none
  twice, each of its declared type with exactly that value field set,
  required ones present.
- Ranges the schemas state only in words: flags that are 0 or 1, the
  `auto_pad` modes, positive strides, dilations, kernels and groups,
  non-negative pads, scalar bounds of Clip.

Not `onnx.checker` itself: it also refuses models onnxruntime runs (graph
outputs without a shape, for one), and its messages name no node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from byoc.frontend.diagnostics import ByocError
from byoc.frontend.onnx.loader import _onnx, default_opset

if TYPE_CHECKING:
    import onnx

FLAGS = frozenset(
    {
        "keepdims",
        "noop_with_empty_axes",
        "ceil_mode",
        "count_include_pad",
        "transA",
        "transB",
        "select_last_index",
        "exclusive",
        "reverse",
        "largest",
        "sorted",
        "training_mode",
        "storage_order",
        "center_point_box",
        "new_axis",
        "detect_negative",
        "detect_positive",
    }
)
"""Integer attributes that are booleans in every operator defining them."""

CHOICES = {"auto_pad": frozenset({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})}
"""String attributes with a fixed set of values in every operator defining them."""

WINDOW_POSITIVE = ("strides", "dilations", "kernel_shape")
EINSUM_TERM = r"[A-Za-z]*(?:\.\.\.)?[A-Za-z]*"
"""One operand (or the output) of an Einsum equation: letters around at most one ellipsis."""
EINSUM_EQUATION = re.compile(rf"{EINSUM_TERM}(?:,{EINSUM_TERM})*(?:->{EINSUM_TERM})?")
"""An Einsum equation without its spaces. It is checked before onnx's shape
inference, which loops forever on some malformed ones (onnx 1.23: `i.j`)."""
"""Attributes of windowed operators (those with `kernel_shape`) that must be >= 1."""

SCALAR_INPUTS = {"Clip": (1, 2), "Range": (0, 1, 2)}
"""Inputs the operator's documentation requires to be scalars (one element)."""

_TYPE_FIELDS = {
    1: "f",
    2: "i",
    3: "s",
    4: "t",
    5: "g",
    6: "floats",
    7: "ints",
    8: "strings",
    9: "tensors",
    10: "graphs",
    11: "sparse_tensor",
    12: "sparse_tensors",
    13: "tp",
    14: "type_protos",
}
"""AttributeProto's type → the field holding its value."""

_SINGULAR = ("f", "i", "s", "t", "g", "sparse_tensor", "tp")


def check_model(model: onnx.ModelProto, name: str) -> None:
    """Raise a ByocError naming the node for the first thing onnx.checker would refuse."""
    opsets = {
        (entry.domain if entry.domain != "ai.onnx" else ""): entry.version
        for entry in model.opset_import
    }
    opsets.setdefault("", default_opset(model))
    _GraphCheck(name, opsets).graph(model.graph, set(), "the graph")


class _GraphCheck:
    def __init__(self, filename: str, opsets: dict[str, int]):
        self.filename = filename
        self.opsets = opsets

    def error(self, where: str, message: str) -> ByocError:
        return ByocError(f"error: {self.filename}: {where}: {message}")

    def graph(self, graph: Any, outer: set[str], where: str) -> None:
        """Check `graph`, which may read the values of `outer` (an enclosing graph's)."""
        defined: set[str] = set()
        initializers: set[str] = set()
        for tensor in (*graph.initializer, *graph.sparse_initializer):
            tensor_name = tensor.name if hasattr(tensor, "name") else tensor.values.name
            if not tensor_name:
                raise self.error(where, "an initializer has no name")
            if tensor_name in initializers:
                raise self.error(where, f"initializer '{tensor_name}' is defined twice")
            initializers.add(tensor_name)
        defined |= initializers
        inputs: set[str] = set()
        for value in graph.input:
            if not value.name:
                raise self.error(where, "a graph input has no name")
            if value.name in inputs:
                raise self.error(where, f"graph input '{value.name}' is declared twice")
            inputs.add(value.name)  # an initializer may also be an input (its default)
        defined |= inputs
        for index, node in enumerate(graph.node):
            label = _label(node, index)
            self.node(node, label)
            for input_name in node.input:
                if input_name and input_name not in defined and input_name not in outer:
                    raise self.error(
                        label,
                        f"input '{input_name}' is not defined before this node (by a "
                        "graph input, an initializer or an earlier node)",
                    )
            for attribute in node.attribute:
                for subgraph in _subgraphs(attribute):
                    self.graph(
                        subgraph, outer | defined, f"{label}: subgraph '{attribute.name}'"
                    )
            for output in node.output:
                if not output:
                    continue  # an optional output not produced
                if output in defined or output in outer:
                    raise self.error(
                        label,
                        f"output '{output}' is already defined (ONNX values are "
                        "assigned once)",
                    )
                defined.add(output)
        for value in graph.output:
            if not value.name or (value.name not in defined and value.name not in outer):
                raise self.error(
                    where, f"graph output '{value.name}' is not defined by any node, "
                    "input or initializer"
                )

    def node(self, node: Any, label: str) -> None:
        onnx = _onnx()
        domain = "" if node.domain == "ai.onnx" else node.domain
        version = self.opsets.get(domain)
        schema = _schema(node.op_type, version, domain) if version is not None else None
        if schema is None:
            return  # an operator onnx does not know: the importer lists it as unsupported
        op = f"{node.op_type}-{schema.since_version}"
        n_in = len(node.input)
        if n_in < schema.min_input or n_in > schema.max_input:
            raise self.error(
                label, f"has {n_in} inputs; {op} takes {_range(schema.min_input, schema.max_input)}"
            )
        n_out = len(node.output)
        if n_out < schema.min_output or n_out > schema.max_output:
            raise self.error(
                label,
                f"has {n_out} outputs; {op} makes {_range(schema.min_output, schema.max_output)}",
            )
        seen: set[str] = set()
        for attribute in node.attribute:
            attr_name = attribute.name
            if attr_name in seen:
                raise self.error(label, f"attribute '{attr_name}' is given twice")
            seen.add(attr_name)
            declared = schema.attributes.get(attr_name)
            if declared is None:
                known = ", ".join(sorted(schema.attributes)) or "none"
                raise self.error(
                    label,
                    f"{op} has no attribute '{attr_name}' (its attributes: {known})",
                )
            if attribute.ref_attr_name:
                continue  # a function body's reference, bound where it is called
            expected = int(declared.type.value)
            if attribute.type != expected:
                got = onnx.AttributeProto.AttributeType.Name(attribute.type)
                want = onnx.AttributeProto.AttributeType.Name(expected)
                raise self.error(
                    label, f"attribute '{attr_name}' is {got}; {op} takes {want}"
                )
            field = _TYPE_FIELDS.get(expected)
            stray = [f for f in _TYPE_FIELDS.values() if f != field and _is_set(attribute, f)]
            if stray or (field in _SINGULAR and not _is_set(attribute, field)):
                raise self.error(
                    label,
                    f"attribute '{attr_name}' must hold one {field} value and nothing "
                    f"else{' (it also sets ' + ', '.join(stray) + ')' if stray else ''}",
                )
            self.attribute_range(label, attribute, schema)
        for attr_name, declared in schema.attributes.items():
            if declared.required and attr_name not in seen:
                raise self.error(label, f"{op} requires attribute '{attr_name}'")

    def attribute_range(self, label: str, attribute: Any, schema: Any) -> None:
        attr_name = attribute.name
        if attr_name == "equation" and attribute.type == 3:
            equation = attribute.s.decode(errors="replace")
            if not EINSUM_EQUATION.fullmatch(equation.replace(" ", "")):
                raise self.error(
                    label,
                    f"equation '{equation}' is not comma-separated terms of letters around "
                    "at most one '...', with an optional '->' and output term",
                )
        if attr_name in FLAGS and attribute.type == 2 and attribute.i not in (0, 1):
            raise self.error(label, f"attribute '{attr_name}' is {attribute.i}; it must be 0 or 1")
        choices = CHOICES.get(attr_name)
        if choices is not None and attribute.type == 3:
            value = attribute.s.decode(errors="replace")
            if value not in choices:
                raise self.error(
                    label,
                    f"attribute '{attr_name}' is '{value}'; it must be one of "
                    f"{', '.join(sorted(choices))}",
                )
        if "kernel_shape" not in schema.attributes:
            return
        if attr_name in WINDOW_POSITIVE and any(v < 1 for v in attribute.ints):
            raise self.error(
                label, f"attribute '{attr_name}' is {list(attribute.ints)}; each must be >= 1"
            )
        if attr_name == "pads" and any(v < 0 for v in attribute.ints):
            raise self.error(label, f"attribute 'pads' is {list(attribute.ints)}; each must be >= 0")
        if attr_name == "group" and attribute.i < 1:
            raise self.error(label, f"attribute 'group' is {attribute.i}; it must be >= 1")


def check_scalar_inputs(model: onnx.ModelProto, name: str) -> None:
    """Inputs documented as scalars, when given by an initializer or Constant, hold one element."""
    shapes: dict[str, list[int]] = {t.name: list(t.dims) for t in model.graph.initializer}
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for attribute in node.attribute:
                if attribute.name == "value" and attribute.type == 4 and node.output:
                    shapes[node.output[0]] = list(attribute.t.dims)
        positions = SCALAR_INPUTS.get(node.op_type)
        if positions is None or node.domain not in ("", "ai.onnx"):
            continue
        for i in positions:
            if i < len(node.input) and node.input[i] in shapes:
                dims = shapes[node.input[i]]
                count = 1
                for d in dims:
                    count *= d
                if count != 1:
                    raise ByocError(
                        f"error: {name}: {_label(node, index)}: input {i} "
                        f"('{node.input[i]}') has shape {dims}; it must be a scalar"
                    )


@cache
def _schema(op_type: str, version: int, domain: str) -> Any:
    onnx = _onnx()
    try:
        return onnx.defs.get_schema(op_type, version, domain)
    except onnx.defs.SchemaError:
        return None


def _label(node: Any, index: int) -> str:
    """`node 'conv_9' (Conv)`, as the importer names nodes; unnamed ones by position."""
    who = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {who} ({node.op_type})"


def _range(low: int, high: int) -> str:
    if low == high:
        return str(low)
    if high >= 2**31 - 1:
        return f"at least {low}"
    return f"{low} to {high}"


def _is_set(attribute: Any, field: str) -> bool:
    if field in _SINGULAR:
        return attribute.HasField(field)
    return len(getattr(attribute, field)) > 0


def _subgraphs(attribute: Any) -> Iterable[Any]:
    if attribute.type == 5:
        yield attribute.g
    elif attribute.type == 10:
        yield from attribute.graphs
