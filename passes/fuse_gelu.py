"""byoc-fuse-gelu: the erf GELU PyTorch exports, `x * 0.5 * (1 + erf(x / sqrt(2)))`
as five elementwise ops, becomes one `relay.nn.gelu`.

Recognised: a product of `x`, the constant 0.5 and `1 + erf(x / sqrt(2))`,
multiplied in any order and association (`(x * s) * 0.5`, `(x * 0.5) * s`,
`0.5 * (s * x)`, ...), with the scaling written `x / sqrt(2)` or
`x * (1 / sqrt(2))` and the 1 on either side of the addition. Every value
inside the pattern must have no other user (x may have any). One op then
makes one pass over the data instead of five, and a backend can fuse it
after a matrix product (matmul + bias + GELU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import SweepPass, constant_of, insert_before, replace_op

SQRT2 = math.sqrt(2.0)


def _scalar(value: SSAValue, wanted: float, rtol: float = 0.0) -> bool:
    """Whether `value` is a constant holding `wanted` in every element."""
    array = constant_of(value)
    if array is None or array.size == 0:
        return False
    return bool(np.all(np.abs(array.astype(np.float64) - wanted) <= rtol * abs(wanted)))


def _single_use_owner(value: SSAValue, kind: type[Operation]) -> Operation | None:
    owner = value.owner
    if isinstance(owner, kind) and value.has_one_use():
        return owner
    return None


def _other(op: Operation, value: SSAValue) -> SSAValue:
    """The operand of binary `op` that is not `value`."""
    lhs, rhs = op.operands
    return rhs if lhs is value else lhs


def erf_argument(value: SSAValue) -> SSAValue | None:
    """`x` if `value` is `1 + erf(x / sqrt(2))` (each step used only here)."""
    add = _single_use_owner(value, relay.AddOp)
    if add is None:
        return None
    lhs, rhs = add.operands
    erf_value = rhs if _scalar(lhs, 1.0) else lhs if _scalar(rhs, 1.0) else None
    if erf_value is None:
        return None
    erf = _single_use_owner(erf_value, relay.ErfOp)
    if erf is None:
        return None
    scaled = erf.data
    divide = _single_use_owner(scaled, relay.DivideOp)
    if divide is not None and _scalar(divide.rhs, SQRT2, 1e-6):
        return divide.lhs
    multiply = _single_use_owner(scaled, relay.MultiplyOp)
    if multiply is not None:
        for x, c in ((multiply.lhs, multiply.rhs), (multiply.rhs, multiply.lhs)):
            if _scalar(c, 1.0 / SQRT2, 1e-6):
                return x
    return None


def factors(op: relay.MultiplyOp) -> list[SSAValue] | None:
    """The three factors of `op` when it multiplies one operand by the product
    of two others (an inner multiply used only here), else None."""
    for inner_value in op.operands:
        inner = _single_use_owner(inner_value, relay.MultiplyOp)
        if inner is not None:
            return [*inner.operands, _other(op, inner_value)]
    return None


def gelu_input(op: Operation) -> SSAValue | None:
    """`x` if `op` computes `x * 0.5 * (1 + erf(x / sqrt(2)))`, else None."""
    if not isinstance(op, relay.MultiplyOp):
        return None
    found = factors(op)
    if found is None or len(found) != 3:
        return None
    for half in found:
        if not _scalar(half, 0.5):
            continue
        rest = [v for v in found if v is not half]
        for curve, x in ((rest[0], rest[1]), (rest[1], rest[0])):
            if erf_argument(curve) is x and x.type == op.results[0].type:
                return x
    return None


def fuse_gelu(op: Operation) -> bool:
    """Replace `op`, the last multiply of an erf GELU, by `relay.nn.gelu`."""
    x = gelu_input(op)
    if x is None:
        return False
    replace_op(op, insert_before(relay.GeluOp(x), op))
    return True


@dataclass(frozen=True)
class FuseGeluPass(SweepPass):
    """Replaces the erf GELU written as elementwise ops by `relay.nn.gelu`."""

    name = "byoc-fuse-gelu"

    def rewrite(self, op: Operation) -> object:
        return fuse_gelu(op)
