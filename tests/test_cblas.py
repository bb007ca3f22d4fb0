"""The cblas backend: dense, matmul, batch_matmul and conv2d through OpenBLAS sgemm.

Every model is built through the relay Python API, compiled with
`byoc.compile` (so the generated C goes through compile_shared's
-Wall -Wextra -Werror) and compared with `byoc.run_reference`. Apart from
the tests of declined ops, the host only runs elementwise ops, which it
lowered before passes/lower_nn.py existed.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    StringAttr,
    f64,
)
from xdsl.ir import Operation, SSAValue

import byoc
from graphs import build, check_against_reference, host_ir, weight_scaled_inputs
from byoc.backends import get_backend
from byoc.backends import cblas
from byoc.dialects import relay
from byoc.dialects.extern import TARGET_ATTR
from byoc.passes.annotate import annotate

pytest.importorskip("scipy_openblas32")

RTOL, ATOL = 1e-4, 1e-5

Emit = Callable[[Operation], SSAValue]


inputs = weight_scaled_inputs


def check(
    module: ModuleOp, targets: Sequence[str] = ("cblas",), seed: int = 0
) -> byoc.CompiledModule:
    """Compile for `targets`, run, and compare every output with the reference."""
    return check_against_reference(module, targets, seed, RTOL, ATOL)


def sequential_c(module: ModuleOp) -> str:
    """The C cblas makes for the one function the partitioner outlines, with no
    parallel loop."""
    from byoc.targets.c import emit_c

    return emit_c(cblas.emitc_module(ModuleOp([_outlined(module)]), parallel=False))


def on_cblas(model: byoc.CompiledModule, *op_names: str) -> None:
    """Each of `op_names` left the host for a cblas function."""
    host = host_ir(model)
    for name in op_names:
        assert name not in host, f"{name} stayed on the host"
    assert "cblas.c" in model.sources


# ---------------------------------------------------------------------------
# Single ops
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, units",
    [((1, 1), 1), ((4, 16), 8), ((7, 33), 5), ((2, 3, 16), 12), ((64, 512), 1024)],
)
def test_dense(data, units):
    k = data[-1]
    module = build([data, (units, k)], lambda e, x, w: e(relay.DenseOp(x, w)))
    model = check(module)
    on_cblas(model, "relay.nn.dense")
    m = math.prod(data[:-1])
    source = sequential_c(module)
    if m == 1:  # one row: y = W x, the weight [N, K] as is
        assert f"scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, {units}, {k}, 1.0f, " in source
        return
    # Row-major, weight [N, K] read transposed: C = A . B^T in one call.
    assert (
        f"scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, {m}, {units}, {k}, "
        in source
    )


@pytest.mark.parametrize(
    "x, y, ta, tb",
    [
        ((3, 4, 5), (3, 6, 5), False, True),
        ((3, 5, 4), (3, 6, 5), True, True),
        ((3, 4, 5), (3, 5, 6), False, False),
        ((3, 5, 4), (3, 5, 6), True, False),
        ((1, 4, 5), (3, 6, 5), False, True),  # x broadcast over the batch
        ((3, 4, 5), (1, 6, 5), False, True),  # y broadcast: one stacked GEMM
        ((3, 5, 4), (1, 5, 6), True, False),
        ((2, 32, 64), (2, 48, 64), False, True),
    ],
)
def test_batch_matmul(x, y, ta, tb):
    module = build(
        [x, y], lambda e, a, b: e(relay.BatchMatmulOp(a, b, transpose_a=ta, transpose_b=tb))
    )
    model = check(module)
    on_cblas(model, "relay.nn.batch_matmul")


def test_batch_matmul_with_a_shared_y_is_one_gemm():
    module = build([(3, 4, 5), (1, 6, 5)], lambda e, a, b: e(relay.BatchMatmulOp(a, b)))
    model = check(module)
    assert model.c_source.count("scipy_cblas_sgemm(") == 1
    assert "CblasNoTrans, CblasTrans, 12, 6, 5," in model.c_source
    assert "for (" not in model.c_source


@pytest.mark.parametrize(
    "a, b, ta, tb",
    [
        ((4, 5), (5, 6), False, False),
        ((4, 5), (6, 5), False, True),
        ((5, 4), (5, 6), True, False),
        ((5, 4), (6, 5), True, True),
        ((2, 3, 5), (5, 6), False, False),
        ((2, 5, 3), (6, 5), True, True),
    ],
)
def test_matmul(a, b, ta, tb):
    module = build(
        [a, b], lambda e, x, y: e(relay.MatmulOp(x, y, transpose_a=ta, transpose_b=tb))
    )
    model = check(module)
    on_cblas(model, "relay.nn.matmul")


CONVS = {
    # name: (data NCHW, (O, KH, KW), strides, padding, dilation, groups)
    "1x1_direct": ((2, 8, 5, 6), (4, 1, 1), 1, 0, 1, 1),
    "1x1_one_channel": ((1, 1, 4, 4), (3, 1, 1), 1, 0, 1, 1),
    "1x1_stride2": ((1, 6, 7, 7), (5, 1, 1), 2, 0, 1, 1),
    "1x1_padded": ((1, 3, 4, 4), (2, 1, 1), 1, 1, 1, 1),
    "3x3": ((1, 3, 8, 8), (4, 3, 3), 1, 0, 1, 1),
    "3x3_same": ((2, 16, 9, 7), (8, 3, 3), 1, 1, 1, 1),
    "3x3_stride2_same": ((1, 8, 10, 10), (16, 3, 3), 2, 1, 1, 1),
    "5x3_asymmetric_padding": ((1, 4, 9, 8), (6, 5, 3), (2, 1), (2, 1, 0, 3), 1, 1),
    "3x3_dilation2": ((1, 5, 11, 11), (7, 3, 3), 1, 2, 2, 1),
    "3x3_dilated_strided": ((2, 3, 12, 13), (4, 3, 3), (2, 3), (1, 2), (2, 1), 1),
    "padding_wider_than_kernel": ((1, 2, 3, 3), (3, 3, 3), 1, 3, 1, 1),
    "7x7_stride2": ((1, 3, 20, 20), (8, 7, 7), 2, 3, 1, 1),
    "grouped": ((2, 4, 6, 6), (6, 3, 3), 1, 1, 1, 2),
    "grouped_1x1": ((1, 8, 5, 5), (12, 1, 1), 1, 0, 1, 4),
    "one_output_channel": ((1, 3, 6, 6), (1, 3, 3), 1, 1, 1, 1),
    "wide_channels": ((1, 64, 8, 8), (32, 3, 3), 1, 1, 1, 1),
}


def conv(
    e: Emit, x: SSAValue, w: SSAValue, strides, padding, dilation, groups
) -> SSAValue:
    pad = (padding, padding) if isinstance(padding, int) else padding
    return e(relay.Conv2dOp(x, w, strides, pad, dilation, groups))


def conv_module(name: str, epilogue: Sequence[str] = ()) -> ModuleOp:
    data, (o, kh, kw), strides, padding, dilation, groups = CONVS[name]
    shapes = [data, (o, data[1] // groups, kh, kw)]
    if "bias" in epilogue:
        shapes.append((o,))

    def body(e: Emit, x, w, *bias):
        y = conv(e, x, w, strides, padding, dilation, groups)
        if bias:
            y = e(relay.BiasAddOp(y, bias[0]))
        if "relu" in epilogue:
            y = e(relay.ReluOp(y))
        return y

    return build(shapes, body)


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d(name):
    model = check(conv_module(name))
    on_cblas(model, "relay.nn.conv2d")


def test_1x1_stride1_conv_reads_its_input_directly():
    model = check(conv_module("1x1_direct"))
    # No im2col, hence no scratch: sgemm reads the image where it is.
    assert "aligned_alloc" not in model.c_source
    model = check(conv_module("3x3_same"))
    assert "aligned_alloc" in model.c_source


def test_grouped_conv_is_one_gemm_per_group():
    model = check(conv_module("grouped"))
    # groups=2, 3 output channels per group, K = 2 channels * 3 * 3.
    assert "CblasNoTrans, CblasNoTrans, 3, 36, 18," in model.c_source


# ---------------------------------------------------------------------------
# Composites: the epilogue runs in the same pass, in place
# ---------------------------------------------------------------------------


def dense_module(epilogue: Sequence[str], data=(6, 20), units=12, axis=-1) -> ModuleOp:
    shapes = [data, (units, data[-1])]
    if "bias" in epilogue:
        shapes.append((units,))

    def body(e: Emit, x, w, *bias):
        y = e(relay.DenseOp(x, w))
        if bias:
            y = e(relay.BiasAddOp(y, bias[0], axis=axis))
        if "relu" in epilogue:
            y = e(relay.ReluOp(y))
        return y

    return build(shapes, body)


@pytest.mark.parametrize(
    "epilogue, pattern",
    [
        (("bias",), "dense_bias"),
        (("bias", "relu"), "dense_bias_relu"),
        (("relu",), "dense_relu"),
    ],
)
def test_dense_composites(epilogue, pattern):
    module = dense_module(epilogue)
    model = check(module, ["cblas", "ccompiler"])
    assert f'extern.composite = "cblas.{pattern}"' in model.partitioned_ir
    on_cblas(model, "relay.nn.dense", "relay.nn.bias_add", "relay.nn.relu")
    # One sgemm into the output, then one loop over it: no intermediate buffer.
    assert model.c_source.count("scipy_cblas_sgemm(") == 1
    assert "aligned_alloc" not in model.c_source
    assert "ccompiler.c" not in model.sources


def test_dense_bias_on_3d_data():
    check(dense_module(("bias", "relu"), data=(2, 3, 16), units=5))


@pytest.mark.parametrize(
    "epilogue, pattern",
    [
        (("bias",), "conv2d_bias"),
        (("bias", "relu"), "conv2d_bias_relu"),
        (("relu",), "conv2d_relu"),
    ],
)
@pytest.mark.parametrize("name", ["3x3_same", "1x1_direct", "grouped", "7x7_stride2"])
def test_conv2d_composites(name, epilogue, pattern):
    model = check(conv_module(name, epilogue), ["cblas", "ccompiler"])
    assert f'extern.composite = "cblas.{pattern}"' in model.partitioned_ir
    on_cblas(model, "relay.nn.conv2d", "relay.nn.bias_add", "relay.nn.relu")
    assert "ccompiler.c" not in model.sources


def test_conv2d_bias_relu_epilogue_is_one_pass_per_image():
    model = check(conv_module("1x1_direct", ("bias", "relu")))
    source = model.c_source
    # The image loop holds the sgemm, then the bias + clamp over that image's output.
    body = source[source.index("scipy_cblas_sgemm(") :]
    assert body.count("for (") == 2  # channels, then the pixels of a channel
    assert "< 0.0f) ? 0.0f :" in body


def test_bias_along_a_non_channel_axis_is_still_fused():
    # bias_add over axis 0 of a dense output [M, N] (M == bias size).
    module = build(
        [(6, 20), (12, 20), (6,)],
        lambda e, x, w, b: e(relay.ReluOp(e(relay.BiasAddOp(e(relay.DenseOp(x, w)), b, axis=0)))),
    )
    model = check(module)
    assert model.c_source.count("scipy_cblas_sgemm(") == 1


def test_conv2d_bias_along_the_batch_axis_runs_after_every_image():
    data, (o, kh, kw), strides, padding, dilation, groups = CONVS["3x3_same"]
    module = build(
        [data, (o, data[1], kh, kw), (data[0],)],
        lambda e, x, w, b: e(
            relay.BiasAddOp(conv(e, x, w, strides, padding, dilation, groups), b, axis=0)
        ),
    )
    check(module)


# ---------------------------------------------------------------------------
# Functions with several ops: chains, intermediates, outputs
# ---------------------------------------------------------------------------


def mlp() -> ModuleOp:
    """x[64,512] -> dense 1024 + bias + relu -> dense 10 + bias."""

    def body(e: Emit, x, w1, b1, w2, b2):
        h = e(relay.ReluOp(e(relay.BiasAddOp(e(relay.DenseOp(x, w1)), b1))))
        return e(relay.BiasAddOp(e(relay.DenseOp(h, w2)), b2))

    return build([(64, 512), (1024, 512), (1024,), (10, 1024), (10,)], body)


@pytest.mark.parametrize("targets", [["cblas"], ["cblas", "ccompiler"]])
def test_mlp(targets):
    model = check(mlp(), targets)
    on_cblas(model, "relay.nn.dense", "relay.nn.bias_add", "relay.nn.relu")
    assert model.partitioned_ir.count("extern.call") == 1
    source = model.c_source
    assert source.count("scipy_cblas_sgemm(") == 2
    # The hidden layer [64, 1024] is the one intermediate, checked on allocation.
    assert "aligned_alloc(64, 262144)" in source
    assert "_failed_bytes = 262144; return 2; }" in source and "free(" in source


def test_mlp_with_host_and_ccompiler_ops_between_the_layers():
    def body(e: Emit, x, w1, b1, r, w2, b2):
        h = e(relay.ReluOp(e(relay.BiasAddOp(e(relay.DenseOp(x, w1)), b1))))
        h = e(relay.TanhOp(e(relay.AddOp(h, r))))  # add: ccompiler; tanh: host
        return e(relay.BiasAddOp(e(relay.DenseOp(h, w2)), b2))

    module = build([(8, 32), (64, 32), (64,), (8, 64), (10, 64), (10,)], body)
    model = check(module, ["cblas", "ccompiler"])
    assert "relay.tanh" in host_ir(model)
    assert "ccompiler.c" in model.sources
    assert model.partitioned_ir.count("extern.call @") == 3
    # cblas only (tanh and add on the host, which lowers elementwise ops).
    check(module, ["cblas"])


def test_chain_of_dense_layers_shares_scratch():
    def body(e: Emit, x, w1, w2, w3, w4):
        h = x
        for w in (w1, w2, w3, w4):
            h = e(relay.ReluOp(e(relay.DenseOp(h, w))))
        return h

    module = build([(16, 32), (64, 32), (64, 64), (64, 64), (8, 64)], body)
    model = check(module)
    # Three [16, 64] intermediates, at most two live at once: two 4 KiB slots.
    assert "aligned_alloc(64, 8192)" in model.c_source


def test_intermediate_also_returned_is_written_to_its_output():
    def body(e: Emit, x, w1, w2):
        h = e(relay.DenseOp(x, w1))
        return e(relay.DenseOp(h, w2)), h

    module = build([(4, 8), (6, 8), (3, 6)], body)
    model = check(module)
    assert "aligned_alloc" not in model.c_source


def hand_annotated(module: ModuleOp, *names: str) -> ModuleOp:
    """Mark every op named in `names` for cblas, as a user would by hand."""
    main = next(iter(module.ops))
    assert isinstance(main, func.FuncOp)
    for op in main.body.block.ops:
        if op.name in names:
            op.attributes[TARGET_ATTR] = StringAttr("cblas")
    return module


def test_product_returned_before_its_epilogue_is_not_fused():
    def body(e: Emit, x, w, b):
        y = e(relay.DenseOp(x, w))
        return e(relay.ReluOp(e(relay.BiasAddOp(y, b)))), y

    module = hand_annotated(
        build([(5, 7), (9, 7), (9,)], body),
        "relay.nn.dense", "relay.nn.bias_add", "relay.nn.relu",
    )
    model = check(module)
    assert model.partitioned_ir.count("extern.call") == 1
    # bias_add + relu are one out-of-place pass from the returned product.
    assert model.c_source.count("for (") == 2


def call_outlined(function: func.FuncOp, *args: np.ndarray) -> tuple[int, list[np.ndarray]]:
    """Run cblas's codegen on one outlined function and call it through the C ABI."""
    import cffi

    artifact = cblas.codegen(ModuleOp([function.clone()]))
    (symbol,) = artifact.symbols
    outputs = [
        np.full(tuple(t.get_shape()), np.nan, dtype=np.float32)  # type: ignore[attr-defined]
        for t in function.function_type.outputs.data
    ]
    buffers = [*args, *outputs]
    ffi = cffi.FFI()
    ffi.cdef(f"int32_t {symbol}({', '.join(['float*'] * len(buffers))});")
    lib = ffi.dlopen(str(artifact.libraries[0]))
    status = getattr(lib, symbol)(*(ffi.cast("float*", ffi.from_buffer(b)) for b in buffers))
    return status, outputs


def test_standalone_epilogue_ops_and_copied_outputs():
    # relu of an input, a value returned twice, and an input returned as is:
    # an outlined function the partitioner does not make, but the ABI allows.
    def body(e: Emit, x, w, b):
        r = e(relay.ReluOp(x))
        y = e(relay.BiasAddOp(e(relay.DenseOp(r, w)), b))
        return y, y, r, b

    module = build([(5, 7), (9, 7), (9,)], body)
    function = next(iter(module.ops)).clone()
    function.sym_name = StringAttr("byoc_test_cblas_0")
    args = inputs(module)
    status, outputs = call_outlined(function, *args)
    assert status == 0
    for got, want in zip(outputs, byoc.run_reference(module, args)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    source = cblas.generate_c(ModuleOp([function.clone()]))
    assert source.count("memcpy(") == 2


def test_an_op_cblas_cannot_generate_is_a_clear_error():
    module = build([(4, 4)], lambda e, x: e(relay.TanhOp(x)))
    function = next(iter(module.ops)).clone()
    with pytest.raises(byoc.ByocError, match="cblas cannot generate code for 'relay.tanh' in @main"):
        cblas.generate_c(ModuleOp([function]))


def test_small_constants_are_static_arrays_large_ones_arguments():
    rng = np.random.default_rng(3)
    bias = rng.standard_normal(12).astype(np.float32)  # copied into the function
    weight = (rng.standard_normal((12, 2000)) / 45).astype(np.float32)  # passed

    def body(e: Emit, x):
        w = e(relay.ConstantOp.from_numpy(weight))
        b = e(relay.ConstantOp.from_numpy(bias))
        return e(relay.ReluOp(e(relay.BiasAddOp(e(relay.DenseOp(x, w)), b))))

    model = check(build([(6, 2000)], body))
    outlined = model.partitioned_ir.split("func.func private")[1]
    assert outlined.count("relay.constant") == 1
    assert "static const float " in model.c_source
    # The constant weight is packed for libbyoc's dense kernel (an argument still).
    assert model.c_source.count("byoc_rt_dense(") == 1


def test_failed_scratch_allocation_is_an_error_not_a_wrong_answer():
    # A 2^20 x 2^20 intermediate (4 TiB) between two thin dense ops.
    if open("/proc/sys/vm/overcommit_memory").read().strip() == "1":
        pytest.skip("the kernel would grant the allocation (overcommit_memory=1)")
    big = 1 << 20

    def body(e: Emit, x, w1, w2):
        return e(relay.DenseOp(e(relay.DenseOp(x, w1)), w2))

    module = build([(big, 1), (big, 1), (1, big)], body)
    model = byoc.compile(module, targets=["cblas"])
    assert f"aligned_alloc(64, {big * big * 4})" in model.c_source
    x = np.ones((big, 1), np.float32)
    with pytest.raises(byoc.ByocError):
        model(x, x, x.reshape(1, big))


# ---------------------------------------------------------------------------
# batch_matmul + softmax: attention's scores normalised after each product
# ---------------------------------------------------------------------------


def scores_softmax(x, y, ta=False, tb=True, axis=-1) -> ModuleOp:
    return build(
        [x, y],
        lambda e, a, b: e(
            relay.SoftmaxOp(e(relay.BatchMatmulOp(a, b, transpose_a=ta, transpose_b=tb)), axis=axis)
        ),
    )


SCORES = [
    # Rows of 1, of less than a vector, a vector and one more, several with a
    # masked end; a batch of one (split by rows when large); a shared y (one
    # stacked product); the transposed flags.
    ((3, 4, 5), (3, 1, 5), False, True),
    ((3, 4, 5), (3, 7, 5), False, True),
    ((2, 5, 8), (2, 16, 8), False, True),
    ((2, 5, 8), (2, 8, 17), False, False),
    ((4, 33, 9), (4, 133, 9), False, True),
    ((3, 6, 5), (3, 6, 40), True, False),
    ((1, 300, 64), (1, 70, 64), False, True),
    ((5, 20, 12), (1, 31, 12), False, True),
    ((12, 128, 64), (12, 128, 64), False, True),
]


@pytest.mark.parametrize("parallel_code", ["1", "0"])
@pytest.mark.parametrize("x, y, ta, tb", SCORES)
def test_batch_matmul_softmax_matches_the_reference(monkeypatch, parallel_code, x, y, ta, tb):
    monkeypatch.setenv("BYOC_PARALLEL", parallel_code)
    module = scores_softmax(x, y, ta, tb)
    model = byoc.compile(module, targets=["cblas"])
    on_cblas(model, "relay.nn.batch_matmul", "relay.nn.softmax")
    assert "byoc_rt_softmax(" in model.c_source
    args = inputs(module)
    for scale in (1.0, 40.0):  # 40: most exponentials underflow to 0
        scaled = [args[0] * np.float32(scale), args[1]]
        (want,) = byoc.run_reference(module, scaled)
        np.testing.assert_allclose(model(*scaled), want, rtol=RTOL, atol=ATOL)


def test_batch_matmul_softmax_normalises_each_product_in_its_task(parallel):
    source = check(scores_softmax((4, 64, 96), (4, 80, 96))).c_source
    # In the parallel loop's task: the product, then its 64 rows of 80.
    task = source[source.index("scipy_cblas_sgemm("):]
    assert re.search(r"byoc_rt_softmax\(64, 80, ([^,]+), NULL, 0, \1\);", task)
    assert source.count(POOL) == 1


def test_softmax_along_another_axis_stays_on_the_host():
    module = scores_softmax((2, 6, 5), (2, 7, 5), axis=1)
    why = reasons(module, ["cblas"])
    assert why["relay.nn.softmax"][0] == (
        "cblas: pattern batch_matmul_softmax declined: the softmax is not along the last axis"
    )
    model = check(module)
    assert "relay.nn.softmax" in host_ir(model)
    assert "byoc_rt_softmax" not in model.c_source


# ---------------------------------------------------------------------------
# Attention's heads read and written in place by batch matmuls
# ---------------------------------------------------------------------------


def attention(
    seq: int, heads: int, size: int, lead: bool = True, softmax: bool = True,
    keys: int | None = None, width: int | None = None,
) -> ModuleOp:
    """Multi-head attention on projections [1, seq, heads * size] (or
    [seq, heads * size] without `lead`), keys [1, keys, heads * size] and
    values [1, keys, heads * width] (keys = seq and width = size unless
    given): heads split by reshape + transpose (+ reshape to 3-d), scores,
    softmax, context, heads merged back."""
    keys, width = keys or seq, width or size

    def shapes(rows: int, cols: int) -> tuple[tuple[int, ...], ...]:
        flat = (1, rows, heads * cols) if lead else (rows, heads * cols)
        split = (1, rows, heads, cols) if lead else (rows, heads, cols)
        return flat, split

    swap = (0, 2, 1, 3) if lead else (1, 0, 2)

    def body(e: Emit, q, k, v):
        def heads_of(x, rows, cols):
            t = e(relay.TransposeOp(e(relay.ReshapeOp(x, shapes(rows, cols)[1])), swap))
            return e(relay.ReshapeOp(t, (heads, rows, cols))) if lead else t

        scores = e(
            relay.BatchMatmulOp(heads_of(q, seq, size), heads_of(k, keys, size), transpose_b=True)
        )
        if softmax:
            scores = e(relay.SoftmaxOp(scores))
        context = e(relay.BatchMatmulOp(scores, heads_of(v, keys, width), transpose_b=False))
        if lead:
            context = e(relay.ReshapeOp(context, (1, heads, seq, width)))
        merged = e(relay.TransposeOp(context, swap))
        return e(relay.ReshapeOp(merged, shapes(seq, width)[0]))

    return build([shapes(seq, size)[0], shapes(keys, size)[0], shapes(keys, width)[0]], body)


HEADS = [
    # seq, heads, size, lead, softmax, keys, width
    (7, 3, 5, True, True, None, None),
    (1, 2, 3, True, True, None, None),
    (20, 1, 17, True, False, None, None),
    (33, 4, 16, False, True, None, None),
    (25, 3, 20, True, True, 70, 33),
    (13, 2, 40, False, True, 1, 7),
    (128, 12, 64, True, True, None, None),
    (64, 2, 64, True, False, None, None),
]


@pytest.mark.parametrize("seq, heads, size, lead, softmax, keys, width", HEADS)
def test_attention_heads_are_read_and_written_in_place(
    parallel, seq, heads, size, lead, softmax, keys, width
):
    module = attention(seq, heads, size, lead, softmax, keys, width)
    model = check(module, ["cblas", "ccompiler"])
    on_cblas(model, "relay.nn.batch_matmul", "relay.transpose", "relay.reshape")
    assert list(model.sources) == ["cblas.c"]  # no copy on ccompiler
    source = model.c_source
    keys, width = keys or seq, width or size
    q_row, v_row = heads * size, heads * width
    if softmax:
        # Both products and the softmax in one call, every operand in place:
        # heads `size` (or `width`) floats apart, rows a projection's row
        # apart (a matrix of one row: its own width).
        fields = re.search(r"static const byoc_rt_heads \w+ = \{([^}]*)\};", source)
        assert fields is not None and "sgemm" not in source
        struct = [int(f) for f in fields.group(1).split(", ")]
        head = 1 if heads > 1 else 0
        assert struct == [
            heads, seq, keys, size, width,
            head * size, q_row if seq > 1 else size, head * size, q_row if keys > 1 else size,
            head * width, v_row if keys > 1 else width, head * width, v_row if seq > 1 else width,
            1, 0, 0,  # no mask
        ]
        return
    # The queries and keys read in place (lda, ldb: rows a projection's row
    # apart), then the values read and the context written in place (ldb, ldc).
    scores, context = (
        call.split(", ") for call in re.findall(r"scipy_cblas_sgemm\(([^;]*)\);", source)
    )
    assert scores[8] == scores[10] == str(q_row)
    assert context[10] == context[13] == str(v_row)


@pytest.mark.parametrize(
    "batch, seq, keys, depth, width", [(3, 5, 7, 4, 9), (2, 40, 33, 17, 70), (1, 12, 129, 64, 16)]
)
def test_scores_softmax_and_values_are_one_attention_call(batch, seq, keys, depth, width):
    module = build(
        [(batch, seq, depth), (batch, keys, depth), (batch, keys, width)],
        lambda e, q, k, v: e(
            relay.BatchMatmulOp(
                e(relay.SoftmaxOp(e(relay.BatchMatmulOp(q, k)))), v, transpose_b=False
            )
        ),
    )
    model = check(module)
    source = model.c_source
    assert source.count("byoc_rt_attention(") == 1 and "sgemm" not in source
    fields = re.search(r"static const byoc_rt_heads \w+ = \{([^}]*)\};", source)
    assert fields is not None
    head = 0 if batch == 1 else 1
    assert [int(f) for f in fields.group(1).split(", ")] == [
        batch, seq, keys, depth, width, head * seq * depth, depth, head * keys * depth, depth,
        head * keys * width, width, head * seq * width, width, 1, 0, 0,
    ]
    # Large scores: the softmax's exponentials underflow but for the maximum.
    args = inputs(module)
    args[0] = args[0] * np.float32(60.0)
    (want,) = byoc.run_reference(module, args)
    np.testing.assert_allclose(model(*args), want, rtol=RTOL, atol=ATOL)


def test_scores_read_elsewhere_are_not_fused():
    def body(e: Emit, q, k, v):
        probs = e(relay.SoftmaxOp(e(relay.BatchMatmulOp(q, k))))
        return e(relay.BatchMatmulOp(probs, v, transpose_b=False)), probs

    module = build([(2, 6, 8), (2, 5, 8), (2, 5, 3)], body)
    source = check(module).c_source
    assert "byoc_rt_attention" not in source and "byoc_rt_softmax(" in source


# ---------------------------------------------------------------------------
# Additive attention masks: batch_matmul -> add(mask) -> softmax (-> batch_matmul)
# ---------------------------------------------------------------------------


def mask_values(shape: Sequence[int], fill: float, seed: int = 0) -> np.ndarray:
    """An additive mask: 0, or `fill` at about a third of the places, its last
    key masked everywhere, and (with rows) its first row masked whole: a row
    of -inf scores is all NaN in the reference, and must be in the kernel."""
    rng = np.random.default_rng(seed)
    mask = np.where(rng.uniform(size=shape) < 0.3, fill, 0.0).astype(np.float32)
    mask[..., -1] = fill
    if len(shape) >= 2:
        mask[..., 0, :] = fill
    return mask


def masked_scores(x, y, mask, attend: Sequence[int] | None = None, mask_first: bool = False):
    """softmax(x y^T + mask) (times values of shape `attend`, if given)."""

    def body(e: Emit, a, b, m, *v):
        scores = e(relay.BatchMatmulOp(a, b))
        probs = e(relay.SoftmaxOp(e(relay.AddOp(*((m, scores) if mask_first else (scores, m))))))
        return e(relay.BatchMatmulOp(probs, v[0], transpose_b=False)) if v else probs

    return build([x, y, mask, *([attend] if attend else [])], body)


def masked_inputs(module: ModuleOp, fill: float, mask_at: int = 2) -> list[np.ndarray]:
    args = inputs(module)
    args[mask_at] = mask_values(args[mask_at].shape, fill)
    return args


MASKED = [
    # x, y, mask: a mask row for all (several ranks), a row per query row, a
    # row per product (and per product and query row); rows of 1, less than a
    # vector and one more; one product split by rows; a shared y (one stacked
    # product) with one mask row, and with a row per query row (not stacked).
    ((3, 4, 5), (3, 7, 5), (7,)),
    ((2, 17, 9), (2, 33, 9), (1, 33)),
    ((4, 9, 6), (4, 20, 6), (9, 20)),
    ((3, 6, 5), (3, 17, 5), (3, 1, 17)),
    ((2, 5, 8), (2, 16, 8), (2, 5, 16)),
    ((3, 1, 4), (3, 5, 4), (1, 1, 5)),
    ((1, 300, 64), (1, 70, 64), (1, 300, 70)),
    ((5, 20, 12), (1, 31, 12), (1, 1, 31)),
    ((5, 20, 12), (1, 31, 12), (20, 31)),
]


@pytest.mark.parametrize("parallel_code", ["1", "0"])
@pytest.mark.parametrize("x, y, mask", MASKED)
def test_masked_softmax_matches_the_reference(monkeypatch, parallel_code, x, y, mask):
    monkeypatch.setenv("BYOC_PARALLEL", parallel_code)
    for mask_first in (False, True):
        module = masked_scores(x, y, mask, mask_first=mask_first)
        model = byoc.compile(module, targets=["cblas"])
        on_cblas(model, "relay.nn.batch_matmul", "relay.add", "relay.nn.softmax")
        assert "byoc_rt_softmax(" in model.c_source and ", NULL, 0," not in model.c_source
        for fill in (-10000.0, -np.inf):
            args = masked_inputs(module, fill)
            (want,) = byoc.run_reference(module, args)
            got = model(*args)
            # Rows masked whole: NaN in both (-inf) or close (-10000).
            assert np.array_equal(np.isnan(got), np.isnan(want))
            assert np.isnan(want).any() == (fill == -np.inf and len(mask) >= 2)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


MASKED_ATTENTION = [
    # batch, seq, keys, depth, width, mask
    (3, 5, 7, 4, 9, (7,)),
    (2, 40, 33, 17, 70, (1, 1, 33)),
    (1, 12, 129, 64, 16, (12, 129)),
    (4, 13, 20, 8, 5, (4, 1, 20)),
    (2, 9, 31, 16, 33, (2, 9, 31)),
]


@pytest.mark.parametrize("batch, seq, keys, depth, width, mask", MASKED_ATTENTION)
def test_masked_attention_is_one_call(batch, seq, keys, depth, width, mask):
    """softmax(q k^T + mask) v in one byoc_rt_attention call, the mask read in
    place with its strides (0 where broadcast), the same on 1, 2 and 3
    threads."""
    module = masked_scores((batch, seq, depth), (batch, keys, depth), mask, (batch, keys, width))
    model = byoc.compile(module, targets=["cblas"])
    source = model.c_source
    assert source.count("byoc_rt_attention(") == 1 and "sgemm" not in source
    fields = re.search(r"static const byoc_rt_heads \w+ = \{([^}]*)\};", source)
    assert fields is not None
    padded = (1,) * (3 - len(mask)) + mask
    head = padded[1] * keys if padded[0] > 1 else 0
    assert [int(f) for f in fields.group(1).split(", ")][-3:] == [
        1, head, keys if padded[1] > 1 else 0,
    ]
    check_masked_on_threads(model, module, query_scale=20.0)  # most exponentials underflow


def check_masked_on_threads(model, module, query_scale: float = 1.0) -> None:
    """`model` against the reference with masks of -10000 and -inf (rows
    masked whole NaN in both), on 1, 2 and 3 threads."""
    from byoc.runtime import libbyoc

    before = libbyoc.threads()
    try:
        for fill in (-10000.0, -np.inf):
            args = masked_inputs(module, fill)
            args[0] = args[0] * np.float32(query_scale)
            (want,) = byoc.run_reference(module, args)
            for threads in (1, 2, 3):
                libbyoc.set_threads(threads)
                got = model(*args)
                assert np.array_equal(np.isnan(got), np.isnan(want))
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    finally:
        libbyoc.set_threads(before)


def heads_masked(batch, heads, seq, keys, depth, width, mask, values: bool = True):
    """A BERT layer's attention at batch `batch` with a mask per batch, as
    byoc-simplify leaves it ([B, 1, 1, S] varies along the batches the
    scores' reshape splits): scores [B*H, R, S] reshaped to [B, H, R, S],
    the mask added, softmax, reshaped back for the values' product."""

    def body(e: Emit, q, k, m, *v):
        scores = e(relay.ReshapeOp(e(relay.BatchMatmulOp(q, k)), (batch, heads, seq, keys)))
        probs = e(relay.SoftmaxOp(e(relay.AddOp(scores, m)), axis=3))
        if not v:
            return probs
        flat = e(relay.ReshapeOp(probs, (batch * heads, seq, keys)))
        return e(relay.BatchMatmulOp(flat, v[0], transpose_b=False))

    products = batch * heads
    shapes = [(products, seq, depth), (products, keys, depth), mask]
    return build(shapes + ([(products, keys, width)] if values else []), body)


HEADS_MASKED = [
    # batch, heads, seq, keys, depth, width, mask
    (2, 3, 5, 7, 4, 9, (2, 1, 1, 7)),
    (3, 2, 13, 33, 16, 20, (3, 1, 13, 33)),
    (2, 12, 16, 16, 64, 64, (2, 1, 1, 16)),
    (2, 3, 5, 7, 4, 9, (2, 3, 5, 7)),
]


@pytest.mark.parametrize("batch, heads, seq, keys, depth, width, mask", HEADS_MASKED)
def test_a_mask_per_batch_is_one_attention_call(batch, heads, seq, keys, depth, width, mask):
    """A mask row per batch ([B, 1, 1, S]) over scores split into B batches
    of H heads: one byoc_rt_attention call, H heads sharing a mask
    (`mask_group`), on 1, 2 and 3 threads."""
    module = heads_masked(batch, heads, seq, keys, depth, width, mask)
    model = byoc.compile(module, targets=["cblas"])
    source = model.c_source
    assert source.count("byoc_rt_attention(") == 1 and "sgemm" not in source
    fields = re.search(r"static const byoc_rt_heads \w+ = \{([^}]*)\};", source)
    assert fields is not None
    per_head = mask[1] == heads
    rows = mask[2] > 1
    assert [int(f) for f in fields.group(1).split(", ")][-3:] == [
        1 if per_head else heads, (seq if rows else 1) * keys, keys if rows else 0,
    ]
    check_masked_on_threads(model, module)


@pytest.mark.parametrize("parallel_code", ["1", "0"])
def test_a_mask_per_batch_before_a_returned_softmax(monkeypatch, parallel_code):
    """Without the values' product: each product's softmax reads its batch's
    mask, product / heads matrices on (a division in the C)."""
    monkeypatch.setenv("BYOC_PARALLEL", parallel_code)
    module = heads_masked(3, 4, 9, 20, 64, 0, (3, 1, 1, 20), values=False)
    model = byoc.compile(module, targets=["cblas"])
    on_cblas(model, "relay.nn.batch_matmul", "relay.reshape", "relay.add", "relay.nn.softmax")
    assert "byoc_rt_softmax(" in model.c_source and " / 4" in model.c_source
    for fill in (-10000.0, -np.inf):
        args = masked_inputs(module, fill)
        (want,) = byoc.run_reference(module, args)
        got = model(*args)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_a_mask_per_head_the_same_for_every_batch_stays_apart():
    """[1, H, 1, S] over B > 1 batches of H heads: no (group, stride) reads
    it; the pattern declines and the answer is the same."""
    module = heads_masked(2, 3, 5, 7, 4, 9, (1, 3, 1, 7))
    assert reasons(module, ["cblas"])["relay.add"][0] == (
        "cblas: pattern batch_matmul_heads_add_softmax declined: the mask 1x3x1x7 is not "
        "broadcast along the scores' products and rows only"
    )
    model = check(module, ["cblas", "ccompiler"])
    assert "byoc_rt_attention" not in model.sources["cblas.c"]


@pytest.mark.parametrize(
    "scores, mask, why",
    [
        ((2, 4, 6), (4, 1), "the mask 4x1 is not broadcast along the scores' products and "
         "rows only"),
        ((1, 4, 6), (3, 4, 6), "the mask 3x4x6 widens the scores 1x4x6"),
        ((2, 4, 6), (1, 2, 4, 6), "the mask 1x2x4x6 widens the scores 2x4x6"),
    ],
    ids=["along_keys", "widening", "rank_4"],
)
def test_masks_cblas_does_not_take_stay_apart(scores, mask, why):
    """A mask broadcast along the keys, or one that widens the scores: the
    pattern declines, the add runs elsewhere, and the answer is the same."""
    batch, rows, keys = scores
    module = masked_scores((batch, rows, 3), (batch, keys, 3), mask)
    assert reasons(module, ["cblas"])["relay.add"][0] == (
        f"cblas: pattern batch_matmul_add_softmax declined: {why}"
    )
    model = check(module, ["cblas", "ccompiler"])
    assert re.search(r"extern.call @ccompiler_\d+\(%\d+, %2\)", host_ir(model))  # the add
    assert "byoc_rt_softmax" not in model.sources["cblas.c"]


@pytest.mark.parametrize("split", [(1, 3, 5, 4), (15, 4), (1, 5, 12)])
def test_a_values_view_merged_apart_from_its_matmul_is_returned(split):
    """A mask cblas does not take (broadcast along the keys: one value per
    query row) added to the scores (ccompiler) splits attention in two cblas
    regions; the values' view, taken for the second batch matmul, can land in
    the first one, which then returns it: cblas writes the bytes a reshape
    keeps in order, or copies the rows of heads split by a transpose (as
    BERT exports them, [1, seq, heads * size]), instead of failing the
    function back to ccompiler (onnx's Attention tests with a mask and a
    BERT layer with a mask did)."""
    heads, seq, size = 3, 5, 4

    def body(e: Emit, q, k, v, mask):
        def split_heads(x):
            if len(split) == 3:  # [1, seq, heads * size]
                x = e(relay.ReshapeOp(x, (1, seq, heads, size)))
                x = e(relay.TransposeOp(x, (0, 2, 1, 3)))
            return e(relay.ReshapeOp(x, (heads, seq, size)))

        scores = e(relay.BatchMatmulOp(split_heads(q), split_heads(k)))
        probs = e(relay.SoftmaxOp(e(relay.AddOp(scores, mask))))
        return e(relay.BatchMatmulOp(probs, split_heads(v), transpose_b=False))

    module = build([split, split, split, (seq, 1)], body)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        model = check(module, ["cblas", "ccompiler"])
    assert not model.fallbacks
    assert host_ir(model).count("relay.nn.batch_matmul") == 0
    assert model.c_source.count("sgemm(") == 2


def test_returned_views_of_inputs_and_of_products():
    """A cblas function returning views (annotated by hand, as merging can
    leave them): reshapes of its input (copied into the output), of a product
    (written straight into the output), of a reshape, of a value another
    output already holds (copied); heads split by reshape, transpose and
    reshape, of an input and of a product (copied a row at a time)."""

    def heads(e: Emit, x, n):
        split = e(relay.ReshapeOp(x, (1, 3, n, 5)))
        return e(relay.ReshapeOp(e(relay.TransposeOp(split, (0, 2, 1, 3))), (n, 3, 5)))

    def body(emit: Emit, a, b, c):
        def e(op: Operation) -> SSAValue:
            op.attributes[TARGET_ATTR] = StringAttr("cblas")
            return emit(op)

        product = e(relay.BatchMatmulOp(a, b, transpose_b=False))
        flat = e(relay.ReshapeOp(product, (6, 5)))
        results = (
            e(relay.ReshapeOp(a, (6, 4))),
            flat,
            e(relay.ReshapeOp(flat, (30,))),
            e(relay.ReshapeOp(a, (24,))),
            heads(e, c, 4),
            heads(e, e(relay.BatchMatmulOp(a, b, transpose_b=False)), 2),
        )
        return results

    module = build([(2, 3, 4), (2, 4, 5), (1, 3, 20)], body)
    model = check(module, ["cblas"])
    assert not model.fallbacks and list(model.sources) == ["cblas.c"]
    source = model.c_source
    # both reshapes of a, the product's second output, and the heads' rows
    assert source.count("memcpy(") == 5
    assert source.count("sgemm(") == 2


def test_reshaped_strides_are_numpys():
    rng = np.random.default_rng(0)
    base = np.zeros((2, 3, 4, 5), np.float32)
    cases = 0
    for _ in range(200):
        view = base.transpose(rng.permutation(4))
        new = tuple(int(n) for n in rng.permutation([2, 3, 4, 5]))
        new = (new[0] * new[1], *new[2:]) if rng.random() < 0.5 else new
        strides = tuple(st // 4 for st in view.strides)
        got = cblas.reshaped_strides(view.shape, strides, new)
        try:
            want = view.view()
            want.shape = new  # raises when no strides can do it
        except AttributeError:
            assert got is None
            continue
        cases += 1
        assert got is not None
        assert all(g * 4 == w for g, w, n in zip(got, want.strides, new) if n != 1)
    assert cases > 20


def test_a_reshape_into_a_dense_is_not_taken():
    module = build(
        [(2, 3, 8), (5, 24)],
        lambda e, x, w: e(relay.DenseOp(e(relay.ReshapeOp(x, (2, 24))), w)),
    )
    assert reasons(module, ["cblas"])["relay.reshape"] == [
        "cblas takes reshapes and transposes only as a batch matmul's operand or result "
        "read or written in place"
    ]


# ---------------------------------------------------------------------------
# layer_norm in libbyoc
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, scale, center",
    [
        ((3, 1), True, True),
        ((5, 15), True, True),
        ((2, 4, 16), False, True),
        ((7, 17), True, False),
        ((300, 69), False, False),
        ((128, 768), True, True),
        ((3, 1000), True, True),
    ],
)
def test_layer_norm_matches_the_reference(shape, scale, center):
    module = build(
        [shape, shape[-1:], shape[-1:]],
        lambda e, x, g, b: e(relay.LayerNormOp(x, g, b, epsilon=1e-6, scale=scale, center=center)),
    )
    model = byoc.compile(module, targets=["cblas"])
    on_cblas(model, "relay.nn.layer_norm")
    assert "byoc_rt_layer_norm(" in model.c_source
    args = inputs(module)
    # Rows far from 0 against their spread: the variance must come from
    # centred values (E[x^2] - mean^2 would lose 4 of float32's 7 digits).
    for offset in (0.0, 100.0):
        shifted = [args[0] + np.float32(offset), *args[1:]]
        (want,) = byoc.run_reference(module, shifted)
        np.testing.assert_allclose(model(*shifted), want, rtol=RTOL, atol=1e-4)


def test_layer_norm_along_another_axis_stays_on_the_host():
    module = build(
        [(4, 6, 5), (6,), (6,)], lambda e, x, g, b: e(relay.LayerNormOp(x, g, b, axis=1))
    )
    assert reasons(module, ["cblas"])["relay.nn.layer_norm"] == [
        "the layer_norm is not along the last axis"
    ]
    assert "relay.nn.layer_norm" in host_ir(check(module))


# ---------------------------------------------------------------------------
# What cblas declines, and why
# ---------------------------------------------------------------------------


def reasons(module: ModuleOp, targets: Sequence[str]) -> dict[str, list[str]]:
    declined = annotate(module.clone(), [get_backend(t) for t in targets])
    return {op.name: why for op, why in declined.items()}


def test_depthwise_conv_runs_in_libbyoc():
    """One input channel per group: libbyoc's stencil kernel, not one-row GEMMs."""
    for strides, padding, dilation in (((1, 1), 1, 1), ((2, 2), (1, 0, 2, 1), 1), ((1, 2), 2, 2)):
        def body(e: Emit, x, w, b):
            y = e(relay.Conv2dOp(x, w, strides, padding, dilation, 4))
            return e(relay.ReluOp(e(relay.BiasAddOp(y, b))))

        model = check(build([(2, 4, 9, 23), (8, 1, 3, 3), (8,)], body))
        on_cblas(model, "relay.nn.conv2d", "relay.nn.bias_add", "relay.nn.relu")
        assert "byoc_rt_depthwise_conv2d(" in model.sources["cblas.c"]


def test_depthwise_conv_with_too_many_taps_is_declined_with_a_reason():
    module = build(
        [(1, 4, 12, 12), (4, 1, 9, 9)],
        lambda e, x, w: conv(e, x, w, 1, 4, 1, 4),
    )
    (why,) = reasons(module, ["cblas"])["relay.nn.conv2d"]
    assert "9x9 kernel" in why and "at most 64 taps" in why


def test_float64_is_declined_with_a_reason():
    module = build([(4, 8), (3, 8)], lambda e, x, w: e(relay.DenseOp(x, w)), element=f64)
    (why,) = reasons(module, ["cblas"])["relay.nn.dense"]
    assert why == "cblas computes in float32 (sgemm); relay.nn.dense operand 0 is tensor<4x8xf64>"
    if not host_lowers("relay.nn.dense"):
        pytest.skip("the host does not lower relay.nn.dense yet")
    model = check(module, ["cblas"])
    assert "relay.nn.dense" in host_ir(model) and not model.sources


def test_declined_composite_reports_the_pattern():
    def body(e: Emit, x, w, r):
        return e(relay.AddOp(conv(e, x, w, 1, 1, 1, 1), r))

    module = build([(1, 4, 6, 6), (4, 4, 3, 3), (1, 4, 6, 6)], body)
    why = reasons(module, ["cblas"])
    pattern, single = why["relay.add"]
    assert pattern.startswith("cblas: pattern conv2d_add declined: the weight is not a constant")
    assert single == "cblas does not support relay.add"


def host_lowers(op_name: str) -> bool:
    """Whether the host can run `op_name` yet (passes/lower_nn.py is being written)."""
    from byoc.passes.convert_relay_to_loops import LOWERINGS

    return any(t.name == op_name for t in LOWERINGS if hasattr(t, "name"))


def test_declined_conv_stays_on_the_host_and_is_right():
    def body(e: Emit, x, w1, b, w2):
        y = e(relay.ReluOp(e(relay.BiasAddOp(conv(e, x, w1, 1, 1, 1, 1), b))))
        return conv(e, y, w2, 1, 4, 1, 8)  # depthwise 9x9: declined

    module = build([(1, 4, 6, 6), (8, 4, 3, 3), (8,), (8, 1, 9, 9)], body)
    why = reasons(module, ["cblas"])
    assert list(why) == ["relay.nn.conv2d"]
    model = check(module, ["cblas"])
    assert "relay.nn.conv2d" in host_ir(model)
    # With ccompiler after cblas, ccompiler takes what cblas declined.
    model = check(module, ["cblas", "ccompiler"])
    assert "relay.nn.conv2d" not in host_ir(model)


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------


def test_threads_can_be_set():
    before = cblas.get_threads()
    try:
        cblas.set_threads(1)
        assert cblas.get_threads() == 1
        check(dense_module(("bias", "relu")))
    finally:
        cblas.set_threads(before)
    with pytest.raises(byoc.ByocError, match="at least one thread"):
        cblas.set_threads(0)


def test_generated_c_includes_cblas_and_links_openblas():
    source = get_backend("cblas").source(  # type: ignore[misc]
        ModuleOp([_outlined(dense_module(("bias", "relu")))])
    )
    assert source.startswith("#include <cblas.h>\n")
    library = cblas.openblas()
    assert f"-I{library.include_dir}" in library.flags
    assert f"-l{library.library}" in library.libraries
    assert f"-Wl,-rpath,{library.lib_dir}" in library.libraries


def _outlined(module: ModuleOp) -> func.FuncOp:
    from byoc.passes.partition import partition

    module = module.clone()
    annotate(module, [get_backend("cblas")])
    (function,) = partition(module)
    return function.clone()


def test_saved_model_loads_and_runs(tmp_path):
    module = mlp()
    model = check(module)
    model.save(tmp_path / "mlp.byoc")
    loaded = byoc.load(tmp_path / "mlp.byoc")
    args = inputs(module, seed=1)
    np.testing.assert_array_equal(loaded(*args), model(*args))


def test_pack_shares_memory_between_buffers_not_live_together():
    a, b, c = cblas.Scratch(100, 0, 1), cblas.Scratch(50, 1, 2), cblas.Scratch(100, 2, 3)
    total = cblas.pack([a, b, c])
    # a and c never live together: they share offset 0; b sits after them.
    assert a.offset == c.offset == 0
    assert b.offset >= 112 and total == b.offset + 64


# ---------------------------------------------------------------------------
# One-row and one-column products: sgemv
# ---------------------------------------------------------------------------


def _matmul(ta: bool = False, tb: bool = False) -> Callable[..., SSAValue]:
    return lambda e, a, b: e(relay.MatmulOp(a, b, transpose_a=ta, transpose_b=tb))


def _batch_matmul(ta: bool = False, tb: bool = False) -> Callable[..., SSAValue]:
    return lambda e, a, b: e(relay.BatchMatmulOp(a, b, transpose_a=ta, transpose_b=tb))


def _dense(e: Emit, x: SSAValue, w: SSAValue) -> SSAValue:
    return e(relay.DenseOp(x, w))


# name: (shapes, body, the sgemv call after `CblasRowMajor, `: trans, rows, cols, ...)
VECTOR_PRODUCTS = {
    # weight [N, K] (dense): y = W x.
    "dense_batch_1": (
        [(1, 48), (20, 48)], _dense, "CblasNoTrans, 20, 48, 1.0f, v1, 48, v0, 1, 0.0f, v2, 1)"
    ),
    "dense_3d_batch_1": (
        [(1, 1, 48), (20, 48)], _dense, "CblasNoTrans, 20, 48, 1.0f, v1, 48, v0, 1,"
    ),
    # weight [K, N] (matmul): y = W^T x.
    "matmul_weight_k_n": (
        [(1, 48), (48, 20)], _matmul(), "CblasTrans, 48, 20, 1.0f, v1, 20, v0, 1, 0.0f, v2, 1)"
    ),
    "matmul_weight_n_k": (
        [(1, 48), (20, 48)], _matmul(tb=True), "CblasNoTrans, 20, 48, 1.0f, v1, 48, v0, 1,"
    ),
    # a stored [K, 1] (transpose_a): its one column is x, stride lda = 1.
    "matmul_transposed_a": (
        [(48, 1), (48, 20)], _matmul(ta=True), "CblasTrans, 48, 20, 1.0f, v1, 20, v0, 1,"
    ),
    "batch_matmul_rows": (
        [(3, 1, 48), (3, 20, 48)], _batch_matmul(tb=True), "CblasNoTrans, 20, 48, 1.0f, "
    ),
    "batch_matmul_rows_k_n": (
        [(3, 1, 48), (3, 48, 20)], _batch_matmul(), "CblasTrans, 48, 20, 1.0f, "
    ),
    # One output column: y = op(A) b.
    "dense_one_unit": (
        [(6, 48), (1, 48)], _dense, "CblasNoTrans, 6, 48, 1.0f, v0, 48, v1, 1, 0.0f, v2, 1)"
    ),
    "matmul_one_column": (
        [(6, 48), (48, 1)], _matmul(), "CblasNoTrans, 6, 48, 1.0f, v0, 48, v1, 1,"
    ),
    "matmul_one_column_transposed_a": (
        [(48, 6), (48, 1)], _matmul(ta=True), "CblasTrans, 48, 6, 1.0f, v0, 6, v1, 1,"
    ),
    "batch_matmul_columns": (
        [(2, 6, 48), (2, 1, 48)], _batch_matmul(tb=True), "CblasNoTrans, 6, 48, 1.0f, "
    ),
}


@pytest.mark.parametrize("name", sorted(VECTOR_PRODUCTS))
def test_one_row_or_column_products_are_sgemv(name):
    shapes, body, call = VECTOR_PRODUCTS[name]
    module = build(shapes, body)
    model = check(module)
    source = model.c_source
    assert f"scipy_cblas_sgemv(CblasRowMajor, {call}" in source
    assert "scipy_cblas_sgemm(" not in source


def test_batch_1_dense_with_bias_and_relu_is_sgemv_then_the_epilogue():
    # The CNN's last layer: [1, 8192] x [10, 8192]^T + bias.
    model = check(dense_module(("bias", "relu"), data=(1, 8192), units=10))
    source = model.c_source
    assert "scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, 10, 8192, 1.0f, " in source
    assert "scipy_cblas_sgemm(" not in source
    assert "< 0.0f) ? 0.0f :" in source


def test_one_row_conv_output_is_sgemv():
    # One output channel: the weight row times the im2col matrix.
    model = check(conv_module("one_output_channel", ("bias", "relu")))
    assert "scipy_cblas_sgemv(CblasRowMajor, CblasTrans, 27, 36, 1.0f, " in model.c_source


# ---------------------------------------------------------------------------
# Large products split across libbyoc's pool of threads
# ---------------------------------------------------------------------------

POOL = "byoc_rt_parallel_for("


@pytest.fixture
def parallel(monkeypatch):
    """Parallel code on for this test (whatever $BYOC_PARALLEL says)."""
    monkeypatch.setenv("BYOC_PARALLEL", "1")


def conv_bias_relu(data, out_channels, kernel=3, stride=1, padding=1, groups=1, axis=1):
    """conv2d + bias_add (along `axis`) + relu."""
    n, c, h, w = data
    oh = (h + 2 * padding - kernel) // stride + 1
    ow = (w + 2 * padding - kernel) // stride + 1
    bias = (n, out_channels, oh, ow)[axis]

    def body(e: Emit, x, wt, b):
        y = conv(e, x, wt, stride, padding, 1, groups)
        return e(relay.ReluOp(e(relay.BiasAddOp(y, b, axis=axis))))

    return build([data, (out_channels, c // groups, kernel, kernel), (bias,)], body)


def bias_dense(data, units, axis):
    bias = (*data[:-1], units)[axis]
    return build(
        [data, (units, data[-1]), (bias,)],
        lambda e, x, w, b: e(relay.ReluOp(e(relay.BiasAddOp(e(relay.DenseOp(x, w)), b, axis=axis)))),
    )


SPLIT = {
    # conv2d: the rows of each image split, oh not a multiple of the thread count.
    "conv_oh7_batch2": lambda: conv_bias_relu((2, 32, 7, 7), 64),
    "conv_oh5_wide": lambda: conv_bias_relu((1, 32, 5, 20), 32),
    "conv_stride2": lambda: conv_bias_relu((1, 16, 15, 15), 32, stride=2),
    "conv_7x7_stride2": lambda: conv_bias_relu((1, 8, 20, 20), 32, kernel=7, stride=2, padding=3),
    "conv_grouped": lambda: conv_bias_relu((1, 32, 9, 9), 64, groups=2),
    "conv_1x1_direct": lambda: conv_bias_relu((2, 64, 9, 9), 64, kernel=1, padding=0),
    "conv_bias_along_y": lambda: conv_bias_relu((2, 32, 7, 7), 64, axis=2),
    "conv_bias_along_batch": lambda: conv_bias_relu((2, 32, 7, 7), 64, axis=0),
    "conv_no_epilogue": lambda: build(
        [(1, 32, 7, 9), (48, 32, 3, 3)], lambda e, x, w: conv(e, x, w, 1, 1, 1, 1)
    ),
    # dense/matmul: the columns split (or the rows, when there are more of them).
    "dense_columns": lambda: dense_module(("bias", "relu"), data=(64, 512), units=1024),
    "dense_rows": lambda: dense_module(("bias",), data=(512, 64), units=40),
    "dense_bias_along_rows": lambda: bias_dense((256, 64), 128, axis=0),
    "dense_3d_bias_along_middle": lambda: bias_dense((4, 64, 128), 64, axis=1),
    "mlp": mlp,
    "matmul_k_n": lambda: build([(96, 256), (256, 200)], _matmul()),
    "matmul_transposed_a": lambda: build([(256, 96), (200, 256)], _matmul(ta=True, tb=True)),
    # sgemv split: rows of W [N, K], columns of W [K, N], rows of A.
    "sgemv_rows": lambda: dense_module(("bias", "relu"), data=(1, 2048), units=1000),
    "sgemv_columns": lambda: build([(1, 1024), (1024, 999)], _matmul()),
    "sgemv_one_unit": lambda: dense_module(("bias",), data=(4096, 64), units=1),
    # batches: a parallel loop over the batch.
    "batch_matmul": lambda: build([(4, 64, 96), (4, 80, 96)], _batch_matmul(tb=True)),
    "batch_matmul_transposed": lambda: build([(3, 96, 64), (3, 96, 80)], _batch_matmul(ta=True)),
    "batch_matmul_shared_x": lambda: build([(1, 64, 96), (4, 80, 96)], _batch_matmul(tb=True)),
    "batch_matmul_shared_y": lambda: build([(4, 64, 96), (1, 80, 96)], _batch_matmul(tb=True)),
    "matmul_batched_transposed_a": lambda: build([(4, 96, 64), (96, 80)], _matmul(ta=True)),
    # bias_add + relu of a returned product: a pass of its own, a parallel loop.
    "standalone_epilogue": lambda: hand_annotated(
        build(
            [(256, 64), (512, 64), (512,)],
            lambda e, x, w, b: (
                e(relay.ReluOp(e(relay.BiasAddOp(y := e(relay.DenseOp(x, w)), b)))), y
            ),
        ),
        "relay.nn.dense", "relay.nn.bias_add", "relay.nn.relu",
    ),
}


@pytest.mark.parametrize("name", sorted(SPLIT))
def test_large_products_are_split_across_threads(parallel, name):
    module = SPLIT[name]()
    model = check(module)
    source = model.c_source
    assert POOL in source
    assert '#include "byoc_runtime.h"' in source
    assert "scipy_openblas_set_num_threads(1);" in source
    # Sequential: the same products, no pool.
    sequential = sequential_c(module)
    assert "byoc_rt_" not in sequential and "constructor" not in sequential


def test_split_conv_fills_and_multiplies_its_own_rows(parallel):
    source = check(conv_bias_relu((2, 32, 7, 7), 64)).c_source
    # At most 7 * 7 / MIN_CHUNK = 3 threads; chunk t is rows [t*7/nt, (t+1)*7/nt).
    assert "= byoc_rt_num_threads();" in source
    assert re.search(r"int64_t (v\d+) = \(v\d+ > 3\) \? 3 : v\d+;", source)
    assert re.search(r"int64_t v\d+ = \(v\d+ \* 7\) / v\d+;", source)
    assert re.search(r"int64_t v\d+ = \(\(v\d+ \* 7\) \+ 7\) / v\d+;", source)
    # One sgemm per chunk: its columns of the im2col buffer, ldb = ldc = 49.
    call = re.search(r"scipy_cblas_sgemm\(CblasRowMajor, CblasNoTrans, CblasNoTrans, 64, (.*)\);", source)
    assert call is not None
    args = call.group(1).split(", ")
    assert args[0].startswith("(int32_t) (") and args[1] == "288"
    assert args[4] == "288" and args[6] == "49" and args[-1] == "49"
    # The image loop stays sequential: one parallel loop, inside it.
    assert source.count(POOL) == 1
    main = source[source.index("int32_t byoc_"):]
    assert main.index("for (int64_t") < main.index(POOL)


def test_small_products_stay_sequential_without_pool_code(parallel):
    for module in (dense_module(("bias", "relu")), conv_module("3x3_same", ("bias", "relu"))):
        source = check(module).c_source
        assert POOL not in source and "constructor" not in source
        # The same C as with no parallel loop (but for the symbol, prefixed in a compiled model).
        assert re.sub(r"byoc_[0-9a-f]+_", "", source) == sequential_c(module)


def test_generated_c_is_the_compiled_c_and_carries_libbyoc(parallel, monkeypatch):
    from byoc.runtime import libbyoc

    functions = ModuleOp([_outlined(SPLIT["dense_columns"]())])
    artifact = cblas.codegen(functions.clone())
    assert artifact.sources["cblas.c"] == cblas.generate_c(functions.clone())
    assert POOL in artifact.sources["cblas.c"]
    for flag in libbyoc.link_flags():
        assert flag in artifact.link_flags
    assert artifact.libraries[0] == libbyoc.library() == artifact.vendor_libraries[0]
    monkeypatch.setenv("BYOC_PARALLEL", "0")
    artifact = cblas.codegen(functions.clone())
    source = artifact.sources["cblas.c"]
    assert source == cblas.generate_c(functions.clone())
    assert "byoc_rt_" not in source and "constructor" not in source
    assert libbyoc.library() not in artifact.libraries


def test_translate_emits_parallel_loops_only_when_allowed(parallel, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "model.mlir"
    path.write_text(str(SPLIT["conv_oh5_wide"]()))
    translate = Path(sys.executable).parent / "byoc-translate"
    sources = {}
    for flag in ("1", "0"):
        env = {**os.environ, "BYOC_PARALLEL": flag, "BYOC_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.run(
            [str(translate), str(path), "--emit-c", "--annotate=cblas"],
            capture_output=True, text=True, env=env,
        )
        assert proc.returncode == 0, proc.stderr
        sources[flag] = proc.stdout
    assert POOL in sources["1"]
    assert "byoc_rt_" not in sources["0"] and "constructor" not in sources["0"]
    assert "scipy_cblas_sgemm(" in sources["0"]


RUN_SAVED = """
import sys
import cffi
import numpy as np
import byoc
from byoc.backends import cblas

data = np.load(sys.argv[2])
model = byoc.load(sys.argv[1])
got = model(*[data[f"arg{i}"] for i in range(int(data["count"]))])
np.testing.assert_allclose(got, data["want"], rtol=1e-4, atol=1e-5)
ffi = cffi.FFI()
ffi.cdef("int32_t byoc_rt_num_threads(void);")
print(ffi.dlopen(None).byoc_rt_num_threads(), cblas.get_threads())
"""


def test_saved_split_model_runs_with_three_threads(parallel, tmp_path):
    """BYOC_NUM_THREADS=3 on a conv whose 7 rows do not split evenly; the saved
    model makes OpenBLAS single-threaded when it loads, with no byoc code run."""
    import os
    import subprocess
    import sys

    module = conv_bias_relu((2, 32, 7, 7), 64)
    model = check(module)
    assert POOL in model.c_source
    model.save(tmp_path / "conv.byoc")
    args = inputs(module, seed=5)
    (want,) = byoc.run_reference(module, args)
    np.savez(tmp_path / "data.npz", want=want, count=len(args), **{f"arg{i}": a for i, a in enumerate(args)})
    env = {**os.environ, "BYOC_NUM_THREADS": "3", "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENBLAS_NUM_THREADS", None)
    proc = subprocess.run(
        [sys.executable, "-c", RUN_SAVED, str(tmp_path / "conv.byoc"), str(tmp_path / "data.npz")],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    pool_threads, openblas_threads = map(int, proc.stdout.split())
    assert pool_threads == 3
    assert openblas_threads == 1


COMPILE_SEQUENTIAL = """
import sys
import numpy as np
import byoc
from byoc.backends import cblas

before = cblas.get_threads()
data = np.load(sys.argv[2])
model = byoc.compile(open(sys.argv[1]).read(), targets=["cblas"], cache=False)
source = model.c_source
assert "byoc_rt_" not in source and "constructor" not in source, source
assert "scipy_cblas_sgemm(" in source
got = model(*[data[f"arg{i}"] for i in range(int(data["count"]))])
np.testing.assert_allclose(got, data["want"], rtol=1e-4, atol=1e-5)
assert cblas.get_threads() == before, (before, cblas.get_threads())
print("ok")
"""


def test_byoc_parallel_0_compiles_sequential_c(tmp_path):
    import os
    import subprocess
    import sys

    module = conv_bias_relu((2, 32, 7, 7), 64)
    (tmp_path / "model.mlir").write_text(str(module))
    args = inputs(module, seed=6)
    (want,) = byoc.run_reference(module, args)
    np.savez(tmp_path / "data.npz", want=want, count=len(args), **{f"arg{i}": a for i, a in enumerate(args)})
    env = {**os.environ, "BYOC_PARALLEL": "0", "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE_SEQUENTIAL, str(tmp_path / "model.mlir"), str(tmp_path / "data.npz")],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


AOT_PROGRAM = r"""
#include <stdio.h>
#include "dense.h"

int main(void) {
  static float x[DENSE_INPUT_0_SIZE], w[DENSE_INPUT_1_SIZE], b[DENSE_INPUT_2_SIZE], y[DENSE_OUTPUT_0_SIZE];
  for (int i = 0; i < DENSE_INPUT_0_SIZE; ++i) x[i] = (float)(i % 7) * 0.25f - 0.75f;
  for (int i = 0; i < DENSE_INPUT_1_SIZE; ++i) w[i] = (float)(i % 11) * 0.0625f - 0.3125f;
  for (int i = 0; i < DENSE_INPUT_2_SIZE; ++i) b[i] = (float)(i % 3) * 0.5f - 0.5f;
  if (dense_run(x, w, b, y) != 0) return 1;
  for (int i = 0; i < DENSE_OUTPUT_0_SIZE; ++i) printf("%.9g\n", y[i]);
  return 0;
}
"""


def test_exported_library_splits_on_libbyoc_s_pool(parallel, tmp_path):
    """The AOT library links libbyoc (shipped beside it) from the artifact's flags."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    m, k, n = 16, 256, 256
    module = dense_module(("bias", "relu"), data=(m, k), units=n)
    (tmp_path / "dense.mlir").write_text(str(module))
    translate = Path(sys.executable).parent / "byoc-translate"
    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    source = subprocess.run(
        [str(translate), str(tmp_path / "dense.mlir"), "--emit-c", "--annotate=cblas"],
        capture_output=True, text=True, env=env,
    )
    assert source.returncode == 0 and POOL in source.stdout, source.stderr
    proc = subprocess.run(
        [str(translate), str(tmp_path / "dense.mlir"), "--emit-library", "--annotate=cblas",
         "--name", "dense", "-o", str(tmp_path / "libdense.so")],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "main.c").write_text(AOT_PROGRAM)
    build_ = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-I", str(tmp_path),
         "-L", str(tmp_path), "-ldense", f"-Wl,-rpath,{tmp_path}", "-o", str(tmp_path / "main")],
        capture_output=True, text=True,
    )
    assert build_.returncode == 0, build_.stderr
    x = ((np.arange(m * k) % 7) * 0.25 - 0.75).astype(np.float32).reshape(m, k)
    w = ((np.arange(n * k) % 11) * 0.0625 - 0.3125).astype(np.float32).reshape(n, k)
    b = ((np.arange(n) % 3) * 0.5 - 0.5).astype(np.float32)
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    for threads in ({}, {"BYOC_NUM_THREADS": "3"}):
        run = subprocess.run([str(tmp_path / "main")], env=threads, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        got = np.array([float(v) for v in run.stdout.split()], np.float32).reshape(m, n)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
