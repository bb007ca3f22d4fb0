"""Annotate: mark each op with the first backend (in priority order) that takes it.

For each backend in priority order, its composite patterns are matched first
(longest first), then its single-op checks are asked about every op still
unmarked. A taken op gets the discardable attribute
`extern.target = "<backend>"` (and `extern.composite = "<backend>.<pattern>"`
when a pattern took it); ops no backend takes stay unmarked and run on the
host. An op that already carries `extern.target` (annotated by hand) for one
of the backends is left as it is; a mark naming any other backend is dropped
and the op annotated anew. Then each backend may replace the ops it took by
equivalent ones its kernels prefer (`Backend.alter_op`, e.g. a conv2d with its
weight packed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from byoc.backends import DEFAULT_BACKEND, Backend, Composite, parse_targets
from byoc.backends.errors import BackendError, blame, origin
from byoc.dialects.extern import COMPILER_ATTR, COMPOSITE_ATTR, INLINE_ATTR, TARGET_ATTR
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import describe


def host_functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """Functions with a body that are not outlined for a backend."""
    for op in module.body.block.ops:
        if (
            isinstance(op, func.FuncOp)
            and op.body.blocks
            and COMPILER_ATTR not in op.attributes
        ):
            yield op


def is_constant(op: Operation) -> bool:
    return op.name == "relay.constant"


def is_graph_op(op: Operation) -> bool:
    """Whether `op` is a tensor operator a backend could take (constants are not:
    they go with the ops that use them)."""
    return op.name.startswith("relay.") and not is_constant(op)


def mark_inlined_constants(block: Block, backends: Sequence[Backend]) -> None:
    """Tag each constant with the backends that will copy it into their functions."""
    limits = {b.name: b.inline_constants for b in backends}
    for op in block.ops:
        if not is_constant(op):
            continue
        size = prod(op.results[0].type.get_shape())  # type: ignore[attr-defined]
        users = {
            use.operation.attributes.get(TARGET_ATTR) for use in op.results[0].uses
        }
        inline = [
            StringAttr(t.data)
            for t in users
            if isinstance(t, StringAttr) and size <= limits.get(t.data, -1)
        ]
        if inline:
            op.attributes[INLINE_ATTR] = ArrayAttr(sorted(inline, key=lambda a: a.data))


def match_chain(
    root: Operation, pattern: Composite, position: dict[Operation, int]
) -> list[Operation] | None:
    """The ops of `pattern` starting at `root`, or None if they do not form it.

    Besides the chain value (an op's first operand, or either of a
    `commutative` one's two), the ops may only read values defined before the
    root, or made from nothing (constants), so the chain can be one unit
    without any path leaving and re-entering it.
    """
    if root.name != pattern.ops[0] or TARGET_ATTR in root.attributes:
        return None
    chain = [root]
    start = position[root]
    for name in pattern.ops[1:]:
        results = chain[-1].results
        if len(results) != 1:
            return None
        uses = list(results[0].uses)
        if len(uses) != 1:
            return None
        user, index = uses[0].operation, uses[0].index
        if user.name != name or TARGET_ATTR in user.attributes:
            return None
        swapped = index == 1 and len(user.operands) == 2 and name in pattern.commutative
        if index != 0 and not swapped:
            return None
        for i, operand in enumerate(user.operands):
            if i == index:
                continue
            owner = operand.owner
            if (
                isinstance(owner, Operation)
                and owner.operands
                and position.get(owner, start) >= start
            ):
                return None
        chain.append(user)
    return chain


def forget_other_targets(ops: Sequence[Operation], targets: set[str]) -> None:
    """Drop marks (made by hand or by an earlier run) naming a backend that is
    not among `targets`: its codegen would never run, so such ops are
    annotated again like unmarked ones."""
    for op in ops:
        target = op.attributes.get(TARGET_ATTR)
        if target is not None and (
            not isinstance(target, StringAttr) or target.data not in targets
        ):
            del op.attributes[TARGET_ATTR]
            op.attributes.pop(COMPOSITE_ATTR, None)


Exclusions = Mapping[Operation, frozenset[str]]
"""Backends that must not take an op (their codegen failed on it: runtime/fallback.py)."""


def _ask(backend: Backend, check: Callable[[Any], object], subject: Any, what: str, op: Operation) -> str | None:
    """A backend's answer to one of its checks; its failures are its own."""
    try:
        reason = check(subject)
    except Exception as err:
        raise blame(backend, what, describe(op), err) from err
    if reason is not None and not isinstance(reason, str):
        raise BackendError(
            f"error: backend '{backend.name}' ({origin(backend)}): {what} for "
            f"{describe(op)} returned {reason!r}; a check returns None to take "
            "the op, or a string saying why not",
            backend.name,
        )
    return reason


def annotate_block(
    block: Block,
    backends: Sequence[Backend],
    declined: dict[Operation, list[str]],
    exclude: Exclusions | None = None,
) -> None:
    """Mark the ops of `block`; record in `declined` why the others stay on the host."""
    ops = [op for op in block.ops if is_graph_op(op)]
    forget_other_targets(ops, {b.name for b in backends})
    position = {op: i for i, op in enumerate(block.ops)}
    reasons: dict[Operation, list[str]] = {}
    exclude = exclude or {}
    none: frozenset[str] = frozenset()

    def excluded(op: Operation, backend: Backend) -> bool:
        if backend.name in exclude.get(op, none):
            reasons.setdefault(op, []).append(
                f"{backend.name}: its codegen failed on this op's function"
            )
            return True
        return False

    for backend in backends:
        tag = StringAttr(backend.name)
        patterns = sorted(backend.composites, key=lambda c: -len(c.ops))
        for pattern in patterns:
            name = StringAttr(f"{backend.name}.{pattern.name}")
            for op in ops:
                chain = match_chain(op, pattern, position)
                if chain is None:
                    continue
                if exclude and any(backend.name in exclude.get(m, none) for m in chain):
                    continue
                reason = _ask(backend, pattern.check, chain, f"pattern check of {pattern.name}", op)
                if reason is not None:
                    for member in chain:
                        reasons.setdefault(member, []).append(
                            f"{backend.name}: pattern {pattern.name} declined: {reason}"
                        )
                    continue
                for before, member in zip(chain, chain[1:]):
                    if member.operands[0] is not before.results[0]:  # commutative
                        member.operands = (member.operands[1], member.operands[0])
                for member in chain:
                    member.attributes[TARGET_ATTR] = tag
                    member.attributes[COMPOSITE_ATTR] = name
        for op in ops:
            if TARGET_ATTR in op.attributes or (exclude and excluded(op, backend)):
                continue
            reason = _ask(backend, backend.check, op, f"check of {op.name}", op)
            if reason is None:
                op.attributes[TARGET_ATTR] = tag
            else:
                reasons.setdefault(op, []).append(reason)
    for op in ops:
        if TARGET_ATTR not in op.attributes:
            declined[op] = reasons.get(op, [])
    alter_ops(ops, backends)
    mark_inlined_constants(block, backends)


def alter_ops(ops: Sequence[Operation], backends: Sequence[Backend]) -> None:
    """Let each backend replace the ops it took (`Backend.alter_op`)."""
    hooks = {b.name: b.alter_op for b in backends if b.alter_op is not None}
    if not hooks:
        return
    for op in ops:
        target = op.attributes.get(TARGET_ATTR)
        hook = hooks.get(target.data) if isinstance(target, StringAttr) else None
        if hook is not None:
            hook(op)


def annotate(
    module: ModuleOp,
    backends: Sequence[Backend],
    strict: bool = False,
    exclude: Exclusions | None = None,
) -> dict[Operation, list[str]]:
    """Mark ops for backends; returns, for each op left on the host, why.

    With `strict`, an op no backend takes is an error listing every such op.
    `exclude` names, per op, backends that must not take it.
    """
    declined: dict[Operation, list[str]] = {}
    for function in host_functions(module):
        annotate_block(function.body.block, backends, declined, exclude)
    if strict and declined:
        lines = [
            f"  {describe(op)}: {'; '.join(why) or 'no backend given'}"
            for op, why in declined.items()
        ]
        raise ByocError(
            f"error: --no-fallback: {len(declined)} op(s) are not supported by "
            f"{', '.join(b.name for b in backends) or 'any backend'}:\n"
            + "\n".join(lines)
        )
    return declined


@dataclass(frozen=True)
class AnnotatePass(ModulePass):
    """Marks ops with `extern.target` for the first of `targets` that takes them."""

    name = "byoc-annotate"

    targets: tuple[str, ...] = (DEFAULT_BACKEND,)
    """Backends in priority order: `byoc-annotate{targets=cblas,ccompiler}`."""

    no_fallback: bool = False
    """Fail, listing every op, when some op is taken by no backend."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        annotate(op, parse_targets(self.targets), strict=self.no_fallback)
