"""Lowering of arith ops to the llvm dialect.

Runs after `index` values became i64 (convert_builtin_to_llvm), so every llvm op
takes its types from its operands. `arith.maximumf/minimumf` propagate NaN, as
`llvm.maximum/minimum` do; `arith.fptosi` becomes `llvm.fptosi.sat` because
xDSL's llvm dialect has no `fptosi` (the saturating form only differs where
`fptosi` is poison, so it is a valid lowering).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from byoc.passes.convert_builtin_to_llvm import lowering_error

BINARY_OPS: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "arith.addi": llvm.AddOp,
    "arith.subi": llvm.SubOp,
    "arith.muli": llvm.MulOp,
    "arith.divsi": llvm.SDivOp,
    "arith.divui": llvm.UDivOp,
    "arith.remsi": llvm.SRemOp,
    "arith.remui": llvm.URemOp,
    "arith.andi": llvm.AndOp,
    "arith.ori": llvm.OrOp,
    "arith.xori": llvm.XOrOp,
    "arith.shli": llvm.ShlOp,
    "arith.shrui": llvm.LShrOp,
    "arith.shrsi": llvm.AShrOp,
    "arith.addf": llvm.FAddOp,
    "arith.subf": llvm.FSubOp,
    "arith.mulf": llvm.FMulOp,
    "arith.divf": llvm.FDivOp,
    "arith.remf": llvm.FRemOp,
    "arith.maxnumf": llvm.VectorFMaxOp,
    "arith.minnumf": llvm.VectorFMinOp,
}
"""Binary arith ops (by name) and the llvm op computing the same thing.

By name because xDSL 0.74 has no `arith.remf` class: whoever defines one gets
its lowering for free."""

NAN_PROPAGATING_OPS = {
    "arith.maximumf": "llvm.maximum",
    "arith.minimumf": "llvm.minimum",
}
"""arith ops that propagate NaN and the LLVM intrinsic that does too."""


def intrinsic_name(op: Operation, base: str, *types: Attribute) -> str:
    """`base` mangled with `types`, as LLVM names overloaded intrinsics."""
    suffixes: list[str] = []
    for type in types:
        if isinstance(type, IntegerType):
            suffixes.append(f"i{type.width.data}")
        elif isinstance(type, Float16Type | Float32Type | Float64Type):
            suffixes.append(f"f{type.bitwidth}")
        else:
            raise lowering_error(op, f"{type} is not supported")
    return ".".join([base, *suffixes])


class ConstantLowering(RewritePattern):
    """Lowers `arith.constant` to `llvm.mlir.constant`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /):
        type = op.result.type
        value = op.value
        if isinstance(value, IntegerAttr):
            # `index` constants keep an index-typed value; the result is i64 now.
            value = IntegerAttr(value.value.data, type)
        elif not isinstance(value, FloatAttr):
            raise lowering_error(op, "only scalar constants are loop-level IR")
        rewriter.replace(op, llvm.ConstantOp(value, type))


class BinaryLowering(RewritePattern):
    """Lowers the binary integer and float arith ops to their llvm counterparts."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (lowered := BINARY_OPS.get(op.name)) is not None:
            rewriter.replace(op, lowered(*op.operands))


class MaximumMinimumLowering(RewritePattern):
    """Lowers `arith.maximumf/minimumf` to the NaN-propagating LLVM intrinsics."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (base := NAN_PROPAGATING_OPS.get(op.name)) is not None:
            type = op.results[0].type
            rewriter.replace(
                op,
                llvm.CallIntrinsicOp(
                    intrinsic_name(op, base, type), op.operands, [type]
                ),
            )


class CmpiLowering(RewritePattern):
    """Lowers `arith.cmpi` to `llvm.icmp` (the predicates are numbered alike)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        predicate = IntegerAttr(op.predicate.value.data, i64)
        rewriter.replace(op, llvm.ICmpOp(op.lhs, op.rhs, predicate))


class CmpfLowering(RewritePattern):
    """Lowers `arith.cmpf` to `llvm.fcmp`, and its `false`/`true` to constants."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /):
        predicate = op.predicate.value.data
        flag = llvm.FCmpPredicateFlag.from_int(predicate)
        if flag in (llvm.FCmpPredicateFlag.FALSE, llvm.FCmpPredicateFlag.TRUE):
            value = IntegerAttr(int(flag == llvm.FCmpPredicateFlag.TRUE), i1)
            rewriter.replace(op, llvm.ConstantOp(value, i1))
            return
        rewriter.replace(op, llvm.FCmpOp(op.lhs, op.rhs, IntegerAttr(predicate, i64)))


class SelectLowering(RewritePattern):
    """Lowers `arith.select` to `llvm.select`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.SelectOp(op.cond, op.lhs, op.rhs))


class NegfLowering(RewritePattern):
    """Lowers `arith.negf` to `llvm.fneg`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.FNegOp(op.operand))


class IntegerCastLowering(RewritePattern):
    """Lowers `arith.index_cast/extsi/extui/trunci` to sext, zext, trunc or nothing."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(
            op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp
        ):
            return
        value = op.operands[0]
        source, target = value.type, op.results[0].type
        assert isinstance(source, IntegerType) and isinstance(target, IntegerType)
        if source.width == target.width:  # index <-> i64
            rewriter.replace(op, [], [value])
        elif source.width.data > target.width.data:
            rewriter.replace(op, llvm.TruncOp(value, target))
        elif isinstance(op, arith.ExtUIOp):
            rewriter.replace(op, llvm.ZExtOp(value, target))
        else:
            rewriter.replace(op, llvm.SExtOp(value, target))


FLOAT_CASTS: dict[type[Operation], type[llvm.GenericCastOp]] = {
    arith.BitcastOp: llvm.BitcastOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
}


class FloatCastLowering(RewritePattern):
    """Lowers `arith.bitcast/sitofp/extf/truncf` to `llvm.bitcast/sitofp/fpext/fptrunc`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (lowered := FLOAT_CASTS.get(type(op))) is not None:
            rewriter.replace(op, lowered(op.operands[0], op.results[0].type))


class FPToSILowering(RewritePattern):
    """Lowers `arith.fptosi` to the `llvm.fptosi.sat` intrinsic."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.FPToSIOp, rewriter: PatternRewriter, /):
        target = op.result.type
        name = intrinsic_name(op, "llvm.fptosi.sat", target, op.input.type)
        rewriter.replace(op, llvm.CallIntrinsicOp(name, [op.input], [target]))


ARITH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    ConstantLowering(),
    BinaryLowering(),
    MaximumMinimumLowering(),
    CmpiLowering(),
    CmpfLowering(),
    SelectLowering(),
    NegfLowering(),
    IntegerCastLowering(),
    FloatCastLowering(),
    FPToSILowering(),
)
"""Every arith lowering, for the umbrella pass's pattern walker."""
