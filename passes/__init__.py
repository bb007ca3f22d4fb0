"""Passes of byoc: graph passes (annotate, merge, partition) and conversions."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _annotate() -> type[ModulePass]:
    from byoc.passes.annotate import AnnotatePass

    return AnnotatePass


def _merge_regions() -> type[ModulePass]:
    from byoc.passes.merge_regions import MergeRegionsPass

    return MergeRegionsPass


def _partition() -> type[ModulePass]:
    from byoc.passes.partition import PartitionPass

    return PartitionPass


def _outline_regions() -> type[ModulePass]:
    from byoc.passes.partition import OutlineRegionsPass

    return OutlineRegionsPass


def _fake_quantization_to_integer() -> type[ModulePass]:
    from byoc.passes.fake_quantization_to_integer import FakeQuantizationToIntegerPass

    return FakeQuantizationToIntegerPass


def _relay_to_loops() -> type[ModulePass]:
    from byoc.passes.convert_relay_to_loops import ConvertRelayToLoopsPass

    return ConvertRelayToLoopsPass


def _mark_parallel_loops() -> type[ModulePass]:
    from byoc.passes.parallel_loops import MarkParallelLoopsPass

    return MarkParallelLoopsPass


def _loops_to_emitc() -> type[ModulePass]:
    from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass

    return ConvertLoopsToEmitCPass


def _outline_parallel_loops() -> type[ModulePass]:
    from byoc.passes.outline_parallel_loops import OutlineParallelLoopsPass

    return OutlineParallelLoopsPass


def _loops_to_llvm() -> type[ModulePass]:
    from byoc.passes.convert_loops_to_llvm import ConvertLoopsToLLVMPass

    return ConvertLoopsToLLVMPass


def _split_functions() -> type[ModulePass]:
    from byoc.passes.split_functions import SplitFunctionsPass

    return SplitFunctionsPass


def _dedup_functions() -> type[ModulePass]:
    from byoc.passes.dedup_functions import DedupFunctionsPass

    return DedupFunctionsPass


def _weights_to_blob() -> type[ModulePass]:
    from byoc.passes.weights_to_blob import WeightsToBlobPass

    return WeightsToBlobPass


def _simplify() -> type[ModulePass]:
    from byoc.passes.simplify import SimplifyPass

    return SimplifyPass


def _fold_constants() -> type[ModulePass]:
    from byoc.passes.fold_constants import FoldConstantsPass

    return FoldConstantsPass


def _fold_batch_norm() -> type[ModulePass]:
    from byoc.passes.fold_batch_norm import FoldBatchNormPass

    return FoldBatchNormPass


def _fold_scale_shift() -> type[ModulePass]:
    from byoc.passes.fold_scale_shift import FoldScaleShiftPass

    return FoldScaleShiftPass


def _fuse_gelu() -> type[ModulePass]:
    from byoc.passes.fuse_gelu import FuseGeluPass

    return FuseGeluPass


def _simplify_shapes() -> type[ModulePass]:
    from byoc.passes.simplify_shapes import SimplifyShapesPass

    return SimplifyShapesPass


def _fold_transposes() -> type[ModulePass]:
    from byoc.passes.fold_transposes import FoldTransposesPass

    return FoldTransposesPass


def _remove_noops() -> type[ModulePass]:
    from byoc.passes.remove_noops import RemoveNoopsPass

    return RemoveNoopsPass


def _widen_half() -> type[ModulePass]:
    from byoc.passes.widen_half import WidenHalfPass

    return WidenHalfPass


BYOC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "byoc-fake-quantization-to-integer": _fake_quantization_to_integer,
    "byoc-simplify": _simplify,
    "byoc-fold-constants": _fold_constants,
    "byoc-remove-noops": _remove_noops,
    "byoc-simplify-shapes": _simplify_shapes,
    "byoc-fold-transposes": _fold_transposes,
    "byoc-fold-batch-norm": _fold_batch_norm,
    "byoc-fold-scale-shift": _fold_scale_shift,
    "byoc-fuse-gelu": _fuse_gelu,
    "byoc-annotate": _annotate,
    "byoc-merge-regions": _merge_regions,
    "byoc-outline-regions": _outline_regions,
    "byoc-partition": _partition,
    "byoc-split-functions": _split_functions,
    "byoc-dedup-functions": _dedup_functions,
    "byoc-widen-half": _widen_half,
    "convert-relay-to-loops": _relay_to_loops,
    "byoc-mark-parallel-loops": _mark_parallel_loops,
    "convert-loops-to-emitc": _loops_to_emitc,
    "byoc-outline-parallel-loops": _outline_parallel_loops,
    "convert-loops-to-llvm": _loops_to_llvm,
    "byoc-weights-to-blob": _weights_to_blob,
}
"""Every byoc pass by its CLI name (the `name` of its ModulePass class)."""
