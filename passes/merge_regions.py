"""Merge regions: group ops of one backend into `extern.region`s without creating cycles.

Ops are visited once in program order (a topological order). The graph being
built is the condensed one: each region is one node, each host op another.
Every node keeps the set of regions it depends on, transitively, as a bitset
of region ids. An op marked for a backend may join a region of that backend
unless the region is among the dependencies of one of the op's producers: the
region would then be both upstream and downstream of that producer, a cycle.

When an op joins a region, the region gains the op's dependencies, and so does
everything already downstream of the region; that growth is pushed along the
consumer edges (iteratively, each node's set only grows, so the work is
bounded by the bits that actually change).

Joining any compatible region of the backend, not only a producer's, makes
the result maximal: when an op opens a new region, every existing region of
its backend is upstream of one of its producers, so no two final regions of
one backend can be merged without a cycle.

The regions are then materialised in a topological order of the condensed
graph, so every value is still defined before use.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.ir import Region as IRRegion
from xdsl.passes import ModulePass

from byoc.dialects.extern import (
    COMPOSITE_ATTR,
    INLINE_ATTR,
    TARGET_ATTR,
    RegionOp,
    YieldOp,
)
from byoc.passes.annotate import host_functions
from byoc.passes.speed import garbage_collector_paused


@dataclass(eq=False)
class Region:
    """A group of ops of one backend, in program order."""

    id: int
    backend: StringAttr
    ops: list[Operation] = field(default_factory=list)


Node = Operation | Region
"""A node of the condensed graph: a host op or a region."""


def assign_regions(block: Block) -> tuple[list[Region], dict[Operation, Region]]:
    """Assign each marked op of `block` to a region; one sweep in program order."""
    regions: list[Region] = []
    region_of: dict[Operation, Region] = {}
    backend_regions: dict[StringAttr, int] = {}  # backend -> bitset of region ids
    deps: dict[Node, int] = {}  # node -> regions it depends on, transitively
    consumers: dict[Node, list[Node]] = {}  # node -> nodes using its values

    def grow(node: Node, added: int) -> None:
        """Add `added` to the dependencies of `node` and of everything downstream."""
        stack = [(node, added)]
        while stack:
            n, bits = stack.pop()
            new = bits & ~deps[n]
            if new:
                deps[n] |= new
                stack.extend((c, new) for c in consumers[n])

    for op in block.ops:
        producers: list[Node] = []
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation):
                node = region_of.get(owner, owner)
                if node in deps:
                    producers.append(node)
        blocked = 0  # regions upstream of a producer: joining them makes a cycle
        producer_bits = 0
        for node in producers:
            blocked |= deps[node]
            if isinstance(node, Region):
                producer_bits |= 1 << node.id

        target = op.attributes.get(TARGET_ATTR)
        chosen: Region | None = None
        if isinstance(target, StringAttr):
            # Prefer a producer's region (locality), then any compatible one.
            for node in producers:
                if (
                    isinstance(node, Region)
                    and node.backend == target
                    and not (blocked >> node.id) & 1
                ):
                    chosen = node
                    break
            if chosen is None:
                candidates = backend_regions.get(target, 0) & ~blocked
                if candidates:
                    chosen = regions[(candidates & -candidates).bit_length() - 1]
            if chosen is None:
                chosen = Region(len(regions), target)
                regions.append(chosen)
                backend_regions[target] = backend_regions.get(target, 0) | (
                    1 << chosen.id
                )
                deps[chosen] = 0
                consumers[chosen] = []
            chosen.ops.append(op)
            region_of[op] = chosen
            me: Node = chosen
            grow(chosen, blocked | (producer_bits & ~(1 << chosen.id)))
        else:
            me = op
            deps[op] = blocked | producer_bits
            consumers[op] = []
        for node in producers:
            if node is not me:
                consumers[node].append(me)
    return regions, region_of


def _units_in_topological_order(
    block: Block, regions: list[Region], region_of: dict[Operation, Region]
) -> Iterator[Operation | Region]:
    """Host ops and regions in a topological order, close to program order."""
    position = {op: i for i, op in enumerate(block.ops)}

    def unit(op: Operation) -> Operation | Region:
        return region_of.get(op, op)

    def first_position(u: Operation | Region) -> int:
        return position[u.ops[0]] if isinstance(u, Region) else position[u]

    units: list[Operation | Region] = []
    for op in block.ops:
        region = region_of.get(op)
        if region is None:
            units.append(op)
        elif region.ops[0] is op:
            units.append(region)
    indegree: dict[int, int] = {id(u): 0 for u in units}
    successors: dict[int, set[int]] = {id(u): set() for u in units}
    by_id = {id(u): u for u in units}
    for u in units:
        ops = u.ops if isinstance(u, Region) else [u]
        for op in ops:
            for operand in op.operands:
                producer = operand.owner
                if not isinstance(producer, Operation) or producer not in position:
                    continue
                p = unit(producer)
                if p is u or id(u) in successors[id(p)]:
                    continue
                successors[id(p)].add(id(u))
                indegree[id(u)] += 1
    ready = [(first_position(u), id(u)) for u in units if indegree[id(u)] == 0]
    heapq.heapify(ready)
    while ready:
        _, uid = heapq.heappop(ready)
        u = by_id[uid]
        yield u
        for sid in successors[uid]:
            indegree[sid] -= 1
            if indegree[sid] == 0:
                heapq.heappush(ready, (first_position(by_id[sid]), sid))


@dataclass
class Cut:
    """A region's ops moved into a block of their own, not yet wired back."""

    region: Region
    inputs: list[SSAValue]
    """Values from outside the region it reads, one per block argument."""
    outputs: list[OpResult]
    """Values of the region used outside it."""
    body: Block
    """The region's ops, reading the block arguments; no terminator yet."""


def cut_out(region: Region) -> Cut:
    """Move `region`'s ops into a new block whose arguments are the values it reads."""
    members = set(region.ops)
    inputs: list[SSAValue] = []
    arg_of: dict[SSAValue, SSAValue] = {}
    body = Block()
    copies: list[Operation] = []
    outputs: list[OpResult] = []
    for op in region.ops:
        for i, operand in enumerate(op.operands):
            owner = operand.owner
            if isinstance(owner, Operation) and owner in members:
                continue
            arg = arg_of.get(operand)
            if arg is None:
                if isinstance(owner, Operation) and _inlined_into(owner, region):
                    copy = owner.clone()
                    del copy.attributes[INLINE_ATTR]
                    copies.append(copy)
                    arg = copy.results[0]
                else:
                    arg = body.insert_arg(operand.type, len(inputs))
                    inputs.append(operand)
                arg_of[operand] = arg
            op.operands[i] = arg
        for result in op.results:
            if any(use.operation not in members for use in result.uses):
                outputs.append(result)
    body.add_ops(copies)
    for op in region.ops:
        op.detach()
        body.add_op(op)
        del op.attributes[TARGET_ATTR]
    return Cut(region, inputs, outputs, body)


def _inlined_into(op: Operation, region: Region) -> bool:
    """Whether `op` is a constant that `region`'s backend copies instead of passing."""
    inline = op.attributes.get(INLINE_ATTR)
    return isinstance(inline, ArrayAttr) and region.backend in inline.data


def drop_inlined_constants(block: Block) -> None:
    """Remove host constants every user of which got its own copy; untag the rest."""
    for op in list(block.ops):
        if INLINE_ATTR in op.attributes:
            if op.results[0].uses:
                del op.attributes[INLINE_ATTR]
            else:
                op.detach()
                op.erase()


def redirect(cut: Cut, replacements: Sequence[SSAValue]) -> None:
    """Make users outside the cut read `replacements` instead of its outputs."""
    for result, new in zip(cut.outputs, replacements, strict=True):
        for use in list(result.uses):
            # Uses inside the body (its ops, its terminator) keep the inner value.
            if use.operation.parent_block() is not cut.body:
                use.operation.operands[use.index] = new


def as_region_op(cut: Cut) -> RegionOp:
    """The `extern.region` holding a cut, ended by `extern.yield`."""
    cut.body.add_op(YieldOp.create(operands=cut.outputs))
    region_op = RegionOp.create(
        operands=cut.inputs,
        result_types=[r.type for r in cut.outputs],
        properties={"compiler": cut.region.backend},
        regions=[IRRegion(cut.body)],
    )
    region_op.location = cut.region.ops[0].location
    redirect(cut, region_op.results)
    return region_op


def prune(regions: list[Region], min_region_size: int) -> bool:
    """Send regions of fewer than `min_region_size` ops back to the host."""
    pruned = False
    for region in regions:
        if len(region.ops) < min_region_size:
            pruned = True
            for op in region.ops:
                del op.attributes[TARGET_ATTR]
                op.attributes.pop(COMPOSITE_ATTR, None)
    return pruned


def group_block(
    block: Block, min_region_size: int, make: Callable[[Cut], Operation]
) -> list[Operation]:
    """Cut the marked ops of `block` into regions, each replaced by `make(cut)`.

    The block is rebuilt in a topological order of the condensed graph.
    """
    regions, region_of = assign_regions(block)
    # Pruning only unmarks ops, so this ends; usually one more sweep at most.
    while prune(regions, min_region_size):
        regions, region_of = assign_regions(block)
    if not regions:
        drop_inlined_constants(block)
        return []
    order = list(_units_in_topological_order(block, regions, region_of))
    created: list[Operation] = []
    for unit in order:
        if isinstance(unit, Region):
            op = make(cut_out(unit))
            created.append(op)
            block.add_op(op)
        else:
            unit.detach()
            block.add_op(unit)
    drop_inlined_constants(block)
    return created


def merge_block(block: Block, min_region_size: int = 1) -> list[RegionOp]:
    """Group the marked ops of `block` into extern.regions, in topological order."""
    return group_block(block, min_region_size, as_region_op)  # type: ignore[return-value]


def merge_regions(module: ModuleOp, min_region_size: int = 1) -> list[RegionOp]:
    """Merge the marked ops of every host function; returns the new regions.

    Regions of fewer than `min_region_size` ops go back to the host.
    """
    with garbage_collector_paused():
        created: list[RegionOp] = []
        for function in host_functions(module):
            created += merge_block(function.body.block, min_region_size)
        return created


@dataclass(frozen=True)
class MergeRegionsPass(ModulePass):
    """Groups ops marked with `extern.target` into cycle-free `extern.region`s."""

    name = "byoc-merge-regions"

    min_region_size: int = 1
    """Regions with fewer ops than this go back to the host."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_regions(op, self.min_region_size)
