"""byoc-remove-noops: ops that return their input unchanged are removed, their
users reading the input instead.

    reshape, squeeze, expand_dims, batch_flatten to the same shape; transpose by
    the identity; concatenate of one tensor
    x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0, x ** 1, bias_add(x, 0)
    relu(relu(x)), maximum(x, x), minimum(x, x), clip(x, -inf, inf)
    max_pool2d / avg_pool2d with a 1x1 window, stride 1 and no padding

(ONNX's Identity and Dropout never reach relay: the importer maps them to
their input.) An op is removed only when its result has exactly its input's
type, so a constant that broadcasts the input to a larger shape stays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import SweepPass, constant_of, is_splat, replace_op
from byoc.passes.simplify_shapes import RESHAPES, permutation

_IDENTITY_CONSTANT: dict[type[Operation], tuple[float, bool]] = {
    relay.MultiplyOp: (1.0, True),
    relay.AddOp: (0.0, True),
    relay.DivideOp: (1.0, False),
    relay.SubtractOp: (0.0, False),
    relay.PowerOp: (1.0, False),
}
"""Binary op -> (the constant it leaves its other operand unchanged with,
whether that constant may be on the left too)."""


def _is(value: SSAValue, constant: float) -> bool:
    array = constant_of(value)
    return array is not None and is_splat(array, constant)


def passthrough(op: Operation) -> SSAValue | None:
    """The operand `op` returns unchanged, or None."""
    if isinstance(op, RESHAPES) or isinstance(op, relay.ConcatenateOp):
        return op.operands[0] if len(op.operands) == 1 else None
    if isinstance(op, relay.TransposeOp):
        perm = permutation(op)
        return op.data if perm == tuple(range(len(perm))) else None
    identity = _IDENTITY_CONSTANT.get(type(op))
    if identity is not None:
        constant, commutes = identity
        lhs, rhs = op.operands
        if _is(rhs, constant):
            return lhs
        if commutes and _is(lhs, constant):
            return rhs
        return None
    if isinstance(op, relay.BiasAddOp):
        return op.data if _is(op.bias, 0.0) else None
    if isinstance(op, relay.ReluOp):
        return op.data if isinstance(op.data.owner, relay.ReluOp) else None
    if isinstance(op, relay.MaximumOp | relay.MinimumOp):
        return op.lhs if op.lhs is op.rhs else None
    if isinstance(op, relay.ClipOp):
        attrs = op.attrs()
        return op.data if attrs["a_min"] == -math.inf and attrs["a_max"] == math.inf else None
    if isinstance(op, relay.MaxPool2dOp | relay.AvgPool2dOp):
        attrs = op.attrs()
        unit = tuple(attrs["pool_size"]) == (1, 1) and tuple(attrs["strides"]) == (1, 1)
        return op.data if unit and not any(attrs["padding"]) else None
    return None


def remove_noop(op: Operation) -> bool:
    """Remove `op` if it returns an operand unchanged; whether it did."""
    source = passthrough(op)
    if source is None or source.type != op.results[0].type:
        return False
    replace_op(op, source)
    return True


@dataclass(frozen=True)
class RemoveNoopsPass(SweepPass):
    """Removes ops that return their input unchanged (identity reshapes, x*1, x+0, ...)."""

    name = "byoc-remove-noops"

    def rewrite(self, op: Operation) -> object:
        return remove_noop(op)
