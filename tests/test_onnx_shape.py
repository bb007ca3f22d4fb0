"""The ONNX shape and data-movement converters (frontend/onnx/shape.py):
Slice, Split, Tile, Expand, Pad, Where, Cast, CastLike, DepthToSpace,
SpaceToDepth, Resize and Upsample, each variant against onnxruntime in the
reference and compiled (all variants in one model per opset, so each
configuration compiles once)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.dialects import relay  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402
from byoc.frontend.onnx import from_onnx  # noqa: E402

N = helper.make_node
I64 = np.int64
rng = np.random.default_rng(0)


def floats(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@dataclass
class Case:
    id: str
    nodes: list
    inputs: dict[str, np.ndarray]
    outputs: list[str] = field(default_factory=lambda: ["y"])
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 19


X = floats(2, 3, 4, 5)
IMG = floats(1, 2, 4, 4)

CASES = [
    Case("slice", [N("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": X},
         initializers={"s": np.array([-1, 1], I64), "e": np.array([-100, 2**62], I64), "a": np.array([-1, 1], I64), "t": np.array([-2, 1], I64)}),
    Case("slice-no-axes", [N("Slice", ["x", "s", "e"], ["y"])], {"x": X},
         initializers={"s": np.array([1, 0], I64), "e": np.array([2, 2], I64)}),
    Case("slice-opset9", [N("Slice", ["x"], ["y"], starts=[0, 1], ends=[1, 100], axes=[0, 3])], {"x": X}, opset=9),
    Case("slice-int", [N("Slice", ["i", "s", "e"], ["y"])], {"i": np.arange(10, dtype=I64)},
         initializers={"s": np.array([2], I64), "e": np.array([-1], I64)}),
    Case("split-sizes", [N("Split", ["x", "sp"], ["y", "z"], axis=-1)], {"x": X}, ["y", "z"],
         initializers={"sp": np.array([2, 3], I64)}),
    Case("split-num-outputs", [N("Split", ["x"], ["y", "z", "w"], axis=3, num_outputs=3)], {"x": X}, ["y", "z", "w"], opset=18),
    Case("split-opset11", [N("Split", ["x"], ["y", "z"], axis=1, split=[1, 2])], {"x": X}, ["y", "z"], opset=11),
    Case("split-even", [N("Split", ["x"], ["y", "z"], axis=0)], {"x": X}, ["y", "z"], opset=13),
    Case("tile", [N("Tile", ["x", "r"], ["y"])], {"x": X[0]}, initializers={"r": np.array([2, 1, 3], I64)}),
    Case("expand", [N("Expand", ["x", "s"], ["y"])], {"x": floats(3, 1)}, initializers={"s": np.array([2, 1, 4], I64)}),
    Case("expand-same", [N("Expand", ["x", "s"], ["y"])], {"x": floats(3, 4)}, initializers={"s": np.array([1, 4], I64)}),
    Case("pad-constant", [N("Pad", ["x", "p", "v"], ["y"])], {"x": X[0]},
         initializers={"p": np.array([0, 1, 2, 1, 0, 3], I64), "v": np.array(2.5, np.float32)}),
    Case("pad-reflect", [N("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": X[0]},
         initializers={"p": np.array([0, 2, 3, 0, 1, 1], I64)}),
    Case("pad-edge-axes", [N("Pad", ["x", "p", "", "ax"], ["y"], mode="edge")], {"x": X[0]},
         initializers={"p": np.array([3, 1, 0, 2], I64), "ax": np.array([-1, 1], I64)}),
    Case("pad-negative", [N("Pad", ["x", "p"], ["y"])], {"x": X[0]},
         initializers={"p": np.array([0, -1, 2, 0, 1, -2], I64)}),
    Case("pad-opset2", [N("Pad", ["x"], ["y"], pads=[1, 0, 0, 2], value=-1.0)], {"x": X[0, 0]}, opset=2),
    Case("pad-int", [N("Pad", ["i", "p", "v"], ["y"])], {"i": np.arange(6, dtype=I64).reshape(2, 3)},
         initializers={"p": np.array([1, 0, 0, 1], I64), "v": np.array(-3, I64)}),
    Case("where", [N("Where", ["c", "x", "z"], ["y"])], {"c": X[0, 0] > 0, "x": X[0, 0], "z": floats(4, 1)}),
    Case("where-constant-mask", [N("Where", ["m", "x", "inf"], ["y"])], {"x": floats(4, 4)},
         initializers={"m": np.tril(np.ones((4, 4), bool)), "inf": np.array(-np.inf, np.float32)}),
    Case("cast-chain", [N("Cast", ["x"], ["d"], to=TensorProto.DOUBLE), N("Mul", ["d", "d"], ["d2"]),
                        N("Cast", ["d2"], ["y"], to=TensorProto.FLOAT)], {"x": X[0, 0]}),
    Case("cast-to-int", [N("Cast", ["x"], ["y"], to=TensorProto.INT64)], {"x": X[0, 0] * 10}),
    Case("cast-ids", [N("Cast", ["i"], ["i32"], to=TensorProto.INT32), N("Gather", ["t", "i32"], ["y"])],
         {"i": np.array([3, 0, -1], I64)}, initializers={"t": floats(5, 2)}),
    Case("cast-bool", [N("Cast", ["x"], ["xb"], to=TensorProto.BOOL), N("Cast", ["xb"], ["y"], to=TensorProto.FLOAT)],
         {"x": np.array([0.0, 1.5, -2.0, 0.0], np.float32)}),
    Case("cast-like", [N("CastLike", ["i", "x"], ["y"])], {"i": np.arange(4, dtype=I64), "x": X[0, 0, 0, :1]}),
    Case("depth-to-space", [N("DepthToSpace", ["x"], ["y"], blocksize=2)], {"x": floats(1, 8, 2, 3)}),
    Case("depth-to-space-crd", [N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": floats(2, 8, 3, 2)}),
    Case("space-to-depth", [N("SpaceToDepth", ["x"], ["y"], blocksize=2)], {"x": floats(1, 3, 4, 6)}),
    Case("resize-nearest-scales", [N("Resize", ["x", "", "sc"], ["y"], mode="nearest")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 2, 3], np.float32)}),
    Case("resize-nearest-sizes-down", [N("Resize", ["x", "", "", "sz"], ["y"], mode="nearest", nearest_mode="round_prefer_ceil")],
         {"x": floats(1, 1, 5, 7)}, initializers={"sz": np.array([1, 1, 3, 2], I64)}),
    Case("resize-nearest-floor-align", [N("Resize", ["x", "", "sc"], ["y"], mode="nearest", nearest_mode="floor",
                                          coordinate_transformation_mode="align_corners")],
         {"x": IMG}, initializers={"sc": np.array([1, 1, 1.5, 2.5], np.float32)}),
    Case("resize-nearest-ceil-asymmetric", [N("Resize", ["x", "", "sc"], ["y"], mode="nearest", nearest_mode="ceil",
                                              coordinate_transformation_mode="asymmetric")],
         {"x": IMG}, initializers={"sc": np.array([1, 1, 1.7, 0.6], np.float32)}),
    Case("resize-linear-half-pixel", [N("Resize", ["x", "", "sc"], ["y"], mode="linear")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 1.5, 0.8], np.float32)}),
    Case("resize-linear-pytorch-sizes", [N("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                                           coordinate_transformation_mode="pytorch_half_pixel")],
         {"x": IMG}, initializers={"sz": np.array([1, 2, 1, 7], I64)}),
    Case("resize-linear-align-corners", [N("Resize", ["x", "", "sc"], ["y"], mode="linear",
                                           coordinate_transformation_mode="align_corners")],
         {"x": IMG}, initializers={"sc": np.array([1, 1, 2, 2], np.float32)}),
    Case("resize-linear-axes", [N("Resize", ["x", "", "sc"], ["y"], mode="linear", axes=[3, 2])], {"x": IMG},
         initializers={"sc": np.array([2, 0.5], np.float32)}),
    Case("resize-linear-keep-ratio", [N("Resize", ["x", "", "", "sz"], ["y"], mode="linear", axes=[2, 3],
                                        keep_aspect_ratio_policy="not_larger")],
         {"x": IMG}, initializers={"sz": np.array([7, 9], I64)}),
    Case("resize-cubic", [N("Resize", ["x", "", "sc"], ["y"], mode="cubic")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 2, 1.5], np.float32)}),
    Case("resize-cubic-exclude", [N("Resize", ["x", "", "sc"], ["y"], mode="cubic", exclude_outside=1,
                                    cubic_coeff_a=-0.5, coordinate_transformation_mode="asymmetric")],
         {"x": IMG}, initializers={"sc": np.array([1, 1, 0.8, 0.75], np.float32)}),
    Case("resize-crop", [N("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear",
                           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0)],
         {"x": IMG}, initializers={"roi": np.array([0, 0, -0.2, 0.4, 1, 1, 0.6, 1.2], np.float32),
                                   "sz": np.array([1, 2, 3, 3], I64)}),
    Case("resize-opset10", [N("Resize", ["x", "sc"], ["y"], mode="nearest")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 2, 2], np.float32)}, opset=10),
    Case("upsample-nearest", [N("Upsample", ["x", "sc"], ["y"], mode="nearest")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 2, 3], np.float32)}, opset=9),
    Case("upsample-linear", [N("Upsample", ["x", "sc"], ["y"], mode="linear")], {"x": IMG},
         initializers={"sc": np.array([1, 1, 2, 2], np.float32)}, opset=9),
    Case("resize-3d-input", [N("Resize", ["x", "", "sc"], ["y"], mode="nearest")], {"x": floats(2, 3, 4)},
         initializers={"sc": np.array([1, 2, 2], np.float32)}),
]


def model_of(cases: list[Case], opset: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One model holding every case (tensor names prefixed by the case number)."""
    nodes, inputs, outputs, initializers, feeds = [], [], [], [], {}
    for k, case in enumerate(cases):
        def rename(name: str, k: int = k) -> str:
            return f"c{k}_{name}" if name else ""
        for node in case.nodes:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.input[:] = [rename(n) for n in node.input]
            copy.output[:] = [rename(n) for n in node.output]
            copy.name = f"{case.id}/{len(nodes)}"
            nodes.append(copy)
        for name, array in case.inputs.items():
            inputs.append(helper.make_tensor_value_info(
                rename(name), helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
            feeds[rename(name)] = array
        outputs += [helper.make_empty_tensor_value_info(rename(o)) for o in case.outputs]
        initializers += [numpy_helper.from_array(a, rename(n)) for n, a in case.initializers.items()]
    graph = helper.make_graph(nodes, "cases", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model), feeds


OPSETS = sorted({c.opset for c in CASES})


@pytest.fixture(scope="module", params=OPSETS, ids=[f"opset{o}" for o in OPSETS])
def suite(request):
    cases = [c for c in CASES if c.opset == request.param]
    model, feeds = model_of(cases, request.param)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    names = [f"{c.id}:{o}" for c in cases for o in c.outputs]
    return model, feeds, want, names


def check(got, want, names) -> None:
    assert len(got) == len(want)
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype, f"{name}: {g.dtype} != {w.dtype}"
        assert g.shape == w.shape, f"{name}: {g.shape} != {w.shape}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_reference_matches_onnxruntime(suite) -> None:
    model, feeds, want, names = suite
    module = from_onnx(model)
    check(byoc.run_reference(module, list(feeds.values())), want, names)


@pytest.mark.parametrize("targets", [[], ["cblas", "ccompiler"]], ids=["host", "cblas,ccompiler"])
def test_compiled_matches_onnxruntime(suite, targets) -> None:
    model, feeds, want, names = suite
    compiled = byoc.compile(model, targets=targets)
    got = compiled(*feeds.values())
    check(list(got) if isinstance(got, tuple) else [got], want, names)


def test_resize_imports_as_one_resize2d() -> None:
    case = next(c for c in CASES if c.id == "resize-linear-half-pixel")
    model, _ = model_of([case], case.opset)
    ops = [op for op in from_onnx(model).walk() if isinstance(op, relay.RelayOp)]
    assert [op.name for op in ops] == ["relay.image.resize2d"]
    attrs = ops[0].attrs()
    assert attrs["size"] == (6, 3) and attrs["scale"] == (1.5, float(np.float32(0.8)))
    assert attrs["method"] == "linear" and attrs["coordinate_transformation_mode"] == "half_pixel"


@pytest.mark.parametrize(
    ("nodes", "inits", "needle"),
    [
        ([N("Resize", ["x", "", "sc"], ["y"], mode="linear", antialias=1)],
         {"sc": np.array([1, 1, 0.5, 0.5], np.float32)}, "antialias is not supported"),
        ([N("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
         {"sc": np.array([2, 1, 1, 1], np.float32)}, "only the last two axes can be resized"),
        ([N("Pad", ["x", "p"], ["y"], mode="wrap")], {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1], I64)},
         'mode "wrap" is not supported'),
        ([N("Slice", ["x", "s", "e"], ["y"])], {"e": np.array([2], I64)}, None),
    ],
    ids=["antialias", "batch-axis", "pad-wrap", "runtime-starts"],
)
def test_unsupported_variants_name_the_node(nodes, inits, needle) -> None:
    inputs = {"x": IMG}
    if needle is None:  # starts computed at run time
        inputs["s"] = np.array([0], I64)
        needle = r"starts \(input 1, 's'\) must be a constant"
    graph = helper.make_graph(
        nodes, "bad",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    with pytest.raises(ByocError, match=needle):
        from_onnx(model)
