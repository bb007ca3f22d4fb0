"""Data-movement ops (TVM's relay/op/transform): reshape, transpose,
concatenate, squeeze, expand_dims, batch_flatten, with their shape functions.

They move elements without computing on them, so they take tensors of any
element type relay has at run time: floats, integers and `i1`
(`any_tensor_of` in base.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

from byoc.dialects.relay.base import (
    InferredOp,
    Shape,
    _error,
    _opt_array,
    _opt_i64,
    _string_attr,
    _tensors,
    any_tensor_of,
    i64_array,
    i64_attr,
    index_tensor_of,
    normalize_axes,
    normalize_axis,
)


def reshape_output_shape(
    data: Sequence[int], newshape: Sequence[int], op_name: str = "relay.reshape"
) -> Shape:
    """Relay's `newshape` resolved against `data`.

    Positive values are sizes; 0 copies the dimension of `data` at the same
    position; -1 is inferred from the remaining elements (at most one); -2
    copies all remaining dimensions; -3 merges the next two dimensions; -4 splits
    the next dimension into the two values that follow it (one may be -1).
    """
    shape = tuple(data)
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    while i < len(newshape):
        value = newshape[i]
        if value > 0:
            out.append(value)
            src += 1
        elif value == 0:
            if src >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: 0 at position {i} copies a "
                    f"dimension that data {list(shape)} does not have",
                )
            out.append(shape[src])
            src += 1
        elif value == -1:
            if infer_at >= 0:
                raise _error(
                    op_name, f"newshape {list(newshape)} has more than one -1"
                )
            infer_at = len(out)
            out.append(1)
            src += 1
        elif value == -2:
            out.extend(shape[src:])
            src = len(shape)
        elif value == -3:
            if src + 1 >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -3 at position {i} needs two "
                    f"dimensions of data {list(shape)} to merge",
                )
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif value == -4:
            if i + 2 >= len(newshape) or src >= len(shape):
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} needs a "
                    f"dimension of data and two sizes after it",
                )
            d0, d1, d2 = shape[src], newshape[i + 1], newshape[i + 2]
            if d1 == -1 and d2 == -1 or d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} must be "
                    f"followed by two positive sizes (one may be -1)",
                )
            if d1 == -1:
                d1 = d0 // d2
            elif d2 == -1:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise _error(
                    op_name,
                    f"newshape {list(newshape)}: -4 at position {i} cannot split "
                    f"dimension {d0} into {newshape[i + 1]} x {newshape[i + 2]}",
                )
            out.extend((d1, d2))
            src += 1
            i += 2
        else:
            raise _error(
                op_name,
                f"newshape {list(newshape)} has the unsupported value {value} "
                f"(sizes are positive; 0, -1, -2, -3, -4 are special)",
            )
        i += 1
    total = math.prod(shape)
    if infer_at >= 0:
        known = math.prod(d for k, d in enumerate(out) if k != infer_at)
        if known == 0 or total % known:
            raise _error(
                op_name,
                f"newshape {list(newshape)}: cannot infer the -1 for data "
                f"{list(shape)} ({total} elements)",
            )
        out[infer_at] = total // known
    if math.prod(out) != total:
        raise _error(
            op_name,
            f"newshape {list(newshape)} gives {out} ({math.prod(out)} elements) "
            f"but data {list(shape)} has {total} elements",
        )
    return tuple(out)


def transpose_axes(
    rank: int, axes: Sequence[int] | None, op_name: str = "relay.transpose"
) -> tuple[int, ...]:
    """The permutation `axes` normalised; none or empty means reversing the axes."""
    if not axes:
        return tuple(reversed(range(rank)))
    if len(axes) != rank:
        raise _error(
            op_name, f"axes {list(axes)} must have one entry per dimension ({rank})"
        )
    return normalize_axes(axes, rank, op_name, "axes")


def transpose_output_shape(
    data: Sequence[int], axes: Sequence[int] | None = None, op_name: str = "relay.transpose"
) -> Shape:
    """`data`'s dimensions permuted by `axes` (reversed when `axes` is None or empty)."""
    return tuple(data[a] for a in transpose_axes(len(data), axes, op_name))


def concatenate_output_shape(
    shapes: Sequence[Sequence[int]], axis: int = 0, op_name: str = "relay.concatenate"
) -> Shape:
    """The inputs joined along `axis`; all other dimensions must agree."""
    if not shapes:
        raise _error(op_name, "needs at least one input")
    first = tuple(shapes[0])
    ax = normalize_axis(axis, len(first), op_name)
    size = 0
    for index, shape in enumerate(shapes):
        if len(shape) != len(first) or any(
            a != b for k, (a, b) in enumerate(zip(shape, first)) if k != ax
        ):
            raise _error(
                op_name,
                f"input {index} has shape {list(shape)}, which does not match "
                f"input 0 {list(first)} outside axis {ax}",
            )
        size += shape[ax]
    return (*first[:ax], size, *first[ax + 1 :])


def batch_flatten_output_shape(
    data: Sequence[int], op_name: str = "relay.nn.batch_flatten"
) -> Shape:
    """`[N, d1, d2, ...]` -> `[N, d1 * d2 * ...]`."""
    if len(data) < 1:
        raise _error(op_name, "data must have rank at least 1, got a scalar")
    return (data[0], math.prod(data[1:]))


def squeeze_output_shape(
    data: Sequence[int], axis: Sequence[int] | None = None, op_name: str = "relay.squeeze"
) -> Shape:
    """`data` without the size-1 dimensions `axis` (all size-1 ones when None)."""
    if axis is None:
        return tuple(d for d in data if d != 1)
    axes = normalize_axes(axis, len(data), op_name)
    for a in axes:
        if data[a] != 1:
            raise _error(op_name, f"cannot squeeze axis {a} of size {data[a]}")
    return tuple(d for k, d in enumerate(data) if k not in axes)


def expand_dims_output_shape(
    data: Sequence[int],
    axis: int,
    num_newaxis: int = 1,
    op_name: str = "relay.expand_dims",
) -> Shape:
    """`data` with `num_newaxis` size-1 dimensions inserted at `axis` (in `[-rank-1, rank]`)."""
    rank = len(data)
    if not -rank - 1 <= axis <= rank:
        raise _error(op_name, f"axis {axis} is out of range for rank {rank} (+1)")
    if num_newaxis < 0:
        raise _error(op_name, f"num_newaxis must be non-negative, got {num_newaxis}")
    ax = axis + rank + 1 if axis < 0 else axis
    return (*data[:ax], *(1,) * num_newaxis, *data[ax:])

# --- Shape manipulation ----------------------------------------------------------


@irdl_op_definition
class ReshapeOp(InferredOp):
    """`data` with the same elements in row-major order and the shape `newshape`
    (Relay's special values: 0 copies a dimension, -1 is inferred, -2, -3, -4;
    see `reshape_output_shape`). `newshape` is stored as given."""

    name = "relay.reshape"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    newshape = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        newshape: Sequence[int],
        result_type: Attribute | None = None,
    ):
        self._build([data], {"newshape": i64_array(newshape)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], any_element=True)
        shape = reshape_output_shape(data.get_shape(), attrs["newshape"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class TransposeOp(InferredOp):
    """`data` with its axes permuted: `out.shape[i] = data.shape[axes[i]]`;
    no `axes` (or an empty list) reverses them."""

    name = "relay.transpose"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axes = opt_prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axes: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        self._build([data], {"axes": _opt_array(axes)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], any_element=True)
        shape = transpose_output_shape(data.get_shape(), attrs["axes"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class ConcatenateOp(InferredOp):
    """The operands joined along `axis` (default 0). Relay takes a tuple; here
    the tensors are the (one or more) operands."""

    name = "relay.concatenate"

    data = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(0))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: Sequence[SSAValue],
        axis: int = 0,
        result_type: Attribute | None = None,
    ):
        self._build([list(data)], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        if not operand_types:
            raise _error(cls.name, "needs at least one input")
        types = _tensors(
            cls.name,
            [(f"input {i}", t) for i, t in enumerate(operand_types)],
            any_element=True,
        )
        shape = concatenate_output_shape(
            [t.get_shape() for t in types], attrs["axis"], cls.name
        )
        return TensorType(types[0].element_type, shape)


@irdl_op_definition
class BatchFlattenOp(InferredOp):
    """`[N, d1, d2, ...]` -> `[N, d1 * d2 * ...]`, elements in row-major order."""

    name = "relay.nn.batch_flatten"

    data = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, result_type: Attribute | None = None):
        self._build([data], {}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], any_element=True)
        return TensorType(
            data.element_type, batch_flatten_output_shape(data.get_shape(), cls.name)
        )


@irdl_op_definition
class SqueezeOp(InferredOp):
    """`data` without the size-1 dimensions listed in `axis` (every size-1
    dimension when `axis` is absent; none for an empty list)."""

    name = "relay.squeeze"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        self._build([data], {"axis": _opt_array(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], any_element=True)
        shape = squeeze_output_shape(data.get_shape(), attrs["axis"], cls.name)
        return TensorType(data.element_type, shape)


@irdl_op_definition
class ExpandDimsOp(InferredOp):
    """`data` with `num_newaxis` (default 1) size-1 dimensions inserted before
    dimension `axis` (`axis` in `[-rank-1, rank]`)."""

    name = "relay.expand_dims"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    num_newaxis = prop_def(IntegerAttr[I64], default_value=i64_attr(1))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: int,
        num_newaxis: int = 1,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {"axis": i64_attr(axis), "num_newaxis": i64_attr(num_newaxis)},
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], any_element=True)
        shape = expand_dims_output_shape(
            data.get_shape(), attrs["axis"], attrs["num_newaxis"], cls.name
        )
        return TensorType(data.element_type, shape)




# --- Indexing ------------------------------------------------------------------------

TAKE_MODES = ("clip", "wrap", "fast")


def take_output_shape(
    data: Sequence[int],
    indices: Sequence[int],
    axis: int | None = None,
    batch_dims: int = 0,
    mode: str = "clip",
    op_name: str = "relay.take",
) -> Shape:
    """`data.shape[:axis] + indices.shape + data.shape[axis + 1:]`; with no axis,
    `indices.shape` (indices into the flattened data)."""
    if mode not in TAKE_MODES:
        raise _error(op_name, f'mode "{mode}" is not one of {", ".join(TAKE_MODES)}')
    if batch_dims != 0:
        raise _error(op_name, f"batch_dims {batch_dims} is not supported (only 0)")
    if axis is None:
        if math.prod(data) == 0:
            raise _error(op_name, f"cannot take from empty data {list(data)}")
        return tuple(indices)
    ax = normalize_axis(axis, len(data), op_name)
    if data[ax] == 0:
        raise _error(op_name, f"cannot take along axis {ax} of size 0")
    return (*data[:ax], *indices, *data[ax + 1 :])


@irdl_op_definition
class TakeOp(InferredOp):
    """Elements of `data` at `indices` (i32 or i64) along `axis` (TVM's
    `relay.take`; ONNX's Gather): `out[i..., j..., k...] = data[i..., indices[j...],
    k...]`, with no `axis` indices into the flattened data. `mode` says what an
    index outside `[0, n)` means: "clip" clamps it into range, "wrap" takes it
    modulo n, "fast" (what ONNX's Gather imports as) counts negative indices
    from the end (`[-n, n)`, as numpy) and anything else is an error: the
    compiled code returns a failure status, the reference raises. `batch_dims`
    must be 0."""

    name = "relay.take"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr[I64])
    batch_dims = prop_def(IntegerAttr[I64], default_value=i64_attr(0))
    mode = prop_def(StringAttr, default_value=StringAttr("clip"))

    assembly_format = (
        "$data `,` $indices attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        indices: SSAValue,
        axis: int | None = None,
        batch_dims: int = 0,
        mode: str = "clip",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data, indices],
            {
                "axis": _opt_i64(axis),
                "batch_dims": i64_attr(batch_dims),
                "mode": _string_attr(mode),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        indices = index_tensor_of(operand_types[1], cls.name, "indices")
        shape = take_output_shape(
            data.get_shape(),
            indices.get_shape(),
            attrs["axis"],
            attrs["batch_dims"],
            attrs["mode"],
            cls.name,
        )
        return TensorType(data.element_type, shape)
