"""The relay dialect: static-shape tensor operators named and ordered as in TVM Relay.

Every op works on ranked, statically shaped `tensor<...>` values. Verifiers infer
the result shape from the operands (numpy broadcasting for elementwise ops) and
reject anything else with a message naming the op and the operand.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AnyFloat,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], op_name: str
) -> tuple[int, ...]:
    """The numpy broadcast of two shapes, or a VerifyException naming `op_name`."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for dim, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise VerifyException(
                f"'{op_name}': operand shapes {list(lhs)} and {list(rhs)} do not "
                f"broadcast (dimension {dim}: {x} vs {y})"
            )
        out.append(max(x, y) if x != 1 else y)
    return tuple(out)


def tensor_of(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    """The static-shape float tensor type of `value`, or a VerifyException."""
    typ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(typ, TensorType):
        raise VerifyException(f"'{op_name}': {what} must be a tensor, got {typ}")
    if any(d < 0 for d in typ.get_shape()):
        raise VerifyException(
            f"'{op_name}': {what} must have a static shape, got {typ}"
        )
    if not isinstance(typ.element_type, AnyFloat):
        raise VerifyException(
            f"'{op_name}': {what} must have a float element type, got "
            f"{typ.element_type}"
        )
    return typ


def check_result(op: IRDLOperation, shape: Sequence[int], element: Attribute) -> None:
    """Check that `op`'s single result is `tensor<shape x element>`."""
    result = op.results[0].type
    assert isinstance(result, TensorType)
    if tuple(result.get_shape()) != tuple(shape) or result.element_type != element:
        expected = TensorType(element, shape)
        raise VerifyException(
            f"'{op.name}': result type {result} does not match the inferred type "
            f"{expected}"
        )


class RelayOp(IRDLOperation, abc.ABC):
    """Base of all relay ops: attributes live in properties, printed in attr-dict."""

    irdl_options = (ParsePropInAttrDict(),)


class ElementwiseBinaryOp(RelayOp, abc.ABC):
    """Elementwise binary op with numpy broadcasting on operands of one dtype."""

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
            result_type = TensorType(lt.element_type, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        lt = tensor_of(self.lhs, self.name, "lhs")
        rt = tensor_of(self.rhs, self.name, "rhs")
        if lt.element_type != rt.element_type:
            raise VerifyException(
                f"'{self.name}': operands have different element types "
                f"{lt.element_type} and {rt.element_type}"
            )
        shape = broadcast_shapes(lt.get_shape(), rt.get_shape(), self.name)
        check_result(self, shape, lt.element_type)


class ElementwiseUnaryOp(RelayOp, abc.ABC):
    """Elementwise unary op: the result has the operand's type."""

    data = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, result_type: Attribute | None = None):
        super().__init__(
            operands=[data], result_types=[result_type or data.type]
        )

    def verify_(self) -> None:
        typ = tensor_of(self.data, self.name, "data")
        check_result(self, typ.get_shape(), typ.element_type)


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Elementwise `lhs + rhs`."""

    name = "relay.add"


@irdl_op_definition
class SubtractOp(ElementwiseBinaryOp):
    """Elementwise `lhs - rhs`."""

    name = "relay.subtract"


@irdl_op_definition
class MultiplyOp(ElementwiseBinaryOp):
    """Elementwise `lhs * rhs`."""

    name = "relay.multiply"


@irdl_op_definition
class DivideOp(ElementwiseBinaryOp):
    """Elementwise `lhs / rhs` (IEEE division)."""

    name = "relay.divide"


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


BINARY_OPS: tuple[type[ElementwiseBinaryOp], ...] = (
    AddOp,
    SubtractOp,
    MultiplyOp,
    DivideOp,
)
UNARY_OPS: tuple[type[ElementwiseUnaryOp], ...] = (
    ReluOp,
    TanhOp,
    ExpOp,
    NegativeOp,
)

Relay = Dialect("relay", [*BINARY_OPS, *UNARY_OPS], [])
