"""Scalar builders of relay's remainders (`relay.mod`, `relay.floor_mod`) and
shifts (`relay.left_shift`, `relay.right_shift`) for the loop-level IR.

Integer division and shifts trap or are undefined on some operands (`x % 0`,
`INT_MIN % -1`, a shift by the width or more), in LLVM and in C alike, and the
relay ops define a result for every operand: the builders pick a safe divisor
or amount first and select the defined result after."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, SSAValue

from byoc.dialects.arith import RemFOp
from byoc.passes.loop_nests import (
    BodyBuilder,
    ScalarBuilder,
    compare_floats,
    compare_integers,
    is_unsigned,
    select,
    wrapping,
)


def _float_remainder(b: BodyBuilder, x: SSAValue, y: SSAValue, floored: bool) -> SSAValue:
    r = b.scalar(RemFOp, x, y)  # exact, of x's sign; NaN by 0 or of an infinity
    if not floored:
        return r
    # numpy's mod: a nonzero remainder of the other sign than y moves by y
    # (NaN compares nonzero and stays NaN), and a zero one takes y's sign.
    typ = x.type
    zero = b.constant(0.0, typ)
    y_negative = compare_floats(b, "olt", y, zero)
    differ = b.scalar(arith.XOrIOp, compare_floats(b, "olt", r, zero), y_negative)
    moves = b.scalar(arith.AndIOp, differ, compare_floats(b, "une", r, zero))
    moved = select(b, moves, b.scalar(arith.AddfOp, r, y), r)
    signed_zero = select(b, y_negative, b.constant(-0.0, typ), zero)
    return select(b, compare_floats(b, "oeq", moved, zero), signed_zero, moved)


def _integer_remainder(b: BodyBuilder, x: SSAValue, y: SSAValue, floored: bool) -> SSAValue:
    typ = x.type
    zero, one = b.constant(0, typ), b.constant(1, typ)
    if is_unsigned(typ):  # floored and truncated agree; x % 0 is 0 (x % 1)
        divisor = select(b, compare_integers(b, "eq", y, zero), one, y)
        return b.scalar(arith.RemUIOp, x, divisor)
    # x % 0 and x % -1 divide by 1 instead: 0 either way, and INT_MIN % -1
    # (which traps on x86) never runs.
    risky = b.scalar(
        arith.OrIOp,
        compare_integers(b, "eq", y, zero),
        compare_integers(b, "eq", y, b.constant(-1, typ)),
    )
    divisor = select(b, risky, one, y)
    r = b.scalar(arith.RemSIOp, x, divisor)
    if not floored:
        return r
    differ = b.scalar(
        arith.XOrIOp,
        compare_integers(b, "slt", r, zero),
        compare_integers(b, "slt", divisor, zero),
    )
    moves = b.scalar(arith.AndIOp, differ, compare_integers(b, "ne", r, zero))
    # |r| < |divisor| and their signs differ: r + divisor cannot overflow.
    return select(b, moves, wrapping(b, arith.AddiOp, r, divisor), r)


def remainder(floored: bool) -> ScalarBuilder:
    """relay.floor_mod (`floored`) or relay.mod."""

    def build(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
        x, y = args
        if isinstance(x.type, IntegerType):
            return _integer_remainder(b, x, y, floored)
        return _float_remainder(b, x, y, floored)

    return build


def shift(left: bool) -> ScalarBuilder:
    """relay.left_shift (`left`) or relay.right_shift."""

    def build(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
        x, y = args
        typ = x.type
        assert isinstance(typ, IntegerType)
        width = typ.width.data
        # As unsigned, a negative amount is huge: one compare finds both.
        in_range = compare_integers(b, "ult", y, b.constant(width, typ))
        zero = b.constant(0, typ)
        if not left and not is_unsigned(typ):
            # Arithmetic: shifting by width - 1 gives what the sign alone does.
            amount = select(b, in_range, y, b.constant(width - 1, typ))
            return b.scalar(arith.ShRSIOp, x, amount)
        amount = select(b, in_range, y, zero)
        shifted = b.scalar(arith.ShLIOp if left else arith.ShRUIOp, x, amount)
        return select(b, in_range, shifted, zero)

    return build
