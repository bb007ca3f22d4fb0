"""Partition: outline each region into a function called with `extern.call`.

A region of backend `b` becomes
`func.func private @b_<n>(...) attributes {extern.compiler = "b"}`, inserted
after the function that held it, and is called from there with
`extern.call @b_<n>(...)`. Numbers are unique across the module and follow
program order, so the output is deterministic.

`byoc-partition` goes straight from the region assignment of merge_regions to
functions and calls; `byoc-outline-regions` outlines existing `extern.region`
ops (e.g. written by hand or left by `byoc-merge-regions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.dialects.extern import COMPILER_ATTR, CallOp, RegionOp, YieldOp
from byoc.passes.annotate import host_functions
from byoc.passes.merge_regions import Cut, group_block, redirect
from byoc.passes.speed import garbage_collector_paused

PRIVATE = StringAttr("private")


class Outliner:
    """Builds outlined functions with fresh `<backend>_<n>` names.

    Attributes and types shared by many functions are made once: creating
    them is a large part of the cost of outlining a big graph.
    """

    def __init__(self, module: ModuleOp):
        self.taken = {
            op.sym_name.data
            for op in module.body.block.ops
            if isinstance(op, func.FuncOp)
        }
        self.next: dict[str, int] = {}
        self._types: dict[tuple[tuple[Attribute, ...], tuple[Attribute, ...]], FunctionType] = {}

    def fresh(self, backend: str) -> str:
        n = self.next.get(backend, 0)
        while f"{backend}_{n}" in self.taken:
            n += 1
        self.next[backend] = n + 1
        name = f"{backend}_{n}"
        self.taken.add(name)
        return name

    def function_type(
        self, inputs: Sequence[Attribute], outputs: Sequence[Attribute]
    ) -> FunctionType:
        key = (tuple(inputs), tuple(outputs))
        typ = self._types.get(key)
        if typ is None:
            typ = self._types[key] = FunctionType.from_lists(inputs, outputs)
        return typ

    def function(
        self, backend: StringAttr, body: Block, results: Sequence[Operation | object], location: Attribute
    ) -> tuple[func.FuncOp, str]:
        """A private function of `backend` around `body`, which must end in a return."""
        name = self.fresh(backend.data)
        function = func.FuncOp.create(
            properties={
                "sym_name": StringAttr(name),
                "function_type": self.function_type(
                    [a.type for a in body.args], [r.type for r in results]  # type: ignore[attr-defined]
                ),
                "sym_visibility": PRIVATE,
            },
            attributes={COMPILER_ATTR: backend},
            regions=[Region(body)],
        )
        function.location = location  # type: ignore[assignment]
        return function, name


def _call(name: str, inputs: Sequence, outputs: Sequence, location: Attribute) -> CallOp:
    call = CallOp.create(
        operands=list(inputs),
        result_types=[r.type for r in outputs],
        properties={"callee": SymbolRefAttr(name)},
    )
    call.location = location  # type: ignore[assignment]
    return call


def outline(region_op: RegionOp, outliner: Outliner) -> func.FuncOp:
    """Replace an existing `extern.region` with a call of a new function."""
    block = region_op.body.block
    region_op.body.detach_block(block)
    yield_op = block.last_op
    assert isinstance(yield_op, YieldOp)
    results = list(yield_op.values)
    Rewriter.replace_op(yield_op, func.ReturnOp.create(operands=results))
    function, name = outliner.function(region_op.compiler, block, results, region_op.location)
    call = _call(name, region_op.inputs, region_op.outputs, region_op.location)
    # Rewire users from their side: linear even for widely used values.
    for old, new in zip(region_op.outputs, call.res):
        for use in list(old.uses):
            use.operation.operands[use.index] = new
    parent = region_op.parent_block()
    assert parent is not None
    parent.insert_op_before(call, region_op)
    region_op.detach()
    region_op.erase(safe_erase=False)
    return function


def _insert_after(anchor: Operation, functions: Sequence[func.FuncOp]) -> None:
    for function in functions:
        Rewriter.insert_op(function, InsertPoint.after(anchor))
        anchor = function


def outline_regions(module: ModuleOp) -> list[func.FuncOp]:
    """Outline every existing extern.region of the module."""
    outliner = Outliner(module)
    outlined: list[func.FuncOp] = []
    with garbage_collector_paused():
        for host in list(host_functions(module)):
            regions = [op for op in host.body.block.ops if isinstance(op, RegionOp)]
            functions = [outline(r, outliner) for r in regions]
            _insert_after(host, functions)
            outlined += functions
    return outlined


def partition(module: ModuleOp, min_region_size: int = 1) -> list[func.FuncOp]:
    """Merge the marked ops of every host function and outline each region.

    Existing extern.regions are outlined too. Returns the new functions.
    """
    outliner = Outliner(module)
    outlined: list[func.FuncOp] = []
    with garbage_collector_paused():
        for host in list(host_functions(module)):
            functions: list[func.FuncOp] = []

            def as_call(cut: Cut) -> Operation:
                cut.body.add_op(func.ReturnOp.create(operands=cut.outputs))
                location = cut.region.ops[0].location
                function, name = outliner.function(
                    cut.region.backend, cut.body, cut.outputs, location
                )
                functions.append(function)
                call = _call(name, cut.inputs, cut.outputs, location)
                redirect(cut, call.results)
                return call

            block = host.body.block
            existing = [op for op in block.ops if isinstance(op, RegionOp)]
            functions += [outline(r, outliner) for r in existing]
            group_block(block, min_region_size, as_call)
            _insert_after(host, functions)
            outlined += functions
    return outlined


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Merges marked ops into regions, then outlines each region into a function."""

    name = "byoc-partition"

    min_region_size: int = 1
    """Regions with fewer ops than this go back to the host."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partition(op, self.min_region_size)


@dataclass(frozen=True)
class OutlineRegionsPass(ModulePass):
    """Outlines every `extern.region` into a function called with `extern.call`."""

    name = "byoc-outline-regions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outline_regions(op)
