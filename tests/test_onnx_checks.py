"""frontend/onnx/checks.py: what onnx.checker refuses is one located ByocError
(naming the node) before any converter runs, and odd but valid names import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import AttributeProto, TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.onnx import from_onnx  # noqa: E402

BIN = Path(sys.executable).parent


def model(nodes, inputs=None, outputs=("y",), initializers=None, opset=17):
    inputs = inputs or {"x": [1, 2, 8, 8]}
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a, np.float32), n) for n, a in (initializers or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def with_attribute(node, name, value, kind=None):
    attribute = helper.make_attribute(name, value, attr_type=kind)
    node.attribute.append(attribute)
    return node


def relu(x="x", y="y", name="r"):
    return helper.make_node("Relu", [x], [y], name=name)


def pool(**attrs):
    return helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], **attrs)


def reduce_mean(**attrs):
    return helper.make_node("ReduceMean", ["x"], ["y"], name="mean", **attrs)


BAD = {
    "value defined twice": (
        model([relu("x", "t", "a"), relu("x", "t", "b"), relu("t", "y", "c")]),
        "node 'b' (Relu): output 't' is already defined",
    ),
    "output shadows an input": (model([relu("x", "x", "a"), relu("x", "y", "b")]), "node 'a' (Relu): output 'x' is already defined"),
    "used before defined": (
        model([relu("t", "y", "a"), relu("x", "t", "b")]),
        "node 'a' (Relu): input 't' is not defined before this node",
    ),
    "graph output undefined": (model([relu()], outputs=("y", "z")), "the graph: graph output 'z' is not defined"),
    "unknown attribute": (
        model([with_attribute(relu(), "alpha", 0.5)]),
        "node 'r' (Relu): Relu-14 has no attribute 'alpha'",
    ),
    "attribute twice": (
        model([with_attribute(pool(), "kernel_shape", [2, 2])]),
        "node 'pool' (AveragePool): attribute 'kernel_shape' is given twice",
    ),
    "float strides": (
        model([with_attribute(pool(), "strides", [1.5, 1.5])]),
        "node 'pool' (AveragePool): attribute 'strides' is FLOATS; AveragePool-11 takes INTS",
    ),
    "zero strides": (model([pool(strides=[0, 1])]), "attribute 'strides' is [0, 1]; each must be >= 1"),
    "negative pads": (model([pool(pads=[-1, 0, 0, 0])]), "attribute 'pads' is [-1, 0, 0, 0]; each must be >= 0"),
    "bad auto_pad": (model([pool(auto_pad="SAME")]), "attribute 'auto_pad' is 'SAME'; it must be one of"),
    "float axes": (
        model([with_attribute(reduce_mean(), "axes", [1.0])], opset=13),
        "node 'mean' (ReduceMean): attribute 'axes' is FLOATS; ReduceMean-13 takes INTS",
    ),
    "noop_with_empty_axes out of range": (
        model([reduce_mean(noop_with_empty_axes=2)], opset=18),
        "node 'mean' (ReduceMean): attribute 'noop_with_empty_axes' is 2; it must be 0 or 1",
    ),
    "keepdims out of range": (model([reduce_mean(keepdims=-1)], opset=18), "attribute 'keepdims' is -1; it must be 0 or 1"),
    "missing required attribute": (
        model([helper.make_node("MaxPool", ["x"], ["y"], name="mp")]),
        "node 'mp' (MaxPool): MaxPool-12 requires attribute 'kernel_shape'",
    ),
    "too many inputs": (model([helper.make_node("Relu", ["x", "x"], ["y"], name="r")]), "node 'r' (Relu): has 2 inputs; Relu-14 takes 1"),
    "non-scalar Clip bound": (
        model(
            [helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")],
            initializers={"lo": np.zeros((2,))},
        ),
        "node 'clip' (Clip): input 1 ('lo') has shape [2]; it must be a scalar",
    ),
    "non-scalar Clip bound from a Constant": (
        model(
            [
                helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.ones((2, 2), np.float32))),
                helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip"),
            ]
        ),
        "node 'clip' (Clip): input 2 ('hi') has shape [2, 2]; it must be a scalar",
    ),
}


def _mistyped_attribute() -> onnx.ModelProto:
    """A declared INT attribute that holds a float value instead."""
    node = reduce_mean()
    attribute = AttributeProto(name="keepdims", type=AttributeProto.INT, f=1.0)
    node.attribute.append(attribute)
    return model([node], opset=18)


BAD["value in the wrong field"] = (_mistyped_attribute(), "attribute 'keepdims' must hold one i value and nothing else (it also sets f)")


@pytest.mark.parametrize("case", sorted(BAD))
def test_invalid_model_is_a_located_error(case):
    proto, message = BAD[case]
    with pytest.raises(byoc.ByocError) as err:
        from_onnx(proto)
    assert str(err.value).startswith("error: <onnx model>: ")
    assert message in str(err.value)


@pytest.mark.parametrize("case", ["value defined twice", "float strides", "noop_with_empty_axes out of range"])
def test_invalid_model_fails_cleanly_from_the_command_line(case, tmp_path):
    proto, message = BAD[case]
    path = tmp_path / "bad.onnx"
    onnx.save(proto, str(path))
    for tool in ("byoc-import", "byoc-run"):
        proc = subprocess.run([str(BIN / tool), str(path)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"error: {path}: " in proc.stderr and message in proc.stderr
        assert "Traceback" not in proc.stderr


def test_valid_models_pass_the_checks():
    """What onnx.checker accepts, the checks accept (its own test models)."""
    from onnx.backend.test import __file__ as backend_tests

    from byoc.frontend.onnx.checks import check_model, check_scalar_inputs

    paths = sorted(Path(backend_tests).parent.joinpath("data").rglob("model.onnx"))
    assert paths
    for path in paths:
        proto = onnx.load(str(path), load_external_data=False)
        onnx.checker.check_model(proto)
        check_model(proto, str(path))
        check_scalar_inputs(proto, str(path))


@pytest.mark.parametrize("name", ["_5", "{2", "}1", " 4", "é", "9", "x_1", "a.b-c$"])
def test_any_onnx_name_imports_and_runs(name):
    proto = model([relu(name, "t"), relu("t", name + "out")], inputs={name: [4]}, outputs=(name + "out",))
    compiled = byoc.compile(proto, targets=["ccompiler"], cache=False)
    x = np.array([-1, 0, 1, 2], np.float32)
    np.testing.assert_array_equal(compiled(x), np.maximum(x, 0))
    text = str(from_onnx(proto))
    byoc.compile(text, targets=[], cache=False)  # the printed names parse back


def test_converter_failure_is_a_located_error(monkeypatch):
    """A converter meeting what it did not foresee names the node, not Python."""
    from byoc.frontend.onnx import registry

    def broken(node):
        return 1 // 0

    monkeypatch.setitem(registry.CONVERTERS, "Relu", broken)
    with pytest.raises(byoc.ByocError, match=r"node 'r' \(Relu\): cannot import this node \(ZeroDivisionError"):
        from_onnx(model([relu()]))
