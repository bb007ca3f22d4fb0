"""The ONNX importer: every covered op against onnxruntime, the CNN example and a
transformer block end to end, and how bad models fail."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from xdsl.dialects.builtin import FileLineColLoc  # noqa: E402

import byoc  # noqa: E402
from byoc.backends import available_backends  # noqa: E402
from byoc.dialects import relay  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402
from byoc.frontend.onnx import SUPPORTED_OPS, from_onnx  # noqa: E402
from byoc.frontend.parse import parse_text  # noqa: E402

BIN = Path(sys.executable).parent
EXAMPLES = Path(__file__).parent.parent / "examples"
RTOL, ATOL = 1e-4, 1e-5


# --- Building models ------------------------------------------------------------


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence[int | str]],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 21,
    input_type: int = TensorProto.FLOAT,
) -> onnx.ModelProto:
    """A one-graph model; outputs get no declared shape (shape inference finds it)."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, input_type, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[
            numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()
        ],
    )
    # IR 8 is read by every onnxruntime that supports opset 21.
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8
    )


def run_onnxruntime(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, inputs)


def random(shape: Sequence[int], seed: int = 0, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    return np.abs(x) + np.float32(0.1) if positive else x


def assert_all_close(got: Sequence[np.ndarray], want: Sequence[np.ndarray], what: str) -> None:
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what}: output {i} shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"{what}: output {i}")


@dataclass
class Case:
    """One model with its inputs; `node` is the op type the case covers."""

    id: str
    node: str
    build: Callable[[], onnx.ModelProto]
    inputs: dict[str, np.ndarray] = field(default_factory=dict)


CASES: list[Case] = []


def case(
    id: str,
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: Sequence[str] = ("y",),
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 21,
) -> None:
    def build() -> onnx.ModelProto:
        shapes = {n: a.shape for n, a in inputs.items()}
        return make_model(nodes, shapes, outputs, initializers, opset)

    CASES.append(Case(id, nodes[-1].op_type, build, inputs))


N = helper.make_node
X234 = {"x": random((2, 3, 4))}
X4D = {"x": random((1, 4, 7, 7))}

# Elementwise
for op in ("Erf", "Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Identity"):
    case(op.lower(), [N(op, ["x"], ["y"])], X234)
for op in ("Sqrt", "Log"):
    case(op.lower(), [N(op, ["x"], ["y"])], {"x": random((2, 3, 4), positive=True)})
for op in ("Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh"):
    case(op.lower(), [N(op, ["x"], ["y"])], X234)
# The inverse functions inside their domains: [-1, 1], (-1, 1) and [1, inf).
UNIT = {"x": np.tanh(random((2, 3, 4)))}
for op in ("Asin", "Acos", "Atanh"):
    case(op.lower(), [N(op, ["x"], ["y"])], UNIT)
case("acosh", [N("Acosh", ["x"], ["y"])], {"x": random((2, 3, 4), positive=True) + np.float32(1)})
MOD_INPUTS = {"x": random((2, 3, 4)) * np.float32(10), "z": random((4,), seed=3) + np.float32(3)}
case("mod-fmod", [N("Mod", ["x", "z"], ["y"], fmod=1)], MOD_INPUTS)
for fmod in (0, 1):
    case(
        f"mod-integer-fmod{fmod}",
        [
            N("Cast", ["x"], ["xi"], to=TensorProto.INT32),
            N("Cast", ["z"], ["zi"], to=TensorProto.INT32),
            N("Mod", ["xi", "zi"], ["m"], fmod=fmod),
            N("Cast", ["m"], ["y"], to=TensorProto.FLOAT),
        ],
        {"x": random((2, 3, 4)) * np.float32(20), "z": np.array([-3, 2, 5, -7], np.float32)},
    )
for direction in ("LEFT", "RIGHT"):
    case(
        f"bitshift-{direction.lower()}",
        [
            N("Cast", ["x"], ["xi"], to=TensorProto.UINT8),
            N("Cast", ["z"], ["zi"], to=TensorProto.UINT8),
            N("BitShift", ["xi", "zi"], ["s"], direction=direction),
            N("Cast", ["s"], ["y"], to=TensorProto.FLOAT),
        ],
        {"x": np.abs(random((2, 3, 4))) * np.float32(60), "z": np.array([0, 1, 3, 7], np.float32)},
    )
case(
    "cumsum-exclusive-reverse",
    [N("CumSum", ["x", "axis"], ["y"], exclusive=1, reverse=1)],
    X234,
    initializers={"axis": np.array(-2, np.int64)},
)
case("cumsum", [N("CumSum", ["x", "axis"], ["y"])], X234, initializers={"axis": np.array([0], np.int32)})
case("trilu", [N("Trilu", ["x"], ["y"])], X234)
case(
    "trilu-lower-k",
    [N("Trilu", ["x", "k"], ["y"], upper=0)],
    X234,
    initializers={"k": np.array(-1, np.int64)},
)
# Einsum: matmuls, diagonals, traces, sums, outer and elementwise products,
# three operands, broadcast ellipses and implicit outputs.
for _id, _equation, _shapes in [
    ("matmul", "ij,jk->ik", [(3, 4), (4, 5)]),
    ("implicit-matmul", "ij,jk", [(3, 4), (4, 5)]),
    ("batch-diagonal", "...ii->...i", [(2, 3, 3)]),
    ("trace", "ii", [(4, 4)]),
    ("diagonal-sum", "iij->j", [(3, 3, 2)]),
    ("sum", "ij->", [(3, 4)]),
    ("inner", "i,i", [(5,), (5,)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("broadcast-product", "ij,ij->ij", [(2, 3), (1, 3)]),
    ("transpose", "ba", [(2, 3)]),
    ("attention-scores", "bhqd,bhkd->bhqk", [(1, 2, 5, 8), (1, 2, 6, 8)]),
    ("ellipsis-matmul", "...ij,...jk", [(2, 1, 3, 4), (1, 5, 4, 2)]),
    ("three", "abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
]:
    case(
        f"einsum-{_id}",
        [N("Einsum", [f"x{i}" for i in range(len(_shapes))], ["y"], equation=_equation)],
        {f"x{i}": random(shape) for i, shape in enumerate(_shapes)},
    )
# Attention (opset 23): 4-d heads, 3-d inputs split into grouped heads with a
# causal frontier and softcap, a float mask shorter than the keys, a cache.
QKV4 = {"q": random((2, 3, 4, 8)), "k": random((2, 3, 6, 8), seed=1), "v": random((2, 3, 6, 5), seed=2)}
case("attention-4d", [N("Attention", ["q", "k", "v"], ["y"])], QKV4, opset=23)
case(
    "attention-3d-gqa-causal-softcap",
    [N("Attention", ["q", "k", "v"], ["y"], q_num_heads=4, kv_num_heads=2, is_causal=1, softcap=2.0)],
    {"q": random((2, 5, 32)), "k": random((2, 5, 16), seed=1), "v": random((2, 5, 12), seed=2)},
    opset=23,
)
case(
    "attention-float-mask-scores",
    [N("Attention", ["q", "k", "v", "m"], ["y", "", "", "s"], scale=0.25, qk_matmul_output_mode=2)],
    {**QKV4, "m": random((4, 6), seed=3)},
    outputs=("y", "s"),
    opset=23,
)
case(
    "attention-cache-causal",
    [N("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "k2", "v2"], is_causal=1)],
    {**QKV4, "pk": random((2, 3, 2, 8), seed=4), "pv": random((2, 3, 2, 5), seed=5)},
    outputs=("y", "k2", "v2"),
    opset=23,
)
# Losses: targets (and class weights) are initializers; 4 classes on axis 1.
LOSS_TARGET = {"t": np.array([[0, 3, 1], [2, 2, -1]], np.int64)}  # -1 is ignore_index below
for reduction in ("none", "sum", "mean"):
    case(
        f"nllloss-{reduction}-weighted-ignored",
        [N("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["y"], reduction=reduction, ignore_index=-1)],
        {"x": random((2, 4, 3))},
        initializers={**LOSS_TARGET, "w": np.array([0.5, 1.0, 2.0, 0.25], np.float32)},
    )
case(
    "nllloss-mean-ignored",
    [N("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=-1)],
    {"x": random((2, 4, 3))},
    initializers=LOSS_TARGET,
)
case(
    "nllloss-NC",
    [N("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
    {"x": random((3, 5))},
    initializers={"t": np.array([4, 0, 2], np.int64)},
)
case(
    "softmaxcrossentropyloss-log-prob",
    [N("SoftmaxCrossEntropyLoss", ["x", "t"], ["y", "lp"], ignore_index=-1)],
    {"x": random((2, 4, 3))},
    outputs=("y", "lp"),
    initializers=LOSS_TARGET,
)
SPECIAL = {"x": np.array([[0.0, -np.inf, np.inf, np.nan], [1e38, -2.5, 3.0, -0.0]], np.float32)}
AS_FLOAT = N("Cast", ["b"], ["y"], to=TensorProto.FLOAT)  # the outputs are declared float
case("isnan", [N("IsNaN", ["x"], ["b"]), AS_FLOAT], SPECIAL)
case("isinf", [N("IsInf", ["x"], ["b"]), AS_FLOAT], SPECIAL)
case("isinf-positive", [N("IsInf", ["x"], ["b"], detect_negative=0), AS_FLOAT], SPECIAL)
case("isinf-negative", [N("IsInf", ["x"], ["b"], detect_positive=0), AS_FLOAT], SPECIAL)
case(
    "isinf-neither",
    [N("IsInf", ["x"], ["b"], detect_positive=0, detect_negative=0), AS_FLOAT],
    SPECIAL,
)
case("celu", [N("Celu", ["x"], ["y"])], X234)
case("celu-alpha", [N("Celu", ["x"], ["y"], alpha=0.4)], X234)
case("thresholdedrelu", [N("ThresholdedRelu", ["x"], ["y"], alpha=0.3)], X234)
case("mish", [N("Mish", ["x"], ["y"])], {"x": random((2, 3, 4)) * np.float32(8)}, opset=22)
for axis in (-1, 1, 0):
    case(
        f"rmsnormalization-axis{axis}",
        [N("RMSNormalization", ["x", "g"], ["y"], axis=axis, epsilon=1e-3)],
        X234,
        initializers={"g": random((4,), seed=5) if axis == -1 else random((3, 4), seed=5)},
        opset=23,
    )
case(
    "rmsnormalization-scale-input",
    [N("RMSNormalization", ["x", "g"], ["y"])],
    {**X234, "g": random((4,), seed=7)},
    opset=23,
)
for op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
    case(
        f"{op.lower()}-broadcast",
        [N(op, ["x", "z"], ["y"])],
        {"x": random((2, 3, 4)), "z": random((4,), seed=1)},
    )
case(
    "add-initializer",
    [N("Add", ["x", "b"], ["y"])],
    X234,
    initializers={"b": random((3, 1), seed=2)},
)
case(
    "div-scalar-initializer",
    [N("Div", ["x", "d"], ["y"])],
    X234,
    initializers={"d": np.array(2.5, np.float32)},
)
case(
    "max-three",
    [N("Max", ["x", "a", "b"], ["y"])],
    {"x": random((2, 3)), "a": random((2, 3), 1), "b": random((3,), 2)},
)
case("min-one", [N("Min", ["x"], ["y"])], X234)
case(
    "sum-three-broadcast",
    [N("Sum", ["x", "a", "b"], ["y"])],
    {"x": random((2, 3)), "a": random((2, 3), 1), "b": random((3,), 2)},
)
case("sum-one", [N("Sum", ["x"], ["y"])], X234)
for op in ("Sign", "Floor", "Ceil", "Round", "Reciprocal", "Softplus", "Softsign", "HardSwish"):
    case(op.lower(), [N(op, ["x"], ["y"])], {"x": random((2, 3, 4)) * 3})
case(
    "round-halves",
    [N("Round", ["x"], ["y"])],
    {"x": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, -3.51], np.float32)},
)
for op, attrs in [
    ("LeakyRelu", {}),
    ("LeakyRelu", {"alpha": 0.2}),
    ("Elu", {}),
    ("Elu", {"alpha": 0.5}),
    ("Selu", {}),
    ("Selu", {"alpha": 1.5, "gamma": 0.75}),
    ("HardSigmoid", {}),
    ("HardSigmoid", {"alpha": 0.4, "beta": 0.3}),
    ("Shrink", {}),
    ("Shrink", {"bias": 0.5, "lambd": 1.0}),
    ("Gelu", {}),
    ("Gelu", {"approximate": "tanh"}),
]:
    label = "-".join([op.lower(), *(f"{k}{v}" for k, v in attrs.items())])
    case(label, [N(op, ["x"], ["y"], **attrs)], {"x": random((2, 3, 4)) * 3})
for label, x_shape, slope, constant in [
    ("prelu-channels", (2, 3, 4, 5), random((3, 1, 1), 1), True),
    ("prelu-one-slope", (2, 3, 4), random((1,), 1), True),
    ("prelu-last-axis", (2, 3, 4), random((4,), 1), True),
    ("prelu-1d-input", (2, 3, 5), random((3, 1), 1), False),
    ("prelu-broadcast", (2, 3, 4), random((3, 4), 1), True),
    ("prelu-runtime-one-slope", (2, 3), random((1,), 1), False),
]:
    if constant:
        case(label, [N("PRelu", ["x", "s"], ["y"])], {"x": random(x_shape)}, initializers={"s": slope})
    else:
        case(label, [N("PRelu", ["x", "s"], ["y"])], {"x": random(x_shape), "s": slope})

case(
    "mean-three-broadcast",
    [N("Mean", ["x", "a", "b"], ["y"])],
    {"x": random((2, 1, 3)), "a": random((4, 3), 1), "b": random((3,), 2)},
)
case("mean-one", [N("Mean", ["x"], ["y"])], X234)
case(
    "lrn",
    [N("LRN", ["x"], ["y"], size=3, alpha=0.3, beta=0.7, bias=1.5)],
    {"x": random((2, 6, 3, 4))},
)
case("lrn-defaults", [N("LRN", ["x"], ["y"], size=5)], {"x": random((1, 7, 4, 3))})

case(
    "pow",
    [N("Pow", ["x", "e"], ["y"])],
    {"x": random((2, 3), positive=True), "e": random((2, 3), seed=1)},
)
case(
    "pow-float-exponent",
    [N("Pow", ["x", "e"], ["y"])],
    {"x": random((2, 3), positive=True)},
    initializers={"e": np.array(0.5, np.float32)},
)
case(
    "pow-int-exponent",
    [N("Pow", ["x", "e"], ["y"])],
    X234,
    initializers={"e": np.array(3, np.int64)},
)
case(
    "clip-inputs",
    [N("Clip", ["x", "lo", "hi"], ["y"])],
    X234,
    initializers={"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)},
)
case(
    "clip-max-only",
    [N("Clip", ["x", "", "hi"], ["y"])],
    X234,
    initializers={"hi": np.array(0.3, np.float32)},
)
case(
    "clip-min-only",
    [N("Clip", ["x", "lo"], ["y"])],
    X234,
    initializers={"lo": np.array(0.0, np.float32)},
)
case("clip-none", [N("Clip", ["x"], ["y"])], X234)
case(
    "clip-min-above-max",
    [N("Clip", ["x", "lo", "hi"], ["y"])],
    X234,
    initializers={"lo": np.array(1.0, np.float32), "hi": np.array(-1.0, np.float32)},
)
case("clip-attributes-opset6", [N("Clip", ["x"], ["y"], min=-0.2, max=0.4)], X234, opset=6)
case(
    "dropout-inference",
    [N("Dropout", ["x"], ["y"], name="drop")],
    X234,
)

# Softmax
case("softmax-default", [N("Softmax", ["x"], ["y"])], X234)
case("softmax-axis1", [N("Softmax", ["x"], ["y"], axis=1)], X234)
case("softmax-axis0-opset13", [N("Softmax", ["x"], ["y"], axis=0)], X234, opset=13)
case("softmax-opset11-coerced-2d", [N("Softmax", ["x"], ["y"], axis=1)], X234, opset=11)
case("softmax-opset11-last-axis", [N("Softmax", ["x"], ["y"], axis=2)], X234, opset=11)
case("log-softmax-default", [N("LogSoftmax", ["x"], ["y"])], X234)
case("log-softmax-axis0-opset13", [N("LogSoftmax", ["x"], ["y"], axis=0)], X234, opset=13)
case("log-softmax-opset11-coerced-2d", [N("LogSoftmax", ["x"], ["y"], axis=1)], X234, opset=11)
case("log-softmax-opset11-default", [N("LogSoftmax", ["x"], ["y"])], X234, opset=11)

# Convolution
W443 = random((6, 4, 3, 3), seed=3)
B6 = random((6,), seed=4)
case(
    "conv-pads-bias",
    [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
    X4D,
    initializers={"w": W443, "b": B6},
)
case(
    "conv-strides-asymmetric-pads",
    [N("Conv", ["x", "w"], ["y"], strides=[2, 1], pads=[0, 1, 2, 0])],
    X4D,
    initializers={"w": W443},
)
case(
    "conv-dilations-kernel-shape",
    [N("Conv", ["x", "w"], ["y"], dilations=[2, 2], kernel_shape=[3, 3])],
    X4D,
    initializers={"w": W443},
)
case(
    "conv-group2",
    [N("Conv", ["x", "w", "b"], ["y"], group=2, pads=[1, 1, 1, 1])],
    X4D,
    initializers={"w": random((6, 2, 3, 3), seed=5), "b": B6},
)
case(
    "conv-depthwise",
    [N("Conv", ["x", "w"], ["y"], group=4)],
    X4D,
    initializers={"w": random((8, 1, 3, 3), seed=6)},
)
for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
    case(
        f"conv-auto-pad-{mode.lower()}",
        [N("Conv", ["x", "w"], ["y"], auto_pad=mode, strides=[2, 2])],
        {"x": random((1, 4, 8, 7))},
        initializers={"w": random((6, 4, 4, 3), seed=7)},
    )
case(
    "conv-weight-is-input",
    [N("Conv", ["x", "w"], ["y"], pads=[1, 0, 1, 0])],
    {"x": random((1, 4, 7, 7)), "w": W443},
)
case(
    "conv-1d",
    [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 2], strides=[2])],
    {"x": random((2, 4, 9))},
    initializers={"w": random((6, 4, 3), seed=8), "b": B6},
)
case(
    "conv-3d",
    [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 1], dilations=[2, 1, 1])],
    {"x": random((2, 4, 5, 6, 4))},
    initializers={"w": random((6, 4, 3, 2, 3), seed=8), "b": B6},
)
case(
    "conv-3d-groups-same-upper",
    [N("Conv", ["x", "w"], ["y"], group=2, auto_pad="SAME_UPPER", strides=[2, 1, 2])],
    {"x": random((1, 4, 5, 3, 4))},
    initializers={"w": random((6, 2, 2, 3, 2), seed=9)},
)

# Transposed convolution: weights [C, M/group, k...]
for label, attrs, x_shape, w_shape in [
    ("2d", {}, (1, 3, 4, 5), (3, 2, 3, 3)),
    ("2d-strides-pads", {"strides": [3, 2], "pads": [1, 2, 1, 2]}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-dilations", {"dilations": [2, 2]}, (1, 2, 3, 3), (2, 1, 2, 2)),
    ("2d-group", {"group": 2, "strides": [2, 2]}, (2, 4, 3, 2), (4, 3, 3, 3)),
    ("2d-output-padding", {"strides": [3, 2], "output_padding": [1, 1]}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-output-shape", {"strides": [3, 2], "output_shape": [10, 8]}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-auto-pad-same-lower", {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-auto-pad-same-upper", {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-output-shape-same-upper", {"strides": [3, 2], "output_shape": [8, 6], "auto_pad": "SAME_UPPER"}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ("2d-auto-pad-valid", {"strides": [2, 1], "auto_pad": "VALID"}, (1, 1, 3, 3), (1, 2, 3, 2)),
    ("1d", {"strides": [2], "pads": [1, 0]}, (2, 3, 5), (3, 2, 3)),
    ("3d", {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]}, (1, 2, 3, 4, 3), (2, 2, 3, 2, 3)),
]:
    case(
        f"convtranspose-{label}",
        [N("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
        {"x": random(x_shape)},
        initializers={"w": random(w_shape, seed=1), "b": random((w_shape[1] * attrs.get("group", 1),), seed=2)},
    )
case(
    "convtranspose-weight-is-input",
    [N("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])],
    {"x": random((1, 2, 3, 3)), "w": random((2, 3, 2, 2), seed=1)},
)

# Pooling
for op in ("MaxPool", "AveragePool"):
    key = op.lower()
    case(f"{key}-2x2", [N(op, ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], X4D)
    case(
        f"{key}-pads",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        X4D,
    )
    case(
        f"{key}-ceil-mode",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
        {"x": random((1, 2, 8, 8))},
    )
    case(
        f"{key}-ceil-mode-pads",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
        {"x": random((1, 2, 6, 6))},
    )
    case(
        f"{key}-ceil-mode-drops-window",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 2, 2], ceil_mode=1)],
        {"x": random((1, 2, 4, 4))},
    )
    case(
        f"{key}-same-upper",
        [N(op, ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")],
        X4D,
    )
    case(
        f"{key}-same-lower",
        [N(op, ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 1], auto_pad="SAME_LOWER")],
        X4D,
    )
    case(f"{key}-1d", [N(op, ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1])], {"x": random((2, 3, 9))})
    case(
        f"{key}-valid-ceil-mode",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID", ceil_mode=1)],
        {"x": random((1, 2, 6, 6))},
    )
case(
    "maxpool-dilations",
    [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
    X4D,
)
case(
    "averagepool-count-include-pad",
    [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
    X4D,
)
case(
    "averagepool-count-include-pad-ceil",
    [
        N(
            "AveragePool",
            ["x"],
            ["y"],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            count_include_pad=1,
            ceil_mode=1,
        )
    ],
    {"x": random((1, 2, 6, 6))},
)
for op in ("MaxPool", "AveragePool"):
    key = op.lower()
    case(
        f"{key}-3d",
        [N(op, ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])],
        {"x": random((2, 3, 5, 4, 5))},
    )
    case(
        f"{key}-3d-ceil-mode",
        [N(op, ["x"], ["y"], kernel_shape=[3, 3, 3], strides=[2, 2, 2], ceil_mode=1)],
        {"x": random((1, 2, 6, 6, 6))},
    )
    case(
        # ceil_mode keeps a window along H and drops one that would start in the
        # end padding along W: the floor count with more end padding along H.
        f"{key}-ceil-mode-mixed-axes",
        [N(op, ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 1], ceil_mode=1)],
        {"x": random((1, 2, 5, 4))},
    )
case(
    "averagepool-3d-count-include-pad",
    [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)],
    {"x": random((1, 2, 3, 4, 3))},
)
for p in (1, 2, 3, 6):
    case(
        f"lppool-p{p}",
        [N("LpPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=p)],
        X4D,
        opset=18,
    )
case(
    "lppool-dilations-ceil-mode",
    [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 1], ceil_mode=1)],
    {"x": random((1, 2, 6, 5))},
    opset=18,
)
case(
    # ceil_mode keeps a window along H and drops one along W (as MaxPool's case).
    "lppool-ceil-mode-mixed-axes",
    [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 1], ceil_mode=1)],
    {"x": random((1, 2, 5, 4))},
    opset=18,
)
case("lppool-same-upper", [N("LpPool", ["x"], ["y"], kernel_shape=[3, 3], auto_pad="SAME_UPPER")], X4D, opset=18)
case("lppool-1d", [N("LpPool", ["x"], ["y"], kernel_shape=[3], strides=[2])], {"x": random((2, 3, 9))}, opset=18)
case("lppool-3d", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2, 2], p=1)], {"x": random((1, 2, 3, 4, 3))}, opset=18)
case("lppool-opset11", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2])], X4D, opset=11)
for p in (1, 2, 3):
    case(f"globallppool-p{p}", [N("GlobalLpPool", ["x"], ["y"], p=p)], X4D)
case("globallppool-1d", [N("GlobalLpPool", ["x"], ["y"])], {"x": random((2, 3, 5))})
case("globalmaxpool", [N("GlobalMaxPool", ["x"], ["y"])], X4D)
case("globalmaxpool-3d", [N("GlobalMaxPool", ["x"], ["y"])], {"x": random((2, 3, 4, 2, 3))})
case("globalaveragepool-3d", [N("GlobalAveragePool", ["x"], ["y"])], {"x": random((2, 3, 4, 2, 3))})
case("globalaveragepool", [N("GlobalAveragePool", ["x"], ["y"])], X4D)
case("globalaveragepool-1d", [N("GlobalAveragePool", ["x"], ["y"])], {"x": random((2, 3, 5))})

# Normalisation
case(
    "batchnormalization",
    [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
    X4D,
    initializers={
        "s": random((4,), 1),
        "b": random((4,), 2),
        "m": random((4,), 3),
        "v": random((4,), 4, positive=True),
    },
)
case(
    "batchnormalization-2d",
    [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
    {"x": random((5, 3))},
    initializers={
        "s": random((3,), 1),
        "b": random((3,), 2),
        "m": random((3,), 3),
        "v": random((3,), 4, positive=True),
    },
)
case(
    "batchnormalization-training-mode",
    [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1, momentum=0.8)],
    {"x": random((2, 3, 4, 5)) * 2 + 1},
    outputs=("y", "rm", "rv"),
    initializers={
        "s": random((3,), 1),
        "b": random((3,), 2),
        "m": random((3,), 3),
        "v": random((3,), 4, positive=True),
    },
    opset=15,
)
case(
    "layernormalization",
    [N("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
    X234,
    initializers={"s": random((4,), 1), "b": random((4,), 2)},
)
case(
    "layernormalization-no-bias",
    [N("LayerNormalization", ["x", "s"], ["y"])],
    X234,
    initializers={"s": random((4,), 1)},
)
case(
    "layernormalization-axis1",
    [N("LayerNormalization", ["x", "s", "b"], ["y"], axis=1)],
    X234,
    initializers={"s": random((3, 4), 1), "b": random((4,), 2)},
)
case(
    "layernormalization-broadcast-scale",
    [N("LayerNormalization", ["x", "s", "b"], ["y"])],
    X234,
    initializers={"s": np.array([1.5], np.float32), "b": random((4,), 2)},
)
case(
    "layernormalization-scale-input",
    [N("LayerNormalization", ["x", "s", "b"], ["y"], axis=-2)],
    {"x": random((2, 3, 4)), "s": random((3, 4), 1), "b": random((3, 4), 2)},
)
case(
    "layernormalization-mean-invstddev",
    [N("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=1, epsilon=0.1)],
    X234,
    outputs=("y", "mean", "inv"),
    initializers={"s": random((3, 4), 1), "b": random((4,), 2)},
)
case(
    "layernormalization-invstddev-only",
    [N("LayerNormalization", ["x", "s"], ["y", "", "inv"])],
    X234,
    outputs=("y", "inv"),
    initializers={"s": random((4,), 1)},
)

# Shapes
case("flatten-axis1", [N("Flatten", ["x"], ["y"])], X4D)
case("flatten-axis0", [N("Flatten", ["x"], ["y"], axis=0)], X234)
case("flatten-axis2", [N("Flatten", ["x"], ["y"], axis=2)], X4D)
case("flatten-axis-negative", [N("Flatten", ["x"], ["y"], axis=-1)], X234)
case(
    "reshape-zero-and-minus-one",
    [N("Reshape", ["x", "s"], ["y"])],
    X234,
    initializers={"s": np.array([0, -1, 2], np.int64)},
)
case(
    "reshape-allowzero-0",
    [N("Reshape", ["x", "s"], ["y"], allowzero=0)],
    X234,
    initializers={"s": np.array([4, 0, 2], np.int64)},
)
case(
    "reshape-constant-node-shape",
    [
        N("Constant", [], ["s"], value=numpy_helper.from_array(np.array([-1, 4], np.int64))),
        N("Reshape", ["x", "s"], ["y"]),
    ],
    X234,
)
case("transpose-perm", [N("Transpose", ["x"], ["y"], perm=[1, 2, 0])], X234)
case("transpose-default", [N("Transpose", ["x"], ["y"])], X234)
case(
    "slice-steps",
    [N("Slice", ["x", "s", "e", "a", "t"], ["y"])],
    X234,
    initializers={
        "s": np.array([-1, 0], np.int64),
        "e": np.array([0, 100], np.int64),
        "a": np.array([1, 2], np.int64),
        "t": np.array([-1, 2], np.int64),
    },
)
case("split", [N("Split", ["x"], ["y", "z"], axis=2, num_outputs=2)], X234, ["y", "z"])
case("tile", [N("Tile", ["x", "r"], ["y"])], X234, initializers={"r": np.array([1, 2, 1], np.int64)})
case("expand", [N("Expand", ["x", "s"], ["y"])], {"x": random((3, 1))}, initializers={"s": np.array([2, 3, 4], np.int64)})
case("pad-reflect", [N("Pad", ["x", "p"], ["y"], mode="reflect")], X234, initializers={"p": np.array([0, 1, 2, 0, 1, 1], np.int64)})
XZ = {"x": random((2, 3, 4)), "z": random((4,), seed=1)}
for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
    # A run-time condition: the comparison's bools feed Where.
    case(
        f"{op.lower()}-where",
        [N(op, ["x", "q"], ["c"]), N("Where", ["c", "x", "z"], ["y"])],
        XZ,
        initializers={"q": np.array([0.5, 0.0, -0.25, 1.0], np.float32)},
    )
case(
    "logic-where",
    [
        N("Less", ["x", "z"], ["a"]),
        N("Greater", ["x", "h"], ["b"]),
        N("And", ["a", "b"], ["c"]),
        N("Or", ["c", "a"], ["d"]),
        N("Xor", ["d", "b"], ["e"]),
        N("Not", ["e"], ["f"]),
        N("Where", ["f", "x", "z"], ["y"]),
    ],
    XZ,
    initializers={"h": np.array(0.0, np.float32)},
)
for op in ("ArgMax", "ArgMin"):
    # The int64 index, cast to float so the case's output is declared float.
    case(
        f"{op.lower()}-cast",
        [N(op, ["x"], ["i"], axis=1, keepdims=0), N("Cast", ["i"], ["y"], to=TensorProto.FLOAT)],
        X234,
    )
case(
    "gather-elements",
    [N("GatherElements", ["x", "i"], ["y"], axis=1)],
    X234,
    initializers={"i": np.array([[[0, 1, -1, 2]], [[2, 2, 0, -3]]], np.int64)},
)
case(
    "where-constant-condition",
    [N("Where", ["c", "x", "z"], ["y"])],
    {"x": random((2, 3, 4)), "z": random((4,), seed=1)},
    initializers={"c": np.array([True, False, True, False])},
)
case(
    "cast-through-double",
    [
        N("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
        N("CastLike", ["d", "like"], ["y"]),
    ],
    X234,
    initializers={"like": np.zeros(1, np.float32)},
)
case("depth-to-space", [N("DepthToSpace", ["x"], ["y"], blocksize=2)], {"x": random((1, 8, 2, 3))})
case("space-to-depth", [N("SpaceToDepth", ["x"], ["y"], blocksize=2)], {"x": random((1, 2, 4, 6))})
case(
    "resize-linear",
    [N("Resize", ["x", "", "sc"], ["y"], mode="linear")],
    {"x": random((1, 2, 3, 4))},
    initializers={"sc": np.array([1, 1, 2, 1.5], np.float32)},
)
case(
    "upsample-nearest",
    [N("Upsample", ["x", "sc"], ["y"], mode="nearest")],
    {"x": random((1, 2, 3, 4))},
    initializers={"sc": np.array([1, 1, 2, 2], np.float32)},
    opset=9,
)
case(
    "gather-constant-indices",
    [N("Gather", ["x", "i"], ["y"], axis=1)],
    X234,
    initializers={"i": np.array([[2, 0], [-1, 1]], np.int64)},
)
case(
    "concat",
    [N("Concat", ["x", "c", "z"], ["y"], axis=1)],
    {"x": random((2, 3, 4)), "z": random((2, 1, 4), 1)},
    initializers={"c": random((2, 2, 4), 2)},
)
case(
    "concat-negative-axis",
    [N("Concat", ["x", "z"], ["y"], axis=-1)],
    {"x": random((2, 3, 4)), "z": random((2, 3, 2), 1)},
)
case(
    "reducemean-axes-input",
    [N("ReduceMean", ["x", "a"], ["y"])],
    X234,
    initializers={"a": np.array([-1], np.int64)},
)
case(
    "reducemean-keepdims0",
    [N("ReduceMean", ["x", "a"], ["y"], keepdims=0)],
    X234,
    initializers={"a": np.array([0, 2], np.int64)},
)
case("reducemean-all", [N("ReduceMean", ["x"], ["y"])], X234)
case("reducemean-noop", [N("ReduceMean", ["x"], ["y"], noop_with_empty_axes=1)], X234)
case(
    "reducemean-attribute-opset13",
    [N("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
    X234,
    opset=13,
)
X_POSITIVE = {"x": random((2, 3, 4), seed=5, positive=True)}
for op in (
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
):
    inputs = X_POSITIVE if op == "ReduceLogSum" else X234
    name = op.lower()
    case(
        f"{name}-axes-input",
        [N(op, ["x", "a"], ["y"])],
        inputs,
        initializers={"a": np.array([0, -1], np.int64)},
    )
    case(
        f"{name}-keepdims0",
        [N(op, ["x", "a"], ["y"], keepdims=0)],
        inputs,
        initializers={"a": np.array([1], np.int64)},
    )
    case(f"{name}-all", [N(op, ["x"], ["y"], keepdims=0)], inputs)
    before_axes_input = 12 if op == "ReduceSum" else 13
    case(
        f"{name}-attribute-opset{before_axes_input}",
        [N(op, ["x"], ["y"], axes=[2, 0])],
        inputs,
        opset=before_axes_input,
    )
case("reducesum-attribute-opset11", [N("ReduceSum", ["x"], ["y"], axes=[1])], X234, opset=11)
case("reducesum-noop", [N("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)], X234)
case("reducemax-noop", [N("ReduceMax", ["x"], ["y"], noop_with_empty_axes=1)], X234)
case(
    "reducelogsumexp-large",
    [N("ReduceLogSumExp", ["x", "a"], ["y"], keepdims=0)],
    {"x": random((2, 3, 4)) * 200},
    initializers={"a": np.array([1], np.int64)},
)
case(
    # An empty axis: max is -inf and log(0) is -inf (0 against 1 broadcasts to 0).
    "reducelogsumexp-empty-axis",
    [N("ReduceLogSumExp", ["x", "a"], ["y"])],
    {"x": np.zeros((2, 0, 4), np.float32)},
    initializers={"a": np.array([1], np.int64)},
)
case(
    "reducelogsumexp-infinite-rows",
    [N("ReduceLogSumExp", ["x", "a"], ["y"], keepdims=0)],
    {"x": np.array([[-np.inf, -np.inf, -np.inf], [1, 2, 3], [np.inf, 0, 1], [-np.inf, 0, 1]], np.float32)},
    initializers={"a": np.array([1], np.int64)},
)
case(
    "instance-normalization",
    [N("InstanceNormalization", ["x", "g", "b"], ["y"], epsilon=1e-3)],
    {"x": random((2, 3, 4, 5)) * 3 + 1},
    initializers={"g": random((3,), 1), "b": random((3,), 2)},
)
case(
    "instance-normalization-1d",
    [N("InstanceNormalization", ["x", "g", "b"], ["y"])],
    {"x": random((2, 4, 7)), "g": random((4,), 1), "b": random((4,), 2)},
)
case(
    "unsqueeze",
    [N("Unsqueeze", ["x", "a"], ["y"])],
    X234,
    initializers={"a": np.array([1], np.int64)},
)
case(
    "unsqueeze-several",
    [N("Unsqueeze", ["x", "a"], ["y"])],
    X234,
    initializers={"a": np.array([0, -1, 3], np.int64)},
)
case("unsqueeze-attribute-opset11", [N("Unsqueeze", ["x"], ["y"], axes=[0, 2])], X234, opset=11)
case(
    "squeeze",
    [N("Squeeze", ["x", "a"], ["y"])],
    {"x": random((2, 1, 3, 1))},
    initializers={"a": np.array([-1], np.int64)},
)
case("squeeze-all", [N("Squeeze", ["x"], ["y"])], {"x": random((1, 2, 1, 3))})
case("squeeze-attribute-opset11", [N("Squeeze", ["x"], ["y"], axes=[1])], {"x": random((2, 1, 3))}, opset=11)
case(
    "constant-tensor",
    [
        N("Constant", [], ["c"], value=numpy_helper.from_array(random((3, 4), 9))),
        N("Mul", ["x", "c"], ["y"]),
    ],
    X234,
)
case(
    "constant-value-float",
    [N("Constant", [], ["c"], value_float=1.5), N("Sub", ["x", "c"], ["y"])],
    X234,
)
case(
    "constant-value-floats",
    [N("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0, 4.0]), N("Add", ["x", "c"], ["y"])],
    X234,
)

# Linear algebra
A = random((5, 6))
case(
    "gemm-transb-bias",
    [N("Gemm", ["x", "w", "b"], ["y"], transB=1)],
    {"x": A},
    initializers={"w": random((3, 6), 1), "b": random((3,), 2)},
)
case(
    "gemm-plain",
    [N("Gemm", ["x", "w"], ["y"])],
    {"x": A},
    initializers={"w": random((6, 3), 1)},
)
case(
    "gemm-transa-alpha-beta-matrix-c",
    [N("Gemm", ["x", "w", "c"], ["y"], transA=1, alpha=0.5, beta=2.0)],
    {"x": random((6, 5))},
    initializers={"w": random((6, 3), 1), "c": random((5, 3), 2)},
)
case(
    "gemm-scalar-c",
    [N("Gemm", ["x", "w", "c"], ["y"], transB=1, beta=0.5)],
    {"x": A},
    initializers={"w": random((3, 6), 1), "c": np.array([1.5], np.float32)},
)
case(
    "gemm-row-c-scaled",
    [N("Gemm", ["x", "w", "c"], ["y"], beta=-1.0)],
    {"x": A},
    initializers={"w": random((6, 3), 1), "c": random((1, 3), 2)},
)
case(
    "gemm-b-input-transb",
    [N("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=2.0)],
    {"x": A, "w": random((3, 6), 1), "c": random((3,), 2)},
)
case(
    "gemm-b-input-transa-c-input-beta",
    [N("Gemm", ["x", "w", "c"], ["y"], transA=1, beta=3.0)],
    {"x": random((6, 5)), "w": random((6, 3), 1), "c": random((5, 1), 2)},
)
case(
    "matmul-2d-initializer",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": A},
    initializers={"w": random((6, 3), 1)},
)
case("matmul-2d-inputs", [N("MatMul", ["x", "w"], ["y"])], {"x": A, "w": random((6, 3), 1)})
case(
    "matmul-3d-by-2d-initializer",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((2, 5, 6))},
    initializers={"w": random((6, 3), 1)},
)
case(
    "matmul-batched",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((3, 5, 6)), "w": random((3, 6, 4), 1)},
)
case(
    "matmul-batch-broadcast-4d",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((2, 1, 5, 6)), "w": random((1, 3, 6, 4), 1)},
)
case(
    "matmul-batch-one-side",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((5, 6)), "w": random((2, 3, 6, 4), 1)},
)
case(
    "matmul-batched-initializer",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((2, 3, 5, 6))},
    initializers={"w": random((3, 6, 4), 1)},
)
case("matmul-vector-matrix", [N("MatMul", ["x", "w"], ["y"])], {"x": random((6,)), "w": random((6, 3), 1)})
case(
    "matmul-vector-matrix-initializer",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((6,))},
    initializers={"w": random((6, 3), 1)},
)
case(
    "matmul-initializer-by-input",
    [N("MatMul", ["w", "x"], ["y"])],
    {"x": random((2, 6, 3))},
    initializers={"w": random((5, 6), 1)},
)
case("matmul-vector-vector", [N("MatMul", ["x", "w"], ["y"])], {"x": random((6,)), "w": random((6,), 1)})
case(
    "matmul-matrix-vector-initializer",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((2, 5, 6))},
    initializers={"w": random((6,), 1)},
)
case(
    "matmul-vector-batched",
    [N("MatMul", ["x", "w"], ["y"])],
    {"x": random((6,)), "w": random((2, 6, 3), 1)},
)

# Quantized: QuantizeLinear/DequantizeLinear around the operator forms (the
# QDQ units themselves are in test_qnn.py)
U8, I8, I32 = np.uint8, np.int8, np.int32
XQ = {"x": random((1, 4, 7, 7)) * np.float32(2)}
case(
    "quantize-dequantize-uint8",
    [N("QuantizeLinear", ["x", "s", "z"], ["q"]), N("DequantizeLinear", ["q", "s", "z"], ["y"])],
    {"x": np.concatenate([random((2, 6)), np.arange(-4, 4, 0.5, np.float32).reshape(2, 8) * 0.1], 1)},
    initializers={"s": np.float32(0.1), "z": U8(128)},
)
case(
    "quantize-dequantize-int8-per-channel",
    [
        N("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        N("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
    ],
    XQ,
    initializers={"s": np.array([0.01, 0.02, 0.05, 0.1], np.float32), "z": np.array([0, -3, 5, 127], I8)},
)
case(
    "quantize-dequantize-int16-per-channel",
    [
        N("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        N("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
    ],
    XQ,
    initializers={"s": np.array([1e-4, 2e-5, 0.01, 1.0], np.float32), "z": np.array([0, -3000, 32767, 5], np.int16)},
)
case(
    "quantize-dequantize-uint16",
    [N("QuantizeLinear", ["x", "s", "z"], ["q"]), N("DequantizeLinear", ["q", "s", "z"], ["y"])],
    XQ,
    initializers={"s": np.float32(3e-5), "z": np.uint16(40000)},
)
_W = np.random.default_rng(3).integers(-127, 128, (6, 4, 3, 3)).astype(I8)
case(
    "qlinearconv",
    [
        N("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
        N("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 1]),
        N("DequantizeLinear", ["c", "ys", "yz"], ["y"]),
    ],
    XQ,
    initializers={
        "xs": np.float32(0.02), "xz": U8(100), "w": _W,
        "ws": np.linspace(0.001, 0.004, 6).astype(np.float32), "wz": np.zeros(6, I8),
        "ys": np.float32(0.05), "yz": U8(30), "b": np.arange(-300, 300, 100).astype(I32),
    },
)
case(
    "qlinearmatmul",
    [
        N("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
        N("QLinearMatMul", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["m"]),
        N("DequantizeLinear", ["m", "ys", "yz"], ["y"]),
    ],
    {"x": random((3, 6))},
    initializers={
        "xs": np.float32(0.02), "xz": I8(-4),
        "w": np.random.default_rng(4).integers(-128, 128, (6, 5)).astype(I8),
        "ws": np.float32(0.01), "wz": I8(3), "ys": np.float32(0.03), "yz": I8(-10),
    },
)
case(
    "convinteger",
    [
        N("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
        N("ConvInteger", ["q", "w", "xz"], ["c"], group=2),
        N("DequantizeLinear", ["c", "cs"], ["y"]),
    ],
    XQ,
    initializers={
        "xs": np.float32(0.02), "xz": U8(7),
        "w": np.random.default_rng(5).integers(0, 256, (4, 2, 2, 2)).astype(U8),
        "cs": np.float32(1e-4),
    },
)
case(
    "matmulinteger",
    [
        N("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
        N("MatMulInteger", ["q", "w", "xz", "wz"], ["m"]),
        N("DequantizeLinear", ["m", "ms"], ["y"]),
    ],
    {"x": random((2, 3, 6))},
    initializers={
        "xs": np.float32(0.02), "xz": U8(128),
        "w": np.random.default_rng(6).integers(-128, 128, (6, 4)).astype(I8),
        "wz": np.array([1, -2, 0, 5], I8), "ms": np.float32(1e-3),
    },
)

IDS = [c.id for c in CASES]


def test_every_supported_op_has_a_case() -> None:
    covered = {c.node for c in CASES} | {
        n.op_type for c in CASES for n in c.build().graph.node
    }
    assert set(SUPPORTED_OPS) <= covered, set(SUPPORTED_OPS) - covered


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_op_matches_onnxruntime(c: Case) -> None:
    """The imported IR, run by the reference interpreter, gives onnxruntime's results."""
    model = c.build()
    module = from_onnx(model)
    want = run_onnxruntime(model, c.inputs)
    got = byoc.run_reference(module, list(c.inputs.values()))
    assert_all_close(got, want, c.id)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_op_compiles_for_the_host(c: Case) -> None:
    """The imported IR, JIT-compiled for the host, gives onnxruntime's results."""
    model = c.build()
    module = from_onnx(model)
    want = run_onnxruntime(model, c.inputs)
    compiled = byoc.compile(module, targets=[])
    got = compiled(*c.inputs.values())
    got = list(got) if isinstance(got, tuple) else [got]
    assert_all_close(got, want, c.id)
    assert_all_close(got, byoc.run_reference(module, list(c.inputs.values())), c.id)


# --- What the importer builds ---------------------------------------------------


def ops_of(module) -> list:
    return [op for op in module.walk() if isinstance(op, relay.RelayOp)]


@pytest.mark.parametrize(
    "base, exponent",
    [
        (np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32), np.array([2, 3, -1], np.int32)),
        (np.array([[1.5, 2.0, 3.0], [0.5, 4.0, 1.0]], np.float32), np.array([2, 3, 1], np.int64)),
        (np.array([[1, -2, 3], [7, 4, -1]], np.int32), np.array([4, 3, 0], np.int32)),
        (np.array([[1, -2, 3], [7, 4, -1]], np.int64), np.array([0.5, 3.0, 2.0], np.float32)),
        (np.array([[1, -2, 3], [-5, 2, -1]], np.int64), np.array([3, 51, 33], np.int64)),
    ],
    ids=["f32-i32", "f32-i64", "i32-i32", "i64-f32", "i64-i64-large"],
)
def test_pow_of_mixed_types_matches_onnxruntime(base, exponent) -> None:
    """Pow's result has the base's type whatever the exponent's (integer bases
    are raised in float64, exact up to 2**53)."""
    dtype = {np.dtype(t): onnx.helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in (base.dtype, exponent.dtype)}
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [N("Pow", ["x", "e"], ["y"])],
        "pow",
        [value("x", dtype[base.dtype], base.shape), value("e", dtype[exponent.dtype], exponent.shape)],
        [value("y", dtype[base.dtype], None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)
    (want,) = run_onnxruntime(model, {"x": base, "e": exponent})
    for targets in ([], ["ccompiler"]):
        got = byoc.compile(model, targets=targets)(base, exponent)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(targets))


def test_prelu_before_opset_7_has_one_slope_per_channel() -> None:
    # onnxruntime has no PRelu-6 kernel: the meaning is checked by hand.
    x, slope = random((2, 3, 4, 5)), random((3,), 1)
    model = make_model(
        [N("PRelu", ["x", "s"], ["y"])], {"x": x.shape}, ["y"], {"s": slope}, opset=6
    )
    module = from_onnx(model)
    assert [op.name for op in ops_of(module)][-1] == "relay.nn.prelu"
    want = np.where(x < 0, x * slope.reshape(3, 1, 1), x)
    np.testing.assert_allclose(byoc.run_reference(module, [x])[0], want, rtol=1e-6)
    np.testing.assert_allclose(byoc.compile(module, targets=[])(x), want, rtol=1e-6)


@pytest.mark.parametrize(
    "op, meaning",
    [
        ("ReduceL1", np.abs),
        ("ReduceL2", np.abs),
        ("ReduceSumSquare", np.square),
        ("ReduceLogSumExp", lambda x: x),
    ],
)
def test_noop_reductions_keep_their_elementwise_steps(op, meaning) -> None:
    """With no axes and noop_with_empty_axes, onnx's reference applies the
    elementwise steps without reducing (`sum(|x|, axis=())` is `|x|`)."""
    x = random((2, 3))
    model = make_model([N(op, ["x"], ["y"], noop_with_empty_axes=1)], {"x": x.shape}, ["y"])
    module = from_onnx(model)
    np.testing.assert_allclose(byoc.run_reference(module, [x])[0], meaning(x), rtol=1e-6)


def test_initializers_are_constants_not_arguments() -> None:
    model = make_model(
        [N("MatMul", ["x", "w"], ["y"])],
        {"x": (5, 6)},
        ["y"],
        {"w": random((6, 3))},
    )
    # Old exporters list initializers among the graph inputs too.
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 3]))
    module = from_onnx(model)
    main = next(iter(module.ops))
    assert [a.name_hint for a in main.body.block.args] == ["x"]
    names = [op.name for op in ops_of(module)]
    assert names == ["relay.constant", "relay.nn.dense"]


def test_gemm_with_constant_weight_is_dense_plus_bias_add() -> None:
    model = make_model(
        [N("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc")],
        {"x": (2, 6)},
        ["y"],
        {"w": random((3, 6)), "b": random((3,))},
    )
    names = [op.name for op in ops_of(from_onnx(model))]
    assert names == ["relay.constant", "relay.nn.dense", "relay.constant", "relay.nn.bias_add"]


def test_batched_matmul_is_batch_matmul() -> None:
    model = make_model(
        [N("MatMul", ["x", "w"], ["y"])], {"x": (2, 3, 5, 6), "w": (2, 3, 6, 4)}, ["y"]
    )
    names = [op.name for op in ops_of(from_onnx(model))]
    assert "relay.nn.batch_matmul" in names


def test_ops_are_located_at_their_node_and_named_after_tensors(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    model = make_model(
        [
            N("Relu", ["x"], ["r"], name="first"),
            N("Conv", ["r", "w", "b"], ["c"], name="conv"),
            N("Tanh", ["c"], ["y"], name="last"),
        ],
        {"x": (1, 2, 5, 5)},
        ["y"],
        {"w": random((3, 2, 3, 3)), "b": random((3,))},
    )
    onnx.save(model, path)
    module = from_onnx(path)
    lines = {}
    for op in ops_of(module):
        loc = op.location
        assert isinstance(loc, FileLineColLoc), op.name
        assert loc.filename.data == str(path)
        lines.setdefault(loc.line.data, []).append(op.name)
    assert lines[1] == ["relay.nn.relu"]
    assert "relay.nn.conv2d" in lines[2] and "relay.nn.bias_add" in lines[2]
    assert lines[3] == ["relay.tanh"]
    text = str(module)
    for name in ("%x", "%r", "%w", "%c", "%y"):
        assert name in text, name


def test_printed_ir_parses_back_and_runs_the_same() -> None:
    model = make_model(
        [N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), N("Sigmoid", ["c"], ["y"])],
        {"x": (1, 2, 5, 5)},
        ["y"],
        {"w": random((3, 2, 3, 3))},
    )
    module = from_onnx(model)
    again = parse_text(str(module))
    x = random((1, 2, 5, 5), 3)
    assert_all_close(byoc.run_reference(again, [x]), byoc.run_reference(module, [x]), "reparsed")


def test_an_output_that_is_an_input_or_constant() -> None:
    model = make_model(
        [N("Constant", [], ["k"], value=numpy_helper.from_array(random((2,), 1)))],
        {"x": (2,)},
        ["x", "k"],
    )
    module = from_onnx(model)
    x = random((2,))
    got = byoc.run_reference(module, [x])
    assert_all_close(got, run_onnxruntime(model, {"x": x}), "passthrough")


# --- Example models ---------------------------------------------------------------


def load_make_cnn():
    spec = importlib.util.spec_from_file_location("make_cnn", EXAMPLES / "make_cnn.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transformer_block(seq: int = 8, dim: int = 16, heads: int = 2, seed: int = 0) -> onnx.ModelProto:
    """Pre-norm encoder block: x + attention(LN(x)); then + MLP(LN(.)) with Erf-GELU."""
    rng = np.random.default_rng(seed)
    head = dim // heads

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    init = {
        "ln1_g": (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32),
        "ln1_b": (0.1 * rng.standard_normal(dim)).astype(np.float32),
        "wq": w(dim, dim), "bq": w(dim), "wk": w(dim, dim), "bk": w(dim),
        "wv": w(dim, dim), "bv": w(dim), "wo": w(dim, dim), "bo": w(dim),
        "ln2_g": (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32),
        "ln2_b": (0.1 * rng.standard_normal(dim)).astype(np.float32),
        "w1": w(4 * dim, dim), "b1": w(4 * dim), "w2": w(4 * dim, dim), "b2": w(dim),
        "heads_shape": np.array([1, seq, heads, head], np.int64),
        "model_shape": np.array([1, seq, dim], np.int64),
        "rows_shape": np.array([seq, dim], np.int64),
        "scale": np.array(np.sqrt(head), np.float32),
        "sqrt2": np.array(np.sqrt(2.0), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [N("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["ln1"], epsilon=1e-5, name="ln1")]
    for p in "qkv":
        nodes += [
            N("MatMul", ["ln1", f"w{p}"], [f"{p}_mm"], name=f"{p}_proj"),
            N("Add", [f"{p}_mm", f"b{p}"], [f"{p}_lin"]),
            N("Reshape", [f"{p}_lin", "heads_shape"], [f"{p}_heads"]),
        ]
    nodes += [
        N("Transpose", ["q_heads"], ["q"], perm=[0, 2, 1, 3]),
        N("Transpose", ["k_heads"], ["k_t"], perm=[0, 2, 3, 1]),
        N("Transpose", ["v_heads"], ["v"], perm=[0, 2, 1, 3]),
        N("MatMul", ["q", "k_t"], ["scores"], name="qk"),
        N("Div", ["scores", "scale"], ["scaled"]),
        N("Softmax", ["scaled"], ["probs"], axis=-1),
        N("MatMul", ["probs", "v"], ["ctx"], name="pv"),
        N("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        N("Reshape", ["ctx_t", "model_shape"], ["ctx_flat"]),
        N("MatMul", ["ctx_flat", "wo"], ["attn_mm"], name="out_proj"),
        N("Add", ["attn_mm", "bo"], ["attn"]),
        N("Add", ["x", "attn"], ["x1"], name="residual1"),
        N("LayerNormalization", ["x1", "ln2_g", "ln2_b"], ["ln2"], name="ln2"),
        N("Reshape", ["ln2", "rows_shape"], ["rows"]),
        N("Gemm", ["rows", "w1", "b1"], ["h"], transB=1, name="fc1"),
        N("Div", ["h", "sqrt2"], ["h_s"]),
        N("Erf", ["h_s"], ["h_erf"]),
        N("Add", ["h_erf", "one"], ["h_1"]),
        N("Mul", ["h", "h_1"], ["h_m"]),
        N("Mul", ["h_m", "half"], ["gelu"]),
        N("MatMul", ["gelu", "w2"], ["mlp_mm"], name="fc2"),
        N("Add", ["mlp_mm", "b2"], ["mlp"]),
        N("Reshape", ["mlp", "model_shape"], ["mlp_3d"]),
        N("Add", ["x1", "mlp_3d"], ["y"], name="residual2"),
    ]
    return make_model(nodes, {"x": (1, seq, dim)}, ["y"], init, opset=17)


def model_cases():
    return [
        pytest.param(lambda: load_make_cnn().build_model(), "x", (1, 3, 32, 32), id="cnn"),
        pytest.param(transformer_block, "x", (1, 8, 16), id="transformer"),
    ]


@pytest.mark.parametrize(("build", "name", "shape"), model_cases())
def test_model_reference_matches_onnxruntime(build, name, shape) -> None:
    model = build()
    x = random(shape, 11)
    module = from_onnx(model)
    assert_all_close(byoc.run_reference(module, [x]), run_onnxruntime(model, {name: x}), "ref")


@pytest.mark.parametrize(
    "targets",
    [
        pytest.param([], id="host"),
        pytest.param(["cblas", "ccompiler"], id="cblas+ccompiler"),
    ],
)
@pytest.mark.parametrize(("build", "name", "shape"), model_cases())
def test_model_compiles(build, name, shape, targets) -> None:
    missing = set(targets) - set(available_backends())
    if missing:
        pytest.skip(f"backend(s) not installed: {', '.join(sorted(missing))}")
    model = build()
    x = random(shape, 11)
    compiled = byoc.compile(from_onnx(model), targets=targets)
    got = compiled(x)
    got = list(got) if isinstance(got, tuple) else [got]
    assert_all_close(got, run_onnxruntime(model, {name: x}), f"compiled {targets}")


def test_make_cnn_writes_the_example(tmp_path: Path) -> None:
    out = tmp_path / "cnn.onnx"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "make_cnn.py"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == load_make_cnn().build_model().SerializeToString()
    committed = EXAMPLES / "cnn.onnx"
    if committed.exists():
        assert committed.read_bytes() == out.read_bytes(), "examples/cnn.onnx is stale"


def test_compile_and_reference_accept_an_onnx_path(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    model = make_model([N("Tanh", ["x"], ["y"])], {"x": (3, 4)}, ["y"])
    onnx.save(model, path)
    x = random((3, 4))
    want = run_onnxruntime(model, {"x": x})
    assert_all_close(byoc.run_reference(from_onnx(str(path)), [x]), want, "path")
    for source in (path, str(path), model):
        compiled = byoc.compile(source, targets=[])
        assert_all_close([compiled(x)], want, f"compile({type(source).__name__})")


# --- Errors ------------------------------------------------------------------------


def test_unsupported_nodes_are_all_listed() -> None:
    nodes = [
        N("Relu", ["x"], ["r"], name="relu_0"),
        N("Det", ["r"], ["c"], name="det_9"),
        N("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms"),
        N("Tanh", ["c"], ["y"]),
    ]
    model = make_model(
        nodes,
        {"x": (1, 2, 4, 4), "boxes": (1, 5, 4), "scores": (1, 1, 5)},
        ["y"],
        {"w": random((2, 2, 3, 3))},
    )
    with pytest.raises(ByocError) as err:
        from_onnx(model)
    assert str(err.value) == (
        "error: <onnx model>: 2 unsupported ONNX nodes: 'det_9' (Det), "
        "'nms' (NonMaxSuppression)"
    )


@pytest.mark.parametrize("tool", [["byoc-run"], ["byoc-import"], ["byoc-translate", "--emit-c"]])
def test_tools_list_every_unsupported_node_and_exit_1(tool: list[str], tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    nodes = [N("Det", ["x"], ["d"], name="det_0"), N("Relu", ["d"], ["r"]), N("Det", ["r"], ["y"])]
    onnx.save(make_model(nodes, {"x": (1, 2, 2)}, ["y"]), path)
    proc = subprocess.run([str(BIN / tool[0]), str(path), *tool[1:]], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {path}: 2 unsupported ONNX nodes: 'det_0' (Det), #2 (Det)"
    )


def test_unsupported_node_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(make_model([N("Det", ["x"], ["y"])], {"x": (2, 2)}, ["y"]), path)
    with pytest.raises(ByocError, match=r"error: .*model\.onnx: 1 unsupported ONNX node: #0 \(Det\)$"):
        from_onnx(path)


def test_dynamic_input_shape_is_an_error_unless_pinned() -> None:
    model = make_model([N("Relu", ["x"], ["y"])], {"x": ("batch", 3)}, ["y"])
    with pytest.raises(ByocError, match=r"input 'x' \(shape \[batch, 3\]\) has symbolic dimension batch"):
        from_onnx(model)
    module = from_onnx(model, input_shapes={"x": [2, 3]})
    x = random((2, 3))
    assert_all_close(byoc.run_reference(module, [x]), [np.maximum(x, 0)], "pinned")
    with pytest.raises(ByocError, match="'z', which is not a graph input"):
        from_onnx(model, input_shapes={"z": [2, 3]})


def test_an_input_dtype_byoc_does_not_run_is_an_error() -> None:
    model = make_model(
        [N("Relu", ["x"], ["y"])], {"x": (2, 3)}, ["y"], input_type=TensorProto.BFLOAT16
    )
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.BFLOAT16
    with pytest.raises(
        ByocError,
        match="input 'x' is bfloat16; byoc runs only float16, float32, float64, bool and "
        r"8- to 64-bit \(unsigned\) integer tensors",
    ):
        from_onnx(model)


def half_cnn() -> onnx.ModelProto:
    """A float16 model whose sums are long enough for half-precision partial
    sums to drift (27- and 64-term dot products, a 36-element mean), ending in
    a softmax, with a cast back and forth on the way."""
    rng = np.random.default_rng(3)
    weights = {
        "w": (rng.standard_normal((64, 3, 3, 3)) * 0.3).astype(np.float16),
        "fc": (rng.standard_normal((64, 10)) * 0.2).astype(np.float16),
    }
    nodes = [
        N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        N("Relu", ["c"], ["r"]),
        N("Cast", ["r"], ["r32"], to=TensorProto.FLOAT),
        N("Cast", ["r32"], ["r16"], to=TensorProto.FLOAT16),
        N("GlobalAveragePool", ["r16"], ["g"]),
        N("Flatten", ["g"], ["f"]),
        N("MatMul", ["f", "fc"], ["m"]),
        N("Softmax", ["m"], ["y"]),
    ]
    model = make_model(nodes, {"x": (2, 3, 6, 6)}, ["y"], weights, input_type=TensorProto.FLOAT16)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    return model


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["cblas", "ccompiler"]], ids=str)
def test_float16_models_run_and_sum_in_float32(targets: list[str]) -> None:
    """float16 inputs and outputs work; matmuls, convolutions, means and
    softmaxes sum in float32 and round once (byoc-widen-half), as numpy and
    onnx's reference evaluator do, so the result is the reference's within a
    unit in the last place, where half-precision partial sums were off by
    several."""
    from onnx.reference import ReferenceEvaluator

    model = half_cnn()
    x = (random((2, 3, 6, 6), seed=4) * 2).astype(np.float16)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    compiled = byoc.compile(model, targets=targets, quiet=True)
    got = compiled(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-4)
    assert np.array_equal(got, byoc.run_reference(from_onnx(model), [x])[0])


def test_an_integer_tensor_where_an_op_needs_floats_names_the_node() -> None:
    model = make_model(
        [N("MatMul", ["k", "k"], ["y"], name="matmul_int")],  # MatMul does not fold
        {},
        ["y"],
        {"k": np.array([[1, -2], [3, 4]], np.int64)},
    )
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(
        ByocError,
        match=r"node 'matmul_int' \(MatMul\): 'relay.nn.dense': data must have a float "
        "element type, got i64",
    ):
        from_onnx(model)


def test_an_output_dtype_byoc_does_not_run_is_an_error() -> None:
    model = make_model(
        [N("Identity", ["k"], ["y"])], {}, ["y"], {"k": np.array([1, 2], np.complex64)}
    )
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.COMPLEX64
    with pytest.raises(ByocError, match=r"output 'y' is complex64; byoc runs only"):
        from_onnx(model)


def test_non_constant_clip_bound_names_the_node() -> None:
    model = make_model(
        [N("Clip", ["x", "lo"], ["y"], name="clip_3")], {"x": (2, 3), "lo": ()}, ["y"]
    )
    with pytest.raises(
        ByocError, match=r"node 'clip_3' \(Clip\): min \(input 1, 'lo'\) must be a constant"
    ):
        from_onnx(model)


def test_4d_conv_is_refused_with_the_node_named() -> None:
    model = make_model(
        [N("Conv", ["x", "w"], ["y"], name="conv4d")],
        {"x": (1, 2, 3, 3, 3, 3)},
        ["y"],
        {"w": random((3, 2, 2, 2, 2, 2))},
    )
    with pytest.raises(
        ByocError, match=r"node 'conv4d' \(Conv\): only 1-d, 2-d and 3-d Conv is supported"
    ):
        from_onnx(model)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "cannot read the file"),
        (b"", "not an ONNX model"),
        (b"\x00\x01\x02garbage\xff\xfe" * 10, "not an ONNX model"),
        (b"func.func @main() {}\n", "not an ONNX model"),
        ("truncated", "not an ONNX model"),
    ],
    ids=["missing", "empty", "garbage", "text", "truncated"],
)
def test_bad_files_are_one_error(tmp_path: Path, content, needle) -> None:
    path = tmp_path / "bad.onnx"
    if content == "truncated":
        data = load_make_cnn().build_model().SerializeToString()
        path.write_bytes(data[: len(data) // 2])
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ByocError) as err:
        from_onnx(path)
    message = str(err.value)
    assert needle in message and str(path) in message, message
    assert "\n" not in message


def test_a_model_of_other_operator_sets_is_refused_by_name() -> None:
    """ai.onnx.ml's models (onnx's own tests) import no ai.onnx operator set:
    not a truncated file, an unsupported one."""
    model = make_model([N("Relu", ["x"], ["y"])], {"x": (2,)}, ["y"])
    del model.opset_import[:]
    model.opset_import.add(domain="ai.onnx.ml", version=3)
    model.opset_import.add(domain="ai.onnx.preview.training", version=1)
    with pytest.raises(ByocError) as err:
        from_onnx(model)
    assert str(err.value) == (
        "error: <onnx model>: the model imports only the operator sets ai.onnx.ml 3, "
        "ai.onnx.preview.training 1, which are not supported: byoc converts the "
        "ai.onnx operators"
    )
    del model.opset_import[:]
    with pytest.raises(ByocError, match="imports no ai.onnx operator set"):
        from_onnx(model)


# --- byoc-import ---------------------------------------------------------------------


def run_tool(tool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True)


@pytest.fixture
def cnn_file(tmp_path: Path) -> Path:
    path = tmp_path / "cnn.onnx"
    onnx.save(load_make_cnn().build_model(), path)
    return path


def test_byoc_import_prints_ir_that_byoc_opt_reads(cnn_file: Path, tmp_path: Path) -> None:
    proc = run_tool("byoc-import", cnn_file)
    assert proc.returncode == 0, proc.stderr
    assert "relay.nn.conv2d" in proc.stdout and "func.func @main" in proc.stdout
    out = tmp_path / "cnn.mlir"
    proc = run_tool("byoc-import", cnn_file, "-o", out)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert out.read_text() == run_tool("byoc-import", cnn_file).stdout
    again = run_tool("byoc-opt", out)
    assert again.returncode == 0, again.stderr
    x = random((1, 3, 32, 32), 5)
    reparsed = parse_text(out.read_text())
    assert_all_close(
        byoc.run_reference(reparsed, [x]),
        run_onnxruntime(load_make_cnn().build_model(), {"x": x}),
        "byoc-import output",
    )


def test_byoc_import_pins_input_shapes(tmp_path: Path) -> None:
    path = tmp_path / "dyn.onnx"
    onnx.save(make_model([N("Relu", ["x"], ["y"])], {"x": ("n", 3)}, ["y"]), path)
    proc = run_tool("byoc-import", path)
    assert proc.returncode == 1 and "--input-shape x=<n>,3" in proc.stderr
    proc = run_tool("byoc-import", path, "--input-shape", "x=4,3")
    assert proc.returncode == 0, proc.stderr
    assert "tensor<4x3xf32>" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.onnx"], "cannot read the file"),
        (["garbage"], "not an ONNX model"),
        (["truncated"], "not an ONNX model, or a truncated one"),
        (["unsupported"], "1 unsupported ONNX node"),
        (["good", "--input-shape", "x=a,b"], "--input-shape"),
    ],
    ids=["missing", "garbage", "truncated", "unsupported", "bad-shape-flag"],
)
def test_byoc_import_fails_cleanly(tmp_path: Path, args: list[str], needle: str) -> None:
    files = {
        "garbage": b"\x08\x07garbage" * 5,
        "truncated": load_make_cnn().build_model().SerializeToString()[:100_000],
        "unsupported": make_model([N("Det", ["x"], ["y"])], {"x": (2, 2)}, ["y"]).SerializeToString(),
        "good": make_model([N("Relu", ["x"], ["y"])], {"x": (2,)}, ["y"]).SerializeToString(),
    }
    argv = []
    for arg in args:
        if arg in files:
            path = tmp_path / f"{arg}.onnx"
            path.write_bytes(files[arg])
            arg = str(path)
        argv.append(arg)
    proc = run_tool("byoc-import", *argv)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert needle in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") <= 2, proc.stderr


def test_byoc_run_takes_an_onnx_model(cnn_file: Path) -> None:
    proc = run_tool("byoc-run", cnn_file, "--annotate=", "--check", "--rtol", "1e-4", "--atol", "1e-5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: matches the reference" in proc.stdout


def test_byoc_works_without_onnx() -> None:
    """onnx is optional: byoc imports and compiles relay text without it."""
    script = (
        "import sys; sys.modules['onnx'] = None\n"
        "import byoc\n"
        f"byoc.compile({str(EXAMPLES / 'byoc_guide.mlir')!r}, targets=[], cache=False)\n"
        "from byoc.frontend.onnx import from_onnx\n"
        "try:\n"
        f"    from_onnx({str(EXAMPLES / 'cnn.onnx')!r})\n"
        "except byoc.ByocError as err:\n"
        "    print(err)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "needs the onnx package" in proc.stdout


def _loss_model(target: np.ndarray, scores_shape: Sequence[int]) -> onnx.ModelProto:
    return make_model(
        [N("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
        {"x": scores_shape},
        ["y"],
        initializers={"t": target},
    )


def test_loss_target_of_the_wrong_shape_names_the_node() -> None:
    # ONNX's shape inference finds it first; the converter checks it again.
    with pytest.raises(ByocError, match=r"NegativeLogLikelihoodLoss.*dimension value mismatch"):
        byoc.compile(_loss_model(np.array([0, 1, 2], np.int64), (2, 4)))


@pytest.mark.parametrize(
    "equation, shapes, needle",
    [
        ("ij,jk->ik", [(3, 4)], "does not match"),
        ("ijk->i", [(3, 4)], "does not match"),
        ("ij->ii", [(3, 4)], "names 'i' twice"),
        ("ij->k", [(3, 4)], "missing from the inputs"),
        ("i.j", [(3, 4)], "not comma-separated terms"),  # onnx's shape inference hangs on it
        ("i..j->", [(3, 4)], "not comma-separated terms"),
        ("ij->", [(3, 4)], None),
    ],
)
def test_bad_einsum_equations_are_one_error_naming_the_node(equation, shapes, needle) -> None:
    """ONNX's shape inference or the importer's own checks: either way one
    error naming the node and what is wrong."""
    inputs = {f"x{i}": shape for i, shape in enumerate(shapes)}
    model = make_model(
        [N("Einsum", list(inputs), ["y"], equation=equation, name="mix")], inputs, ["y"]
    )
    if needle is None:
        from_onnx(model)
        return
    with pytest.raises(ByocError, match="mix") as error:
        from_onnx(model)
    assert needle in str(error.value), str(error.value)


@pytest.mark.parametrize(
    "attributes, mask, opset",
    [
        # A bool mask shorter than the keys (padded with false), softmax output.
        ({"qk_matmul_output_mode": 3}, np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 1]], bool), 23),
        # The padding of nonpad_kv_seqlen with a per-batch causal frontier.
        ({"is_causal": 1}, None, 24),
        # A sliding window of one key on the left and the mask.
        ({"left_window_size": 1, "right_window_size": 0}, np.ones((4, 6), bool), 26),
    ],
    ids=["bool-mask-short-mode3", "nonpad-causal", "window"],
)
def test_attention_masks_match_onnx_reference(attributes, mask, opset) -> None:
    """What onnxruntime does not run (masks shorter than the keys, nonpad_kv_seqlen,
    windows), against onnx's reference; a query seeing no key gives zeros."""
    from onnx.reference import ReferenceEvaluator

    feeds = dict(QKV4)
    names = ["q", "k", "v", "m" if mask is not None else ""]
    value = helper.make_tensor_value_info
    inputs = [value(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()]
    if mask is not None:
        feeds["m"] = mask
        inputs.append(value("m", TensorProto.BOOL, mask.shape))
    if opset == 24 and "is_causal" in attributes:
        names += ["", "", "n"]
        feeds["n"] = np.array([6, 3], np.int64)
        inputs.append(value("n", TensorProto.INT64, [2]))
    outputs = ["y", "", "", "s"] if attributes.get("qk_matmul_output_mode") else ["y"]
    graph = helper.make_graph(
        [N("Attention", names, outputs, **attributes)],
        "attention",
        inputs,
        [value(o, TensorProto.FLOAT, None) for o in outputs if o],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    want = ReferenceEvaluator(model).run(None, feeds)
    for targets in ([], ["ccompiler"]):
        got = byoc.compile(model, targets=targets)(*feeds.values())
        got = list(got) if isinstance(got, tuple) else [got]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(targets))
    if mask is not None and not mask[1].any():
        assert not got[0][:, :, 1].any()  # the query that sees nothing


def test_loss_target_out_of_range_is_a_run_time_error_naming_the_gather() -> None:
    model = byoc.compile(_loss_model(np.array([0, 7], np.int64), (2, 4)))
    with pytest.raises(ByocError, match=r"'relay.gather': index 7 is out of range for axis 1 of size 4"):
        model(random((2, 4)))
