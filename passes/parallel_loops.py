"""Marks the loops of the loop-level IR that are worth running across cores.

A `scf.for` gets the unit attribute `byoc.parallel` when

- its iterations are independent: it carries no values (`iter_args`), calls
  nothing, allocates and frees nothing, and every buffer it stores to (other
  than ones allocated inside it) is indexed by its induction variable at one
  fixed dimension in every load and store inside it, so iteration `i` only
  touches slice `i` of that buffer (buffers never alias: docs/architecture.md);
- it runs at least twice, with constant bounds;
- its work (trip counts times ops, inner loops included; an inner loop with
  clamped bounds `[max(0, x), min(n, y))` counts `n` iterations) is at least
  `MIN_WORK`, so that a fork and join of threads (about a microsecond) pays.

A marked loop also gets `byoc.chunks`, how many pieces its work is worth
(`CHUNK_WORK` each, at least 2, at most its trips and the outliner's 64):
claiming a chunk costs a compare-and-swap on a line the other cores share, so
a chunk should be microseconds of work, not the 16 elements of a 1024-wide
epilogue row cut in 64 (QDQ MLP: 399 chunks a call, 256 of them such).

- every loop inside it has constant bounds. GCC outlines the body of a
  parallel loop into a function and optimises it less well; for the clamped
  windows of a direct convolution that measured 2x slower per thread (264 us
  vs 142 us for a 16->32 3x3 conv on 16x16), so such nests stay sequential.

Only the outermost such loop of a nest is marked; loops inside it, and inside
a loop its builder marked already (an int8 kernel's row blocks), are not
looked at. `convert-loops-to-emitc` prints a marked loop with
`#pragma omp parallel for`; the LLVM exit ignores the mark. The check is
conservative: a loop it cannot prove independent stays sequential.

Linear in the size of the IR times the loop depth; recursion follows loop
nesting only, never the number of ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

PARALLEL_ATTR = "byoc.parallel"
"""The unit attribute of a `scf.for` whose iterations may run on any core."""

CHUNKS_ATTR = "byoc.chunks"
"""The integer attribute of a marked loop: the most chunks worth running it in
(byoc-outline-parallel-loops' default, 64, when absent)."""

CHUNK_WORK = 1 << 15
"""Ops (trip counts times ops in the body) of one chunk: about 2-10 us."""

MIN_WORK = 2 * CHUNK_WORK
"""Ops below which a loop stays sequential: it is not worth two chunks."""


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _iterations(lb: int | None, ub: int | None, step: int | None) -> int | None:
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def trip_count(loop: scf.ForOp) -> int | None:
    """Iterations of `loop` when its bounds are constants, else None."""
    return _iterations(*(_constant(v) for v in (loop.lb, loop.ub, loop.step)))


# `select(cmpi sgt/slt (a, b), a, b)`: how lower_nn spells max and min.
_MAX_PREDICATES = {"sgt": True, "sge": True, "slt": False, "sle": False}


def _bound(value: SSAValue, upper: bool) -> int | None:
    """A constant bound of an index that is a constant, or a max/min of one."""
    known = _constant(value)
    if known is not None:
        return known
    select = value.owner
    if not isinstance(select, arith.SelectOp):
        return None
    cmp = select.cond.owner
    if not isinstance(cmp, arith.CmpiOp) or (cmp.lhs, cmp.rhs) != (
        select.lhs,
        select.rhs,
    ):
        return None
    is_max = _MAX_PREDICATES.get(arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data])
    if is_max is None:
        return None
    # max(a, b) >= each known one; min(a, b) <= each known one.
    if is_max == upper:
        return None
    bounds = [b for v in (select.lhs, select.rhs) if (b := _constant(v)) is not None]
    if not bounds:
        return None
    return max(bounds) if is_max else min(bounds)


def estimated_trips(loop: scf.ForOp) -> int | None:
    """Iterations of `loop`, or at most how many when its bounds are clamped at
    run time (`[max(0, x), min(n, y))`, as windows of convolutions are)."""
    # A constant is its own bound.
    return _iterations(_bound(loop.lb, False), _bound(loop.ub, True), _constant(loop.step))


class _Work:
    """Work of each loop (memoised): trip count times the work of its body."""

    def __init__(self) -> None:
        self.known: dict[scf.ForOp, int | None] = {}

    def of_loop(self, loop: scf.ForOp) -> int | None:
        if loop in self.known:
            return self.known[loop]
        trips = estimated_trips(loop)
        body = self.of_ops(loop.body.block.ops)
        work = None if trips is None or body is None else trips * body
        self.known[loop] = work
        return work

    def of_ops(self, ops) -> int | None:  # noqa: ANN001 - an op iterable
        total = 0
        for op in ops:
            if isinstance(op, scf.ForOp):
                inner = self.of_loop(op)
            elif isinstance(op, scf.IfOp):  # both branches, as an upper bound
                branches = [self.of_ops(b.ops) for r in op.regions for b in r.blocks]
                inner = None if None in branches else 1 + sum(branches)  # type: ignore[arg-type]
            else:
                inner = 1
            if inner is None:
                return None
            total += inner
        return total


def independent(loop: scf.ForOp) -> bool:
    """Whether the iterations of `loop` touch disjoint memory (see the module doc)."""
    if loop.iter_args:
        return False
    iv = loop.body.block.args[0]
    accesses: dict[SSAValue, list[tuple[SSAValue, ...]]] = {}
    stored: set[SSAValue] = set()
    private: set[SSAValue] = set()
    for op in loop.body.walk():
        if isinstance(op, memref.StoreOp):
            stored.add(op.memref)
            accesses.setdefault(op.memref, []).append(tuple(op.indices))
        elif isinstance(op, memref.LoadOp):
            accesses.setdefault(op.memref, []).append(tuple(op.indices))
        elif isinstance(op, memref.AllocOp | memref.DeallocOp | func.CallOp):
            return False  # a failed malloc returns from the function; calls may write
        elif isinstance(op, scf.ForOp):
            if trip_count(op) is None:
                return False  # see the module doc: run-time bounds
        elif isinstance(op, memref.AllocaOp):
            private.add(op.memref)  # a local array of each iteration
        elif isinstance(op, scf.IfOp | scf.YieldOp):
            continue
        elif op.dialect_name() not in ("arith", "math"):
            return False  # an op this check does not know
    for buffer in stored - private:
        uses = accesses[buffer]
        rank = len(uses[0])
        if not any(all(use[d] is iv for use in uses) for d in range(rank)):
            return False
    return True


def mark_parallel_loops(function: func.FuncOp, min_work: int = MIN_WORK) -> int:
    """Mark the outermost profitable independent loops of `function`; returns how many."""
    work = _Work()
    marked = 0
    pending: list[Operation] = [
        op for block in function.body.blocks for op in block.ops
    ]
    while pending:
        op = pending.pop()
        if isinstance(op, scf.IfOp):
            pending += [o for region in op.regions for block in region.blocks for o in block.ops]
            continue
        if not isinstance(op, scf.ForOp):
            continue
        if PARALLEL_ATTR in op.attributes:
            continue  # marked by whoever built it (an int8 kernel): nothing inside runs in parallel
        amount = work.of_loop(op)
        if amount is not None and amount < min_work:
            continue  # nothing inside it is worth it either
        trips = trip_count(op)
        if amount is not None and trips is not None and trips >= 2 and independent(op):
            op.attributes[PARALLEL_ATTR] = UnitAttr()
            chunks = max(2, min(trips, amount // CHUNK_WORK))
            op.attributes[CHUNKS_ATTR] = IntegerAttr(chunks, i64)
            marked += 1
            continue
        pending += list(op.body.block.ops)
    return marked


@dataclass(frozen=True)
class MarkParallelLoopsPass(ModulePass):
    """Marks loops worth running across cores with `byoc.parallel`."""

    name = "byoc-mark-parallel-loops"

    min_work: int = MIN_WORK
    """Ops below which a loop stays sequential."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                mark_parallel_loops(function, self.min_work)
