"""Symbolic dimensions: one error naming each unpinned input, its symbolic
dims and the flag that pins them; `input_shapes` on `byoc.compile` (and the
compile cache telling pins apart); `--input-shape` on byoc-run, byoc-translate
and byoc-import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402
from byoc.frontend.onnx import from_onnx  # noqa: E402
from byoc.runtime.build import load_source  # noqa: E402

BIN = Path(sys.executable).parent


def dynamic_model() -> onnx.ModelProto:
    """`y = relu(x @ w) + b`, with x's batch and sequence symbolic; ids pick rows."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Add", ["r", "b"], ["y"]),
        helper.make_node("Shape", ["x"], ["s"]),  # folds once pinned
        helper.make_node("Gather", ["s", "zero"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["y", "nf"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "seq", 3])],
        initializer=[
            numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b"),
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def expected(x: np.ndarray) -> np.ndarray:
    model = dynamic_model()
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer[:2])
    return (np.maximum(x @ w, 0) + b) * x.shape[0]


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "dynamic.onnx"
    onnx.save(dynamic_model(), path)
    return path


def run_tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / str(args[0])), *map(str, args[1:])], capture_output=True, text=True)


def test_an_unpinned_input_is_one_error_naming_its_dims_and_the_flag() -> None:
    with pytest.raises(ByocError) as err:
        from_onnx(dynamic_model())
    assert str(err.value) == (
        "error: <onnx model>: input 'x' (shape [batch, seq, 4]) has symbolic dimensions "
        "batch, seq; byoc compiles static shapes: pin them with --input-shape "
        "x=<batch>,<seq>,4 (from Python: input_shapes={'x': [<batch>, <seq>, 4]})"
    )


def test_every_unpinned_input_is_in_the_one_message() -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ByocError) as err:
        from_onnx(model)
    message = str(err.value)
    assert "inputs 'a' (shape [n, 3]), 'b' (shape [?, 3]) have symbolic dimension n and 1 unknown dimension" in message
    assert "--input-shape a=<n>,3 --input-shape b=<dim 0>,3" in message
    assert "\n" not in message
    module = from_onnx(model, {"a": [2, 3], "b": [2, 3]})
    assert "tensor<2x3xf32>" in str(module)


@pytest.mark.parametrize(
    ("shapes", "needle"),
    [
        ({"x": [2, 5]}, r"gives 'x' 2 dimensions \[2, 5\], but the model declares 3 \(\[batch, seq, 4\]\)"),
        ({"x": [2, 5, 3]}, r"the model fixes dimension 2 to 4"),
        ({"x": [2, 0, 4]}, r"sizes must be positive"),
        ({"y": [1]}, r"'y', which is not a graph input \(inputs: x\)"),
    ],
    ids=["rank", "fixed-dim", "zero", "unknown-input"],
)
def test_bad_pins_are_one_clear_error(shapes, needle) -> None:
    with pytest.raises(ByocError, match=needle):
        from_onnx(dynamic_model(), shapes)


def test_compile_takes_input_shapes_and_the_cache_tells_pins_apart() -> None:
    model = dynamic_model()
    for shape in ([2, 5, 4], [3, 1, 4]):
        compiled = byoc.compile(model, targets=["cblas", "ccompiler"], input_shapes={"x": shape})
        assert compiled.inputs[0].shape == tuple(shape)
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(compiled(x), expected(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ByocError, match="symbolic dimensions batch, seq"):
        byoc.compile(model, targets=[])


def test_input_shapes_are_for_onnx_models_only() -> None:
    text = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}\n"
    with pytest.raises(ByocError, match="input shapes pin the inputs of ONNX models"):
        load_source(text, {"x": [2]})


def test_byoc_run_pins_and_checks(model_file: Path) -> None:
    proc = run_tool("byoc-run", model_file, "--annotate=")
    assert proc.returncode == 1, proc.stdout
    assert "Traceback" not in proc.stderr
    assert "--input-shape x=<batch>,<seq>,4" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run_tool("byoc-run", model_file, "--annotate=cblas,ccompiler", "--input-shape", "x=2,3,4", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: matches the reference" in proc.stdout and "check: matches onnxruntime" in proc.stdout


def test_byoc_translate_pins(model_file: Path, tmp_path: Path) -> None:
    proc = run_tool("byoc-translate", model_file, "--emit-c", "--annotate=ccompiler", "--input-shape", "x=2,3,4")
    assert proc.returncode == 0, proc.stderr
    assert "int32_t" in proc.stdout
    proc = run_tool("byoc-translate", model_file, "--emit-c")
    assert proc.returncode == 1 and "--input-shape x=<batch>,<seq>,4" in proc.stderr
    library = tmp_path / "libdyn.so"
    proc = run_tool(
        "byoc-translate", model_file, "--emit-library", "--name", "dyn", "-o", library,
        "--input-shape", "x=2,3,4",
    )
    assert proc.returncode == 0, proc.stderr
    assert "#define DYN_INPUT_0_SIZE 24" in (tmp_path / "dyn.h").read_text()


@pytest.mark.parametrize("tool", ["byoc-run", "byoc-translate", "byoc-import"])
def test_a_malformed_flag_is_one_error(model_file: Path, tool: str) -> None:
    extra = ["--emit-c"] if tool == "byoc-translate" else []
    proc = run_tool(tool, model_file, *extra, "--input-shape", "x=2,three,4")
    assert proc.returncode == 1
    assert "--input-shape x=2,three,4: expected NAME=D0,D1,..." in proc.stderr
    assert "Traceback" not in proc.stderr
