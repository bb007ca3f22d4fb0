"""byoc-simplify: the graph simplifications byoc.compile runs before any
backend annotates, so every backend sees the simplified graph (TVM's
SimplifyInference, FoldConstant and FoldScaleAxis; onnxruntime's basic
optimisation level).

The pipeline, each step one linear sweep (docs/architecture.md, "Simplification"):
fold constants, remove no-ops, recognise the erf GELU written as five
elementwise ops (one relay.nn.gelu), collapse reshape/transpose chains, move
transposes into matrix products' flags, fold batch norms and then per-channel
multiplications and additions into the conv2d/dense before them, collapse
the shape chains the folds leave (attention's scaled scores: once the scale
is folded into the queries, the softmax reads a reshape of the batch matmul
and a reshape back follows it), and remove the no-ops the folds leave (a
scale of 1, a shift of 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from byoc.passes.fold_batch_norm import FoldBatchNormPass
from byoc.passes.fold_constants import FoldConstantsPass
from byoc.passes.fold_scale_shift import FoldScaleShiftPass
from byoc.passes.fold_transposes import FoldTransposesPass
from byoc.passes.fuse_gelu import FuseGeluPass
from byoc.passes.remove_noops import RemoveNoopsPass
from byoc.passes.simplify_shapes import SimplifyShapesPass

PIPELINE: tuple[ModulePass, ...] = (
    FoldConstantsPass(),
    RemoveNoopsPass(),
    FuseGeluPass(),
    SimplifyShapesPass(),
    FoldTransposesPass(),
    FoldBatchNormPass(),
    FoldScaleShiftPass(),
    SimplifyShapesPass(),
    RemoveNoopsPass(),
)
"""The passes of byoc-simplify, in order."""


def simplify(module: ModuleOp) -> None:
    """Run the simplification pipeline on `module`, in place."""
    ctx = Context()
    for step in PIPELINE:
        step.apply(ctx, module)


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    """Simplifies relay graphs: constants folded, batch norms and per-channel
    scales folded into convolutions, shape chains collapsed, no-ops removed."""

    name = "byoc-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        simplify(op)
