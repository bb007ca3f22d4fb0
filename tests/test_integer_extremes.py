"""Maxima and minima of integers and bools: relay.maximum / minimum (ONNX Max,
Min) and the reductions relay.max / min (ReduceMax, ReduceMin; of bools: any,
all) in the reference and on both exits, signed and unsigned at the edges of
their types; arithmetic on integers stays refused."""

from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import parse_text

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

EXTREMES = """
func.func @main(%a: tensor<3x4xi32>, %b: tensor<4xi32>, %c: tensor<2x3xui8>, %d: tensor<2x3xui8>,
                %e: tensor<2x3xi8>, %f: tensor<2x3xi64>, %g: tensor<3x4xi1>, %h: tensor<2x3x2xi16>)
    -> (tensor<3x4xi32>, tensor<2x3xui8>, tensor<2x3xi8>, tensor<2x3xi64>, tensor<1x4xi1>, tensor<3xi1>,
        tensor<2x1x2xi16>, tensor<ui8>, tensor<2xi8>, tensor<2x3xui8>) {
  %0 = relay.maximum %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  %1 = relay.minimum %c, %d : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xui8>
  %2 = relay.maximum %e, %e : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<2x3xi8>
  %3 = relay.minimum %f, %f : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %4 = relay.max %g {axis = array<i64: 0>, keepdims = true} : (tensor<3x4xi1>) -> tensor<1x4xi1>
  %5 = relay.min %g {axis = array<i64: 1>} : (tensor<3x4xi1>) -> tensor<3xi1>
  %6 = relay.max %h {axis = array<i64: 1>, keepdims = true} : (tensor<2x3x2xi16>) -> tensor<2x1x2xi16>
  %7 = relay.min %c : (tensor<2x3xui8>) -> tensor<ui8>
  %8 = relay.min %e {axis = array<i64: 0>, exclude = true} : (tensor<2x3xi8>) -> tensor<2xi8>
  %9 = relay.maximum %c, %d : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xui8>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<3x4xi32>, tensor<2x3xui8>, tensor<2x3xi8>, tensor<2x3xi64>, tensor<1x4xi1>, tensor<3xi1>, tensor<2x1x2xi16>, tensor<ui8>, tensor<2xi8>, tensor<2x3xui8>
}
"""


def extremes_args() -> list[np.ndarray]:
    rng = np.random.default_rng(0)

    def spread(dtype, shape):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        x.flat[:2] = info.min, info.max  # the edges: a signed compare of ui8 gets 255 wrong
        return x

    g = np.array([[0, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]], bool)
    return [
        spread(np.int32, (3, 4)),
        spread(np.int32, (4,)),
        spread(np.uint8, (2, 3)),
        spread(np.uint8, (2, 3))[::-1].copy(),
        spread(np.int8, (2, 3)),
        spread(np.int64, (2, 3)),
        g,
        spread(np.int16, (2, 3, 2)),
    ]


def extremes_want(a, b, c, d, e, f, g, h) -> list[np.ndarray]:
    return [
        np.maximum(a, b),
        np.minimum(c, d),
        e,
        f,
        g.any(axis=0, keepdims=True),
        g.all(axis=1),
        h.max(axis=1, keepdims=True),
        np.asarray(c.min()),
        e.min(axis=1),
        np.maximum(c, d),
    ]


def assert_equal(got, want) -> None:
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"output {i}: {g.dtype} != {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_reference_takes_extremes_of_integers_and_bools() -> None:
    args = extremes_args()
    assert_equal(byoc.run_reference(parse_text(EXTREMES), args), extremes_want(*args))


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_compiled_extremes_of_integers_and_bools(targets) -> None:
    args = extremes_args()
    assert_equal(byoc.compile(EXTREMES, targets=targets)(*args), extremes_want(*args))


def test_empty_integer_reduction_is_the_identity() -> None:
    text = """
func.func @main(%a: tensor<0x3xi8>, %b: tensor<2x0xi1>) -> (tensor<3xi8>, tensor<2xi1>, tensor<2xi1>) {
  %0 = relay.max %a {axis = array<i64: 0>} : (tensor<0x3xi8>) -> tensor<3xi8>
  %1 = relay.max %b {axis = array<i64: 1>} : (tensor<2x0xi1>) -> tensor<2xi1>
  %2 = relay.min %b {axis = array<i64: 1>} : (tensor<2x0xi1>) -> tensor<2xi1>
  func.return %0, %1, %2 : tensor<3xi8>, tensor<2xi1>, tensor<2xi1>
}
"""
    args = [np.zeros((0, 3), np.int8), np.zeros((2, 0), bool)]
    want = [np.full(3, -128, np.int8), np.zeros(2, bool), np.ones(2, bool)]
    assert_equal(byoc.run_reference(parse_text(text), args), want)
    assert_equal(byoc.compile(text, targets=[])(*args), want)


@pytest.mark.parametrize(
    "line",
    [
        "%0 = relay.divide %a, %a : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>",
        "%0 = relay.sum %a : (tensor<3xi32>) -> tensor<i32>",
    ],
)
def test_integer_arithmetic_stays_refused(line: str) -> None:
    text = f"func.func @main(%a: tensor<3xi32>) {{\n  {line}\n  func.return\n}}"
    with pytest.raises(ByocError, match="must have a float element type, got i32"):
        parse_text(text)


def test_maximum_refuses_mixed_element_types() -> None:
    text = """
func.func @main(%a: tensor<3xi32>, %b: tensor<3xi64>) {
  %0 = relay.maximum %a, %b : (tensor<3xi32>, tensor<3xi64>) -> tensor<3xi32>
  func.return
}
"""
    with pytest.raises(ByocError, match="operands have different element types i32 and i64"):
        parse_text(text)


# --- ONNX -----------------------------------------------------------------------------


def onnx_extremes(dtype: int) -> onnx.ModelProto:
    """Variadic Max and Min, ReduceMax and ReduceMin of one integer type."""
    N = helper.make_node
    nodes = [
        N("Max", ["a", "b", "c"], ["max"]),
        N("Min", ["a", "b"], ["min"]),
        N("ReduceMax", ["a", "axes"], ["rmax"], keepdims=0),
        N("ReduceMin", ["a"], ["rmin"]),
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "extremes",
        [value("a", dtype, [2, 3]), value("b", dtype, [3]), value("c", dtype, [2, 1])],
        [value(n, dtype, None) for n in ("max", "min", "rmax", "rmin")],
        initializer=[helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize(
    "dtype, np_dtype",
    [(TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.UINT8, np.uint8), (TensorProto.INT8, np.int8)],
    ids=["int32", "int64", "uint8", "int8"],
)
def test_onnx_integer_extremes_match_onnxruntime(dtype: int, np_dtype) -> None:
    model = onnx_extremes(dtype)
    rng = np.random.default_rng(1)
    info = np.iinfo(np_dtype)
    inputs = [rng.integers(info.min, info.max, s, dtype=np_dtype, endpoint=True) for s in ((2, 3), (3,), (2, 1))]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, dict(zip("abc", inputs)))
    for targets in ([], ["ccompiler"]):
        assert_equal(byoc.compile(model, targets=targets)(*inputs), want)
