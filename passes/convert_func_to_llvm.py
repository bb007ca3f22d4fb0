"""Lowering of func ops to the llvm dialect.

A function's memref arguments become `!llvm.ptr {llvm.noalias}`: the loop-level
IR guarantees they never alias, which is what lets LLVM vectorise its loops. A
`private` function with a body gets internal linkage; a body-less one stays an
external declaration, resolved by symbol when the module is linked or JITted.
A `no_inline` function keeps LLVM's `noinline`.
"""

from __future__ import annotations

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, UnitAttr
from xdsl.ir import Attribute
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from byoc.passes.split_functions import NO_INLINE
from byoc.passes.convert_builtin_to_llvm import (
    LLVM_PTR,
    convert_type,
    lowering_error,
    retype_block_arguments,
)

NOALIAS = DictionaryAttr({"llvm.noalias": UnitAttr()})
NO_ATTRIBUTES = DictionaryAttr({})


class FuncLowering(RewritePattern):
    """Lowers `func.func` to `llvm.func`, memref arguments becoming noalias pointers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /):
        inputs = [convert_type(t) for t in op.function_type.inputs]
        outputs = op.function_type.outputs.data
        if len(outputs) > 1:
            raise lowering_error(
                op, f"it returns {len(outputs)} values; at most one is allowed"
            )
        output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
        body = rewriter.move_region_contents_to_new_regions(op.body)
        retype_block_arguments(body, rewriter)
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if private and body.blocks else "external"
        arg_attrs = ArrayAttr(
            [NOALIAS if t == LLVM_PTR else NO_ATTRIBUTES for t in inputs]
        )
        props: dict[str, Attribute] = {"arg_attrs": arg_attrs}
        if NO_INLINE in op.attributes:
            props["no_inline"] = UnitAttr()
        rewriter.replace(
            op,
            llvm.FuncOp(
                op.sym_name,
                llvm.LLVMFunctionType(inputs, output),
                linkage=llvm.LinkageAttr(linkage),
                body=body,
                other_props=props,
            ),
        )


class CallLowering(RewritePattern):
    """Lowers `func.call` to a direct `llvm.call`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /):
        if len(op.res) > 1:
            raise lowering_error(
                op, f"it returns {len(op.res)} values; at most one is allowed"
            )
        result = convert_type(op.res[0].type) if op.res else None
        rewriter.replace(op, llvm.CallOp(op.callee, *op.arguments, return_type=result))


class ReturnLowering(RewritePattern):
    """Lowers `func.return` to `llvm.return`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.ReturnOp(op.arguments[0] if op.arguments else None))


FUNC_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    FuncLowering(),
    CallLowering(),
    ReturnLowering(),
)
"""Every func lowering, for the umbrella pass's pattern walker."""
