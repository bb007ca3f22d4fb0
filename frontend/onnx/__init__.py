"""Importing ONNX models: `from_onnx` turns an ONNX graph into relay IR, built
through the Python API (never through text), with `@main` taking the graph
inputs and returning the graph outputs.

Shapes must be static (`input_shapes` can pin dynamic dimensions). Nodes whose
inputs are all known at import (initializers, `Constant`s, shapes, and what is
computed from them: `Shape -> Gather -> Concat`, `ConstantOfShape`, ...) are
evaluated with numpy (`fold`) in any dtype and never reach the IR; known values
become `relay.constant` only where a runtime op reads them as data, and stay
numpy arrays where they are read at import (Reshape's shape, Unsqueeze's axes). Every op made for ONNX node `i`
(0-based) gets the location `<model>:<i+1>:1`, so later diagnostics point at the
node, and each result is named after the ONNX tensor it computes.

`import onnx` happens on the first call, so byoc itself works without onnx.

The package: `loader` reads and checks models, `graph` walks the graph and
folds what is known at import (`fold`) and hands every other node to its
converter, one module per operator family (`elementwise`, `nn`, `reduce`,
`shape`) converts, and `registry` maps op types to converters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from byoc.frontend.diagnostics import ByocError
from byoc.frontend.onnx.fold import fold, folding_nodes
from byoc.frontend.onnx.checks import check_model, check_scalar_inputs
from byoc.frontend.onnx.graph import GraphImporter
from byoc.frontend.onnx.loader import (
    _check_model,
    _infer_shapes,
    _pin_input_shapes,
    is_onnx_source,
    load_lean_model,
    load_model,
)
from byoc.frontend.onnx.registry import CONVERTERS, SUPPORTED_OPS

if TYPE_CHECKING:
    import onnx

Shape = tuple[int, ...]


def unsupported_nodes(model: onnx.ModelProto) -> list[str]:
    """`'name' (OpType)` of every node `from_onnx` cannot import, in graph order:
    nodes with no converter that are not evaluated at import either."""
    found = []
    folding = folding_nodes(model)
    for index, node in enumerate(model.graph.node):
        in_default_domain = node.domain in ("", "ai.onnx")
        if in_default_domain and (node.op_type in CONVERTERS or index in folding):
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
    # Weights stay out of the model until the importer reads each once (shape
    # inference and the checks copy the whole model otherwise).
    model, name, weights = load_lean_model(source)
    _check_model(model, name)
    check_model(model, name)
    check_scalar_inputs(model, name)
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
    module = GraphImporter(model, name, CONVERTERS, fold, weights).run()
    from byoc.frontend.parse import verify_module

    verify_module(module, name)
    return module


__all__ = ["SUPPORTED_OPS", "from_onnx", "is_onnx_source", "load_model", "unsupported_nodes"]
