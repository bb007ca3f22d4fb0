"""Converters of ONNX reductions: ReduceSum/Mean/Max/Min/Prod, the ones built
from them (L1, L2, SumSquare, LogSum, LogSumExp), the axes they share, and
ArgMax/ArgMin."""


from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import (
    Converter,
    Node,
    shape_of,
)
from byoc.frontend.onnx.shape import (
    _axes,
)

Shape = tuple[int, ...]

AXES_INPUT_SINCE = {"ReduceSum": 13}
"""The opset from which a reduction reads `axes` from its second input (18 for
every reduction but ReduceSum)."""


def reduced_axes(node: Node, rank: int) -> list[int]:
    """The axes a reduction node reduces, sorted; empty when the node is a no-op
    (no axes and `noop_with_empty_axes`)."""
    axes = _axes(node, AXES_INPUT_SINCE.get(node.op_type, 18))
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return []
        axes = list(range(rank))
    return sorted(relay.normalize_axes(axes, rank, node.op_type, "axes"))


Step = Callable[[Node, SSAValue], SSAValue]
"""An elementwise step before or after a reduction."""


def _reduce(
    op_type: type[relay.ReduceOp], before: Step | None = None, after: Step | None = None
) -> Converter:
    """`after(reduce(before(x)))`; with no axes to reduce (a no-op node, or a
    scalar) the steps still apply, as in onnx's reference."""

    def convert(node: Node) -> SSAValue:
        data = node.value(0)
        axes = reduced_axes(node, len(shape_of(data)))
        value = before(node, data) if before else data
        if axes:
            keepdims = bool(node.attr("keepdims", 1))
            value = node.emit(op_type(value, axis=axes, keepdims=keepdims))
        return after(node, value) if after else value

    return convert


def _unary(op_type: type[relay.ElementwiseUnaryOp]) -> Step:
    return lambda node, value: node.emit(op_type(value))


def _square(node: Node, value: SSAValue) -> SSAValue:
    return node.emit(relay.MultiplyOp(value, value))


def _reduce_log_sum_exp(node: Node) -> SSAValue:
    """`max + log(sum(exp(x - max)))`: exp never overflows. The max is clipped
    to finite values, so a slice of -inf (or an empty one) gives -inf and one
    holding +inf gives +inf, where `inf - inf` would give NaN."""
    data = node.value(0)
    shape = shape_of(data)
    axes = reduced_axes(node, len(shape))
    if not axes:
        return data  # log(exp(x))
    largest = float(np.finfo(np.float32).max)
    peak = node.emit(
        relay.ClipOp(node.emit(relay.MaxOp(data, axis=axes, keepdims=True)), -largest, largest)
    )
    shifted = node.emit(relay.ExpOp(node.emit(relay.SubtractOp(data, peak))))
    total = node.emit(relay.SumOp(shifted, axis=axes, keepdims=True))
    out = node.emit(relay.AddOp(node.emit(relay.LogOp(total)), peak))
    if node.attr("keepdims", 1):
        return out
    return node.emit(relay.ReshapeOp(out, relay.reduce_output_shape(shape, axes)))


def _arg_extreme(op_type: type[relay.ArgReduceOp]) -> Converter:
    """ArgMax/ArgMin: relay's i32 index, cast to ONNX's int64."""

    def convert(node: Node) -> SSAValue:
        data = node.value(0)
        rank = len(shape_of(data))
        axis = node.attr("axis", 0)
        if not isinstance(axis, int) or not -max(rank, 1) <= axis < max(rank, 1):
            raise node.error(f"axis {axis} is out of range for rank {rank}")
        keepdims = bool(node.attr("keepdims", 1))
        last = bool(node.attr("select_last_index", 0))
        if rank == 0:
            index = node.emit(relay.ConstantOp.from_numpy(np.zeros((), np.int32)))
        else:
            index = node.emit(
                op_type(data, axis=[axis], keepdims=keepdims, select_last_index=last)
            )
        return node.emit(relay.CastOp(index, "int64"))

    return convert


CONVERTERS: dict[str, Converter] = {
    "ReduceSum": _reduce(relay.SumOp),
    "ReduceMean": _reduce(relay.MeanOp),
    "ReduceMax": _reduce(relay.MaxOp),
    "ReduceMin": _reduce(relay.MinOp),
    "ReduceProd": _reduce(relay.ProdOp),
    "ReduceL1": _reduce(relay.SumOp, before=_unary(relay.AbsOp)),
    "ReduceL2": _reduce(relay.SumOp, before=_square, after=_unary(relay.SqrtOp)),
    "ReduceSumSquare": _reduce(relay.SumOp, before=_square),
    "ReduceLogSum": _reduce(relay.SumOp, after=_unary(relay.LogOp)),
    "ReduceLogSumExp": _reduce_log_sum_exp,
    "ArgMax": _arg_extreme(relay.ArgmaxOp),
    "ArgMin": _arg_extreme(relay.ArgminOp),
}
