"""Lowerings of the relay ops that only move elements (reshape and its kin,
transpose, concatenate) to copy loop nests, and of `relay.constant` to a
module-level `memref.global` read through `memref.get_global`.

Used by convert-relay-to-loops (`SHAPE_LOWERINGS`, `lower_constant`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import SymbolOpInterface

from byoc.dialects import relay
from byoc.passes.loop_nests import (
    BodyBuilder,
    copy_nest,
    element_type_of,
    loop_nest,
    shape_of,
    store,
)

# --- Reshape: same row-major elements, another shape ----------------------------


def _groups(
    source: Sequence[int], target: Sequence[int]
) -> list[tuple[list[int], list[int]]]:
    """The finest pairing of the dimensions of two shapes with as many elements:
    `(source dims, target dims)` with equal products, in order.

    Size-1 dimensions belong to no group (their index is always 0), so a squeeze
    or an expand_dims pairs every other dimension with itself. Both shapes must
    have at least one element.
    """
    src = [k for k, d in enumerate(source) if d != 1]
    dst = [k for k, d in enumerate(target) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src):
        src_group, dst_group = [src[i]], [dst[j]]
        src_size, dst_size = source[src[i]], target[dst[j]]
        i, j = i + 1, j + 1
        while src_size != dst_size:
            if src_size < dst_size:
                src_group.append(src[i])
                src_size *= source[src[i]]
                i += 1
            else:
                dst_group.append(dst[j])
                dst_size *= target[dst[j]]
                j += 1
        groups.append((src_group, dst_group))
    assert j == len(dst), "shapes with different element counts"
    return groups


def _linearize(
    b: BodyBuilder, indices: Sequence[SSAValue], extents: Sequence[int]
) -> SSAValue:
    """The row-major offset of `indices` in a block of `extents` (Horner's rule)."""
    offset = indices[0]
    for index, extent in zip(indices[1:], extents[1:]):
        scaled = b.scalar(arith.MuliOp, offset, b.index(extent))
        offset = b.scalar(arith.AddiOp, scaled, index)
    return offset


def _delinearize(
    b: BodyBuilder, offset: SSAValue, extents: Sequence[int]
) -> list[SSAValue]:
    """The indices of row-major `offset` in a block of `extents` (`divui`/`remui`:
    offsets are never negative, and division by a constant is cheap)."""
    indices: list[SSAValue] = []
    stride = math.prod(extents)
    for position, extent in enumerate(extents):
        stride //= extent
        index = offset
        if stride != 1:
            index = b.scalar(arith.DivUIOp, index, b.index(stride))
        if position != 0:
            index = b.scalar(arith.RemUIOp, index, b.index(extent))
        indices.append(index)
    return indices


def reshape_nest(b: BodyBuilder, source: SSAValue, target: SSAValue) -> None:
    """Copy `source` into `target`, which has the same elements in row-major
    order under another shape, with one loop nest.

    The nest runs group by group (see `_groups`) over whichever side of a group
    has several dimensions, so a flatten reads its input and an unflatten writes
    its output with plain indices and computes the other side's one index with
    a multiply-add; only a group split differently on both sides (6x4 as 3x8)
    iterates the output and recovers the input indices by division.
    """
    src_shape, dst_shape = shape_of(source), shape_of(target)
    if src_shape == dst_shape:
        copy_nest(b, source, target)
        return
    if math.prod(dst_shape) == 0:
        return
    groups = _groups(src_shape, dst_shape)
    extents: list[int] = []
    for src_dims, dst_dims in groups:
        dims, shape = (src_dims, src_shape) if len(dst_dims) == 1 else (dst_dims, dst_shape)
        extents.extend(shape[d] for d in dims)
    inner, ivs = loop_nest(b, extents)
    zero = inner.index(0)
    src_indices = [zero] * len(src_shape)
    dst_indices = [zero] * len(dst_shape)
    position = 0
    for src_dims, dst_dims in groups:
        if len(dst_dims) == 1:  # iterate the source dims of this group
            walked, walked_shape, walked_indices = src_dims, src_shape, src_indices
            other, other_shape, other_indices = dst_dims, dst_shape, dst_indices
        else:
            walked, walked_shape, walked_indices = dst_dims, dst_shape, dst_indices
            other, other_shape, other_indices = src_dims, src_shape, src_indices
        group_ivs = ivs[position : position + len(walked)]
        position += len(walked)
        for dim, iv in zip(walked, group_ivs):
            walked_indices[dim] = iv
        offset = _linearize(inner, group_ivs, [walked_shape[d] for d in walked])
        if len(other) == 1:
            other_indices[other[0]] = offset
        else:
            split = _delinearize(inner, offset, [other_shape[d] for d in other])
            for dim, index in zip(other, split):
                other_indices[dim] = index
    value = inner.scalar(
        memref.LoadOp, source, *src_indices, result_type=element_type_of(source)
    )
    store(inner, value, target, dst_indices)


def lower_reshape(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers reshape, batch_flatten, squeeze and expand_dims to one copy nest."""
    reshape_nest(b, operands[0], results[0])


# --- Transpose and concatenate ------------------------------------------------------


def lower_transpose(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.transpose` to a nest over the output reading permuted indices."""
    assert isinstance(op, relay.TransposeOp)
    source, target = operands[0], results[0]
    axes = relay.transpose_axes(len(shape_of(source)), op.attrs()["axes"], op.name)  # type: ignore[arg-type]
    if axes == tuple(range(len(axes))):
        copy_nest(b, source, target)
        return
    inner, ivs = loop_nest(b, shape_of(target))
    # out[i_0, ..., i_n] = data[j_0, ..., j_n] where j_axes[k] = i_k
    indices = [ivs[axes.index(dim)] for dim in range(len(axes))]
    value = inner.scalar(
        memref.LoadOp, source, *indices, result_type=element_type_of(source)
    )
    store(inner, value, target, ivs)


def lower_concatenate(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.concatenate` to one copy nest per operand, each writing the
    output at its offset along the axis."""
    copy_into_slices(b, op, operands, results[0], [True] * len(operands))


def copy_into_slices(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    target: SSAValue,
    copied: Sequence[bool],
) -> None:
    """The copy nests of `relay.concatenate` for the operands `copied` selects
    (the others were written in place: passes/concat_in_place.py)."""
    assert isinstance(op, relay.ConcatenateOp)
    axis = relay.normalize_axis(op.attrs()["axis"], len(shape_of(target)), op.name)  # type: ignore[arg-type]
    offset = 0
    for source, copy in zip(operands, copied, strict=True):
        shape = shape_of(source)
        if copy and math.prod(shape) != 0:
            inner, ivs = loop_nest(b, shape)
            value = inner.scalar(
                memref.LoadOp, source, *ivs, result_type=element_type_of(source)
            )
            indices = list(ivs)
            if offset:
                indices[axis] = inner.scalar(arith.AddiOp, ivs[axis], inner.index(offset))
            store(inner, value, target, indices)
        offset += shape[axis]


ShapeLowering = Callable[
    [BodyBuilder, Operation, Sequence[SSAValue], Sequence[SSAValue]], None
]

SHAPE_LOWERINGS: dict[type[Operation], ShapeLowering] = {
    relay.ReshapeOp: lower_reshape,
    relay.BatchFlattenOp: lower_reshape,
    relay.SqueezeOp: lower_reshape,
    relay.ExpandDimsOp: lower_reshape,
    relay.TransposeOp: lower_transpose,
    relay.ConcatenateOp: lower_concatenate,
}
"""The lowerings of the data-movement ops, for convert-relay-to-loops' `LOWERINGS`."""


# --- Constants ------------------------------------------------------------------


class GlobalConstants:
    """The `memref.global "private" constant`s of one module: one per distinct
    value, at the top of the module, named `@__constant_<shape>x<type>` as MLIR's
    bufferization names them (`_0`, `_1`... when that is taken)."""

    __slots__ = ("block", "last", "symbols", "names")

    def __init__(self, module: ModuleOp):
        self.block = module.body.block
        self.last: Operation | None = None
        self.symbols: set[str] | None = None  # the module's symbols, on first use
        self.names: dict[Attribute, SymbolRefAttr] = {}

    def get(self, op: relay.ConstantOp, typ: MemRefType) -> SymbolRefAttr:
        """The global holding the value of `op`, whose buffer type is `typ`."""
        # Equal values share a global: comparing attributes compares their bytes.
        found = self.names.get(op.value)
        if found is not None:
            return found
        name = self._fresh_name(typ)
        new = memref.GlobalOp.get(
            StringAttr(name),
            typ,
            _dense_value(op),
            constant=UnitAttr(),
            alignment=64,  # a cache line, for vector loads of weights
        )
        if self.last is not None:
            self.block.insert_op_after(new, self.last)
        elif (first := self.block.first_op) is not None:
            self.block.insert_op_before(new, first)
        else:
            self.block.add_op(new)
        self.last = new
        self.names[op.value] = found = SymbolRefAttr(name)
        return found

    def _fresh_name(self, typ: MemRefType) -> str:
        if self.symbols is None:
            self.symbols = {
                name.data
                for op in self.block.ops
                if (interface := op.get_trait(SymbolOpInterface)) is not None
                and (name := interface.get_sym_attr_name(op)) is not None
            }
        base = "__constant_" + "".join(f"{d}x" for d in typ.get_shape())
        base += str(typ.element_type)
        name, suffix = base, 0
        while name in self.symbols:
            name, suffix = f"{base}_{suffix}", suffix + 1
        self.symbols.add(name)
        return name


def _dense_value(op: relay.ConstantOp) -> DenseIntOrFPElementsAttr:
    """`op`'s value as `dense<...>` with every element present: `memref.global`
    takes no `dense_resource`, and the exits expect one value per element."""
    value = op.value
    typ = op.result.type
    assert isinstance(typ, TensorType)
    if isinstance(value, DenseIntOrFPElementsAttr) and len(value) == math.prod(
        typ.get_shape()
    ):
        return value
    data = np.ascontiguousarray(op.to_numpy()).tobytes()
    return DenseIntOrFPElementsAttr(typ, BytesAttr(data))


def lower_constant(
    b: BodyBuilder, op: Operation, constants: GlobalConstants, typ: MemRefType
) -> SSAValue:
    """Lowers `relay.constant` to `memref.get_global` of a module-level constant;
    the buffer is read-only: never written, never freed."""
    assert isinstance(op, relay.ConstantOp)
    get = b.insert(memref.GetGlobalOp(constants.get(op, typ), typ))
    get.memref.name_hint = op.result.name_hint
    return get.memref
