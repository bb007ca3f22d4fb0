"""byoc-widen-half: float16 ops that sum many terms compute in float32.

A float16 matmul, convolution, pool average, reduction or normalisation is
rewritten to cast its float16 operands to float32, compute in float32 and
round its result to float16 once:

    %y = relay.nn.dense %x, %w : (tensor<4x64xf16>, tensor<8x64xf16>) -> tensor<4x8xf16>
  becomes
    %x32 = relay.cast %x {dtype = "float32"}    (and %w likewise)
    %y32 = relay.nn.dense %x32, %w32 : (...) -> tensor<4x8xf32>
    %y   = relay.cast %y32 {dtype = "float16"}

This is what those ops mean on float16 in byoc (and in numpy, which the
reference evaluator runs, and in onnxruntime's CPU kernels): lowered as they
are, every partial sum would be rounded to half precision, and a 256-term dot
product drifts by several units in the last place (a 64-channel 3x3
convolution by 20). Elementwise ops keep float16: the host's half arithmetic
rounds each result once already, as numpy does.

The host lowering (`convert-relay-to-loops`) runs this on each function it
lowers, so it holds whichever path reaches the loops; `byoc-opt -p
byoc-widen-half` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float16Type, ModuleOp, TensorType
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects import relay
from byoc.dialects.relay.base import InferredOp
from byoc.passes.graph_edit import insert_before, replace_value
from byoc.passes.speed import erase_op, garbage_collector_paused

WIDENED: tuple[type[InferredOp], ...] = (
    relay.DenseOp,
    relay.DensePackedOp,
    relay.MatmulOp,
    relay.BatchMatmulOp,
    relay.Conv2dOp,
    relay.Conv2dPackedOp,
    relay.Conv2dTransposeOp,
    relay.Conv3dOp,
    relay.Conv3dTransposeOp,
    relay.AvgPool2dOp,
    relay.AvgPool3dOp,
    relay.GlobalAvgPool2dOp,
    relay.SumOp,
    relay.MeanOp,
    relay.ProdOp,
    relay.SoftmaxOp,
    relay.LogSoftmaxOp,
    relay.LayerNormOp,
    relay.InstanceNormOp,
    relay.LrnOp,
)
"""The ops whose result sums (or multiplies) many terms."""


def _is_half(value: SSAValue) -> bool:
    typ = value.type
    return isinstance(typ, TensorType) and isinstance(typ.element_type, Float16Type)


def widen(op: InferredOp) -> None:
    """Compute `op`, which reads or returns float16, in float32 (see the module doc)."""
    operands = [
        insert_before(relay.CastOp(v, "float32"), op) if _is_half(v) else v
        for v in op.operands
    ]
    result_type = type(op).infer_type([v.type for v in operands], op.attrs())
    wide = type(op).create(
        operands=operands,
        result_types=[result_type],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    result = op.results[0]
    narrow = insert_before(wide, op)
    if _is_half(result):
        narrow = insert_before(relay.CastOp(narrow, "float16"), op)
    replace_value(result, narrow)
    erase_op(op)


def widen_half(block: Block) -> None:
    """Widen every float16 op of `WIDENED` in `block` (one pass, in order)."""
    for op in list(block.ops):
        if isinstance(op, WIDENED) and (
            any(_is_half(v) for v in op.operands) or _is_half(op.results[0])
        ):
            widen(op)


@dataclass(frozen=True)
class WidenHalfPass(ModulePass):
    """float16 matmuls, convolutions, pools, reductions and normalisations
    compute in float32, rounding once."""

    name = "byoc-widen-half"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with garbage_collector_paused():
            for function in op.body.block.ops:
                for region in function.regions:
                    for block in region.blocks:
                        widen_half(block)
