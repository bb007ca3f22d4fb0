"""Quantized benchmark models: float32 ONNX models built with onnx.helper from
seeded numpy, and their QDQ forms written by `onnxruntime.quantization.
quantize_static` (calibrated on seeded random inputs), as a user would make them.

    cnn_model()        conv 3->32 + relu, max pool, conv 32->64 + relu,
                       conv 64->64 + relu + residual add, global pool, gemm 10
    mlp_model()        a transformer MLP block on [1, 64, 256]:
                       x + fc2(relu(fc1(x) + b1)) + b2, fc1 256->1024, fc2 1024->256
    conv_model(), dense_model()   one conv2d / one dense, for kernel timings
    quantize(model, path, per_channel=True, activations="QUInt8") -> path
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

F32 = np.float32
OPSET = 17
IR_VERSION = 8


def _he(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype(F32)


def _model(nodes, inputs, output, output_shape, weights):
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_shape)],
        initializer=[numpy_helper.from_array(a, n) for n, a in weights.items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )


def cnn_model():
    """A small residual CNN on a 1x3x32x32 image."""
    from onnx import helper

    rng = np.random.default_rng(0)
    weights = {
        "w1": _he(rng, 32, 3, 3, 3), "b1": (0.1 * rng.standard_normal(32)).astype(F32),
        "w2": _he(rng, 64, 32, 3, 3), "b2": (0.1 * rng.standard_normal(64)).astype(F32),
        "w3": _he(rng, 64, 64, 3, 3), "b3": (0.1 * rng.standard_normal(64)).astype(F32),
        "fw": _he(rng, 10, 64), "fb": (0.1 * rng.standard_normal(10)).astype(F32),
    }
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"], name="relu2"),
        node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
        node("Relu", ["c3"], ["r3"], name="relu3"),
        node("Add", ["r3", "r2"], ["a"], name="residual"),
        node("GlobalAveragePool", ["a"], ["g"], name="gap"),
        node("Flatten", ["g"], ["f"], name="flatten"),
        node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    return _model(nodes, {"x": [1, 3, 32, 32]}, "y", [1, 10], weights)


def mlp_model(tokens: int = 64, width: int = 256, hidden: int = 1024):
    """A transformer MLP block with its residual connection."""
    from onnx import helper

    rng = np.random.default_rng(1)
    weights = {
        "w1": (rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(F32),
        "b1": (0.1 * rng.standard_normal(hidden)).astype(F32),
        "w2": (rng.standard_normal((hidden, width)) / np.sqrt(hidden)).astype(F32),
        "b2": (0.1 * rng.standard_normal(width)).astype(F32),
    }
    node = helper.make_node
    nodes = [
        node("MatMul", ["x", "w1"], ["m1"], name="fc1"),
        node("Add", ["m1", "b1"], ["h"], name="bias1"),
        node("Relu", ["h"], ["a"], name="relu"),
        node("MatMul", ["a", "w2"], ["m2"], name="fc2"),
        node("Add", ["m2", "b2"], ["o"], name="bias2"),
        node("Add", ["o", "x"], ["y"], name="residual"),
    ]
    return _model(nodes, {"x": [1, tokens, width]}, "y", [1, tokens, width], weights)


def conv_model(channels: int = 64, size: int = 56):
    """One 3x3 convolution (with bias and relu) on a 1 x channels x size^2 image."""
    from onnx import helper

    rng = np.random.default_rng(2)
    weights = {"w": _he(rng, channels, channels, 3, 3), "b": (0.1 * rng.standard_normal(channels)).astype(F32)}
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    shape = [1, channels, size, size]
    return _model(nodes, {"x": shape}, "y", shape, weights)


def dense_model(rows: int = 128, depth: int = 1024, units: int = 1024):
    """One matrix product (with bias and relu): [rows, depth] x [depth, units]."""
    from onnx import helper

    rng = np.random.default_rng(3)
    weights = {
        "w": (rng.standard_normal((depth, units)) / np.sqrt(depth)).astype(F32),
        "b": (0.1 * rng.standard_normal(units)).astype(F32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["h"]),
        helper.make_node("Relu", ["h"], ["y"]),
    ]
    return _model(nodes, {"x": [rows, depth]}, "y", [rows, units], weights)


def input_shape(model) -> list[int]:
    return [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]


def quantize(model, path: Path, per_channel: bool = True, activations: str = "QUInt8") -> Path:
    """Write `model`'s QDQ form (int8 weights, `activations` uint8 or int8) to `path`."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    shape = input_shape(model)
    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(4)
            self.data = iter([{name: rng.standard_normal(shape).astype(F32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    source = path.with_suffix(".float.onnx")
    onnx.save(model, source)
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's pre-processing advice
    try:
        quantize_static(
            str(source), str(path), Reader(), quant_format=QuantFormat.QDQ,
            per_channel=per_channel, activation_type=getattr(QuantType, activations),
            weight_type=QuantType.QInt8,
        )
    finally:
        logging.getLogger().setLevel(level)
    return path


def output_scale(path: Path) -> float:
    """The scale of a QDQ model's last DequantizeLinear (its output's step)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    scale = next(t for t in model.graph.initializer if t.name == last.input[1])
    return float(numpy_helper.to_array(scale))
