"""xDSL's arith dialect with the op of MLIR's arith that xDSL 0.74 lacks:
`arith.remf`, the floating-point remainder (C's `fmod`, LLVM's `frem`).

The loop-level IR builds `RemFOp` for `relay.mod`/`relay.floor_mod`; the LLVM
and C lowerings take it by name (`llvm.frem`, `fmod`/`fmodf`)."""

from xdsl.dialects import arith
from xdsl.dialects.arith import FloatingPointLikeBinaryOperation
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    """`lhs - trunc(lhs / rhs) * rhs`, exactly (the sign of `lhs`; NaN for a 0
    divisor or an infinite dividend)."""

    name = "arith.remf"

    traits = traits_def(Pure())


Arith = Dialect(
    "arith",
    [*arith.Arith.operations, RemFOp],
    list(arith.Arith.attributes),
)
"""xDSL's arith and `arith.remf`; registered by `make_context` in its place."""
