"""Lowering of `scf.for` and `scf.if` straight to llvm branches, in linear time.

xDSL's convert-scf-to-cf finds a block's position by scanning its region, which
makes it quadratic in the number of loops of a function. Here a split relinks
blocks in O(1) and moves only the ops after the loop; walked from the end of
the module, every op moves at most once per loop around it.
"""

from __future__ import annotations

from xdsl.dialects import llvm, scf
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Block, Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from byoc.passes.convert_builtin_to_llvm import lowering_error

SIGNED_LESS = IntegerAttr(llvm.ICmpPredicateFlag.SLT.to_int(), i64)


def split_after(op: Operation) -> Block:
    """Move the ops after `op` to a new block, placed right after `op`'s block."""
    block = op.parent_block()
    assert block is not None and block.parent is not None
    rest = Block()
    block.parent.insert_block_after(rest, block)
    while (next_op := op.next_op) is not None:
        next_op.detach()
        rest.add_op(next_op)
    return rest


def hoist_block(block: Block, before: Block) -> None:
    """Move `block` out of its (scf) region, to just before `before`."""
    assert block.parent is not None and before.parent is not None
    block.parent.detach_block(block)
    before.parent.insert_block_before(block, before)


class ForLowering(RewritePattern):
    """Lowers `scf.for` to a condition block, the body block and llvm branches."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter, /):
        if op.iter_args:
            raise lowering_error(
                op, "iter_args are not loop-level IR; accumulate through a memref"
            )
        after = split_after(op)
        assert after.parent is not None
        body = op.body.block
        iv = body.args[0]
        condition = Block(arg_types=[iv.type])
        counter = condition.args[0]
        counter.name_hint = iv.name_hint
        hoist_block(body, after)
        after.parent.insert_block_before(condition, body)
        rewriter.replace_all_uses_with(iv, counter)
        body.erase_arg(iv)

        step = llvm.AddOp(counter, op.step)
        assert isinstance(body.last_op, scf.YieldOp)
        rewriter.replace(body.last_op, [step, llvm.BrOp(condition, step.res)])
        compare = llvm.ICmpOp(counter, op.ub, SIGNED_LESS)
        condition.add_ops([compare, llvm.CondBrOp(compare.res, body, (), after, ())])
        rewriter.replace(op, llvm.BrOp(condition, op.lb))


class IfLowering(RewritePattern):
    """Lowers `scf.if` to `llvm.cond_br` into its then and else blocks."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.IfOp, rewriter: PatternRewriter, /):
        if op.results:
            raise lowering_error(op, "results are not loop-level IR")
        join = split_after(op)
        targets: list[Block] = []
        for region in (op.true_region, op.false_region):
            if (block := region.first_block) is None:
                targets.append(join)
                continue
            hoist_block(block, join)
            assert isinstance(block.last_op, scf.YieldOp)
            rewriter.replace(block.last_op, llvm.BrOp(join))
            targets.append(block)
        then_block, else_block = targets
        rewriter.replace(op, llvm.CondBrOp(op.cond, then_block, (), else_block, ()))


SCF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (ForLowering(), IfLowering())
"""Every scf lowering, for the umbrella pass's (reverse) pattern walker."""
