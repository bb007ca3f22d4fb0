"""Lowering of math ops to LLVM intrinsics, or to libm where LLVM has none.

`math.tanh` and `math.erf` call libm's `tanhf`/`erff` (`tanh`/`erf` for f64,
`tanhf`/`erff` between an extension and a truncation for f16):
`llvm.tanh` only exists from LLVM 19 and `erf` never did. `math.rsqrt` is
`1 / sqrt(x)`, exact like numpy's, not an approximate reciprocal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, f16, f32, f64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from byoc.passes.convert_builtin_to_llvm import CFunctions, lowering_error

UNARY_INTRINSICS: dict[type[Operation], Callable[[SSAValue], Operation]] = {
    math.AbsFOp: lambda x: llvm.FAbsOp(x, x.type),
    math.CeilOp: llvm.FCeilOp,
    math.CosOp: llvm.FCosOp,
    math.ExpOp: llvm.FExpOp,
    math.Exp2Op: llvm.FExp2Op,
    math.FloorOp: llvm.FFloorOp,
    math.LogOp: llvm.FLogOp,
    math.Log2Op: llvm.FLog2Op,
    math.SinOp: llvm.FSinOp,
    math.SqrtOp: llvm.FSqrtOp,
}
"""Unary math ops and the llvm intrinsic op computing the same thing."""

LIBM_FUNCTIONS: dict[type[Operation], dict[AnyFloat, str]] = {
    math.TanhOp: {f32: "tanhf", f64: "tanh"},
    math.ErfOp: {f32: "erff", f64: "erf"},
    math.TanOp: {f32: "tanf", f64: "tan"},
    math.AsinOp: {f32: "asinf", f64: "asin"},
    math.AcosOp: {f32: "acosf", f64: "acos"},
    math.AtanOp: {f32: "atanf", f64: "atan"},
    math.SinhOp: {f32: "sinhf", f64: "sinh"},
    math.CoshOp: {f32: "coshf", f64: "cosh"},
    math.AsinhOp: {f32: "asinhf", f64: "asinh"},
    math.AcoshOp: {f32: "acoshf", f64: "acosh"},
    math.AtanhOp: {f32: "atanhf", f64: "atanh"},
}
"""Unary math ops computed by a libm function, by element type."""

HALF_TYPES = (f16,)
"""Types whose libm calls go through f32."""


class UnaryIntrinsicLowering(RewritePattern):
    """Lowers unary math ops with an LLVM intrinsic (`llvm.intr.exp`...)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (lowered := UNARY_INTRINSICS.get(type(op))) is not None:
            rewriter.replace(op, lowered(op.operands[0]))


class PowFLowering(RewritePattern):
    """Lowers `math.powf` to `llvm.intr.pow`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.PowFOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.FPowOp(op.lhs, op.rhs))


class RsqrtLowering(RewritePattern):
    """Lowers `math.rsqrt` to `1 / llvm.intr.sqrt`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.RsqrtOp, rewriter: PatternRewriter, /):
        type = op.result.type
        one = rewriter.insert(llvm.ConstantOp(FloatAttr(1.0, type), type))
        sqrt = rewriter.insert(llvm.FSqrtOp(op.operand))
        rewriter.replace(op, llvm.FDivOp(one, sqrt))


@dataclass
class LibmCallLowering(RewritePattern):
    """Lowers `math.tanh` and `math.erf` to calls to libm."""

    c_functions: CFunctions

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (functions := LIBM_FUNCTIONS.get(type(op))) is None:
            return
        float_type = op.results[0].type
        if float_type in HALF_TYPES:
            # libm has no half-precision tanh/erf: compute in f32 and round
            # once, as numpy computes float16 ufuncs.
            wide = rewriter.insert(llvm.FPExtOp(op.operands[0], f32))
            callee = self.c_functions.declare(functions[f32], [f32], f32)
            call = rewriter.insert(llvm.CallOp(callee, wide.results[0], return_type=f32))
            rewriter.replace(op, llvm.FPTruncOp(call.results[0], float_type))
            return
        if float_type not in functions:
            raise lowering_error(op, f"{float_type} is not supported (f16, f32, f64 are)")
        name = functions[float_type]
        callee = self.c_functions.declare(name, [float_type], float_type)
        rewriter.replace(
            op, llvm.CallOp(callee, op.operands[0], return_type=float_type)
        )


def math_to_llvm_patterns(c_functions: CFunctions) -> tuple[RewritePattern, ...]:
    """Every math lowering, for the umbrella pass's pattern walker."""
    return (
        UnaryIntrinsicLowering(),
        PowFLowering(),
        RsqrtLowering(),
        LibmCallLowering(c_functions),
    )
