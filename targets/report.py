"""The partition report (`byoc-opt ... --partition -t report`): what runs where, and why.

For each backend: its outlined functions and their ops. For each op left on
the host: why it stayed there (every backend's reason for declining it, or
that its region was pruned as too small). For a quantized model: how many
quantized ops there are, and each float op of a QDQ group that stayed in float
(`byoc-fake-quantization-to-integer` could not turn it into integer ops) with why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.utils.target import Target

from byoc.backends import Backend, parse_targets
from byoc.dialects.extern import COMPILER_ATTR, COMPOSITE_ATTR
from byoc.frontend.parse import location_of
from byoc.passes.annotate import host_functions, is_graph_op
from byoc.passes.fake_quantization_to_integer import FLOAT_UNIT_ATTR


def host_reason(op: Operation, backends: Sequence[Backend]) -> str:
    """Why `op` runs on the host."""
    if not backends:
        return "no backend was given"
    reasons = [backend.check(op) for backend in backends]
    if any(r is None for r in reasons):
        return "pruned: its region was smaller than min-region-size"
    return "unsupported: " + "; ".join(r for r in reasons if r)


def _where(op: Operation) -> str:
    return location_of(op) or "?"


def partition_report(module: ModuleOp, backends: Sequence[Backend]) -> str:
    """The report as text."""
    outlined: dict[str, list[func.FuncOp]] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and COMPILER_ATTR in op.attributes:
            compiler = op.attributes[COMPILER_ATTR]
            assert isinstance(compiler, StringAttr)
            outlined.setdefault(compiler.data, []).append(op)
    lines = ["# byoc partition report"]
    names = [b.name for b in backends] + sorted(set(outlined) - {b.name for b in backends})
    for name in names:
        functions = outlined.get(name, [])
        n_ops = sum(
            1 for f in functions for o in f.body.block.ops if is_graph_op(o)
        )
        lines.append(f"backend {name}: {len(functions)} function(s), {n_ops} op(s)")
        for function in functions:
            ops = [o for o in function.body.block.ops if is_graph_op(o)]
            lines.append(f"  @{function.sym_name.data}: {len(ops)} op(s)")
            for o in ops:
                composite = o.attributes.get(COMPOSITE_ATTR)
                tag = f"  [{composite.data}]" if isinstance(composite, StringAttr) else ""
                lines.append(f"    {o.name}  {_where(o)}{tag}")
    host_ops = [
        o for f in host_functions(module) for o in f.body.block.ops if is_graph_op(o)
    ]
    lines.append(f"host: {len(host_ops)} op(s)")
    for o in host_ops:
        lines.append(f"  {o.name}  {_where(o)}  {host_reason(o, backends)}")
    lines.extend(_quantization_lines(module))
    return "\n".join(lines) + "\n"


def _quantization_lines(module: ModuleOp) -> list[str]:
    """The quantized ops, and the float ops of QDQ groups kept in float (why)."""
    quantized = 0
    kept: list[Operation] = []
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        for o in function.body.block.ops:
            if o.name.startswith("relay.qnn."):
                quantized += 1
            elif FLOAT_UNIT_ATTR in o.attributes:
                kept.append(o)
    if not quantized and not kept:
        return []
    lines = [
        f"quantized: {quantized} quantized op(s); {len(kept)} float op(s) of QDQ "
        "groups kept in float (correct, slower)"
    ]
    for o in kept:
        why = o.attributes[FLOAT_UNIT_ATTR]
        reason = why.data if isinstance(why, StringAttr) else str(why)
        lines.append(f"  {o.name}  {_where(o)}  kept in float: {reason}")
    return lines


@dataclass(frozen=True)
class ReportTarget(Target):
    """Prints the partition report of a partitioned module."""

    name = "report"

    targets: tuple[str, ...] = ()
    """The backends the module was annotated for (byoc-opt fills it from --annotate)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(partition_report(module, parse_targets(self.targets)))
