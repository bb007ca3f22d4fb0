"""Reading ONNX models: files and protos, external weights, sanity checks,
pinning input shapes and ONNX's own shape inference."""


from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from byoc.frontend.diagnostics import ByocError

if TYPE_CHECKING:
    import onnx

    from byoc.frontend.onnx.weights import LeanWeights

Shape = tuple[int, ...]



def _onnx() -> Any:
    """The onnx package, imported on first use."""
    try:
        import onnx
    except ImportError:
        raise ByocError(
            "error: importing ONNX models needs the onnx package "
            "(pip install 'byoc[onnx]')"
        ) from None
    return onnx


def is_onnx_source(source: object) -> bool:
    """Whether `source` is an ONNX model: a `.onnx` path or an `onnx.ModelProto`."""
    if isinstance(source, (str, Path)):
        from byoc.frontend.parse import names_file

        text = str(source)
        return text.lower().endswith(".onnx") and (
            "\n" not in text or isinstance(source, Path) or names_file(text)
        )
    onnx = sys.modules.get("onnx")  # a ModelProto exists only if onnx is loaded
    return onnx is not None and isinstance(source, onnx.ModelProto)


# --- Loading -------------------------------------------------------------------


def load_model(source: str | Path | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """The ModelProto of `source` and the name to use in messages."""
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source, "<onnx model>"
    if not isinstance(source, (str, Path)):
        raise ByocError(
            f"error: cannot import a {type(source).__name__} as ONNX; pass a path "
            "or an onnx.ModelProto"
        )
    name = str(source)
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ByocError(
            f"error: {name}: cannot read the file: {err.strerror or err}"
        ) from None
    try:
        model = onnx.load_from_string(data)
    except Exception as err:  # protobuf's DecodeError, and anything odd it raises
        raise ByocError(
            f"error: {name}: not an ONNX model, or a truncated one (cannot decode "
            f"the protobuf: {err})"
        ) from None
    _load_external_data(model, path, name)
    return model, name


LEAN_FILE_BYTES = 1 << 24
"""Files at least this large are read without their weights (frontend/onnx/weights.py)."""


def load_lean_model(
    source: str | Path | onnx.ModelProto,
) -> tuple[onnx.ModelProto, str, LeanWeights]:
    """The model of `source` without the data of its large initializers (read
    when the importer asks: see frontend/onnx/weights.py), and its name."""
    from byoc.frontend.onnx.weights import LeanWeights, WireError, lean_copy, load_lean

    onnx = _onnx()
    # Text first: copying a field that is not UTF-8 raises UnicodeDecodeError.
    if isinstance(source, onnx.ModelProto):
        _check_text(source, "<onnx model>")
        model, weights = lean_copy(source)
        return model, "<onnx model>", weights
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            small = path.stat().st_size < LEAN_FILE_BYTES
        except OSError:
            small = True  # load_model reports it
        if not small:
            try:
                model, weights = load_lean(path, str(source))
            except (WireError, ValueError, OSError) as err:
                raise ByocError(
                    f"error: {source}: not an ONNX model, or a truncated one (cannot "
                    f"decode the protobuf: {err})"
                ) from None
            except ByocError:
                raise
            except Exception as err:  # protobuf's DecodeError
                raise ByocError(
                    f"error: {source}: not an ONNX model, or a truncated one (cannot "
                    f"decode the protobuf: {err})"
                ) from None
            _check_text(model, str(source))
            return model, str(source), weights
    model, name = load_model(source)
    _check_text(model, name)
    model, weights = lean_copy(model)
    return model, name, weights


def _load_external_data(model: onnx.ModelProto, path: Path, name: str) -> None:
    """Read tensors stored next to the model (`onnx.save(..., save_as_external_data=True)`)."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if not any(uses_external_data(t) for t in model.graph.initializer):
        return
    try:
        load_external_data_for_model(model, str(path.parent))
    except Exception as err:
        raise ByocError(
            f"error: {name}: cannot read the model's external weights: {err}"
        ) from None


def _check_model(model: onnx.ModelProto, name: str) -> None:
    """Reject what decodes as protobuf but is no model (a truncated or foreign file).

    Not `onnx.checker`: it refuses models onnxruntime runs (graph outputs
    without a shape, for one); the strict shape inference that follows checks
    types and shapes node by node.
    """
    graph = model.graph
    if model.ir_version <= 0 or not model.HasField("graph") or not graph.output:
        raise ByocError(
            f"error: {name}: not an ONNX model, or a truncated one (no IR version, "
            "graph or graph outputs)"
        )
    if not any(e.domain in ("", "ai.onnx") for e in model.opset_import):
        if model.opset_import:  # ai.onnx.ml's classifiers, a training graph
            others = ", ".join(sorted(f"{e.domain} {e.version}" for e in model.opset_import))
            raise ByocError(
                f"error: {name}: the model imports only the operator sets {others}, "
                "which are not supported: byoc converts the ai.onnx operators"
            )
        raise ByocError(
            f"error: {name}: the model imports no ai.onnx operator set (a truncated "
            "file?)"
        )
    for index, node in enumerate(graph.node):
        if not node.op_type:
            raise ByocError(f"error: {name}: node #{index} has no op type")


def _check_text(model: onnx.ModelProto, name: str) -> None:
    """Every string field must be text: ONNX's protos are proto2, whose
    strings decode to `bytes` when they are not UTF-8, and a name or op type
    of bytes broke the importer with a TypeError. One pass over the messages,
    without recursion (subgraphs nest as deep as a file says)."""
    from google.protobuf.descriptor import FieldDescriptor
    from google.protobuf.message import Message

    stack: list[tuple[Any, str]] = [(model, "model")]
    while stack:
        message, where = stack.pop()
        for field, value in message.ListFields():
            place = f"{where}.{field.name}"
            repeated = not isinstance(value, Message | str | bytes)
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                if repeated:
                    stack.extend((item, f"{place}[{i}]") for i, item in enumerate(value))
                else:
                    stack.append((value, place))
            elif field.type == FieldDescriptor.TYPE_STRING:
                for i, text in enumerate(value if repeated else [value]):
                    if not isinstance(text, str):
                        at = f"{place}[{i}]" if repeated else place
                        raise ByocError(
                            f"error: {name}: {at} is not UTF-8 text ({bytes(text)[:60]!r})"
                        )


def default_opset(model: onnx.ModelProto) -> int:
    """The version of the default (`ai.onnx`) operator set the model imports."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


# --- Shapes and types ------------------------------------------------------------


def _dims(type_proto: Any) -> list[int | str | None] | None:
    """The dimensions of a tensor type: ints, dim_param names, or None (unknown)."""
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(dim.dim_value)
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return dims


def _dtype_name(elem_type: int) -> str:
    """A tensor element type's name for a message (any number a file holds)."""
    onnx = _onnx()
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except Exception:  # noqa: BLE001 - onnx raises KeyError, ValueError...
        return _onnx_type_name(elem_type)


def _onnx_type_name(elem_type: int) -> str:
    """ONNX's name of a data type (`float16`), for any number a file holds."""
    try:
        return _onnx().TensorProto.DataType.Name(elem_type).lower()
    except ValueError:  # a number ONNX does not define
        return f"data type {elem_type} (not an ONNX type)"


def _pin_input_shapes(
    model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]], name: str
) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs in `shapes` have those static shapes."""
    onnx = _onnx()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    by_name = {i.name: i for i in model.graph.input}
    for input_name, shape in shapes.items():
        value = by_name.get(input_name)
        if value is None:
            raise ByocError(
                f"error: {name}: input_shapes names '{input_name}', which is not a "
                f"graph input (inputs: {', '.join(sorted(by_name)) or 'none'})"
            )
        declared = _dims(value.type)
        pinned = [int(size) for size in shape]
        if any(size <= 0 for size in pinned):
            raise ByocError(
                f"error: {name}: input_shapes gives '{input_name}' the shape {pinned}; "
                "sizes must be positive"
            )
        if declared is not None:
            if len(declared) != len(pinned):
                raise ByocError(
                    f"error: {name}: input_shapes gives '{input_name}' {len(pinned)} "
                    f"dimensions {pinned}, but the model declares {len(declared)} "
                    f"({_shown(declared)})"
                )
            for axis, (was, now) in enumerate(zip(declared, pinned)):
                if isinstance(was, int) and was != now:
                    raise ByocError(
                        f"error: {name}: input_shapes gives '{input_name}' the shape "
                        f"{pinned}, but the model fixes dimension {axis} to {was} "
                        f"({_shown(declared)})"
                    )
        dims = value.type.tensor_type.shape
        dims.ClearField("dim")
        for size in pinned:
            dims.dim.add().dim_value = size
    # Stale shapes of intermediate values would conflict with the pinned ones.
    del model.graph.value_info[:]
    return model


def _shown(dims: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _infer_shapes(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    onnx = _onnx()
    try:
        return onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=True, data_prop=True
        )
    except Exception as err:
        message = str(err).strip()
        raise ByocError(f"error: {name}: ONNX shape inference failed: {message}") from None


