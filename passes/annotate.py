"""Annotate: mark each op with the first backend (in priority order) that takes it.

A taken op gets the discardable attribute `extern.target = "<backend>"`; ops no
backend takes stay unmarked and run on the host. An op that already carries
`extern.target` (annotated by hand) is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from byoc.backends import DEFAULT_BACKEND, Backend, parse_targets
from byoc.dialects.extern import COMPILER_ATTR, TARGET_ATTR


def host_functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """Functions with a body that are not outlined for a backend."""
    for op in module.body.block.ops:
        if (
            isinstance(op, func.FuncOp)
            and op.body.blocks
            and COMPILER_ATTR not in op.attributes
        ):
            yield op


def is_graph_op(op: Operation) -> bool:
    """Whether `op` is a tensor operator a backend could take."""
    return op.name.startswith("relay.")


def annotate(module: ModuleOp, backends: Sequence[Backend]) -> dict[Operation, list[str]]:
    """Mark ops for backends; returns, for each op left on the host, why."""
    # One attribute object per backend, shared by every op it takes.
    tags = {b.name: StringAttr(b.name) for b in backends}
    declined: dict[Operation, list[str]] = {}
    for function in host_functions(module):
        for op in function.body.block.ops:
            if not is_graph_op(op) or TARGET_ATTR in op.attributes:
                continue
            reasons: list[str] = []
            for backend in backends:
                reason = backend.check(op)
                if reason is None:
                    op.attributes[TARGET_ATTR] = tags[backend.name]
                    break
                reasons.append(reason)
            else:
                declined[op] = reasons
    return declined


@dataclass(frozen=True)
class AnnotatePass(ModulePass):
    """Marks ops with `extern.target` for the first of `targets` that takes them."""

    name = "byoc-annotate"

    targets: tuple[str, ...] = (DEFAULT_BACKEND,)
    """Backends in priority order: `byoc-annotate{targets=cblas,ccompiler}`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        annotate(op, parse_targets(self.targets))
