"""`relay.constant`: a tensor value held in the IR, with a fast numpy round trip."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from io import BytesIO, StringIO

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import (
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.relay.base import (
    RelayOp,
    _error,
)

# --- Constants -------------------------------------------------------------------

_NUMPY_FLOATS: dict[str, np.dtype] = {
    "f16": np.dtype("<f2"),
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
}
_FLOAT_TYPES: dict[int, AnyFloat] = {
    2: Float16Type(),
    4: Float32Type(),
    8: Float64Type(),
}
_INTEGER_WIDTHS = (8, 16, 32, 64)
_I1 = IntegerType(1)
_BOOL = np.dtype(np.bool_)


def numpy_dtype_of(typ: Attribute) -> np.dtype | None:
    """The little-endian numpy dtype of a builtin element type: f16/f32/f64,
    `i1` (bool), and the 8- to 64-bit integers (signless `iN` is signed, `uiN`
    unsigned), or None."""
    dtype = _NUMPY_FLOATS.get(str(typ))
    if dtype is not None:
        return dtype
    if typ == _I1:
        return _BOOL
    if isinstance(typ, IntegerType) and typ.width.data in _INTEGER_WIDTHS:
        unsigned = typ.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"<{'u' if unsigned else 'i'}{typ.width.data // 8}")
    return None


def element_type_of(dtype: np.dtype) -> Attribute | None:
    """The builtin element type of a numpy dtype (`int8` is `i8`, `uint8` is
    `ui8`, `bool` is `i1`), or None when relay has none (complex, ...)."""
    if dtype.kind == "b":
        return _I1
    if dtype.kind == "f" and dtype.itemsize in _FLOAT_TYPES:
        return _FLOAT_TYPES[dtype.itemsize]
    if dtype.kind in "iu" and dtype.itemsize * 8 in _INTEGER_WIDTHS:
        signedness = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, signedness)
    return None


def element_type_of_dtype(dtype: np.dtype | type) -> Attribute | None:
    """`element_type_of` for anything numpy takes as a dtype (`np.int64`, ...)."""
    return element_type_of(np.dtype(dtype))


def _element_dtype(typ: Attribute, op_name: str = "relay.constant") -> np.dtype:
    dtype = numpy_dtype_of(typ)
    if dtype is None:
        raise _error(op_name, f"element type {typ} has no numpy equivalent")
    return dtype


def _resource_bytes(handle: str) -> bytes:
    """The data of builtin resource `handle` (MLIR blob: 4-byte alignment, then data)."""
    interface = Builtin.get_interface(OpAsmDialectInterface)
    blob = interface.lookup(handle) if interface else None
    if not blob:
        raise VerifyException(
            f"'relay.constant': dense_resource<{handle}> has no data (the "
            f"resource is missing from the file's dialect_resources or was elided)"
        )
    return bytes.fromhex(blob[2:])[4:]


def _own_bytes(array: np.ndarray) -> bytes | None:
    """The `bytes` object `array` views, when it is exactly the array's memory
    (a weight read from a file): a constant then shares it instead of copying
    hundreds of megabytes."""
    root = array
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    if not isinstance(root, bytes) or len(root) != array.nbytes or not array.flags.c_contiguous:
        return None
    start = np.frombuffer(root, np.uint8).__array_interface__["data"][0]
    return root if start == array.__array_interface__["data"][0] else None


def filled_array(
    shape: Sequence[int], dtype: np.dtype | type, fill: Callable[[np.ndarray], None]
) -> np.ndarray:
    """A new read-only array of `shape` and `dtype` written by `fill` (given it
    writable and zeroed), whose memory is one `bytes` object, so that
    `ConstantOp.from_numpy` shares it: a weight packed at compile time (VGG-19's
    first dense is 392 MiB) then exists once, not as an array and again as its
    `tobytes` copy, beside the weight it was packed from.

    The bytes are a `BytesIO`'s own buffer, sized once, written through
    `getbuffer()` and taken by `getvalue()`, which CPython hands over without a
    copy when nothing else holds it (any other Python copies: slower, same
    result). `fill` must keep no reference to the array it is given."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    stream = BytesIO()
    if nbytes:
        stream.seek(nbytes - 1)
        stream.write(b"\0")  # one resize to the exact size, the gap zeroed
        with stream.getbuffer() as view:
            fill(np.frombuffer(view, dtype).reshape(shape))
    return np.frombuffer(stream.getvalue(), dtype).reshape(shape)


@irdl_op_definition
class ConstantOp(RelayOp):
    """A constant tensor: the `value` property, a `dense<...>` elements
    attribute (or a `dense_resource<...>` blob, as MLIR writes large weights).

    Build it from numpy with `ConstantOp.from_numpy(array)` (one copy of the
    bytes, no per-element Python work) and read it with `to_numpy()`. The custom
    form prints large values as one hex string without unpacking them.
    """

    name = "relay.constant"

    result = result_def(TensorType)
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    @staticmethod
    def from_numpy(array: np.ndarray | float) -> ConstantOp:
        """A constant holding `array`, of its dtype when relay has it (float16/32/64,
        bool as `i1`, 8- to 64-bit integers); other dtypes (Python floats) become f32."""
        array = np.asarray(array)
        typ = element_type_of(array.dtype)
        if typ is None:
            array = array.astype(np.float32)
            typ = _FLOAT_TYPES[4]
        shape = array.shape  # (ascontiguousarray makes a scalar one-dimensional)
        array = np.ascontiguousarray(array, dtype=_element_dtype(typ))
        data = _own_bytes(array)
        if data is None:
            data = array.tobytes()
        attr = DenseIntOrFPElementsAttr(TensorType(typ, shape), BytesAttr(data))
        return ConstantOp(attr)

    def to_numpy(self) -> np.ndarray:
        """The value as a read-only numpy array of the result's shape and dtype."""
        value = self.value
        typ = value.type
        assert isinstance(typ, TensorType)
        dtype = _element_dtype(typ.element_type, self.name)
        if isinstance(value, DenseResourceAttr):
            data = _resource_bytes(value.resource_handle.data)
        else:
            data = value.data.data
        array = np.frombuffer(data, dtype=dtype)
        shape = tuple(typ.get_shape())
        if array.size == 1 and math.prod(shape) != 1:
            return np.broadcast_to(array[0], shape)
        return array.reshape(shape)

    def verify_(self) -> None:
        typ = self.value.type
        if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
            raise _error(self.name, f"value must be a static-shape tensor, got {typ}")
        if numpy_dtype_of(typ.element_type) is None:
            raise _error(
                self.name,
                f"value must have a float, i1 or 8- to 64-bit integer element type, "
                f"got {typ.element_type}",
            )
        if self.result.type != typ:
            raise _error(
                self.name,
                f"result type {self.result.type} does not match the value's type {typ}",
            )
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            count = len(self.value)
            size = math.prod(typ.get_shape())
            if count not in (1, size):
                raise _error(
                    self.name, f"value has {count} elements but its type {typ} has {size}"
                )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        position = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error(
                f"'relay.constant': expected a dense<...> or dense_resource<...> "
                f"value, got {value}",
                position,
            )
        op = cls(value)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        value = self.value
        limit = getattr(printer, "elide_larger_than", None)
        if limit is not None and isinstance(value, DenseIntOrFPElementsAttr) and len(value) > limit:
            printer.print_string(f"{ELIDED} : ")
            printer.print_attribute(value.type)
            return
        if isinstance(value, DenseIntOrFPElementsAttr) and len(value) > 100:
            # xDSL unpacks every element to Python floats before choosing the hex
            # form (about 1 s for 25 MB); print the same text straight from the bytes.
            data = value.data.data
            words = np.frombuffer(
                data, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[
                    value.get_element_type().compile_time_size
                ]
            )
            if not (words == words[0]).all():
                printer.print_string(f'dense<"0x{data.hex().upper()}"> : ')
                printer.print_attribute(value.type)
                return
        printer.print_attribute(value)




# --- Printing without the weights ----------------------------------------------

ELIDED = "dense_resource<__elided__>"
"""How an elided constant prints, as in MLIR (`--mlir-elide-elementsattrs-if-larger`)."""

ELIDE_LARGER_THAN = 1024
"""Constants of more elements than this print elided in text meant for people."""


@dataclass(eq=False, repr=False)
class ElidingPrinter(Printer):
    """A printer that shows constants of more than `elide_larger_than` elements
    as `dense_resource<__elided__>`: their bytes never become text.

    It also prints each distinct attribute (a type, say) once and reuses the
    text: xDSL prints a `tensor<16xf32>` in about 0.2 ms, and a large model
    prints the same few types hundreds of thousands of times.
    """

    elide_larger_than: int = ELIDE_LARGER_THAN
    _attribute_texts: dict[Attribute, str] = field(default_factory=dict, init=False)

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseResourceAttr):  # registers its resource
            super().print_attribute(attribute)
            return
        try:
            text = self._attribute_texts.get(attribute)
        except TypeError:  # an unhashable attribute
            super().print_attribute(attribute)
            return
        if text is None:
            out = StringIO()
            Printer(stream=out).print_attribute(attribute)
            text = self._attribute_texts[attribute] = out.getvalue()
        self.print_string(text)


def print_eliding_weights(op: Operation, limit: int = ELIDE_LARGER_THAN) -> str:
    """`op` as text, constants of more than `limit` elements elided. The text
    parses back, but an elided constant has no value to compute with."""
    out = StringIO()
    ElidingPrinter(stream=out, elide_larger_than=limit).print_op(op)
    return out.getvalue()


def elided_constants(op: Operation, limit: int = ELIDE_LARGER_THAN) -> Iterator[ConstantOp]:
    """The constants `print_eliding_weights(op, limit)` elides, in printed order."""
    for inner in op.walk():
        if (
            isinstance(inner, ConstantOp)
            and isinstance(inner.value, DenseIntOrFPElementsAttr)
            and len(inner.value) > limit
        ):
            yield inner
