"""byoc-fake-quantization-to-integer: QDQ units become quantized ops.

A model in the QDQ format computes in float between `relay.qnn.dequantize`
(DQ) and `relay.qnn.quantize` (Q) ops: DQ -> conv2d -> Q means an int8
convolution. This pass (TVM's FakeQuantizationToInteger; what onnxruntime's
execution providers see as a `NodeUnit`) turns each such unit into quantized
ops on integer tensors, so backends take the quantized op whole:

    DQ(x), DQ(w) -> nn.conv2d [-> nn.bias_add(DQ(b))] [-> nn.relu | clip] -> Q
        qnn.conv2d -> nn.bias_add (int32) -> qnn.requantize [-> clip]
    nn.dense, nn.matmul (weight [K, N]), nn.batch_matmul: the same with
        qnn.dense / qnn.batch_matmul
    add, multiply [-> relu | clip]          qnn.add, qnn.mul [-> clip]
    nn.global_avg_pool2d                    qnn.global_avg_pool2d
    nn.relu, clip                           clip on the integers (requantized first
                                            if the parameters change)
    nn.max_pool2d, concatenate, reshape, transpose, batch_flatten, squeeze,
    expand_dims                             the same op on the integers (inputs
                                            requantized to the output's parameters)
    Q(DQ(x))                                x, or qnn.requantize

A unit the pass cannot turn into integer ops (another op type, parameters that
are not constants, per-channel activations, mixed types, a float result used
elsewhere too) stays as it was: float ops between DQ and Q, which compute the
same thing, only slower. Each float op of such a group gets the attribute
`byoc.float_unit = "<why>"`, which the partition report shows.

Finally, a DQ of a constant that only float ops read becomes a float constant.
One sweep over each block in program order (each Q is looked at once), then a
linear dead-op sweep: the pass is linear in the size of the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects import relay
from byoc.dialects.relay.qnn import INT16, INT32, UINT16, constant_value, dtype_name, type_range
from byoc.passes.annotate import host_functions
from byoc.passes.dead_code import remove_dead_ops

PASS_NAME = "byoc-fake-quantization-to-integer"

FLOAT_UNIT_ATTR = "byoc.float_unit"
"""On a float op left between DQ and Q: why its group stayed in float."""

F32 = np.float32

BIAS_TOLERANCE = 1e-3
"""A DQ'd int32 bias is used as it is when its scale is the product of the
input and weight scales within this relative error (onnxruntime's QLinearConv
ignores the bias scale altogether); otherwise it is requantized."""


class Declined(Exception):
    """A unit that stays in float, and why."""


@dataclass
class Quantized:
    """An integer tensor and its quantization parameters (constants)."""

    value: SSAValue
    scale: SSAValue
    zero_point: SSAValue
    scales: np.ndarray
    zeros: np.ndarray
    axis: int

    @property
    def element(self) -> Attribute:
        return _type(self.value).element_type

    @property
    def per_channel(self) -> bool:
        return self.scales.size > 1 or self.zeros.size > 1

    def same_parameters(self, other: Quantized) -> bool:
        """Whether `other` quantizes values exactly as this one does."""
        if self.element != other.element or self.per_channel != other.per_channel:
            return False
        if self.per_channel:
            rank = len(_type(self.value).get_shape())
            if self.axis % rank != other.axis % rank:
                return False
        return bool(
            np.array_equal(self.scales.reshape(-1), other.scales.reshape(-1))
            and np.array_equal(self.zeros.reshape(-1), other.zeros.reshape(-1))
        )


def _type(value: SSAValue) -> TensorType:
    typ = value.type
    assert isinstance(typ, TensorType)
    return typ


def _parameters(value: SSAValue, scale: SSAValue, zero: SSAValue, axis: int) -> Quantized:
    scales = constant_value(scale)
    zeros = constant_value(zero)
    if scales is None or zeros is None:
        raise Declined("its quantization parameters are not constants")
    return Quantized(value, scale, zero, scales.astype(F32), zeros.astype(np.int64), axis)


def dequantized(value: SSAValue) -> Quantized | None:
    """The quantized tensor `value` is the DQ of, or None."""
    owner = value.owner
    if not isinstance(owner, relay.DequantizeOp):
        return None
    return _parameters(
        owner.data, owner.input_scale, owner.input_zero_point, owner.attrs()["axis"]
    )


def _input(value: SSAValue, what: str) -> Quantized:
    found = dequantized(value)
    if found is None:
        raise Declined(f"its {what} is not dequantized")
    return found


def _per_tensor(q: Quantized, what: str) -> Quantized:
    if q.per_channel:
        raise Declined(f"its {what} is quantized per channel")
    return q


class Builder:
    """Inserts new ops before the Q being replaced, with the float op's location."""

    def __init__(self, block: Block, before: Operation, location: Attribute):
        self.block = block
        self.before = before
        self.location = location

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.location  # type: ignore[assignment]
        self.block.insert_op_before(op, self.before)
        return op.results[0]

    def constant(self, array: np.ndarray) -> SSAValue:
        return self.emit(relay.ConstantOp.from_numpy(array))

    def requantize(self, q: Quantized, out: Quantized) -> SSAValue:
        """`q`'s integers in `out`'s parameters (no op when they are the same)."""
        if q.same_parameters(out):
            return q.value
        axis = q.axis if q.per_channel else out.axis
        return self.emit(
            relay.RequantizeOp(
                q.value,
                q.scale,
                q.zero_point,
                out.scale,
                out.zero_point,
                axis=axis,
                out_dtype=dtype_name(out.element),
            )
        )

    def accumulator_to(
        self, acc: SSAValue, scales: np.ndarray, out: Quantized, axis: int
    ) -> SSAValue:
        """An int32 accumulator of scale `scales` (zero point 0) in `out`'s
        parameters."""
        scale = self.constant(np.asarray(scales, F32).reshape(scales.shape))
        zero = self.constant(np.zeros((), np.int32))
        return self.emit(
            relay.RequantizeOp(
                acc,
                scale,
                zero,
                out.scale,
                out.zero_point,
                axis=axis if scales.size > 1 else out.axis,
                out_dtype=dtype_name(out.element),
            )
        )

    def same_op(self, op: Operation, operands: Sequence[SSAValue], element: Attribute) -> SSAValue:
        """`op` (data movement, max pool) on integer `operands`, giving `element`."""
        result = TensorType(element, _type(op.results[0]).get_shape())
        new = op.create(
            operands=list(operands),
            result_types=[result],
            properties=dict(op.properties),
        )
        return self.emit(new)


# --- Activations fused into a unit ---------------------------------------------------


def quantized_bounds(op: Operation, out: Quantized) -> tuple[int, int]:
    """The integer bounds of relu or clip `op` applied before quantizing to `out`:
    the quantized low and high (the float op commutes with the monotonic Q)."""
    low_q, high_q = type_range(out.element)
    if out.per_channel:
        raise Declined("its output is quantized per channel")
    scale, zero = float(out.scales.reshape(-1)[0]), int(out.zeros.reshape(-1)[0])

    def quantize(x: float) -> int:
        if np.isinf(x):
            return low_q if x < 0 else high_q
        q = float(np.rint(F32(x) / F32(scale))) + zero
        return int(min(max(q, low_q), high_q))

    if isinstance(op, relay.ReluOp):
        return quantize(0.0), high_q
    assert isinstance(op, relay.ClipOp)
    attrs = op.attrs()
    return quantize(attrs["a_min"]), quantize(attrs["a_max"])


def apply_activation(b: Builder, value: SSAValue, op: Operation | None, out: Quantized) -> SSAValue:
    """`value` (quantized as `out`) clipped as relu/clip `op` requires."""
    if op is None:
        return value
    low, high = quantized_bounds(op, out)
    type_low, type_high = type_range(out.element)
    if (low, high) == (type_low, type_high):
        return value
    return b.emit(relay.ClipOp(value, float(low), float(high)))


# --- Units -------------------------------------------------------------------------------

_ACTIVATIONS = (relay.ReluOp, relay.ClipOp)
_PRODUCTS = (relay.Conv2dOp, relay.DenseOp, relay.MatmulOp, relay.BatchMatmulOp)
_MOVES = (
    relay.ReshapeOp,
    relay.TransposeOp,
    relay.BatchFlattenOp,
    relay.SqueezeOp,
    relay.ExpandDimsOp,
)


def _single_use(value: SSAValue) -> bool:
    return value.get_user_of_unique_use() is not None


@dataclass
class Unit:
    """The float ops between the DQs and one Q: `root` (conv2d, add, ...), an
    optional bias add and an optional relu/clip, in order."""

    root: Operation
    bias: Operation | None
    activation: Operation | None

    @property
    def ops(self) -> list[Operation]:
        return [op for op in (self.root, self.bias, self.activation) if op is not None]


def find_unit(q: relay.QuantizeOp) -> Unit | None:
    """The float ops that Q quantizes, or None when its input is not computed
    by a relay op (a graph input)."""
    producer = q.data.owner
    if not isinstance(producer, Operation) or not producer.name.startswith("relay."):
        return None
    activation = bias = None
    op = producer
    if isinstance(op, _ACTIVATIONS) and not isinstance(
        op.operands[0].owner, relay.DequantizeOp
    ):
        inner = op.operands[0].owner
        if isinstance(inner, Operation) and _single_use(op.operands[0]):
            activation, op = op, inner
    if isinstance(op, relay.BiasAddOp | relay.AddOp):
        inner = op.operands[0].owner
        if isinstance(inner, _PRODUCTS) and _single_use(op.operands[0]):
            bias, op = op, inner
    return Unit(op, bias, activation)


def _bias_values(unit: Unit, acc_scales: np.ndarray, units: int) -> np.ndarray:
    """The int32 bias of a product unit, in the accumulator's scale."""
    assert unit.bias is not None
    bias_value = unit.bias.operands[1]
    shape = _type(bias_value).get_shape()
    if isinstance(unit.bias, relay.AddOp) and tuple(shape) not in ((units,), (1, units)):
        raise Declined(f"its bias has shape {list(shape)}, not [{units}]")
    q = dequantized(bias_value)
    if q is not None and dtype_name(q.element) == "int32" and not q.zeros.any():
        data = constant_value(q.value)
        if data is None:
            raise Declined("its bias is not a constant")
        expected = np.broadcast_to(acc_scales.reshape(-1), (units,))
        given = np.broadcast_to(q.scales.reshape(-1), (units,))
        if np.all(np.abs(given - expected) <= BIAS_TOLERANCE * expected):
            return data.reshape(units).astype(np.int32)
    if q is not None:
        from byoc.runtime.reference_qnn import QNN_REFERENCE

        data = constant_value(q.value)
        if data is None:
            raise Declined("its bias is not a constant")
        owner = bias_value.owner
        assert isinstance(owner, Operation)
        floats = QNN_REFERENCE[relay.DequantizeOp.name](
            owner, [data, q.scales, q.zeros]
        )
    else:
        floats = constant_value(bias_value)
        if floats is None:
            raise Declined("its bias is neither a constant nor dequantized")
    scales = np.broadcast_to(acc_scales.reshape(-1), (units,))
    values = np.rint(np.asarray(floats, np.float64).reshape(units) / scales)
    low, high = type_range(INT32)
    return np.clip(values, low, high).astype(np.int32)


def _product(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    """conv2d, dense, matmul, batch_matmul units."""
    root = unit.root
    data = _per_tensor(_input(root.operands[0], "data"), "data")
    weight = _input(root.operands[1], "weight")
    for what, q in (("data", data), ("weight", weight)):
        if dtype_name(q.element) not in ("int8", "uint8"):
            raise Declined(f"its {what} is {dtype_name(q.element)}, not int8 or uint8")
    attrs = root.attrs()  # type: ignore[attr-defined]
    rank = len(_type(root.results[0]).get_shape())
    if isinstance(root, relay.Conv2dOp):
        channel_axis = 0
        weight = _weight_per_output(weight, channel_axis, 4)
        acc = b.emit(
            relay.QnnConv2dOp(
                data.value,
                weight.value,
                data.zero_point,
                weight.zero_point,
                data.scale,
                weight.scale,
                strides=attrs["strides"],
                padding=attrs["padding"],
                dilation=attrs["dilation"],
                groups=attrs["groups"],
                channels=attrs["channels"],
                kernel_size=attrs["kernel_size"],
            )
        )
        out_axis = 1
    elif isinstance(root, relay.BatchMatmulOp):
        weight = _per_tensor(weight, "weight")
        acc = b.emit(
            relay.QnnBatchMatmulOp(
                data.value,
                weight.value,
                data.zero_point,
                weight.zero_point,
                data.scale,
                weight.scale,
                transpose_a=attrs["transpose_a"],
                transpose_b=attrs["transpose_b"],
            )
        )
        out_axis = rank - 1
    else:
        if isinstance(root, relay.MatmulOp):
            if attrs["transpose_a"]:
                raise Declined("it transposes its data (transpose_a)")
            if not attrs["transpose_b"]:
                weight = _transposed(b, weight)
        weight = _weight_per_output(weight, 0, 2)
        acc = b.emit(
            relay.QnnDenseOp(
                data.value,
                weight.value,
                data.zero_point,
                weight.zero_point,
                data.scale,
                weight.scale,
            )
        )
        out_axis = rank - 1
    acc.name_hint = root.results[0].name_hint
    acc_scales = (data.scales.astype(F32) * weight.scales.astype(F32)).astype(F32)
    units = _type(acc).get_shape()[out_axis]
    if unit.bias is not None:
        bias_axis = out_axis if isinstance(unit.bias, relay.AddOp) else unit.bias.attrs()["axis"]  # type: ignore[attr-defined]
        if bias_axis % rank != out_axis:
            raise Declined("its bias is not along the output channels")
        bias = b.constant(_bias_values(unit, acc_scales, units))
        acc = b.emit(relay.BiasAddOp(acc, bias, axis=out_axis))
    requantized = b.accumulator_to(acc, acc_scales, out, out_axis)
    return apply_activation(b, requantized, unit.activation, out)


def _weight_per_output(weight: Quantized, channel_axis: int, rank: int) -> Quantized:
    """A weight quantized per tensor or per output channel (`channel_axis`)."""
    if weight.per_channel and weight.axis % rank != channel_axis:
        raise Declined(
            f"its weight is quantized per channel along axis {weight.axis}, not the "
            "output channels"
        )
    return weight


def _transposed(b: Builder, weight: Quantized) -> Quantized:
    """A `[K, N]` weight as `[N, K]` (a new constant when it is one)."""
    shape = _type(weight.value).get_shape()
    if len(shape) != 2:
        raise Declined(f"its weight has rank {len(shape)}, not 2")
    data = constant_value(weight.value)
    if data is not None:
        value = b.constant(np.ascontiguousarray(data.T))
        name = weight.value.name_hint
        value.name_hint = f"{name}_T" if name else None
    else:
        value = b.emit(relay.TransposeOp(weight.value, (1, 0)))
    axis = 0 if weight.per_channel and weight.axis % 2 == 1 else 1
    if weight.per_channel and weight.axis % 2 == 0:
        raise Declined("its weight is quantized per input channel")
    return Quantized(value, weight.scale, weight.zero_point, weight.scales, weight.zeros, axis)


def _binary(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    """add and multiply units."""
    root = unit.root
    lhs = _per_tensor(_input(root.operands[0], "lhs"), "lhs")
    rhs = _per_tensor(_input(root.operands[1], "rhs"), "rhs")
    _per_tensor(out, "output")
    elements = {lhs.element, rhs.element, out.element}
    if len(elements) != 1 or dtype_name(out.element) not in ("int8", "uint8"):
        names = ", ".join(sorted(dtype_name(e) for e in elements))
        raise Declined(f"its operands and result are not all int8 or all uint8 ({names})")
    op_type = relay.QnnAddOp if isinstance(root, relay.AddOp) else relay.QnnMulOp
    value = b.emit(
        op_type(
            lhs.value,
            rhs.value,
            lhs.scale,
            lhs.zero_point,
            rhs.scale,
            rhs.zero_point,
            out.scale,
            out.zero_point,
        )
    )
    return apply_activation(b, value, unit.activation, out)


def _activation(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    """relu and clip units: clip the integers (after requantizing)."""
    data = _input(unit.root.operands[0], "input")
    return apply_activation(b, b.requantize(data, out), unit.root, out)


def _global_avg_pool(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    data = _per_tensor(_input(unit.root.operands[0], "input"), "input")
    _per_tensor(out, "output")
    if data.element != out.element:
        raise Declined("its input and output types differ")
    return b.emit(
        relay.QnnGlobalAvgPool2dOp(
            data.value, data.scale, data.zero_point, out.scale, out.zero_point
        )
    )


def _move(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    """Data movement and max pooling: the same op on the integers, then
    requantized to the output's parameters if they differ."""
    root = unit.root
    data = _input(root.operands[0], "input")
    if data.per_channel and not isinstance(root, relay.MaxPool2dOp):
        raise Declined("its input is quantized per channel")
    moved = b.same_op(root, [data.value], data.element)
    return b.requantize(replace(data, value=moved), out)


def _concatenate(b: Builder, unit: Unit, out: Quantized) -> SSAValue:
    _per_tensor(out, "output")
    inputs = [
        b.requantize(_per_tensor(_input(v, f"input {i}"), f"input {i}"), out)
        for i, v in enumerate(unit.root.operands)
    ]
    return b.same_op(unit.root, inputs, out.element)


CONVERTERS = {
    **{op: _product for op in _PRODUCTS},
    relay.AddOp: _binary,
    relay.MultiplyOp: _binary,
    relay.ReluOp: _activation,
    relay.ClipOp: _activation,
    relay.GlobalAvgPool2dOp: _global_avg_pool,
    relay.MaxPool2dOp: _move,
    relay.ConcatenateOp: _concatenate,
    **{op: _move for op in _MOVES},
}
"""Float root op class -> the converter of its unit."""


def convert_unit(q: relay.QuantizeOp, unit: Unit) -> SSAValue:
    """The integer value replacing `q`, or Declined."""
    out = _parameters(q.result, q.output_scale, q.output_zero_point, q.attrs()["axis"])
    if out.element in (INT16, UINT16):
        # 16-bit activations (A16W8 models): the integer ops take 8-bit data.
        raise Declined(f"its output is {dtype_name(out.element)}; integer ops take 8-bit data")
    for op in unit.ops[1:]:
        if not _single_use(op.operands[0]):
            raise Declined("an intermediate result is used elsewhere too")
    if not _single_use(unit.ops[-1].results[0]):
        raise Declined("its float result is used unquantized too")
    converter = CONVERTERS.get(type(unit.root))
    if converter is None:
        raise Declined(f"{unit.root.name} has no quantized form")
    if unit.bias is not None and not isinstance(unit.root, _PRODUCTS):
        raise Declined("unreachable bias")
    block = q.parent_block()
    assert block is not None
    b = Builder(block, q, unit.root.location)
    return converter(b, unit, out)


def _requantize_pair(q: relay.QuantizeOp, dq: Quantized) -> SSAValue:
    """Q(DQ(x)): x itself, or x requantized."""
    out = _parameters(q.result, q.output_scale, q.output_zero_point, q.attrs()["axis"])
    block = q.parent_block()
    assert block is not None
    return Builder(block, q, q.location).requantize(dq, out)


def _replace(q: relay.QuantizeOp, value: SSAValue) -> None:
    if value.name_hint is None:
        value.name_hint = q.result.name_hint
    q.result.replace_all_uses_with(value)


def convert_block(block: Block) -> dict[Operation, str]:
    """Convert the units of `block`; returns the float ops kept, with why."""
    kept: dict[Operation, str] = {}
    for op in list(block.ops):
        if not isinstance(op, relay.QuantizeOp) or op.parent is None:
            continue
        try:
            dq = dequantized(op.data)
            if dq is not None:
                _replace(op, _requantize_pair(op, dq))
                continue
            unit = find_unit(op)
            if unit is None:
                continue
            _replace(op, convert_unit(op, unit))
        except Declined as why:
            unit = find_unit(op)
            for member in unit.ops if unit else ():
                kept.setdefault(member, str(why))
    return kept


def fold_constant_dequantize(block: Block) -> None:
    """DQ of a constant with constant parameters (a weight only float ops read)
    becomes the float constant it computes."""
    from byoc.runtime.reference_qnn import QNN_REFERENCE

    for op in list(block.ops):
        if not isinstance(op, relay.DequantizeOp) or not op.result.uses:
            continue
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values):
            continue
        array = QNN_REFERENCE[op.name](op, values)  # type: ignore[arg-type]
        constant = relay.ConstantOp.from_numpy(np.asarray(array, F32))
        constant.location = op.location
        block.insert_op_before(constant, op)
        constant.result.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(constant.result)


def mark_float_units(block: Block, kept: dict[Operation, str]) -> None:
    """Tag every float op still reading a DQ or feeding a Q with why it stayed float."""
    for op in block.ops:
        if not op.name.startswith("relay.") or op.name.startswith("relay.qnn."):
            continue
        if isinstance(op, relay.ConstantOp):
            continue
        reason = kept.get(op)
        if reason is None:
            reads = any(isinstance(v.owner, relay.DequantizeOp) for v in op.operands)
            feeds = any(isinstance(u.operation, relay.QuantizeOp) for r in op.results for u in r.uses)
            if reads and feeds:
                reason = f"{op.name} has no quantized form"
            elif reads:
                reason = "its result is not quantized"
            elif feeds:
                reason = "its input is not dequantized"
            else:
                continue
        op.attributes[FLOAT_UNIT_ATTR] = StringAttr(reason)


def fake_quantization_to_integer(module: ModuleOp) -> None:
    """Turn the QDQ units of every host function of `module` into quantized ops."""
    blocks = [function.body.block for function in host_functions(module)]
    kept: dict[Operation, str] = {}
    for block in blocks:
        kept.update(convert_block(block))
    remove_dead_ops(module)
    for block in blocks:
        fold_constant_dequantize(block)
    remove_dead_ops(module)
    for block in blocks:
        mark_float_units(block, kept)


@dataclass(frozen=True)
class FakeQuantizationToIntegerPass(ModulePass):
    """Turns DQ -> float op -> Q units into quantized relay ops on integer tensors."""

    name = PASS_NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fake_quantization_to_integer(op)
