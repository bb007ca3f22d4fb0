"""Shared ground of the relay dialect: the op base classes, shape helpers
used by every family, and attribute builders and readers."""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]

# --- Shape inference: plain functions on shapes and Python attribute values ---


def _error(op_name: str, message: str) -> VerifyException:
    return VerifyException(f"'{op_name}': {message}")


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
        out.append(y if x == 1 else x)  # a 0 against a 1 is 0, as in numpy
    return tuple(out)


def normalize_axis(
    axis: int, rank: int, op_name: str, what: str = "axis"
) -> int:
    """`axis` in `[0, rank)`, counting negative axes from the end (as numpy)."""
    if not -rank <= axis < rank:
        raise _error(op_name, f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(
    axes: Sequence[int], rank: int, op_name: str, what: str = "axis"
) -> tuple[int, ...]:
    """Each of `axes` (the attribute `what`) normalised by `normalize_axis`;
    repeated axes are an error."""
    out = tuple(normalize_axis(a, rank, op_name) for a in axes)
    if len(set(out)) != len(out):
        raise _error(op_name, f"{what} {list(axes)} repeats an axis")
    return out


def _check_pair(
    values: Sequence[int], op_name: str, what: str, minimum: int = 1
) -> tuple[int, int]:
    if len(values) != 2:
        raise _error(op_name, f"{what} must have 2 values, got {list(values)}")
    if any(v < minimum for v in values):
        adjective = "positive" if minimum == 1 else "non-negative"
        raise _error(op_name, f"{what} must be {adjective}, got {list(values)}")
    return values[0], values[1]


def normalize_padding(
    padding: Sequence[int], op_name: str
) -> tuple[int, int, int, int]:
    """Relay's 1, 2 or 4 padding values as (top, left, bottom, right)."""
    if any(p < 0 for p in padding):
        raise _error(op_name, f"padding must be non-negative, got {list(padding)}")
    if len(padding) == 1:
        return (padding[0], padding[0], padding[0], padding[0])
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    if len(padding) == 4:
        return (padding[0], padding[1], padding[2], padding[3])
    raise _error(
        op_name,
        f"padding must have 1, 2 or 4 values (top, left, bottom, right), "
        f"got {list(padding)}",
    )


def _check_tuple(
    values: Sequence[int], count: int, op_name: str, what: str, minimum: int = 1
) -> tuple[int, ...]:
    """`values`, which must be `count` integers of at least `minimum`."""
    if len(values) != count:
        raise _error(op_name, f"{what} must have {count} values, got {list(values)}")
    if any(v < minimum for v in values):
        adjective = "positive" if minimum == 1 else "non-negative"
        raise _error(op_name, f"{what} must be {adjective}, got {list(values)}")
    return tuple(values)


_PADDING_SIDES = {
    1: "left, right",
    2: "top, left, bottom, right",
    3: "front, top, left, back, bottom, right",
}


def normalize_padding_nd(
    padding: Sequence[int], spatial: int, op_name: str
) -> tuple[int, ...]:
    """Relay's padding of a window op over `spatial` dims: 1 value (everywhere),
    `spatial` values (each dim, both sides) or `2 * spatial` values, returned
    as (begins..., ends...); for 2 dims, (top, left, bottom, right)."""
    if spatial == 2:
        return normalize_padding(padding, op_name)
    if any(p < 0 for p in padding):
        raise _error(op_name, f"padding must be non-negative, got {list(padding)}")
    if len(padding) == 1:
        return tuple(padding) * (2 * spatial)
    if len(padding) == spatial:
        return tuple(padding) * 2
    if len(padding) == 2 * spatial:
        return tuple(padding)
    raise _error(
        op_name,
        f"padding must have 1, {spatial} or {2 * spatial} values "
        f"({_PADDING_SIDES.get(spatial, 'begins, ends')}), got {list(padding)}",
    )


def _ntuple(values: int | Sequence[int], count: int) -> DenseArrayBase:
    """`(v,) * count` for an int (as Relay's Python API), else the values as given."""
    return i64_array((values,) * count if isinstance(values, int) else values)


def _check_rank(shape: Sequence[int], rank: int, op_name: str, what: str) -> None:
    if len(shape) != rank:
        raise _error(op_name, f"{what} must have rank {rank}, got shape {list(shape)}")


def _window_outputs(
    size: int,
    pad: int,
    kernel: int,
    stride: int,
    dilation: int,
    ceil_mode: bool,
    op_name: str,
    what: str,
) -> int:
    """How many windows fit along one spatial dimension (Relay's conv/pool rule)."""
    span = dilation * (kernel - 1) + 1
    if size + pad < span:
        raise _error(
            op_name,
            f"the {what} window ({span} with dilation) does not fit the padded "
            f"input ({size + pad})",
        )
    if ceil_mode:
        return (size + pad - span + stride - 1) // stride + 1
    return (size + pad - span) // stride + 1

# --- Types and attributes ----------------------------------------------------


INTEGER_WIDTHS = (8, 16, 32, 64)
"""Widths of the integer element types a tensor may have (`iN` signed, `uiN` unsigned)."""

_I1 = IntegerType(1)


def is_integer_element(element: Attribute) -> bool:
    """Whether `element` is an integer element type relay tensors may have."""
    return isinstance(element, IntegerType) and element.width.data in INTEGER_WIDTHS


def is_integer_type(element: Attribute) -> bool:
    """Whether `element` is `i1` (bool) or an integer element type
    (`is_integer_element`): what data movement takes besides floats."""
    return element == _I1 or is_integer_element(element)


def integer_range(element: IntegerType) -> tuple[int, int]:
    """The smallest and largest value of an integer element type (`iN` is signed)."""
    width = element.width.data
    if element.signedness.data == Signedness.UNSIGNED:
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def _static_tensor(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    typ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(typ, TensorType):
        raise VerifyException(f"'{op_name}': {what} must be a tensor, got {typ}")
    if any(d < 0 for d in typ.get_shape()):
        raise VerifyException(
            f"'{op_name}': {what} must have a static shape, got {typ}"
        )
    return typ


def tensor_of(
    value: SSAValue | Attribute, op_name: str, what: str, integers: bool = False
) -> TensorType:
    """The static-shape float tensor type of `value` (or integer, for ops whose
    meaning does not depend on the element type: `integers`), or a VerifyException."""
    typ = _static_tensor(value, op_name, what)
    element = typ.element_type
    if isinstance(element, AnyFloat) or (integers and is_integer_element(element)):
        return typ
    kind = "a float or integer" if integers else "a float"
    raise VerifyException(
        f"'{op_name}': {what} must have {kind} element type, got {element}"
    )


def any_tensor_of(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    """The static-shape tensor type of `value`, whose element type is a float,
    an integer or `i1` (`is_integer_type`): what data movement takes."""
    typ = _static_tensor(value, op_name, what)
    element = typ.element_type
    if not isinstance(element, AnyFloat) and not is_integer_type(element):
        raise VerifyException(
            f"'{op_name}': {what} must have a float, integer or i1 element type, "
            f"got {element}"
        )
    return typ


def index_tensor_of(value: SSAValue | Attribute, op_name: str, what: str) -> TensorType:
    """The static-shape `i32` or `i64` tensor type of `value` (indices), or a
    VerifyException."""
    typ = _static_tensor(value, op_name, what)
    if typ.element_type not in (i32, i64):
        raise VerifyException(
            f"'{op_name}': {what} must have element type i32 or i64, got "
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


def _tensors(
    op_name: str,
    named: Sequence[tuple[str, Attribute]],
    integers: bool = False,
    any_element: bool = False,
) -> list[TensorType]:
    """The tensor types of `named` operands, which must share one element type:
    a float, or also an integer with `integers`, or also `i1` with
    `any_element` (`any_tensor_of`)."""
    if any_element:
        types = [any_tensor_of(typ, op_name, what) for what, typ in named]
    else:
        types = [tensor_of(typ, op_name, what, integers) for what, typ in named]
    first_name, first = named[0][0], types[0]
    for (what, _), typ in zip(named[1:], types[1:]):
        if typ.element_type != first.element_type:
            raise _error(
                op_name,
                f"{what} has element type {typ.element_type} but {first_name} has "
                f"{first.element_type}",
            )
    return types


# Attributes are immutable: building one is the main cost of creating an op, so
# the constructors share them.


@functools.lru_cache(maxsize=1024)
def i64_attr(value: int) -> IntegerAttr:
    """`value : i64`."""
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=1024)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def i64_array(values: int | Sequence[int]) -> DenseArrayBase:
    """`array<i64: values...>` (an int becomes a one-element array)."""
    if isinstance(values, int):
        return _i64_array((values,))
    return _i64_array(tuple(int(v) for v in values))


_TRUE = IntegerAttr.from_bool(True)
_FALSE = IntegerAttr.from_bool(False)


def bool_attr(value: bool) -> IntegerAttr:
    """`true` / `false` (an `i1` IntegerAttr)."""
    return _TRUE if value else _FALSE


def float_attr(value: float, typ: AnyFloat = f32) -> FloatAttr:
    """`value : f32` (or the given float type)."""
    return FloatAttr(float(value), typ)


@functools.lru_cache(maxsize=256)
def _string_attr(value: str) -> StringAttr:
    return StringAttr(value)


@functools.lru_cache(maxsize=1024)
def _array_values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(attr.get_values())




def python_value(attr: Attribute | None) -> object:
    """A property as a Python value: int, bool, float, str, tuple of ints, or None."""
    if attr is None:
        return None
    if isinstance(attr, DenseArrayBase):
        return _array_values(attr)
    if isinstance(attr, IntegerAttr):
        if attr.type == _I1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


class RelayOp(IRDLOperation, abc.ABC):
    """Base of all relay ops: attributes live in properties, printed in attr-dict."""

    irdl_options = (ParsePropInAttrDict(),)

    def __post_init__(self) -> None:
        super().__post_init__()  # fills in default-valued properties
        # Properties in declaration order, however they were written or built, so
        # the generic form of an op is one text.
        order = self.get_irdl_definition().properties
        if len(self.properties) > 1 and list(self.properties) != [
            name for name in order if name in self.properties
        ]:
            props = self.properties
            self.properties = {k: props[k] for k in order if k in props} | props

    @classmethod
    def attrs_from(cls, properties: Mapping[str, Attribute]) -> dict[str, Any]:
        """Every declared property of `cls` as a Python value, defaults filled in."""
        definitions = cls.get_irdl_definition().properties
        return {
            name: python_value(properties.get(name, d.default_value))
            for name, d in definitions.items()
        }

    def attrs(self) -> dict[str, Any]:
        """This op's properties as Python values (see `python_value`), with defaults."""
        return self.attrs_from(self.properties)


class InferredOp(RelayOp, abc.ABC):
    """A relay op with one result whose type `infer_type` computes."""

    traits = traits_def(Pure())

    @classmethod
    def infer_type(
        cls, operand_types: Sequence[Attribute], attrs: Mapping[str, Any]
    ) -> TensorType:
        """The result type for these operand types and attribute values, or a
        VerifyException naming the op and the offending operand or attribute."""
        raise NotImplementedError

    def verify_(self) -> None:
        inferred = self.infer_type(self.operand_types, self.attrs())
        check_result(self, inferred.get_shape(), inferred.element_type)

    def _build(
        self,
        operands: Sequence[SSAValue | Sequence[SSAValue]],
        properties: Mapping[str, Attribute | None],
        result_type: Attribute | None,
    ) -> None:
        """Initialise with `operands` (a list for a variadic operand), the
        non-None `properties` and `result_type`, inferred when None."""
        props = {k: v for k, v in properties.items() if v is not None}
        if result_type is None:
            flat = [
                v
                for operand in operands
                for v in ([operand] if isinstance(operand, SSAValue) else operand)
            ]
            result_type = self.infer_type([v.type for v in flat], self.attrs_from(props))
        super().__init__(operands=operands, result_types=[result_type], properties=props)


def _opt_array(values: int | Sequence[int] | None) -> DenseArrayBase | None:
    return None if values is None else i64_array(values)


def _pair(values: int | Sequence[int]) -> DenseArrayBase:
    """`(v, v)` for an int (as Relay's Python API), else the values as given."""
    return i64_array((values, values) if isinstance(values, int) else values)


def _opt_i64(value: int | None) -> IntegerAttr | None:
    return None if value is None else i64_attr(value)


def _check_layout(op_name: str, attrs: Mapping[str, Any], name: str, want: str) -> None:
    if attrs[name] != want:
        raise _error(
            op_name, f'{name} "{attrs[name]}" is not supported (only "{want}")'
        )


