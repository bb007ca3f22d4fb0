"""byoc-fold-batch-norm: inference batch norm with constant statistics becomes
a per-channel scale and shift, folded into the conv2d or dense before it when
it can be (TVM's SimplifyInference plus FoldScaleAxis, onnxruntime's
Conv+BatchNormalization fusion).

    conv2d(x, W) [-> bias_add(b)] -> batch_norm   =>  conv2d(x, W*s) -> bias_add(b*s + t)
    y -> batch_norm                                =>  add(multiply(y, s), t)

with `s = gamma / sqrt(var + epsilon)` and `t = beta - mean * s` (without gamma
unless `scale`, without beta unless `center`). The fold needs the product's
output to have no other user, a constant weight (and bias), and the norm's
axis to be the product's output channels; otherwise the scale and shift are
constants shaped `[C, 1, ...]` to broadcast along the norm's axis, which host
and ccompiler fuse with the elementwise ops around them into one loop. A batch
norm whose statistics are not constants is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation

from byoc.dialects import relay
from byoc.passes.fold_scale_shift import fold_into_producer, linear_producer
from byoc.passes.graph_edit import (
    SweepPass,
    constant_of,
    insert_before,
    new_constant,
    replace_op,
    shape_of,
)


def fold_batch_norm(op: Operation) -> bool:
    """Replace `op`, a batch_norm with constant parameters, by a scale and shift
    (folded into the product before it when possible); whether it did."""
    if not isinstance(op, relay.BatchNormOp):
        return False
    params = [constant_of(v) for v in op.operands[1:]]
    if any(p is None for p in params):
        return False
    gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)
    attrs = op.attrs()
    data = op.data
    shape = shape_of(data)
    axis = relay.normalize_axis(attrs["axis"], len(shape), op.name)
    with np.errstate(all="ignore"):  # IEEE results, as the reference gives
        scale = 1.0 / np.sqrt(var + attrs["epsilon"])
        if attrs["scale"]:
            scale = scale * gamma
        shift = 0.0 - mean * scale  # 0.0 - : no negative zeros
        if attrs["center"]:
            shift = shift + beta

    producer = linear_producer(data)
    if producer is not None and producer.axis == axis and data.has_one_use():
        replace_op(op, fold_into_producer(producer, scale, shift, op))
        return True

    along = (-1,) + (1,) * (len(shape) - 1 - axis)
    scale_value = new_constant(scale.reshape(along), data, op, "scale")
    scaled = insert_before(relay.MultiplyOp(data, scale_value), op)
    shift_value = new_constant(shift.reshape(along), data, op, "shift")
    replace_op(op, insert_before(relay.AddOp(scaled, shift_value), op))
    return True


@dataclass(frozen=True)
class FoldBatchNormPass(SweepPass):
    """Folds batch norms with constant statistics into the conv2d or dense
    before them, or turns them into a per-channel multiply and add."""

    name = "byoc-fold-batch-norm"

    def rewrite(self, op: Operation) -> object:
        return fold_batch_norm(op)
