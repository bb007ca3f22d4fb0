"""byoc-dedup-functions: structurally identical private functions become one.

A model built of repeated blocks gives repeated functions: identical outlined
regions (each backend's codegen would compile every copy), identical parts of
a split `main` (byoc-split-functions). Merged, each distinct function is
lowered and compiled once and called from every place a copy was, so the work
of the exits grows with the number of distinct blocks, not with the model (as
TVM's compile engine caches lowered functions by structural hash, and LLVM's
MergeFunctions does for machine code).

Two functions are identical when they have the same type, the same attributes
(but their names) and the same ops in the same order, with the same
properties, attributes and result types, reading the same arguments and
earlier results, calling the same functions. Weights compare by their bytes.
Only private functions merge (a public one is an entry point); the first of
each kind stays, every call of the others calls it. Linear: one key per
function, repeated while merging callees makes callers equal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects import extern
from byoc.passes.speed import garbage_collector_paused

_IGNORED = frozenset({"sym_name"})


def function_key(function: func.FuncOp) -> Hashable | None:
    """What makes `function` what it is, as a hashable value (None: it has nested
    regions or several blocks, which this pass leaves alone)."""
    blocks = list(function.body.blocks)
    if len(blocks) != 1:
        return None
    ids: dict[SSAValue, tuple[int, int]] = {
        arg: (-1, i) for i, arg in enumerate(blocks[0].args)
    }
    ops: list[Hashable] = []
    for index, op in enumerate(blocks[0].ops):
        if op.regions:
            return None
        try:
            operands = tuple(ids[v] for v in op.operands)
        except KeyError:  # a value from outside the function
            return None
        for k, result in enumerate(op.results):
            ids[result] = (index, k)
        ops.append(
            (
                op.name,
                tuple(sorted(op.properties.items())),
                tuple(sorted(op.attributes.items())),
                operands,
                tuple(r.type for r in op.results),
            )
        )
    own = tuple(
        sorted(
            (k, v)
            for k, v in (*function.properties.items(), *function.attributes.items())
            if k not in _IGNORED
        )
    )
    return own, tuple(ops)


def _is_private(function: func.FuncOp) -> bool:
    visibility = function.sym_visibility
    return visibility is not None and visibility.data == "private"


def _calls(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, (func.CallOp, extern.CallOp))]


def dedup_functions(
    module: ModuleOp, select: Callable[[func.FuncOp], bool] = lambda _: True
) -> dict[str, str]:
    """Merge identical private functions of `module` (those `select` takes);
    returns removed → kept names."""
    merged: dict[str, str] = {}
    with garbage_collector_paused():
        while True:
            kept: dict[Hashable, str] = {}
            renamed: dict[str, str] = {}
            for function in list(module.ops):
                if not isinstance(function, func.FuncOp) or not function.body.blocks:
                    continue
                if not _is_private(function) or not select(function):
                    continue
                key = function_key(function)
                if key is None:
                    continue
                name = function.sym_name.data
                first = kept.setdefault(key, name)
                if first != name:
                    renamed[name] = first
                    function.detach()
                    function.erase(safe_erase=False)
            if not renamed:
                return merged
            for op in _calls(module):
                callee = op.callee.root_reference.data  # type: ignore[attr-defined]
                if callee in renamed:
                    op.callee = SymbolRefAttr(renamed[callee])  # type: ignore[attr-defined]
            for old, new in merged.items():
                merged[old] = renamed.get(new, new)
            merged.update(renamed)


@dataclass(frozen=True)
class DedupFunctionsPass(ModulePass):
    """Merges structurally identical private functions (calls go to the first)."""

    name = "byoc-dedup-functions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        dedup_functions(op)
