"""Lowers the loop-level IR (docs/architecture.md) to emitc, which `byoc.targets.c` prints.

The C it describes:

- `index` is `int64_t` (`i64`): signed like the arith ops that use it (`divsi`,
  `cmpi slt`), and 64-bit as on the LLVM exit. Integer arithmetic is C's, so it
  assumes (as index computations over static shapes guarantee) no signed overflow.
- A memref is a pointer to its element type (`!emitc.ptr<f32>`), rank 0 included;
  loads and stores index it row-major with the static shape, `p[(i * C) + j]`.
  Memref parameters are `restrict` (the contract says they never alias), and
  `const` when the function only loads from them.
- `memref.alloc` is `malloc`; when it fails the function stores the bytes asked
  for in the exported `int64_t <first function>_failed_bytes` and returns status
  2 (`ALLOCATION_FAILED`); `memref.dealloc` is `free`; `memref.alloca` is a local array; a `memref.global` is a `static` array
  (`const` when the global is constant) and `memref.get_global` a pointer to it.
- Every function becomes an `emitc.func` returning `int32_t`. Defined functions get
  `symbol_prefix` prepended to their symbol (calls follow); declarations keep theirs,
  as they name symbols defined elsewhere. Functions that are not outlined kernels
  (no `extern.compiler`) but are called in the module are `static` helpers.
- A `scf.for` marked `byoc.parallel` becomes an `emitc.for` with the same mark:
  `byoc-outline-parallel-loops` runs such loops on libbyoc's pool.
- `arith.maximumf`/`minimumf` propagate NaN and order -0 below +0, like LLVM's
  `maximum`/`minimum`; math ops call the `<math.h>` functions of their type.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from byoc.backends.spec import ALLOCATION_FAILED
from byoc.passes.loop_nests import READS_ATTR, WRAPS_ATTR
from byoc.passes.split_functions import NO_INLINE
from byoc.passes.parallel_loops import CHUNKS_ATTR, PARALLEL_ATTR
from byoc.dialects.emitc import (
    CONST_ATTR,
    NOINLINE,
    RESTRICT_ATTR,
    EmitC,
    EmitC_AddOp,
    EmitC_ArrayType,
    EmitC_AssignOp,
    EmitC_BitwiseAndOp,
    EmitC_BitwiseOrOp,
    EmitC_BitwiseXorOp,
    EmitC_BitwiseLeftShiftOp,
    EmitC_BitwiseRightShiftOp,
    EmitC_CallOp,
    EmitC_CallOpaqueOp,
    EmitC_CastOp,
    EmitC_CmpOp,
    EmitC_ConditionalOp,
    EmitC_ConstantOp,
    EmitC_DeclareFuncOp,
    EmitC_DivOp,
    EmitC_ForOp,
    EmitC_FuncOp,
    EmitC_GetGlobalOp,
    EmitC_GlobalOp,
    EmitC_IfOp,
    EmitC_LiteralOp,
    EmitC_LoadOp,
    EmitC_LValueType,
    EmitC_LogicalAndOp,
    EmitC_LogicalNotOp,
    EmitC_LogicalOrOp,
    EmitC_MulOp,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_RemOp,
    EmitC_ReturnOp,
    EmitC_SizeT,
    EmitC_SubOp,
    EmitC_SubscriptOp,
    EmitC_UnaryMinusOp,
    EmitC_VariableOp,
    EmitC_VerbatimOp,
    EmitC_YieldOp,
)

OUTLINED_ATTR = "extern.compiler"
"""Marks a function outlined for a backend: exported, never `static`."""

_VOID_PTR = EmitC_PointerType(EmitC_OpaqueType(builtin.StringAttr("void")))


class UnsupportedOpError(PassFailedException):
    """An op outside the loop-level IR reached convert-loops-to-emitc."""


def _unsupported(op: Operation, why: str) -> UnsupportedOpError:
    """The error for `op`, naming it and the function it is in."""
    function = op if isinstance(op, func.FuncOp | EmitC_FuncOp) else None
    parent = op.parent_op()
    while function is None and parent is not None:
        if isinstance(parent, func.FuncOp | EmitC_FuncOp):
            function = parent
        parent = parent.parent_op()
    where = f" in @{function.sym_name.data}" if function is not None else ""
    return UnsupportedOpError(
        f"convert-loops-to-emitc: cannot lower '{op.name}'{where}: {why}"
    )


def static_memref(t: Attribute, op: Operation) -> MemRefType:
    """`t` as a static, row-major memref type, or an error naming `op`."""
    if not isinstance(t, MemRefType):
        raise _unsupported(op, f"expected a memref, got {t}")
    if not t.has_static_shape() or not isinstance(t.layout, NoneAttr):
        raise _unsupported(op, f"{t} is not a static, identity-layout memref")
    return t


def convert_type(t: Attribute, op: Operation) -> Attribute:
    """The emitc type of a loop-level IR type (`op` names the culprit on failure)."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return t
    if isinstance(t, Float32Type | Float64Type):
        return t
    if isinstance(t, MemRefType):
        return EmitC_PointerType(convert_type(static_memref(t, op).element_type, op))
    raise _unsupported(op, f"type {t} has no C equivalent")


def _element_count(t: MemRefType) -> int:
    count = 1
    for d in t.get_shape():
        count *= d
    return count


def _flat_array(t: MemRefType, op: Operation) -> EmitC_ArrayType:
    """The 1-D C array holding a memref (a rank-0 memref is one element)."""
    element = convert_type(t.element_type, op)
    return EmitC_ArrayType([max(_element_count(t), 1)], element)  # pyright: ignore


def _constant(value: int, t: Attribute, rewriter: PatternRewriter) -> SSAValue:
    """An integer constant of type `t` (`i64` or `!emitc.size_t`)."""
    attr_type = IndexType() if isinstance(t, EmitC_SizeT) else t
    op = EmitC_ConstantOp(IntegerAttr(value, attr_type), t)  # pyright: ignore
    rewriter.insert(op)
    return op.result


def _memref_view(
    pointer: SSAValue, memref_type: MemRefType, rewriter: PatternRewriter
) -> SSAValue:
    """`pointer` seen as the memref it lowers, until every user of it is lowered.

    The users (loads, stores, calls) read the shape from the memref type;
    `MemRefCastElimination` removes the views at the end.
    """
    cast = UnrealizedConversionCastOp.get([pointer], [memref_type])
    rewriter.insert(cast)
    return cast.results[0]


# ---------------------------------------------------------------------------
# func
# ---------------------------------------------------------------------------


def _reads(use: Use) -> bool:
    """Whether `use` only reads its memref: a load, or a call operand that the
    call marks as read (READS_ATTR)."""
    user = use.operation
    if isinstance(user, memref.LoadOp):
        return True
    reads = user.attributes.get(READS_ATTR)
    return isinstance(user, func.CallOp) and isinstance(reads, DenseArrayBase) and use.index in reads.get_values()


@dataclass(frozen=True)
class FuncLowering(RewritePattern):
    """Lowers `func.func` to `emitc.func` with pointer parameters."""

    symbol_prefix: str
    called: frozenset[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter):
        inputs = op.function_type.inputs.data
        outputs = op.function_type.outputs.data
        if len(outputs) > 1 or any(isinstance(t, MemRefType) for t in outputs):
            raise _unsupported(op, f"@{op.sym_name.data} must return one status value")
        function_type = FunctionType.from_lists(
            [convert_type(t, op) for t in inputs], [convert_type(t, op) for t in outputs]
        )
        name = op.sym_name.data
        if op.is_declaration:
            new = EmitC_FuncOp(
                name,
                function_type,
                Region(),
                specifiers=("extern",),
                visibility="private",
                arg_attrs=self._arg_attrs(inputs, [False] * len(inputs)),
            )
            rewriter.replace(op, new, [])
            return

        block = op.body.block
        read_only = [
            isinstance(arg.type, MemRefType) and all(_reads(use) for use in arg.uses)
            for arg in block.args
        ]
        for arg, new_type in zip(block.args, function_type.inputs.data):
            if isinstance(arg.type, MemRefType):
                cast = UnrealizedConversionCastOp.get([arg], [arg.type])
                rewriter.insert(cast, InsertPoint.at_start(block))
                arg.replace_uses_with_if(
                    cast.results[0], lambda use: use.operation is not cast
                )
            rewriter.replace_value_with_new_type(arg, new_type)

        exported = OUTLINED_ATTR in op.attributes or name not in self.called
        specifiers = () if exported else ("static",)
        if NO_INLINE in op.attributes:
            specifiers = (NOINLINE, *specifiers)
        new = EmitC_FuncOp(
            self.symbol_prefix + name,
            function_type,
            rewriter.move_region_contents_to_new_regions(op.body),
            specifiers=specifiers,
            arg_attrs=self._arg_attrs(inputs, read_only),
        )
        rewriter.replace(op, new, [])

    @staticmethod
    def _arg_attrs(
        inputs: Sequence[Attribute], read_only: Sequence[bool]
    ) -> ArrayAttr[DictionaryAttr] | None:
        """`restrict` on every memref parameter, `const` too on the read-only ones."""
        if not any(isinstance(t, MemRefType) for t in inputs):
            return None
        dicts: list[DictionaryAttr] = []
        for t, const in zip(inputs, read_only):
            attrs: dict[str, Attribute] = {}
            if isinstance(t, MemRefType):
                if const:
                    attrs[CONST_ATTR] = UnitAttr()
                attrs[RESTRICT_ATTR] = UnitAttr()
            dicts.append(DictionaryAttr(attrs))
        return ArrayAttr(dicts)


@dataclass(frozen=True)
class CallLowering(RewritePattern):
    """Lowers `func.call` to `emitc.call`, prefixing callees defined in the module."""

    symbol_prefix: str
    defined: frozenset[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter):
        callee = op.callee.string_value()
        if callee in self.defined:
            callee = self.symbol_prefix + callee
        result_types = [convert_type(t, op) for t in op.result_types]
        rewriter.replace(op, EmitC_CallOp(callee, op.arguments, result_types))


class ReturnLowering(RewritePattern):
    """Lowers `func.return` to `emitc.return`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter):
        if len(op.arguments) > 1:
            raise _unsupported(op, "a C function returns at most one value")
        rewriter.replace(op, EmitC_ReturnOp(op.arguments[0] if op.arguments else None))


# ---------------------------------------------------------------------------
# scf
# ---------------------------------------------------------------------------


class ForLowering(RewritePattern):
    """Lowers `scf.for` without iter_args to `emitc.for` over `int64_t`; a loop
    marked `byoc.parallel` keeps the mark, which `byoc-outline-parallel-loops`
    turns into a parallel loop on libbyoc's pool (printed as is, it runs on one
    thread)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter):
        if op.iter_args:
            raise _unsupported(op, "loops carry values through memrefs, not iter_args")
        iv = op.body.block.args[0]
        rewriter.replace_value_with_new_type(iv, convert_type(iv.type, op))
        body = rewriter.move_region_contents_to_new_regions(op.body)
        loop = EmitC_ForOp(op.lb, op.ub, op.step, body)
        for name in (PARALLEL_ATTR, CHUNKS_ATTR):
            if name in op.attributes:
                loop.attributes[name] = op.attributes[name]
        rewriter.replace(op, loop, [])


class IfLowering(RewritePattern):
    """Lowers `scf.if` without results to `emitc.if`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.IfOp, rewriter: PatternRewriter):
        if op.output:
            raise _unsupported(op, "conditionals yield no values in the loop-level IR")
        then_region = rewriter.move_region_contents_to_new_regions(op.true_region)
        else_region = rewriter.move_region_contents_to_new_regions(op.false_region)
        rewriter.replace(op, EmitC_IfOp(op.cond, then_region, else_region), [])


class YieldLowering(RewritePattern):
    """Lowers `scf.yield` without operands to `emitc.yield`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.YieldOp, rewriter: PatternRewriter):
        if op.arguments:
            raise _unsupported(op, "yields carry no values in the loop-level IR")
        rewriter.replace(op, EmitC_YieldOp())


# ---------------------------------------------------------------------------
# memref
# ---------------------------------------------------------------------------


def _known_index(value: SSAValue) -> int | SSAValue:
    """The value of an index defined by a constant, else the value itself."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp | EmitC_ConstantOp) and isinstance(
        owner.value, IntegerAttr
    ):
        return owner.value.value.data
    return value


def _subscript(
    ref: SSAValue, indices: Sequence[SSAValue], op: Operation, rewriter: PatternRewriter
) -> SSAValue:
    """The lvalue `ref[linear index]`, row-major over the static shape of `ref`.

    `ref` is still the memref view of the pointer (see `_memref_view`), which keeps
    the shape at hand whatever order the ops are lowered in. Constant indices are
    folded, so a broadcast reads `b[j]` rather than `b[(0 * 10) + j]`.
    """
    t = static_memref(ref.type, op)

    def materialize(v: int | SSAValue) -> SSAValue:
        return _constant(v, i64, rewriter) if isinstance(v, int) else v

    def emit(new: Operation) -> SSAValue:
        rewriter.insert(new)
        return new.results[0]

    linear: int | SSAValue = 0
    for size, index in zip(t.get_shape(), indices):
        known = _known_index(index)
        if isinstance(linear, int):
            scaled: int | SSAValue = linear * size
        elif size == 1:
            scaled = linear
        else:
            scaled = emit(EmitC_MulOp(linear, materialize(size), i64))
        if isinstance(scaled, int) and isinstance(known, int):
            linear = scaled + known
        elif scaled == 0:
            linear = known
        elif known == 0:
            linear = scaled
        else:
            linear = emit(EmitC_AddOp(materialize(scaled), materialize(known), i64))
    element = convert_type(t.element_type, op)
    subscript = EmitC_SubscriptOp.create(
        operands=[ref, materialize(linear)], result_types=[EmitC_LValueType(element)]
    )
    return emit(subscript)


class LoadLowering(RewritePattern):
    """Lowers `memref.load` to a subscript of the pointer and `emitc.load`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter):
        lvalue = _subscript(op.memref, op.indices, op, rewriter)
        rewriter.replace(op, EmitC_LoadOp(lvalue))


class StoreLowering(RewritePattern):
    """Lowers `memref.store` to a subscript of the pointer and `emitc.assign`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter):
        lvalue = _subscript(op.memref, op.indices, op, rewriter)
        rewriter.replace(op, EmitC_AssignOp(lvalue, op.value), [])


@dataclass
class AllocLowering(RewritePattern):
    """Lowers `memref.alloc` to `malloc`; if it fails, the function records the
    bytes asked for in the module's `failed_bytes` global and returns
    `ALLOCATION_FAILED`."""

    failed_bytes: str
    used: list[bool] = field(default_factory=list)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter):
        t = static_memref(op.memref.type, op)
        pointer_type = convert_type(t, op)
        assert isinstance(pointer_type, EmitC_PointerType)
        count = _constant(max(_element_count(t), 1), EmitC_SizeT(), rewriter)
        size = EmitC_CallOpaqueOp(
            "sizeof", [], [EmitC_SizeT()], args=ArrayAttr([pointer_type.pointee_type])
        )
        total = EmitC_MulOp(count, size, EmitC_SizeT())
        raw = EmitC_CallOpaqueOp("malloc", [total], [_VOID_PTR])
        pointer = EmitC_CastOp(raw, pointer_type)
        null = EmitC_LiteralOp("NULL", pointer_type)
        failed = EmitC_CmpOp("eq", pointer, null)
        # emitc.return may only end a function body, so the early exit is one line of C.
        check = EmitC_VerbatimOp(
            f"if ({{}}) {{{{ {self.failed_bytes} = (int64_t){{}}; "
            f"return {ALLOCATION_FAILED}; }}",
            [failed, total],
        )
        self.used.append(True)
        rewriter.insert((size, total, raw, pointer, null, failed, check))
        rewriter.replace(op, [], [_memref_view(pointer.results[0], t, rewriter)])


class AllocaLowering(RewritePattern):
    """Lowers `memref.alloca` to a local C array."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter):
        t = static_memref(op.memref.type, op)
        array = EmitC_VariableOp(_flat_array(t, op))
        pointer = EmitC_CastOp(array, convert_type(t, op))
        rewriter.insert((array, pointer))
        rewriter.replace(op, [], [_memref_view(pointer.dest, t, rewriter)])


class DeallocLowering(RewritePattern):
    """Lowers `memref.dealloc` to `free`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter):
        static_memref(op.memref.type, op)
        rewriter.replace(op, EmitC_CallOpaqueOp("free", [op.memref], []))


class GlobalLowering(RewritePattern):
    """Lowers `memref.global` to a static (const) C array."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter):
        t = static_memref(op.type, op)
        array = _flat_array(t, op)
        initial_value = None
        if isinstance(op.initial_value, DenseIntOrFPElementsAttr):
            flat = TensorType(array.element_type, array.get_shape())
            initial_value = DenseIntOrFPElementsAttr(flat, op.initial_value.data)
        constant = op.constant is not None
        new = EmitC_GlobalOp(
            op.sym_name.data, array, initial_value, static=True, const=constant
        )
        rewriter.replace(op, new, [])


class GetGlobalLowering(RewritePattern):
    """Lowers `memref.get_global` to a pointer to the global array."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter):
        t = static_memref(op.memref.type, op)
        array = EmitC_GetGlobalOp(op.name_, _flat_array(t, op))
        pointer = EmitC_CastOp(array, convert_type(t, op))
        rewriter.insert((array, pointer))
        rewriter.replace(op, [], [_memref_view(pointer.dest, t, rewriter)])


# ---------------------------------------------------------------------------
# arith
# ---------------------------------------------------------------------------


class ConstantLowering(RewritePattern):
    """Lowers scalar `arith.constant` to `emitc.constant`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter):
        value = op.value
        t = convert_type(op.result.type, op)
        if isinstance(value, IntegerAttr):
            same = value.type == t
            attr = value if same else IntegerAttr(value.value.data, t)  # pyright: ignore
        elif isinstance(value, FloatAttr):
            attr = value
        else:
            raise _unsupported(op, "only scalar constants have a C equivalent")
        rewriter.replace(op, EmitC_ConstantOp(attr, t))


_BINARY_OPS: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: EmitC_AddOp,
    arith.SubfOp: EmitC_SubOp,
    arith.MulfOp: EmitC_MulOp,
    arith.DivfOp: EmitC_DivOp,
    arith.AddiOp: EmitC_AddOp,
    arith.SubiOp: EmitC_SubOp,
    arith.MuliOp: EmitC_MulOp,
    arith.DivSIOp: EmitC_DivOp,
    arith.RemSIOp: EmitC_RemOp,
    arith.AndIOp: EmitC_BitwiseAndOp,
    arith.OrIOp: EmitC_BitwiseOrOp,
    arith.XOrIOp: EmitC_BitwiseXorOp,
}


class BinaryLowering(RewritePattern):
    """Lowers arith's binary arithmetic and bitwise ops to the C operators.

    Integer ops marked `byoc.wraps` are computed in unsigned arithmetic of at
    least 32 bits and converted back: signed overflow is undefined in C (and
    C promotes 16-bit operands to a signed int, whose product can overflow),
    while unsigned arithmetic wraps and GCC converts back modulo 2^N."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        target = _BINARY_OPS.get(type(op))
        if target is None:
            return
        lhs, rhs = op.operands
        result_type = convert_type(op.results[0].type, op)
        if WRAPS_ATTR in op.attributes and isinstance(result_type, IntegerType):
            wide = IntegerType(max(result_type.width.data, 32), Signedness.UNSIGNED)
            casts = [EmitC_CastOp(lhs, wide), EmitC_CastOp(rhs, wide)]
            computed = target(casts[0].dest, casts[1].dest, wide)  # pyright: ignore
            rewriter.replace(op, (*casts, computed, EmitC_CastOp(computed.results[0], result_type)))
            return
        rewriter.replace(op, target(lhs, rhs, result_type))  # pyright: ignore


def _unsigned(t: Attribute) -> IntegerType:
    assert isinstance(t, IntegerType)
    return IntegerType(t.width.data, Signedness.UNSIGNED)


class UnsignedDivisionLowering(RewritePattern):
    """Lowers `arith.divui`/`remui` to C division of the operands cast to unsigned."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivUIOp | arith.RemUIOp, rewriter: PatternRewriter):
        t = convert_type(op.result.type, op)
        unsigned = _unsigned(t)
        lhs, rhs = EmitC_CastOp(op.lhs, unsigned), EmitC_CastOp(op.rhs, unsigned)
        operator = EmitC_DivOp if isinstance(op, arith.DivUIOp) else EmitC_RemOp
        divide = operator(lhs, rhs, unsigned)
        back = EmitC_CastOp(divide, t)
        rewriter.replace(op, (lhs, rhs, divide, back))


class ShiftLowering(RewritePattern):
    """Lowers `arith.shli`/`shrui`/`shrsi` to C shifts. The loop-level IR only
    shifts by amounts below the width; a left shift or a logical right shift
    runs on the operand as unsigned (of at least 32 bits: shifting a negative
    signed value, or into the sign bit of the int C promotes to, is undefined),
    an arithmetic one on the signed value (GCC and Clang shift it arithmetically)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, arith.ShLIOp | arith.ShRUIOp | arith.ShRSIOp):
            return
        t = convert_type(op.results[0].type, op)
        assert isinstance(t, IntegerType)
        lhs, rhs = op.operands
        if isinstance(op, arith.ShRSIOp):
            rewriter.replace(op, EmitC_BitwiseRightShiftOp(lhs, rhs, t))
            return
        wide = IntegerType(max(t.width.data, 32), Signedness.UNSIGNED)
        casts = [EmitC_CastOp(lhs, wide), EmitC_CastOp(rhs, wide)]
        operator = (
            EmitC_BitwiseLeftShiftOp if isinstance(op, arith.ShLIOp) else EmitC_BitwiseRightShiftOp
        )
        shifted = operator(casts[0].dest, casts[1].dest, wide)
        rewriter.replace(op, (*casts, shifted, EmitC_CastOp(shifted.results[0], t)))


class NegfLowering(RewritePattern):
    """Lowers `arith.negf` to unary minus."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter):
        rewriter.replace(op, EmitC_UnaryMinusOp(op.operand))


_MINMAX_C_TYPES = {"f32": ("float", "f"), "f64": ("double", "")}


def minmax_helper(is_max: bool, float_type: Attribute) -> tuple[str, str]:
    """Name and one-line C definition of a NaN-propagating min/max.

    A NaN operand wins and max(-0, +0) = +0, like LLVM's maximum/minimum. It
    is a function rather than an expression: GCC 12 at -O3 crashes
    (internal compiler error in tree-ssa-sccvn) on some chains of the
    equivalent inline conditional expressions.
    """
    c_type, suffix = _MINMAX_C_TYPES[str(float_type)]
    name = f"byoc_{'max' if is_max else 'min'}imum{suffix}"
    wins = ">" if is_max else "<"
    # __builtin_signbit needs no header (GCC and Clang). Selects, not
    # branches, so that GCC vectorises loops calling it (3x faster pooling).
    tie = "__builtin_signbit(a) ? b : a" if is_max else "__builtin_signbit(a) ? a : b"
    return name, (
        f"static inline {c_type} {name}({c_type} a, {c_type} b) "
        f"{{ {c_type} m = (a {wins} b || a != a) ? a : b; {c_type} t = {tie}; "
        f"return a == b ? t : m; }}"
    )


class MinMaxLowering(RewritePattern):
    """Lowers `arith.maximumf`/`minimumf` to calls of NaN-propagating helpers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.MaximumfOp | arith.MinimumfOp, rewriter: PatternRewriter
    ):
        typ = op.result.type
        if str(typ) not in _MINMAX_C_TYPES:
            raise _unsupported(op, f"no C min/max helper for {typ}")
        name, _ = minmax_helper(isinstance(op, arith.MaximumfOp), typ)
        rewriter.replace(op, EmitC_CallOpaqueOp(name, [op.lhs, op.rhs], [typ]))


_BITCAST_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t"}


def bitcast_helper(source: Attribute, target: Attribute) -> tuple[str, str]:
    """Name and one-line C definition reinterpreting a `source` value's bits as
    `target` (same size): a memcpy, which compilers turn into nothing."""
    name = f"byoc_bitcast_{target}_{source}"
    s, t = _BITCAST_C_TYPES[str(source)], _BITCAST_C_TYPES[str(target)]
    return name, (
        f"static inline {t} {name}({s} v) {{ {t} r; __builtin_memcpy(&r, &v, sizeof r); "
        "return r; }"
    )


_BITCASTS = (("i32", "f32"), ("f32", "i32"), ("i64", "f64"), ("f64", "i64"))


class BitcastLowering(RewritePattern):
    """Lowers `arith.bitcast` between floats and integers to a call of a helper."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.BitcastOp, rewriter: PatternRewriter):
        source, target = op.input.type, op.result.type
        if (str(source), str(target)) not in _BITCASTS:
            raise _unsupported(op, f"no C bit cast from {source} to {target}")
        name, _ = bitcast_helper(source, target)
        rewriter.replace(op, EmitC_CallOpaqueOp(name, [op.input], [target]))


def add_minmax_helpers(module: ModuleOp) -> None:
    """Define, at the top of the module, the min/max and bit cast helpers its
    code calls."""
    used = {
        op.callee.data
        for op in module.walk()
        if isinstance(op, EmitC_CallOpaqueOp) and op.callee.data.startswith("byoc_")
    }
    types = {"f32": f32, "f64": f64, "i32": i32, "i64": i64}
    definitions = [
        text
        for is_max in (True, False)
        for typ in (f32, f64)
        for name, text in [minmax_helper(is_max, typ)]
        if name in used
    ] + [
        text
        for source, target in _BITCASTS
        for name, text in [bitcast_helper(types[source], types[target])]
        if name in used
    ]
    # Before the first function definition, after includes, globals and
    # declarations.
    block = module.body.block
    first = next(
        (o for o in block.ops if isinstance(o, EmitC_FuncOp) and o.body.blocks), None
    )
    for text in definitions:
        helper = EmitC_VerbatimOp(text)
        if first is None:
            block.add_op(helper)
        else:
            block.insert_op_before(helper, first)


# (eq, ne, lt, le, gt, ge) for the signed and unsigned integer predicates of arith.cmpi
_CMPI_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge", "lt", "le", "gt", "ge")
# On i1, signed order is reversed: true is -1.
_CMPI_I1_SIGNED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


class CmpiLowering(RewritePattern):
    """Lowers `arith.cmpi` to `emitc.cmp`, casting to unsigned for unsigned predicates."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter):
        code = op.predicate.value.data
        predicate = _CMPI_PREDICATES[code]
        t = convert_type(op.lhs.type, op)
        lhs, rhs = op.lhs, op.rhs
        ops: list[Operation] = []
        if t == i1:
            if 2 <= code <= 5:
                predicate = _CMPI_I1_SIGNED[predicate]
        elif code >= 6:
            casts = [EmitC_CastOp(lhs, _unsigned(t)), EmitC_CastOp(rhs, _unsigned(t))]
            ops += casts
            lhs, rhs = (c.dest for c in casts)
        ops.append(EmitC_CmpOp(predicate, lhs, rhs))
        rewriter.replace(op, ops)


# arith.cmpf predicate -> (emitc predicate, negate); None marks the special cases.
_CMPF_PREDICATES: dict[int, tuple[str, bool] | None] = {
    0: None,  # false
    1: ("eq", False),  # oeq
    2: ("gt", False),  # ogt
    3: ("ge", False),  # oge
    4: ("lt", False),  # olt
    5: ("le", False),  # ole
    6: None,  # one
    7: None,  # ord
    8: None,  # ueq
    9: ("le", True),  # ugt
    10: ("lt", True),  # uge
    11: ("ge", True),  # ult
    12: ("gt", True),  # ule
    13: ("ne", False),  # une
    14: None,  # uno
    15: None,  # true
}


class CmpfLowering(RewritePattern):
    """Lowers `arith.cmpf` to C comparisons (which are false on NaN, i.e. ordered)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter):
        code = op.predicate.value.data
        a, b = op.lhs, op.rhs
        simple = _CMPF_PREDICATES[code]
        ops: list[Operation] = []

        def emit(new: Operation) -> SSAValue:
            ops.append(new)
            return new.results[0]

        if simple is not None:
            predicate, negate = simple
            result = emit(EmitC_CmpOp(predicate, a, b))
            if negate:
                emit(EmitC_LogicalNotOp(result))
        elif code in (0, 15):
            emit(EmitC_ConstantOp(IntegerAttr(int(code == 15), i1)))
        elif code in (6, 8):  # one, ueq = !one
            less = emit(EmitC_CmpOp("lt", a, b))
            ordered_ne = emit(EmitC_LogicalOrOp(less, emit(EmitC_CmpOp("gt", a, b))))
            if code == 8:
                emit(EmitC_LogicalNotOp(ordered_ne))
        elif code == 7:  # ord
            a_ordered = emit(EmitC_CmpOp("eq", a, a))
            emit(EmitC_LogicalAndOp(a_ordered, emit(EmitC_CmpOp("eq", b, b))))
        else:  # uno
            a_nan = emit(EmitC_CmpOp("ne", a, a))
            emit(EmitC_LogicalOrOp(a_nan, emit(EmitC_CmpOp("ne", b, b))))
        rewriter.replace(op, ops)


class SelectLowering(RewritePattern):
    """Lowers `arith.select` to the ternary operator."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter):
        rewriter.replace(op, EmitC_ConditionalOp(op.cond, op.lhs, op.rhs))


class CastLowering(RewritePattern):
    """Lowers arith's conversions to C casts (none when the C types agree)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.IndexCastOp
        | arith.SIToFPOp
        | arith.FPToSIOp
        | arith.ExtFOp
        | arith.TruncFOp,
        rewriter: PatternRewriter,
    ):
        source = op.operands[0]
        t = convert_type(op.results[0].type, op)
        if convert_type(source.type, op) == t:
            rewriter.replace(op, [], [source])
        else:
            rewriter.replace(op, EmitC_CastOp(source, t))


class IntegerCastLowering(RewritePattern):
    """Lowers `arith.extsi/extui/trunci` to C casts; an extension first reads the
    source as signed (extsi) or unsigned (extui) of its width, whatever C type
    holds it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp, rewriter: PatternRewriter
    ):
        source = op.operands[0]
        source_type = convert_type(source.type, op)
        target = convert_type(op.results[0].type, op)
        ops: list[Operation] = []
        if not isinstance(op, arith.TruncIOp) and isinstance(source_type, IntegerType):
            width = source_type.width.data
            wanted = (
                _unsigned(source_type)
                if isinstance(op, arith.ExtUIOp)
                else IntegerType(width, Signedness.SIGNLESS)
            )
            if wanted != source_type:
                ops.append(EmitC_CastOp(source, wanted))
                source = ops[-1].results[0]
        ops.append(EmitC_CastOp(source, target))
        rewriter.replace(op, ops)


# ---------------------------------------------------------------------------
# math (and the arith ops that are library calls in C)
# ---------------------------------------------------------------------------

_LIBRARY_FUNCTIONS: dict[str, str] = {
    "math.tanh": "tanh",
    "math.exp": "exp",
    "math.log": "log",
    "math.sqrt": "sqrt",
    "math.erf": "erf",
    "math.absf": "fabs",
    "math.powf": "pow",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.atan": "atan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
    "math.atan2": "atan2",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.exp2": "exp2",
    "math.expm1": "expm1",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.log1p": "log1p",
    "math.cbrt": "cbrt",
    "math.trunc": "trunc",
    "math.round": "round",
    "math.copysign": "copysign",
    "arith.remf": "fmod",
    "arith.maxnumf": "fmax",
    "arith.minnumf": "fmin",
}
"""Ops computed by a <math.h> function (with the `f` suffix for `float`), by name."""


def _library_name(base: str, t: Attribute, op: Operation) -> str:
    if isinstance(t, Float32Type):
        return base + "f"
    if isinstance(t, Float64Type):
        return base
    raise _unsupported(op, f"<math.h> has no {base} for {t}")


class MathLowering(RewritePattern):
    """Lowers math ops (and `arith.remf`) to calls of <math.h> functions."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        base = _LIBRARY_FUNCTIONS.get(op.name)
        if base is None:
            return
        t = op.results[0].type
        name = _library_name(base, t, op)
        rewriter.replace(op, EmitC_CallOpaqueOp(name, op.operands, [t]))


class RsqrtLowering(RewritePattern):
    """Lowers `math.rsqrt` to `1 / sqrt(x)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.RsqrtOp, rewriter: PatternRewriter):
        t = op.result.type
        one = EmitC_ConstantOp(FloatAttr(1.0, t))  # pyright: ignore
        root = EmitC_CallOpaqueOp(_library_name("sqrt", t, op), [op.operand], [t])
        rewriter.replace(op, (one, root, EmitC_DivOp(one, root, t)))


# ---------------------------------------------------------------------------
# Clean-up and the pass
# ---------------------------------------------------------------------------


class MemRefCastElimination(RewritePattern):
    """Replaces the memref views of lowered pointers by the pointers themselves."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter):
        (source,) = op.inputs
        if isinstance(source.type, EmitC_PointerType):
            rewriter.replace(op, [], [source])


def _check_lowered(module: ModuleOp) -> None:
    """Raise, naming the op and its function, if anything but emitc is left."""
    for op in module.walk():
        if op is not module and op.dialect_name() != EmitC.name:
            raise _unsupported(op, "it is not part of the loop-level IR")


def failed_bytes_symbol(function: str) -> str:
    """The `int64_t` global where the C of a module whose first function is
    `function` records the size of an allocation that failed."""
    return f"{function}_failed_bytes"


def _lowering_patterns(
    prefix: str, defined: frozenset[str], called: frozenset[str], alloc: AllocLowering
) -> list[RewritePattern]:
    return [
        FuncLowering(prefix, called),
        CallLowering(prefix, defined),
        ReturnLowering(),
        ForLowering(),
        IfLowering(),
        YieldLowering(),
        LoadLowering(),
        StoreLowering(),
        alloc,
        AllocaLowering(),
        DeallocLowering(),
        GlobalLowering(),
        GetGlobalLowering(),
        ConstantLowering(),
        BinaryLowering(),
        UnsignedDivisionLowering(),
        NegfLowering(),
        ShiftLowering(),
        MinMaxLowering(),
        CmpiLowering(),
        CmpfLowering(),
        SelectLowering(),
        CastLowering(),
        BitcastLowering(),
        IntegerCastLowering(),
        MathLowering(),
        RsqrtLowering(),
    ]


@dataclass(frozen=True)
class ConvertLoopsToEmitCPass(ModulePass):
    """Lowers the loop-level IR to emitc, ready for `byoc.targets.c`."""

    name = "convert-loops-to-emitc"

    symbol_prefix: str = ""
    """Prepended to the symbol of every function defined in the module (and its calls)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # The rewrite allocates many small objects; the collector's passes over
        # them would make it superlinear.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._lower(op)
        finally:
            if collecting:
                gc.enable()

    def _lower(self, op: ModuleOp) -> None:
        defined_in_order = [
            f.sym_name.data
            for f in op.ops
            if isinstance(f, func.FuncOp) and not f.is_declaration
        ]
        defined = frozenset(defined_in_order)
        called = frozenset(
            call.callee.string_value() for call in op.walk() if isinstance(call, func.CallOp)
        )
        first = self.symbol_prefix + (defined_in_order[0] if defined_in_order else "module")
        alloc = AllocLowering(failed_bytes_symbol(first))
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                _lowering_patterns(self.symbol_prefix, defined, called, alloc)
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        if alloc.used:
            # Exported, so the host can name the size (CompiledModule._fail).
            op.body.block.insert_op_before(
                EmitC_GlobalOp(alloc.failed_bytes, i64, IntegerAttr(0, i64)),
                op.body.block.first_op,
            )
        PatternRewriteWalker(
            MemRefCastElimination(), apply_recursively=False
        ).rewrite_module(op)
        add_minmax_helpers(op)
        _check_lowered(op)
        # C needs a prototype before a call; declare every called function up front.
        prototypes = [
            EmitC_DeclareFuncOp(self.symbol_prefix + name)
            for name in defined_in_order
            if name in called
        ]
        if prototypes:
            op.body.block.insert_ops_before(prototypes, op.body.block.first_op)
