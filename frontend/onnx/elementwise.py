"""Converters of elementwise ONNX operators: arithmetic, unary math, Clip."""


from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import (
    Converter,
    Node,
)

if TYPE_CHECKING:
    pass

Shape = tuple[int, ...]


# --- Converters: one per ONNX op ---------------------------------------------------


def _unary(op_type: type[relay.ElementwiseUnaryOp]) -> Converter:
    return lambda node: node.emit(op_type(node.value(0)))


def _binary(op_type: type[relay.ElementwiseBinaryOp]) -> Converter:
    return lambda node: node.emit(op_type(node.value(0), node.value(1)))


def _variadic(op_type: type[relay.ElementwiseBinaryOp]) -> Converter:
    def convert(node: Node) -> SSAValue:
        values = [node.value(i) for i in range(len(node.inputs)) if node.has(i)]
        if not values:
            raise node.error("needs at least one input")
        result = values[0]
        for value in values[1:]:
            result = node.emit(op_type(result, value))
        return result

    return convert


def _mean(node: Node) -> SSAValue:
    total = _variadic(relay.AddOp)(node)
    count = sum(1 for i in range(len(node.inputs)) if node.has(i))
    if count == 1:
        return total
    return node.emit(relay.DivideOp(total, node.const(float(count))))


def _pow(node: Node) -> SSAValue:
    if node.is_constant(1):
        # The exponent may be an integer tensor (Pow's T1 and T2 differ).
        exponent = node.constant(1, "the exponent")
        if exponent.dtype.kind in "iub":
            return node.emit(relay.PowerOp(node.value(0), node.const(exponent)))
    return node.emit(relay.PowerOp(node.value(0), node.value(1)))


def _clip(node: Node) -> SSAValue:
    if node.graph.opset < 11:
        low = float(node.attr("min", -3.4028234663852886e38))
        high = float(node.attr("max", 3.4028234663852886e38))
    else:
        low_array = node.optional_constant(1, "min")
        high_array = node.optional_constant(2, "max")
        low = -math.inf if low_array is None else float(np.asarray(low_array).item())
        high = math.inf if high_array is None else float(np.asarray(high_array).item())
    if low > high:
        low = high  # ONNX: every element becomes max
    return node.emit(relay.ClipOp(node.value(0), low, high))


CONVERTERS: dict[str, Converter] = {
    "Add": _binary(relay.AddOp),
    "Sub": _binary(relay.SubtractOp),
    "Mul": _binary(relay.MultiplyOp),
    "Div": _binary(relay.DivideOp),
    "Pow": _pow,
    "Max": _variadic(relay.MaximumOp),
    "Min": _variadic(relay.MinimumOp),
    "Sum": _variadic(relay.AddOp),
    "Mean": _mean,
    "Sqrt": _unary(relay.SqrtOp),
    "Erf": _unary(relay.ErfOp),
    "Relu": _unary(relay.ReluOp),
    "Sigmoid": _unary(relay.SigmoidOp),
    "Tanh": _unary(relay.TanhOp),
    "Exp": _unary(relay.ExpOp),
    "Log": _unary(relay.LogOp),
    "Neg": _unary(relay.NegativeOp),
    "Abs": _unary(relay.AbsOp),
    "Clip": _clip,
}
