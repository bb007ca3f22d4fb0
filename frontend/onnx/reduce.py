"""Converters of ONNX reductions."""


from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    pass

Shape = tuple[int, ...]


def _reduce_mean(node: Node) -> SSAValue:
    data = node.value(0)
    rank = len(shape_of(data))
    axes = _axes(node, 18)
    keepdims = bool(node.attr("keepdims", 1))
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return data
        axes = list(range(rank))
    axes = list(relay.normalize_axes(axes, rank, "ReduceMean", "axes"))
    if not axes:
        return data  # a rank-0 input
    return node.emit(relay.MeanOp(data, axis=axes, keepdims=keepdims))


CONVERTERS: dict[str, Converter] = {
    "ReduceMean": _reduce_mean,
}
