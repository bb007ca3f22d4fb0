"""Quantized models: the qnn ops against onnxruntime's kernels, their lowerings
(host and ccompiler) against the reference bit for bit, QDQ models written by
`onnxruntime.quantization.quantize_static` end to end, and bad quantization
parameters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.dialects import relay  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402
from byoc.frontend.onnx import from_onnx  # noqa: E402
from byoc.frontend.parse import parse_text  # noqa: E402
from byoc.passes.fake_quantization_to_integer import fake_quantization_to_integer  # noqa: E402

BIN = Path(sys.executable).parent
N = helper.make_node
F32, U8, I8, I32 = np.float32, np.uint8, np.int8, np.int32
U16, I16 = np.uint16, np.int16
ort.set_default_logger_severity(3)


def session(model: onnx.ModelProto, optimize: bool = True) -> ort.InferenceSession:
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def model_of(
    nodes, inputs, outputs, initializers, domains=("",), elem=TensorProto.FLOAT, out_elem=None
):
    """A one-graph model; inputs of type `elem`, outputs of `out_elem` (default `elem`)."""
    out_elem = elem if out_elem is None else out_elem
    graph = helper.make_graph(
        nodes,
        "qnn",
        [helper.make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, out_elem, None) for n in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    opsets = [helper.make_opsetid(d, 1 if d else 21) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


# --- The references against onnxruntime's own kernels ----------------------------------


def scalar(value, dtype) -> relay.ConstantOp:
    return relay.ConstantOp.from_numpy(np.asarray(value, dtype))


def run_ops(build, *arrays):
    """Run relay ops built by `build(block args)` on `arrays` with the reference."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
    from xdsl.ir import Block, Region

    from byoc.dialects.relay.constant import element_type_of

    types = [TensorType(element_type_of(a.dtype), a.shape) for a in arrays]
    block = Block(arg_types=types)
    ops = build(*block.args)
    block.add_ops(ops)
    block.add_op(func.ReturnOp(ops[-1].results[0]))
    main = func.FuncOp("main", FunctionType.from_lists(types, [ops[-1].results[0].type]), Region(block))
    module = ModuleOp([main])
    module.verify()
    return byoc.run_reference(module, list(arrays))[0]


TIES = (np.arange(-40, 40, dtype=F32) + F32(0.5)) * F32(0.25)


ONNX_ELEMENT = {U8: TensorProto.UINT8, I8: TensorProto.INT8, U16: TensorProto.UINT16, I16: TensorProto.INT16}


@pytest.mark.parametrize(
    "dtype,zero",
    [(U8, 128), (I8, -3), (U8, 0), (I8, 127), (I16, -300), (U16, 40000), (I16, 32767), (U16, 0)],
)
def test_quantize_rounds_and_saturates_as_onnxruntime(dtype, zero):
    big = np.array([1e9, -1e9, np.inf, -np.inf, 0.0, 8191.875, -8192.125, 16383.5], F32)
    x = np.concatenate([TIES, big, np.linspace(-90, 90, 61, dtype=F32)])
    model = model_of(
        [N("QuantizeLinear", ["x", "s", "z"], ["y"])], {"x": list(x.shape)}, ["y"],
        {"s": F32(0.25), "z": dtype(zero)}, out_elem=ONNX_ELEMENT[dtype],
    )
    want = session(model).run(None, {"x": x})[0]
    got = run_ops(
        lambda v: (s := scalar(0.25, F32), z := scalar(zero, I32),
                   relay.QuantizeOp(v, s.result, z.result, out_dtype=np.dtype(dtype).name)),
        x,
    )
    np.testing.assert_array_equal(got, want)


def _qlinear_binary(op_type: str, a, b, params):
    sa, za, sb, zb, sc, zc = params
    model = model_of(
        [N(op_type, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain="com.microsoft")],
        {"a": list(a.shape), "b": list(b.shape)}, ["y"],
        {"sa": F32(sa), "za": a.dtype.type(za), "sb": F32(sb), "zb": a.dtype.type(zb),
         "sc": F32(sc), "zc": a.dtype.type(zc)},
        domains=("", "com.microsoft"), elem=TensorProto.UINT8 if a.dtype == U8 else TensorProto.INT8,
    )
    return session(model, optimize=False).run(None, {"a": a, "b": b})[0]


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [U8, I8])
def test_add_and_mul_match_onnxruntime(op_type, dtype):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (4, 37)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, (37,)).astype(dtype)
    params = (0.05, 3, 0.02, -2 if dtype == I8 else 9, 0.06, 5)
    want = _qlinear_binary(op_type, a, b, params)
    op = relay.QnnAddOp if op_type == "QLinearAdd" else relay.QnnMulOp
    sa, za, sb, zb, sc, zc = params

    def build(x, y):
        consts = [scalar(sa, F32), scalar(za, I32), scalar(sb, F32), scalar(zb, I32), scalar(sc, F32), scalar(zc, I32)]
        return [*consts, op(x, y, *(c.result for c in consts))]

    got = run_ops(build, a, b)
    # onnxruntime's vector QLinearAdd rescales in fixed point: one step apart at most.
    tolerance = 1 if op_type == "QLinearAdd" else 0
    assert np.abs(got.astype(int) - want.astype(int)).max() <= tolerance


def test_global_average_pool_matches_onnxruntime():
    rng = np.random.default_rng(8)
    x = rng.integers(0, 256, (2, 5, 7, 6)).astype(U8)
    model = model_of(
        [N("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft")],
        {"x": list(x.shape)}, ["y"], {"sx": F32(0.1), "zx": U8(100), "sy": F32(0.03), "zy": U8(20)},
        domains=("", "com.microsoft"), elem=TensorProto.UINT8,
    )
    want = session(model, optimize=False).run(None, {"x": x})[0]

    def build(v):
        consts = [scalar(0.1, F32), scalar(100, I32), scalar(0.03, F32), scalar(20, I32)]
        return [*consts, relay.QnnGlobalAvgPool2dOp(v, *(c.result for c in consts))]

    np.testing.assert_array_equal(run_ops(build, x), want)


# --- Lowerings: host and ccompiler against the reference, bit for bit ----------------------

KERNELS = """
func.func @main(%x: tensor<1x4x6x6xf32>, %v: tensor<3x16xf32>, %t: tensor<2x4x8xf32>, %f: tensor<2x4x8xf32>)
    -> (tensor<1x4x6x6xui8>, tensor<1x6x3x4xi8>, tensor<3x5xi32>, tensor<2x4x4xui8>, tensor<2x4x8xi8>,
        tensor<2x4x8xi8>, tensor<1x4x1x1xui8>, tensor<1x4x3x3xui8>, tensor<3x16xi32>, tensor<2x4x8xf32>,
        tensor<1x5x7x3xui8>, tensor<3x7xi8>, tensor<1x5x5x4xi32>) {
  %one = relay.constant dense<1.0> : tensor<f32>
  %cz0 = relay.constant dense<200> : tensor<i32>
  %zero = relay.constant dense<0> : tensor<i32>
  %cs = relay.constant dense<[0.25, 0.5, 1.5, 3.0]> : tensor<4xf32>
  %cz = relay.constant dense<[0, 7, 128, 255]> : tensor<4xi32>
  %qx = relay.qnn.quantize %x, %cs, %cz {axis = 1 : i64, out_dtype = "uint8"} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xi32>) -> tensor<1x4x6x6xui8>
  %w = relay.constant dense<[[[[1, -2, 3], [4, 5, -6], [7, -8, 9]], [[-9, 8, 7], [6, -5, 4], [3, 2, -128]]], [[[127, 0, 1], [0, 1, 0], [1, 0, 1]], [[2, 2, 2], [-2, -2, -2], [0, 0, 0]]], [[[5, 5, 5], [5, 5, 5], [5, 5, 5]], [[-7, 7, -7], [7, -7, 7], [-7, 7, -7]]], [[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[10, 11, 12], [13, 14, 15], [16, 17, 18]]], [[[-1, -1, -1], [-1, 100, -1], [-1, -1, -1]], [[0, 0, 0], [0, 1, 0], [0, 0, 0]]], [[[3, 1, 4], [1, 5, 9], [2, 6, 5]], [[3, 5, 8], [9, 7, 9], [3, 2, 3]]]]> : tensor<6x2x3x3xi8>
  %wz = relay.constant dense<[0, 1, -1, 2, 0, -3]> : tensor<6xi32>
  %ws = relay.constant dense<[0.01, 0.02, 0.03, 0.04, 0.05, 0.06]> : tensor<6xf32>
  %xs = relay.constant dense<0.5> : tensor<f32>
  %xz = relay.constant dense<9> : tensor<i32>
  %c = relay.qnn.conv2d %qx, %w, %xz, %wz, %xs, %ws {strides = array<i64: 2, 1>, padding = array<i64: 1, 2, 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x6x6xui8>, tensor<6x2x3x3xi8>, tensor<i32>, tensor<6xi32>, tensor<f32>, tensor<6xf32>) -> tensor<1x6x3x4xi32>
  %b = relay.constant dense<[100, -200, 300, -400, 500, -600]> : tensor<6xi32>
  %cb = relay.nn.bias_add %c, %b : (tensor<1x6x3x4xi32>, tensor<6xi32>) -> tensor<1x6x3x4xi32>
  %os = relay.constant dense<0.3> : tensor<f32>
  %oz = relay.constant dense<-5> : tensor<i32>
  %cr = relay.qnn.requantize %cb, %ws, %zero, %os, %oz {axis = 1 : i64} : (tensor<1x6x3x4xi32>, tensor<6xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x6x3x4xi8>
  %cc = relay.clip %cr {a_min = -5.0 : f64, a_max = 100.5 : f64} : (tensor<1x6x3x4xi8>) -> tensor<1x6x3x4xi8>
  %qv = relay.qnn.quantize %v, %one, %zero : (tensor<3x16xf32>, tensor<f32>, tensor<i32>) -> tensor<3x16xi8>
  %dw = relay.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240], [128, 0, 128, 0, 128, 0, 128, 0, 128, 0, 128, 0, 128, 0, 128, 0], [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9], [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]]> : tensor<5x16xui8>
  %dz = relay.constant dense<[0, 128, 1, 2, 3]> : tensor<5xi32>
  %dense = relay.qnn.dense %qv, %dw, %oz, %dz, %xs, %xs : (tensor<3x16xi8>, tensor<5x16xui8>, tensor<i32>, tensor<5xi32>, tensor<f32>, tensor<f32>) -> tensor<3x5xi32>
  %qt = relay.qnn.quantize %t, %xs, %xz {out_dtype = "uint8"} : (tensor<2x4x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xui8>
  %bm = relay.qnn.batch_matmul %qt, %qt, %xz, %cz0, %xs, %xs {transpose_b = true} : (tensor<2x4x8xui8>, tensor<2x4x8xui8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<2x4x4xi32>
  %bmr = relay.qnn.requantize %bm, %xs, %zero, %os, %xz {out_dtype = "uint8"} : (tensor<2x4x4xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x4x4xui8>
  %qf = relay.qnn.quantize %f, %os, %oz : (tensor<2x4x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xi8>
  %add = relay.qnn.add %qf, %qf, %os, %oz, %xs, %zero, %one, %xz : (tensor<2x4x8xi8>, tensor<2x4x8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xi8>
  %mul = relay.qnn.mul %qf, %add, %os, %oz, %xs, %xz, %os, %zero : (tensor<2x4x8xi8>, tensor<2x4x8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xi8>
  %gap = relay.qnn.global_avg_pool2d %qx, %xs, %xz, %os, %xz : (tensor<1x4x6x6xui8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x4x1x1xui8>
  %mp = relay.nn.max_pool2d %qx {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x4x6x6xui8>) -> tensor<1x4x3x3xui8>
  %wide = relay.qnn.requantize %qv, %one, %zero, %xs, %oz {out_dtype = "int32"} : (tensor<3x16xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<3x16xi32>
  %dq = relay.qnn.dequantize %qf, %os, %oz : (tensor<2x4x8xi8>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xf32>
  %sx = relay.qnn.quantize %x, %os, %oz : (tensor<1x4x6x6xf32>, tensor<f32>, tensor<i32>) -> tensor<1x4x6x6xi8>
  %w1 = relay.constant dense<[[[[1, -2, 3], [4, 5, -6]], [[-9, 8, 7], [6, -5, 4]], [[127, 0, 1], [0, 1, 0]], [[2, 2, 2], [-2, -2, -2]]], [[[5, 5, 5], [5, 5, 5]], [[-7, 7, -7], [7, -7, 7]], [[1, 2, 3], [4, 5, 6]], [[10, 11, 12], [13, 14, 15]]], [[[-1, -1, -1], [-1, 100, -1]], [[0, 0, 0], [0, 1, 0]], [[3, 1, 4], [1, 5, 9]], [[3, 5, 8], [9, 7, 9]]], [[[-128, 0, 0], [0, 0, 127]], [[1, 1, 1], [1, 1, 1]], [[-3, -3, -3], [3, 3, 3]], [[9, 8, 7], [6, 5, 4]]], [[[2, 0, -2], [0, 2, 0]], [[1, 0, 0], [0, 0, 1]], [[4, 4, 4], [4, 4, 4]], [[-1, 2, -3], [4, -5, 6]]]]> : tensor<5x4x2x3xi8>
  %w1z = relay.constant dense<[0, 2, 0, -1, 3]> : tensor<5xi32>
  %w1s = relay.constant dense<[0.01, 0.02, 0.03, 0.04, 0.05]> : tensor<5xf32>
  %c1 = relay.qnn.conv2d %sx, %w1, %oz, %w1z, %os, %w1s {strides = array<i64: 1, 2>, padding = array<i64: 2, 0, 1, 1>, dilation = array<i64: 2, 1>} : (tensor<1x4x6x6xi8>, tensor<5x4x2x3xi8>, tensor<i32>, tensor<5xi32>, tensor<f32>, tensor<5xf32>) -> tensor<1x5x7x3xi32>
  %b1 = relay.constant dense<[7, -70, 700, -7000, 0]> : tensor<5xi32>
  %c1b = relay.nn.bias_add %c1, %b1 : (tensor<1x5x7x3xi32>, tensor<5xi32>) -> tensor<1x5x7x3xi32>
  %c1r = relay.qnn.requantize %c1b, %w1s, %zero, %os, %xz {axis = 1 : i64, out_dtype = "uint8"} : (tensor<1x5x7x3xi32>, tensor<5xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x5x7x3xui8>
  %c1c = relay.clip %c1r {a_min = 12.0 : f64, a_max = 200.0 : f64} : (tensor<1x5x7x3xui8>) -> tensor<1x5x7x3xui8>
  %c2 = relay.qnn.conv2d %sx, %w1, %oz, %w1z, %os, %w1s {dilation = array<i64: 1, 2>, padding = array<i64: 0, 1>} : (tensor<1x4x6x6xi8>, tensor<5x4x2x3xi8>, tensor<i32>, tensor<5xi32>, tensor<f32>, tensor<5xf32>) -> tensor<1x5x5x4xi32>
  %dv = relay.constant dense<3> : tensor<7x16xi8>
  %dvz = relay.constant dense<[0, 1, 2, 3, 4, 5, -6]> : tensor<7xi32>
  %d2 = relay.qnn.dense %qv, %dv, %oz, %dvz, %os, %xs : (tensor<3x16xi8>, tensor<7x16xi8>, tensor<i32>, tensor<7xi32>, tensor<f32>, tensor<f32>) -> tensor<3x7xi32>
  %d2r = relay.qnn.requantize %d2, %os, %xz, %xs, %oz : (tensor<3x7xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<3x7xi8>
  %d2c = relay.clip %d2r {a_min = -100.0 : f64, a_max = 90.5 : f64} : (tensor<3x7xi8>) -> tensor<3x7xi8>
  func.return %qx, %cc, %dense, %bmr, %add, %mul, %gap, %mp, %wide, %dq, %c1c, %d2c, %c2 : tensor<1x4x6x6xui8>, tensor<1x6x3x4xi8>, tensor<3x5xi32>, tensor<2x4x4xui8>, tensor<2x4x8xi8>, tensor<2x4x8xi8>, tensor<1x4x1x1xui8>, tensor<1x4x3x3xui8>, tensor<3x16xi32>, tensor<2x4x8xf32>, tensor<1x5x7x3xui8>, tensor<3x7xi8>, tensor<1x5x5x4xi32>
}
"""
"""Every quantized op, per-channel parameters, odd geometry, saturation and
rounding ties; integer results are dequantized (scale 1) so the model returns
floats."""


def _float_outputs(text: str) -> str:
    """KERNELS with every integer result dequantized with scale 1, zero point 0."""
    module = parse_text(text)
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType, TensorType, f32

    main = next(iter(module.ops))
    ret = main.body.block.last_op
    block = main.body.block
    one, zero = scalar(1.0, F32), scalar(0, I32)
    block.insert_op_before(one, ret)
    block.insert_op_before(zero, ret)
    outputs = []
    for value in ret.operands:
        if value.type.element_type != f32:
            dq = relay.DequantizeOp(value, one.result, zero.result)
            block.insert_op_before(dq, ret)
            value = dq.result
        outputs.append(value)
    new_ret = func.ReturnOp(*outputs)
    block.insert_op_before(new_ret, ret)
    ret.detach()
    ret.erase()
    main.function_type = FunctionType.from_lists(
        list(main.function_type.inputs), [TensorType(f32, v.type.get_shape()) for v in outputs]
    )
    return str(module)


def kernel_inputs():
    rng = np.random.default_rng(11)
    x = np.concatenate([TIES[:36], rng.uniform(-400, 400, 108).astype(F32)]).reshape(1, 4, 6, 6)
    v = rng.uniform(-200, 200, (3, 16)).astype(F32)
    t = rng.uniform(-70, 70, (2, 4, 8)).astype(F32)
    f = np.concatenate([TIES[:32], [np.nan, np.inf, -np.inf], rng.uniform(-60, 60, 29)]).astype(F32).reshape(2, 4, 8)
    return [x, v, t, f]


@pytest.fixture(scope="module")
def kernels_module():
    return _float_outputs(KERNELS)


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_every_quantized_op_lowers_exactly(kernels_module, targets):
    inputs = kernel_inputs()
    want = byoc.run_reference(parse_text(kernels_module), inputs)
    model = byoc.compile(kernels_module, targets=targets)
    got = model(*inputs)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
    if targets:
        assert "relay.qnn.conv2d" in model.partitioned_ir
        # The int8 kernels took the one-group conv2d and the dense chains.
        assert model.c_source.count("_int8_") >= 9


SIXTEEN_BIT = """
func.func @main(%x: tensor<1x4x6x6xf32>, %f: tensor<2x4x8xf32>)
    -> (tensor<1x4x6x6xi16>, tensor<2x4x8xui16>, tensor<2x4x8xi16>, tensor<2x4x8xui8>,
        tensor<1x4x6x6xf32>, tensor<1x4x3x3xi16>) {
  %cs = relay.constant dense<[0.0078125, 0.5, 1.5, 0.01]> : tensor<4xf32>
  %cz = relay.constant dense<[0, -700, 32767, -32768]> : tensor<4xi32>
  %qx = relay.qnn.quantize %x, %cs, %cz {axis = 1 : i64, out_dtype = "int16"} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xi32>) -> tensor<1x4x6x6xi16>
  %fs = relay.constant dense<0.003> : tensor<f32>
  %fz = relay.constant dense<40000> : tensor<i32>
  %qf = relay.qnn.quantize %f, %fs, %fz {out_dtype = "uint16"} : (tensor<2x4x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xui16>
  %rs = relay.constant dense<0.0011> : tensor<f32>
  %rz = relay.constant dense<-5> : tensor<i32>
  %r16 = relay.qnn.requantize %qf, %fs, %fz, %rs, %rz {out_dtype = "int16"} : (tensor<2x4x8xui16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xi16>
  %os = relay.constant dense<0.25> : tensor<f32>
  %oz = relay.constant dense<128> : tensor<i32>
  %r8 = relay.qnn.requantize %r16, %rs, %rz, %os, %oz {out_dtype = "uint8"} : (tensor<2x4x8xi16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x4x8xui8>
  %dx = relay.qnn.dequantize %qx, %cs, %cz {axis = 1 : i64} : (tensor<1x4x6x6xi16>, tensor<4xf32>, tensor<4xi32>) -> tensor<1x4x6x6xf32>
  %mp = relay.nn.max_pool2d %qx {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x4x6x6xi16>) -> tensor<1x4x3x3xi16>
  func.return %qx, %qf, %r16, %r8, %dx, %mp : tensor<1x4x6x6xi16>, tensor<2x4x8xui16>, tensor<2x4x8xi16>, tensor<2x4x8xui8>, tensor<1x4x6x6xf32>, tensor<1x4x3x3xi16>
}
"""
"""16-bit quantized tensors (the activations of A16W8 models): per-channel
zero points at both ends of int16, saturation, requantize between widths."""


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_sixteen_bit_quantize_dequantize_and_requantize_lower_exactly(targets):
    rng = np.random.default_rng(16)
    x = np.concatenate([TIES[:36], rng.uniform(-600, 600, 108).astype(F32)]).reshape(1, 4, 6, 6)
    f = np.concatenate([TIES[:28], [np.nan, np.inf, -np.inf, 1e9], rng.uniform(-150, 150, 32)]).astype(F32).reshape(2, 4, 8)
    module = _float_outputs(SIXTEEN_BIT)
    want = byoc.run_reference(parse_text(module), [x, f])
    # The quantized values cover the 16-bit ranges, saturating at both ends.
    assert want[0].min() == -32768 and want[0].max() == 32767 and want[1].max() == 65535
    got = byoc.compile(module, targets=targets)(x, f)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_a16w8_model_matches_onnxruntime_and_stays_float_between_dq_and_q(tmp_path):
    """An A16W8 model from quantize_static (int16 activations, int8 weights):
    the integer ops take 8-bit data, so its groups run in float between their
    DQs and Qs, which quantize and dequantize 16-bit tensors."""
    import logging

    logging.getLogger().setLevel(logging.ERROR)
    path = tmp_path / "a16w8.onnx"
    source = tmp_path / "a16w8.float.onnx"
    onnx.save(cnn_model(), source)
    quantization.quantize_static(
        str(source), str(path), _Reader([1, 3, 16, 16]), quant_format=quantization.QuantFormat.QDQ,
        activation_type=quantization.QuantType.QInt16, weight_type=quantization.QuantType.QInt8,
    )
    model = onnx.load(path)
    assert any(t.data_type == TensorProto.INT16 for t in model.graph.initializer)
    x = np.random.default_rng(3).standard_normal([1, 3, 16, 16]).astype(F32)
    want = session(model).run(None, {"x": x})[0]
    for targets in (["cblas", "ccompiler"], []):
        compiled = byoc.compile(path, targets=targets)
        steps = np.abs(compiled(x) - want).max() / _output_scale(path)
        assert steps <= 3, f"{targets}: {steps:.2f} steps of the output scale from onnxruntime"
        assert "xi16>" in compiled.partitioned_ir and "relay.qnn.conv2d" not in compiled.partitioned_ir


def test_int8_kernels_in_the_parts_of_a_large_function():
    """A function cut into parts (more than 200 ops) still gets int8 kernels."""
    lines = [
        "func.func @main(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {",
        "  %s = relay.constant dense<0.05> : tensor<f32>",
        "  %z = relay.constant dense<3> : tensor<i32>",
        "  %wz = relay.constant dense<0> : tensor<i32>",
        "  %ws = relay.constant dense<0.01> : tensor<f32>",
        "  %w = relay.constant dense<2> : tensor<32x32xi8>",
        "  %q0 = relay.qnn.quantize %x, %s, %z {out_dtype = \"uint8\"} : (tensor<4x32xf32>, tensor<f32>, tensor<i32>) -> tensor<4x32xui8>",
    ]
    for i in range(90):
        lines += [
            f"  %d{i} = relay.qnn.dense %q{i}, %w, %z, %wz, %s, %ws : (tensor<4x32xui8>, tensor<32x32xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<4x32xi32>",
            f"  %r{i} = relay.qnn.requantize %d{i}, %ws, %wz, %s, %z {{out_dtype = \"uint8\"}} : (tensor<4x32xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<4x32xui8>",
            f"  %q{i + 1} = relay.clip %r{i} {{a_min = 3.0 : f64, a_max = 250.0 : f64}} : (tensor<4x32xui8>) -> tensor<4x32xui8>",
        ]
    lines += [
        "  %y = relay.qnn.dequantize %q90, %s, %z : (tensor<4x32xui8>, tensor<f32>, tensor<i32>) -> tensor<4x32xf32>",
        "  func.return %y : tensor<4x32xf32>",
        "}",
    ]
    text = "\n".join(lines)
    x = np.random.default_rng(9).standard_normal((4, 32)).astype(F32)
    model = byoc.compile(text, targets=["ccompiler"])
    assert "_part" in model.c_source  # ccompiler cut the function into parts
    assert model.c_source.count("_int8_") >= 90  # a kernel per dense, in every part
    np.testing.assert_array_equal(model(x), byoc.run_reference(parse_text(text), [x])[0])


# --- QDQ models from onnxruntime.quantization -------------------------------------------


def _he(rng, *shape):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype(F32)


def cnn_model() -> onnx.ModelProto:
    """conv, relu, max pool, conv, relu, residual add, global pool, flatten, gemm."""
    rng = np.random.default_rng(0)
    weights = {
        "w1": _he(rng, 8, 3, 3, 3), "b1": (0.1 * rng.standard_normal(8)).astype(F32),
        "w2": _he(rng, 8, 8, 3, 3), "b2": (0.1 * rng.standard_normal(8)).astype(F32),
        "fw": _he(rng, 10, 8), "fb": (0.1 * rng.standard_normal(10)).astype(F32),
    }
    nodes = [
        N("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        N("Relu", ["c1"], ["r1"], name="relu1"),
        N("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        N("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        N("Relu", ["c2"], ["r2"], name="relu2"),
        N("Add", ["r2", "p1"], ["a"], name="residual"),
        N("GlobalAveragePool", ["a"], ["g"], name="gap"),
        N("Flatten", ["g"], ["f"], name="flatten"),
        N("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    return model_of(nodes, {"x": [1, 3, 16, 16]}, ["y"], weights)


def mlp_model() -> onnx.ModelProto:
    """A transformer MLP block: x + fc2(relu(fc1(x) + b1)) + b2, on [1, 8, 32]."""
    rng = np.random.default_rng(1)
    weights = {
        "w1": (rng.standard_normal((32, 64)) / np.sqrt(32)).astype(F32),
        "b1": (0.1 * rng.standard_normal(64)).astype(F32),
        "w2": (rng.standard_normal((64, 32)) / np.sqrt(64)).astype(F32),
        "b2": (0.1 * rng.standard_normal(32)).astype(F32),
    }
    nodes = [
        N("MatMul", ["x", "w1"], ["m1"], name="fc1"),
        N("Add", ["m1", "b1"], ["h"], name="bias1"),
        N("Relu", ["h"], ["a"], name="relu"),
        N("MatMul", ["a", "w2"], ["m2"], name="fc2"),
        N("Add", ["m2", "b2"], ["o"], name="bias2"),
        N("Add", ["o", "x"], ["y"], name="residual"),
    ]
    return model_of(nodes, {"x": [1, 8, 32]}, ["y"], weights)


class _Reader(quantization.CalibrationDataReader):
    def __init__(self, shape):
        rng = np.random.default_rng(2)
        self.data = iter([{"x": rng.standard_normal(shape).astype(F32)} for _ in range(4)])

    def get_next(self):
        return next(self.data, None)


def quantize(model: onnx.ModelProto, path: Path, per_channel: bool, activations) -> Path:
    source = path.with_suffix(".float.onnx")
    onnx.save(model, source)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    quantization.quantize_static(
        str(source), str(path), _Reader(shape), quant_format=quantization.QuantFormat.QDQ,
        per_channel=per_channel, activation_type=activations,
        weight_type=quantization.QuantType.QInt8,
    )
    return path


QDQ_CASES = [
    ("cnn", False, "QUInt8"),
    ("cnn", True, "QInt8"),
    ("mlp", False, "QInt8"),
    ("mlp", True, "QUInt8"),
]


@pytest.fixture(scope="module")
def qdq_models(tmp_path_factory):
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's advice
    root = tmp_path_factory.mktemp("qdq")
    models = {}
    for name, per_channel, acts in QDQ_CASES:
        build = cnn_model if name == "cnn" else mlp_model
        key = f"{name}-{'pc' if per_channel else 'pt'}-{acts}"
        models[key] = quantize(build(), root / f"{key}.onnx", per_channel, getattr(quantization.QuantType, acts))
    return models


def _output_scale(path: Path) -> float:
    model = onnx.load(path)
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    scale = next(t for t in model.graph.initializer if t.name == last.input[1])
    return float(numpy_helper.to_array(scale))


@pytest.mark.parametrize("key", [f"{n}-{'pc' if p else 'pt'}-{a}" for n, p, a in QDQ_CASES])
@pytest.mark.parametrize("targets", [["cblas", "ccompiler"], []], ids=["cblas,ccompiler", "host"])
def test_qdq_model_matches_onnxruntime(qdq_models, key, targets):
    path = qdq_models[key]
    model = onnx.load(path)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(3).standard_normal(shape).astype(F32)
    want = session(model).run(None, {"x": x})[0]
    compiled = byoc.compile(path, targets=targets)
    got = compiled(x)
    steps = np.abs(got - want).max() / _output_scale(path)
    assert steps <= 3, f"{key}: {steps:.2f} steps of the output scale from onnxruntime"
    if targets:
        ir = compiled.partitioned_ir
        kernel = ir[ir.index("extern.compiler"):]
        assert "relay.qnn.conv2d" in kernel or "relay.qnn.dense" in kernel
        assert "xi8>" in kernel and "xi32>" in kernel
        assert "relay.nn.conv2d" not in ir and "relay.nn.dense" not in ir


def test_qdq_cnn_is_all_integer_between_input_and_output(qdq_models):
    module = from_onnx(qdq_models["cnn-pc-QInt8"])
    fake_quantization_to_integer(module)
    names = [op.name for op in module.walk() if op.name.startswith("relay.") and op.name != "relay.constant"]
    assert names[0] == "relay.qnn.quantize" and names[-1] == "relay.qnn.dequantize"
    assert names.count("relay.qnn.quantize") == 1 and names.count("relay.qnn.dequantize") == 1
    assert {"relay.qnn.conv2d", "relay.qnn.add", "relay.qnn.global_avg_pool2d", "relay.qnn.dense",
            "relay.nn.max_pool2d", "relay.nn.batch_flatten"} <= set(names)


def test_report_names_groups_kept_in_float(tmp_path):
    """A QDQ group with no integer form (sigmoid) stays float between DQ and Q,
    and `byoc-opt -t report` says why."""
    s, z = F32(0.05), U8(128)
    model = model_of(
        [
            N("QuantizeLinear", ["x", "s", "z"], ["q"]),
            N("DequantizeLinear", ["q", "s", "z"], ["d"]),
            N("Sigmoid", ["d"], ["g"], name="gate"),
            N("QuantizeLinear", ["g", "s", "z"], ["qg"]),
            N("DequantizeLinear", ["qg", "s", "z"], ["y"]),
        ],
        {"x": [2, 8]}, ["y"], {"s": s, "z": z},
    )
    path = tmp_path / "sigmoid.onnx"
    onnx.save(model, path)
    ir = tmp_path / "sigmoid.mlir"
    subprocess.run([BIN / "byoc-import", path, "-o", ir], check=True)
    out = subprocess.run(
        [BIN / "byoc-opt", ir, "--annotate=ccompiler", "--partition", "-t", "report"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "relay.sigmoid" in out
    assert "kept in float: relay.sigmoid has no quantized form" in out
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(F32)
    got = byoc.compile(path, targets=["ccompiler"])(x)
    np.testing.assert_allclose(got, session(model).run(None, {"x": x})[0], atol=float(s) * 1.01)


# --- Bad quantization parameters: one message naming the node ----------------------------


def _conv_qdq(scale, zero_point, weight_scale) -> onnx.ModelProto:
    w = np.ones((4, 3, 3, 3), I8)
    return model_of(
        [
            N("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant_x"),
            N("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq_x"),
            N("DequantizeLinear", ["w", "ws", "wz"], ["dw"], name="dq_w", axis=0),
            N("Conv", ["d", "dw"], ["y"], name="conv"),
        ],
        {"x": [1, 3, 5, 5]}, ["y"],
        {"s": scale, "z": zero_point, "w": w, "ws": weight_scale, "wz": np.zeros(len(weight_scale), I8)},
    )


@pytest.mark.parametrize(
    "scale,zero_point,weight_scale,message",
    [
        (F32(0.0), U8(0), np.ones(4, F32), "node 'quant_x' (QuantizeLinear): the output scale must be positive and finite, got 0"),
        (F32(-0.5), U8(0), np.ones(4, F32), "node 'quant_x' (QuantizeLinear): the output scale must be positive and finite, got -0.5"),
        (F32(np.nan), U8(0), np.ones(4, F32), "node 'quant_x' (QuantizeLinear): the output scale must be positive and finite, got nan"),
        (F32(0.1), U8(0), np.ones(3, F32), "node 'dq_w' (DequantizeLinear): the input scale has 3 values but the input has 4 channels along axis 0"),
        (F32(0.1), U8(0), np.array([1, 1, 0, 1], F32), "node 'dq_w' (DequantizeLinear): the input scale must be positive and finite, got 0 (channel 2)"),
    ],
)
def test_bad_quantization_parameters_name_the_node(scale, zero_point, weight_scale, message):
    with pytest.raises(ByocError) as err:
        from_onnx(_conv_qdq(scale, zero_point, weight_scale))
    assert message in str(err.value)
    assert str(err.value).count("error:") == 1


def test_zero_point_of_the_wrong_type_names_the_node():
    model = model_of(
        [N("DequantizeLinear", ["w", "s", "z"], ["y"], name="dq")],
        {}, ["y"], {"w": np.ones(4, U8), "s": F32(0.5), "z": I8(3)},
    )
    # ONNX's own type check finds it first; the message still names the node.
    with pytest.raises(ByocError, match="node name: dq.*x_zero_point has inconsistent type"):
        from_onnx(model)


def test_zero_point_out_of_range_in_relay_text_is_one_error(tmp_path):
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xui8> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<-1> : tensor<i32>
  %q = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"} : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xui8>
  func.return %q : tensor<4xui8>
}
"""
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    result = subprocess.run([BIN / "byoc-run", path], capture_output=True, text=True)
    assert result.returncode == 1
    assert "bad.mlir:5:3: error: 'relay.qnn.quantize': output_zero_point -1 is out of the range of uint8 [0, 255]" in result.stderr
    assert "Traceback" not in result.stderr
