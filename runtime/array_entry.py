"""An entry point that takes numpy arrays themselves, for cheap calls from Python.

`cffi.FFI.from_buffer` costs about 0.3 µs per array, more than the rest of a
small model's call. This entry takes the addresses of the arrays (CPython's
`id`) and reads the fields of numpy's `PyArrayObject` itself, as numpy's own
C macros do (`PyArray_DATA`, `PyArray_NDIM`, `PyArray_DIMS`, `PyArray_DESCR`,
`PyArray_FLAGS`):

    int32_t <name>(const intptr_t* expected, PyObject* in0, ..., PyObject* out0, ...)

`expected[0]` is the address of `numpy.ndarray`, `expected[1 + i]` that of
input i's dtype. For each input it checks the type, the dtype, the rank, every
dimension against the static shape, and the C-contiguous and aligned flags; if
all hold it calls `main` with the data pointers and returns its status, else
it returns `ARGUMENTS_NEED_CONVERSION` without touching any data, and the
caller converts the arguments and goes through `from_buffer`. Outputs are
arrays the caller has just made with `numpy.empty`.

The field offsets are numpy's public C ABI (unchanged since numpy 1.7, and in
numpy 2). `layout_ok()` checks them on a live array before the entry is used;
if they differ (another Python implementation, a debug build), callers keep
using `from_buffer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue

ARGUMENTS_NEED_CONVERSION = -1
"""Returned when an argument is not a C-contiguous array of the right dtype and shape."""

# Byte offsets in PyArrayObject (64-bit): PyObject_HEAD is refcount, type.
TYPE, DATA, NDIM, DIMS, DESCR, FLAGS = 8, 16, 24, 32, 56, 64
C_CONTIGUOUS, ALIGNED = 0x1, 0x100
"""numpy's NPY_ARRAY_C_CONTIGUOUS and NPY_ARRAY_ALIGNED."""

_PTR = llvm_dialect.LLVMPointerType()
_I1, _I8 = IntegerType(1), IntegerType(8)
_EQ = IntegerAttr(0, i64)


@cache
def layout_ok() -> bool:
    """Whether numpy arrays in this process have the fields where the entry reads them."""
    import struct
    import sys

    if sys.implementation.name != "cpython" or struct.calcsize("P") != 8:
        return False
    from cffi import FFI

    ffi = FFI()
    array = np.empty((2, 3), np.float32)
    base = ffi.cast("char*", id(array))

    def word(offset: int) -> int:
        return int(ffi.cast("intptr_t*", base + offset)[0])

    def int32(offset: int) -> int:
        return int(ffi.cast("int32_t*", base + offset)[0])

    dims = ffi.cast("intptr_t*", word(DIMS))
    return (
        word(TYPE) == id(np.ndarray)
        and word(DATA) == array.__array_interface__["data"][0]
        and int32(NDIM) == 2
        and (dims[0], dims[1]) == (2, 3)
        and word(DESCR) == id(array.dtype)
        and int32(FLAGS) & (C_CONTIGUOUS | ALIGNED) == C_CONTIGUOUS | ALIGNED
    )


class _Builder:
    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        """Append `op`; its result."""
        self.block.add_op(op)
        return op.results[0]

    def end(self, op: Operation) -> None:
        """Append the terminator `op`."""
        self.block.add_op(op)

    def constant(self, value: int, typ: IntegerType) -> SSAValue:
        return self.add(llvm_dialect.ConstantOp(IntegerAttr(value, typ), typ))

    def field(self, obj: SSAValue, offset: int, typ) -> SSAValue:  # noqa: ANN001
        at = self.add(llvm_dialect.GEPOp(obj, [offset], _I8, inbounds=True))
        return self.add(llvm_dialect.LoadOp(at, typ))

    def equal(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.add(llvm_dialect.ICmpOp(lhs, rhs, _EQ))

    def all_of(self, conditions: Sequence[SSAValue]) -> SSAValue:
        """The conjunction of `conditions` (true for none)."""
        if not conditions:
            return self.constant(1, _I1)
        result = conditions[0]
        for condition in conditions[1:]:
            result = self.add(llvm_dialect.AndOp(result, condition))
        return result


def add_array_entry(
    module: ModuleOp,
    func_name: str,
    entry_name: str,
    input_shapes: Sequence[Sequence[int]],
    n_outputs: int,
) -> None:
    """Add the array entry of `func_name` (inputs, then outputs, return i32) to an
    llvm-dialect module (see the module doc)."""
    n_in = len(input_shapes)
    entry = Block(arg_types=[_PTR] * (1 + n_in + n_outputs))
    expected, objects = entry.args[0], entry.args[1:]
    fail = Block()
    fields, dims_block, call_block = Block(), Block(), Block()
    b = _Builder(entry)
    # 1. Every input is a numpy.ndarray (ob_type is at the same place in every object).
    array_type = b.add(llvm_dialect.LoadOp(expected, i64))
    is_array = b.all_of([b.equal(b.field(obj, TYPE, i64), array_type) for obj in objects[:n_in]])
    b.end(llvm_dialect.CondBrOp(is_array, fields, [], fail, []))
    # 2. Its dtype, rank and flags (only now is it safe to read these fields).
    b = _Builder(fields)
    flags_wanted = b.constant(C_CONTIGUOUS | ALIGNED, i32)
    checks = []
    for i, (obj, shape) in enumerate(zip(objects, input_shapes)):
        slot = b.add(llvm_dialect.GEPOp(expected, [1 + i], i64, inbounds=True))
        checks.append(b.equal(b.field(obj, DESCR, i64), b.add(llvm_dialect.LoadOp(slot, i64))))
        checks.append(b.equal(b.field(obj, NDIM, i32), b.constant(len(shape), i32)))
        flags = b.add(llvm_dialect.AndOp(b.field(obj, FLAGS, i32), flags_wanted))
        checks.append(b.equal(flags, flags_wanted))
    b.end(llvm_dialect.CondBrOp(b.all_of(checks), dims_block, [], fail, []))
    # 3. Every dimension (the rank is right, so dims has that many entries).
    b = _Builder(dims_block)
    checks = []
    for obj, shape in zip(objects, input_shapes):
        if not shape:
            continue
        dims = b.field(obj, DIMS, _PTR)
        for k, extent in enumerate(shape):
            at = b.add(llvm_dialect.GEPOp(dims, [k], i64, inbounds=True))
            checks.append(b.equal(b.add(llvm_dialect.LoadOp(at, i64)), b.constant(extent, i64)))
    b.end(llvm_dialect.CondBrOp(b.all_of(checks), call_block, [], fail, []))
    # 4. Call main with the data pointers.
    b = _Builder(call_block)
    data = [b.field(obj, DATA, _PTR) for obj in objects]
    status = b.add(llvm_dialect.CallOp(func_name, *data, return_type=i32))
    b.end(llvm_dialect.ReturnOp(status))
    b = _Builder(fail)
    b.end(llvm_dialect.ReturnOp(b.constant(ARGUMENTS_NEED_CONVERSION, i32)))
    module.body.block.add_op(
        llvm_dialect.FuncOp(
            entry_name,
            llvm_dialect.LLVMFunctionType([_PTR] * (1 + n_in + n_outputs), i32),
            linkage=llvm_dialect.LinkageAttr("external"),
            body=Region([entry, fields, dims_block, call_block, fail]),
        )
    )
