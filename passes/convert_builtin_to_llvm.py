"""The builtin types of the loop-level IR in the llvm dialect, and the C functions
the lowerings call.

`index` is i64. A memref is static-shape and row-major, so it becomes a bare
`!llvm.ptr` to its first element: no descriptor, the shape lives in the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    CompileTimeFixedBitwidthType,
    IndexType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, Region
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolOpInterface

from byoc.frontend.diagnostics import ByocError

LLVM_PTR = llvm.LLVMPointerType()


def convert_type(type: Attribute) -> Attribute:
    """The llvm-dialect type of a loop-level type (other types are kept)."""
    if isinstance(type, IndexType):
        return i64
    if isinstance(type, MemRefType):
        return LLVM_PTR
    return type


def element_type(memref: MemRefType) -> Attribute:
    """The llvm-dialect type of one element of `memref`."""
    return convert_type(memref.element_type)


def element_size(memref: MemRefType) -> int:
    """Bytes one element of a checked memref takes in memory."""
    type = element_type(memref)
    assert isinstance(type, CompileTimeFixedBitwidthType)
    return type.compile_time_size


def checked_memref(op: Operation, type: Attribute) -> MemRefType:
    """`type`, the memref `op` uses, if the loop-level IR allows it."""
    if not isinstance(type, MemRefType):
        raise lowering_error(op, f"expected a memref, got {type}")
    if not type.has_static_shape():
        raise lowering_error(op, f"{type} has a dynamic shape; memrefs must be static")
    if not isinstance(type.layout, NoneAttr):
        raise lowering_error(
            op, f"{type} has a layout; memrefs must be row-major and contiguous"
        )
    if not isinstance(element_type(type), CompileTimeFixedBitwidthType):
        raise lowering_error(op, f"{type} has elements of no fixed size")
    return type


def lowering_error(op: Operation, problem: str) -> ByocError:
    """The error for an `op` outside the loop-level IR, naming its function."""
    return ByocError(
        f"{function_name(op)}: error: convert-loops-to-llvm cannot lower "
        f"'{op.name}': {problem}"
    )


def function_name(op: Operation) -> str:
    """`@name` of the function around `op` (lowered or not), else `module`."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    return f"@{parent.sym_name.data}" if parent is not None else "module"


def retype_index_values(module: ModuleOp) -> None:
    """Make every `index` value of `module` (results, block arguments) an i64, in place.

    Done once, before ops are rewritten, so each pattern can take its types from
    its operands whatever order the ops are visited in. Ops are left as they are
    (an `arith.addi` on i64 is still an `arith.addi`), so this is linear.
    """
    for op in module.walk():
        for result in op.results:
            if isinstance(result.type, IndexType):
                Rewriter.replace_value_with_new_type(result, i64)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, IndexType):
                        Rewriter.replace_value_with_new_type(arg, i64)


def retype_block_arguments(region: Region, rewriter: Rewriter) -> None:
    """Give every block argument of `region` its llvm-dialect type."""
    for block in region.blocks:
        for arg in block.args:
            if (new_type := convert_type(arg.type)) != arg.type:
                rewriter.replace_value_with_new_type(arg, new_type)


@dataclass
class CFunctions:
    """The C library functions a lowering calls (`malloc`, `tanhf`...).

    Each is declared once, as an `llvm.func` at the top of the module, the first
    time a pattern asks for it; a symbol the module already has is left alone.
    """

    module: ModuleOp
    declared: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.declared = {
            name.data
            for op in self.module.ops
            if (interface := op.get_trait(SymbolOpInterface)) is not None
            and (name := interface.get_sym_attr_name(op)) is not None
        }

    def declare(self, name: str, inputs: list[Attribute], output: Attribute) -> str:
        """Declare `output name(inputs...)` if needed; returns `name`."""
        if name not in self.declared:
            self.declared.add(name)
            Rewriter.insert_op(
                llvm.FuncOp(
                    name,
                    llvm.LLVMFunctionType(inputs, output),
                    linkage=llvm.LinkageAttr("external"),
                ),
                InsertPoint.at_start(self.module.body.block),
            )
        return name
