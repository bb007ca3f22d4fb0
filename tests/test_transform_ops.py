"""The data-movement ops of relay.TRANSFORM_OPS and relay.image.resize2d:
each case against numpy in the reference, and the reference against the
host and ccompiler (all cases in one module, so each target compiles once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import byoc
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import parse_text

rng = np.random.default_rng(0)


def floats(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@dataclass
class Case:
    """One op application: `text` uses `%a`, `%b`, ... bound to `args` and
    defines `%r`, whose value `want` computes with numpy."""

    id: str
    args: list[np.ndarray]
    text: str
    want: Callable[..., np.ndarray]


def _type(array: np.ndarray) -> str:
    element = {
        "float16": "f16",
        "float32": "f32",
        "float64": "f64",
        "bool": "i1",
        "int8": "i8",
        "uint8": "ui8",
        "int16": "i16",
        "int32": "i32",
        "int64": "i64",
        "uint16": "ui16",
        "uint32": "ui32",
        "uint64": "ui64",
    }[array.dtype.name]
    return "tensor<" + "".join(f"{d}x" for d in array.shape) + element + ">"


def one(id: str, args: list[np.ndarray], op: str, attrs: str, result: np.ndarray | None = None,
        want: Callable[..., np.ndarray] | None = None) -> Case:
    """A case applying relay op `op` with `attrs` to every argument."""
    names = [f"%{chr(97 + i)}" for i in range(len(args))]
    assert want is not None
    out = want(*args)
    text = (
        f"%r = {op} {', '.join(names)} {attrs} : "
        f"({', '.join(_type(a) for a in args)}) -> {_type(np.asarray(out))}"
    )
    return Case(id, args, text, want)


def bilinear(x: np.ndarray, oh: int, ow: int, coords: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """Bilinear resize of NCHW `x`, coordinates clamped into the image."""
    def axis(n: int, o: int):
        c = np.clip(coords(n, o), 0, n - 1)
        low = np.floor(c).astype(int)
        high = np.minimum(low + 1, n - 1)
        return low, high, c - low
    h0, h1, fh = axis(x.shape[2], oh)
    w0, w1, fw = axis(x.shape[3], ow)
    x = x.astype(np.float64)
    top = x[:, :, h0][:, :, :, w0] * (1 - fw) + x[:, :, h0][:, :, :, w1] * fw
    bottom = x[:, :, h1][:, :, :, w0] * (1 - fw) + x[:, :, h1][:, :, :, w1] * fw
    return (top * (1 - fh)[:, None] + bottom * fh[:, None]).astype(np.float32)


X = floats(2, 3, 4, 5)
I = np.arange(24, dtype=np.int64).reshape(2, 3, 4) - 5
IMG = floats(1, 2, 3, 4)

CASES = [
    # strided_slice
    one("slice-steps", [X], "relay.strided_slice", "{begin = array<i64: 1, 4>, end = array<i64: 0, -9223372036854775807>, strides = array<i64: -1, -2>, axes = array<i64: 1, 3>}",
        want=lambda x: x[:, 1:0:-1, :, 4::-2]),
    one("slice-clamped-default-axes", [X], "relay.strided_slice", "{begin = array<i64: -100, 1>, end = array<i64: 100, -1>}",
        want=lambda x: x[-100:100, 1:-1]),
    one("slice-int", [I], "relay.strided_slice", "{begin = array<i64: 1>, end = array<i64: 4>, strides = array<i64: 2>, axes = array<i64: -1>}",
        want=lambda x: x[..., 1:4:2]),
    one("slice-size-mode", [X], "relay.strided_slice", "{begin = array<i64: 1, 2>, end = array<i64: 2, -1>, slice_mode = \"size\"}",
        want=lambda x: x[1:2, 2:]),
    # tile
    one("gather-axis-1", [X[0, 0], np.array([[0, -1, 2], [4, 0, -5], [1, 1, 3]], np.int64)], "relay.gather", "{axis = 1 : i64}",
        want=lambda x, i: np.take_along_axis(x[:3], i % x.shape[1], 1)),
    one("gather-axis-0-int32-ids", [I[0], np.array([[1, -1], [0, 2]], np.int32)], "relay.gather", "",
        want=lambda x, i: np.take_along_axis(x[:, :2], i % x.shape[0], 0)),
    # cumsum
    one("cumsum-axis-1", [X[0]], "relay.cumsum", "{axis = 1 : i64}", want=lambda x: np.cumsum(x, 1, dtype=x.dtype)),
    one("cumsum-exclusive-reverse", [I], "relay.cumsum", "{axis = -1 : i64, exclusive = true, reverse = true}",
        want=lambda x: np.flip(np.cumsum(np.flip(x, -1), -1), -1) - x),
    one("cumsum-int8-wraps", [np.array([100, 100, -100, 27], np.int8)], "relay.cumsum", "",
        want=lambda x: np.cumsum(x, dtype=np.int8)),
    # trilu
    one("trilu-upper", [X[0]], "relay.trilu", "{k = 1 : i64}", want=lambda x: np.triu(x, 1)),
    one("trilu-lower-negative-k", [I], "relay.trilu", "{k = -1 : i64, upper = false}", want=lambda x: np.tril(x, -1)),
    one("trilu-bool-past-the-corner", [X[0, 0] > 0], "relay.trilu", "{k = 9 : i64}", want=lambda x: np.triu(x, 9)),
    one("trilu-lowest-k", [I[0]], "relay.trilu", "{k = -9223372036854775808 : i64}", want=lambda x: x),
    one("trilu-highest-k", [I[0]], "relay.trilu", "{k = 9223372036854775807 : i64, upper = false}", want=lambda x: x),
    one("cumsum-exclusive-empty-axis", [X[:0, 0]], "relay.cumsum", "{exclusive = true}", want=lambda x: x),
    one("tile", [X[0, :2, :3, 0]], "relay.tile", "{reps = array<i64: 3, 2>}", want=lambda x: np.tile(x, (3, 2))),
    one("tile-more-reps", [I[0, 0]], "relay.tile", "{reps = array<i64: 2, 1, 3>}", want=lambda x: np.tile(x, (2, 1, 3))),
    # broadcast_to
    one("broadcast", [X[0, :, :1, :]], "relay.broadcast_to", "{shape = array<i64: 2, 3, 4, 5>}", want=lambda x: np.broadcast_to(x, (2, 3, 4, 5))),
    one("broadcast-bool", [np.array([True, False])], "relay.broadcast_to", "{shape = array<i64: 3, 2>}", want=lambda x: np.broadcast_to(x, (3, 2))),
    # pad
    one("pad-constant", [X[0, 0]], "relay.nn.pad", "{pad_width = array<i64: 1, 2, 0, 3>, pad_value = 1.5 : f64}",
        want=lambda x: np.pad(x, ((1, 2), (0, 3)), constant_values=1.5)),
    one("pad-edge", [X[0]], "relay.nn.pad", "{pad_width = array<i64: 0, 0, 2, 1, 3, 3>, pad_mode = \"edge\"}",
        want=lambda x: np.pad(x, ((0, 0), (2, 1), (3, 3)), mode="edge")),
    one("pad-reflect", [X[0]], "relay.nn.pad", "{pad_width = array<i64: 1, 1, 3, 2, 4, 4>, pad_mode = \"reflect\"}",
        want=lambda x: np.pad(x, ((1, 1), (3, 2), (4, 4)), mode="reflect")),
    one("pad-int", [I[0]], "relay.nn.pad", "{pad_width = array<i64: 1, 0, 0, 2>, pad_value = -7.0 : f64}",
        want=lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=-7)),
    # where
    one("where", [X[0, 0] > 0, X[0, 0], X[1, 0, 0]], "relay.where", "", want=lambda c, x, y: np.where(c, x, y)),
    one("where-int-broadcast", [np.array([[True], [False]]), I[0, 0], np.array(9, np.int64)], "relay.where", "",
        want=lambda c, x, y: np.where(c, x, y)),
    # cast
    one("cast-f32-i64", [np.array([-2.7, -0.5, 0.5, 2.7, 1e9], np.float32)], "relay.cast", "{dtype = \"int64\"}",
        want=lambda x: np.trunc(x).astype(np.int64)),
    one("cast-f32-i8-wraps", [np.array([-2.7, 100.0, 200.0], np.float32)], "relay.cast", "{dtype = \"int8\"}",
        want=lambda x: np.trunc(x).astype(np.int32).astype(np.int8)),
    one("cast-f32-ui8", [np.array([0.0, 3.9, 255.0], np.float32)], "relay.cast", "{dtype = \"uint8\"}",
        want=lambda x: np.trunc(x).astype(np.uint8)),
    one("cast-f32-bool", [np.array([0.0, -0.0, 2.0, np.nan], np.float32)], "relay.cast", "{dtype = \"bool\"}",
        want=lambda x: x.astype(bool)),
    one("cast-f32-f64", [X[0, 0]], "relay.cast", "{dtype = \"float64\"}", want=lambda x: x.astype(np.float64)),
    one("cast-f64-f32", [X[0, 0].astype(np.float64) / 3], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-i64-f32", [I[0]], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-ui8-f32", [np.array([0, 200, 255], np.uint8)], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-bool-i32", [np.array([True, False])], "relay.cast", "{dtype = \"int32\"}", want=lambda x: x.astype(np.int32)),
    one("cast-bool-f32", [np.array([True, False])], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-i64-i32-wraps", [np.array([2**40 + 5, -3], np.int64)], "relay.cast", "{dtype = \"int32\"}", want=lambda x: x.astype(np.int32)),
    one("cast-i8-ui8", [np.array([-1, 5, -128], np.int8)], "relay.cast", "{dtype = \"uint8\"}", want=lambda x: x.astype(np.uint8)),
    one("cast-ui8-i8", [np.array([255, 5, 128], np.uint8)], "relay.cast", "{dtype = \"int8\"}", want=lambda x: x.astype(np.int8)),
    one("cast-ui8-i64", [np.array([255, 5, 128], np.uint8)], "relay.cast", "{dtype = \"int64\"}", want=lambda x: x.astype(np.int64)),
    one("cast-i64-bool", [np.array([0, 3, -1], np.int64)], "relay.cast", "{dtype = \"bool\"}", want=lambda x: x.astype(bool)),
    one("cast-f32-f16-rounds", [np.array([1.0 + 2.0**-11, 65519.0, 1e-8, -2.7], np.float32)], "relay.cast", "{dtype = \"float16\"}", want=lambda x: x.astype(np.float16)),
    one("cast-f16-f64", [np.array([0.1, -65504.0, 6e-8], np.float16)], "relay.cast", "{dtype = \"float64\"}", want=lambda x: x.astype(np.float64)),
    one("cast-i64-ui16-wraps", [np.array([70000, -1, 5], np.int64)], "relay.cast", "{dtype = \"uint16\"}", want=lambda x: x.astype(np.uint16)),
    one("cast-f64-ui32", [np.array([0.0, 3.9, 4e9], np.float64)], "relay.cast", "{dtype = \"uint32\"}", want=lambda x: np.trunc(x).astype(np.uint32)),
    one("cast-ui64-f32", [np.array([2**63 + 2**40, 7], np.uint64)], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-ui64-f64-rounds", [np.array([2**64 - 1, 2**63 + 2**11 + 1, 2**53 + 1, 3], np.uint64)], "relay.cast", "{dtype = \"float64\"}", want=lambda x: x.astype(np.float64)),
    one("cast-ui32-f32", [np.array([2**32 - 1, 2**31 + 5, 9], np.uint32)], "relay.cast", "{dtype = \"float32\"}", want=lambda x: x.astype(np.float32)),
    one("cast-f64-ui64", [np.array([0.0, 2.0**63 + 2.0**12, 1.8e19, 7.9], np.float64)], "relay.cast", "{dtype = \"uint64\"}", want=lambda x: np.trunc(x).astype(np.uint64)),
    one("cast-f16-ui64", [np.array([0.0, 65504.0, 7.9], np.float16)], "relay.cast", "{dtype = \"uint64\"}", want=lambda x: np.trunc(x).astype(np.uint64)),
    one("cast-f32-ui16-wraps", [np.array([70000.0, 65535.0, 3.5], np.float32)], "relay.cast", "{dtype = \"uint16\"}", want=lambda x: np.trunc(x).astype(np.int32).astype(np.uint16)),
    # depth_to_space, space_to_depth
    one("depth-to-space-dcr", [floats(2, 8, 2, 3)], "relay.nn.depth_to_space", "{block_size = 2 : i64}",
        want=lambda x: x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 4, 6)),
    one("depth-to-space-crd", [floats(1, 18, 2, 2)], "relay.nn.depth_to_space", "{block_size = 3 : i64, mode = \"CRD\"}",
        want=lambda x: x.reshape(1, 2, 3, 3, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 6, 6)),
    one("space-to-depth", [floats(1, 3, 4, 6)], "relay.nn.space_to_depth", "{block_size = 2 : i64}",
        want=lambda x: x.reshape(1, 3, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 12, 2, 3)),
    one("space-to-depth-crd", [floats(2, 3, 6, 3)], "relay.nn.space_to_depth", "{block_size = 3 : i64, mode = \"CRD\"}",
        want=lambda x: x.reshape(2, 3, 2, 3, 1, 3).transpose(0, 1, 3, 5, 2, 4).reshape(2, 27, 2, 1)),
    # resize2d
    one("resize-nearest-asymmetric-floor", [IMG], "relay.image.resize2d",
        "{size = array<i64: 6, 8>, method = \"nearest_neighbor\", coordinate_transformation_mode = \"asymmetric\", rounding_method = \"floor\"}",
        want=lambda x: x.repeat(2, axis=2).repeat(2, axis=3)),
    one("resize-nearest-half-pixel-down", [floats(1, 1, 5, 7)], "relay.image.resize2d",
        "{size = array<i64: 2, 3>, method = \"nearest_neighbor\", rounding_method = \"round_prefer_ceil\"}",
        want=lambda x: x[:, :, np.clip(np.floor((np.arange(2) + 0.5) * 5 / 2 - 0.5 + 0.5), 0, 4).astype(int)][
            :, :, :, np.clip(np.floor((np.arange(3) + 0.5) * 7 / 3 - 0.5 + 0.5), 0, 6).astype(int)]),
    one("resize-linear-half-pixel", [IMG], "relay.image.resize2d", "{size = array<i64: 5, 7>}",
        want=lambda x: bilinear(x, 5, 7, lambda n, o: (np.arange(o) + 0.5) * n / o - 0.5)),
    one("resize-linear-align-corners", [IMG], "relay.image.resize2d",
        "{size = array<i64: 7, 9>, coordinate_transformation_mode = \"align_corners\"}",
        want=lambda x: bilinear(x, 7, 9, lambda n, o: np.arange(o) * (n - 1) / (o - 1))),
    one("resize-linear-scale", [IMG], "relay.image.resize2d",
        "{size = array<i64: 5, 6>, coordinate_transformation_mode = \"pytorch_half_pixel\", scale = array<f64: 1.7, 1.6>}",
        want=lambda x: bilinear(x, 5, 6, lambda n, o: (np.arange(o) + 0.5) / {3: 1.7, 4: 1.6}[n] - 0.5)),
]

RESIZE_REFERENCE_ONLY = [
    ("cubic", "{size = array<i64: 6, 8>, method = \"cubic\", cubic_alpha = -7.500000e-01 : f64}"),
    ("cubic-exclude", "{size = array<i64: 2, 3>, method = \"cubic\", cubic_alpha = -5.000000e-01 : f64, cubic_exclude = 1 : i64, coordinate_transformation_mode = \"asymmetric\"}"),
    ("crop", "{size = array<i64: 4, 3>, coordinate_transformation_mode = \"tf_crop_and_resize\", roi = array<f64: -0.2, 0.1, 0.9, 1.3>, extrapolation_value = 9.0 : f64}"),
    ("crop-nearest", "{size = array<i64: 4, 3>, method = \"nearest_neighbor\", coordinate_transformation_mode = \"tf_crop_and_resize\", rounding_method = \"round\", roi = array<f64: -0.2, 0.1, 0.9, 1.3>, extrapolation_value = 9.0 : f64}"),
    ("nearest-tf-half-pixel", "{size = array<i64: 7, 2>, method = \"nearest_neighbor\", coordinate_transformation_mode = \"tf_half_pixel_for_nn\"}"),
]
"""resize2d variants checked between the reference and both exits (their
numpy meaning is checked against onnxruntime in test_onnx_shape.py)."""
for name, attrs in RESIZE_REFERENCE_ONLY:
    size = [int(v) for v in attrs.split("array<i64: ")[1].split(">")[0].split(", ")]
    CASES.append(Case(
        f"resize-{name}", [IMG],
        f"%r = relay.image.resize2d %a {attrs} : ({_type(IMG)}) -> tensor<1x2x{size[0]}x{size[1]}xf32>",
        lambda x: None,  # type: ignore[arg-type,return-value]
    ))


def module_text(cases: list[Case]) -> tuple[str, list[np.ndarray]]:
    """One @main applying every case: arguments and results in case order."""
    params, body, results, args = [], [], [], []
    for k, case in enumerate(cases):
        text = case.text
        for i, arg in enumerate(case.args):
            name = f"%c{k}_{i}"
            params.append(f"{name}: {_type(arg)}")
            text = text.replace(f"%{chr(97 + i)} ", f"{name} ").replace(f"%{chr(97 + i)},", f"{name},")
            args.append(arg)
        text = text.replace("%r =", f"%r{k} =")
        body.append("  " + text)
        result_type = text.rsplit("-> ", 1)[1]
        results.append((f"%r{k}", result_type))
    signature = ", ".join(params)
    out_types = ", ".join(t for _, t in results)
    return (
        f"func.func @main({signature}) -> ({out_types}) {{\n"
        + "\n".join(body)
        + f"\n  func.return {', '.join(n for n, _ in results)} : {out_types}\n}}\n",
        args,
    )


TEXT, ARGS = module_text(CASES)


@pytest.fixture(scope="module")
def reference() -> list[np.ndarray]:
    return byoc.run_reference(parse_text(TEXT), ARGS)


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c.id for c in CASES])
def test_reference_matches_numpy(reference, k: int) -> None:
    case = CASES[k]
    want = case.want(*case.args)
    if want is None:
        return  # checked against onnxruntime in test_onnx_shape.py
    want = np.asarray(want)
    got = reference[k]
    assert got.dtype == want.dtype and got.shape == want.shape, case.id
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=case.id)
    else:
        np.testing.assert_array_equal(got, want, err_msg=case.id)


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_compiled_matches_the_reference(reference, targets) -> None:
    model = byoc.compile(TEXT, targets=targets)
    if targets:
        assert model.placement.get("ccompiler", 0) >= len(CASES) - 8  # resize2d and friends may stay
    got = model(*ARGS)
    for case, g, r in zip(CASES, got, reference):
        assert g.dtype == r.dtype, case.id
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=case.id)
        else:
            np.testing.assert_array_equal(g, r, err_msg=case.id)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("%b = relay.greater %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>\n  %r = relay.cumsum %b : (tensor<3xi1>) -> tensor<3xi1>", "data must have a float or integer element type, got i1"),
        ("%r = relay.trilu %a : (tensor<3xf32>) -> tensor<3xf32>", "data must have rank 2 or more, got 1"),
        ("%r = relay.strided_slice %a {begin = array<i64: 0>, end = array<i64: 1>, strides = array<i64: 0>} : (tensor<3xf32>) -> tensor<1xf32>", "strides [0] has a 0"),
        ("%r = relay.tile %a {reps = array<i64: -1>} : (tensor<3xf32>) -> tensor<3xf32>", "reps [-1] must be non-negative"),
        ("%r = relay.broadcast_to %a {shape = array<i64: 2>} : (tensor<3xf32>) -> tensor<2xf32>", "cannot broadcast [3] to [2]"),
        ("%r = relay.nn.pad %a {pad_width = array<i64: 3, 0>, pad_mode = \"reflect\"} : (tensor<3xf32>) -> tensor<6xf32>", "reflect padding (3, 0) of axis 0 must be smaller than its size 3"),
        ("%r = relay.nn.pad %a {pad_width = array<i64: 1>} : (tensor<3xf32>) -> tensor<4xf32>", "two values (before, after) per dimension"),
        ("%r = relay.where %a, %a, %a : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>", "condition must have element type i1, got f32"),
        ("%r = relay.cast %a {dtype = \"float8\"} : (tensor<3xf32>) -> tensor<3xf32>", 'dtype "float8" is not one of'),
        ("%r = relay.image.resize2d %a {size = array<i64: 2, 2>} : (tensor<3xf32>) -> tensor<2x2xf32>", "data (NCHW) must have rank 4"),
        ("%k = relay.constant dense<0> : tensor<4xi64>\n  %r = relay.gather %a, %k {axis = 1 : i64} : (tensor<3xf32>, tensor<4xi64>) -> tensor<4xf32>", "axis 1 is out of range for rank 1"),
        ("%k = relay.constant dense<0> : tensor<1x1xi64>\n  %r = relay.gather %a, %k : (tensor<3xf32>, tensor<1x1xi64>) -> tensor<1x1xf32>", "indices have rank 2 but data has rank 1"),
    ],
    ids=["cumsum-bool", "trilu-rank", "slice-step-0", "tile-negative", "broadcast", "reflect", "pad-width", "where-condition", "cast-dtype", "resize-rank", "gather-axis", "gather-rank"],
)
def test_verifiers_say_what_is_wrong(text: str, needle: str) -> None:
    result = text.rsplit("-> ", 1)[1]
    source = (
        f"func.func @main(%a: tensor<3xf32>) -> {result} {{\n  {text}\n"
        f"  func.return %r : {result}\n}}\n"
    )
    with pytest.raises(ByocError, match=needle.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        parse_text(source)
