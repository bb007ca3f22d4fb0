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
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f64,
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
    bool_attr,
    broadcast_shapes,
    float_attr,
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
    compiled code returns a failure status (its ByocError names this op, its
    place and the index), the reference raises. `batch_dims` must be 0."""

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


def gather_output_shape(
    data: Sequence[int], indices: Sequence[int], axis: int, op_name: str = "relay.gather"
) -> Shape:
    """`indices`' shape, which has `data`'s rank and fits in `data` along
    every axis but `axis`."""
    if len(indices) != len(data):
        raise _error(op_name, f"indices have rank {len(indices)} but data has rank {len(data)}")
    ax = normalize_axis(axis, len(data), op_name)
    for d, (n, m) in enumerate(zip(indices, data)):
        if d != ax and n > m:
            raise _error(
                op_name, f"indices have {n} elements along axis {d} but data has {m}"
            )
    if data and data[ax] == 0 and 0 not in indices:
        raise _error(op_name, f"axis {ax} of data is empty: there is nothing to gather")
    return tuple(indices)


@irdl_op_definition
class GatherOp(InferredOp):
    """Elements of `data` picked along `axis` by `indices` (i32 or i64) of the
    same rank (TVM's `relay.gather`; ONNX's GatherElements): `out[i, j, k] =
    data[i, indices[i, j, k], k]` for axis 1. Negative indices count from the
    end (`[-n, n)`); anything else is an error: the compiled code returns a
    failure status (its ByocError names this op, its place and the index)."""

    name = "relay.gather"

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(0))

    assembly_format = (
        "$data `,` $indices attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        data: SSAValue,
        indices: SSAValue,
        axis: int = 0,
        result_type: Attribute | None = None,
    ):
        self._build([data, indices], {"axis": i64_attr(axis)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        indices = index_tensor_of(operand_types[1], cls.name, "indices")
        shape = gather_output_shape(
            data.get_shape(), indices.get_shape(), attrs["axis"], cls.name
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class CumsumOp(InferredOp):
    """Running sums of `data` along `axis` (TVM's `relay.cumsum`, ONNX's
    CumSum): `out[.., i, ..] = sum(data[.., :i+1, ..])`, added in order from
    the first element; `exclusive` leaves the element itself out (`[:i]`, 0
    first), `reverse` sums from the last element (byoc's addition, ONNX's).
    Floats, or integers whose sums wrap."""

    name = "relay.cumsum"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64], default_value=i64_attr(0))
    exclusive = prop_def(BoolAttr, default_value=bool_attr(False))
    reverse = prop_def(BoolAttr, default_value=bool_attr(False))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        axis: int = 0,
        exclusive: bool = False,
        reverse: bool = False,
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "axis": i64_attr(axis),
                "exclusive": bool_attr(exclusive),
                "reverse": bool_attr(reverse),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        (data,) = _tensors(cls.name, [("data", operand_types[0])], integers=True)
        shape = data.get_shape()
        if not shape:
            raise _error(cls.name, "data must have at least one dimension")
        normalize_axis(attrs["axis"], len(shape), cls.name)
        return data


@irdl_op_definition
class TriluOp(InferredOp):
    """The upper (`upper`, the default) or lower triangle of the matrices in
    the last two dimensions of `data`, everything else 0 (TVM's `relay.trilu`,
    ONNX's Trilu, with `k` an attribute): element `[.., i, j]` is kept where
    `j - i >= k` (upper) or `j - i <= k` (lower)."""

    name = "relay.trilu"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    k = prop_def(IntegerAttr[I64], default_value=i64_attr(0))
    upper = prop_def(BoolAttr, default_value=bool_attr(True))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        k: int = 0,
        upper: bool = True,
        result_type: Attribute | None = None,
    ):
        self._build([data], {"k": i64_attr(k), "upper": bool_attr(upper)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        if len(data.get_shape()) < 2:
            raise _error(cls.name, f"data must have rank 2 or more, got {len(data.get_shape())}")
        return data


# --- Slicing, tiling, broadcasting ------------------------------------------------------


def strided_slice_ranges(
    data: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    slice_mode: str = "end",
    op_name: str = "relay.strided_slice",
) -> list[range]:
    """The indices of `data` each output dimension reads, one `range` per axis.

    Listed axes (`axes`, else the first `len(begin)`) take Python's slice
    `begin:end:stride` (which ONNX's Slice shares: negative values count from
    the end, out-of-range ones are clamped); with `slice_mode` "size", `end`
    holds sizes (-1: to the end) and strides are ignored (as in TVM)."""
    if slice_mode not in ("end", "size"):
        raise _error(op_name, f'slice_mode "{slice_mode}" is not "end" or "size"')
    rank = len(data)
    if axes is None:
        axes = range(len(begin))
    axes = normalize_axes(list(axes), rank, op_name, "axes")
    strides = [1] * len(axes) if not strides else list(strides)
    if len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    if not len(begin) == len(end) == len(axes) == len(strides):
        raise _error(
            op_name,
            f"begin {list(begin)}, end {list(end)}, strides {list(strides)} and axes "
            f"{list(axes)} must have one value per sliced axis",
        )
    ranges = [range(d) for d in data]
    for axis, b, e, s in zip(axes, begin, end, strides):
        if slice_mode == "size":
            start = b + data[axis] if b < 0 else b
            start = min(max(start, 0), data[axis])
            stop = data[axis] if e < 0 else min(start + e, data[axis])
            ranges[axis] = range(start, max(stop, start))
            continue
        if s == 0:
            raise _error(op_name, f"strides {list(strides)} has a 0")
        ranges[axis] = range(*slice(b, e, s).indices(data[axis]))
    return ranges


def strided_slice_output_shape(
    data: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    slice_mode: str = "end",
    op_name: str = "relay.strided_slice",
) -> Shape:
    """The shape of `data[begin:end:strides]` (see `strided_slice_ranges`)."""
    ranges = strided_slice_ranges(data, begin, end, strides, axes, slice_mode, op_name)
    return tuple(len(r) for r in ranges)


@irdl_op_definition
class StridedSliceOp(InferredOp):
    """`data[begin:end:strides]` along `axes` (TVM's `relay.strided_slice`; no
    `axes`: the first `len(begin)` axes): each listed axis is sliced as a
    Python (and ONNX) slice, so negative `begin`/`end` count from the end and
    out-of-range ones are clamped; a missing `strides` is all 1s. With
    `slice_mode` "size", `end` gives sizes (-1: to the end)."""

    name = "relay.strided_slice"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    begin = prop_def(DenseArrayBase.constr(i64))
    end = prop_def(DenseArrayBase.constr(i64))
    strides = opt_prop_def(DenseArrayBase.constr(i64))
    axes = opt_prop_def(DenseArrayBase.constr(i64))
    slice_mode = prop_def(StringAttr, default_value=StringAttr("end"))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        begin: Sequence[int],
        end: Sequence[int],
        strides: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        slice_mode: str = "end",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "begin": i64_array(begin),
                "end": i64_array(end),
                "strides": _opt_array(strides),
                "axes": _opt_array(axes),
                "slice_mode": _string_attr(slice_mode),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        shape = strided_slice_output_shape(
            data.get_shape(),
            attrs["begin"],
            attrs["end"],
            attrs["strides"],
            attrs["axes"],
            attrs["slice_mode"],
            cls.name,
        )
        return TensorType(data.element_type, shape)

    def ranges(self) -> list[range]:
        """The indices of `data` each output dimension reads."""
        attrs = self.attrs()
        typ = self.data.type
        assert isinstance(typ, TensorType)
        return strided_slice_ranges(
            typ.get_shape(),
            attrs["begin"],  # type: ignore[arg-type]
            attrs["end"],  # type: ignore[arg-type]
            attrs["strides"],  # type: ignore[arg-type]
            attrs["axes"],  # type: ignore[arg-type]
            attrs["slice_mode"],  # type: ignore[arg-type]
            self.name,
        )


def tile_output_shape(
    data: Sequence[int], reps: Sequence[int], op_name: str = "relay.tile"
) -> Shape:
    """`data` repeated `reps` times along each axis; the shorter of the two is
    padded with leading 1s (TVM's rule)."""
    if any(r < 0 for r in reps):
        raise _error(op_name, f"reps {list(reps)} must be non-negative")
    rank = max(len(data), len(reps))
    shape = (1,) * (rank - len(data)) + tuple(data)
    reps = (1,) * (rank - len(reps)) + tuple(reps)
    return tuple(d * r for d, r in zip(shape, reps))


@irdl_op_definition
class TileOp(InferredOp):
    """`data` repeated `reps[i]` times along axis `i` (TVM's `relay.tile`, numpy's
    `tile`): `out[i...] = data[i... mod data.shape]`; the shorter of the shape
    and `reps` is padded with leading 1s."""

    name = "relay.tile"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    reps = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, data: SSAValue, reps: Sequence[int], result_type: Attribute | None = None
    ):
        self._build([data], {"reps": i64_array(reps)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        return TensorType(
            data.element_type, tile_output_shape(data.get_shape(), attrs["reps"], cls.name)
        )


def broadcast_to_output_shape(
    data: Sequence[int], shape: Sequence[int], op_name: str = "relay.broadcast_to"
) -> Shape:
    """`shape`, checked to be one `data` broadcasts to (numpy's rules, one way)."""
    if len(shape) < len(data):
        raise _error(
            op_name, f"cannot broadcast {list(data)} to the lower-rank {list(shape)}"
        )
    for dim, (d, s) in enumerate(zip(data, shape[len(shape) - len(data) :])):
        if d != s and d != 1:
            raise _error(
                op_name,
                f"cannot broadcast {list(data)} to {list(shape)} (dimension "
                f"{dim + len(shape) - len(data)}: {d} vs {s})",
            )
    if any(s < 0 for s in shape):
        raise _error(op_name, f"shape {list(shape)} has a negative dimension")
    return tuple(shape)


@irdl_op_definition
class BroadcastToOp(InferredOp):
    """`data` broadcast to `shape` with numpy's rules (TVM's
    `relay.broadcast_to`; ONNX's Expand, whose two-way broadcast the importer
    resolves)."""

    name = "relay.broadcast_to"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, data: SSAValue, shape: Sequence[int], result_type: Attribute | None = None
    ):
        self._build([data], {"shape": i64_array(shape)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        shape = broadcast_to_output_shape(data.get_shape(), attrs["shape"], cls.name)
        return TensorType(data.element_type, shape)


# --- Padding ---------------------------------------------------------------------------

PAD_MODES = ("constant", "edge", "reflect")


def pad_output_shape(
    data: Sequence[int],
    pad_width: Sequence[int],
    pad_mode: str = "constant",
    op_name: str = "relay.nn.pad",
) -> Shape:
    """`data` with `pad_width[2i]` elements before and `pad_width[2i + 1]` after
    dimension `i`."""
    if pad_mode not in PAD_MODES:
        raise _error(op_name, f'pad_mode "{pad_mode}" is not one of {", ".join(PAD_MODES)}')
    if len(pad_width) != 2 * len(data):
        raise _error(
            op_name,
            f"pad_width {list(pad_width)} must have two values (before, after) per "
            f"dimension of data {list(data)}",
        )
    if any(p < 0 for p in pad_width):
        raise _error(op_name, f"pad_width {list(pad_width)} must be non-negative")
    for axis, size in enumerate(data):
        before, after = pad_width[2 * axis], pad_width[2 * axis + 1]
        if not before and not after:
            continue
        if pad_mode == "edge" and size == 0:
            raise _error(op_name, f"cannot pad an empty axis {axis} with its edge")
        if pad_mode == "reflect" and max(before, after) >= max(size, 1):
            raise _error(
                op_name,
                f"reflect padding ({before}, {after}) of axis {axis} must be smaller "
                f"than its size {size}",
            )
    return tuple(d + pad_width[2 * i] + pad_width[2 * i + 1] for i, d in enumerate(data))


@irdl_op_definition
class PadOp(InferredOp):
    """`data` padded along each dimension `i` by `pad_width[2i]` elements
    before and `pad_width[2i + 1]` after (TVM's `relay.nn.pad`, whose pairs are
    flattened here). `pad_mode` "constant" fills with `pad_value`, "edge"
    repeats the border element, "reflect" mirrors the elements next to it
    (without repeating the border; each pad must be smaller than the axis)."""

    name = "relay.nn.pad"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    pad_width = prop_def(DenseArrayBase.constr(i64))
    pad_value = prop_def(FloatAttr, default_value=FloatAttr(0.0, f64))
    pad_mode = prop_def(StringAttr, default_value=StringAttr("constant"))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        pad_width: Sequence[int],
        pad_value: float = 0.0,
        pad_mode: str = "constant",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "pad_width": i64_array(pad_width),
                "pad_value": float_attr(pad_value, f64),
                "pad_mode": _string_attr(pad_mode),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        shape = pad_output_shape(
            data.get_shape(), attrs["pad_width"], attrs["pad_mode"], cls.name
        )
        return TensorType(data.element_type, shape)


# --- Selection and conversion ----------------------------------------------------------


@irdl_op_definition
class WhereOp(InferredOp):
    """`x` where `condition` (i1) is true, else `y`, all three broadcast with
    numpy's rules (TVM's `relay.where`, ONNX's Where)."""

    name = "relay.where"

    condition = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        condition: SSAValue,
        x: SSAValue,
        y: SSAValue,
        result_type: Attribute | None = None,
    ):
        self._build([condition, x, y], {}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        condition = any_tensor_of(operand_types[0], cls.name, "condition")
        if condition.element_type != IntegerType(1):
            raise _error(
                cls.name, f"condition must have element type i1, got {condition.element_type}"
            )
        x, y = _tensors(
            cls.name, [("x", operand_types[1]), ("y", operand_types[2])], any_element=True
        )
        shape = broadcast_shapes(x.get_shape(), y.get_shape(), cls.name)
        shape = broadcast_shapes(condition.get_shape(), shape, cls.name)
        return TensorType(x.element_type, shape)


CAST_DTYPES: dict[str, Attribute] = {
    "float16": Float16Type(),
    "float32": Float32Type(),
    "float64": Float64Type(),
    "bool": IntegerType(1),
    "int8": IntegerType(8),
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "int16": IntegerType(16),
    "int32": IntegerType(32),
    "int64": IntegerType(64),
    "uint16": IntegerType(16, Signedness.UNSIGNED),
    "uint32": IntegerType(32, Signedness.UNSIGNED),
    "uint64": IntegerType(64, Signedness.UNSIGNED),
}
"""`relay.cast`'s `dtype` names (TVM's) -> element types."""


@irdl_op_definition
class CastOp(InferredOp):
    """`data` converted element by element to `dtype` (TVM's `relay.cast`; one
    of `CAST_DTYPES`: float16/32/64, bool, int8/16/32/64, uint8/16/32/64):
    floats round to nearest, floats to integers truncate
    toward zero (out of range: undefined, as in C), integers wrap to narrower
    ones, and anything to bool is `!= 0`."""

    name = "relay.cast"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    dtype = prop_def(StringAttr)

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(self, data: SSAValue, dtype: str, result_type: Attribute | None = None):
        self._build([data], {"dtype": _string_attr(dtype)}, result_type)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        element = CAST_DTYPES.get(attrs["dtype"])
        if element is None:
            raise _error(
                cls.name,
                f'dtype "{attrs["dtype"]}" is not one of {", ".join(CAST_DTYPES)}',
            )
        return TensorType(element, data.get_shape())


# --- Depth and space ---------------------------------------------------------------------


def depth_to_space_output_shape(
    data: Sequence[int],
    block_size: int,
    layout: str = "NCHW",
    mode: str = "DCR",
    op_name: str = "relay.nn.depth_to_space",
) -> Shape:
    """NCHW `[N, C, H, W]` -> `[N, C / b^2, H * b, W * b]`."""
    _check_block(data, block_size, layout, op_name)
    if mode not in ("DCR", "CRD"):
        raise _error(op_name, f'mode "{mode}" is not "DCR" or "CRD"')
    n, c, h, w = data
    if c % (block_size * block_size):
        raise _error(
            op_name, f"{c} channels are not a multiple of block_size^2 = {block_size**2}"
        )
    return (n, c // (block_size * block_size), h * block_size, w * block_size)


def space_to_depth_output_shape(
    data: Sequence[int],
    block_size: int,
    layout: str = "NCHW",
    mode: str = "DCR",
    op_name: str = "relay.nn.space_to_depth",
) -> Shape:
    """NCHW `[N, C, H, W]` -> `[N, C * b^2, H / b, W / b]`."""
    _check_block(data, block_size, layout, op_name)
    if mode not in ("DCR", "CRD"):
        raise _error(op_name, f'mode "{mode}" is not "DCR" or "CRD"')
    n, c, h, w = data
    if h % block_size or w % block_size:
        raise _error(
            op_name, f"height {h} and width {w} must be multiples of block_size {block_size}"
        )
    return (n, c * block_size * block_size, h // block_size, w // block_size)


def _check_block(data: Sequence[int], block_size: int, layout: str, op_name: str) -> None:
    if layout != "NCHW":
        raise _error(op_name, f'layout "{layout}" is not supported (only "NCHW")')
    if len(data) != 4:
        raise _error(op_name, f"data must have rank 4 (NCHW), got shape {list(data)}")
    if block_size < 1:
        raise _error(op_name, f"block_size must be positive, got {block_size}")


@irdl_op_definition
class DepthToSpaceOp(InferredOp):
    """Channels moved into `block_size` x `block_size` spatial blocks (TVM's
    `relay.nn.depth_to_space`, ONNX's DepthToSpace): in mode "DCR" output
    `[n, c, h*b + i, w*b + j]` is input `[n, (i*b + j)*C' + c, h, w]`, in "CRD"
    input `[n, c*b*b + i*b + j, h, w]` (C' = C / b^2)."""

    name = "relay.nn.depth_to_space"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    block_size = prop_def(IntegerAttr[I64])
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    mode = prop_def(StringAttr, default_value=StringAttr("DCR"))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        block_size: int,
        layout: str = "NCHW",
        mode: str = "DCR",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "block_size": i64_attr(block_size),
                "layout": _string_attr(layout),
                "mode": _string_attr(mode),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        shape = depth_to_space_output_shape(
            data.get_shape(), attrs["block_size"], attrs["layout"], attrs["mode"], cls.name
        )
        return TensorType(data.element_type, shape)


@irdl_op_definition
class SpaceToDepthOp(InferredOp):
    """`block_size` x `block_size` spatial blocks moved into channels (TVM's
    `relay.nn.space_to_depth`, ONNX's SpaceToDepth): input
    `[n, c, h*b + i, w*b + j]` goes to output `[n, (i*b + j)*C + c, h, w]` in
    mode "DCR" (TVM's only one), to `[n, c*b*b + i*b + j, h, w]` in "CRD"
    (ONNX's opset 28; byoc's addition)."""

    name = "relay.nn.space_to_depth"

    data = operand_def(TensorType)
    result = result_def(TensorType)
    block_size = prop_def(IntegerAttr[I64])
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    mode = prop_def(StringAttr, default_value=StringAttr("DCR"))

    assembly_format = "$data attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        data: SSAValue,
        block_size: int,
        layout: str = "NCHW",
        mode: str = "DCR",
        result_type: Attribute | None = None,
    ):
        self._build(
            [data],
            {
                "block_size": i64_attr(block_size),
                "layout": _string_attr(layout),
                "mode": _string_attr(mode),
            },
            result_type,
        )

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = any_tensor_of(operand_types[0], cls.name, "data")
        shape = space_to_depth_output_shape(
            data.get_shape(), attrs["block_size"], attrs["layout"], attrs["mode"], cls.name
        )
        return TensorType(data.element_type, shape)
