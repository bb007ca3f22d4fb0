"""byoc-fold-constants: an op whose operands are all constants becomes the
constant it computes, evaluated with the numpy reference (runtime/reference.py),
so a folded graph means exactly what the original did.

One sweep in program order folds whole constant subgraphs (an op's constant
operands were folded before it is visited). Folding is bounded: an op is
left alone when its result has more than `max_elements` elements, when it
is several times larger than its largest operand (a broadcast that would
bloat the model), or when computing it takes more than `max_work`
multiply-adds (a convolution of constants), so a huge fold can neither
exhaust memory nor stall the compile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation

from byoc.dialects import relay
from byoc.passes.graph_edit import (
    SweepPass,
    constant_of,
    new_constant,
    replace_op,
    shape_of,
)
from byoc.runtime.reference import REFERENCE

MAX_ELEMENTS = 1 << 24
"""The largest result folded by default (64 MB of float32)."""

MAX_WORK = 1 << 27
"""The most multiply-adds (or elements touched) one fold may cost by default."""

GROWTH = 4
"""A result may hold at most this many times the elements of the largest
operand (unless it is small): broadcasting a constant into a big one makes
the model larger for no gain."""

SMALL = 1 << 16
"""Results of at most this many elements are folded whatever their growth."""


def work_of(op: Operation) -> int:
    """Roughly how many multiply-adds (or element reads) computing `op` takes."""
    out = math.prod(shape_of(op.results[0]))
    if isinstance(op, relay.Conv2dOp):
        _, per_group, kh, kw = shape_of(op.operands[1])
        return out * per_group * kh * kw
    if isinstance(op, relay.DenseOp):
        return out * shape_of(op.operands[1])[1]
    if isinstance(op, relay.MatmulOp | relay.BatchMatmulOp):
        a = shape_of(op.operands[0])
        attrs = op.attrs()
        return out * (a[-2] if attrs["transpose_a"] else a[-1])
    return out + sum(math.prod(shape_of(v)) for v in op.operands)


def fold(op: Operation, max_elements: int = MAX_ELEMENTS, max_work: int = MAX_WORK) -> bool:
    """Replace `op` by its value if all its operands are constants; whether it did."""
    if isinstance(op, relay.ConstantOp) or len(op.results) != 1 or not op.operands:
        return False
    kernel = REFERENCE.get(op.name)
    if kernel is None:
        return False
    arrays = []
    for value in op.operands:
        array = constant_of(value)
        if array is None:
            return False
        arrays.append(array)
    size = math.prod(shape_of(op.results[0]))
    largest = max(math.prod(shape_of(v)) for v in op.operands)
    if size > max_elements or work_of(op) > max_work:
        return False
    if size > SMALL and size > GROWTH * largest:
        return False
    result = op.results[0]
    with np.errstate(all="ignore"):  # IEEE results, as compiled code gives
        value = np.asarray(kernel(op, arrays)).reshape(shape_of(result))
    replace_op(op, new_constant(value, result, op, result.name_hint))
    return True


@dataclass(frozen=True)
class FoldConstantsPass(SweepPass):
    """Replaces ops whose operands are all constants by the constant they compute."""

    name = "byoc-fold-constants"

    max_elements: int = MAX_ELEMENTS
    """Leave results with more elements than this unfolded."""

    max_work: int = MAX_WORK
    """Leave ops costing more multiply-adds than this unfolded."""

    def rewrite(self, op: Operation) -> object:
        return fold(op, self.max_elements, self.max_work)
