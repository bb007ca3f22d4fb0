"""Reductions (TVM's relay/op/reduce): sum, mean, max, min, prod over axes,
and argmax, argmin (the index of the extreme)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from byoc.dialects.relay.base import (
    InferredOp,
    Shape,
    _error,
    _opt_array,
    _tensors,
    bool_attr,
    normalize_axes,
)


def reduce_axes(
    rank: int,
    axis: Sequence[int] | None = None,
    exclude: bool = False,
    op_name: str = "relay.sum",
) -> tuple[int, ...]:
    """The axes a Relay reduction reduces, sorted.

    None or an empty list means every axis (as in Relay); with `exclude` the
    reduction runs over every axis not listed.
    """
    if not axis:
        return tuple(range(rank))
    axes = sorted(normalize_axes(axis, rank, op_name))
    if exclude:
        return tuple(a for a in range(rank) if a not in axes)
    return tuple(axes)


def reduce_output_shape(
    data: Sequence[int],
    axis: Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
    op_name: str = "relay.sum",
) -> Shape:
    """`data` with the reduced axes dropped (or kept as size 1 with `keepdims`)."""
    axes = reduce_axes(len(data), axis, exclude, op_name)
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(data))
    return tuple(d for k, d in enumerate(data) if k not in axes)


# --- Reductions ----------------------------------------------------------------


class ReduceOp(InferredOp, abc.ABC):
    """A reduction over `axis` (every axis when absent or empty, as Relay; the
    other axes with `exclude`), keeping reduced axes as size 1 with `keepdims`."""

    ANY_ELEMENT: ClassVar[bool] = False
    """Whether integer and `i1` data is allowed (the op means the same on them)."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(BoolAttr, default_value=bool_attr(False))
    exclude = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: int | Sequence[int] | None = None,
        keepdims: bool = False,
        exclude: bool = False,
        result_type: Attribute | None = None,
        **extra: Attribute,
    ):
        self._build(
            [data],
            {
                "axis": _opt_array(axis),
                "keepdims": bool_attr(keepdims),
                "exclude": bool_attr(exclude),
                **extra,
            },
            result_type,
        )

    def reduced_axes(self) -> tuple[int, ...]:
        """The (sorted, non-negative) axes this op reduces."""
        attrs = self.attrs()
        typ = self.data.type
        assert isinstance(typ, TensorType)
        return reduce_axes(
            len(typ.get_shape()), attrs["axis"], attrs["exclude"], self.name
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(
            cls.name, [("data", operand_types[0])], any_element=cls.ANY_ELEMENT
        )
        shape = reduce_output_shape(
            data.get_shape(),
            attrs["axis"],
            attrs["keepdims"],
            attrs["exclude"],
            cls.name,
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class SumOp(ReduceOp):
    """The sum of `data` over the reduced axes."""

    name = "relay.sum"


@irdl_op_definition
class MeanOp(ReduceOp):
    """The arithmetic mean of `data` over the reduced axes."""

    name = "relay.mean"


@irdl_op_definition
class MaxOp(ReduceOp):
    """The maximum of `data` over the reduced axes (of bools: any)."""

    name = "relay.max"

    ANY_ELEMENT: ClassVar[bool] = True


@irdl_op_definition
class MinOp(ReduceOp):
    """The minimum of `data` over the reduced axes (of bools: all)."""

    name = "relay.min"

    ANY_ELEMENT: ClassVar[bool] = True


@irdl_op_definition
class ProdOp(ReduceOp):
    """The product of `data` over the reduced axes."""

    name = "relay.prod"


# --- Index reductions ----------------------------------------------------------


class ArgReduceOp(ReduceOp, abc.ABC):
    """The index of the extreme of `data` over the reduced axes, as an i32
    (TVM's): the row-major position within the reduced axes, the first one
    among equal extremes (the last with `select_last_index`). A NaN is the
    extreme of floats, as numpy's argmax and argmin."""

    ANY_ELEMENT: ClassVar[bool] = True

    select_last_index = prop_def(BoolAttr, default_value=bool_attr(False))

    def __init__(
        self,
        data: SSAValue,
        axis: int | Sequence[int] | None = None,
        keepdims: bool = False,
        exclude: bool = False,
        select_last_index: bool = False,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            data,
            axis,
            keepdims,
            exclude,
            result_type,
            select_last_index=bool_attr(select_last_index),
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        reduced = super().infer_type(operand_types, attrs)
        data = operand_types[0]
        shape = data.get_shape()
        axes = reduce_axes(len(shape), attrs["axis"], attrs["exclude"], cls.name)
        count = 1
        for axis in axes:
            count *= shape[axis]
        if count == 0:
            raise _error(cls.name, "the reduced axes hold no elements: there is no extreme")
        if count > 2**31 - 1:
            raise _error(cls.name, f"the reduced axes hold {count} elements, more than i32 indexes")
        return TensorType(i32, reduced.get_shape())


@irdl_op_definition
class ArgmaxOp(ArgReduceOp):
    """The index of the maximum of `data` over the reduced axes (i32)."""

    name = "relay.argmax"


@irdl_op_definition
class ArgminOp(ArgReduceOp):
    """The index of the minimum of `data` over the reduced axes (i32)."""

    name = "relay.argmin"
