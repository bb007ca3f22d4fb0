"""Folding at import (frontend/onnx/fold.py): shape computation and everything
else known at import is evaluated with numpy and never reaches the relay IR;
each folder agrees with onnxruntime."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_import import (  # noqa: E402
    assert_all_close,
    make_model,
    random,
    run_onnxruntime,
)

import byoc  # noqa: E402
from byoc.dialects import relay  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402
from byoc.frontend.onnx import from_onnx  # noqa: E402

N = helper.make_node
I64 = np.int64


def relay_ops(module) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, relay.RelayOp)]


def check(model: onnx.ModelProto, inputs: dict[str, np.ndarray], compile: bool = False):
    """Import `model`, compare the reference (and the host, if `compile`) with
    onnxruntime; returns the module."""
    module = from_onnx(model)
    want = run_onnxruntime(model, inputs)
    got = byoc.run_reference(module, list(inputs.values()))
    assert_all_close(got, want, "reference")
    if compile:
        compiled = byoc.compile(module, targets=[])
        out = compiled(*inputs.values())
        assert_all_close(list(out) if isinstance(out, tuple) else [out], want, "host")
    return module


# --- Shape chains -----------------------------------------------------------------


def test_int64_shape_chain_folds_into_one_reshape() -> None:
    """PyTorch's `x.view(x.size(0), -1)`: Shape, Gather, Unsqueeze, Concat."""
    nodes = [
        N("Shape", ["x"], ["s"]),
        N("Gather", ["s", "zero"], ["n"], axis=0),
        N("Unsqueeze", ["n", "axes0"], ["n1"]),
        N("Concat", ["n1", "minus1"], ["shape"], axis=0),
        N("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {"zero": np.array(0, I64), "axes0": np.array([0], I64), "minus1": np.array([-1], I64)}
    model = make_model(nodes, {"x": (2, 3, 4)}, ["y"], inits)
    module = check(model, {"x": random((2, 3, 4))}, compile=True)
    assert relay_ops(module) == ["relay.reshape"]


def test_a_long_shape_chain_with_ranges_casts_and_comparisons() -> None:
    """Range, Cast, Equal, Where, ConstantOfShape, Expand, Slice, ReduceProd,
    Squeeze, Mul, Sub and Div on shapes, as exporters write them."""
    nodes = [
        N("Shape", ["x"], ["s"]),  # [2, 3, 4]
        N("Slice", ["s", "one", "big"], ["tail"]),  # [3, 4]
        N("ReduceProd", ["tail"], ["p"], keepdims=1),  # [12]
        N("Shape", ["s"], ["rank"]),  # [3]
        N("ConstantOfShape", ["rank"], ["ones"], value=numpy_helper.from_array(np.array([1], I64))),
        N("Range", ["zero_s", "three_s", "one_s"], ["r"]),  # [0, 1, 2]
        N("Equal", ["r", "zero_v"], ["is0"]),  # [T, F, F]
        N("Where", ["is0", "s", "ones"], ["picked"]),  # [2, 1, 1]
        N("Cast", ["picked"], ["pf"], to=TensorProto.FLOAT),
        N("Cast", ["pf"], ["pi"], to=TensorProto.INT64),
        N("Slice", ["pi", "zero", "one"], ["n"]),  # [2]
        N("Mul", ["p", "two"], ["p2"]),  # [24]
        N("Div", ["p2", "two"], ["p3"]),  # [12]
        N("Sub", ["p3", "zero"], ["p4"]),  # [12]
        N("Concat", ["n", "p4"], ["shape"], axis=0),
        N("Reshape", ["x", "shape"], ["flat"]),
        N("Expand", ["bias", "shape"], ["b"]),  # [2, 12]
        N("Add", ["flat", "b"], ["y"]),
    ]
    inits = {
        "one": np.array([1], I64),
        "big": np.array([2**62], I64),
        "zero": np.array([0], I64),
        "two": np.array([2], I64),
        "zero_s": np.array(0, I64),
        "three_s": np.array(3, I64),
        "one_s": np.array(1, I64),
        "zero_v": np.array([0], I64),
        "bias": random((12,), seed=3),
    }
    model = make_model(nodes, {"x": (2, 3, 4)}, ["y"], inits)
    module = check(model, {"x": random((2, 3, 4))}, compile=True)
    assert sorted(relay_ops(module)) == ["relay.add", "relay.constant", "relay.reshape"]


def test_constant_of_shape_builds_a_float_weight() -> None:
    """The light models' weights: ConstantOfShape of an int64 initializer."""
    fill = numpy_helper.from_array(np.array([0.25], np.float32))
    nodes = [
        N("ConstantOfShape", ["wshape"], ["w"], value=fill),
        N("ConstantOfShape", ["bshape"], ["b"]),  # default: float32 zeros
        N("MatMul", ["x", "w"], ["m"]),
        N("Add", ["m", "b"], ["y"]),
    ]
    inits = {"wshape": np.array([4, 3], I64), "bshape": np.array([3], I64)}
    model = make_model(nodes, {"x": (2, 4)}, ["y"], inits)
    module = check(model, {"x": random((2, 4))})
    weights = [op for op in module.walk() if isinstance(op, relay.ConstantOp)]
    assert {w.to_numpy().dtype for w in weights} == {np.dtype(np.float32)}
    assert "ConstantOfShape" not in str(module)


def test_folded_shapes_match_onnx_shape_inference() -> None:
    """A folded value is checked against ONNX's inferred shape like any other."""
    nodes = [N("Shape", ["x"], ["s"], start=1), N("Reshape", ["x", "s2"], ["y"])]
    model = make_model(nodes, {"x": (2, 3)}, ["y"], {"s2": np.array([3, 2], I64)})
    check(model, {"x": random((2, 3))})


# --- Each folder against onnxruntime ------------------------------------------------

FOLD_CASES: list[tuple[str, list, dict[str, np.ndarray]]] = [
    ("shape-start-end", [N("Shape", ["a"], ["o"], start=-2, end=10)], {"a": random((2, 3, 4))}),
    ("size", [N("Size", ["a"], ["o"])], {"a": random((2, 3, 4))}),
    ("range-float", [N("Range", ["a", "b", "c"], ["o"])],
     {"a": np.array(1.0, np.float32), "b": np.array(4.0, np.float32), "c": np.array(0.75, np.float32)}),
    ("range-negative", [N("Range", ["a", "b", "c"], ["o"])],
     {"a": np.array(10, I64), "b": np.array(1, I64), "c": np.array(-3, I64)}),
    ("range-empty", [N("Range", ["a", "b", "c"], ["o"])],
     {"a": np.array(5, I64), "b": np.array(1, I64), "c": np.array(2, I64)}),
    ("gather-axis1-negative", [N("Gather", ["a", "i"], ["o"], axis=1)],
     {"a": random((3, 4)), "i": np.array([[-1, 0], [2, 2]], I64)}),
    ("gather-scalar", [N("Gather", ["a", "i"], ["o"])], {"a": np.arange(5, dtype=I64), "i": np.array(-2, I64)}),
    ("slice-negative-step", [N("Slice", ["a", "s", "e", "ax", "st"], ["o"])],
     {"a": random((4, 5)), "s": np.array([-1, 4], I64), "e": np.array([-2**63, 0], I64),
      "ax": np.array([0, 1], I64), "st": np.array([-1, -2], I64)}),
    ("slice-clamped", [N("Slice", ["a", "s", "e"], ["o"])],
     {"a": random((4, 5)), "s": np.array([1, -100], I64), "e": np.array([100, -1], I64)}),
    ("unsqueeze-two", [N("Unsqueeze", ["a", "ax"], ["o"])], {"a": random((3,)), "ax": np.array([0, -1], I64)}),
    ("squeeze-all", [N("Squeeze", ["a"], ["o"])], {"a": random((1, 3, 1))}),
    ("concat-neg-axis", [N("Concat", ["a", "b"], ["o"], axis=-1)], {"a": random((2, 1)), "b": random((2, 3))}),
    ("expand-bidirectional", [N("Expand", ["a", "s"], ["o"])], {"a": random((3, 1)), "s": np.array([2, 1, 4], I64)}),
    ("tile", [N("Tile", ["a", "r"], ["o"])], {"a": random((2, 3)), "r": np.array([2, 1], I64)}),
    ("transpose", [N("Transpose", ["a"], ["o"], perm=[1, 0, 2])], {"a": random((2, 3, 4))}),
    ("flatten", [N("Flatten", ["a"], ["o"], axis=2)], {"a": random((2, 3, 4))}),
    ("reshape-zero", [N("Reshape", ["a", "s"], ["o"])], {"a": random((2, 3, 4)), "s": np.array([0, -1], I64)}),
    ("cast-float-to-int", [N("Cast", ["a"], ["o"], to=TensorProto.INT32)],
     {"a": np.array([-2.7, -0.5, 0.5, 2.7], np.float32)}),
    ("cast-int-to-bool", [N("Cast", ["a"], ["o"], to=TensorProto.BOOL)], {"a": np.array([0, 3, -1], I64)}),
    ("div-int-truncates", [N("Div", ["a", "b"], ["o"])], {"a": np.array([7, -7, 7, -7], I64), "b": np.array([2, 2, -2, -2], I64)}),
    ("mod", [N("Mod", ["a", "b"], ["o"])], {"a": np.array([7, -7, 7, -7], I64), "b": np.array([3, 3, -3, -3], I64)}),
    ("fmod", [N("Mod", ["a", "b"], ["o"], fmod=1)], {"a": np.array([7, -7, 7, -7], I64), "b": np.array([3, 3, -3, -3], I64)}),
    ("mul-broadcast", [N("Mul", ["a", "b"], ["o"])], {"a": random((2, 3)), "b": random((3,), 1)}),
    ("pow-int-exponent", [N("Pow", ["a", "b"], ["o"])], {"a": random((4,)), "b": np.array(2, I64)}),
    ("less", [N("Less", ["a", "b"], ["o"])], {"a": np.array([1, 5, 3], I64), "b": np.array([2, 2, 3], I64)}),
    ("greater-or-equal", [N("GreaterOrEqual", ["a", "b"], ["o"])], {"a": np.array([1, 5, 3], I64), "b": np.array([2, 2, 3], I64)}),
    ("and-not", [N("Not", ["a"], ["n"]), N("And", ["n", "b"], ["o"])],
     {"a": np.array([True, False, True]), "b": np.array([True, True, False])}),
    ("where", [N("Where", ["c", "a", "b"], ["o"])],
     {"c": np.array([True, False, True]), "a": random((2, 3)), "b": random((3,), 1)}),
    ("max-three", [N("Max", ["a", "b", "c"], ["o"])], {"a": random((3,)), "b": random((3,), 1), "c": random((1,), 2)}),
    ("mean", [N("Mean", ["a", "b"], ["o"])], {"a": random((3,)), "b": random((3,), 1)}),
    ("reduce-sum-axes", [N("ReduceSum", ["a", "ax"], ["o"], keepdims=0)], {"a": random((2, 3, 4)), "ax": np.array([0, 2], I64)}),
    ("reduce-max", [N("ReduceMax", ["a"], ["o"])], {"a": random((2, 3))}),
    ("split", [N("Split", ["a", "sp"], ["o", "o2"], axis=1)], {"a": random((2, 5)), "sp": np.array([2, 3], I64)}),
    ("floor-ceil-round", [N("Floor", ["a"], ["f"]), N("Ceil", ["f"], ["c"]), N("Round", ["a"], ["r"]), N("Add", ["c", "r"], ["o"])],
     {"a": np.array([-1.5, -0.5, 0.5, 1.5, 2.5], np.float32)}),
    ("nonzero", [N("NonZero", ["a"], ["o"])], {"a": np.array([[1, 0], [0, 3]], I64)}),
]


@pytest.mark.parametrize(("nodes", "constants"), [c[1:] for c in FOLD_CASES], ids=[c[0] for c in FOLD_CASES])
def test_folder_matches_onnxruntime(nodes: list, constants: dict[str, np.ndarray]) -> None:
    """Each folded output equals onnxruntime's (run on the same constants as
    model inputs), dtype included. Shape/Size read a relay value's shape."""
    reads_shape = nodes[0].op_type in ("Shape", "Size")
    outputs = [o for n in nodes[-1:] for o in n.output]
    graph_inputs = {k: v for k, v in constants.items()} if not reads_shape else constants
    inits = {} if reads_shape else constants
    # The same graph twice: with the constants as initializers (byoc folds
    # them) and as inputs (onnxruntime computes them).
    folded = _model(nodes, {} if not reads_shape else graph_inputs, outputs, inits)
    computed = _model(nodes, graph_inputs, outputs, {})
    want = run_onnxruntime(computed, graph_inputs)
    importer = _importer(folded)
    for name, w in zip(outputs, want):
        got = importer.constants[name]
        assert got.dtype == w.dtype, f"{name}: {got.dtype} != {w.dtype}"
        if got.dtype.kind == "f":  # sums may round differently
            np.testing.assert_allclose(got, w, rtol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got, w, err_msg=name)


def _model(nodes, inputs: dict[str, np.ndarray], outputs: Sequence[str], inits):
    graph = helper.make_graph(
        list(nodes),
        "fold",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in inputs.items()
        ],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)  # types the outputs


def _importer(model: onnx.ModelProto):
    """The graph importer after walking `model` (its `constants` hold the folds)."""
    from byoc.frontend.onnx import CONVERTERS, fold
    from byoc.frontend.onnx.graph import GraphImporter
    from byoc.frontend.onnx.loader import _infer_shapes

    importer = GraphImporter(_infer_shapes(model, "m"), "m", CONVERTERS, fold)
    try:
        importer.run()
    except ByocError:
        pass  # non-float graph outputs are refused after the walk; the folds are in
    return importer


# --- Dropout, unsupported and unfoldable nodes ---------------------------------------


def test_dropout_with_an_unused_mask_imports() -> None:
    nodes = [N("Dropout", ["x"], ["d", "mask"], name="drop"), N("Relu", ["d"], ["y"])]
    model = make_model(nodes, {"x": (2, 3)}, ["y"])
    module = check(model, {"x": random((2, 3))})
    assert relay_ops(module) == ["relay.nn.relu"]


def test_dropout_with_a_used_mask_gives_an_all_true_mask() -> None:
    nodes = [N("Dropout", ["x", "r"], ["y", "mask"], name="drop")]
    model = make_model(nodes, {"x": (2, 3)}, ["y", "mask"], {"r": np.array(0.5, np.float32)})
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.BOOL
    check(model, {"x": random((2, 3))}, compile=True)


def test_dropout_in_training_mode_names_the_node() -> None:
    nodes = [N("Dropout", ["x", "r", "t"], ["y"], name="drop")]
    inits = {"r": np.array(0.5, np.float32), "t": np.array(True)}
    model = make_model(nodes, {"x": (2, 3)}, ["y"], inits)
    with pytest.raises(ByocError, match=r"node 'drop' \(Dropout\): training_mode=true is not supported"):
        from_onnx(model)


def test_nodes_that_fold_only_are_unsupported_on_runtime_values() -> None:
    """NonZero and Range fold; on values computed at run time they are listed
    with the other unsupported nodes, all at once."""
    nodes = [
        N("NonZero", ["x"], ["nz"], name="nz"),
        N("Shape", ["x"], ["s"], name="shape_ok"),
        N("Range", ["n", "n", "n"], ["r"], name="range_rt"),
        N("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"], name="dql"),
        N("Relu", ["x"], ["y"]),
    ]
    model = make_model(nodes, {"x": (2, 3), "n": ()}, ["y"])
    with pytest.raises(ByocError) as err:
        from_onnx(model)
    assert str(err.value) == (
        "error: <onnx model>: 3 unsupported ONNX nodes: 'nz' (NonZero), "
        "'range_rt' (Range), 'dql' (DynamicQuantizeLinear)"
    )


def test_a_fold_that_fails_names_the_node() -> None:
    nodes = [N("Gather", ["k", "i"], ["g"], name="bad_gather"), N("Add", ["x", "g"], ["y"])]
    inits = {"k": random((4,)), "i": np.array([5], I64)}
    model = make_model(nodes, {"x": (2, 1)}, ["y"], inits)
    # onnx's shape inference does not check the indices; the fold does.
    with pytest.raises(ByocError, match=r"node 'bad_gather' \(Gather\): .*out of range"):
        from_onnx(model)


def test_a_light_model_imports_and_matches_its_shipped_output() -> None:
    """SqueezeNet: ConstantOfShape weights and a Dropout with an unused mask."""
    import real_models

    model = onnx.load(str(real_models.light_model_path("squeezenet")))
    module = from_onnx(model)
    got = byoc.run_reference(module, real_models.runner_inputs(model))
    np.testing.assert_allclose(got[0], real_models.light_model_output("squeezenet"), rtol=1e-4, atol=1e-6)
