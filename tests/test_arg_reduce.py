"""relay.argmax / argmin against numpy on both exits (floats with NaN and ties,
integers, bools; one or several axes, keepdims, select_last_index), and ONNX
ArgMax/ArgMin against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import byoc
from byoc.frontend.parse import parse_text

TEXT = """
func.func @main(%a: tensor<3x5xf32>, %b: tensor<2x3x4xi8>, %c: tensor<4x3xi1>, %d: tensor<2x6xui16>)
    -> (tensor<3xi32>, tensor<3x1xi32>, tensor<5xi32>, tensor<2xi32>, tensor<2x1x4xi32>, tensor<3xi32>, tensor<i32>, tensor<2xi32>, tensor<6xi32>) {
  %0 = relay.argmax %a {axis = array<i64: 1>} : (tensor<3x5xf32>) -> tensor<3xi32>
  %1 = relay.argmin %a {axis = array<i64: -1>, keepdims = true, select_last_index = true} : (tensor<3x5xf32>) -> tensor<3x1xi32>
  %2 = relay.argmax %a {axis = array<i64: 0>, select_last_index = true} : (tensor<3x5xf32>) -> tensor<5xi32>
  %3 = relay.argmin %b {axis = array<i64: 1, 2>} : (tensor<2x3x4xi8>) -> tensor<2xi32>
  %4 = relay.argmax %b {axis = array<i64: 1>, keepdims = true} : (tensor<2x3x4xi8>) -> tensor<2x1x4xi32>
  %5 = relay.argmax %c {axis = array<i64: 0>} : (tensor<4x3xi1>) -> tensor<3xi32>
  %6 = relay.argmin %a : (tensor<3x5xf32>) -> tensor<i32>
  %7 = relay.argmax %d {axis = array<i64: 1>, select_last_index = true} : (tensor<2x6xui16>) -> tensor<2xi32>
  %8 = relay.argmin %d {axis = array<i64: 1>, exclude = true} : (tensor<2x6xui16>) -> tensor<6xi32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3xi32>, tensor<3x1xi32>, tensor<5xi32>, tensor<2xi32>, tensor<2x1x4xi32>, tensor<3xi32>, tensor<i32>, tensor<2xi32>, tensor<6xi32>
}
"""


def inputs() -> list[np.ndarray]:
    nan, inf = np.nan, np.inf
    a = np.array(
        [[1, nan, 3, nan, 3], [2, 2, -1, -1, 2], [-inf, -inf, -inf, 0, 0]], np.float32
    )
    b = np.random.default_rng(0).integers(-128, 128, (2, 3, 4)).astype(np.int8)
    b[1, 2, 3] = b[1, 0, 0] = -128  # a tie at the type's smallest value
    c = np.array([[0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 0]], bool)
    d = np.array([[65535, 3, 65535, 0, 7, 0], [1, 1, 1, 1, 1, 1]], np.uint16)
    return [a, b, c, d]


def last(find, x: np.ndarray, axis: int) -> np.ndarray:
    """numpy's arg-extreme keeping the last of equal extremes."""
    return x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis)


def expected(a, b, c, d) -> list[np.ndarray]:
    want = [
        np.argmax(a, 1),
        last(np.argmin, a, 1)[:, None],
        last(np.argmax, a, 0),
        np.argmin(b.reshape(2, 12), 1),
        np.argmax(b, 1)[:, None],
        np.argmax(c, 0),
        np.argmin(a),
        last(np.argmax, d, 1),
        np.argmin(d, 0),
    ]
    return [np.asarray(w, np.int32) for w in want]


def assert_same(got, want) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"result {i}")


def test_reference_matches_numpy() -> None:
    args = inputs()
    assert_same(byoc.run_reference(parse_text(TEXT), args), expected(*args))


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_compiled_matches_numpy(targets) -> None:
    args = inputs()
    assert_same(byoc.compile(TEXT, targets=targets)(*args), expected(*args))


def onnx_model(op_type: str, **attrs: int) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "arg",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(
    "attrs",
    [{}, {"axis": -1, "keepdims": 0}, {"axis": 1, "select_last_index": 1}],
    ids=["default", "last-axis-dropped", "select-last"],
)
def test_onnx_matches_onnxruntime(op_type, attrs) -> None:
    ort = pytest.importorskip("onnxruntime")
    ort.set_default_logger_severity(3)
    model = onnx_model(op_type, **attrs)
    # Small integers: ties everywhere, so the first/last choice is tested.
    x = np.random.default_rng(1).integers(-2, 3, (3, 4, 5)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    for targets in ([], ["ccompiler"]):
        got = byoc.compile(model, targets=targets)(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
