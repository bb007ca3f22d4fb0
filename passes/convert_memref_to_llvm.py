"""Lowering of memref ops to the llvm dialect, memrefs being bare pointers.

`memref.load %m[%i, %j] : memref<AxBxf32>` becomes one `llvm.getelementptr` at
the row-major offset `%i * B + %j` and an `llvm.load`; `memref.alloc` and
`memref.dealloc` call `malloc` and `free`; `memref.view` is a `getelementptr`
of bytes; `memref.alloca` becomes an `llvm.alloca` in the entry block; constant globals become `llvm.mlir.global`s.
Once the function is a CFG, every `malloc` is checked (`check_allocations`):
NULL returns status `ALLOCATION_FAILED` at once, the bytes asked for kept in
the module's `FAILED_BYTES` global.

The access patterns read the shape from the memref operand's type, so they run
before anything turns memref values into pointers (see convert_loops_to_llvm).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from xdsl.dialects import func, llvm, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.backends.spec import ALLOCATION_FAILED
from byoc.passes.convert_builtin_to_llvm import (
    LLVM_PTR,
    CFunctions,
    checked_memref,
    element_size,
    element_type,
)

NO_SIGNED_WRAP = IntegerAttr(
    llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,)).to_int(), 32
)
"""In-bounds offsets never overflow an i64; saying so helps SCEV vectorise.
(Built once: converting the flag on every op doubles the cost of creating it.)"""


@cache
def _i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def i64_constant(value: int) -> llvm.ConstantOp:
    return llvm.ConstantOp(_i64_attr(value), i64)


_OFFSET_GEP_PROPERTIES: dict[str, Attribute] = {
    "rawConstantIndices": DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL]),
    "noWrapFlags": IntegerAttr(0, 32),
    "inbounds": UnitAttr(),
}


def offset_gep(base: SSAValue, offset: SSAValue, element: Attribute) -> llvm.GEPOp:
    """`llvm.getelementptr inbounds base[offset] : element`.

    Built from shared properties: GEPOp's constructor makes them anew for
    every access, which triples its cost.
    """
    return llvm.GEPOp.build(
        operands=[base, [offset]],
        result_types=[LLVM_PTR],
        properties=_OFFSET_GEP_PROPERTIES | {"elem_type": element},
    )


def element_pointer(
    op: memref.LoadOp | memref.StoreOp, rewriter: PatternRewriter
) -> SSAValue:
    """The address `op` accesses, computed before it."""
    ref, indices = op.memref, op.indices
    type = checked_memref(op, ref.type)
    if not indices:
        return ref
    strides = type.get_strides()
    assert strides is not None
    offset: SSAValue | None = None
    for index, stride in zip(indices, strides, strict=True):
        assert stride is not None
        term = index
        if stride != 1:
            scale = rewriter.insert(i64_constant(stride))
            term = rewriter.insert(
                llvm.MulOp(index, scale.result, overflow=NO_SIGNED_WRAP)
            ).res
        if offset is None:
            offset = term
        else:
            offset = rewriter.insert(
                llvm.AddOp(offset, term, overflow=NO_SIGNED_WRAP)
            ).res
    assert offset is not None
    return rewriter.insert(offset_gep(ref, offset, element_type(type))).result


class LoadLowering(RewritePattern):
    """Lowers `memref.load` to a linearised `llvm.getelementptr` and `llvm.load`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /):
        address = element_pointer(op, rewriter)
        rewriter.replace(op, llvm.LoadOp(address, op.res.type))


class StoreLowering(RewritePattern):
    """Lowers `memref.store` to a linearised `llvm.getelementptr` and `llvm.store`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /):
        address = element_pointer(op, rewriter)
        rewriter.replace(op, llvm.StoreOp(op.value, address))


@dataclass
class AllocLowering(RewritePattern):
    """Lowers `memref.alloc` to a call to `malloc`."""

    c_functions: CFunctions

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter, /):
        type = checked_memref(op, op.memref.type)
        malloc = self.c_functions.declare("malloc", [i64], LLVM_PTR)
        size = rewriter.insert(i64_constant(type.element_count() * element_size(type)))
        rewriter.replace(op, llvm.CallOp(malloc, size, return_type=LLVM_PTR))


class ViewLowering(RewritePattern):
    """Lowers `memref.view` (a memref at a byte offset of an `i8` buffer) to an
    `llvm.getelementptr` of bytes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter, /):
        checked_memref(op, op.result.type)
        rewriter.replace(op, offset_gep(op.source, op.byte_shift, IntegerType(8)))


@dataclass
class DeallocLowering(RewritePattern):
    """Lowers `memref.dealloc` to a call to `free`."""

    c_functions: CFunctions

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter, /):
        free = self.c_functions.declare("free", [LLVM_PTR], llvm.LLVMVoidType())
        rewriter.replace(op, llvm.CallOp(free, op.memref))


def entry_block(op: memref.AllocaOp) -> Block:
    """The entry block of the function around `op`."""
    region = op.parent_region()
    while region is not None and (parent := region.parent_op()) is not None:
        if isinstance(parent, func.FuncOp | llvm.FuncOp):
            break
        region = parent.parent_region()
    assert region is not None and region.first_block is not None
    return region.first_block


class AllocaLowering(RewritePattern):
    """Lowers `memref.alloca` to an `llvm.alloca` in the function's entry block."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /):
        type = checked_memref(op, op.memref.type)
        # A static alloca in the entry block is what mem2reg and SROA promote to
        # registers; an alloca in a loop body would grow the stack every trip.
        count = i64_constant(type.element_count())
        alloca = llvm.AllocaOp(count, element_type(type), alignment=element_size(type))
        rewriter.insert([count, alloca], InsertPoint.at_start(entry_block(op)))
        rewriter.replace(op, [], [alloca.res])


class GetGlobalLowering(RewritePattern):
    """Lowers `memref.get_global` to `llvm.mlir.addressof`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.AddressOfOp(op.name_, LLVM_PTR))


class GlobalLowering(RewritePattern):
    """Lowers `memref.global` to an `llvm.mlir.global` holding a flat array."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter, /):
        type = checked_memref(op, op.type)
        element = element_type(type)
        count = type.element_count()
        value = None
        if isinstance(op.initial_value, DenseIntOrFPElementsAttr):
            # Row-major bytes are already the memory image; only the shape goes.
            value = DenseIntOrFPElementsAttr(
                TensorType(element, [count]), op.initial_value.data
            )
        private = op.sym_visibility.data == "private"
        rewriter.replace(
            op,
            llvm.GlobalOp(
                llvm.LLVMArrayType(count, element),
                op.sym_name,
                "internal" if private else "external",
                constant=isinstance(op.constant, UnitAttr),
                value=value,
                alignment=64,  # a cache line: aligned vector loads of weights
            ),
        )


FAILED_BYTES = "byoc_failed_bytes"
"""Internal i64 global holding the size of the last allocation that failed."""

_EQUAL = IntegerAttr(llvm.ICmpPredicateFlag.EQ.to_int(), i64)


def check_allocations(module: ModuleOp) -> None:
    """After each `malloc` of a function returning an i32 status, branch to a
    block returning `ALLOCATION_FAILED` when it gave NULL (recording the size
    in `FAILED_BYTES`), so no later op dereferences the null pointer.

    Runs on the llvm dialect, when functions are CFGs (one linear walk;
    each check splits one block). Buffers allocated before the failure leak:
    the process is out of memory and the model's results are lost anyway.
    """
    calls = [
        op
        for op in module.walk()
        if isinstance(op, llvm.CallOp)
        and op.callee is not None
        and op.callee.string_value() == "malloc"
        and _returns_status(op)
    ]
    if not calls:
        return
    if not any(
        isinstance(op, llvm.GlobalOp) and op.sym_name.data == FAILED_BYTES
        for op in module.ops
    ):
        Rewriter.insert_op(
            llvm.GlobalOp(i64, FAILED_BYTES, "internal", value=_i64_attr(0)),
            InsertPoint.at_start(module.body.block),
        )
    for call in calls:
        block = call.parent_block()
        assert block is not None and call.next_op is not None
        rest = block.split_before(call.next_op)
        failed = Block()
        address = llvm.AddressOfOp(FAILED_BYTES, LLVM_PTR)
        status = llvm.ConstantOp(IntegerAttr(ALLOCATION_FAILED, i32), i32)
        failed.add_ops(
            [
                address,
                llvm.StoreOp(call.args[0], address.result),
                status,
                llvm.ReturnOp(status.result),
            ]
        )
        region = block.parent
        assert region is not None
        region.insert_block_after(failed, rest)
        # xDSL's icmp takes integers only: compare the address with 0.
        address_value = llvm.PtrToIntOp(call.returned, i64)
        zero = i64_constant(0)
        is_null = llvm.ICmpOp(address_value.output, zero.result, _EQUAL)
        block.add_ops(
            [address_value, zero, is_null, llvm.CondBrOp(is_null.res, failed, (), rest, ())]
        )


def _returns_status(op: Operation) -> bool:
    function = op.parent_op()
    while function is not None and not isinstance(function, llvm.FuncOp):
        function = function.parent_op()
    return function is not None and function.function_type.output == i32
