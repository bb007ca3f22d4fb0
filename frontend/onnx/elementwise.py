"""Converters of elementwise ONNX operators: arithmetic, unary math, Clip,
comparisons and logic."""


from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import AnyFloat, f32, f64, i1
from xdsl.ir import Attribute, Operation, SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import (
    Converter,
    Node,
    shape_of,
)

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


def _with_attrs(op_type: type[relay.ElementwiseUnaryOp], **defaults: float) -> Converter:
    """A unary op whose float attributes are the node's (ONNX names and defaults)."""

    def convert(node: Node) -> SSAValue:
        attrs = {name: float(node.attr(name, default)) for name, default in defaults.items()}
        return node.emit(op_type(node.value(0), **attrs))

    return convert


def _float_input(node: Node) -> SSAValue:
    data = node.value(0)
    element = data.type.element_type  # type: ignore[attr-defined]
    if not isinstance(element, AnyFloat):
        raise node.error(f"its input must be a float tensor, got {element}")
    return data


def _is_nan(node: Node) -> SSAValue:
    data = _float_input(node)
    return node.emit(relay.NotEqualOp(data, data))  # only NaN differs from itself


def _is_inf(node: Node) -> SSAValue:
    data = _float_input(node)
    signs = [
        sign
        for sign, attr in ((1.0, "detect_positive"), (-1.0, "detect_negative"))
        if int(node.attr(attr, 1))
    ]
    if not signs:  # detecting neither: false everywhere (nothing exceeds +inf)
        return node.emit(relay.GreaterOp(data, node.const_like(math.inf, data)))
    found = [node.emit(relay.EqualOp(data, node.const_like(s * math.inf, data))) for s in signs]
    return found[0] if len(found) == 1 else node.emit(relay.LogicalOrOp(*found))


def _celu(node: Node) -> SSAValue:
    """`x` above 0, else `alpha * (exp(x / alpha) - 1)`: alpha * elu(x / alpha)."""
    data = _float_input(node)
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 0:
        raise node.error("alpha must not be 0")
    scaled = node.emit(relay.DivideOp(data, node.const_like(alpha, data)))
    negative = node.emit(
        relay.MultiplyOp(node.emit(relay.EluOp(scaled, 1.0)), node.const_like(alpha, data))
    )
    positive = node.emit(relay.GreaterOp(data, node.const_like(0.0, data)))
    return node.emit(relay.WhereOp(positive, data, negative))


def _thresholded_relu(node: Node) -> SSAValue:
    data = _float_input(node)
    alpha = float(node.attr("alpha", 1.0))
    above = node.emit(relay.GreaterOp(data, node.const_like(alpha, data)))
    return node.emit(relay.WhereOp(above, data, node.const_like(0.0, data)))


def _mish(node: Node) -> SSAValue:
    data = _float_input(node)
    soft = node.emit(relay.TanhOp(node.emit(relay.SoftplusOp(data))))
    return node.emit(relay.MultiplyOp(data, soft))


def _gelu(node: Node) -> SSAValue:
    approximate = node.attr("approximate", "none")
    if approximate not in relay.GELU_APPROXIMATIONS:
        raise node.error(f"approximate '{approximate}' is not one of 'none', 'tanh'")
    return node.emit(relay.GeluOp(node.value(0), approximate=approximate))


def _prelu(node: Node) -> SSAValue:
    """PRelu's slope broadcasts to the input (unidirectionally): one value is a
    leaky_relu, values along one axis a prelu, anything else the formula
    `max(x, 0) + slope * min(x, 0)`."""
    data = node.value(0)
    shape = shape_of(data)
    slope_shape = node.shape(1)
    if node.graph.opset < 7 and len(shape) >= 2 and slope_shape == (shape[1],):
        # Before opset 7 a slope of one value per channel ran along axis 1.
        slope_shape = (shape[1], *(1,) * (len(shape) - 2))
    if len(slope_shape) > len(shape) or any(
        s not in (1, d) for s, d in zip(reversed(slope_shape), reversed(shape))
    ):
        raise node.error(
            f"the slope's shape {list(slope_shape)} does not broadcast to the input's "
            f"{list(shape)}"
        )
    aligned = (1,) * (len(shape) - len(slope_shape)) + tuple(slope_shape)
    axes = [axis for axis, size in enumerate(aligned) if size != 1]
    if not axes and node.is_constant(1):
        alpha = float(node.constant(1, "slope").reshape(-1)[0])
        return node.emit(relay.LeakyReluOp(data, alpha=alpha))
    if len(axes) == 1:
        (axis,) = axes
        if node.is_constant(1):
            alpha = node.const(node.constant(1, "slope").reshape(-1), node.inputs[1])
        else:
            alpha = node.emit(relay.ReshapeOp(node.value(1), (shape[axis],)))
        return node.emit(relay.PReluOp(data, alpha, axis=axis))
    zero = node.const(0.0)
    positive = node.emit(relay.MaximumOp(data, zero))
    negative = node.emit(relay.MinimumOp(data, zero))
    scaled = node.emit(relay.MultiplyOp(negative, node.value(1)))
    return node.emit(relay.AddOp(positive, scaled))


def _dtype_name(element: Attribute) -> str:
    """relay.cast's name of a runtime element type."""
    return next(name for name, typ in relay.CAST_DTYPES.items() if typ == element)


def _pow(node: Node) -> SSAValue:
    """Pow: the result has the base's type, the exponent may have another
    (Pow's T and T1 differ). An integer base is raised in float64 and
    truncated back, as numpy's integer power for the exponents that make
    sense (non-negative, results below 2**53)."""
    base = node.value(0)
    base_type = base.type.element_type  # type: ignore[attr-defined]
    if base_type == f32 and node.is_constant(1):
        exponent = node.constant(1, "the exponent")
        if exponent.dtype.kind in "iub":
            return node.emit(relay.PowerOp(base, node.const(exponent)))
    exponent = node.value(1)
    exponent_type = exponent.type.element_type  # type: ignore[attr-defined]
    if isinstance(base_type, AnyFloat):
        if exponent_type != base_type:
            exponent = node.emit(relay.CastOp(exponent, _dtype_name(base_type)))
        return node.emit(relay.PowerOp(base, exponent))
    if exponent_type != f64:
        exponent = node.emit(relay.CastOp(exponent, "float64"))
    wide = node.emit(relay.PowerOp(node.emit(relay.CastOp(base, "float64")), exponent))
    return node.emit(relay.CastOp(wide, _dtype_name(base_type)))


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


def _same_types(op_type: type[Operation]) -> Converter:
    """A binary op whose two inputs must have one element type (ONNX's `T`)."""

    def convert(node: Node) -> SSAValue:
        lhs, rhs = node.value(0), node.value(1)
        lt, rt = (v.type.element_type for v in (lhs, rhs))  # type: ignore[attr-defined]
        if lt != rt:
            raise node.error(f"its inputs have different element types {lt} and {rt}")
        return node.emit(op_type(lhs, rhs))

    return convert


def _arithmetic(op_type: type[relay.ElementwiseBinaryOp]) -> Converter:
    """Add, Sub, Mul, Div: floats, or integers where relay's op takes them."""
    same = _same_types(op_type)

    def convert(node: Node) -> SSAValue:
        element = node.value(0).type.element_type  # type: ignore[attr-defined]
        if not isinstance(element, AnyFloat) and not (
            op_type.INTEGER_DATA and relay.is_integer_element(element)
        ):
            raise node.error(f"{node.op_type} of {element} tensors is not supported")
        return same(node)

    return convert


def _mod(node: Node) -> SSAValue:
    fmod = int(node.attr("fmod", 0))
    if fmod not in (0, 1):
        raise node.error(f"fmod must be 0 or 1, got {fmod}")
    return _arithmetic(relay.ModOp if fmod else relay.FloorModOp)(node)


def _bit_shift(node: Node) -> SSAValue:
    direction = node.attr("direction", None)
    ops = {"LEFT": relay.LeftShiftOp, "RIGHT": relay.RightShiftOp}
    if direction not in ops:
        raise node.error(f"direction must be \"LEFT\" or \"RIGHT\", got {direction!r}")
    element = node.value(0).type.element_type  # type: ignore[attr-defined]
    if not relay.is_integer_element(element):
        raise node.error(f"BitShift of {element} tensors is not supported (integers are)")
    return _same_types(ops[direction])(node)


def _logical(op_type: type[relay.LogicalBinaryOp]) -> Converter:
    def convert(node: Node) -> SSAValue:
        for i in range(2):
            element = node.value(i).type.element_type  # type: ignore[attr-defined]
            if element != i1:
                raise node.error(f"input {i} must be a bool tensor, got {element}")
        return node.emit(op_type(node.value(0), node.value(1)))

    return convert


def _not(node: Node) -> SSAValue:
    element = node.value(0).type.element_type  # type: ignore[attr-defined]
    if element != i1:
        raise node.error(f"its input must be a bool tensor, got {element}")
    return node.emit(relay.LogicalNotOp(node.value(0)))


CONVERTERS: dict[str, Converter] = {
    "Add": _arithmetic(relay.AddOp),
    "Sub": _arithmetic(relay.SubtractOp),
    "Mul": _arithmetic(relay.MultiplyOp),
    "Div": _arithmetic(relay.DivideOp),
    "Pow": _pow,
    "Max": _variadic(relay.MaximumOp),
    "Min": _variadic(relay.MinimumOp),
    "Sum": _variadic(relay.AddOp),
    "Mean": _mean,
    "Sqrt": _unary(relay.SqrtOp),
    "Erf": _unary(relay.ErfOp),
    "Sin": _unary(relay.SinOp),
    "Cos": _unary(relay.CosOp),
    "Tan": _unary(relay.TanOp),
    "Asin": _unary(relay.AsinOp),
    "Acos": _unary(relay.AcosOp),
    "Atan": _unary(relay.AtanOp),
    "Sinh": _unary(relay.SinhOp),
    "Cosh": _unary(relay.CoshOp),
    "Asinh": _unary(relay.AsinhOp),
    "Acosh": _unary(relay.AcoshOp),
    "Atanh": _unary(relay.AtanhOp),
    "Relu": _unary(relay.ReluOp),
    "Sigmoid": _unary(relay.SigmoidOp),
    "Tanh": _unary(relay.TanhOp),
    "Exp": _unary(relay.ExpOp),
    "Log": _unary(relay.LogOp),
    "Neg": _unary(relay.NegativeOp),
    "Abs": _unary(relay.AbsOp),
    "Clip": _clip,
    "Sign": _unary(relay.SignOp),
    "Floor": _unary(relay.FloorOp),
    "Ceil": _unary(relay.CeilOp),
    "Round": _unary(relay.RoundOp),
    "Reciprocal": _unary(relay.ReciprocalOp),
    "Softplus": _unary(relay.SoftplusOp),
    "Softsign": _unary(relay.SoftsignOp),
    "HardSwish": _unary(relay.HardSwishOp),
    "LeakyRelu": _with_attrs(relay.LeakyReluOp, alpha=0.01),
    "Elu": _with_attrs(relay.EluOp, alpha=1.0),
    "Selu": _with_attrs(relay.SeluOp, alpha=relay.SELU_ALPHA, gamma=relay.SELU_GAMMA),
    "HardSigmoid": _with_attrs(relay.HardSigmoidOp, alpha=0.2, beta=0.5),
    "Shrink": _with_attrs(relay.ShrinkOp, bias=0.0, lambd=0.5),
    "Gelu": _gelu,
    "PRelu": _prelu,
    "Equal": _same_types(relay.EqualOp),
    "Less": _same_types(relay.LessOp),
    "LessOrEqual": _same_types(relay.LessEqualOp),
    "Greater": _same_types(relay.GreaterOp),
    "GreaterOrEqual": _same_types(relay.GreaterEqualOp),
    "And": _logical(relay.LogicalAndOp),
    "Or": _logical(relay.LogicalOrOp),
    "Xor": _logical(relay.LogicalXorOp),
    "Not": _not,
    "Mod": _mod,
    "BitShift": _bit_shift,
    "IsNaN": _is_nan,
    "IsInf": _is_inf,
    "Celu": _celu,
    "ThresholdedRelu": _thresholded_relu,
    "Mish": _mish,
}
