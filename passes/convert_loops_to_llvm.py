"""convert-loops-to-llvm: the host exit, from the loop-level IR to the llvm dialect.

The output is pure llvm dialect, which `xdsl.backend.llvm.convert.convert_module`
turns into an llvmlite module (runtime/jit.py). The conversion runs in five
sweeps, each linear in the module:

1. `scf.for`/`scf.if` become blocks and llvm branches (walked from the end, so
   splitting a block moves only the ops up to the next, already lowered, loop);
2. every `index` value becomes an i64, in place;
3. `memref.load/store` become a linearised `llvm.getelementptr` + load/store,
   while every memref value still carries its shape;
4. everything else: functions, calls, arith, math and the memref
   allocations, globals and deallocations;
5. every `malloc` is checked: NULL returns status 2 (out of memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.dialects import memref
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from byoc.passes.convert_arith_to_llvm import (
    ARITH_TO_LLVM_PATTERNS,
    BINARY_OPS,
    NAN_PROPAGATING_OPS,
)
from byoc.passes.convert_builtin_to_llvm import (
    CFunctions,
    lowering_error,
    retype_index_values,
)
from byoc.passes.convert_func_to_llvm import FUNC_TO_LLVM_PATTERNS
from byoc.passes.convert_math_to_llvm import (
    LIBM_FUNCTIONS,
    UNARY_INTRINSICS,
    math_to_llvm_patterns,
)
from byoc.passes.convert_memref_to_llvm import (
    AllocaLowering,
    AllocLowering,
    check_allocations,
    DeallocLowering,
    GetGlobalLowering,
    GlobalLowering,
    LoadLowering,
    StoreLowering,
    ViewLowering,
)
from byoc.passes.convert_scf_to_llvm import SCF_TO_LLVM_PATTERNS
from byoc.passes.speed import garbage_collector_paused

LOOP_LEVEL_OPS = frozenset(
    {
        "builtin.module",
        "func.func",
        "func.call",
        "func.return",
        "scf.for",
        "scf.if",
        "scf.yield",
        "memref.alloc",
        "memref.alloca",
        "memref.dealloc",
        "memref.load",
        "memref.store",
        "memref.view",
        "memref.get_global",
        "memref.global",
        "arith.constant",
        "arith.cmpi",
        "arith.cmpf",
        "arith.select",
        "arith.negf",
        "arith.index_cast",
        "arith.extsi",
        "arith.extui",
        "arith.trunci",
        "arith.sitofp",
        "arith.fptosi",
        "arith.bitcast",
        "arith.extf",
        "arith.truncf",
        *BINARY_OPS,
        *NAN_PROPAGATING_OPS,
        "math.powf",
        "math.rsqrt",
        *(op.name for op in UNARY_INTRINSICS),
        *(op.name for op in LIBM_FUNCTIONS),
    }
)
"""The ops this pass lowers: the loop-level IR of docs/architecture.md (and a few
more arith/math ops that cost nothing). Ops already in the llvm dialect stay."""


def check_loop_level(module: ModuleOp) -> None:
    """Raise a ByocError naming the first op that is not loop-level IR."""
    for op in module.walk():
        if op.name not in LOOP_LEVEL_OPS and op.dialect_name() != "llvm":
            raise lowering_error(
                op, "it is not an op of the loop-level IR (docs/architecture.md)"
            )


@dataclass(frozen=True)
class ConvertLoopsToLLVMPass(ModulePass):
    """Lower the loop-level IR to the llvm dialect, memrefs as bare pointers."""

    name = "convert-loops-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_loop_level(op)
        with garbage_collector_paused():
            lower_to_llvm(op)


def rewrite_each(
    module: ModuleOp, types: tuple[type[Operation], ...], patterns: list[RewritePattern]
) -> None:
    """Apply the first of `patterns` that matches to each op of `types`, once, in
    program order. For patterns that create only ops none of them matches,
    this is what a PatternRewriteWalker does, without its worklist and its
    dead-code checks of every op of the module (0.4 s of DenseNet-121's host
    lowering: 15 us an op)."""
    applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
    for op in [op for op in module.walk() if isinstance(op, types)]:
        applier.match_and_rewrite(op, PatternRewriter(op))


def lower_to_llvm(module: ModuleOp) -> None:
    """The five sweeps of the module docstring."""
    # The patterns create only llvm ops, which no pattern matches, so one sweep
    # of each walker is enough.
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(SCF_TO_LLVM_PATTERNS)),
        walk_reverse=True,
        apply_recursively=False,
    ).rewrite_module(module)
    retype_index_values(module)
    rewrite_each(module, (memref.LoadOp, memref.StoreOp), [LoadLowering(), StoreLowering()])
    c_functions = CFunctions(module)
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [
                *FUNC_TO_LLVM_PATTERNS,
                *ARITH_TO_LLVM_PATTERNS,
                *math_to_llvm_patterns(c_functions),
                AllocLowering(c_functions),
                AllocaLowering(),
                DeallocLowering(c_functions),
                ViewLowering(),
                GetGlobalLowering(),
                GlobalLowering(),
            ]
        ),
        apply_recursively=False,
    ).rewrite_module(module)
    check_allocations(module)
