"""Converters of ONNX's loss operators (NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss), built from relay's gather, take, log_softmax and
reductions. A target out of range (and not `ignore_index`) fails at run time
with an error naming the gather, as GatherElements does."""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import Converter, Node, shape_of

REDUCTIONS = ("none", "sum", "mean")


def _negative_log_likelihood(node: Node, log_prob: SSAValue, what: str) -> SSAValue:
    """ONNX's NLL of `log_prob` [N, C, d...] at the targets (input 1) with
    optional class weights (input 2), `ignore_index` and `reduction`."""
    target = node.value(1)
    shape, target_shape = shape_of(log_prob), shape_of(target)
    element = log_prob.type.element_type  # type: ignore[attr-defined]
    if not isinstance(element, AnyFloat):
        raise node.error(f"input 0 ({what}) must be a float tensor, got {element}")
    if len(shape) < 2 or target_shape != (shape[0], *shape[2:]):
        raise node.error(
            f"the target's shape {list(target_shape)} must be the {what}'s {list(shape)} "
            "without its class axis 1"
        )
    reduction = node.attr("reduction", "mean")
    if reduction not in REDUCTIONS:
        raise node.error(f"reduction '{reduction}' is not one of {', '.join(REDUCTIONS)}")
    ignore_index = node.attr("ignore_index", None)
    ignored = None
    if ignore_index is not None:
        ignored = node.emit(relay.EqualOp(target, node.const_like(int(ignore_index), target)))
        # An ignored target may name no class: gather class 0 in its place.
        target = node.emit(relay.WhereOp(ignored, node.const_like(0, target), target))
    picked = node.emit(
        relay.GatherOp(log_prob, node.emit(relay.ExpandDimsOp(target, axis=1)), axis=1)
    )
    loss = node.emit(relay.NegativeOp(node.emit(relay.SqueezeOp(picked, axis=[1]))))
    weight = None
    if node.has(2):
        weight = node.emit(relay.TakeOp(node.value(2), target, axis=0, mode="fast"))
        loss = node.emit(relay.MultiplyOp(loss, weight))
    if ignored is not None:
        zero = node.const_like(0.0, loss)
        loss = node.emit(relay.WhereOp(ignored, zero, loss))
        kept = weight if weight is not None else node.const_like(1.0, loss)
        weight = node.emit(relay.WhereOp(ignored, zero, kept))
    if reduction == "none":
        return loss
    total = node.emit(relay.SumOp(loss))
    if reduction == "sum":
        return total
    if weight is None:
        return node.emit(relay.MeanOp(loss))
    return node.emit(relay.DivideOp(total, node.emit(relay.SumOp(weight))))


def _nll_loss(node: Node) -> SSAValue:
    return _negative_log_likelihood(node, node.value(0), "input")


def _softmax_cross_entropy(node: Node) -> list[SSAValue]:
    scores = node.value(0)
    if len(shape_of(scores)) < 2:
        raise node.error("input 0 (scores) must have a class axis 1")
    log_prob = node.emit(relay.LogSoftmaxOp(scores, axis=1))
    return [_negative_log_likelihood(node, log_prob, "scores"), log_prob]


CONVERTERS: dict[str, Converter] = {
    "NegativeLogLikelihoodLoss": _nll_loss,
    "SoftmaxCrossEntropyLoss": _softmax_cross_entropy,
}
