"""The onnxruntime backend: relay functions as ONNX models run by InferenceSessions.

Every model is built through the relay Python API, compiled with
`byoc.compile` and compared with `byoc.run_reference`. Whatever the host runs
in these models is elementwise (the host lowerings of the other ops are not
all written yet); everything else goes to onnxruntime.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import Block, Region

import byoc
from graphs import build, check_against_reference, host_ir, weight_scaled_inputs
from byoc.backends import Artifact, get_backend
from byoc.dialects import relay
from byoc.runtime.compiled import CompiledModule
from byoc.runtime.saved import LoadedHost

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from byoc.backends import onnxruntime as ort_backend  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


inputs = weight_scaled_inputs


def check(
    module: ModuleOp, targets: Sequence[str] = ("onnxruntime",), seed: int = 0
) -> byoc.CompiledModule:
    """Compile for `targets`, run, and compare every output with the reference."""
    return check_against_reference(module, targets, seed, RTOL, ATOL, cache=False)


def offloaded(model: byoc.CompiledModule, *op_names: str) -> None:
    """Each of `op_names` left the host for an onnxruntime function."""
    host = host_ir(model)
    for name in op_names:
        assert name not in host, f"{name} stayed on the host"
    assert "extern.call @onnxruntime_" in host
    assert any(name.endswith(".onnx.b64") for name in model.sources)


def const(values: np.ndarray) -> relay.ConstantOp:
    return relay.ConstantOp.from_numpy(np.asarray(values, dtype=np.float32))


# ---------------------------------------------------------------------------
# Single ops
# ---------------------------------------------------------------------------

BINARY = {op.name: op for op in relay.BINARY_OPS}
UNARY = {op.name: op for op in relay.UNARY_OPS}
POSITIVE_ONLY = {"relay.log", "relay.sqrt", "relay.rsqrt"}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((), (5,))])
def test_binary(name, shapes):
    def body(e, a, b):
        if name == "relay.power":  # a positive base: real results
            a = e(relay.AbsOp(a))
        return e(BINARY[name](a, b))

    model = check(build(shapes, body))
    offloaded(model, name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    def body(e, x):
        if name in POSITIVE_ONLY:
            x = e(relay.AddOp(e(relay.AbsOp(x)), e(const(0.5))))
        return e(UNARY[name](x))

    model = check(build([(2, 3, 5)], body))
    offloaded(model, name)


ACTIVATIONS = {
    "leaky_relu": lambda x: relay.LeakyReluOp(x, 0.2),
    "elu": lambda x: relay.EluOp(x, 0.7),
    "selu": lambda x: relay.SeluOp(x),
    "hard_sigmoid": lambda x: relay.HardSigmoidOp(x, 0.3, 0.4),
    "shrink": lambda x: relay.ShrinkOp(x, 0.25, 0.75),
    "gelu": lambda x: relay.GeluOp(x),
    "gelu_tanh": lambda x: relay.GeluOp(x, "tanh"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    model = check(build([(2, 3, 5)], lambda e, x: e(ACTIVATIONS[name](x))))
    op_name = "relay.nn." + name.removesuffix("_tanh")
    offloaded(model, op_name)


def test_prelu():
    module = build([(2, 3, 4, 5), (3,)], lambda e, x, a: e(relay.PReluOp(x, a)))
    offloaded(check(module), "relay.nn.prelu")


def test_clip():
    model = check(build([(4, 6)], lambda e, x: e(relay.ClipOp(x, -0.5, 0.25))))
    offloaded(model, "relay.clip")


@pytest.mark.parametrize("shape, axis", [((2, 3, 4, 5), 1), ((4, 6), -1), ((3, 4, 2), 0), ((5,), 0)])
def test_bias_add(shape, axis):
    bias = (shape[axis],)
    model = check(build([shape, bias], lambda e, x, b: e(relay.BiasAddOp(x, b, axis=axis))))
    offloaded(model, "relay.nn.bias_add")


@pytest.mark.parametrize("data, units", [((4, 16), 8), ((2, 3, 16), 12), ((7,), 5), ((1, 1), 1)])
def test_dense(data, units):
    model = check(
        build([data, (units, data[-1])], lambda e, x, w: e(relay.DenseOp(x, w)))
    )
    offloaded(model, "relay.nn.dense")


def test_dense_with_constant_weight_and_bias():
    rng = np.random.default_rng(1)
    weight, bias = rng.standard_normal((8, 16)) / 4, rng.standard_normal(8)

    def body(e, x):
        y = e(relay.DenseOp(x, e(const(weight))))
        return e(relay.BiasAddOp(y, e(const(bias)), axis=-1))

    model = check(build([(4, 16)], body))
    offloaded(model, "relay.nn.dense", "relay.constant", "relay.nn.bias_add")
    # The weights are initializers of the one ONNX model.
    (text,) = [t for n, t in model.sources.items() if n.endswith(".onnx.txt")]
    assert "float[8,16]" in text and "Gemm" in text


@pytest.mark.parametrize(
    "a, b, ta, tb",
    [
        ((4, 5), (5, 6), False, False),
        ((5, 4), (6, 5), True, True),
        ((2, 3, 5), (5, 6), False, False),
        ((2, 5, 3), (6, 5), True, True),
        ((5,), (5, 6), False, False),
    ],
)
def test_matmul(a, b, ta, tb):
    model = check(
        build([a, b], lambda e, x, y: e(relay.MatmulOp(x, y, transpose_a=ta, transpose_b=tb)))
    )
    offloaded(model, "relay.nn.matmul")


@pytest.mark.parametrize(
    "x, y, ta, tb",
    [
        ((3, 4, 5), (3, 6, 5), False, True),
        ((3, 5, 4), (3, 6, 5), True, True),
        ((3, 4, 5), (3, 5, 6), False, False),
        ((1, 4, 5), (3, 6, 5), False, True),
        ((3, 5, 4), (1, 5, 6), True, False),
    ],
)
def test_batch_matmul(x, y, ta, tb):
    model = check(
        build([x, y], lambda e, a, b: e(relay.BatchMatmulOp(a, b, transpose_a=ta, transpose_b=tb)))
    )
    offloaded(model, "relay.nn.batch_matmul")


CONVS = {
    # name: (data NCHW, (O, KH, KW), strides, padding, dilation, groups)
    "1x1": ((2, 8, 5, 6), (4, 1, 1), 1, 0, 1, 1),
    "3x3_same": ((2, 6, 9, 7), (8, 3, 3), 1, (1, 1), 1, 1),
    "5x3_asymmetric_padding": ((1, 4, 9, 8), (6, 5, 3), (2, 1), (2, 1, 0, 3), 1, 1),
    "3x3_dilated_strided": ((2, 3, 12, 13), (4, 3, 3), (2, 3), (1, 2), (2, 1), 1),
    "grouped": ((2, 4, 6, 6), (6, 3, 3), 1, (1, 1), 1, 2),
    "depthwise": ((1, 4, 7, 7), (8, 3, 3), 1, (1, 1), 1, 4),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d(name):
    data, (o, kh, kw), strides, padding, dilation, groups = CONVS[name]
    weight = (o, data[1] // groups, kh, kw)
    module = build(
        [data, weight],
        lambda e, x, w: e(relay.Conv2dOp(x, w, strides, padding, dilation, groups)),
    )
    offloaded(check(module), "relay.nn.conv2d")


POOLS = {
    # name: (data, pool_size, strides, padding, dilation, ceil_mode)
    "2x2": ((2, 3, 8, 8), 2, 2, (0, 0), 1, False),
    "3x3_padded": ((1, 2, 7, 9), 3, 1, (1, 1), 1, False),
    "asymmetric": ((1, 2, 9, 8), (3, 2), (2, 1), (1, 0, 2, 1), 1, False),
    "dilated": ((1, 2, 11, 11), 3, 2, (1, 1), 2, False),
    "ceil_mode": ((1, 2, 7, 7), 2, 2, (0, 0), 1, True),
    "ceil_mode_padded": ((1, 1, 10, 10), 3, 3, (1, 1), 1, True),
}


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("name", sorted(POOLS))
def test_avg_pool2d(name, count_include_pad):
    data, size, strides, padding, dilation, ceil_mode = POOLS[name]
    module = build(
        [data],
        lambda e, x: e(
            relay.AvgPool2dOp(x, size, strides, padding, dilation, ceil_mode, count_include_pad)
        ),
    )
    offloaded(check(module), "relay.nn.avg_pool2d")


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool2d(name):
    data, size, strides, padding, dilation, ceil_mode = POOLS[name]
    module = build(
        [data], lambda e, x: e(relay.MaxPool2dOp(x, size, strides, padding, dilation, ceil_mode))
    )
    offloaded(check(module), "relay.nn.max_pool2d")


WINDOW_OPS_3D_AND_TRANSPOSED = {
    # name: (input shapes, builder)
    "conv3d": (
        [(1, 4, 5, 4, 6), (6, 2, 3, 2, 3)],
        lambda x, w: relay.Conv3dOp(x, w, (1, 2, 1), (1, 0, 1, 0, 1, 1), (2, 1, 1), 2),
    ),
    "conv2d_transpose": (
        [(2, 4, 3, 4), (4, 3, 3, 2)],
        lambda x, w: relay.Conv2dTransposeOp(x, w, (2, 3), (1, 0, 0, 1), 1, 2, output_padding=(1, 0)),
    ),
    "conv3d_transpose": (
        [(1, 2, 3, 2, 3), (2, 3, 2, 2, 3)],
        lambda x, w: relay.Conv3dTransposeOp(x, w, 2, 1, (1, 2, 1)),
    ),
    "max_pool3d": ([(1, 2, 5, 6, 5)], lambda x: relay.MaxPool3dOp(x, (3, 2, 3), 2, 1, ceil_mode=True)),
    "avg_pool3d": ([(1, 2, 5, 6, 5)], lambda x: relay.AvgPool3dOp(x, 3, (1, 2, 1), 1, count_include_pad=True)),
}


@pytest.mark.parametrize("name", sorted(WINDOW_OPS_3D_AND_TRANSPOSED))
def test_window_ops_3d_and_transposed(name):
    shapes, make = WINDOW_OPS_3D_AND_TRANSPOSED[name]
    module = build(shapes, lambda e, *args: e(make(*args)))
    offloaded(check(module), f"relay.nn.{name}")


def test_global_avg_pool2d():
    model = check(build([(2, 3, 5, 7)], lambda e, x: e(relay.GlobalAvgPool2dOp(x))))
    offloaded(model, "relay.nn.global_avg_pool2d")


def test_ceil_mode_window_in_the_padding_is_declined():
    # H=4, pool 1, stride 2: Relay's ceil_mode makes a third window at row 4,
    # past the input; ONNX Runtime drops it.
    module = build([(1, 1, 4, 4)], lambda e, x: e(relay.MaxPool2dOp(x, 1, 2, 0, 1, True)))
    pool = next(op for op in module.walk() if isinstance(op, relay.MaxPool2dOp))
    reason = get_backend("onnxruntime").check(pool)
    assert reason is not None and "ceil_mode" in reason


@pytest.mark.parametrize("cls", [relay.SoftmaxOp, relay.LogSoftmaxOp])
@pytest.mark.parametrize("shape, axis", [((4, 10), -1), ((2, 5, 3), 1)])
def test_softmax(cls, shape, axis):
    model = check(build([shape], lambda e, x: e(cls(x, axis=axis))))
    offloaded(model, cls.name)


@pytest.mark.parametrize(
    "shape, axis, center, scale",
    [
        ((2, 3, 4, 5), 1, True, True),  # BatchNormalization
        ((2, 3, 4, 5), 1, False, False),
        ((4, 6), 1, True, True),
        ((4, 6), 0, True, True),  # elementwise decomposition
        ((3, 4, 5), 0, True, False),
    ],
)
def test_batch_norm(shape, axis, center, scale):
    channels = shape[axis]
    variance = np.random.default_rng(2).uniform(0.5, 2.0, channels)

    def body(e, x, gamma, beta, mean):
        var = e(const(variance))
        return e(relay.BatchNormOp(x, gamma, beta, mean, var, axis, 1e-3, center, scale))

    model = check(build([shape, (channels,), (channels,), (channels,)], body))
    offloaded(model, "relay.nn.batch_norm")


@pytest.mark.parametrize(
    "shape, axis, center, scale",
    [
        ((4, 16), -1, True, True),  # LayerNormalization
        ((2, 3, 8), 2, False, False),
        ((2, 6, 5), 1, True, True),  # decomposition (ONNX normalises trailing axes)
        ((3, 4), 0, True, False),
    ],
)
def test_layer_norm(shape, axis, center, scale):
    n = shape[axis]
    module = build(
        [shape, (n,), (n,)],
        lambda e, x, g, b: e(relay.LayerNormOp(x, g, b, axis, 1e-5, center, scale)),
    )
    offloaded(check(module), "relay.nn.layer_norm")


def test_lrn():
    module = build(
        [(2, 7, 3, 4)], lambda e, x: e(relay.LrnOp(x, 5, 1, bias=1.5, alpha=0.3, beta=0.7))
    )
    offloaded(check(module), "relay.nn.lrn")


@pytest.mark.parametrize(
    "shape, size, axis, reason",
    [((2, 7, 3), 3, 1, "rank 3"), ((1, 6, 2, 2), 4, 1, "odd sizes"), ((1, 6, 2, 2), 3, 2, "axis 2")],
)
def test_lrn_onnxruntime_cannot_run_stays_on_the_host(shape, size, axis, reason):
    module = build([shape], lambda e, x: e(relay.LrnOp(x, size, axis)))
    op = next(o for o in module.walk() if isinstance(o, relay.LrnOp))
    assert reason in ort_backend.SUPPORTED["relay.nn.lrn"](op)
    assert "relay.nn.lrn" in host_ir(check(module))


@pytest.mark.parametrize("center, scale", [(True, True), (False, False)])
def test_instance_norm(center, scale):
    module = build(
        [(2, 3, 4, 5), (3,), (3,)],
        lambda e, x, g, b: e(relay.InstanceNormOp(x, g, b, 1, 1e-3, center, scale)),
    )
    offloaded(check(module), "relay.nn.instance_norm")


def test_instance_norm_on_another_axis_stays_on_the_host():
    module = build([(2, 3, 4), (4,), (4,)], lambda e, x, g, b: e(relay.InstanceNormOp(x, g, b, 2)))
    assert "relay.nn.instance_norm" in host_ir(check(module))


SHAPE_OPS = {
    # name: (data shape, op builder)
    "reshape": ((2, 3, 4), lambda x: relay.ReshapeOp(x, (0, -1))),
    "reshape_split": ((6, 4), lambda x: relay.ReshapeOp(x, (-4, 2, 3, -2))),
    "transpose": ((2, 3, 4), lambda x: relay.TransposeOp(x, (1, 2, 0))),
    "transpose_reversed": ((2, 3, 4), lambda x: relay.TransposeOp(x)),
    "batch_flatten": ((2, 3, 4, 5), lambda x: relay.BatchFlattenOp(x)),
    "squeeze": ((1, 3, 1, 4), lambda x: relay.SqueezeOp(x, (2,))),
    "squeeze_all": ((1, 3, 1, 4), lambda x: relay.SqueezeOp(x)),
    "squeeze_to_scalar": ((1, 1), lambda x: relay.SqueezeOp(x)),
    "expand_dims": ((3, 4), lambda x: relay.ExpandDimsOp(x, 1, 2)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op(name):
    # Alone in a function, a reshape's output may alias its input inside
    # onnxruntime: the result must still land in the host's output buffer.
    shape, make = SHAPE_OPS[name]
    names: list[str] = []

    def body(e, x):
        op = make(x)
        names.append(op.name)
        return e(op)

    model = check(build([shape], body))
    offloaded(model, *names)


@pytest.mark.parametrize("axis", [0, -1])
def test_concatenate(axis):
    shapes = [(2, 3), (2, 3), (2, 3)] if axis == 0 else [(2, 1), (2, 3), (2, 2)]
    model = check(build(shapes, lambda e, a, b, c: e(relay.ConcatenateOp([a, b, c], axis))))
    offloaded(model, "relay.concatenate")


@pytest.mark.parametrize("cls", relay.REDUCTION_OPS)
@pytest.mark.parametrize(
    "axis, keepdims, exclude",
    [(None, False, False), ((1,), False, False), ((0, 2), True, False), ((1,), True, True)],
)
def test_reduction(cls, axis, keepdims, exclude):
    model = check(build([(3, 4, 5)], lambda e, x: e(cls(x, axis, keepdims, exclude))))
    offloaded(model, cls.name)


def test_reduction_of_a_scalar():
    model = check(build([()], lambda e, x: e(relay.SumOp(e(relay.ExpOp(x))))))
    offloaded(model, "relay.sum")


# ---------------------------------------------------------------------------
# Functions: several outputs, constants, values returned twice
# ---------------------------------------------------------------------------


def test_one_function_with_several_outputs():
    weight = np.linspace(-1, 1, 12).reshape(3, 4)

    def body(e, x):
        y = e(relay.DenseOp(x, e(const(weight))))
        z = e(relay.TanhOp(y))
        return [z, y, z]

    model = check(build([(2, 4)], body))
    offloaded(model, "relay.nn.dense", "relay.tanh", "relay.constant")
    assert host_ir(model).count("extern.call") == 1


def call_symbol(runner: ort_backend.OnnxFunction, *arrays: np.ndarray) -> int:
    """Call an OnnxFunction through its C function pointer, as the host does."""
    from cffi import FFI

    ffi = FFI()
    signature = f"int32_t(*)({', '.join(['float*'] * len(arrays))})"
    pointer = ffi.cast(signature, runner.address)
    return pointer(*[ffi.cast("float*", ffi.from_buffer(a)) for a in arrays])


def test_inputs_constants_and_repeats_returned_through_identity():
    # Partitioning never outlines such a function (it returns values once and
    # clones constants), but to_onnx must still give every output its own node.
    block = Block(arg_types=[TensorType(f32, (2, 3))])
    c = const(np.arange(3))
    y = relay.AddOp(block.args[0], c.results[0])
    block.add_ops([c, y, func.ReturnOp(y.results[0], block.args[0], c.results[0], y.results[0])])
    types = [y.results[0].type, block.args[0].type, c.results[0].type, y.results[0].type]
    function = func.FuncOp(
        "byoc_test_onnxruntime_0",
        FunctionType.from_lists([block.args[0].type], types),
        Region(block),
    )
    model = ort_backend.to_onnx(function)
    assert [n.op_type for n in model.graph.node] == ["Add", "Identity", "Identity", "Identity"]
    runner = ort_backend.OnnxFunction("byoc_test_onnxruntime_0", model.SerializeToString())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = [np.full(tuple(t.get_shape()), np.nan, np.float32) for t in types]
    assert call_symbol(runner, x, *outs) == 0
    for got, want in zip(outs, [x + np.arange(3), x, np.arange(3), x + np.arange(3)]):
        np.testing.assert_array_equal(got, want)


def test_a_small_network():
    rng = np.random.default_rng(3)

    def body(e, x):
        w1 = e(const(rng.standard_normal((8, 3, 3, 3)) / 5))
        y = e(relay.Conv2dOp(x, w1, 1, (1, 1)))
        y = e(relay.BiasAddOp(y, e(const(rng.standard_normal(8)))))
        y = e(relay.ReluOp(y))
        y = e(relay.MaxPool2dOp(y, 2, 2))
        y = e(relay.BatchFlattenOp(y))
        y = e(relay.DenseOp(y, e(const(rng.standard_normal((10, 128)) / 10))))
        return e(relay.SoftmaxOp(y))

    model = check(build([(2, 3, 8, 8)], body))
    assert host_ir(model).count("extern.call") == 1
    assert host_ir(model).count("relay.") == 0


# ---------------------------------------------------------------------------
# Mixing backends and the host
# ---------------------------------------------------------------------------


def test_float64_stays_on_the_host_with_the_reason():
    block = Block(arg_types=[TensorType(f32, (4,)), TensorType(f64, (4,))])
    a = relay.TanhOp(block.args[0])
    b = relay.ExpOp(block.args[1])
    c = relay.TanhOp(b.results[0])
    block.add_ops([a, b, c, func.ReturnOp(a.results[0], c.results[0])])
    main = func.FuncOp(
        "main",
        FunctionType.from_lists(
            [arg.type for arg in block.args], [a.results[0].type, c.results[0].type]
        ),
        Region(block),
    )
    module = ModuleOp([main])
    reason = get_backend("onnxruntime").check(b)
    assert reason is not None and "only float32" in reason
    model = check(module)
    host = host_ir(model)
    assert "relay.exp" in host and host.count("relay.tanh") == 1
    assert host.count("extern.call @onnxruntime_") == 1


@pytest.fixture
def tanh_on_the_host(monkeypatch):
    """onnxruntime declines relay.tanh (the host lowers it) for one test."""
    monkeypatch.delitem(ort_backend.SUPPORTED, "relay.tanh")


def test_onnxruntime_and_the_host_interleave(tanh_on_the_host):
    def body(e, x, w):
        y = e(relay.DenseOp(x, w))  # onnxruntime
        y = e(relay.TanhOp(y))  # host
        y = e(relay.SoftmaxOp(y))  # onnxruntime
        z = e(relay.TanhOp(e(relay.SumOp(x, (1,), keepdims=True))))  # onnxruntime, host
        return [y, e(relay.MultiplyOp(y, z))]  # onnxruntime

    model = check(build([(4, 16), (8, 16)], body))
    host = host_ir(model)
    assert host.count("relay.tanh") == 2
    assert "relay.nn.dense" not in host and "relay.nn.softmax" not in host
    assert host.count("extern.call @onnxruntime_") >= 2


def test_ccompiler_onnxruntime_and_the_host(tanh_on_the_host):
    def body(e, x, w, b):
        y = e(relay.DenseOp(x, w))  # onnxruntime
        y = e(relay.AddOp(y, b))  # ccompiler
        y = e(relay.TanhOp(y))  # host
        y = e(relay.LogSoftmaxOp(y))  # onnxruntime
        return e(relay.MultiplyOp(y, e(relay.NegativeOp(y))))  # ccompiler

    model = check(build([(4, 16), (8, 16), (8,)], body), targets=["ccompiler", "onnxruntime"])
    host = host_ir(model)
    assert "relay.tanh" in host
    assert "extern.call @ccompiler_" in host and "extern.call @onnxruntime_" in host
    assert {a.backend for a in model.artifacts} == {"ccompiler", "onnxruntime"}
    assert "ccompiler.c" in model.sources


# ---------------------------------------------------------------------------
# Failures and the runtime
# ---------------------------------------------------------------------------


def add_model() -> ModuleOp:
    return build([(4,), (4,)], lambda e, a, b: e(relay.AddOp(a, b)))


def runners(model: byoc.CompiledModule) -> list[ort_backend.OnnxFunction]:
    return [r for a in model.artifacts for r in a.keepalive]


def test_a_failing_session_makes_the_call_raise(monkeypatch, caplog):
    model = byoc.compile(add_model(), targets=["onnxruntime"], cache=False)
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    np.testing.assert_array_equal(model(a, b), a + b)

    def explode(*args):
        raise RuntimeError("session exploded")

    monkeypatch.setattr(ort_backend._RawBinding, "run", explode)
    monkeypatch.setattr(ort_backend._PublicBinding, "run", explode)
    with caplog.at_level(logging.ERROR), pytest.raises(byoc.ByocError, match="failed"):
        model(a, b)
    (runner,) = runners(model)
    assert isinstance(runner.last_error, RuntimeError)
    assert "session exploded" in caplog.text and runner.symbol in caplog.text
    monkeypatch.undo()
    np.testing.assert_array_equal(model(a, b), a + b)


def test_the_public_io_binding_gives_the_same_results(monkeypatch):
    monkeypatch.setattr(ort_backend, "_raw_binding_works", lambda: False)
    model = check(build([(3, 4), (4,)], lambda e, a, b: e(relay.SubtractOp(a, b))))
    (runner,) = runners(model)
    assert runner._binding_type is ort_backend._PublicBinding


def test_the_fast_io_binding_works_with_this_onnxruntime():
    assert ort_backend._raw_binding_works()


def test_calls_from_several_threads():
    module = build(
        [(64, 32), (16, 32)], lambda e, x, w: e(relay.SoftmaxOp(e(relay.DenseOp(x, w))))
    )
    model = byoc.compile(module, targets=["onnxruntime"], cache=False)
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for k in range(20):
                args = inputs(module, seed * 100 + k)
                want = byoc.run_reference(module, args)[0]
                np.testing.assert_allclose(model(*args), want, rtol=RTOL, atol=ATOL)
        except BaseException as err:  # noqa: BLE001 - reported below
            failures.append(err)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]


def test_two_compiles_of_one_model_both_work():
    # Same IR, same symbol: the second registration must not break the first model.
    first = byoc.compile(add_model(), targets=["onnxruntime"], cache=False)
    second = byoc.compile(add_model(), targets=["onnxruntime"], cache=False)
    assert first.artifacts[0].symbols == second.artifacts[0].symbols
    a, b = np.arange(4, dtype=np.float32), np.full(4, 2, np.float32)
    del second
    np.testing.assert_array_equal(first(a, b), a + b)


def test_the_models_are_kept_as_text_sources():
    model = byoc.compile(add_model(), targets=["onnxruntime"], cache=False)
    (symbol,) = model.artifacts[0].symbols
    data = base64.b64decode(model.sources[f"{symbol}.onnx.b64"])
    proto = onnx.load_model_from_string(data)
    onnx.checker.check_model(proto)
    assert [n.op_type for n in proto.graph.node] == ["Add"]
    assert [i.name for i in proto.graph.input] == ["in0", "in1"]
    assert "Add (in0, in1)" in model.sources[f"{symbol}.onnx.txt"]
    assert model.c_source == ""  # nothing here is C


def test_artifact_reloads_from_its_sources():
    """What loading a saved model does once saved.py calls `load_artifact`:
    sessions and callbacks rebuilt from the sources alone."""
    module = build([(3, 4), (5, 4)], lambda e, x, w: e(relay.TanhOp(e(relay.DenseOp(x, w)))))
    model = byoc.compile(module, targets=["onnxruntime"], cache=False)
    (artifact,) = model.artifacts
    stored = Artifact(artifact.backend, list(artifact.symbols), dict(artifact.sources))
    ort_backend.load_artifact(stored)
    assert len(stored.keepalive) == 1
    assert stored.keepalive[0].address != artifact.keepalive[0].address
    host = LoadedHost(model.host.emit_objects(), [], stored.symbols)
    loaded = CompiledModule(
        host, model.entry_name, model.inputs, model.outputs, [stored], model.partitioned_ir
    )
    args = inputs(module)
    np.testing.assert_allclose(
        loaded(*args), byoc.run_reference(module, args)[0], rtol=RTOL, atol=ATOL
    )


def test_save_and_load(tmp_path):
    model = byoc.compile(add_model(), targets=["onnxruntime"], cache=False)
    model.save(tmp_path / "m.byoc")
    loaded = byoc.load(tmp_path / "m.byoc")
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    np.testing.assert_array_equal(loaded(a, b), a + b)


def test_source_shows_the_onnx_text():
    from byoc.runtime.build import functions_of, partition_for

    module = add_model()
    partition_for(module, [get_backend("onnxruntime")])
    text = ort_backend.source(functions_of(module, "onnxruntime"))
    assert "opset_import" in text and "Add (in0, in1)" in text
