"""Elementwise tensor ops (TVM's relay/op/tensor): arithmetic with numpy
broadcasting, unary math, clip, comparisons and logic (i1 results)."""

from __future__ import annotations

import abc
import math
from typing import ClassVar

from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.relay.base import (
    RelayOp,
    _error,
    any_tensor_of,
    _string_attr,
    broadcast_shapes,
    check_result,
    float_attr,
    integer_range,
    is_integer_element,
    tensor_of,
)

# --- Elementwise ops ---------------------------------------------------------


class ElementwiseBinaryOp(RelayOp, abc.ABC):
    """Elementwise binary op with numpy broadcasting on operands of one dtype."""

    INTEGER_DATA: ClassVar[bool] = False
    """Whether integer operands are allowed (the op means the same on integers)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None
    ):
        if result_type is None:
            lt, rt = lhs.type, rhs.type
            assert isinstance(lt, TensorType) and isinstance(rt, TensorType)
            shape = broadcast_shapes(lt.get_shape(), rt.get_shape(), self.name)
            result_type = TensorType(self.result_element(lt.element_type), shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    @classmethod
    def result_element(cls, element: Attribute) -> Attribute:
        """The result's element type for operands of `element`: the same."""
        return element

    def operand_type(self, value: SSAValue, what: str) -> TensorType:
        """The tensor type of operand `what`, or a VerifyException if the op
        does not take its element type."""
        return tensor_of(value, self.name, what, self.INTEGER_DATA)

    def verify_(self) -> None:
        lt = self.operand_type(self.lhs, "lhs")
        rt = self.operand_type(self.rhs, "rhs")
        if lt.element_type != rt.element_type:
            raise VerifyException(
                f"'{self.name}': operands have different element types "
                f"{lt.element_type} and {rt.element_type}"
            )
        shape = broadcast_shapes(lt.get_shape(), rt.get_shape(), self.name)
        check_result(self, shape, self.result_element(lt.element_type))


class ElementwiseUnaryOp(RelayOp, abc.ABC):
    """Elementwise unary op: the result has the operand's type."""

    INTEGER_DATA: ClassVar[bool] = False
    """Whether integer data is allowed (the op means the same on integers)."""

    data = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, result_type: Attribute | None = None):
        super().__init__(
            operands=[data], result_types=[result_type or data.type]
        )

    def verify_(self) -> None:
        typ = tensor_of(self.data, self.name, "data", self.INTEGER_DATA)
        check_result(self, typ.get_shape(), typ.element_type)

    def _init_with(
        self,
        data: SSAValue,
        result_type: Attribute | None,
        **properties: Attribute,
    ) -> None:
        """Initialise an op of this family that has attributes."""
        RelayOp.__init__(
            self,
            operands=[data],
            result_types=[result_type or data.type],
            properties=properties,
        )


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Elementwise `lhs + rhs` (integers wrap around, as numpy's)."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.add"


@irdl_op_definition
class SubtractOp(ElementwiseBinaryOp):
    """Elementwise `lhs - rhs` (integers wrap around, as numpy's)."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.subtract"


@irdl_op_definition
class MultiplyOp(ElementwiseBinaryOp):
    """Elementwise `lhs * rhs` (integers wrap around, as numpy's)."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.multiply"


@irdl_op_definition
class DivideOp(ElementwiseBinaryOp):
    """Elementwise `lhs / rhs` (IEEE division)."""

    name = "relay.divide"


@irdl_op_definition
class MaximumOp(ElementwiseBinaryOp):
    """Elementwise `max(lhs, rhs)` (NaN if either is NaN, as numpy.maximum)."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.maximum"


@irdl_op_definition
class MinimumOp(ElementwiseBinaryOp):
    """Elementwise `min(lhs, rhs)` (NaN if either is NaN, as numpy.minimum)."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.minimum"


@irdl_op_definition
class PowerOp(ElementwiseBinaryOp):
    """Elementwise `lhs ** rhs` (C `powf`: NaN for a negative base and a
    non-integer exponent)."""

    name = "relay.power"


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """Elementwise `max(data, 0)`."""

    name = "relay.nn.relu"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "relay.tanh"


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    """Elementwise `e ** data`."""

    name = "relay.exp"


@irdl_op_definition
class NegativeOp(ElementwiseUnaryOp):
    """Elementwise `-data`."""

    name = "relay.negative"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    """Elementwise `|data|`."""

    name = "relay.abs"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    """Elementwise natural logarithm (-inf at 0, NaN below)."""

    name = "relay.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    """Elementwise square root (NaN below 0)."""

    name = "relay.sqrt"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    """Elementwise `1 / sqrt(data)`."""

    name = "relay.rsqrt"


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    """Elementwise logistic function `1 / (1 + exp(-data))`."""

    name = "relay.sigmoid"


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    """Elementwise Gauss error function."""

    name = "relay.erf"


@irdl_op_definition
class SinOp(ElementwiseUnaryOp):
    """Elementwise sine (radians)."""

    name = "relay.sin"


@irdl_op_definition
class CosOp(ElementwiseUnaryOp):
    """Elementwise cosine (radians)."""

    name = "relay.cos"


@irdl_op_definition
class TanOp(ElementwiseUnaryOp):
    """Elementwise tangent (radians)."""

    name = "relay.tan"


@irdl_op_definition
class AsinOp(ElementwiseUnaryOp):
    """Elementwise arcsine (NaN outside [-1, 1])."""

    name = "relay.asin"


@irdl_op_definition
class AcosOp(ElementwiseUnaryOp):
    """Elementwise arccosine (NaN outside [-1, 1])."""

    name = "relay.acos"


@irdl_op_definition
class AtanOp(ElementwiseUnaryOp):
    """Elementwise arctangent."""

    name = "relay.atan"


@irdl_op_definition
class SinhOp(ElementwiseUnaryOp):
    """Elementwise hyperbolic sine."""

    name = "relay.sinh"


@irdl_op_definition
class CoshOp(ElementwiseUnaryOp):
    """Elementwise hyperbolic cosine."""

    name = "relay.cosh"


@irdl_op_definition
class AsinhOp(ElementwiseUnaryOp):
    """Elementwise inverse hyperbolic sine."""

    name = "relay.asinh"


@irdl_op_definition
class AcoshOp(ElementwiseUnaryOp):
    """Elementwise inverse hyperbolic cosine (NaN below 1)."""

    name = "relay.acosh"


@irdl_op_definition
class AtanhOp(ElementwiseUnaryOp):
    """Elementwise inverse hyperbolic tangent (+-inf at +-1, NaN beyond)."""

    name = "relay.atanh"


def integer_clip_bounds(element: IntegerType, low: float, high: float) -> tuple[int, int]:
    """`relay.clip`'s float bounds on integer data of type `element`: rounded
    inward to integers, within the type's range."""
    smallest, largest = integer_range(element)
    low_int = smallest if low <= smallest else min(math.ceil(low), largest)
    high_int = largest if high >= largest else max(math.floor(high), smallest)
    return int(low_int), int(high_int)


@irdl_op_definition
class ClipOp(ElementwiseUnaryOp):
    """Elementwise `min(max(data, a_min), a_max)`; `a_min`, `a_max` are float
    attributes (any float type) with `a_min <= a_max`. On integer data the
    bounds are rounded inward to integers of the data's range (what a
    quantized relu or clip does)."""

    name = "relay.clip"

    INTEGER_DATA: ClassVar[bool] = True

    a_min = prop_def(FloatAttr)
    a_max = prop_def(FloatAttr)

    def __init__(
        self,
        data: SSAValue,
        a_min: float | FloatAttr,
        a_max: float | FloatAttr,
        result_type: Attribute | None = None,
    ):
        if not isinstance(a_min, FloatAttr):
            a_min = FloatAttr(float(a_min), f64)
        if not isinstance(a_max, FloatAttr):
            a_max = FloatAttr(float(a_max), f64)
        RelayOp.__init__(
            self,
            operands=[data],
            result_types=[result_type or data.type],
            properties={"a_min": a_min, "a_max": a_max},
        )

    def verify_(self) -> None:
        super().verify_()
        low, high = self.a_min.value.data, self.a_max.value.data
        if not low <= high:
            raise _error(self.name, f"a_min ({low}) must not exceed a_max ({high})")



@irdl_op_definition
class SignOp(ElementwiseUnaryOp):
    """Elementwise sign: 1 above 0, -1 below, `data` itself at +-0 and NaN."""

    name = "relay.sign"


@irdl_op_definition
class FloorOp(ElementwiseUnaryOp):
    """Elementwise largest integer not above `data` (infinities and NaN kept)."""

    name = "relay.floor"


@irdl_op_definition
class CeilOp(ElementwiseUnaryOp):
    """Elementwise smallest integer not below `data` (infinities and NaN kept)."""

    name = "relay.ceil"


@irdl_op_definition
class RoundOp(ElementwiseUnaryOp):
    """Elementwise nearest integer, halves to even (as numpy.round and ONNX's
    Round: 2.5 -> 2, -0.5 -> -0); infinities and NaN kept."""

    name = "relay.round"


@irdl_op_definition
class ReciprocalOp(ElementwiseUnaryOp):
    """Elementwise `1 / data`."""

    name = "relay.reciprocal"


@irdl_op_definition
class SoftplusOp(ElementwiseUnaryOp):
    """Elementwise `log(1 + exp(data))`, computed as
    `max(data, 0) + log(1 + exp(-|data|))` so it never overflows."""

    name = "relay.nn.softplus"


@irdl_op_definition
class SoftsignOp(ElementwiseUnaryOp):
    """Elementwise `data / (1 + |data|)`."""

    name = "relay.nn.softsign"


@irdl_op_definition
class HardSwishOp(ElementwiseUnaryOp):
    """Elementwise `data * clip(data / 6 + 1/2, 0, 1)` (ONNX's HardSwish)."""

    name = "relay.nn.hard_swish"


@irdl_op_definition
class LeakyReluOp(ElementwiseUnaryOp):
    """Elementwise `data` where `data >= 0`, else `alpha * data`."""

    name = "relay.nn.leaky_relu"

    alpha = prop_def(FloatAttr, default_value=float_attr(0.01))

    def __init__(
        self, data: SSAValue, alpha: float = 0.01, result_type: Attribute | None = None
    ):
        self._init_with(data, result_type, alpha=float_attr(alpha))


@irdl_op_definition
class EluOp(ElementwiseUnaryOp):
    """Elementwise `data` where `data >= 0`, else `alpha * (exp(data) - 1)`."""

    name = "relay.nn.elu"

    alpha = prop_def(FloatAttr, default_value=float_attr(1.0))

    def __init__(
        self, data: SSAValue, alpha: float = 1.0, result_type: Attribute | None = None
    ):
        self._init_with(data, result_type, alpha=float_attr(alpha))


SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875
"""ONNX's (and PyTorch's) Selu constants, as float32 values."""


@irdl_op_definition
class SeluOp(ElementwiseUnaryOp):
    """Elementwise `gamma * data` where `data > 0`, else
    `gamma * alpha * (exp(data) - 1)` (defaults: the self-normalising constants)."""

    name = "relay.nn.selu"

    alpha = prop_def(FloatAttr, default_value=float_attr(SELU_ALPHA))
    gamma = prop_def(FloatAttr, default_value=float_attr(SELU_GAMMA))

    def __init__(
        self,
        data: SSAValue,
        alpha: float = SELU_ALPHA,
        gamma: float = SELU_GAMMA,
        result_type: Attribute | None = None,
    ):
        self._init_with(
            data, result_type, alpha=float_attr(alpha), gamma=float_attr(gamma)
        )


@irdl_op_definition
class HardSigmoidOp(ElementwiseUnaryOp):
    """Elementwise `clip(alpha * data + beta, 0, 1)`."""

    name = "relay.nn.hard_sigmoid"

    alpha = prop_def(FloatAttr, default_value=float_attr(0.2))
    beta = prop_def(FloatAttr, default_value=float_attr(0.5))

    def __init__(
        self,
        data: SSAValue,
        alpha: float = 0.2,
        beta: float = 0.5,
        result_type: Attribute | None = None,
    ):
        self._init_with(data, result_type, alpha=float_attr(alpha), beta=float_attr(beta))


@irdl_op_definition
class ShrinkOp(ElementwiseUnaryOp):
    """Elementwise `data + bias` below `-lambd`, `data - bias` above `lambd`,
    else 0."""

    name = "relay.nn.shrink"

    bias = prop_def(FloatAttr, default_value=float_attr(0.0))
    lambd = prop_def(FloatAttr, default_value=float_attr(0.5))

    def __init__(
        self,
        data: SSAValue,
        bias: float = 0.0,
        lambd: float = 0.5,
        result_type: Attribute | None = None,
    ):
        self._init_with(data, result_type, bias=float_attr(bias), lambd=float_attr(lambd))


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(ElementwiseUnaryOp):
    """Elementwise Gaussian error linear unit: `data / 2 * (1 + erf(data / sqrt(2)))`,
    or with `approximate = "tanh"`
    `data / 2 * (1 + tanh(sqrt(2 / pi) * (data + 0.044715 * data ** 3)))`."""

    name = "relay.nn.gelu"

    approximate = prop_def(StringAttr, default_value=StringAttr("none"))

    def __init__(
        self,
        data: SSAValue,
        approximate: str = "none",
        result_type: Attribute | None = None,
    ):
        self._init_with(data, result_type, approximate=_string_attr(approximate))

    def verify_(self) -> None:
        super().verify_()
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise _error(
                self.name,
                f'approximate "{self.approximate.data}" is not one of "none", "tanh"',
            )


# --- Comparisons and logic: i1 results -----------------------------------------

_I1 = IntegerType(1)


class ComparisonOp(ElementwiseBinaryOp, abc.ABC):
    """Elementwise comparison of two operands of one element type (float,
    integer or i1) with numpy broadcasting; the result is i1. On floats a NaN
    compares false, except by `not_equal` (IEEE, as numpy)."""

    @classmethod
    def result_element(cls, element: Attribute) -> Attribute:
        return _I1

    def operand_type(self, value: SSAValue, what: str) -> TensorType:
        return any_tensor_of(value, self.name, what)


@irdl_op_definition
class EqualOp(ComparisonOp):
    """Elementwise `lhs == rhs`."""

    name = "relay.equal"


@irdl_op_definition
class NotEqualOp(ComparisonOp):
    """Elementwise `lhs != rhs` (true where either is NaN)."""

    name = "relay.not_equal"


@irdl_op_definition
class LessOp(ComparisonOp):
    """Elementwise `lhs < rhs` (false < true for i1)."""

    name = "relay.less"


@irdl_op_definition
class LessEqualOp(ComparisonOp):
    """Elementwise `lhs <= rhs`."""

    name = "relay.less_equal"


@irdl_op_definition
class GreaterOp(ComparisonOp):
    """Elementwise `lhs > rhs`."""

    name = "relay.greater"


@irdl_op_definition
class GreaterEqualOp(ComparisonOp):
    """Elementwise `lhs >= rhs`."""

    name = "relay.greater_equal"


@irdl_op_definition
class ModOp(ElementwiseBinaryOp):
    """Elementwise truncated remainder `lhs - trunc(lhs / rhs) * rhs`, of the
    sign of `lhs` (C's `fmod` and `%`; ONNX's Mod with fmod=1). A float
    remainder by 0 is NaN; an integer one is 0, as numpy's."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.mod"


@irdl_op_definition
class FloorModOp(ElementwiseBinaryOp):
    """Elementwise floored remainder `lhs - floor(lhs / rhs) * rhs`, of the sign
    of `rhs` (numpy's `mod`; ONNX's Mod with fmod=0): a zero result takes the
    sign of `rhs`, by 0 it is NaN on floats and 0 on integers."""

    INTEGER_DATA: ClassVar[bool] = True

    name = "relay.floor_mod"


class ShiftOp(ElementwiseBinaryOp, abc.ABC):
    """Elementwise shift of integer `lhs` by `rhs` bits (same type, numpy
    broadcasting). A shift by a negative amount or by the width or more leaves
    only what the sign alone gives: -1 for a right shift of a negative signed
    value, else 0 (ONNX's BitShift)."""

    def operand_type(self, value: SSAValue, what: str) -> TensorType:
        typ = any_tensor_of(value, self.name, what)
        if not is_integer_element(typ.element_type):
            raise VerifyException(
                f"'{self.name}': {what} must have an integer element type, "
                f"got {typ.element_type}"
            )
        return typ


@irdl_op_definition
class LeftShiftOp(ShiftOp):
    """Elementwise `lhs << rhs`; bits shifted past the top (the sign bit
    included) are dropped."""

    name = "relay.left_shift"


@irdl_op_definition
class RightShiftOp(ShiftOp):
    """Elementwise `lhs >> rhs`: arithmetic (sign-extending) for signed types,
    logical for unsigned ones."""

    name = "relay.right_shift"


def _boolean(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    typ = any_tensor_of(value, op_name, what)
    if typ.element_type != _I1:
        raise VerifyException(
            f"'{op_name}': {what} must have element type i1, got {typ.element_type}"
        )
    return typ


class LogicalBinaryOp(ElementwiseBinaryOp, abc.ABC):
    """Elementwise logic of two i1 operands with numpy broadcasting: an i1 result."""

    def operand_type(self, value: SSAValue, what: str) -> TensorType:
        return _boolean(value, self.name, what)


@irdl_op_definition
class LogicalAndOp(LogicalBinaryOp):
    """Elementwise `lhs and rhs` of i1 tensors."""

    name = "relay.logical_and"


@irdl_op_definition
class LogicalOrOp(LogicalBinaryOp):
    """Elementwise `lhs or rhs` of i1 tensors."""

    name = "relay.logical_or"


@irdl_op_definition
class LogicalXorOp(LogicalBinaryOp):
    """Elementwise `lhs != rhs` of i1 tensors."""

    name = "relay.logical_xor"


@irdl_op_definition
class LogicalNotOp(ElementwiseUnaryOp):
    """Elementwise `not data` of an i1 tensor."""

    name = "relay.logical_not"

    def verify_(self) -> None:
        typ = _boolean(self.data, self.name, "data")
        check_result(self, typ.get_shape(), _I1)
