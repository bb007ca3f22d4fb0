"""byoc-weights-to-blob: the host's weights leave the code for one blob of bytes.

After convert-loops-to-llvm every constant is an `llvm.mlir.global` holding its
bytes. Printed into LLVM IR they would travel as text (`c"\\..."`, seconds for
100 MB) and sit inside the machine code. This pass takes every constant global
of at least `min-bytes` bytes out of the module and lays their bytes out in one
blob (`WeightsLayout`, each at a 64-byte aligned offset); the code reaches
them through one pointer the runtime sets before the first call:

    llvm.mlir.global external @<symbol>() : !llvm.ptr        (null until bound)
    %base = llvm.load %<symbol> : !llvm.ptr -> !llvm.ptr     (once per function)
    %w = llvm.getelementptr inbounds %base[<offset>] : (!llvm.ptr) -> !llvm.ptr, i8

The pointer has external linkage so LLVM never folds its null initializer.
Small constants stay in the code, where LLVM can fold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp, i8, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

ALIGNMENT = 64
"""Every weight starts at a multiple of this many bytes (a cache line, and the
widest vector load)."""

MIN_BYTES = 64
"""Constants smaller than this stay in the code (scalars, small vectors LLVM folds)."""

_PTR = llvm.LLVMPointerType()


def aligned(n: int, alignment: int = ALIGNMENT) -> int:
    """`n` rounded up to a multiple of `alignment`."""
    return -(-n // alignment) * alignment


@dataclass
class WeightsLayout:
    """Where each weight lives in the blob: `(offset, bytes)` in order, every
    offset a multiple of ALIGNMENT; the gaps and the tail are zeros."""

    entries: list[tuple[int, memoryview]] = field(default_factory=list)
    size: int = 0
    """The blob's length in bytes (a multiple of ALIGNMENT)."""

    def add(self, data: memoryview) -> int:
        """Place `data` at the end of the blob and return its offset."""
        offset = self.size
        self.entries.append((offset, data))
        self.size = aligned(offset + data.nbytes)
        return offset


def _weight_bytes(op: llvm.GlobalOp, min_bytes: int) -> memoryview | None:
    """The bytes of a constant global holding at least `min_bytes`, with one
    value per element of its array type (else None: it stays in the code)."""
    value, typ = op.value, op.global_type
    if op.constant is None or not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    data = memoryview(value.data.data).cast("B")
    if data.nbytes < min_bytes or not isinstance(typ, llvm.LLVMArrayType):
        return None
    width = getattr(typ.type, "bitwidth", None)
    if not isinstance(width, int) or typ.size.data * width != data.nbytes * 8:
        return None
    return data


def _function_base(function: llvm.FuncOp, symbol: str, bases: dict[llvm.FuncOp, SSAValue]) -> SSAValue:
    """The blob's address in `function`: one load of the pointer in its entry block."""
    base = bases.get(function)
    if base is None:
        entry: Block = function.body.blocks[0]
        address = llvm.AddressOfOp(symbol, _PTR)
        load = llvm.LoadOp(address, _PTR, alignment=8)
        load.dereferenced_value.name_hint = "weights"
        first = entry.first_op
        if first is None:
            entry.add_ops([address, load])
        else:
            entry.insert_ops_before([address, load], first)
        base = bases[function] = load.dereferenced_value
    return base


def _offset_pointer(base: SSAValue, offset: int) -> list[Operation]:
    """`base + offset` bytes, as a GEP (an i64 operand past 32-bit indices)."""
    if offset < 2**31:
        return [llvm.GEPOp(base, [offset], i8, inbounds=True)]
    index = llvm.ConstantOp(IntegerAttr(offset, i64), i64)
    gep = llvm.GEPOp(
        base, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[index], inbounds=True
    )
    return [index, gep]


def move_weights_to_blob(
    module: ModuleOp, symbol: str, min_bytes: int = MIN_BYTES
) -> WeightsLayout:
    """Move the constant globals of at least `min_bytes` out of `module` (llvm
    dialect) into a blob read through the pointer `@symbol`; returns the layout.

    Linear: one pass over the top-level ops, one walk of the function bodies.
    A module without such constants is left alone (and gets no pointer).
    """
    layout = WeightsLayout()
    offsets: dict[str, int] = {}
    block = module.body.block
    for op in list(block.ops):
        data = _weight_bytes(op, min_bytes) if isinstance(op, llvm.GlobalOp) else None
        if data is not None:
            offsets[op.sym_name.data] = layout.add(data)
            op.detach()
            op.erase(safe_erase=False)
    if not offsets:
        return layout
    pointer = llvm.GlobalOp(_PTR, symbol, "external", alignment=8)
    if block.first_op is None:
        block.add_op(pointer)
    else:
        block.insert_op_before(pointer, block.first_op)
    bases: dict[llvm.FuncOp, SSAValue] = {}
    for function in block.ops:
        if not isinstance(function, llvm.FuncOp) or not function.body.blocks:
            continue
        for op in list(function.walk()):
            if not isinstance(op, llvm.AddressOfOp):
                continue
            offset = offsets.get(op.global_name.root_reference.data)
            if offset is None:
                continue
            base = _function_base(function, symbol, bases)
            new = _offset_pointer(base, offset)
            parent = op.parent_block()
            assert parent is not None
            parent.insert_ops_before(new, op)
            op.result.replace_all_uses_with(new[-1].results[0])
            op.detach()
            op.erase()
    return layout


@dataclass(frozen=True)
class WeightsToBlobPass(ModulePass):
    """Moves large constant globals of an llvm-dialect module into one blob read
    through the pointer `@symbol` (the layout itself is dropped: see
    `move_weights_to_blob` for the Python API that keeps it)."""

    name = "byoc-weights-to-blob"

    symbol: str = "byoc_weights"
    min_bytes: int = MIN_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        move_weights_to_blob(op, self.symbol, self.min_bytes)
