"""libbyoc's dense kernel (reached through cblas, which packs constant dense
weights into relay.nn.dense_packed) and relay.nn.dense_packed on every exit.

The kernel is checked against the numpy reference over odd shapes (rows not
a multiple of its 12-row tiles, features not a multiple of its 32-column
panels, last panels of at most 16 columns, reductions longer than its
1024-long blocks, reductions of a multiple of 1024, whose rows it copies) and
every epilogue;
the products share one compiled model so the suite stays fast.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import byoc
from graphs import build, model_matches_reference
from byoc.dialects import relay
from byoc.runtime import libbyoc

pytest.importorskip("scipy_openblas32")

RTOL, ATOL = 1e-4, 1e-4

# (data shape, units, epilogue)
DENSES = [
    ((5, 7), 45, "none"),
    ((13, 300), 33, "bias"),
    ((1, 17), 70, "bias_relu"),
    ((2, 19, 64), 40, "bias_gelu"),
    ((37, 513), 64, "gelu"),
    ((3, 1), 1, "bias_add"),
    ((25, 1100), 31, "bias_add_relu"),
    ((12, 96), 96, "add"),
    ((4, 6, 40), 7, "add_relu"),
    ((128, 48), 130, "bias_gelu"),
    ((24, 2500), 20, "bias"),
    # Last panels of at most 16 columns take the one-vector tiles, also
    # across reduction blocks and with a residual.
    ((9, 1500), 10, "bias_add"),
    ((14, 1030), 48, "add_relu"),
    # Rows a multiple of 1024 floats apart (they share one L1 set): each
    # tile's rows copied apart first, across reduction blocks too, with a
    # last tile of a few rows.
    ((27, 3072), 45, "bias_add"),
    ((2, 8, 1024), 70, "bias_gelu"),
]


def dense_graph(denses: Sequence[tuple], seed: int = 0) -> tuple[ModuleOp, list[np.ndarray]]:
    """One model computing every dense of `denses` on its own input (plus a
    residual input for the epilogues with an add); constant weights and biases."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, ...]] = []
    plans = []
    for data, units, epilogue in denses:
        shapes.append(data)
        if "add" in epilogue:
            shapes.append((*data[:-1], units))
        weight = rng.standard_normal((units, data[-1])) / math.sqrt(data[-1])
        bias = rng.standard_normal(units)
        plans.append((weight.astype(np.float32), bias.astype(np.float32), epilogue))

    def body(e, *args):
        args = list(args)
        results = []
        for weight, bias, epilogue in plans:
            x = args.pop(0)
            y = e(relay.DenseOp(x, e(relay.ConstantOp.from_numpy(weight))))
            if "bias" in epilogue:
                bias_op = relay.BiasAddOp(y, e(relay.ConstantOp.from_numpy(bias)), axis=-1)
                y = e(bias_op)
            if "add" in epilogue:
                y = e(relay.AddOp(y, args.pop(0)))
            if "relu" in epilogue:
                y = e(relay.ReluOp(y))
            if "gelu" in epilogue:
                y = e(relay.GeluOp(y))
            results.append(y)
        return results

    module = build(shapes, body)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return module, inputs


def check(model: byoc.CompiledModule, module: ModuleOp, inputs: list[np.ndarray]) -> None:
    model_matches_reference(model, module, inputs, RTOL, ATOL)


@pytest.fixture(scope="module")
def packed_model():
    module, inputs = dense_graph(DENSES)
    return byoc.compile(module, targets=["cblas"], cache=False), module, inputs


def test_every_dense_and_epilogue_matches_the_reference(packed_model):
    model, module, inputs = packed_model
    check(model, module, inputs)


def test_denses_are_packed_and_epilogues_fused(packed_model):
    model, _, _ = packed_model
    host = model.partitioned_ir.split("func.func private")[0]
    assert "relay.nn.dense " not in model.partitioned_ir
    assert model.partitioned_ir.count("relay.nn.dense_packed") == len(DENSES)
    # Bias, residual add, relu and gelu run in the kernel: none is left on the host.
    for name in ("relay.nn.bias_add", "relay.add", "relay.nn.relu", "relay.nn.gelu"):
        assert name not in host
    source = model.sources["cblas.c"]
    assert source.count("byoc_rt_dense(") == len(DENSES)
    assert "scipy_cblas_sgemm(" not in source and "scipy_cblas_sgemv(" not in source
    # gelu is activation 3 (BYOC_RT_GELU) of the struct {m, n, k, activation, low, high}.
    assert "= {128, 130, 48, 3, 0x0.0p+0f, 0x0.0p+0f};" in source


def test_results_do_not_depend_on_the_thread_count(packed_model):
    """At 1, 2 and 3 threads, and from several Python threads at once (callers
    that find the pool busy run alone), every output is the same bits: each
    is summed in one order, whoever runs its chunk."""
    model, _, inputs = packed_model
    before = libbyoc.threads()
    try:
        libbyoc.set_threads(1)
        one = model(*inputs)
        results, errors = [], []

        def run() -> None:
            try:
                results.extend(model(*inputs) for _ in range(3))
            except BaseException as err:  # noqa: BLE001 - reported by the test
                errors.append(err)

        for count in (2, 3):
            libbyoc.set_threads(count)
            results.append(model(*inputs))
            threads = [threading.Thread(target=run) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        libbyoc.set_threads(before)
    assert not errors, errors[0]
    assert len(results) == 2 * (1 + 3 * 3)
    for other in results:
        for a, b in zip(one, other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_gelu_of_extreme_values_is_finite_and_exact_at_the_ends():
    """The kernel's erf saturates at +-1 (|x| >= 4) and keeps NaN and inf (two
    rows: a one-row product of so few units is sgemv's, not the kernel's)."""
    row = [-1e30, -30.0, -4.0, -1.0, -0.5, 0.0, 0.5, 1.0, 4.0, 30.0, 1e30, np.nan]
    x = np.array([row, row[::-1]], np.float32)

    def body(e, v):
        weight = e(relay.ConstantOp.from_numpy(np.eye(12, dtype=np.float32)))
        return e(relay.GeluOp(e(relay.DenseOp(v, weight))))

    module = build([x.shape], body)
    model = byoc.compile(module, targets=["cblas"])
    assert "byoc_rt_dense(" in model.sources["cblas.c"]
    got = model(x)
    want = byoc.run_reference(module, [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_weight_that_is_not_a_constant_keeps_sgemm():
    def body(e, x, w):
        return e(relay.GeluOp(e(relay.DenseOp(x, w))))

    module = build([(6, 20), (12, 20)], body)
    model = byoc.compile(module, targets=["cblas"])
    assert "dense_packed" not in model.partitioned_ir
    assert "scipy_cblas_sgemm(" in model.sources["cblas.c"]
    # gelu is not an epilogue of sgemm: it runs on the host.
    assert "relay.nn.gelu" in model.partitioned_ir.split("func.func private")[0]


def test_tanh_gelu_and_a_broadcast_add_are_not_fused():
    weight = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)

    def body(e, x, r):
        y = e(relay.DenseOp(x, e(relay.ConstantOp.from_numpy(weight))))
        return e(relay.GeluOp(e(relay.AddOp(y, r)), approximate="tanh"))

    module = build([(5, 8), (1, 16)], body)
    model = byoc.compile(module, targets=["cblas"])
    host = model.partitioned_ir.split("func.func private")[0]
    assert "relay.add" in host and "relay.nn.gelu" in host
    rng = np.random.default_rng(2)
    check(model, module, [rng.standard_normal((5, 8)).astype(np.float32),
                          rng.standard_normal((1, 16)).astype(np.float32)])


# --- relay.nn.dense_packed on its own -------------------------------------------


@pytest.mark.parametrize("units, depth", [(1, 1), (31, 5), (32, 3), (33, 7), (70, 2)])
def test_pack_and_unpack_are_inverse(units, depth):
    weight = np.random.default_rng(0).standard_normal((units, depth))
    packed = relay.pack_dense_weight(weight)
    assert packed.shape == (-(-units // 32), depth, 32)
    assert np.array_equal(relay.unpack_dense_weight(packed, units), weight)
    assert not packed[-1, :, units - 32 * (packed.shape[0] - 1):].any()  # zero padding


def packed_module(data=(2, 3, 9), units=45) -> tuple[ModuleOp, list[np.ndarray]]:
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((units, data[-1])).astype(np.float32)
    packed = relay.pack_dense_weight(weight)

    def body(e, x, w):
        return e(relay.DensePackedOp(x, w, units))

    module = build([data, packed.shape], body)
    return module, [rng.standard_normal(data).astype(np.float32), packed]


def test_dense_packed_means_dense_of_the_unpacked_weight():
    module, (x, packed) = packed_module()
    weight = relay.unpack_dense_weight(packed, 45)
    plain = build([x.shape, weight.shape], lambda e, x, w: e(relay.DenseOp(x, w)))
    got = byoc.run_reference(module, [x, packed])[0]
    want = byoc.run_reference(plain, [x, weight])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["cblas"]])
@pytest.mark.parametrize("data, units", [((2, 3, 9), 45), ((1, 40), 32), ((7, 5), 3)])
def test_dense_packed_runs_on_every_exit(targets, data, units):
    module, inputs = packed_module(data, units)
    model = byoc.compile(module, targets=targets)
    check(model, module, inputs)


def test_dense_packed_with_a_wrong_weight_shape_is_an_error():
    from byoc.frontend.parse import parse_text

    text = """func.func @main(%x: tensor<3x16xf32>, %w: tensor<1x16x32xf32>) -> tensor<3x40xf32> {
  %y = relay.nn.dense_packed %x, %w {units = 40 : i64} : (tensor<3x16xf32>, tensor<1x16x32xf32>) -> tensor<3x40xf32>
  func.return %y : tensor<3x40xf32>
}"""
    with pytest.raises(byoc.ByocError, match=r"t.mlir:2:3: .*units=40 packed have \[2, K, 32\]"):
        parse_text(text, "t.mlir")


def test_a_one_row_product_of_few_units_stays_sgemv():
    """A classifier at batch 1 reads its weight once: 10 units would read 32 in
    a packed panel (3.2 times the weight), so it stays a dense that sgemv
    computes; 70 units read 96 (1.4 times) and are packed."""
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal((units, 64)).astype(np.float32) for units in (10, 70)]

    def body(e, x):
        return [e(relay.DenseOp(x, e(relay.ConstantOp.from_numpy(w)))) for w in weights]

    module = build([(1, 64)], body)
    model = byoc.compile(module, targets=["cblas"])
    assert model.partitioned_ir.count("relay.nn.dense_packed") == 1
    assert model.partitioned_ir.count("relay.nn.dense ") == 1
    source = model.sources["cblas.c"]
    assert "scipy_cblas_sgemv(" in source and "byoc_rt_dense(" in source
    check(model, module, [rng.standard_normal((1, 64)).astype(np.float32)])
