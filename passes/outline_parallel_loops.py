"""Runs the `emitc.for` loops marked `byoc.parallel` on libbyoc's pool of threads.

Each marked loop moves into a `static` function of its own, whose parameters
are the values the loop reads from outside it (pointers `restrict`, and
`const` when only loaded from) and the range of iterations to run. A second,
exported function `void <function>_par<N>(void* context, int64_t index)`
unpacks those values from an array of `void*` and runs chunk `index` of the
iterations; the loop's place holds the array and a call of
`byoc_rt_parallel_for(chunks, <function>_par<N>, array)` (byoc_runtime.h).
libbyoc's pool claims chunks one at a time and its callers never wait for a
thread that has not started, which an OpenMP barrier does (docs/architecture.md,
"The C runtime").

A loop reads pointers and integers through the array; constants, literals and
globals it reads are copied into its function. A loop that reads anything else
(a float or a local array defined outside it) stays a sequential loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.context import Context
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects.emitc import (
    CONST_ATTR,
    RESTRICT_ATTR,
    EmitC_AddOp,
    EmitC_CallOp,
    EmitC_CastOp,
    EmitC_CmpOp,
    EmitC_ConditionalOp,
    EmitC_ConstantOp,
    EmitC_DivOp,
    EmitC_ForOp,
    EmitC_FuncOp,
    EmitC_GetGlobalOp,
    EmitC_IncludeOp,
    EmitC_LiteralOp,
    EmitC_LoadOp,
    EmitC_MulOp,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_ReturnOp,
    EmitC_SubOp,
    EmitC_SubscriptOp,
    EmitC_VerbatimOp,
)

from byoc.passes.parallel_loops import CHUNKS_ATTR, PARALLEL_ATTR

MAX_CHUNKS = 64
"""Chunks a loop is cut into at most: enough for a busy machine's threads to
share the work, few enough that claiming them costs nothing. A loop's
`byoc.chunks` (its work, byoc-mark-parallel-loops) lowers it."""

RUNTIME_HEADER = "byoc_runtime.h"

_VOID = EmitC_OpaqueType(StringAttr("void"))
_VOID_PTR = EmitC_PointerType(_VOID)
_SLOTS = EmitC_PointerType(_VOID_PTR)
_INTPTR = EmitC_OpaqueType(StringAttr("intptr_t"))
_CLONED = (EmitC_ConstantOp, EmitC_LiteralOp, EmitC_GetGlobalOp)
"""Ops without operands whose copies inside the loop's function mean the same."""


def mark_parallel(loop: EmitC_ForOp) -> None:
    """Ask for `loop` to run on the pool (its iterations touch disjoint memory)."""
    loop.attributes[PARALLEL_ATTR] = UnitAttr()


def _inside(value: SSAValue, loop: Operation) -> bool:
    """Whether `value` is defined within `loop`'s region."""
    block = value.owner if isinstance(value.owner, Block) else value.owner.parent_block()
    while block is not None:
        parent = block.parent_op()
        if parent is loop:
            return True
        if parent is None:
            return False
        block = parent.parent_block()
    return False


def _walk(block: Block) -> Iterator[Operation]:
    stack = [block]
    while stack:
        current = stack.pop()
        for op in current.ops:
            yield op
            for region in op.regions:
                stack.extend(region.blocks)


def _captured(loop: EmitC_ForOp) -> list[SSAValue]:
    """Values the loop's body reads from outside the loop, in first-use order."""
    seen: dict[SSAValue, None] = {}
    for op in _walk(loop.region.block):
        for value in op.operands:
            if value not in seen and not _inside(value, loop):
                seen[value] = None
    return list(seen)


def _passable(value: SSAValue) -> bool:
    return isinstance(value.type, EmitC_PointerType | IntegerType | IndexType)


def _inside_op(op: Operation, loop: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent is loop:
            return True
        parent = parent.parent_op()
    return False


class _Outliner:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.count = 0
        self.outlined = False

    def run(self) -> bool:
        functions = [op for op in self.module.ops if isinstance(op, EmitC_FuncOp)]
        for function in functions:
            if function.is_declaration:
                continue
            loops = [
                op
                for op in _walk(function.body.block)
                if isinstance(op, EmitC_ForOp) and PARALLEL_ATTR in op.attributes
            ]
            for loop in loops:
                del loop.attributes[PARALLEL_ATTR]
                most = loop.attributes.pop(CHUNKS_ATTR, None)
                self.outline(function, loop, most.value.data if isinstance(most, IntegerAttr) else MAX_CHUNKS)
        if self.outlined:
            self.module.body.block.insert_op_before(
                EmitC_IncludeOp(RUNTIME_HEADER, is_standard_include=False),
                self.module.body.block.first_op,
            )
        return self.outlined

    def outline(self, function: EmitC_FuncOp, loop: EmitC_ForOp, most_chunks: int) -> None:
        captured = _captured(loop)
        cloned = [v for v in captured if isinstance(v.owner, _CLONED)]
        passed = [v for v in captured if v not in cloned]
        if not all(_passable(v) for v in passed) or not _passable(loop.lowerBound):
            return  # stays sequential
        name = f"{function.sym_name.data}_par{self.count}"
        self.call_site(name, self.count, loop, passed, min(most_chunks, MAX_CHUNKS))
        self.count += 1
        body = self.body_function(name + "_body", loop, passed, cloned)
        task = self.task_function(name, body, passed)
        self.module.body.block.insert_ops_before([body, task], function)
        self.outlined = True

    def body_function(
        self, name: str, loop: EmitC_ForOp, passed: list[SSAValue], cloned: list[SSAValue]
    ) -> EmitC_FuncOp:
        """`static void name(captured..., int64_t begin, int64_t end)` running the
        loop over [begin, end): the loop itself moves here."""
        bound = loop.lowerBound.type
        types = [v.type for v in passed]
        block = Block(arg_types=[*types, bound, bound])
        for value, arg in zip(passed, block.args):
            value.replace_uses_with_if(arg, lambda use: _inside_op(use.operation, loop))
        for value in cloned:
            copy = value.owner.clone()  # type: ignore[union-attr]
            block.add_op(copy)
            value.replace_uses_with_if(
                copy.results[0], lambda use: _inside_op(use.operation, loop)
            )
        step = loop.step
        if not isinstance(step.owner, _CLONED):
            raise AssertionError("a parallel loop's step is a constant")
        step_copy = step.owner.clone()
        block.add_op(step_copy)
        loop.detach()
        block.add_op(loop)
        loop.operands = [block.args[-2], block.args[-1], step_copy.results[0]]
        block.add_op(EmitC_ReturnOp(None))
        attrs = []
        for value in passed:
            entry: dict[str, Attribute] = {}
            if isinstance(value.type, EmitC_PointerType):
                entry[RESTRICT_ATTR] = UnitAttr()
                if _only_loaded_in(block, block.args[passed.index(value)]):
                    entry[CONST_ATTR] = UnitAttr()
            attrs.append(DictionaryAttr(entry))
        attrs += [DictionaryAttr({}), DictionaryAttr({})]
        return EmitC_FuncOp(
            name,
            FunctionType.from_lists([*types, bound, bound], []),
            Region(block),
            specifiers=("static",),
            arg_attrs=ArrayAttr(attrs),
        )

    def task_function(
        self, name: str, body: EmitC_FuncOp, passed: list[SSAValue]
    ) -> EmitC_FuncOp:
        """`void name(void* context, int64_t index)`: chunk `index` of the loop, its
        values read from the `void*` array `context` (then lb, step, trips, chunks)."""
        block = Block(arg_types=[_VOID_PTR, i64])
        context, index = block.args
        ops: list[Operation] = []

        def add(op: Operation) -> SSAValue:
            ops.append(op)
            return op.results[0]

        slots = add(EmitC_CastOp(context, _SLOTS))

        def slot(k: int, typ: Attribute) -> SSAValue:
            at = add(EmitC_ConstantOp(IntegerAttr(k, i64)))
            pointer = add(EmitC_LoadOp(add(EmitC_SubscriptOp(slots, [at]))))
            if isinstance(typ, EmitC_PointerType):
                return add(EmitC_CastOp(pointer, typ))
            return add(EmitC_CastOp(add(EmitC_CastOp(pointer, _INTPTR)), typ))

        bound = body.function_type.inputs.data[-1]
        args = [slot(k, v.type) for k, v in enumerate(passed)]
        lb, step, trips, chunks = (slot(len(passed) + k, i64) for k in range(4))
        # Iterations [index * trips / chunks, (index + 1) * trips / chunks).
        first = add(EmitC_DivOp(add(EmitC_MulOp(index, trips, i64)), chunks, i64))
        one = add(EmitC_ConstantOp(IntegerAttr(1, i64)))
        after = add(EmitC_AddOp(index, one, i64))
        last = add(EmitC_DivOp(add(EmitC_MulOp(after, trips, i64)), chunks, i64))
        begin = add(EmitC_AddOp(lb, add(EmitC_MulOp(first, step, i64)), i64))
        end = add(EmitC_AddOp(lb, add(EmitC_MulOp(last, step, i64)), i64))
        if bound != i64:
            begin, end = add(EmitC_CastOp(begin, bound)), add(EmitC_CastOp(end, bound))
        ops.append(EmitC_CallOp(body.sym_name.data, [*args, begin, end], []))
        ops.append(EmitC_ReturnOp(None))
        block.add_ops(ops)
        # Exported: only the verbatim call names it, which the C printer does
        # not count as a use of a static function.
        return EmitC_FuncOp(name, FunctionType.from_lists([_VOID_PTR, i64], []), Region(block))

    def call_site(
        self, name: str, number: int, loop: EmitC_ForOp, passed: list[SSAValue], most_chunks: int
    ) -> None:
        """Before the loop (which then moves out): its trip count, its values in an
        array, and the pool's parallel loop over its chunks."""
        from byoc.targets.c import c_identifier

        block = loop.parent_block()
        assert block is not None
        lb, ub, step = loop.lowerBound, loop.upperBound, loop.step
        ops: list[Operation] = []

        def add(op: Operation) -> SSAValue:
            ops.append(op)
            return op.results[0]

        def as_i64(value: SSAValue) -> SSAValue:
            return value if value.type == i64 else add(EmitC_CastOp(value, i64))

        lb64, ub64, step64 = as_i64(lb), as_i64(ub), as_i64(step)
        span = add(EmitC_AddOp(add(EmitC_SubOp(ub64, lb64, i64)), step64, i64))
        one = add(EmitC_ConstantOp(IntegerAttr(1, i64)))
        trips = add(EmitC_DivOp(add(EmitC_SubOp(span, one, i64)), step64, i64))
        most = add(EmitC_ConstantOp(IntegerAttr(most_chunks, i64)))
        fewer = add(EmitC_CmpOp("lt", trips, most))
        chunks = add(EmitC_ConditionalOp(fewer, trips, most))
        values = [*passed, lb64, step64, trips, chunks]
        casts = ", ".join(
            "(void*) {}" if isinstance(v.type, EmitC_PointerType) else "(void*) (intptr_t) {}"
            for v in values
        )
        array = f"byoc_slots_{number}"
        ops.append(EmitC_VerbatimOp(f"void* {array}[{len(values)}] = {{{{{casts}}};", values))
        ops.append(
            EmitC_VerbatimOp(
                f"byoc_rt_parallel_for({{}}, {c_identifier(name)}, {array});", [chunks]
            )
        )
        block.insert_ops_before(ops, loop)


def _only_loaded_in(block: Block, value: SSAValue) -> bool:
    for use in value.uses:
        op = use.operation
        if not isinstance(op, EmitC_SubscriptOp) or op.value is not value:
            return False
        if any(not isinstance(u.operation, EmitC_LoadOp) for u in op.result.uses):
            return False
    return True


def outline_parallel_loops(module: ModuleOp) -> bool:
    """Outline every marked loop of `module`; returns whether any was (its C then
    includes byoc_runtime.h and must be linked with libbyoc)."""
    return _Outliner(module).run()


@dataclass(frozen=True)
class OutlineParallelLoopsPass(ModulePass):
    """Runs the `emitc.for` loops marked `byoc.parallel` on libbyoc's pool."""

    name = "byoc-outline-parallel-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outline_parallel_loops(op)
