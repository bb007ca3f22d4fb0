"""Write examples/cnn.onnx: a small deterministic CNN with its weights, built with
onnx.helper (no torch) from seeded numpy.

    python examples/make_cnn.py            # writes examples/cnn.onnx
    python examples/make_cnn.py -o m.onnx

x [1, 3, 32, 32] -> Conv 16 3x3 pad 1 + bias -> Relu -> MaxPool 2
  -> Conv 32 3x3 pad 1 + bias -> Relu -> Flatten -> Gemm 10 (+ bias) -> y [1, 10]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 0
OPSET = 17
IR_VERSION = 8  # readable by every onnxruntime that knows opset 17


def build_model(seed: int = SEED) -> onnx.ModelProto:
    """The CNN, identical bytes for the same seed."""
    rng = np.random.default_rng(seed)

    def he(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    weights = {
        "conv1_w": he(16, 3, 3, 3),
        "conv1_b": bias(16),
        "conv2_w": he(32, 16, 3, 3),
        "conv2_b": bias(32),
        "fc_w": he(10, 32 * 16 * 16),
        "fc_b": bias(10),
    }
    nodes = [
        helper.make_node(
            "Conv", ["x", "conv1_w", "conv1_b"], ["conv1"], name="conv1",
            kernel_shape=[3, 3], pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node(
            "MaxPool", ["relu1"], ["pool1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node(
            "Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], name="conv2",
            kernel_shape=[3, 3], pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("Flatten", ["relu2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(a, name) for name, a in weights.items()],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="byoc examples/make_cnn.py",
    )
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-o", "--output", default=str(Path(__file__).with_name("cnn.onnx")),
        help="where to write the model (default examples/cnn.onnx)",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    model = build_model(args.seed)
    Path(args.output).write_bytes(model.SerializeToString())
    print(f"wrote {args.output} ({Path(args.output).stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
