"""Graphviz view of a partitioned graph (`byoc-opt ... --partition -t dot`), coloured by backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.utils.target import Target

from byoc.dialects.extern import COMPILER_ATTR, CallOp
from byoc.passes.annotate import host_functions

PALETTE = ("#8dd3c7", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#bc80bd", "#ffed6f")
HOST_COLOUR = "#ffffff"


def quote(text: str) -> str:
    """A DOT string literal: input text can never end the string or the graph."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def partition_dot(module: ModuleOp) -> str:
    """The DOT text of every host function, outlined calls coloured by backend."""
    callees = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and COMPILER_ATTR in op.attributes
    }
    colours: dict[str, str] = {}
    lines = ["digraph byoc {", '  node [shape=box, style="rounded,filled"];']
    ids: dict[Operation, str] = {}
    for function in host_functions(module):
        name = function.sym_name.data
        lines.append(f"  subgraph {quote('cluster_' + name)} {{")
        lines.append(f"    label = {quote('@' + name)};")
        for i, arg in enumerate(function.body.block.args):
            lines.append(f"    {quote(f'{name}.arg{i}')} [label={quote(arg.name_hint or f'arg{i}')}, shape=ellipse, fillcolor=\"#eeeeee\"];")
        for op in function.body.block.ops:
            node = f"{name}.{len(ids)}"
            ids[op] = node
            label, colour = op.name, HOST_COLOUR
            if isinstance(op, CallOp):
                callee = callees.get(op.callee.root_reference.data)
                backend = "?"
                if callee is not None:
                    compiler = callee.attributes[COMPILER_ATTR]
                    assert isinstance(compiler, StringAttr)
                    backend = compiler.data
                    inner = [o.name for o in callee.body.block.ops][:-1]
                    label = f"@{callee.sym_name.data} ({backend})\n" + "\n".join(inner)
                colour = colours.setdefault(backend, PALETTE[len(colours) % len(PALETTE)])
            lines.append(f"    {quote(node)} [label={quote(label)}, fillcolor={quote(colour)}];")
            for operand in op.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner in ids:
                    source = ids[owner]
                else:
                    index = getattr(operand, "index", 0)
                    source = f"{name}.arg{index}"
                lines.append(f"    {quote(source)} -> {quote(node)};")
        lines.append("  }")
    for backend, colour in colours.items():
        lines.append(f"  // {backend}: {colour}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DotTarget(Target):
    """Prints the partitioned graph in Graphviz DOT."""

    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(partition_dot(module))
