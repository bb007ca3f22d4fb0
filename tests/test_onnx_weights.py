"""Importing ONNX models without copying their weights: files scanned for their
large initializers, ModelProtos copied without them, external data read lazily."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc.frontend.onnx import loader, weights
from byoc.frontend.onnx.weights import LeanWeights, lean_copy, load_lean, strip_weights
from byoc.runtime.cache import module_digest


def model_with_weights(seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Conv -> Relu -> Flatten -> Gemm, plus a small int64 shape initializer."""
    rng = np.random.default_rng(seed)
    arrays = {
        "w": rng.standard_normal((16, 3, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(16).astype(np.float32),
        "g": rng.standard_normal((10, 16 * 8 * 8)).astype(np.float32) * 0.05,
        "shape": np.array([1, 16 * 8 * 8], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "g"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(a, n) for n, a in arrays.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, arrays


@pytest.fixture
def lean_files(monkeypatch):
    """Every file is read lean, every weight of 64+ bytes stripped."""
    monkeypatch.setattr(loader, "LEAN_FILE_BYTES", 0)
    monkeypatch.setattr(weights, "STRIP_BYTES", 64)


def test_scanning_finds_each_large_initializer():
    model, arrays = model_with_weights()
    data = model.SerializeToString()
    stripped, spans = strip_weights(data, 64)
    assert set(spans) == {"w", "b", "g"}  # the 8-byte shape stays
    for name, (offset, length) in spans.items():
        assert data[offset : offset + length] == arrays[name].tobytes()
    assert len(stripped) < len(data) - sum(length for _, length in spans.values()) + 64
    lean = onnx.load_from_string(stripped)
    assert [t.name for t in lean.graph.initializer] == ["w", "b", "g", "shape"]
    assert not any(t.raw_data for t in lean.graph.initializer if t.name != "shape")


def test_lean_file_gives_the_same_arrays_and_module(tmp_path):
    model, arrays = model_with_weights()
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    lean, found = load_lean(path, str(path), min_bytes=64)
    for tensor in lean.graph.initializer:
        array = found.array(tensor, "net")
        if tensor.name == "shape":
            assert array is None
        else:
            np.testing.assert_array_equal(array, arrays[tensor.name])
    onnx.shape_inference.infer_shapes(lean, check_type=True, strict_mode=True)


def test_import_of_a_lean_file_matches_the_proto(tmp_path, lean_files):
    model, _ = model_with_weights(seed=1)
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    from_file = byoc.from_onnx(path)
    from_proto = byoc.from_onnx(model)
    assert module_digest(from_file) == module_digest(from_proto)
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    compiled = byoc.compile(path, targets=["cblas", "ccompiler"], cache=False)
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    want = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(compiled(x), want, rtol=1e-4, atol=1e-5)


def test_lean_copy_leaves_the_callers_model_alone():
    model, arrays = model_with_weights(seed=3)
    before = model.SerializeToString()
    lean, found = lean_copy(model, min_bytes=64)
    assert model.SerializeToString() == before
    assert lean.ByteSize() < len(before) // 4
    assert set(found.tensors) == {"w", "b", "g"}
    np.testing.assert_array_equal(found.array(lean.graph.initializer[2], "m"), arrays["g"])


def test_weights_share_the_buffer_read_from_the_file(tmp_path, lean_files):
    """The bytes read for a weight become the constant's bytes (one copy)."""
    model, arrays = model_with_weights(seed=4)
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    lean, found = load_lean(path, str(path), min_bytes=64)
    array = found.array(lean.graph.initializer[2], "net")
    from byoc.dialects.relay import ConstantOp

    constant = ConstantOp.from_numpy(array)
    root = array
    while isinstance(root, np.ndarray):
        root = root.base
    assert constant.value.data.data is root


def test_external_data_is_read_lazily_and_stays_in_the_folder(tmp_path, lean_files):
    model, _ = model_with_weights(seed=5)
    path = tmp_path / "ext.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=64)
    reference = byoc.from_onnx(onnx.load(path))
    assert module_digest(byoc.from_onnx(path)) == module_digest(reference)
    lean = onnx.load(path, load_external_data=False)
    for tensor in lean.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../outside.data"
    bad = tmp_path / "bad.onnx"
    onnx.save(lean, bad)
    with pytest.raises(byoc.ByocError, match="outside the model's folder"):
        byoc.from_onnx(bad)


def test_truncated_large_file_is_one_clear_error(tmp_path, lean_files):
    model, _ = model_with_weights(seed=6)
    data = model.SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(byoc.ByocError, match="not an ONNX model, or a truncated one"):
        byoc.from_onnx(path)
    path.write_bytes(b"")
    with pytest.raises(byoc.ByocError, match="not an ONNX model, or a truncated one"):
        byoc.from_onnx(path)


def test_a_tensor_whose_data_does_not_fit_its_shape(tmp_path):
    model, _ = model_with_weights(seed=7)
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    lean, found = load_lean(path, str(path), min_bytes=64)
    tensor = lean.graph.initializer[0]
    tensor.dims[0] = 17
    with pytest.raises(byoc.ByocError, match="bytes of data for its shape"):
        found.array(tensor, "net")
    assert isinstance(found, LeanWeights)
