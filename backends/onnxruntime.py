"""onnxruntime: the BYOC guide's second path, a graph backend with its own runtime.

Each outlined function becomes an ONNX model (opset 19, checked with
`onnx.checker`) run by one `onnxruntime.InferenceSession` per function,
created once at codegen or load time. No C is generated: the host reaches a
session through the external function ABI by a cffi callback,

    int32_t <symbol>(const float* in0, ..., float* out0, ...)

registered under the function's symbol with `llvmlite.binding.add_symbol`
before the host is JIT-compiled. The callback binds the host's buffers to the
session in place (ONNX Runtime IO binding on the raw pointers, inputs and
outputs alike: no copy on either side), runs it, and returns 0, or 1 after
logging any exception (the host then reports failure; no exception ever
crosses into C).

Artifacts keep the serialised models in `sources` as base64 text
(`<symbol>.onnx.b64`, which `load_artifact` turns back into sessions) beside a
readable `<symbol>.onnx.txt`; the sessions and callbacks live in `keepalive`.
`onnx` and `onnxruntime` are imported only when code is generated or loaded
(`pip install byoc[onnx]`); the op checks need neither.
"""

from __future__ import annotations

import base64
import logging
import math
import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import cffi
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from byoc.backends.spec import Artifact, Backend
from byoc.dialects import relay
from byoc.frontend.diagnostics import ByocError

OPSET = 19
"""ONNX opset of the generated models (19: AveragePool takes dilations)."""
IR_VERSION = 9
"""The ONNX IR version that goes with opset 19."""
INTRA_OP_THREADS = 2

_log = logging.getLogger(__name__)
_ffi = cffi.FFI()

# --- Which ops this backend takes ---------------------------------------------

Check = Callable[[Operation], "str | None"]


def _tensor_reason(op: Operation) -> str | None:
    """Why ONNX Runtime should not get `op`'s tensors, or None if they are fine."""
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, value in enumerate(values):
            typ = value.type
            if not isinstance(typ, TensorType):
                return f"{kind} {i} is not a tensor"
            if not isinstance(typ.element_type, Float32Type):
                return f"only float32 tensors are offloaded ({kind} {i} is {typ})"
            if 0 in typ.get_shape():
                return f"{kind} {i} has a zero-size dimension ({typ})"
    return None


def _checked(extra: Check | None = None) -> Check:
    """A check for float32, non-empty tensors, then `extra` (attributes)."""

    def check(op: Operation) -> str | None:
        return _tensor_reason(op) or (extra(op) if extra else None)

    return check


def _shape(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def _pool_check(op: Operation) -> str | None:
    """ONNX Runtime drops a ceil_mode window that starts in the end padding
    (PyTorch's rule); Relay keeps it."""
    assert isinstance(op, relay.Pool2dOp | relay.Pool3dOp)
    attrs = op.attrs()
    if not attrs["ceil_mode"]:
        return None
    data, out = _shape(op.operands[0]), _shape(op.results[0])
    spatial = len(data) - 2
    pads = relay.normalize_padding_nd(attrs["padding"], spatial, op.name)
    for axis in range(spatial):
        dim = axis + 2
        if (out[dim] - 1) * attrs["strides"][axis] >= data[dim] + pads[axis]:
            return (
                f"with ceil_mode, the last window along dimension {dim} starts in "
                "the padding, which ONNX Runtime drops; use ceil_mode=false or "
                "other padding"
            )
    return None


def _lrn_check(op: Operation) -> str | None:
    """ONNX Runtime's LRN runs across axis 1 of NCHW data, with an odd size."""
    attrs = op.attrs()  # type: ignore[attr-defined]
    rank = len(_shape(op.operands[0]))
    axis = relay.normalize_axis(attrs["axis"], rank, op.name)
    if rank != 4 or axis != 1:
        return f"ONNX Runtime's LRN takes NCHW data across axis 1 (rank {rank}, axis {axis})"
    if attrs["size"] % 2 == 0:
        return f"ONNX Runtime's LRN takes only odd sizes (size {attrs['size']})"
    return None


def _instance_norm_check(op: Operation) -> str | None:
    """ONNX's InstanceNormalization normalises per axis-1 channel of rank >= 3 data."""
    rank = len(_shape(op.operands[0]))
    axis = relay.normalize_axis(op.attrs()["axis"], rank, op.name)  # type: ignore[attr-defined]
    if rank < 3 or axis != 1:
        return f"ONNX's InstanceNormalization takes channels on axis 1 of rank >= 3 data (rank {rank}, axis {axis})"
    return None


SUPPORTED: dict[str, Check] = {
    **{op.name: _checked() for op in (*relay.BINARY_OPS, *relay.UNARY_OPS)},
    **{
        op.name: _checked()
        for op in (
            relay.ClipOp,
            *relay.ACTIVATION_OPS,
            relay.BiasAddOp,
            relay.DenseOp,
            relay.MatmulOp,
            relay.BatchMatmulOp,
            *relay.CONV_OPS,
            relay.GlobalAvgPool2dOp,
            *relay.NORMALIZATION_OPS,
            *relay.SHAPE_OPS,
            *relay.REDUCTION_OPS,
        )
    },
    **{
        op.name: _checked(_pool_check)
        for op in (relay.MaxPool2dOp, relay.AvgPool2dOp, relay.MaxPool3dOp, relay.AvgPool3dOp)
    },
    relay.LrnOp.name: _checked(_lrn_check),
    relay.InstanceNormOp.name: _checked(_instance_norm_check),
}
"""Relay op name → check: every relay op, on float32 tensors without empty
dimensions. Constants are not ops of their own: those up to `INLINE_CONSTANTS`
elements are copied into the functions and become initializers."""

INLINE_CONSTANTS = 1 << 24
"""Weights up to 16M elements become initializers, which onnxruntime folds and
pre-packs for Gemm/Conv; larger ones are passed as arguments (one ONNX model
must stay under protobuf's 2 GB)."""

# --- Relay functions to ONNX models ----------------------------------------------


class GraphBuilder:
    """The nodes and initializers of one ONNX graph, with fresh value names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.names: dict[SSAValue, str] = {}
        self._count = 0

    def fresh(self, hint: str = "t") -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def name(self, value: SSAValue) -> str:
        """The ONNX name of `value` (fresh the first time it is asked for)."""
        if value not in self.names:
            self.names[value] = self.fresh("v")
        return self.names[value]

    def node(self, op_type: str, inputs: Sequence[str], output: str | None = None, **attrs: Any) -> str:
        """Add a node with one output (`output`, or a fresh name); returns it."""
        output = output or self.fresh()
        self.nodes.append(
            self.helper.make_node(op_type, list(inputs), [output], **attrs)
        )
        return output

    def initializer(self, array: np.ndarray, hint: str = "c") -> str:
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        """An int64 initializer (shapes and axes)."""
        return self.initializer(np.asarray(list(values), dtype=np.int64), "i")

    def scalar(self, value: float) -> str:
        return self.initializer(np.asarray(value, dtype=np.float32), "s")

    def along(self, vector: str, axis: int, rank: int) -> str:
        """1-d `vector` reshaped to broadcast along `axis` of a rank-`rank` tensor."""
        if axis == rank - 1:
            return vector
        return self.node("Reshape", [vector, self.ints([-1] + [1] * (rank - axis - 1))])


Emitter = Callable[[GraphBuilder, Operation, list[str], str], None]
"""Adds the nodes of one relay op: (graph, op, operand names, result name)."""


def _simple(op_type: str) -> Emitter:
    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        g.node(op_type, args, out)

    return emit


def _clip(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    attrs = op.attrs()  # type: ignore[attr-defined]
    g.node("Clip", [args[0], g.scalar(attrs["a_min"]), g.scalar(attrs["a_max"])], out)


def _rsqrt(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    g.node("Reciprocal", [g.node("Sqrt", args)], out)


def _with_attrs(op_type: str, **renamed: str) -> Emitter:
    """An ONNX op taking the relay op's float attributes (`renamed`: ONNX name
    -> relay name; by default each attribute under its own name)."""

    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        attrs = op.attrs()  # type: ignore[attr-defined]
        names = renamed or {name: name for name in attrs}
        g.node(op_type, args, out, **{k: float(attrs[v]) for k, v in names.items()})

    return emit


def _gelu(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    # Gelu is an ONNX op only from opset 20: its formula.
    (x,) = args
    if op.attrs()["approximate"] == "tanh":  # type: ignore[attr-defined]
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.scalar(0.044715)])])
        curve = g.node("Tanh", [g.node("Mul", [inner, g.scalar(math.sqrt(2 / math.pi))])])
    else:
        curve = g.node("Erf", [g.node("Mul", [x, g.scalar(math.sqrt(0.5))])])
    half = g.node("Mul", [x, g.scalar(0.5)])
    g.node("Mul", [half, g.node("Add", [curve, g.scalar(1.0)])], out)


def _prelu(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    rank = len(_shape(op.operands[0]))
    axis = relay.normalize_axis(op.attrs()["axis"], rank, op.name)  # type: ignore[attr-defined]
    g.node("PRelu", [args[0], g.along(args[1], axis, rank)], out)


def _bias_add(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    rank = len(_shape(op.operands[0]))
    axis = relay.normalize_axis(op.attrs()["axis"], rank, op.name)  # type: ignore[attr-defined]
    g.node("Add", [args[0], g.along(args[1], axis, rank)], out)


def _dense(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    if len(_shape(op.operands[0])) == 2:
        g.node("Gemm", args, out, transB=1)
    else:
        g.node("MatMul", [args[0], g.node("Transpose", [args[1]], perm=[1, 0])], out)


def _swap_last(g: GraphBuilder, name: str, rank: int) -> str:
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return g.node("Transpose", [name], perm=perm)


def _matmul(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    attrs = op.attrs()  # type: ignore[attr-defined]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    rank_a = len(_shape(op.operands[0]))
    if rank_a == 2:
        g.node("Gemm", args, out, transA=int(ta), transB=int(tb))
        return
    a = _swap_last(g, args[0], rank_a) if ta else args[0]
    b = _swap_last(g, args[1], 2) if tb else args[1]
    g.node("MatMul", [a, b], out)


def _batch_matmul(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    attrs = op.attrs()  # type: ignore[attr-defined]
    x = _swap_last(g, args[0], 3) if attrs["transpose_a"] else args[0]
    y = _swap_last(g, args[1], 3) if attrs["transpose_b"] else args[1]
    g.node("MatMul", [x, y], out)


def _padding(op: Operation) -> list[int]:
    """The op's padding as ONNX pads (begins..., ends...)."""
    attrs = op.attrs()  # type: ignore[attr-defined]
    spatial = len(_shape(op.operands[0])) - 2
    return list(relay.normalize_padding_nd(attrs["padding"], spatial, op.name))


def _conv(op_type: str) -> Emitter:
    """Conv (conv2d, conv3d) or ConvTranspose (their transposes): the same
    attributes, and ONNX's weight layouts are relay's."""

    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        attrs = op.attrs()  # type: ignore[attr-defined]
        extra = {}
        if "output_padding" in attrs:
            extra["output_padding"] = list(attrs["output_padding"])
        g.node(
            op_type,
            args,
            out,
            kernel_shape=list(_shape(op.operands[1])[2:]),
            strides=list(attrs["strides"]),
            pads=_padding(op),
            dilations=list(attrs["dilation"]),
            group=attrs["groups"],
            **extra,
        )

    return emit


def _pool(op_type: str) -> Emitter:
    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        attrs = op.attrs()  # type: ignore[attr-defined]
        extra = {}
        if "count_include_pad" in attrs:
            extra["count_include_pad"] = int(attrs["count_include_pad"])
        g.node(
            op_type,
            args,
            out,
            kernel_shape=list(attrs["pool_size"]),
            strides=list(attrs["strides"]),
            pads=_padding(op),
            dilations=list(attrs["dilation"]),
            ceil_mode=int(attrs["ceil_mode"]),
            **extra,
        )

    return emit


def _softmax(op_type: str) -> Emitter:
    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        g.node(op_type, args, out, axis=op.attrs()["axis"])  # type: ignore[attr-defined]

    return emit


def _normalized(
    g: GraphBuilder, op: Operation, centred: str, var: str, gamma: str, beta: str, axis: int, out: str
) -> None:
    """`centred / sqrt(var + epsilon) * gamma + beta`, gamma and beta along `axis`
    (each only if the op's `scale`/`center` says so)."""
    attrs = op.attrs()  # type: ignore[attr-defined]
    rank = len(_shape(op.operands[0]))
    std = g.node("Sqrt", [g.node("Add", [var, g.scalar(attrs["epsilon"])])])
    steps: list[tuple[str, str]] = [("Div", std)]
    if attrs["scale"]:
        steps.append(("Mul", g.along(gamma, axis, rank)))
    if attrs["center"]:
        steps.append(("Add", g.along(beta, axis, rank)))
    value = centred
    for k, (op_type, operand) in enumerate(steps):
        value = g.node(op_type, [value, operand], out if k == len(steps) - 1 else None)


def _batch_norm(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    data, gamma, beta, mean, var = args
    shape = _shape(op.operands[0])
    attrs = op.attrs()  # type: ignore[attr-defined]
    axis = relay.normalize_axis(attrs["axis"], len(shape), op.name)
    if axis == 1 and len(shape) >= 2:
        channels = np.ones(shape[1], np.float32)
        scale = gamma if attrs["scale"] else g.initializer(channels)
        bias = beta if attrs["center"] else g.initializer(channels * 0)
        g.node("BatchNormalization", [data, scale, bias, mean, var], out, epsilon=attrs["epsilon"])
        return
    rank = len(shape)
    centred = g.node("Sub", [data, g.along(mean, axis, rank)])
    _normalized(g, op, centred, g.along(var, axis, rank), gamma, beta, axis, out)


def _layer_norm(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    data, gamma, beta = args
    shape = _shape(op.operands[0])
    attrs = op.attrs()  # type: ignore[attr-defined]
    axis = relay.normalize_axis(attrs["axis"], len(shape), op.name)
    if axis == len(shape) - 1:
        # ONNX normalises over every axis from `axis` on: the same only for the last.
        scale = gamma if attrs["scale"] else g.initializer(np.ones(shape[-1], np.float32))
        inputs = [data, scale] + ([beta] if attrs["center"] else [])
        g.node("LayerNormalization", inputs, out, axis=-1, epsilon=attrs["epsilon"])
        return
    axes = g.ints([axis])
    mean = g.node("ReduceMean", [data, axes], keepdims=1)
    centred = g.node("Sub", [data, mean])
    var = g.node("ReduceMean", [g.node("Mul", [centred, centred]), axes], keepdims=1)
    _normalized(g, op, centred, var, gamma, beta, axis, out)


def _lrn(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    attrs = op.attrs()  # type: ignore[attr-defined]
    g.node(
        "LRN",
        args,
        out,
        size=attrs["size"],
        alpha=attrs["alpha"],
        beta=attrs["beta"],
        bias=attrs["bias"],
    )


def _instance_norm(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    data, gamma, beta = args
    attrs = op.attrs()  # type: ignore[attr-defined]
    channels = _shape(op.operands[0])[1]
    scale = gamma if attrs["scale"] else g.initializer(np.ones(channels, np.float32))
    bias = beta if attrs["center"] else g.initializer(np.zeros(channels, np.float32))
    g.node("InstanceNormalization", [data, scale, bias], out, epsilon=attrs["epsilon"])


def _reshape(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    # Every shape op but transpose and concatenate is a reshape to the result type.
    g.node("Reshape", [args[0], g.ints(_shape(op.results[0]))], out)


def _transpose(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    rank = len(_shape(op.operands[0]))
    perm = relay.transpose_axes(rank, op.attrs()["axes"], op.name)  # type: ignore[attr-defined]
    g.node("Transpose", args, out, perm=list(perm))


def _concatenate(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
    rank = len(_shape(op.operands[0]))
    axis = relay.normalize_axis(op.attrs()["axis"], rank, op.name)  # type: ignore[attr-defined]
    g.node("Concat", args, out, axis=axis)


def _reduce(op_type: str) -> Emitter:
    def emit(g: GraphBuilder, op: Operation, args: list[str], out: str) -> None:
        assert isinstance(op, relay.ReduceOp)
        axes = op.reduced_axes()
        if not axes:  # a scalar: reducing nothing
            g.node("Identity", args, out)
            return
        keepdims = int(op.attrs()["keepdims"])
        g.node(op_type, [args[0], g.ints(axes)], out, keepdims=keepdims)

    return emit


EMITTERS: dict[str, Emitter] = {
    relay.AddOp.name: _simple("Add"),
    relay.SubtractOp.name: _simple("Sub"),
    relay.MultiplyOp.name: _simple("Mul"),
    relay.DivideOp.name: _simple("Div"),
    relay.MaximumOp.name: _simple("Max"),
    relay.MinimumOp.name: _simple("Min"),
    relay.PowerOp.name: _simple("Pow"),
    relay.ReluOp.name: _simple("Relu"),
    relay.TanhOp.name: _simple("Tanh"),
    relay.ExpOp.name: _simple("Exp"),
    relay.NegativeOp.name: _simple("Neg"),
    relay.AbsOp.name: _simple("Abs"),
    relay.LogOp.name: _simple("Log"),
    relay.SqrtOp.name: _simple("Sqrt"),
    relay.RsqrtOp.name: _rsqrt,
    relay.SigmoidOp.name: _simple("Sigmoid"),
    relay.ErfOp.name: _simple("Erf"),
    relay.SinOp.name: _simple("Sin"),
    relay.CosOp.name: _simple("Cos"),
    relay.TanOp.name: _simple("Tan"),
    relay.AsinOp.name: _simple("Asin"),
    relay.AcosOp.name: _simple("Acos"),
    relay.AtanOp.name: _simple("Atan"),
    relay.SinhOp.name: _simple("Sinh"),
    relay.CoshOp.name: _simple("Cosh"),
    relay.AsinhOp.name: _simple("Asinh"),
    relay.AcoshOp.name: _simple("Acosh"),
    relay.AtanhOp.name: _simple("Atanh"),
    relay.SignOp.name: _simple("Sign"),
    relay.FloorOp.name: _simple("Floor"),
    relay.CeilOp.name: _simple("Ceil"),
    relay.RoundOp.name: _simple("Round"),
    relay.ReciprocalOp.name: _simple("Reciprocal"),
    relay.SoftplusOp.name: _simple("Softplus"),
    relay.SoftsignOp.name: _simple("Softsign"),
    relay.HardSwishOp.name: _simple("HardSwish"),
    relay.LeakyReluOp.name: _with_attrs("LeakyRelu"),
    relay.EluOp.name: _with_attrs("Elu"),
    relay.SeluOp.name: _with_attrs("Selu"),
    relay.HardSigmoidOp.name: _with_attrs("HardSigmoid"),
    relay.ShrinkOp.name: _with_attrs("Shrink"),
    relay.GeluOp.name: _gelu,
    relay.PReluOp.name: _prelu,
    relay.ClipOp.name: _clip,
    relay.BiasAddOp.name: _bias_add,
    relay.DenseOp.name: _dense,
    relay.MatmulOp.name: _matmul,
    relay.BatchMatmulOp.name: _batch_matmul,
    relay.Conv2dOp.name: _conv("Conv"),
    relay.Conv3dOp.name: _conv("Conv"),
    relay.Conv2dTransposeOp.name: _conv("ConvTranspose"),
    relay.Conv3dTransposeOp.name: _conv("ConvTranspose"),
    relay.MaxPool2dOp.name: _pool("MaxPool"),
    relay.AvgPool2dOp.name: _pool("AveragePool"),
    relay.MaxPool3dOp.name: _pool("MaxPool"),
    relay.AvgPool3dOp.name: _pool("AveragePool"),
    relay.GlobalAvgPool2dOp.name: _simple("GlobalAveragePool"),
    relay.SoftmaxOp.name: _softmax("Softmax"),
    relay.LogSoftmaxOp.name: _softmax("LogSoftmax"),
    relay.BatchNormOp.name: _batch_norm,
    relay.LayerNormOp.name: _layer_norm,
    relay.LrnOp.name: _lrn,
    relay.InstanceNormOp.name: _instance_norm,
    relay.ReshapeOp.name: _reshape,
    relay.BatchFlattenOp.name: _reshape,
    relay.SqueezeOp.name: _reshape,
    relay.ExpandDimsOp.name: _reshape,
    relay.TransposeOp.name: _transpose,
    relay.ConcatenateOp.name: _concatenate,
    relay.SumOp.name: _reduce("ReduceSum"),
    relay.MeanOp.name: _reduce("ReduceMean"),
    relay.MaxOp.name: _reduce("ReduceMax"),
    relay.MinOp.name: _reduce("ReduceMin"),
    relay.ProdOp.name: _reduce("ReduceProd"),
}
"""How each relay op (but relay.constant, an initializer) becomes ONNX nodes."""


def to_onnx(function: func.FuncOp) -> Any:
    """The ONNX ModelProto of an outlined relay function, checked by onnx.checker.

    Inputs are `in0, in1, ...`, outputs `out0, out1, ...`, in the order of the
    external function ABI.
    """
    import onnx
    from onnx import TensorProto

    g = GraphBuilder()
    block = function.body.block
    for i, arg in enumerate(block.args):
        g.names[arg] = f"in{i}"
    returned = list(block.last_op.operands) if block.last_op else []
    # A result returned once is written straight under its output name; block
    # arguments, constants and repeats go through an Identity.
    through_identity = []
    for j, value in enumerate(returned):
        if value in g.names or isinstance(value.owner, relay.ConstantOp):
            through_identity.append(j)
        else:
            g.names[value] = f"out{j}"
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            break
        if isinstance(op, relay.ConstantOp):
            name = g.initializer(np.asarray(op.to_numpy(), np.float32), "w")
            g.names[op.results[0]] = name
            continue
        emit = EMITTERS.get(op.name)
        if emit is None:
            raise ByocError(f"error: the onnxruntime backend cannot convert '{op.name}'")
        emit(g, op, [g.name(v) for v in op.operands], g.name(op.results[0]))
    for j in through_identity:
        g.node("Identity", [g.name(returned[j])], f"out{j}")

    def info(name: str, value: SSAValue) -> Any:
        return onnx.helper.make_tensor_value_info(name, TensorProto.FLOAT, list(_shape(value)))

    graph = onnx.helper.make_graph(
        g.nodes,
        function.sym_name.data,
        [info(f"in{i}", a) for i, a in enumerate(block.args)],
        [info(f"out{j}", v) for j, v in enumerate(returned)],
        initializer=g.initializers,
    )
    model = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="byoc",
        ir_version=IR_VERSION,
    )
    size = model.ByteSize()
    if size >= 1 << 31:
        raise ByocError(
            f"error: the ONNX model of @{function.sym_name.data} would have {size} "
            "bytes, over protobuf's 2 GB: its inlined weights are too large"
        )
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as err:  # a bug in the conversion above: say where
        raise ByocError(
            f"error: the ONNX model of @{function.sym_name.data} is invalid: {err}"
        ) from None
    return model


def model_text(model: Any, largest: int = 16) -> str:
    """The ONNX text form of `model`, for people; larger initializers print as `{}`."""
    import onnx

    shown = onnx.ModelProto(
        ir_version=model.ir_version,
        opset_import=model.opset_import,
        producer_name=model.producer_name,
    )
    graph = shown.graph
    graph.name = model.graph.name
    graph.input.extend(model.graph.input)
    graph.output.extend(model.graph.output)
    graph.node.extend(model.graph.node)
    for tensor in model.graph.initializer:  # no copy of the weights' data
        if math.prod(tensor.dims) <= largest:
            graph.initializer.append(tensor)
        else:
            graph.initializer.add(name=tensor.name, dims=tensor.dims, data_type=tensor.data_type)
    return (
        f"# {model.graph.name}: ONNX opset {OPSET}; initializers of more than "
        f"{largest} elements print as {{}}\n{onnx.printer.to_text(shown)}\n"
    )


def source(functions: ModuleOp) -> str:
    """The text form of each function's ONNX model (what `--emit-c` shows)."""
    return "\n".join(
        model_text(to_onnx(f)) for f in functions.ops if isinstance(f, func.FuncOp)
    )


# --- Running a model through the C ABI ---------------------------------------------


def _session(model: bytes) -> Any:
    """An InferenceSession on the CPU for a serialised model."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = INTRA_OP_THREADS
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    # Idle pool threads sleep instead of spinning: the host and other backends
    # run between calls on the same cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


_FLOAT = 1  # onnx.TensorProto.FLOAT

Signature = Sequence[tuple[str, list[int]]]
"""Names and shapes of a model's inputs or outputs, in ABI order."""


class _RawBinding:
    """IO binding through onnxruntime's pybind layer, the same calls the public
    `IOBinding` makes without its per-call Python conversions (about 2x less
    overhead). Checked once per process by `_raw_binding_works`."""

    def __init__(self, session: Any) -> None:
        from onnxruntime.capi import _pybind_state as C

        self._session = session._sess
        self._binding = C.SessionIOBinding(self._session)
        self._device = C.OrtDevice(C.OrtDevice.cpu(), C.OrtDevice.default_memory(), 0)
        self._options = C.RunOptions()

    def run(self, inputs: Signature, outputs: Signature, pointers: Sequence[int]) -> None:
        binding, device = self._binding, self._device
        for (name, shape), pointer in zip(inputs, pointers):
            binding.bind_input(name, device, _FLOAT, shape, pointer)
        for (name, shape), pointer in zip(outputs, pointers[len(inputs) :]):
            binding.bind_output(name, device, _FLOAT, shape, pointer)
        self._session.run_with_iobinding(binding, self._options)


class _PublicBinding:
    """IO binding through onnxruntime's public API."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._binding = session.io_binding()

    def run(self, inputs: Signature, outputs: Signature, pointers: Sequence[int]) -> None:
        binding = self._binding
        for (name, shape), pointer in zip(inputs, pointers):
            binding.bind_input(name, "cpu", 0, np.float32, shape, pointer)
        for (name, shape), pointer in zip(outputs, pointers[len(inputs) :]):
            binding.bind_output(name, "cpu", 0, np.float32, shape, pointer)
        self._session.run_with_iobinding(binding)


@cache
def _raw_binding_works() -> bool:
    """Whether `_RawBinding` computes 1 + 2 = 3 in this onnxruntime version."""
    import onnx

    try:
        vector = onnx.helper.make_tensor_value_info
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Add", ["a", "b"], ["c"])],
            "probe",
            [vector("a", onnx.TensorProto.FLOAT, [1]), vector("b", onnx.TensorProto.FLOAT, [1])],
            [vector("c", onnx.TensorProto.FLOAT, [1])],
        )
        model = onnx.helper.make_model(
            graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
        )
        a, b, c = (np.array([v], np.float32) for v in (1.0, 2.0, 0.0))
        binding = _RawBinding(_session(model.SerializeToString()))
        binding.run(
            [("a", [1]), ("b", [1])], [("c", [1])], [x.ctypes.data for x in (a, b, c)]
        )
        return bool(c[0] == 3.0)
    except Exception:  # private API changed: use the public one
        return False


class OnnxFunction:
    """One outlined function: its session, and the C-callable function running it.

    `address` is a function with the external ABI. Its arguments are declared
    `uintptr_t` rather than `float*` so cffi hands the callback plain integers
    (pointers and uintptr_t are passed alike in every C calling convention
    byoc runs on); they go straight to the IO binding, which reads and writes
    the host's buffers in place. Calls from several threads each get their
    own binding.
    """

    def __init__(self, symbol: str, model: bytes) -> None:
        import onnx

        self.symbol = symbol
        self.session = _session(model)
        graph = onnx.load_model_from_string(model).graph

        def signature(values: Any) -> Signature:
            return [
                (v.name, [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values
            ]

        self.inputs = signature(graph.input)
        self.outputs = signature(graph.output)
        self.last_error: BaseException | None = None
        """The exception of the last failed call, if any (it is also logged)."""
        self._binding_type = _RawBinding if _raw_binding_works() else _PublicBinding
        self._local = threading.local()
        arity = len(self.inputs) + len(self.outputs)
        self.callback = _ffi.callback(
            f"int32_t({', '.join(['uintptr_t'] * arity)})", self._call, error=1
        )
        self.address = int(_ffi.cast("uintptr_t", self.callback))

    def _call(self, *pointers: int) -> int:
        try:
            binding = getattr(self._local, "binding", None)
            if binding is None:
                binding = self._local.binding = self._binding_type(self.session)
            binding.run(self.inputs, self.outputs, pointers)
            return 0
        except Exception as err:  # never into C: the host reports the status
            self.last_error = err
            _log.error("onnxruntime: @%s failed: %s: %s", self.symbol, type(err).__name__, err)
            return 1

    def register(self) -> None:
        """Make `symbol` resolve to this function in the host JIT."""
        import llvmlite.binding as llvm

        llvm.add_symbol(self.symbol, self.address)


def _require_packages() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as err:
        raise ByocError(
            f"error: the onnxruntime backend needs the onnx and onnxruntime packages "
            f"({err}); install them with `pip install byoc[onnx]`"
        ) from None


def _model_source(symbol: str) -> str:
    return f"{symbol}.onnx.b64"


def codegen(functions: ModuleOp) -> Artifact:
    """An ONNX model, a session and a registered callback per outlined function."""
    _require_packages()
    artifact = Artifact(backend="onnxruntime", symbols=[])
    for function in functions.ops:
        assert isinstance(function, func.FuncOp)
        symbol = function.sym_name.data
        model = to_onnx(function)
        data = model.SerializeToString()
        artifact.symbols.append(symbol)
        artifact.sources[_model_source(symbol)] = base64.b64encode(data).decode("ascii")
        artifact.sources[f"{symbol}.onnx.txt"] = model_text(model)
        runner = OnnxFunction(symbol, data)
        runner.register()
        artifact.keepalive.append(runner)
    return artifact


def load_artifact(artifact: Artifact) -> None:
    """Recreate the sessions and callbacks of an artifact read back from its
    sources (a saved model) and register its symbols; fills `keepalive`."""
    _require_packages()
    runners = []
    for symbol in artifact.symbols:
        text = artifact.sources.get(_model_source(symbol))
        if text is None:
            raise ByocError(f"error: the onnxruntime artifact has no model for '{symbol}'")
        runner = OnnxFunction(symbol, base64.b64decode(text, validate=True))
        runner.register()
        runners.append(runner)
    artifact.keepalive[:] = runners


backend = Backend(
    name="onnxruntime",
    ops=SUPPORTED,
    codegen=codegen,
    description="ONNX models run by onnxruntime InferenceSessions, called through cffi callbacks",
    source=source,
    load=load_artifact,
    inline_constants=INLINE_CONSTANTS,
)
