"""Partition: outline each `extern.region` into a function called with `extern.call`.

A region of backend `b` becomes
`func.func private @b_<n>(...) attributes {extern.compiler = "b"}`, inserted
after the function that held it, and the region op is replaced by
`extern.call @b_<n>(...)`. Numbers are unique across the module and follow
program order, so the output is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.dialects.extern import COMPILER_ATTR, CallOp, RegionOp, YieldOp
from byoc.passes.annotate import host_functions
from byoc.passes.merge_regions import merge_regions
from byoc.passes.speed import garbage_collector_paused


class SymbolNamer:
    """Hands out `<backend>_<n>` names not yet used in the module."""

    def __init__(self, module: ModuleOp):
        self.taken = {
            op.sym_name.data
            for op in module.body.block.ops
            if isinstance(op, func.FuncOp)
        }
        self.next: dict[str, int] = {}

    def fresh(self, backend: str) -> str:
        n = self.next.get(backend, 0)
        while f"{backend}_{n}" in self.taken:
            n += 1
        self.next[backend] = n + 1
        name = f"{backend}_{n}"
        self.taken.add(name)
        return name


def outline(region_op: RegionOp, name: str) -> func.FuncOp:
    """Replace `region_op` with an extern.call of a new function holding its body."""
    backend = region_op.compiler.data
    block: Block = region_op.body.block
    region_op.body.detach_block(block)
    yield_op = block.last_op
    assert isinstance(yield_op, YieldOp)
    results = list(yield_op.values)
    Rewriter.replace_op(yield_op, func.ReturnOp(*results))
    function = func.FuncOp(
        name,
        FunctionType.from_lists(
            [a.type for a in block.args], [r.type for r in results]
        ),
        Region(block),
        visibility="private",
    )
    function.attributes[COMPILER_ATTR] = StringAttr(backend)
    function.location = region_op.location
    call = CallOp(name, list(region_op.inputs), [r.type for r in region_op.outputs])
    call.location = region_op.location
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


def partition(module: ModuleOp) -> list[func.FuncOp]:
    """Outline every extern.region of the module; returns the new functions."""
    namer = SymbolNamer(module)
    outlined: list[func.FuncOp] = []
    with garbage_collector_paused():
        for host in list(host_functions(module)):
            regions = [op for op in host.body.block.ops if isinstance(op, RegionOp)]
            anchor = host
            for region_op in regions:
                function = outline(region_op, namer.fresh(region_op.compiler.data))
                Rewriter.insert_op(function, InsertPoint.after(anchor))
                anchor = function
                outlined.append(function)
    return outlined


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Merges marked ops into regions, then outlines each region into a function."""

    name = "byoc-partition"

    min_region_size: int = 1
    """Regions with fewer ops than this go back to the host."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_regions(op, self.min_region_size)
        partition(op)


@dataclass(frozen=True)
class OutlineRegionsPass(ModulePass):
    """Outlines every `extern.region` into a function called with `extern.call`."""

    name = "byoc-outline-regions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partition(op)
