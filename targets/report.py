"""The partition report (`byoc-opt ... --partition -t report`): what runs where, and why.

For each backend: its outlined functions and their ops (or, in a module not
yet partitioned, its merged regions and annotated ops). For each op left on
the host: why it stayed there (every backend's reason for declining it,
composites included, or that its region was pruned as too small). For a
quantized model: how many quantized ops there are, and each float op of a QDQ
group that stayed in float (`byoc-fake-quantization-to-integer` could not turn
it into integer ops) with why.
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
from byoc.dialects.extern import COMPILER_ATTR, COMPOSITE_ATTR, TARGET_ATTR, RegionOp
from byoc.frontend.parse import location_of
from byoc.passes.annotate import annotate, host_functions, is_graph_op
from byoc.passes.fake_quantization_to_integer import FLOAT_UNIT_ATTR


def host_reasons(
    module: ModuleOp, backends: Sequence[Backend], min_region_size: int = 1
) -> dict[Operation, str]:
    """Why each graph op left on the host is there, by annotating a copy of the
    module afresh: the backends' own reasons (composites included), or the
    pruning that sent a taken op back."""
    host_ops = [
        op
        for f in host_functions(module)
        for op in f.body.block.ops
        if is_graph_op(op) and TARGET_ATTR not in op.attributes
    ]
    if not backends:
        return {op: "no backend was given (--annotate=BACKENDS)" for op in host_ops}
    copy = module.clone()
    originals = [op for op in module.walk() if is_graph_op(op)]
    copies = [op for op in copy.walk() if is_graph_op(op)]
    clone_of = dict(zip(originals, copies, strict=True))
    declined = annotate(copy, backends)
    reasons: dict[Operation, str] = {}
    for op in host_ops:
        twin = clone_of[op]
        if twin in declined:
            reasons[op] = "unsupported: " + ("; ".join(declined[twin]) or "no backend takes it")
            continue
        taker = twin.attributes.get(TARGET_ATTR)
        name = taker.data if isinstance(taker, StringAttr) else "a backend"
        if min_region_size > 1:
            reasons[op] = (
                f"pruned: {name} takes it, but its region had fewer than "
                f"{min_region_size} ops (--min-region-size)"
            )
        else:
            reasons[op] = f"{name} takes it, but it was not annotated for it (run --annotate)"
    return reasons


def _where(op: Operation) -> str:
    return location_of(op) or "?"


def _op_line(op: Operation, indent: str) -> str:
    composite = op.attributes.get(COMPOSITE_ATTR)
    tag = f"  [{composite.data}]" if isinstance(composite, StringAttr) else ""
    return f"{indent}{op.name}  {_where(op)}{tag}"


def partition_report(
    module: ModuleOp, backends: Sequence[Backend], min_region_size: int = 1
) -> str:
    """The report as text: outlined functions, merged regions and annotated ops
    per backend (a module need not be partitioned), then the host's ops."""
    outlined: dict[str, list[func.FuncOp]] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and COMPILER_ATTR in op.attributes:
            compiler = op.attributes[COMPILER_ATTR]
            assert isinstance(compiler, StringAttr)
            outlined.setdefault(compiler.data, []).append(op)
    regions: dict[str, list[RegionOp]] = {}
    annotated: dict[str, list[Operation]] = {}
    for function in host_functions(module):
        for op in function.body.block.ops:
            if isinstance(op, RegionOp):
                regions.setdefault(op.compiler.data, []).append(op)
            elif is_graph_op(op) and isinstance(op.attributes.get(TARGET_ATTR), StringAttr):
                annotated.setdefault(op.attributes[TARGET_ATTR].data, []).append(op)  # type: ignore[union-attr]
    lines = ["# byoc partition report"]
    if (regions or annotated) and not outlined:
        step = "--partition" if regions else "--merge or --partition"
        lines.append(f"# not partitioned: ops are only {'merged' if regions else 'annotated'} ({step} outlines them)")
    known = [b.name for b in backends]
    names = known + sorted((set(outlined) | set(regions) | set(annotated)) - set(known))
    for name in names:
        functions = outlined.get(name, [])
        graph = [[o for o in f.body.block.ops if is_graph_op(o)] for f in functions]
        grouped = [[o for o in r.body.block.ops if is_graph_op(o)] for r in regions.get(name, [])]
        loose = annotated.get(name, [])
        total = sum(map(len, graph)) + sum(map(len, grouped)) + len(loose)
        lines.append(f"backend {name}: {len(functions)} function(s), {total} op(s)")
        for function, ops in zip(functions, graph):
            lines.append(f"  @{function.sym_name.data}: {len(ops)} op(s)")
            lines += [_op_line(o, "    ") for o in ops]
        for i, ops in enumerate(grouped):
            lines.append(f"  region {i} (not outlined): {len(ops)} op(s)")
            lines += [_op_line(o, "    ") for o in ops]
        if loose:
            lines.append(f"  annotated, not merged: {len(loose)} op(s)")
            lines += [_op_line(o, "    ") for o in loose]
    reasons = host_reasons(module, backends, min_region_size)
    lines.append(f"host: {len(reasons)} op(s)")
    lines += [f"  {o.name}  {_where(o)}  {why}" for o, why in reasons.items()]
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

    min_region_size: int = 1
    """The partitioning's minimum region size (byoc-opt fills it in)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(
            partition_report(module, parse_targets(self.targets), self.min_region_size)
        )
