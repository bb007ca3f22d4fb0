"""The converter of ONNX's Einsum: the equation is resolved at import into
relay's diagonals (a strided slice of the flattened pair of axes), sums,
transposes, broadcasts, multiplies and batch matmuls, so every backend sees
the ops it already knows.

Operands are folded left to right. Before each step a label that no later
operand and not the output names is summed away; two operands whose shared
labels are all kept multiply elementwise, otherwise they meet in one
`relay.nn.batch_matmul` of `[batch, left, contracted] x [batch, contracted,
right]`. The dimensions an ellipsis covers broadcast as numpy's do."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.checks import EINSUM_TERM
from byoc.frontend.onnx.graph import Converter, Node, shape_of

_TERM = re.compile(EINSUM_TERM)


@dataclass
class _Term:
    """An operand as the fold sees it: its value and one label per axis."""

    value: SSAValue
    labels: list[str]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(shape_of(self.value))


def _parse(node: Node, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Each input's labels, one per axis, and the output's: an ellipsis
    becomes the labels `0`, `1`, ... of the dimensions it covers, aligned on
    the right as numpy broadcasts them."""
    equation = str(node.attr("equation", "")).replace(" ", "")
    if not equation:
        raise node.error("the 'equation' attribute is empty")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise node.error(
            f"equation '{equation}' has {len(terms)} operand(s), the node has {len(ranks)} input(s)"
        )
    for term in (*terms, rhs):
        if not _TERM.fullmatch(term):
            raise node.error(
                f"equation '{equation}': '{term}' is not letters around at most one '...'"
            )
    covered = 0
    inputs: list[list[str]] = []
    for i, (term, rank) in enumerate(zip(terms, ranks)):
        named = len(term.replace("...", ""))
        if "..." in term:
            if named > rank:
                raise node.error(f"equation '{equation}': operand {i} names {named} axes, its rank is {rank}")
            covered = max(covered, rank - named)
        elif named != rank:
            raise node.error(f"equation '{equation}': operand {i} names {named} axes, its rank is {rank}")
    ellipsis = [str(d) for d in range(covered)]
    for term, rank in zip(terms, ranks):
        head, dots, tail = term.partition("...")
        middle = ellipsis[covered - (rank - len(head) - len(tail)):] if dots else []
        inputs.append([*head, *middle, *tail])
    if arrow:
        head, dots, tail = rhs.partition("...")
        output = [*head, *(ellipsis if dots else []), *tail]
        seen = Counter(output)
        for label, count in seen.items():
            if count > 1:
                raise node.error(f"equation '{equation}': the output names '{label}' twice")
            if not any(label in labels for labels in inputs):
                raise node.error(f"equation '{equation}': the output's '{label}' is in no input")
    else:
        counts = Counter(label for labels in inputs for label in labels if not label.isdigit())
        output = [*ellipsis, *sorted(label for label, count in counts.items() if count == 1)]
    return inputs, output


def _diagonals(node: Node, term: _Term) -> _Term:
    """`term` with each repeated label kept once: its diagonal, taken as every
    (n+1)-th element of the two axes flattened into one."""
    while True:
        labels = term.labels
        repeated = next((label for label, count in Counter(labels).items() if count > 1), None)
        if repeated is None:
            return term
        first = labels.index(repeated)
        second = labels.index(repeated, first + 1)
        shape = term.shape
        n = shape[first]
        if shape[second] != n:
            raise node.error(
                f"label '{repeated}' names axes of sizes {n} and {shape[second]} in one operand"
            )
        rest = [axis for axis in range(len(labels)) if axis not in (first, second)]
        value = node.emit(relay.TransposeOp(term.value, [*rest, first, second]))
        kept = [shape[axis] for axis in rest]
        value = node.emit(relay.ReshapeOp(value, [*kept, n * n]))
        value = node.emit(
            relay.StridedSliceOp(value, [0], [n * n], strides=[n + 1], axes=[len(kept)])
        )
        term = _Term(value, [*(labels[axis] for axis in rest), repeated])


def _sum_away(node: Node, term: _Term, needed: set[str]) -> _Term:
    """`term` summed over the axes whose labels are not `needed`."""
    axes = [axis for axis, label in enumerate(term.labels) if label not in needed]
    if not axes:
        return term
    value = node.emit(relay.SumOp(term.value, axes))
    return _Term(value, [label for label in term.labels if label in needed])


def _arranged(node: Node, term: _Term, order: list[str], sizes: dict[str, int]) -> SSAValue:
    """`term`'s value with its axes in `order` (labels it lacks inserted as
    size 1) and broadcast to `sizes` where a label is given there."""
    present = [label for label in order if label in term.labels]
    value = term.value
    permutation = [term.labels.index(label) for label in present]
    if permutation != list(range(len(permutation))):
        value = node.emit(relay.TransposeOp(value, permutation))
    shape = term.shape
    full = [shape[term.labels.index(label)] if label in term.labels else 1 for label in order]
    if len(full) != len(present):
        value = node.emit(relay.ReshapeOp(value, full))
    wanted = [sizes.get(label, have) for label, have in zip(order, full)]
    if wanted != full:
        value = node.emit(relay.BroadcastToOp(value, wanted))
    return value


def _sizes(node: Node, a: _Term, b: _Term) -> dict[str, int]:
    """Each shared label's size, numpy-broadcast between `a` and `b`."""
    sizes: dict[str, int] = {}
    for label in a.labels:
        if label not in b.labels:
            continue
        x, y = a.shape[a.labels.index(label)], b.shape[b.labels.index(label)]
        if x != y and 1 not in (x, y):
            raise node.error(f"label '{label}' has sizes {x} and {y} that do not broadcast")
        sizes[label] = max(x, y)
    return sizes


def _combine(node: Node, a: _Term, b: _Term, needed: set[str]) -> _Term:
    """The product of `a` and `b` summed over their shared labels that are not
    `needed` later."""
    sizes = _sizes(node, a, b)
    batch = [label for label in a.labels if label in b.labels and label in needed]
    contracted = [label for label in a.labels if label in b.labels and label not in needed]
    left = [label for label in a.labels if label not in b.labels]
    right = [label for label in b.labels if label not in a.labels]
    if not contracted:  # relay.multiply broadcasts the size-1 axes itself
        order = [*batch, *left, *right]
        x = _arranged(node, a, order, {})
        y = _arranged(node, b, order, {})
        return _Term(node.emit(relay.MultiplyOp(x, y)), order)
    size = {
        **{label: a.shape[a.labels.index(label)] for label in left},
        **{label: b.shape[b.labels.index(label)] for label in right},
        **sizes,
    }
    x = _arranged(node, a, [*batch, *left, *contracted], sizes)
    y = _arranged(node, b, [*batch, *contracted, *right], sizes)

    def flat(labels: list[str]) -> int:
        return math.prod(size[label] for label in labels)

    x = node.emit(relay.ReshapeOp(x, [flat(batch), flat(left), flat(contracted)]))
    y = node.emit(relay.ReshapeOp(y, [flat(batch), flat(contracted), flat(right)]))
    out = node.emit(relay.BatchMatmulOp(x, y, transpose_b=False))
    order = [*batch, *left, *right]
    out = node.emit(relay.ReshapeOp(out, [size[label] for label in order]))
    return _Term(out, order)


def _einsum(node: Node) -> SSAValue:
    values = [node.value(i) for i in range(len(node.inputs))]
    if not values:
        raise node.error("Einsum needs at least one input")
    inputs, output = _parse(node, [len(shape_of(v)) for v in values])
    terms = [_diagonals(node, _Term(v, labels)) for v, labels in zip(values, inputs)]
    result = None
    for i, term in enumerate(terms):
        needed = set(output).union(*(t.labels for t in terms[i + 1:]))
        if result is None:
            result = _sum_away(node, term, needed)
            continue
        term = _sum_away(node, term, needed | set(result.labels))
        result = _combine(node, result, term, needed)
    assert result is not None
    result = _sum_away(node, result, set(output))
    permutation = [result.labels.index(label) for label in output]
    if permutation != list(range(len(permutation))):
        return node.emit(relay.TransposeOp(result.value, permutation))
    return result.value


CONVERTERS: dict[str, Converter] = {"Einsum": _einsum}
