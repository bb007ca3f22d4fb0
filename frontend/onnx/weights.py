"""Importing large ONNX models without copying their weights around.

`onnx.load` reads a whole file into memory and decodes it into a second copy;
ONNX's shape inference then serialises the model and decodes it again (for a
500 MB model: gigabytes, and 20 s). Weights are not needed for any of that:

- a file is scanned (protobuf's wire format, three levels deep:
  ModelProto.graph → GraphProto.initializer → TensorProto.raw_data) for the
  raw data of large initializers, and decoded without it;
- a model given as a ModelProto is copied without its large initializers'
  data (the copy shares nothing with it: the caller's model is not changed).

Either way each stripped tensor keeps its name, type and dims and is marked
as external data (ONNX's own way of saying "the bytes are elsewhere"), and
`LeanWeights` reads its bytes when the importer asks for them: from the file
with one `pread` straight into the buffer that becomes the relay constant,
or from the original TensorProto.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from byoc.frontend.diagnostics import ByocError

STRIP_BYTES = 1 << 16
"""Initializers whose raw data is at least this large are read lazily."""

_LENGTH_DELIMITED = 2
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_NAME, _TENSOR_RAW_DATA = 7, 5, 8, 9


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(data: Any, at: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= end or shift > 63:
            raise WireError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data: Any, start: int, end: int):
    """(field number, wire type, field start, payload start, payload end) of each field."""
    at = start
    while at < end:
        field_start = at
        key, at = _varint(data, at, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at, end)
            yield number, wire, field_start, field_start, at
            continue
        if wire == 1:
            payload = at
            at += 8
        elif wire == 5:
            payload = at
            at += 4
        elif wire == _LENGTH_DELIMITED:
            length, payload = _varint(data, at, end)
            at = payload + length
        else:
            raise WireError(f"unsupported wire type {wire}")
        if at > end:
            raise WireError("truncated field")
        yield number, wire, field_start, payload, at


def strip_weights(data: Any, min_bytes: int = STRIP_BYTES) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """The model `data` (bytes-like) without the raw data of its large
    initializers, and where each of those lies in `data`: name → (offset, length)."""
    stripped: dict[str, tuple[int, int]] = {}
    out = bytearray()
    for number, wire, start, payload, end in _fields(data, 0, len(data)):
        if number == _MODEL_GRAPH and wire == _LENGTH_DELIMITED:
            graph = _strip_graph(data, payload, end, min_bytes, stripped)
            out += _encode_varint(number << 3 | wire) + _encode_varint(len(graph)) + graph
        else:
            out += data[start:end]
    return bytes(out), stripped


def _strip_graph(data: Any, start: int, end: int, min_bytes: int, stripped: dict[str, tuple[int, int]]) -> bytes:
    out = bytearray()
    for number, wire, field_start, payload, field_end in _fields(data, start, end):
        if number == _GRAPH_INITIALIZER and wire == _LENGTH_DELIMITED:
            tensor = _strip_tensor(data, payload, field_end, min_bytes, stripped)
            if tensor is not None:
                out += _encode_varint(number << 3 | wire) + _encode_varint(len(tensor)) + tensor
                continue
        out += data[field_start:field_end]
    return bytes(out)


def _strip_tensor(data: Any, start: int, end: int, min_bytes: int, stripped: dict[str, tuple[int, int]]) -> bytes | None:
    name = None
    raw: tuple[int, int] | None = None
    for number, wire, _, payload, field_end in _fields(data, start, end):
        if wire != _LENGTH_DELIMITED:
            continue
        if number == _TENSOR_NAME:
            name = bytes(data[payload:field_end]).decode("utf-8", "replace")
        elif number == _TENSOR_RAW_DATA and field_end - payload >= min_bytes:
            raw = (payload, field_end)
    if name is None or raw is None or name in stripped:
        return None
    stripped[name] = (raw[0], raw[1] - raw[0])
    out = bytearray()
    for number, wire, field_start, payload, field_end in _fields(data, start, end):
        if number == _TENSOR_RAW_DATA and wire == _LENGTH_DELIMITED:
            continue
        out += data[field_start:field_end]
    return bytes(out)


EXTERNAL = 1
"""TensorProto.DataLocation.EXTERNAL."""

STRIPPED = "byoc-stripped"
"""The `location` of a tensor whose data `LeanWeights` holds."""


@dataclass
class LeanWeights:
    """Where the data of a lean model's stripped initializers is."""

    spans: dict[str, tuple[Path, int, int]] = field(default_factory=dict)
    """In files: name → (file, offset, length) of the raw data."""
    tensors: dict[str, Any] = field(default_factory=dict)
    """Stripped from a ModelProto: name → the original TensorProto."""

    def array(self, tensor: Any, filename: str) -> np.ndarray | None:
        """The value of `tensor` if it was stripped (else None), read now."""
        from onnx import numpy_helper
        from onnx.helper import tensor_dtype_to_np_dtype

        original = self.tensors.get(tensor.name)
        if original is not None:
            try:
                return numpy_helper.to_array(original)
            except Exception as err:  # noqa: BLE001 - dims that disagree with the data
                raise ByocError(
                    f"error: {filename}: cannot read tensor '{tensor.name}': {err}"
                ) from None
        span = self.spans.get(tensor.name)
        if span is None:
            return None
        path, offset, length = span
        try:
            dtype = np.dtype(tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
        except Exception as err:  # noqa: BLE001 - an unknown data type
            raise ByocError(f"error: {filename}: tensor '{tensor.name}': {err}") from None
        shape = tuple(int(d) for d in tensor.dims)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != length:
            raise ByocError(
                f"error: {filename}: tensor '{tensor.name}' has {length} bytes of data "
                f"for its shape {list(shape)} of {dtype}"
            )
        try:
            with open(path, "rb") as f:
                data = os.pread(f.fileno(), length, offset)
        except OSError as err:
            raise ByocError(
                f"error: {filename}: cannot read the data of tensor '{tensor.name}' "
                f"from {path.name}: {err.strerror or err}"
            ) from None
        if len(data) != length:
            raise ByocError(f"error: {filename}: truncated: tensor '{tensor.name}' ends early")
        return np.frombuffer(data, dtype).reshape(shape)


def _mark_stripped(tensor: Any, length: int) -> None:
    tensor.data_location = EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", STRIPPED), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def load_lean(path: Path, name: str, min_bytes: int = STRIP_BYTES) -> tuple[Any, LeanWeights]:
    """The model in the file `path` without the data of its large initializers,
    nor that of tensors stored in other files (ONNX's external data), which is
    read when asked for. `name` names the file in messages."""
    import onnx

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise WireError("empty file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            stripped, inline = strip_weights(data, min_bytes)
    model = onnx.load_from_string(stripped)
    weights = LeanWeights()
    for tensor in model.graph.initializer:
        if tensor.name in inline:
            offset, length = inline[tensor.name]
            _mark_stripped(tensor, length)
            weights.spans[tensor.name] = (path, offset, length)
        elif tensor.data_location == EXTERNAL:
            weights.spans[tensor.name] = _external_span(tensor, path, name)
    return model, weights


def _external_span(tensor: Any, model_path: Path, name: str) -> tuple[Path, int, int]:
    """Where ONNX's external data puts a tensor: a file beside the model, which
    must stay inside the model's folder."""
    entries = {e.key: e.value for e in tensor.external_data}
    where = f"error: {name}: cannot read the model's external weights: tensor '{tensor.name}'"
    location = entries.get("location", "")
    folder = model_path.resolve().parent
    target = (folder / location).resolve()
    if not location or Path(location).is_absolute() or folder not in target.parents:
        raise ByocError(f"{where} has the location {location!r}, outside the model's folder")
    try:
        offset = int(entries.get("offset", "0"))
        size = target.stat().st_size
        length = int(entries["length"]) if "length" in entries else size - offset
    except (OSError, ValueError) as err:
        raise ByocError(f"{where}: {err}") from None
    if offset < 0 or length < 0 or offset + length > size:
        raise ByocError(f"{where}: bytes {offset}..{offset + length} are not in {location} ({size} bytes)")
    return target, offset, length


def _data_bytes(tensor: Any) -> int:
    """How many bytes of data `tensor` holds, from its type and dims (reading
    `raw_data` would copy it; protobuf's ByteSize encodes the message)."""
    from onnx.helper import tensor_dtype_to_np_dtype

    try:
        itemsize = np.dtype(tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except Exception:  # noqa: BLE001 - an unknown or undefined data type
        return 0
    return itemsize * int(np.prod([int(d) for d in tensor.dims], dtype=np.int64))


def lean_copy(model: Any, min_bytes: int = STRIP_BYTES) -> tuple[Any, LeanWeights]:
    """A copy of the ModelProto `model` without the data of its large initializers
    (the original is left as it is)."""
    import onnx

    weights = LeanWeights()
    large = [t for t in model.graph.initializer if t.data_location != EXTERNAL and _data_bytes(t) >= min_bytes]
    if not large:
        return model, weights
    lean = onnx.ModelProto()
    for descriptor, value in model.ListFields():
        if descriptor.name != "graph":
            _copy_field(lean, descriptor, value)
    for descriptor, value in model.graph.ListFields():
        if descriptor.name != "initializer":
            _copy_field(lean.graph, descriptor, value)
    big = {id(t) for t in large}
    for tensor in model.graph.initializer:
        if id(tensor) not in big:
            lean.graph.initializer.add().CopyFrom(tensor)
            continue
        copy = lean.graph.initializer.add()
        copy.name, copy.data_type = tensor.name, tensor.data_type
        copy.dims.extend(tensor.dims)
        _mark_stripped(copy, _data_bytes(tensor))
        weights.tensors[tensor.name] = tensor
    return lean, weights


def _copy_field(target: Any, descriptor: Any, value: Any) -> None:
    if descriptor.is_repeated:
        getattr(target, descriptor.name).extend(value)
    elif descriptor.type == descriptor.TYPE_MESSAGE:
        getattr(target, descriptor.name).CopyFrom(value)
    else:
        setattr(target, descriptor.name, value)
