"""End to end: byoc.compile on relay models, checked against numpy and the reference."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import byoc
from graphs import TANH_CHAIN, BINARY, UNARY, build_main

EXAMPLES = Path(__file__).parent.parent / "examples"
TARGET_SETS = [[], ["ccompiler"]]



def inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("targets", TARGET_SETS)
def test_guide_example(targets):
    model = byoc.compile(EXAMPLES / "byoc_guide.mlir", targets=targets)
    a, b, c, d = inputs(*[(10, 10)] * 4)
    np.testing.assert_allclose(model(a, b, c, d), (a + b - c) * d, rtol=1e-6)
    if targets:
        assert model.partitioned_ir.count("extern.call @ccompiler_0") == 1
        assert "ccompiler_0" in model.c_source
    else:
        assert model.c_source == "" and "extern" not in model.partitioned_ir


def test_tanh_runs_on_the_host_between_two_external_functions():
    model = byoc.compile(TANH_CHAIN, targets=["ccompiler"])
    assert "extern.call @ccompiler_0" in model.partitioned_ir
    assert "extern.call @ccompiler_1" in model.partitioned_ir
    assert "relay.tanh" in model.partitioned_ir.split("func.func private")[0]
    assert "tanh" not in model.c_source
    a, b, c, d = inputs(*[(10, 10)] * 4)
    np.testing.assert_allclose(model(a, b, c, d), np.tanh(a + b) * c - d, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("targets", TARGET_SETS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_every_unary_op(name, targets):
    module = build_main(1, [(name, [0])], [1], shape=(3, 5))
    (x,) = inputs((3, 5))
    x[0, 0] = 0.0
    got = byoc.compile(module, targets=targets)(x)
    (want,) = byoc.run_reference(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)



TRIGONOMETRIC = {
    # name: (numpy, inputs inside the domain, edges where the result is +-inf or NaN)
    "sin": (np.sin, (-7.0, 7.0), [np.inf, np.nan]),
    "cos": (np.cos, (-7.0, 7.0), [-np.inf, np.nan]),
    "tan": (np.tan, (-1.5, 1.5), [0.0, np.nan]),
    "asin": (np.arcsin, (-1.0, 1.0), [1.5, -1.5]),
    "acos": (np.arccos, (-1.0, 1.0), [1.5, -1.5]),
    "atan": (np.arctan, (-50.0, 50.0), [np.inf, -np.inf]),
    "sinh": (np.sinh, (-10.0, 10.0), [100.0, -100.0]),
    "cosh": (np.cosh, (-10.0, 10.0), [100.0, -100.0]),
    "asinh": (np.arcsinh, (-50.0, 50.0), [np.inf, -np.inf]),
    "acosh": (np.arccosh, (1.0, 50.0), [0.5, np.inf]),
    "atanh": (np.arctanh, (-0.99, 0.99), [1.0, -1.0]),
}


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16"])
@pytest.mark.parametrize("name", sorted(TRIGONOMETRIC))
def test_trigonometric_ops_against_numpy(name, dtype):
    fn, (low, high), edges = TRIGONOMETRIC[name]
    np_type = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dtype]
    x = np.concatenate([np.linspace(low, high, 30), edges]).astype(np_type)
    t = f"tensor<{x.size}x{dtype}>"
    text = (
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  %0 = relay.{name} %x : ({t}) -> {t}\n"
        f"  func.return %0 : {t}\n}}\n"
    )
    with np.errstate(all="ignore"):
        want = fn(x.astype(np.float32) if dtype == "f16" else x).astype(np_type)
    # ccompiler leaves libm's functions to the host; the partition must still run.
    for targets in ([], ["ccompiler"]):
        got = byoc.compile(text, targets=targets)(x)
        assert got.dtype == np_type
        rtol = {"f32": 2e-6, "f64": 1e-12, "f16": 1e-3}[dtype]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)

BROADCAST_SHAPES = [
    ((10, 10), (10, 10)),
    ((10, 10), (10,)),
    ((1, 7), (5, 1)),
    ((2, 3, 4), (3, 1)),
    ((), (4,)),
    ((), ()),
    ((2, 1, 3, 1), (1, 4, 1, 5)),
]


@pytest.mark.parametrize("targets", TARGET_SETS)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_every_binary_op_with_broadcasting(name, shapes, targets):
    lhs, rhs = shapes
    text = (
        f"func.func @main(%a: {ttype(lhs)}, %b: {ttype(rhs)}) -> {ttype(out_shape(lhs, rhs))} {{\n"
        f"  %0 = {name} %a, %b : ({ttype(lhs)}, {ttype(rhs)}) -> {ttype(out_shape(lhs, rhs))}\n"
        f"  func.return %0 : {ttype(out_shape(lhs, rhs))}\n}}\n"
    )
    a, b = inputs(lhs, rhs)
    if name == "relay.divide":
        b = np.where(np.abs(b) < 0.1, np.float32(0.5), b).astype(np.float32)
    got = byoc.compile(text, targets=targets)(a, b)
    want = byoc.run_reference(byoc.runtime.build.load_source(text), [a, b])[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def ttype(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def out_shape(a, b):
    return tuple(np.broadcast_shapes(a, b))


def test_several_results_and_a_returned_argument():
    text = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %1, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2, %0, %a, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""
    for targets in TARGET_SETS:
        model = byoc.compile(text, targets=targets)
        a, b = inputs((4,), (4,))
        r0, r1, r2, r3 = model(a, b)
        s = a + b
        np.testing.assert_allclose(r0, np.tanh(s) * s, rtol=1e-6)
        np.testing.assert_allclose(r1, s, rtol=1e-6)
        np.testing.assert_array_equal(r2, a)
        np.testing.assert_allclose(r3, s, rtol=1e-6)


def test_random_graphs_match_the_reference():
    rng = np.random.default_rng(7)
    names = sorted(UNARY) + sorted(BINARY)
    for trial in range(20):
        n_inputs = int(rng.integers(1, 4))
        ops = []
        for i in range(int(rng.integers(1, 15))):
            name = names[int(rng.integers(len(names)))]
            arity = 1 if name in UNARY else 2
            ops.append((name, [int(rng.integers(0, n_inputs + i)) for _ in range(arity)]))
        module = build_main(n_inputs, ops, [n_inputs + len(ops) - 1], shape=(2, 3))
        args = inputs(*[(2, 3)] * n_inputs, seed=trial)
        want = byoc.run_reference(module, args)[0]
        got = byoc.compile(module, targets=["ccompiler"])(*args)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_compile_does_not_change_the_callers_module():
    module = build_main(1, [("relay.add", [0, 0])], [1])
    before = str(module)
    byoc.compile(module, targets=["ccompiler"])
    assert str(module) == before


def test_bad_arguments_are_clear_errors():
    model = byoc.compile(EXAMPLES / "byoc_guide.mlir")
    a = np.zeros((10, 10), np.float32)
    with pytest.raises(byoc.ByocError, match="takes 4 arguments .*; got 2$"):
        model(a, a)
    with pytest.raises(byoc.ByocError, match="takes 4 arguments .*; got 5$"):
        model(a, a, a, a, a)
    with pytest.raises(byoc.ByocError, match=r"argument 2 \(c\) has shape \(10, 9\); expected \(10, 10\)"):
        model(a, a, np.zeros((10, 9), np.float32), a)
    with pytest.raises(byoc.ByocError, match="has dtype <U1"):
        model(a, a, np.full((10, 10), "x"), a)
    # float64 and non-contiguous arrays are converted, not rejected.
    b = np.ones((10, 20))[:, ::2]
    np.testing.assert_allclose(model(b, b, b, b), np.ones((10, 10)))


def test_compile_errors_are_byoc_errors(tmp_path):
    with pytest.raises(byoc.ByocError, match="unknown backend 'nope'"):
        byoc.compile(EXAMPLES / "byoc_guide.mlir", targets=["nope"])
    with pytest.raises(byoc.ByocError, match="no function @main"):
        byoc.compile("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n func.return %a : tensor<4xf32>\n}")
    with pytest.raises(byoc.ByocError, match="cannot read"):
        byoc.compile(tmp_path / "missing.mlir")


def test_many_calls_keep_memory_flat():
    model = byoc.compile(TANH_CHAIN, targets=["ccompiler"])
    args = inputs(*[(10, 10)] * 4)

    def rss_pages():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    for _ in range(1000):
        model(*args)
    gc.collect()
    before = rss_pages()
    for _ in range(10_000):
        model(*args)
    gc.collect()
    assert rss_pages() - before < 256  # < 1 MiB of growth over 10,000 calls


def test_two_models_in_one_process_do_not_clash():
    first = byoc.compile(EXAMPLES / "byoc_guide.mlir")
    second = byoc.compile(TANH_CHAIN)
    a, b, c, d = inputs(*[(10, 10)] * 4)
    np.testing.assert_allclose(first(a, b, c, d), (a + b - c) * d, rtol=1e-6)
    np.testing.assert_allclose(second(a, b, c, d), np.tanh(a + b) * c - d, rtol=1e-6, atol=1e-7)
