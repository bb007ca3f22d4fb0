"""byoc-fold-scale-shift: multiplications and additions by per-channel
constants folded into the weights and bias of the conv2d or dense before them
(what TVM's FoldScaleAxis and onnxruntime's Conv+Mul/Add fusions do).

    conv2d(x, W) [-> bias_add(b)] -> multiply(s)   =>  conv2d(x, W*s) [-> bias_add(b*s)]
    conv2d(x, W) [-> bias_add(b)] -> add(t)        =>  conv2d(x, W)    -> bias_add(b+t)

`s` and `t` are constants that vary at most along the output channels (axis
1 of conv2d's NCHW result, the last axis of dense's): `[C, 1, 1]`,
`[1, C, 1, 1]`, `[C]` for dense, or one value.

A scale by one value also folds through a matrix product of two computed
operands (batch_matmul, matmul), and the reshapes and transposes around it,
into the producer of either operand: attention's scores
`(Q K^T) / sqrt(d)`, Q a dense's output split into heads, become `Q' K^T`
with the 1/sqrt(d) in Q's weights and bias (what onnxruntime's attention
fusion does), one pass over the scores less.

    dense(x, W) -> bias_add(b) -> reshape/transpose... -> batch_matmul(., k)
        -> reshape/transpose... -> divide(c)
  =>  dense(x, W/c) -> bias_add(b/c) -> ... -> batch_matmul(., k) -> ... `divide` by and `subtract` of
a constant fold as multiplication by its inverse and addition of its
negation. Each value in the chain must have no other user, and the weight
and bias must be constants (a new constant is made: a weight shared with
another op is never changed). A chain of such ops folds in one sweep, so an
imported batch norm written as Mul and Add (DenseNet, Inception v2) ends as

    conv2d -> bias_add [-> add (residual)] -> relu

the shape cblas' and ccompiler's composites take. Also used by
byoc-fold-batch-norm (`fold_into_producer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from byoc.dialects import relay
from byoc.passes.graph_edit import (
    SweepPass,
    constant_of,
    insert_before,
    new_constant,
    replace_op,
    set_operand,
    shape_of,
)


@dataclass
class LinearProducer:
    """A conv2d or dense with a constant weight, maybe followed by a bias_add
    with a constant bias, whose output channels lie along `axis`."""

    product: Operation
    bias_add: relay.BiasAddOp | None
    axis: int

    @property
    def output(self) -> SSAValue:
        return (self.bias_add or self.product).results[0]


def channel_axis(op: Operation) -> int | None:
    """The axis of `op`'s result that its weight's rows make (None: not a product)."""
    if isinstance(op, relay.Conv2dOp):
        return 1
    if isinstance(op, relay.DenseOp):
        return len(shape_of(op.results[0])) - 1
    return None


def linear_producer(value: SSAValue) -> LinearProducer | None:
    """The conv2d/dense (and bias_add) computing `value`, if scaling and
    shifting `value` per channel can be folded into them: constant weight and
    bias, and no other user of the product's result."""
    op = value.owner
    bias_add = None
    if isinstance(op, relay.BiasAddOp):
        if constant_of(op.bias) is None or not op.data.has_one_use():
            return None
        bias_add = op
        op = op.data.owner
    if not isinstance(op, Operation):
        return None
    axis = channel_axis(op)
    if axis is None or constant_of(op.operands[1]) is None:
        return None
    if bias_add is not None:
        rank = len(shape_of(value))
        if relay.normalize_axis(bias_add.attrs()["axis"], rank, bias_add.name) != axis:
            return None
    return LinearProducer(op, bias_add, axis)


_SHAPE_OPS = (relay.ReshapeOp, relay.TransposeOp)
_PRODUCTS = (relay.BatchMatmulOp, relay.MatmulOp)


def _through_shape_ops(value: SSAValue) -> SSAValue | None:
    """The value a chain of reshapes and transposes ending in `value` starts
    from, each value of the chain used once (None if one is used more)."""
    while isinstance(value.owner, _SHAPE_OPS):
        if not value.has_one_use():
            return None
        value = value.owner.operands[0]
    return value


def scalar_scale_producer(value: SSAValue) -> LinearProducer | None:
    """The dense or conv2d (and bias_add) a scale by one value of `value` can
    fold into through a product of two computed operands: `value` is that
    product's output (through reshapes and transposes), and an operand (through
    reshapes and transposes) is a linear producer's output. Every value on the
    way has one use, so nothing else sees the scale move."""
    product = _through_shape_ops(value)
    if product is None or not isinstance(product.owner, _PRODUCTS):
        return None
    if not product.has_one_use():
        return None
    for operand in product.owner.operands:
        source = _through_shape_ops(operand)
        if source is None or not source.has_one_use():
            continue
        if (producer := linear_producer(source)) is not None:
            return producer
    return None


def channel_vector(array: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """`array` as one value per index of `axis` of `shape`, if it broadcasts to
    `shape` without adding elements anywhere else; None otherwise."""
    rank = len(shape)
    if array.ndim > rank:
        return None
    aligned = array.reshape((1,) * (rank - array.ndim) + array.shape)
    if any(size != 1 for d, size in enumerate(aligned.shape) if d != axis):
        return None
    flat = aligned.reshape(-1)
    if flat.size == 1:
        return np.full(shape[axis], flat[0], dtype=flat.dtype)
    if flat.size != shape[axis]:
        return None
    return flat


def fold_into_producer(
    producer: LinearProducer,
    scale: np.ndarray | None,
    shift: np.ndarray | None,
    anchor: Operation,
) -> SSAValue:
    """Make `producer` compute `output * scale + shift` (per channel), with new
    constants inserted before `anchor` (the op being replaced, after the
    producer); returns the value now holding that result."""
    product, bias_add = producer.product, producer.bias_add
    if scale is not None:
        weight = np.asarray(constant_of(product.operands[1]), np.float64)
        scaled = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        weight_value = product.operands[1]
        set_operand(
            product, 1, new_constant(scaled, weight_value, product, weight_value.name_hint)
        )
    if bias_add is not None:
        bias = np.asarray(constant_of(bias_add.bias), np.float64)
        if scale is not None:
            bias = bias * scale
        if shift is not None:
            bias = bias + shift
        if scale is not None or shift is not None:
            name = bias_add.bias.name_hint
            set_operand(bias_add, 1, new_constant(bias, bias_add.bias, bias_add, name))
        return bias_add.results[0]
    if shift is None:
        return product.results[0]
    out = product.results[0]
    bias = new_constant(shift, out, anchor, "bias")
    return insert_before(relay.BiasAddOp(out, bias, axis=producer.axis), anchor)


_SCALES = (relay.MultiplyOp, relay.DivideOp)
_SHIFTS = (relay.AddOp, relay.SubtractOp)


def fold_scale_shift(op: Operation) -> bool:
    """Fold `op`, a multiply/divide/add/subtract by a per-channel constant, into
    the conv2d or dense before it; whether it did."""
    if not isinstance(op, (*_SCALES, *_SHIFTS)):
        return False
    lhs, rhs = op.operands
    commutes = isinstance(op, relay.MultiplyOp | relay.AddOp)
    constant = constant_of(rhs)
    value = lhs
    if constant is None and commutes:
        constant, value = constant_of(lhs), rhs
    if constant is None or value.type != op.results[0].type or not value.has_one_use():
        return False
    producer = linear_producer(value)
    if producer is None:
        if isinstance(op, _SCALES) and constant.size == 1:
            return _fold_scalar_scale(op, value, float(constant.reshape(-1)[0]))
        return False
    vector = channel_vector(constant, shape_of(value), producer.axis)
    if vector is None:
        return False
    vector = vector.astype(np.float64)
    if isinstance(op, relay.MultiplyOp):
        scale, shift = vector, None
    elif isinstance(op, relay.DivideOp):
        if not np.all(vector != 0):
            return False  # x / 0 is not (x * W) * inf
        scale, shift = 1.0 / vector, None
    elif isinstance(op, relay.AddOp):
        scale, shift = None, vector
    else:
        scale, shift = None, -vector
    replace_op(op, fold_into_producer(producer, scale, shift, op))
    return True


def _fold_scalar_scale(op: Operation, value: SSAValue, constant: float) -> bool:
    """`op` (multiply or divide of `value` by `constant`) folded through a
    product into an operand's producer (`scalar_scale_producer`)."""
    producer = scalar_scale_producer(value)
    if producer is None:
        return False
    if isinstance(op, relay.DivideOp):
        if constant == 0:
            return False  # x / 0 is not (x * W) * inf
        constant = 1.0 / constant
    channels = shape_of(producer.output)[producer.axis]
    fold_into_producer(producer, np.full(channels, constant), None, op)
    replace_op(op, value)
    return True


@dataclass(frozen=True)
class FoldScaleShiftPass(SweepPass):
    """Folds per-channel constant multiplications and additions into the
    weights and bias of the conv2d or dense before them."""

    name = "byoc-fold-scale-shift"

    def rewrite(self, op: Operation) -> object:
        return fold_scale_shift(op)
