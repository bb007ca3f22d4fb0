"""Builders of loop-level IR: an insertion cursor whose constants are hoisted to
the function entry, `scf.for` nests, broadcasting loads and elementwise nests.

They know nothing of relay: lowerings (and, later, fusion) compose them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

OpT = TypeVar("OpT", bound=Operation)

INDEX = IndexType()
I32 = IntegerType(32)


class ConstantPool:
    """The `arith.constant`s of one function: one per distinct (value, type), at its entry."""

    __slots__ = ("entry", "last", "values")

    def __init__(self, entry: Block):
        self.entry = entry
        self.last: Operation | None = None
        self.values: dict[tuple[Attribute, object], SSAValue] = {}

    def get(self, value: int | float, typ: Attribute) -> SSAValue:
        """The constant `value : typ`, created at the function entry on first use."""
        is_float = isinstance(typ, AnyFloat)
        # float.hex keeps 0.0 and -0.0 apart (they are equal as dict keys).
        key = (typ, float(value).hex() if is_float else int(value))
        found = self.values.get(key)
        if found is not None:
            return found
        if is_float:
            op = arith.ConstantOp(FloatAttr(float(value), typ))
            hint = "cst"
        else:
            assert isinstance(typ, IndexType | IntegerType)
            op = arith.ConstantOp(IntegerAttr(int(value), typ))
            sign = "m" if value < 0 else ""
            suffix = "" if isinstance(typ, IndexType) else f"_{typ}"
            hint = f"c{sign}{abs(int(value))}{suffix}"
        op.result.name_hint = hint
        if self.last is None:
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
        else:
            self.entry.insert_op_after(op, self.last)
        self.last = op
        self.values[key] = op.result
        return op.result


class BodyBuilder:
    """Inserts ops at one point of a function body (before `before`, else at the
    end of `block`); constants come from the function's shared pool."""

    __slots__ = ("block", "before", "pool")

    def __init__(
        self, block: Block, pool: ConstantPool, before: Operation | None = None
    ):
        self.block = block
        self.before = before
        self.pool = pool

    def insert(self, op: OpT) -> OpT:
        """Insert `op` at this point and return it."""
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)
        return op

    def at(self, block: Block, before: Operation | None = None) -> BodyBuilder:
        """A builder for another point of the same function."""
        return BodyBuilder(block, self.pool, before)

    def scalar(
        self,
        op_type: type[Operation],
        *operands: SSAValue,
        result_type: Attribute | None = None,
        properties: Mapping[str, Attribute] | None = None,
    ) -> SSAValue:
        """Insert `op_type(*operands)` and return its single result, typed like
        the first operand unless `result_type` is given (e.g. i1 for `arith.cmpf`,
        whose predicate goes in `properties`).

        Builds through `Operation.create`, about three times faster than the IRDL
        constructors: loop bodies are where nearly all ops are made.
        """
        typ = operands[0].type if result_type is None else result_type
        op = op_type.create(
            operands=operands, result_types=(typ,), properties=properties or {}
        )
        return self.insert(op).results[0]

    def constant(self, value: int | float, typ: Attribute) -> SSAValue:
        """The hoisted constant `value : typ`."""
        return self.pool.get(value, typ)

    def index(self, value: int) -> SSAValue:
        """The hoisted constant `value : index`."""
        return self.pool.get(value, INDEX)


_CMPF_PREDICATES = {
    name: IntegerAttr(code, i64)
    for code, name in enumerate(
        ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
         "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
    )
}
"""arith.cmpf's predicates by name, numbered as MLIR numbers them."""
_NO_FASTMATH = arith.CmpfOp.create(
    properties={"predicate": _CMPF_PREDICATES["olt"], "fastmath": arith.FastMathFlagsAttr("none")}
).properties["fastmath"]


def compare_floats(b: BodyBuilder, predicate: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`arith.cmpf` with `predicate` named as MLIR names it: ordered ones
    (`olt`, `ogt`, ...) are false if either is NaN, so a select on them keeps a
    NaN input on its "else" side; `une` and `uno` are true then (`x uno x`
    tests for NaN)."""
    return b.scalar(
        arith.CmpfOp,
        x,
        y,
        result_type=i1,
        properties={"predicate": _CMPF_PREDICATES[predicate], "fastmath": _NO_FASTMATH},
    )


_CMPI_PREDICATES = {
    name: IntegerAttr(code, i64)
    for code, name in enumerate(
        ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
    )
}
"""arith.cmpi's predicates by name, numbered as MLIR numbers them."""


def compare_integers(b: BodyBuilder, predicate: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`arith.cmpi` with `predicate` named as MLIR names it (`slt`, `ult`, ...)."""
    return b.scalar(
        arith.CmpiOp, x, y, result_type=i1, properties={"predicate": _CMPI_PREDICATES[predicate]}
    )


def compare_in_order(b: BodyBuilder, order: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`x <order> y` (`lt`, `le`, `gt`, `ge`) of integers as an `arith.cmpi`,
    signed or unsigned as their type orders them (`unsigned_order`)."""
    return compare_integers(b, ("u" if unsigned_order(x.type) else "s") + order, x, y)


def is_unsigned(typ: Attribute) -> bool:
    """Whether `typ` is an unsigned integer type (`uiN`)."""
    return isinstance(typ, IntegerType) and typ.signedness.data == Signedness.UNSIGNED


def unsigned_order(typ: Attribute) -> bool:
    """Whether integers of `typ` compare and widen as unsigned: `uiN`, and `i1`
    (a bool: true, stored as 1, is the larger, not -1)."""
    return isinstance(typ, IntegerType) and (typ.width.data == 1 or is_unsigned(typ))


def select(b: BodyBuilder, condition: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    """`arith.select condition, x, y`."""
    return b.scalar(arith.SelectOp, condition, x, y, result_type=x.type)


READS_ATTR = "byoc.reads"
"""On a `func.call` of a library function (libbyoc's int8 kernels): the
positions (an i64 array) of the memref operands it only reads. The C exit
keeps the `const` of a parameter that such calls only read: without it, one
tensor passed twice to a function (a convolution's data that is also its
residual) is a `restrict` pointer aliasing another, which GCC rejects."""

WRAPS_ATTR = "byoc.wraps"
"""Marks integer `arith.addi`/`subi`/`muli` that must wrap around on overflow
(relay's integer arithmetic, as numpy's). LLVM's wrap anyway; the C exit
computes them in unsigned arithmetic, since signed overflow is undefined in C."""

_UNIT = UnitAttr()


def wrapping(b: BodyBuilder, op_type: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    """`op_type(x, y)` of integer scalars, wrapping around on overflow."""
    result = b.scalar(op_type, x, y)
    result.owner.attributes[WRAPS_ATTR] = _UNIT  # type: ignore[union-attr]
    return result


ScalarBuilder = Callable[[BodyBuilder, Sequence[SSAValue], Attribute], SSAValue]
"""Builds one scalar result from scalar operands of an element type, at a builder."""


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a memref value."""
    typ = value.type
    assert isinstance(typ, MemRefType)
    return typ.get_shape()


def element_type_of(value: SSAValue) -> Attribute:
    """The element type of a memref value."""
    typ = value.type
    assert isinstance(typ, MemRefType)
    return typ.element_type


def loop_nest(
    b: BodyBuilder, shape: Sequence[int]
) -> tuple[BodyBuilder, list[SSAValue]]:
    """One unit-step `scf.for` per dimension of `shape`, outermost first, so the
    innermost loop runs over the last (contiguous) dimension.

    Returns a builder inside the innermost body and the induction variables; a
    rank-0 shape builds no loop and returns `b` itself.
    """
    ivs: list[SSAValue] = []
    if not shape:
        return b, ivs
    zero, one = b.index(0), b.index(1)
    for extent in shape:
        body = Block(arg_types=(INDEX,))
        terminator = scf.YieldOp.create()
        body.add_op(terminator)
        b.insert(
            scf.ForOp.create(
                operands=(zero, b.index(extent), one), regions=(Region(body),)
            )
        )
        body.args[0].name_hint = f"i{len(ivs)}"
        ivs.append(body.args[0])
        b = b.at(body, terminator)
    return b, ivs


def broadcast_indices(
    b: BodyBuilder, ivs: Sequence[SSAValue], shape: Sequence[int]
) -> list[SSAValue]:
    """Indices reading an operand of `shape` broadcast (numpy rules) to the
    iteration space of `ivs`: missing leading dims are dropped, size-1 dims read 0."""
    skip = len(ivs) - len(shape)
    assert skip >= 0, "an operand cannot have a higher rank than the result"
    return [
        b.index(0) if extent == 1 else ivs[skip + dim]
        for dim, extent in enumerate(shape)
    ]


def load_broadcast(
    b: BodyBuilder, source: SSAValue, ivs: Sequence[SSAValue]
) -> SSAValue:
    """`memref.load` of `source` at the broadcast of `ivs`."""
    typ = source.type
    assert isinstance(typ, MemRefType)
    indices = broadcast_indices(b, ivs, typ.get_shape())
    return b.scalar(memref.LoadOp, source, *indices, result_type=typ.element_type)


def elementwise_nest(
    b: BodyBuilder,
    compute: Callable[[BodyBuilder, Sequence[SSAValue]], SSAValue],
    inputs: Sequence[SSAValue],
    output: SSAValue,
) -> None:
    """`output[i...] = compute(input[broadcast(i...)] for each input)` over the
    shape of `output`, in one loop nest."""
    inner, ivs = loop_nest(b, shape_of(output))
    scalars = [load_broadcast(inner, source, ivs) for source in inputs]
    store(inner, compute(inner, scalars), output, ivs)


def store(
    b: BodyBuilder, value: SSAValue, target: SSAValue, indices: Sequence[SSAValue]
) -> None:
    """`memref.store value, target[indices]`."""
    b.insert(memref.StoreOp.create(operands=(value, target, *indices)))


def copy_nest(b: BodyBuilder, source: SSAValue, target: SSAValue) -> None:
    """Copy (broadcasting if needed) `source` into `target` with one loop nest."""
    elementwise_nest(b, lambda _, scalars: scalars[0], [source], target)


def alloc(b: BodyBuilder, typ: MemRefType) -> SSAValue:
    """A heap buffer (`memref.alloc`) of type `typ`."""
    op = memref.AllocOp.create(
        result_types=(typ,), properties={"operandSegmentSizes": _NO_ALLOC_OPERANDS}
    )
    return b.insert(op).memref


def dealloc(b: BodyBuilder, buffer: SSAValue) -> None:
    """Free a buffer made by `alloc`."""
    b.insert(memref.DeallocOp.create(operands=(buffer,)))


# memref.alloc of a static shape has no operands; share its segment sizes.
_NO_ALLOC_OPERANDS = memref.AllocOp((), (), MemRefType(I32, ())).properties[
    "operandSegmentSizes"
]
