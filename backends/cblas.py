"""cblas: matrix products and convolutions as calls to OpenBLAS's `sgemm`.

A vendor-library backend in one file. It takes float32 `nn.dense`,
`nn.matmul`, `nn.batch_matmul` and `nn.conv2d` (im2col + sgemm, or sgemm
straight on the input for 1x1 stride-1 convolutions), and the composites
that end a dense or conv2d with a bias and/or relu. A batch matmul reads its
operands and writes its result through reshapes and transposes in place when
their strides allow (attention's heads: `view_check`), and normalises its
rows after each product in a `batch_matmul_softmax` composite (an additive
attention mask added first in `batch_matmul_add_softmax`); libbyoc
computes such a composite and the batch matmul by the values after it in one
pass (`byoc_rt_attention`), and layer_norm along the last axis. A conv2d or dense with a
constant weight is computed by libbyoc's kernels instead (`alter_op` packs
the weight at compile time: relay.nn.conv2d_packed, relay.nn.dense_packed),
which also fuse a residual add, clip and (dense) gelu; libbyoc's
byoc_rt_pool2d also computes 2-d max and average pools of strides 1 and 2 and
global average pools (a pool reads like a depthwise stencil, and the
generated loops ran rows of 7 or 14 outputs one scalar at a time). The generated C calls
`scipy_cblas_sgemm` from the scipy-openblas32 wheel (`pip install
byoc[cblas]`), then applies the epilogue (bias add, relu) in ONE loop over
the product's output, in place, while it is still in cache.

How the C is made. Each outlined function is planned first (which ops form
one step, which buffer each value lives in), then built as emitc IR
(`byoc.dialects.emitc`: `emitc.call_opaque` for sgemm, aligned_alloc, free,
`emitc.for`/`emitc.if` for im2col and epilogue loops, `emitc.include` for
`<cblas.h>`) and printed by `byoc.targets.c`, like every other C byoc makes.
Index arithmetic is folded at codegen time (`Affine`), so the loops read as
`out[(v5 * 1024) + v6]` with every shape a constant.

Intermediates (values used only inside the function) and im2col buffers live
in one scratch allocation sized at codegen time; buffers whose lifetimes do
not overlap share memory. A failed allocation records its size in
`<symbol>_failed_bytes` and returns `ALLOCATION_FAILED`. Small constants the
partitioner copies into a function become `static const float` arrays.

Vectors. A product with one row (`nn.dense` of a [1, K] input, the usual
last layer at batch 1) or one column is a matrix-vector product: it calls
`scipy_cblas_sgemv`, several times faster than sgemm on such shapes.

Threads. Unless `$BYOC_PARALLEL=0` (`libbyoc.parallel_code()`), the
generated C splits every product of at least `PARALLEL_MIN_WORK`
multiply-adds across cores itself: a parallel loop on libbyoc's pool
(`byoc-outline-parallel-loops`) over chunks, each chunk a BLAS call (one per group for a grouped conv2d) on its own block
of the output followed by the epilogue over that block while it is in that
core's cache. A conv2d splits the output rows of each image (each thread
fills only its own columns of the im2col buffer), a dense or matmul the
larger of the output's columns and rows, a batched product (batch_matmul,
matmul with `transpose_a`) its batch; large epilogues that run on their own
get a parallel loop too. The thread count is libbyoc's (`libbyoc.set_threads`,
`$BYOC_NUM_THREADS`, default every core), capped so each chunk gets at least
`MIN_CHUNK` rows or columns. Such C also holds a constructor that makes
OpenBLAS itself single-threaded (`scipy_openblas_set_num_threads(1)`) when the
library is loaded, so saved models and AOT libraries behave the same without
Python: OpenBLAS's own threads spin after each call and would compete for the
cores with the pool's. With `$BYOC_PARALLEL=0` the C calls no pool and sets
no thread count: each product is one BLAS call at a time, which OpenBLAS may
thread itself.

OpenBLAS threads: OpenBLAS starts as many threads as cores (or
`$OPENBLAS_NUM_THREADS`); `set_threads(n)` changes it for the process (also
after a module has set it to 1; then each chunk's call may use `n` threads).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.backends.spec import ALLOCATION_FAILED, Artifact, Backend, Composite
from byoc.dialects import relay
from byoc.dialects.relay.nn import DENSE_PANEL
from byoc.dialects.emitc import (
    CONST_ATTR,
    RESTRICT_ATTR,
    EmitC_AddOp,
    EmitC_ArrayType,
    EmitC_AssignOp,
    EmitC_CallOpaqueOp,
    EmitC_CastOp,
    EmitC_CmpOp,
    EmitC_ConditionalOp,
    EmitC_ConstantOp,
    EmitC_DivOp,
    EmitC_ForOp,
    EmitC_FuncOp,
    EmitC_GetGlobalOp,
    EmitC_GlobalOp,
    EmitC_IfOp,
    EmitC_IncludeOp,
    EmitC_LiteralOp,
    EmitC_LoadOp,
    EmitC_LogicalAndOp,
    EmitC_MulOp,
    EmitC_OpaqueAttr,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_ReturnOp,
    EmitC_SubOp,
    EmitC_SubscriptOp,
    EmitC_VerbatimOp,
    EmitC_YieldOp,
)
from byoc.frontend.diagnostics import ByocError
from byoc.runtime import libbyoc
from byoc.passes.outline_parallel_loops import mark_parallel, outline_parallel_loops
from byoc.passes.speed import erase_op
from byoc.runtime.toolchain import DEFAULT_FLAGS, compile_shared

NAME = "cblas"
SGEMM = "scipy_cblas_sgemm"
SGEMV = "scipy_cblas_sgemv"
BLAS_INT_MAX = 2**31 - 1
"""sgemm's sizes and leading dimensions are `blasint`, 32-bit in scipy-openblas32."""

ALIGNMENT = 64
"""Bytes: the scratch allocation and every buffer in it start on a cache line."""

PARALLEL_MIN_WORK = 2**17
"""Multiply-adds from which a product is split across threads."""

MIN_CHUNK = 16
"""Output rows or columns (for conv2d: pixels) each chunk gets at least."""

PARALLEL_MIN_ELEMENTS = 2**16
"""Elements from which an epilogue running on its own is a parallel loop."""


ONE_OPENBLAS_THREAD = (
    "__attribute__((constructor)) static void byoc_cblas_one_openblas_thread(void) "
    "{ scipy_openblas_set_num_threads(1); }"
)
"""In C that splits work across threads: OpenBLAS must not start threads of its own
inside those threads (`scipy_openblas_set_num_threads` is declared in cblas.h)."""


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenBLAS:
    """Where the scipy-openblas32 wheel keeps its header and shared library."""

    include_dir: Path
    lib_dir: Path
    library: str

    @property
    def flags(self) -> tuple[str, ...]:
        return (*DEFAULT_FLAGS, f"-I{self.include_dir}")

    @property
    def link_flags(self) -> tuple[str, ...]:
        """Linking against the wheel's library, with no run-time path to it."""
        return (f"-L{self.lib_dir}", f"-l{self.library}", "-lm")

    @property
    def libraries(self) -> tuple[str, ...]:
        """Linking for the JIT, which loads the library from the wheel itself."""
        return (*self.link_flags, f"-Wl,-rpath,{self.lib_dir}")

    @property
    def shared_object(self) -> Path:
        """The library itself, which an exported model ships beside itself."""
        path = self.lib_dir / f"lib{self.library}.so"
        if not path.exists():
            raise ByocError(f"error: no lib{self.library}.so in {self.lib_dir}")
        return path


@cache
def openblas() -> OpenBLAS:
    """The installed scipy-openblas32, or a ByocError saying how to install it."""
    try:
        import scipy_openblas32 as wheel  # type: ignore[import-not-found]
    except ImportError:
        raise ByocError(
            "error: backend 'cblas' needs OpenBLAS from the scipy-openblas32 wheel: "
            "pip install 'byoc[cblas]'"
        ) from None
    return OpenBLAS(
        Path(wheel.get_include_dir()), Path(wheel.get_lib_dir()), wheel.get_library()
    )


@cache
def _openblas_handle():  # noqa: ANN202 - a cffi library object
    import cffi

    lib = openblas()
    candidates = sorted(lib.lib_dir.glob(f"lib{lib.library}.*"))
    if not candidates:
        raise ByocError(f"error: no lib{lib.library} in {lib.lib_dir}")
    ffi = cffi.FFI()
    ffi.cdef(
        f"void {lib.library}_set_num_threads(int);"
        f"int {lib.library}_get_num_threads(void);"
    )
    return ffi.dlopen(str(candidates[0])), lib.library


def set_threads(count: int) -> None:
    """Make OpenBLAS use `count` threads in this process (for every cblas model)."""
    if count < 1:
        raise ByocError(f"error: OpenBLAS needs at least one thread, got {count}")
    handle, prefix = _openblas_handle()
    getattr(handle, f"{prefix}_set_num_threads")(count)


def get_threads() -> int:
    """How many threads OpenBLAS uses in this process."""
    handle, prefix = _openblas_handle()
    return int(getattr(handle, f"{prefix}_get_num_threads")())


# ---------------------------------------------------------------------------
# Which ops it takes
# ---------------------------------------------------------------------------


def _shape(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def _float32(op: Operation) -> str | None:
    """Why `op` is not a float32 op on non-empty tensors, or None."""
    for what, value in [
        *((f"operand {i}", v) for i, v in enumerate(op.operands)),
        ("result", op.results[0]),
    ]:
        typ = value.type
        if not isinstance(typ, TensorType) or typ.element_type != f32:
            return f"cblas computes in float32 (sgemm); {op.name} {what} is {typ}"
        if 0 in typ.get_shape():
            return f"cblas leaves empty tensors ({typ}) to the host"
    return None


def _blas_sizes(op: Operation, **sizes: int) -> str | None:
    for name, size in sizes.items():
        if size > BLAS_INT_MAX:
            return (
                f"{op.name}: {name}={size} exceeds sgemm's 32-bit sizes "
                f"(at most {BLAS_INT_MAX})"
            )
    return None


def dense_check(op: Operation) -> str | None:
    """Takes float32 dense: one sgemm `[M, K] x [N, K]^T`."""
    if reason := _float32(op):
        return reason
    data, weight = _shape(op.operands[0]), _shape(op.operands[1])
    return _blas_sizes(op, M=math.prod(data[:-1]), N=weight[0], K=weight[1])


def matmul_check(op: Operation) -> str | None:
    """Takes float32 matmul: one sgemm, or one per batch when `transpose_a`."""
    if reason := _float32(op):
        return reason
    a, b = _shape(op.operands[0]), _shape(op.operands[1])
    result = _shape(op.results[0])
    return _blas_sizes(
        op, M=math.prod(result[:-1]), N=result[-1], K=b[0] * b[1] // result[-1],
        leading=max(a[-1], b[-1]),
    )


def batch_matmul_check(op: Operation) -> str | None:
    """Takes float32 batch_matmul: one sgemm per batch (one in all when y is shared)."""
    if reason := _float32(op):
        return reason
    x, y = _shape(op.operands[0]), _shape(op.operands[1])
    batch, m, n = _shape(op.results[0])
    return _blas_sizes(op, M=batch * m, N=n, K=x[1] * x[2] // m, leading=max(x[2], y[2]))


def is_depthwise(op: Operation) -> bool:
    """A conv2d with one input channel per group and several groups (libbyoc's
    depthwise kernel: a GEMM per channel would have one row)."""
    if not isinstance(op, relay.Conv2dOp):
        return False
    groups = op.attrs()["groups"]
    return groups > 1 and _shape(op.operands[1])[1] == 1  # type: ignore[operator]


def channel_shuffle(value: SSAValue) -> tuple[SSAValue, int] | None:
    """`(x, g)` when `value` is x's channels shuffled in `g` groups, ShuffleNet's
    way: x [N, C, H, W] reshaped to [N, g, C/g, H, W], transposed (0, 2, 1, 3,
    4) and reshaped back, so that channel c of `value` is channel
    `(c % g) * (C / g) + c / g` of x; else None."""
    last = value.owner
    if not isinstance(last, relay.ReshapeOp):
        return None
    middle = last.operands[0].owner
    if not isinstance(middle, relay.TransposeOp):
        return None
    first = middle.operands[0].owner
    if not isinstance(first, relay.ReshapeOp):
        return None
    x = first.operands[0]
    shape, split = _shape(x), _shape(first.results[0])
    if len(shape) != 4 or _shape(value) != shape or len(split) != 5:
        return None
    n, c, h, w = shape
    if split[0] != n or split[3:] != (h, w) or split[1] * split[2] != c:
        return None
    axes = relay.transpose_axes(5, middle.attrs()["axes"], middle.name)  # type: ignore[arg-type]
    if axes != (0, 2, 1, 3, 4):
        return None
    return x, split[1]


SHUFFLE_OPS = (relay.ReshapeOp.name, relay.TransposeOp.name, relay.ReshapeOp.name)
"""The ops of a channel shuffle, in chain order (`channel_shuffle`)."""

VIEW_OPS = (relay.ReshapeOp, relay.TransposeOp)
"""Ops a batch matmul reads or writes through in place (`operand_view`,
`result_view`): attention's heads split off the projections,
`reshape -> transpose (0, 2, 1, 3) -> reshape`, and merged back."""


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def reshaped_strides(
    shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides (in elements) of `new_shape` over the elements of a tensor of
    `shape` laid out with `strides`, taken in row-major order, or None when
    no strides can (dimensions merged that are not contiguous together):
    numpy's reshape without a copy. Size-1 dimensions get stride 0."""
    old = [(n, st) for n, st in zip(shape, strides, strict=True) if n != 1]
    new = [n for n in new_shape if n != 1]
    out: list[int] = []
    i = j = 0
    while i < len(old) and j < len(new):
        i_end, j_end, have, want = i + 1, j + 1, old[i][0], new[j]
        while have != want:
            if have < want:
                if i_end == len(old):
                    return None
                have *= old[i_end][0]
                i_end += 1
            else:
                if j_end == len(new):
                    return None
                want *= new[j_end]
                j_end += 1
        for k in range(i, i_end - 1):  # the merged old dims must nest
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        group = [old[i_end - 1][1]]
        for k in range(j_end - 1, j, -1):
            group.append(group[-1] * new[k])
        out.extend(reversed(group))
        i, j = i_end, j_end
    if i != len(old) or j != len(new):
        return None
    kept = iter(out)
    return tuple(0 if n == 1 else next(kept) for n in new_shape)


def _view_strides(op: Operation, strides: tuple[int, ...] | None, forward: bool) -> tuple[int, ...] | None:
    """The strides of `op`'s result from those of its operand (`forward`), or
    of its operand from those of its result."""
    if strides is None:
        return None
    source, result = _shape(op.operands[0]), _shape(op.results[0])
    if isinstance(op, relay.ReshapeOp):
        return reshaped_strides(*((source, strides, result) if forward else (result, strides, source)))
    assert isinstance(op, relay.TransposeOp)
    axes = relay.transpose_axes(len(source), op.attrs()["axes"], op.name)  # type: ignore[arg-type]
    if forward:
        return tuple(strides[a] for a in axes)
    back = [0] * len(axes)
    for i, a in enumerate(axes):
        back[a] = strides[i]
    return tuple(back)


def _single_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _matrices(shape: Sequence[int], strides: tuple[int, ...] | None) -> tuple[int, int] | None:
    """`(batch stride, leading dimension)` of a [B, R, C] operand whose rows are
    contiguous, else None."""
    if strides is None or len(strides) != 3:
        return None
    batch, rows, cols = shape
    if cols > 1 and strides[2] != 1:
        return None
    ld = strides[1] if rows > 1 else cols
    if ld < cols:
        return None
    return (strides[0] if batch > 1 else 0), ld


def operand_view(value: SSAValue, inside=lambda op: True) -> tuple[SSAValue, int, int] | None:
    """`(x, batch stride, leading dimension)` when `value`, a batch matmul's
    operand, is a chain of reshapes and transposes (`inside` says which ops may
    be part of it, each its producer's only user) of a value x it can read in
    place: its matrices' rows contiguous in x. None when there is no such chain."""
    chain = []
    base = value
    while isinstance(base.owner, VIEW_OPS) and inside(base.owner) and len(list(base.uses)) == 1:
        chain.append(base.owner)
        base = base.owner.operands[0]
    if not chain:
        return None
    strides: tuple[int, ...] | None = _contiguous(_shape(base))
    for op in reversed(chain):
        strides = _view_strides(op, strides, forward=True)
    found = _matrices(_shape(value), strides)
    return None if found is None else (base, *found)


def result_view(value: SSAValue, inside=lambda op: True) -> tuple[SSAValue, int, int] | None:
    """`(y, batch stride, leading dimension)` when `value`, a batch matmul's
    result, has a chain of reshapes and transposes after it (`inside`: which
    ops may be part of it, each its operand's only user) ending in y, and the
    product can write its matrices in y's place (rows contiguous in y)."""
    chain = []
    end = value
    while (user := _single_use(end)) is not None and isinstance(user, VIEW_OPS) and inside(user):
        chain.append(user)
        end = user.results[0]
    if not chain:
        return None
    strides: tuple[int, ...] | None = _contiguous(_shape(end))
    for op in reversed(chain):
        strides = _view_strides(op, strides, forward=False)
    found = _matrices(_shape(value), strides)
    return None if found is None else (end, *found)


def view_check(op: Operation) -> str | None:
    """Takes a reshape or transpose in a chain of them that a batch matmul cblas
    takes reads in place (attention's heads split off the projections) or
    writes through (the heads merged back): no copy is made."""
    if reason := _float32(op):
        return reason
    end = op.results[0]
    while (user := _single_use(end)) is not None and isinstance(user, VIEW_OPS):
        end = user.results[0]
    user = _single_use(end)
    if isinstance(user, relay.BatchMatmulOp) and not batch_matmul_check(user):
        if operand_view(end) is not None:
            return None
    start = op.operands[0]
    while isinstance(start.owner, VIEW_OPS) and len(list(start.uses)) == 1:
        start = start.owner.operands[0]
    owner = start.owner
    if isinstance(owner, relay.BatchMatmulOp) and not batch_matmul_check(owner):
        if result_view(start) is not None:
            return None
    if _reshapes_a_mask(op):
        return None
    return "cblas takes reshapes and transposes only as a batch matmul's operand or result read or written in place"


def _reshapes_a_mask(op: Operation) -> bool:
    """Whether `op` is in a chain of reshapes (each its operand's only user)
    ending in the mask of a `batch_matmul_add_softmax` (byoc-simplify reshapes
    a [1, 1, 1, S] mask to the scores' rank): the mask is read in place."""
    end = op.results[0]
    while isinstance(op, relay.ReshapeOp) and (user := _single_use(end)) is not None:
        if not isinstance(user, relay.ReshapeOp | relay.AddOp):
            return False
        if isinstance(user, relay.AddOp):
            scores = user.operands[1] if user.operands[0] is end else user.operands[0]
            softmax = _single_use(user.results[0])
            product = scores.owner
            if isinstance(product, relay.ReshapeOp):  # the heads form
                product = product.operands[0].owner
            return (
                isinstance(product, relay.BatchMatmulOp)
                and _single_use(scores) is user
                and isinstance(softmax, relay.SoftmaxOp)
                and _masked_softmax_reason(product, scores, user, softmax) is None
            )
        op, end = user, user.results[0]
    return False


def conv2d_check(op: Operation) -> str | None:
    """Takes float32 conv2d: grouped ones as one GEMM per group, depthwise ones
    in libbyoc's depthwise kernel."""
    if reason := _float32(op):
        return reason
    assert isinstance(op, relay.Conv2dOp)
    groups = op.attrs()["groups"]
    assert isinstance(groups, int)
    out_channels, per_group, kh, kw = _shape(op.operands[1])
    _, _, oh, ow = _shape(op.results[0])
    if is_depthwise(op):
        if kh * kw > DEPTHWISE_MAX_TAPS:
            return (
                f"depthwise conv2d with a {kh}x{kw} kernel: libbyoc's depthwise kernel "
                f"takes at most {DEPTHWISE_MAX_TAPS} taps"
            )
        return None
    return _blas_sizes(
        op,
        M=out_channels // groups,
        N=oh * ow,
        K=per_group * kh * kw,
    )


DEPTHWISE_MAX_TAPS = 64
"""Kernel taps libbyoc's depthwise convolution takes (byoc_runtime.h)."""


def pool_check(op: Operation) -> str | None:
    """Takes float32 2-d max and average pools with strides 1 and 2 (libbyoc's
    byoc_rt_pool2d: Inception's 3x3 "same" pools, whose rows of 7 or 14
    outputs the generated loops run one scalar at a time, and the 3x3
    stride-2 pools of SqueezeNet and ResNet)."""
    if reason := _float32(op):
        return reason
    attrs = op.attrs()
    if attrs["layout"] != "NCHW":
        return f"cblas pools NCHW data only, not {attrs['layout']}"
    strides = tuple(attrs["strides"])  # type: ignore[arg-type]
    if any(s not in (1, 2) for s in strides) or tuple(attrs["dilation"]) != (1, 1):  # type: ignore[arg-type]
        return "cblas pools with strides 1 and 2 and dilation 1 only (libbyoc's byoc_rt_pool2d)"
    return None


def global_pool_check(op: Operation) -> str | None:
    """Takes float32 NCHW global average pools: byoc_rt_pool2d's average pool
    whose kernel is the whole plane (the classifiers' 13x13 and 7x7 planes:
    ccompiler's loops took 2x onnxruntime's time, and the pool now shares its
    function, in cache, with the conv before it)."""
    if reason := _float32(op):
        return reason
    if op.attrs()["layout"] != "NCHW":
        return f"cblas pools NCHW data only, not {op.attrs()['layout']}"
    return None


def layer_norm_check(op: Operation) -> str | None:
    """Takes float32 layer_norm along the last axis: libbyoc's kernel, rows
    across the pool (a transformer's norms between its cblas functions)."""
    if reason := _float32(op):
        return reason
    rank = len(_shape(op.operands[0]))
    if relay.normalize_axis(op.attrs()["axis"], rank, op.name) != rank - 1:
        return "the layer_norm is not along the last axis"
    return None


def dense_packed_check(op: Operation) -> str | None:
    """Takes float32 dense_packed (what `alter_op` makes of a dense with a constant
    weight): libbyoc's kernel."""
    return _float32(op)


def conv2d_packed_check(op: Operation) -> str | None:
    """Takes float32 conv2d_packed (what `alter_op` makes of a conv2d with a constant
    weight): libbyoc's kernel, any stride, padding, dilation and groups."""
    return _float32(op)


KERNEL_CHECKS = {
    relay.DenseOp.name: dense_check,
    relay.DensePackedOp.name: dense_packed_check,
    relay.MatmulOp.name: matmul_check,
    relay.BatchMatmulOp.name: batch_matmul_check,
    relay.Conv2dOp.name: conv2d_check,
    relay.Conv2dPackedOp.name: conv2d_packed_check,
    relay.MaxPool2dOp.name: pool_check,
    relay.AvgPool2dOp.name: pool_check,
    relay.GlobalAvgPool2dOp.name: global_pool_check,
    relay.LayerNormOp.name: layer_norm_check,
}
"""The ops computed by sgemm or libbyoc, and their checks."""

EPILOGUE_OPS = (
    relay.BiasAddOp.name, relay.ReluOp.name, relay.AddOp.name, relay.ClipOp.name,
    relay.GeluOp.name, relay.SoftmaxOp.name,
)
"""Elementwise ops applied to a product's output in the same pass (composites only;
a residual `add` and `clip` only after a conv2d or dense with a constant weight,
`gelu` only after such a dense), and softmax along the rows of a batch matmul's
output (attention's scores), by libbyoc's byoc_rt_softmax on each batch."""


def fused_check(ops: Sequence[Operation]) -> str | None:
    """A composite: its product must be taken, and its epilogue be float32."""
    head = ops[0]
    if reason := KERNEL_CHECKS[head.name](head):
        return reason
    for op in ops[1:]:
        if reason := _float32(op):
            return reason
    return None


def packed_conv_check(ops: Sequence[Operation]) -> str | None:
    """A conv2d composite whose epilogue only libbyoc's kernel applies (a residual
    add, clip): the weight must be a constant (so it is packed), an add's operands
    of one shape, and a bias along the channels."""
    if reason := fused_check(ops):
        return reason
    conv = ops[0]
    weight = conv.operands[1].owner
    if not isinstance(weight, relay.ConstantOp) and not is_depthwise(conv):
        return "the weight is not a constant (libbyoc's convolution reads packed weights)"
    for op in ops[1:]:
        if isinstance(op, relay.AddOp) and _shape(op.operands[0]) != _shape(op.operands[1]):
            return "the add broadcasts (a residual add takes two tensors of one shape)"
        if isinstance(op, relay.BiasAddOp) and op.attrs()["axis"] not in (1, -3):
            return "the bias is not along the channels"
    return None


def shuffled_conv_check(ops: Sequence[Operation]) -> str | None:
    """A channel shuffle read by a depthwise conv2d composite: the depthwise
    kernel reads the shuffle's input through the permutation, with no copy."""
    shuffle = len(SHUFFLE_OPS)
    conv = ops[shuffle]
    if not is_depthwise(conv):
        return "the conv2d after the channel shuffle is not depthwise"
    found = channel_shuffle(conv.operands[0])
    if found is None or found[0] is not ops[0].operands[0]:
        return "the reshapes and transpose are not a channel shuffle"
    return packed_conv_check(ops[shuffle:])


def packed_dense_check(ops: Sequence[Operation]) -> str | None:
    """A dense composite whose epilogue only libbyoc's kernel applies (a residual
    add, gelu): the weight must be a constant (so it is packed), an add's
    operands of one shape, a bias along the last axis, gelu's erf form."""
    if reason := fused_check(ops):
        return reason
    dense = ops[0]
    if not isinstance(dense.operands[1].owner, relay.ConstantOp):
        return "the weight is not a constant (libbyoc's dense kernel reads packed weights)"
    rank = len(_shape(dense.results[0]))
    for op in ops[1:]:
        if isinstance(op, relay.AddOp) and _shape(op.operands[0]) != _shape(op.operands[1]):
            return "the add broadcasts (a residual add takes two tensors of one shape)"
        if isinstance(op, relay.BiasAddOp) and op.attrs()["axis"] not in (rank - 1, -1):
            return "the bias is not along the last axis"
        if isinstance(op, relay.GeluOp) and op.approximate.data != "none":
            return "gelu is the tanh approximation (the kernel computes the erf form)"
    return None


def batch_matmul_softmax_check(ops: Sequence[Operation]) -> str | None:
    """Attention's scores and their softmax: the softmax along the last axis
    (the rows of each product), run on each product's rows after it."""
    if reason := fused_check(ops):
        return reason
    softmax = ops[1]
    rank = len(_shape(softmax.results[0]))
    if relay.normalize_axis(softmax.attrs()["axis"], rank, softmax.name) != rank - 1:
        return "the softmax is not along the last axis"
    return None


def mask_layout(mask: SSAValue, scores: Sequence[int]) -> tuple[int, int, int] | None:
    """`(group, product stride, row stride)` of an additive attention mask
    added to batch matmul scores of shape [*products, R, S] (numpy
    broadcasting; [B, R, S], or [B, H, R, S] when the products are B batches
    of H heads), as byoc_rt_heads takes it: product p reads the mask at
    (p / group) * product stride, its rows `row stride` apart (0: one row
    for all). The mask may vary along the first products axes only (a mask
    per batch, [B, 1, 1, S]: group H) and along the rows; None when it is
    not such a mask (it varies along the heads but not the batches, is
    broadcast along the keys, or widens the scores)."""
    shape = _shape(mask)
    if len(shape) > len(scores):
        return None
    *outer, rows, keys = (1,) * (len(scores) - len(shape)) + shape
    *products, scores_rows, scores_keys = scores
    if keys != scores_keys or rows not in (1, scores_rows):
        return None
    varying = 0  # the mask follows the first `varying` products axes, then is broadcast
    while varying < len(products) and outer[varying] == products[varying]:
        varying += 1
    if any(size != 1 for size in outer[varying:]):
        return None
    if math.prod(products[:varying]) == 1:
        return 1, 0, (keys if rows > 1 else 0)  # one matrix for every product
    return math.prod(products[varying:]), rows * keys, (keys if rows > 1 else 0)


def batch_matmul_mask_softmax_check(ops: Sequence[Operation]) -> str | None:
    """Attention's scores, an additive mask and their softmax: the mask (the
    add's other operand) broadcast over the products and rows of the scores
    at most (`mask_layout`), and the softmax along the rows, run on each
    product's rows after it with the mask's rows added first."""
    return _masked_softmax_reason(ops[0], ops[0].results[0], ops[1], ops[2])


def batch_matmul_heads_mask_softmax_check(ops: Sequence[Operation]) -> str | None:
    """`batch_matmul_add_softmax` on the scores reshaped to [B, H, R, S] (a
    mask per batch, [B, 1, 1, S], that byoc-simplify cannot move onto the
    3-d scores): the reshape only splits the products."""
    product, reshape = ops[0].results[0], ops[1].results[0]
    if len(_shape(reshape)) < 3 or _shape(reshape)[-2:] != _shape(product)[-2:]:
        return "the reshape changes the scores' rows"
    return _masked_softmax_reason(ops[0], reshape, ops[2], ops[3])


def _masked_softmax_reason(
    product: Operation, scores: SSAValue, add: Operation, softmax: Operation
) -> str | None:
    if reason := batch_matmul_softmax_check([product, softmax]):
        return reason
    if reason := _float32(add):
        return reason
    mask = add.operands[1] if add.operands[0] is scores else add.operands[0]
    if _shape(add.results[0]) != _shape(scores):
        return (
            f"the mask {'x'.join(map(str, _shape(mask)))} widens the scores "
            f"{'x'.join(map(str, _shape(scores)))}"
        )
    if mask_layout(mask, _shape(scores)) is None:
        return (
            f"the mask {'x'.join(map(str, _shape(mask)))} is not broadcast along the "
            f"scores' products and rows only"
        )
    return None


def _composites() -> tuple[Composite, ...]:
    bias, relu, add, clip, gelu = (
        relay.BiasAddOp.name, relay.ReluOp.name, relay.AddOp.name, relay.ClipOp.name,
        relay.GeluOp.name,
    )
    patterns = []
    for product in ("dense", "conv2d"):
        root = f"relay.nn.{product}"
        for suffix, tail in (
            ("bias_relu", (bias, relu)),
            ("bias", (bias,)),
            ("relu", (relu,)),
        ):
            patterns.append(Composite(f"{product}_{suffix}", (root, *tail), fused_check))
    root = relay.Conv2dOp.name
    conv_tails = (
        ("bias_add_relu", (bias, add, relu)),
        ("bias_add_clip", (bias, add, clip)),
        ("bias_add", (bias, add)),
        ("bias_clip", (bias, clip)),
        ("add_relu", (add, relu)),
        ("add_clip", (add, clip)),
        ("add", (add,)),
        ("clip", (clip,)),
    )
    for suffix, tail in conv_tails:
        patterns.append(Composite(f"conv2d_{suffix}", (root, *tail), packed_conv_check, (add,)))
    for suffix, tail in (
        *conv_tails, ("bias_relu", (bias, relu)), ("bias", (bias,)), ("relu", (relu,)), ("", ()),
    ):
        name = f"shuffle_conv2d_{suffix}".rstrip("_")
        patterns.append(Composite(name, (*SHUFFLE_OPS, root, *tail), shuffled_conv_check, (add,)))
    root = relay.DenseOp.name
    for suffix, tail in (
        ("bias_gelu", (bias, gelu)),
        ("bias_add_relu", (bias, add, relu)),
        ("bias_add", (bias, add)),
        ("add_relu", (add, relu)),
        ("add", (add,)),
        ("gelu", (gelu,)),
    ):
        patterns.append(Composite(f"dense_{suffix}", (root, *tail), packed_dense_check, (add,)))
    patterns.append(
        Composite(
            "batch_matmul_softmax",
            (relay.BatchMatmulOp.name, relay.SoftmaxOp.name),
            batch_matmul_softmax_check,
        )
    )
    patterns.append(
        Composite(
            "batch_matmul_add_softmax",
            (relay.BatchMatmulOp.name, add, relay.SoftmaxOp.name),
            batch_matmul_mask_softmax_check,
            (add,),
        )
    )
    patterns.append(
        Composite(
            "batch_matmul_heads_add_softmax",
            (relay.BatchMatmulOp.name, relay.ReshapeOp.name, add, relay.SoftmaxOp.name),
            batch_matmul_heads_mask_softmax_check,
            (add,),
        )
    )
    return tuple(patterns)


COMPOSITES = _composites()
"""dense/conv2d followed by bias_add and/or relu (`dense_bias_relu`, `conv2d_bias`,
...), conv2d followed by a bias, a residual add and relu or clip
(`conv2d_bias_add_relu`, ...), a channel shuffle read by a depthwise conv2d
with any of those epilogues (`shuffle_conv2d`, `shuffle_conv2d_bias`, ...:
ShuffleNet's reshape, transpose and reshape each cost a copy on ccompiler),
dense followed by a bias and gelu or a residual add (`dense_bias_gelu`,
`dense_bias_add`, ...), computed in the pass that writes the output, and a
batch matmul followed by a softmax along its rows (`batch_matmul_softmax`:
attention's scores, each product's rows normalised by the thread that
computed them, in its cache), with an additive attention mask added to the
scores first (`batch_matmul_add_softmax`: transformers' exports; and
`batch_matmul_heads_add_softmax`, the scores reshaped to [B, H, R, S] for a
mask per batch)."""


# ---------------------------------------------------------------------------
# Planning: steps and buffers of one outlined function
# ---------------------------------------------------------------------------


class CodegenError(ByocError):
    """An outlined function the cblas codegen cannot turn into C."""


@dataclass
class Epilogue:
    """Elementwise work done on a step's output in one pass:
    `act(x + bias + residual)`, act relu, clip or gelu (residual and clip:
    conv2d_packed and dense_packed only; gelu: dense_packed only)."""

    bias: SSAValue | None = None
    axis: int = 0
    """The axis of the output the bias is laid along."""
    relu: bool = False
    residual: SSAValue | None = None
    clip: tuple[float, float] | None = None
    gelu: bool = False
    softmax: bool = False
    """Along the rows of a batch_matmul's output (only a mask before it)."""
    mask: SSAValue | None = None
    """An additive attention mask added to a batch_matmul's scores before their
    softmax, read in place (through the reshapes `mask_chain`)."""
    mask_layout: tuple[int, int, int] = (1, 0, 0)
    """The mask's group, product and row strides over the scores (`mask_layout`)."""
    mask_chain: list[Operation] = field(default_factory=list[Operation])

    def __bool__(self) -> bool:
        return (
            self.bias is not None or self.residual is not None or self.mask is not None
            or self.activated
        )

    @property
    def activated(self) -> bool:
        return self.relu or self.clip is not None or self.gelu or self.softmax


@dataclass
class Step:
    """One op computed into a buffer, with the elementwise ops fused after it.

    A product (dense, conv2d, ...) writes `result`'s buffer, then the
    epilogue runs over it in place. A standalone bias_add or relu (one that
    could not be fused) reads `source` and writes `result`'s buffer.
    """

    op: Operation
    result: SSAValue
    epilogue: Epilogue
    source: SSAValue | None = None
    fused: list[Operation] = field(default_factory=list[Operation])
    shuffle: tuple[SSAValue, int] | None = None
    """A depthwise conv2d's data as `(x, g)`: x's channels shuffled in g groups
    (`channel_shuffle`), read in place by the kernel."""
    views: list[tuple[SSAValue, int, int] | None] = field(default_factory=list)
    """A batch matmul's operands read in place through reshapes and transposes
    (`operand_view`: the value read, batch stride, leading dimension), or None."""
    out_view: tuple[int, int] | None = None
    """A batch matmul writing through reshapes and transposes into `result`
    (`result_view`): the batch stride and leading dimension there."""
    scores: Step | None = None
    """A batch matmul by the values whose first operand is this attention
    scores step (queries times keys, softmax), fused: libbyoc's
    byoc_rt_attention computes both products and the softmax between them."""
    pool: Operation | None = None
    """A pool of a conv2d_packed's output (after its epilogue), computed with
    it by byoc_rt_conv2d_pool2d (`_pools_with`); `result` is the pool's."""
    regroup: list[Operation] = field(default_factory=list[Operation])
    """Reshapes splitting a batch matmul's products ([B*H, R, S] scores to
    [B, H, R, S]) before a mask per batch and the softmax fused after them:
    the same bytes, written in place."""

    def reads(self) -> list[SSAValue]:
        chain = {self.op.results[0], *(o.results[0] for o in (*self.fused, *self.regroup))}
        operands = list(self.op.operands)
        if self.shuffle is not None:
            operands[0] = self.shuffle[0]
        for i, view in enumerate(self.views):
            if view is not None:
                operands[i] = view[0]
        if self.scores is not None:
            operands = [*operands[1:], *self.scores.reads()]
        ep = self.epilogue
        masked = {ep.mask_chain[0].results[0]: ep.mask} if ep.mask_chain else {}
        return [
            masked.get(v, v)
            for v in (*operands, *(v for o in self.fused for v in o.operands))
            if v not in chain
        ]

    def describe(self) -> str:
        names = " -> ".join(o.name.removeprefix("relay.") for o in (self.op, *self.fused))
        return f"{names} {'x'.join(map(str, _shape(self.result)))}"


@dataclass
class Scratch:
    """A buffer in the scratch allocation, live from step `start` to step `end`."""

    floats: int
    start: int
    end: int
    offset: int = 0


def _can_fuse(step: Step, op: Operation, uses: int, returned: bool, defined_before) -> bool:
    """Whether `op` (an epilogue op of `step.result`) can run in `step`'s epilogue:
    in order bias, residual add, activation; add and clip after libbyoc's kernels
    only (conv2d_packed, depthwise conv2d, dense_packed), gelu after dense_packed."""
    if uses != 1 or returned:
        return False  # someone needs the value before the epilogue
    ep = step.epilogue
    if isinstance(op, relay.SoftmaxOp):
        rank = len(_shape(op.results[0]))
        along_rows = relay.normalize_axis(op.attrs()["axis"], rank, op.name) == rank - 1
        only_mask = ep.mask is not None and not ep.activated
        return isinstance(step.op, relay.BatchMatmulOp) and (not ep or only_mask) and along_rows
    if isinstance(step.op, relay.BatchMatmulOp):  # an attention mask (checked on adding it)
        return op.name == relay.AddOp.name and not ep and op.operands[0] is step.result
    if op.name == relay.ReluOp.name:
        return not ep.activated
    dense = isinstance(step.op, relay.DensePackedOp)
    packed = dense or isinstance(step.op, relay.Conv2dPackedOp) or is_depthwise(step.op)
    if isinstance(op, relay.GeluOp):
        return dense and not ep.activated and op.approximate.data == "none"
    if op.name == relay.ClipOp.name:
        return packed and not ep.activated
    other = op.operands[1]
    if op.name == relay.AddOp.name:
        return (
            packed
            and ep.residual is None
            and not ep.activated
            and op.operands[0] is step.result
            and _shape(other) == _shape(step.result)
            and defined_before(other, step.op)
        )
    rank = len(_shape(step.result))
    along_last = op.attrs()["axis"] in (rank - 1, -1)
    return ep.bias is None and ep.residual is None and not ep.activated and (
        defined_before(other, step.op)
    ) and (along_last or not dense)


def plan_steps(
    function: func.FuncOp,
) -> tuple[list[Step], dict[SSAValue, SSAValue], dict[SSAValue, tuple[SSAValue, int, int]]]:
    """The steps of an outlined function, with bias_add and relu fused where
    possible, and its returned views (`_check_shuffles`)."""
    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise CodegenError(f"error: @{function.sym_name.data} does not end in func.return")
    returned = set(ret.operands)
    position = {op: i for i, op in enumerate(block.ops)}

    def defined_before(value: SSAValue, op: Operation) -> bool:
        owner = value.owner
        return not isinstance(owner, Operation) or position[owner] < position[op]

    steps: list[Step] = []
    open_steps: dict[SSAValue, Step] = {}
    shuffles: list[Operation] = []
    for op in block.ops:
        if op is ret:
            break
        if isinstance(op, relay.ConstantOp):
            continue  # a static array (FunctionEmitter.constants)
        if op.name in SHUFFLE_OPS:
            shuffles.append(op)  # read in place by a depthwise conv (checked below)
            continue
        if op.name in EPILOGUE_OPS:
            source = op.operands[0]
            step = open_steps.pop(source, None)
            if step is not None and _can_fuse(
                step, op, len(list(source.uses)), source in returned, defined_before
            ) and _add_epilogue(step.epilogue, op, step.op, defined_before):
                step.fused.append(op)
                step.result = op.results[0]
                open_steps[step.result] = step
                continue
            if op.name not in (relay.BiasAddOp.name, relay.ReluOp.name):
                raise CodegenError(
                    f"error: cblas computes '{op.name}' only in the epilogue of a "
                    f"conv2d_packed or dense_packed, or softmax right after a "
                    f"batch_matmul (@{function.sym_name.data})"
                )
            step = Step(op, op.results[0], Epilogue(), source=source)
            _add_epilogue(step.epilogue, op)
        elif op.operands and (conv := open_steps.get(op.operands[0])) is not None and _pools_with(
            conv, op, len(list(op.operands[0].uses)), op.operands[0] in returned
        ):
            del open_steps[op.operands[0]]  # nothing fuses after the pool
            conv.pool = op
            conv.fused.append(op)
            conv.result = op.results[0]
            continue
        elif op.name in KERNEL_CHECKS:
            step = Step(op, op.results[0], Epilogue())
            if is_depthwise(op):
                step.shuffle = channel_shuffle(op.operands[0])
            if isinstance(op, relay.BatchMatmulOp):
                inside = lambda o: o.parent is block  # noqa: E731
                step.views = [operand_view(v, inside) for v in op.operands]
                if (out := result_view(op.results[0], inside)) is not None:
                    step.result, step.out_view = out[0], out[1:]
                    if _regroups_scores(op, out):
                        step.regroup = _view_chain(step.result, op.results[0])
                        step.out_view = None  # a mask and a softmax fuse after it
                    else:
                        steps.append(step)  # nothing fuses after it
                        continue
        else:
            raise CodegenError(
                f"error: cblas cannot generate code for '{op.name}' in "
                f"@{function.sym_name.data}; it takes "
                f"{', '.join(sorted(KERNEL_CHECKS))} and, after them, "
                f"{', '.join(EPILOGUE_OPS)}"
            )
        steps.append(step)
        open_steps[step.result] = step
    for step in steps:
        if step.epilogue.mask is not None and not step.epilogue.softmax:
            raise CodegenError(
                f"error: cblas adds an attention mask to a batch_matmul's scores only "
                f"before their softmax (@{function.sym_name.data})"
            )
    aliases, views = _check_shuffles(function, shuffles, steps, returned)
    return _fuse_attention(steps, returned), aliases, views


def _regroups_scores(product: Operation, out: tuple[SSAValue, int, int]) -> bool:
    """Whether `out` (the end of `product`'s result view) is the scores with
    their products split by reshapes alone (the same bytes), read only by the
    add of an attention mask: `batch_matmul_heads_add_softmax`."""
    end, batch_stride, ld = out
    batch, rows, keys = _shape(product.results[0])
    return (
        _only_reshapes(end)
        and _shape(end)[-2:] == (rows, keys)
        and (batch_stride in (0, rows * keys)) and ld == keys
        and isinstance(_single_use(end), relay.AddOp)
    )


def _fuse_attention(steps: list[Step], returned: set[SSAValue]) -> list[Step]:
    """Each batch matmul reading, as its first operand, the result of the
    `batch_matmul_softmax` step just before it and nothing else does takes
    that step in (`Step.scores`): attention's heads, `softmax(q k^T) v`."""
    fused: list[Step] = []
    for step in steps:
        prev = fused[-1] if fused else None
        if prev is not None and _is_attention(prev, step, returned):
            step.scores = prev
            fused[-1] = step
        else:
            fused.append(step)
    return fused


def _is_attention(scores: Step, step: Step, returned: set[SSAValue]) -> bool:
    """Whether `scores` (`batch_matmul -> softmax`) and `step` (a batch matmul
    by the values) are `softmax(q k^T) v` per batch, as byoc_rt_attention
    computes it: no transposed queries, scores nor values, one batch size."""
    first, second = scores.op, step.op
    if not (
        isinstance(first, relay.BatchMatmulOp)
        and isinstance(second, relay.BatchMatmulOp)
        and scores.epilogue.softmax
        and scores.out_view is None
        and not step.epilogue
        and _first_operand(step) is scores.result
        and len(list(scores.result.uses)) == 1
        and scores.result not in returned
    ):
        return False
    one, two = first.attrs(), second.attrs()
    if one["transpose_a"] or not one["transpose_b"] or two["transpose_a"] or two["transpose_b"]:
        return False
    batch = _shape(second.results[0])[0]
    return all(_shape(v)[0] == batch for v in (*first.operands, *second.operands))


def _first_operand(step: Step) -> SSAValue:
    """A batch matmul step's first operand, or the value it reads in place
    if that is the same bytes (reshapes alone: [B, H, R, S] probabilities)."""
    value = step.op.operands[0]
    if step.views and step.views[0] is not None and _only_reshapes(value):
        return step.views[0][0]
    return value


def _view_chain(value: SSAValue, end: Step | SSAValue) -> list[Operation]:
    """The reshapes and transposes between `value` and `end` (a value, or a
    step's batch matmul)."""
    stop = end.op.results[0] if isinstance(end, Step) else end
    chain = []
    while value is not stop and isinstance(value.owner, VIEW_OPS):
        chain.append(value.owner)
        value = value.owner.operands[0]
    return chain


POOL_WITH_CONV_BYTES = 512 * 1024
"""A conv's output from this size on is pooled with it, a band of rows at a
time in cache (`_pools_with`)."""


def _pools_with(step: Step, op: Operation, uses: int, returned: bool) -> bool:
    """Whether `op` pools `step`'s conv2d_packed in one libbyoc call
    (byoc_rt_conv2d_pool2d), the conv's output never written whole: a max or
    average pool with column stride 2 and a kernel of at most 3x3 (what
    byoc_rt_pool2d computes a row at a time in registers), the only reader of
    a COLUMNS conv's output of one group, no residual, at least
    POOL_WITH_CONV_BYTES. SqueezeNet's first conv (3->64, 3x3 stride 2)
    wrote 3.2 MB, more than a core's L2, that its max pool read back: each
    line was fetched from L3 or memory to be written, and again to be read."""
    conv = step.op
    if not isinstance(op, relay.MaxPool2dOp | relay.AvgPool2dOp) or uses != 1 or returned:
        return False
    if not isinstance(conv, relay.Conv2dPackedOp) or step.epilogue.residual is not None:
        return False
    attrs, pool = conv.attrs(), op.attrs()
    if attrs.get("kernel_layout") != "OIHW32o" or attrs["groups"] != 1 or pool_check(op):
        return False
    kh, kw = pool["pool_size"]  # type: ignore[misc]
    _, sw = pool["strides"]  # type: ignore[misc]
    size = _shape(step.result)
    large = math.prod(size) * 4 >= POOL_WITH_CONV_BYTES
    return sw == 2 and 2 <= kw <= 3 and kh <= 3 and size[3] > 32 and large


def _check_shuffles(
    function: func.FuncOp, ops: list[Operation], steps: list[Step], returned: set[SSAValue]
) -> tuple[dict[SSAValue, SSAValue], dict[SSAValue, tuple[SSAValue, int, int]]]:
    """Every reshape and transpose of the function must be a channel shuffle
    read only by a depthwise conv2d (which reads its input in place), a batch
    matmul's view, or a view only returned: nothing gets a buffer for their
    results. Returns the returned reshapes' results, each mapped to the value
    it reshapes, and the other returned views: `(x, batch stride, leading
    dimension)` of their [B, R, C] matrices' rows in x (`operand_view`)."""
    read_in_place: set[Operation] = set()
    for step in steps:
        for operand, view in zip(step.op.operands, step.views):
            if view is not None:
                read_in_place.update(_view_chain(operand, step))
        if step.out_view is not None:
            read_in_place.update(_view_chain(step.result, step))
        read_in_place.update(step.epilogue.mask_chain)
        read_in_place.update(step.regroup)
        if step.shuffle is None:
            continue
        last = step.op.operands[0].owner
        assert isinstance(last, Operation)
        middle = last.operands[0].owner
        assert isinstance(middle, Operation)
        chain = (last, middle, middle.operands[0].owner)
        if all(
            len(list(o.results[0].uses)) == 1 and o.results[0] not in returned
            for o in chain
            if isinstance(o, Operation)
        ):
            read_in_place.update(o for o in chain if isinstance(o, Operation))
        else:
            step.shuffle = None
    aliases: dict[SSAValue, SSAValue] = {}
    views: dict[SSAValue, tuple[SSAValue, int, int]] = {}
    block = function.body.block
    for op in reversed(ops):  # a view's readers are decided before it
        if op in read_in_place:
            continue
        result = op.results[0]
        only_returned = all(isinstance(use.operation, func.ReturnOp) for use in result.uses)
        if (
            only_returned
            and not _only_reshapes(result)
            and (view := operand_view(result, lambda o: o.parent is block)) is not None
        ):
            # The values' heads split by a transpose, in a region apart from
            # their batch matmul: their matrices are copied out row by row.
            views[result] = view
            read_in_place.update(_view_chain(result, view[0]))
            continue
        if isinstance(op, relay.ReshapeOp) and all(
            isinstance(use.operation, func.ReturnOp) or use.operation.results[0] in aliases
            for use in result.uses
        ):
            # Merging may leave a reshape in a region apart from the batch
            # matmul it was taken for (an attention mask split the graph): a
            # reshape keeps the bytes in order, so the value it reshapes is
            # written to (or copied into) the returned buffer.
            aliases[result] = op.operands[0]
            continue
        raise CodegenError(
            f"error: cblas computes '{op.name}' only in a channel shuffle a depthwise "
            f"conv2d reads, as a batch matmul's operand or result read or written "
            f"in place, or in a view the function returns (@{function.sym_name.data})"
        )
    return aliases, views


def _only_reshapes(value: SSAValue) -> bool:
    """Whether `value` is a chain of reshapes alone (or no view at all)."""
    while isinstance(value.owner, VIEW_OPS):
        if not isinstance(value.owner, relay.ReshapeOp):
            return False
        value = value.owner.operands[0]
    return True


def _add_epilogue(
    epilogue: Epilogue, op: Operation, product: Operation | None = None, defined_before=None
) -> bool:
    """Records `op` in `epilogue`; whether it could (an attention mask after a
    batch matmul: one it reads in place, defined before the product)."""
    if isinstance(product, relay.BatchMatmulOp) and isinstance(op, relay.AddOp):
        mask, chain = op.operands[1], []
        while isinstance(mask.owner, relay.ReshapeOp) and len(list(mask.uses)) == 1:
            chain.append(mask.owner)  # a reshape keeps the bytes in order: read in place
            mask = mask.owner.operands[0]
        layout = mask_layout(op.operands[1], _shape(op.results[0]))
        if layout is None or (defined_before is not None and not defined_before(mask, product)):
            return False
        epilogue.mask, epilogue.mask_layout, epilogue.mask_chain = mask, layout, chain
        return True
    if op.name == relay.ReluOp.name:
        epilogue.relu = True
    elif isinstance(op, relay.SoftmaxOp):
        epilogue.softmax = True
    elif isinstance(op, relay.GeluOp):
        epilogue.gelu = True
    elif isinstance(op, relay.ClipOp):
        attrs = op.attrs()
        epilogue.clip = (float(attrs["a_min"]), float(attrs["a_max"]))
    elif isinstance(op, relay.AddOp):
        epilogue.residual = op.operands[1]
    else:
        assert isinstance(op, relay.BiasAddOp)
        axis = op.attrs()["axis"]
        assert isinstance(axis, int)
        epilogue.bias = op.operands[1]
        epilogue.axis = relay.normalize_axis(axis, len(_shape(op.results[0])), op.name)
    return True


def _aligned(floats: int) -> int:
    per_line = ALIGNMENT // 4
    return -(-floats // per_line) * per_line


def pack(buffers: Sequence[Scratch]) -> int:
    """Give each buffer an offset so that buffers live at once never overlap.

    Greedy, largest first, each at the lowest offset that fits; returns the
    total size in floats.
    """
    placed: list[Scratch] = []
    for buffer in sorted(buffers, key=lambda b: -b.floats):
        size = _aligned(buffer.floats)
        live = sorted(
            (p for p in placed if p.start <= buffer.end and buffer.start <= p.end),
            key=lambda p: p.offset,
        )
        offset = 0
        for other in live:
            if offset + size <= other.offset:
                break
            offset = max(offset, other.offset + _aligned(other.floats))
        buffer.offset = offset
        placed.append(buffer)
    return max((p.offset + _aligned(p.floats) for p in placed), default=0)


def _writes_over_residual(step: Step, residual: Scratch | None, out: Scratch | None, t: int) -> bool:
    """Whether `step` may write its output over its residual's scratch buffer: a
    libbyoc convolution (it reads each residual element only where it writes
    the output element) whose residual is a scratch buffer of the output's
    size read for the last time here, and not also the convolution's input."""
    return (
        isinstance(step.op, relay.Conv2dPackedOp)
        and residual is not None
        and out is not None
        and residual.end == t
        and residual.floats == out.floats
        and step.epilogue.residual not in step.op.operands
    )


def _im2col_floats(step: Step) -> int:
    """Floats of the im2col buffer of a conv2d step, 0 if it reads its input directly."""
    op = step.op
    if not isinstance(op, relay.Conv2dOp) or _direct_conv(op) or is_depthwise(op):
        return 0
    _, channels, _, _ = _shape(op.operands[0])
    _, _, kh, kw = _shape(op.operands[1])
    _, _, oh, ow = _shape(op.results[0])
    return channels * kh * kw * oh * ow


def _direct_conv(op: relay.Conv2dOp) -> bool:
    """A 1x1, stride-1, unpadded conv: its input already is the GEMM's B matrix."""
    attrs = op.attrs()
    _, _, kh, kw = _shape(op.operands[1])
    return (
        (kh, kw) == (1, 1)
        and attrs["strides"] == (1, 1)
        and not any(relay.normalize_padding(attrs["padding"], op.name))  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------
# Building emitc
# ---------------------------------------------------------------------------

F32_PTR = EmitC_PointerType(f32)
CONV_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const byoc_rt_conv")))
PRODUCT_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const byoc_rt_product")))
POOL_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const byoc_rt_pool")))
HEADS_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const byoc_rt_heads")))

LIBBYOC_LAYOUTS = {"OIHW8o": 0, "OIHW32o": 1, "winograd8o": 2, "winograd4x4_8o": 3}
"""conv2d_packed's kernel layouts as byoc_runtime.h numbers them (ROWS, COLUMNS, WINOGRAD)."""


def _activation(epilogue: Epilogue) -> tuple[int, float, float]:
    """The epilogue's activation as libbyoc's kernels take it: BYOC_RT_LINEAR,
    RELU, CLIP (with its bounds) or GELU, numbered as in byoc_runtime.h."""
    if epilogue.relu:
        return 1, 0.0, 0.0
    if epilogue.clip is not None:
        return 2, *epilogue.clip
    if epilogue.gelu:
        return 3, 0.0, 0.0
    return 0, 0.0, 0.0


def _c_float(value: float) -> str:
    """A C float literal of exactly `value` (hexadecimal, so nothing rounds)."""
    if math.isinf(value):
        return "__builtin_inff()" if value > 0 else "-__builtin_inff()"
    if math.isnan(value):
        return "__builtin_nanf(\"\")"
    return f"{float(value).hex()}f"

CONST_F32_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const float")))
VOID_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("void")))


@dataclass(frozen=True)
class Affine:
    """An `int64_t` index `const + sum(coeff * var)`, folded at codegen time."""

    terms: tuple[tuple[SSAValue, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(value: SSAValue) -> Affine:
        return Affine(((value, 1),))

    def __add__(self, other: Affine | int) -> Affine:
        if isinstance(other, int):
            return Affine(self.terms, self.const + other)
        coeffs = dict(self.terms)
        for v, k in other.terms:
            coeffs[v] = coeffs.get(v, 0) + k
        return Affine(tuple((v, k) for v, k in coeffs.items() if k), self.const + other.const)

    __radd__ = __add__

    def __mul__(self, k: int) -> Affine:
        if k == 0:
            return Affine()
        return Affine(tuple((v, c * k) for v, c in self.terms), self.const * k)

    __rmul__ = __mul__

    def __sub__(self, other: Affine | int) -> Affine:
        return self + other * -1

    def __rsub__(self, other: int) -> Affine:
        return self * -1 + other


Index = Affine | int


@dataclass(frozen=True)
class Ref:
    """A place in a buffer: a pointer parameter or the scratch base, plus an offset.

    Loops index the root pointer itself; only sgemm's arguments become pointer
    expressions, typed `const float*` when derived from an input.
    """

    root: SSAValue
    offset: Affine = Affine()
    readonly: bool = False

    def at(self, index: Index) -> Ref:
        return Ref(self.root, self.offset + index, self.readonly)


class Builder:
    """Appends emitc ops at the end of the current block."""

    def __init__(self, block: Block):
        self.block = block
        self.parallel = False
        """Whether a loop was marked to run on the pool."""

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    def i64(self, value: int) -> SSAValue:
        return self.value(EmitC_ConstantOp(IntegerAttr(value, i64)))

    def f32(self, value: float) -> SSAValue:
        return self.value(EmitC_ConstantOp(FloatAttr(value, f32)))

    def index(self, index: Index) -> SSAValue:
        """The C expression of an index: products of loop variables, then the constant."""
        if isinstance(index, int):
            return self.i64(index)
        total: SSAValue | None = None
        const = index.const
        # Added terms first, then the subtracted ones: `(v5 - v4) * 8` reads `v5 * 8 - v4 * 8`.
        for var, coeff in sorted(index.terms, key=lambda term: term[1] < 0):
            size = abs(coeff)
            term = var if size == 1 else self.value(EmitC_MulOp(var, self.i64(size), i64))
            if coeff > 0:
                total = term if total is None else self.value(EmitC_AddOp(total, term, i64))
                continue
            if total is None:
                total, const = self.i64(const), 0
            total = self.value(EmitC_SubOp(total, term, i64))
        if total is None:
            return self.i64(const)
        if const > 0:
            total = self.value(EmitC_AddOp(total, self.i64(const), i64))
        elif const < 0:
            total = self.value(EmitC_SubOp(total, self.i64(-const), i64))
        return total

    def lvalue(self, ref: Ref, index: Index) -> SSAValue:
        return self.value(EmitC_SubscriptOp(ref.root, [self.index(ref.offset + index)]))

    def load(self, ref: Ref, index: Index) -> SSAValue:
        return self.value(EmitC_LoadOp(self.lvalue(ref, index)))

    def store(self, ref: Ref, index: Index, value: SSAValue) -> None:
        self.add(EmitC_AssignOp(self.lvalue(ref, index), value))

    def pointer(self, ref: Ref) -> SSAValue:
        """`root + offset` as a pointer value."""
        if not ref.offset.terms and ref.offset.const == 0:
            return ref.root
        typ = CONST_F32_PTR if ref.readonly else F32_PTR
        return self.value(EmitC_AddOp(ref.root, self.index(ref.offset), typ))

    def call(
        self, callee: str, operands: Sequence[SSAValue], args: Sequence[Attribute] | None = None,
        results: Sequence[Attribute] = (),
    ) -> Operation:
        return self.add(
            EmitC_CallOpaqueOp(
                callee, operands, results, args=ArrayAttr(args) if args is not None else None
            )
        )

    def comment(self, text: str) -> None:
        self.add(EmitC_VerbatimOp(f"// {text}"))

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        outer, self.block = self.block, block
        try:
            yield
        finally:
            block.add_op(EmitC_YieldOp())
            self.block = outer

    @contextmanager
    def loop(self, stop: int, start: int = 0, parallel: bool = False) -> Iterator[Index]:
        """`for (int64_t i = start; i < stop; i += 1)`; no loop for one iteration.

        `parallel`: a loop on libbyoc's pool (marked `byoc.parallel`) when there is a loop.
        """
        if stop - start == 1:
            yield start
            return
        with self.span(start, stop, parallel) as i:
            yield i

    @contextmanager
    def span(self, start: Index, stop: Index, parallel: bool = False) -> Iterator[Affine]:
        """`for (int64_t i = start; i < stop; i += 1)` with bounds known at run time."""
        body = Block(arg_types=[i64])
        bounds = self.index(start), self.index(stop), self.i64(1)
        loop = EmitC_ForOp(*bounds, Region(body))
        if parallel:
            mark_parallel(loop)
            self.parallel = True
        self.add(loop)
        with self.inside(body):
            yield Affine.of(body.args[0])

    def branch(self, condition: SSAValue) -> tuple[Block, Block]:
        """`if (condition) {...} else {...}`: the two blocks to fill with `inside`."""
        then_block, else_block = Block(), Block()
        self.add(EmitC_IfOp(condition, Region(then_block), Region(else_block)))
        return then_block, else_block


def _opaque(text: str) -> EmitC_OpaqueAttr:
    return EmitC_OpaqueAttr(StringAttr(text))


def _blas_int(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _operand(index: int) -> IntegerAttr:
    """In `emitc.call_opaque` args: the call's `index`-th operand."""
    return IntegerAttr(index, IndexType())


@dataclass(frozen=True)
class Gemm:
    """`C = op(A) op(B)`, row-major: op(A) is m x k, op(B) k x n, C m x n.

    `m` and `n` are Affine for a block whose size is known at run time (the
    chunk of a thread).
    """

    a: Ref
    b: Ref
    c: Ref
    trans_a: bool
    trans_b: bool
    m: Index
    n: Index
    k: int
    lda: int
    ldb: int
    ldc: int

    def columns(self, start: Index, stop: Index) -> Gemm:
        """Columns [start, stop) of C: those of B (rows, if B is stored transposed)."""
        return replace(
            self,
            b=self.b.at(start * self.ldb if self.trans_b else start),
            c=self.c.at(start),
            n=stop - start,
        )

    def rows(self, start: Index, stop: Index) -> Gemm:
        """Rows [start, stop) of C: those of A (columns, if A is stored transposed)."""
        return replace(
            self,
            a=self.a.at(start if self.trans_a else start * self.lda),
            c=self.c.at(start * self.ldc),
            m=stop - start,
        )

    def shifted(self, i: Index, strides: tuple[int, int, int]) -> Gemm:
        """The product `i` of a batch whose A, B and C are `strides` floats apart."""
        sa, sb, sc = strides
        return replace(self, a=self.a.at(i * sa), b=self.b.at(i * sb), c=self.c.at(i * sc))


@dataclass(frozen=True)
class BlockEpilogue:
    """An epilogue over a matrix [rows, columns], with the bias along one of them."""

    bias: Ref | None
    on_rows: bool
    relu: bool


@dataclass(frozen=True)
class Mask:
    """An attention mask over batch matmul scores: where it is, and its
    strides over the scores' products and rows (0 where broadcast)."""

    ref: Ref
    group: int
    """Products sharing one matrix of the mask (`mask_layout`)."""
    product_stride: int
    row_stride: int


def _size(index: Index) -> int | None:
    """`index` if it is known at codegen time."""
    if isinstance(index, int):
        return index
    return None if index.terms else index.const


class FunctionEmitter:
    """Builds the `emitc.func` of one outlined function from its plan.

    With `parallel`, products of at least PARALLEL_MIN_WORK multiply-adds are
    split across threads; `uses_pool` tells whether any was.
    """

    def __init__(self, function: func.FuncOp, parallel: bool = False):
        self.function = function
        self.parallel = parallel
        self.steps, aliases, views = plan_steps(function)
        block = function.body.block
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.returns = list(ret.operands)
        constants = [op.results[0] for op in block.ops if isinstance(op, relay.ConstantOp)]
        for value in (*block.args, *self.returns, *constants):
            typ = value.type
            if not isinstance(typ, TensorType) or typ.element_type != f32:
                raise CodegenError(
                    f"error: cblas takes float32 tensors; @{function.sym_name.data} "
                    f"has a value of type {typ}"
                )
        n_in, n_out = len(block.args), len(self.returns)
        self.body = Block(arg_types=[F32_PTR] * (n_in + n_out))
        self.b = Builder(self.body)
        self.refs: dict[SSAValue, Ref] = {
            arg: Ref(param, readonly=True) for arg, param in zip(block.args, self.body.args)
        }
        self.globals: list[Operation] = []
        self.uses_libbyoc = False
        """Whether the C calls libbyoc (byoc_runtime.h)."""
        self.constants(block)
        self.copies: list[tuple[Ref, SSAValue]] = []
        self.view_copies: dict[SSAValue, list[tuple[Ref, SSAValue, int, int]]] = {}
        """Returned views copied out of the value they view, by that value:
        (output, view, batch stride, leading dimension)."""
        for i, value in enumerate(self.returns):
            out = Ref(self.body.args[n_in + i])
            while value in aliases:  # a returned reshape: the bytes of what it reshapes
                value = aliases[value]
            if value in views:
                source, batch_stride, ld = views[value]
                self.view_copies.setdefault(source, []).append((out, value, batch_stride, ld))
                continue
            if value in self.refs:
                self.copies.append((out, value))  # an input, or returned twice
            else:
                self.refs[value] = out
        self.scratch, self.columns = self._layout()
        distinct = {id(b): b for b in self.scratch.values()}  # shared by a residual and an output
        self.scratch_floats = pack([*distinct.values(), *self.columns.values()])

    def constants(self, block: Block) -> None:
        """Each `relay.constant` of the function (small ones the partitioner copied
        in) becomes a `static const float` array, read through a pointer."""
        for op in block.ops:
            if not isinstance(op, relay.ConstantOp):
                continue
            values = op.to_numpy().astype("<f4").ravel()
            array = EmitC_ArrayType([max(values.size, 1)], f32)
            name = f"{self.function.sym_name.data}_constant_{len(self.globals)}"
            initial = DenseIntOrFPElementsAttr(
                TensorType(f32, array.get_shape()), BytesAttr(values.tobytes())
            )
            self.globals.append(EmitC_GlobalOp(name, array, initial, static=True, const=True))
            pointer = self.b.value(
                EmitC_CastOp(self.b.value(EmitC_GetGlobalOp(name, array)), F32_PTR)
            )
            self.refs[op.result] = Ref(pointer, readonly=True)

    def _layout(self) -> tuple[dict[SSAValue, Scratch], dict[int, Scratch]]:
        """Scratch buffers of the intermediates and of im2col, with their lifetimes."""
        produced_at = {step.result: t for t, step in enumerate(self.steps)}
        values: dict[SSAValue, Scratch] = {}
        for value, t in produced_at.items():
            if value not in self.refs:
                values[value] = Scratch(math.prod(_shape(value)), t, t)
        for t, step in enumerate(self.steps):
            for value in step.reads():
                if value in values:
                    values[value].end = max(values[value].end, t)
        for t, step in enumerate(self.steps):
            residual = step.epilogue.residual
            if _writes_over_residual(step, values.get(residual), values.get(step.result), t):
                # The output takes the buffer of a residual read last here: each
                # output element is computed where its residual was read, in
                # cache, instead of in lines first fetched from memory to be
                # written (onnxruntime sums into the residual's buffer too).
                # ResNet-50's 64->256 1x1 convs at 56x56 in the model (1 thread,
                # CPU time, minimum of 23 calls): 1.10-1.23 -> 1.02-1.04 ms.
                shared = values[residual]
                shared.end = max(shared.end, values[step.result].end)
                values[step.result] = shared
        im2col = {
            t: Scratch(floats, t, t)
            for t, step in enumerate(self.steps)
            if (floats := _im2col_floats(step))
        }
        return values, im2col

    def emit(self) -> EmitC_FuncOp:
        b = self.b
        base: SSAValue | None = None
        self.base = None
        if self.scratch_floats:
            nbytes = self.scratch_floats * 4
            raw = b.call(
                "aligned_alloc", [], [IntegerAttr(ALIGNMENT, i64), IntegerAttr(nbytes, i64)],
                [VOID_PTR],
            ).results[0]
            base = b.value(EmitC_CastOp(raw, F32_PTR))
            null = b.value(EmitC_LiteralOp("NULL", F32_PTR))
            failed = b.value(EmitC_CmpOp("eq", base, null))
            # Out of memory: record the size for the error, return ALLOCATION_FAILED.
            failed_bytes = f"{self.function.sym_name.data}_failed_bytes"
            self.globals.append(EmitC_GlobalOp(failed_bytes, i64, IntegerAttr(0, i64)))
            b.add(
                EmitC_VerbatimOp(
                    f"if ({{}}) {{{{ {failed_bytes} = {nbytes}; return {ALLOCATION_FAILED}; }}",
                    [failed],
                )
            )
            self.base = base
            for value, buffer in self.scratch.items():
                self.refs[value] = Ref(base, Affine(const=buffer.offset))
        produced = {step.result for step in self.steps}
        for source in self.view_copies:
            if source not in produced:  # an input: copied first
                self._copy_views(source)
        for t, step in enumerate(self.steps):
            b.comment(step.describe())
            col = self.columns.get(t)
            col_ref = Ref(base, Affine(const=col.offset)) if col is not None and base is not None else None
            self._step(step, col_ref)
            if step.result in self.view_copies:  # while its buffer holds it
                self._copy_views(step.result)
        for out, value in self.copies:
            size = math.prod(_shape(value)) * 4
            b.call(
                "memcpy",
                [out.root, b.pointer(self.refs[value])],
                [_operand(0), _operand(1), IntegerAttr(size, i64)],
            )
        if base is not None:
            b.call("free", [base])
        b.add(EmitC_ReturnOp(b.value(EmitC_ConstantOp(IntegerAttr(0, i32)))))
        n_in = len(self.function.body.block.args)
        arg_attrs = [
            DictionaryAttr(
                {CONST_ATTR: UnitAttr(), RESTRICT_ATTR: UnitAttr()}
                if i < n_in
                else {RESTRICT_ATTR: UnitAttr()}
            )
            for i in range(len(self.body.args))
        ]
        return EmitC_FuncOp(
            self.function.sym_name.data,
            FunctionType.from_lists([F32_PTR] * len(self.body.args), [i32]),
            Region(self.body),
            arg_attrs=ArrayAttr(arg_attrs),
        )

    def _copy_views(self, source: SSAValue) -> None:
        """Each returned view of `source`: its [B, R, C] matrices, a row at a time."""
        b = self.b
        for out, value, batch_stride, ld in self.view_copies[source]:
            batch, rows, cols = _shape(value)
            b.comment(f"a returned view of {batch}x{rows}x{cols}, rows {ld} apart")
            with b.loop(batch) as i, b.loop(rows) as r:
                b.call(
                    "memcpy",
                    [
                        b.pointer(out.at(Affine() + i * (rows * cols) + r * cols)),
                        b.pointer(self.refs[source].at(Affine() + i * batch_stride + r * ld)),
                    ],
                    [_operand(0), _operand(1), IntegerAttr(cols * 4, i64)],
                )

    # -- steps ----------------------------------------------------------------

    @property
    def uses_pool(self) -> bool:
        return self.b.parallel

    def _step(self, step: Step, col: Ref | None) -> None:
        op = step.op
        out = self.refs[step.result]
        shape = _shape(step.result)
        block = self._block_epilogue(step.epilogue, shape)
        if isinstance(op, relay.DenseOp):
            done = self._dense(op, out, block)
        elif isinstance(op, relay.MatmulOp):
            done = self._matmul(op, out, block)
        elif step.scores is not None:
            self._attention(step, out)
            return
        elif isinstance(op, relay.BatchMatmulOp) and (step.epilogue.softmax or step.out_view):
            softmax, mask = step.epilogue.softmax, self._mask(step)
            self._batch_matmul(op, out, None, step, softmax=softmax, mask=mask)
            return  # each product's rows normalised after it; no epilogue after a view
        elif isinstance(op, relay.BatchMatmulOp):
            done = self._batch_matmul(op, out, block, step)
        elif isinstance(op, relay.Conv2dOp) and is_depthwise(op):
            self._libbyoc_conv("byoc_rt_depthwise_conv2d", op, out, step.epilogue, step.shuffle)
            return  # the kernel applies the epilogue
        elif isinstance(op, relay.Conv2dOp):
            self._conv2d(op, out, col, step.epilogue)
            return  # applies its epilogue image by image
        elif isinstance(op, relay.Conv2dPackedOp) and step.pool is not None:
            self._libbyoc_conv_pool(op, step.pool, out, step.epilogue)  # type: ignore[arg-type]
            return  # the kernel applies the epilogue, then pools
        elif isinstance(op, relay.Conv2dPackedOp):
            self._libbyoc_conv("byoc_rt_conv2d", op, out, step.epilogue)
            return  # the kernel applies the epilogue
        elif isinstance(op, relay.DensePackedOp):
            self._libbyoc_dense(op, out, step.epilogue)
            return  # the kernel applies the epilogue
        elif isinstance(op, relay.MaxPool2dOp | relay.AvgPool2dOp | relay.GlobalAvgPool2dOp):
            self._libbyoc_pool(op, out)
            return
        elif isinstance(op, relay.LayerNormOp):
            self._libbyoc_layer_norm(op, out)
            return
        else:
            assert step.source is not None
            self.epilogue(self.refs[step.source], out, shape, step.epilogue)
            return
        if not done:
            self.epilogue(out, out, shape, step.epilogue)

    def _block_epilogue(self, epilogue: Epilogue, shape: Sequence[int]) -> BlockEpilogue | None:
        """`epilogue` over `shape` seen as a matrix [prod(shape[:-1]), shape[-1]], if it
        can be: no bias, or a bias along the last axis or along the only long leading one.
        None when there is nothing to do or the bias runs along another axis."""
        if not epilogue:
            return None
        if epilogue.bias is None:
            return BlockEpilogue(None, False, epilogue.relu)
        bias, axis = self.refs[epilogue.bias], epilogue.axis
        if axis == len(shape) - 1:
            return BlockEpilogue(bias, False, epilogue.relu)
        if all(size == 1 for i, size in enumerate(shape[:-1]) if i != axis):
            return BlockEpilogue(bias, True, epilogue.relu)
        return None

    # -- BLAS calls -----------------------------------------------------------

    def blas(self, g: Gemm) -> None:
        """One call: sgemv when C is one row or one column, else sgemm."""
        b = self.b
        a_ptr, b_ptr, c_ptr = (b.pointer(ref) for ref in (g.a, g.b, g.c))
        trans = lambda t: _opaque("CblasTrans" if t else "CblasNoTrans")  # noqa: E731
        one, zero = FloatAttr(1.0, f32), FloatAttr(0.0, f32)
        args: list[Attribute | SSAValue]
        if _size(g.m) == 1:  # c[0, :] = a[0, :] op(B): x is A's only row (a column if stored transposed)
            incx = g.lda if g.trans_a else 1
            rows, cols = (g.n, g.k) if g.trans_b else (g.k, g.n)
            args = [
                _opaque("CblasRowMajor"), trans(not g.trans_b), rows, cols,
                one, b_ptr, g.ldb, a_ptr, incx, zero, c_ptr, 1,
            ]
            callee = SGEMV
        elif _size(g.n) == 1:  # c[:, 0] = op(A) b[:, 0]: x is B's only column
            incx = 1 if g.trans_b else g.ldb
            rows, cols = (g.k, g.m) if g.trans_a else (g.m, g.k)
            args = [
                _opaque("CblasRowMajor"), trans(g.trans_a), rows, cols,
                one, a_ptr, g.lda, b_ptr, incx, zero, c_ptr, g.ldc,
            ]
            callee = SGEMV
        else:
            args = [
                _opaque("CblasRowMajor"), trans(g.trans_a), trans(g.trans_b),
                g.m, g.n, g.k, one, a_ptr, g.lda, b_ptr, g.ldb, zero, c_ptr, g.ldc,
            ]
            callee = SGEMM
        operands: list[SSAValue] = []
        attrs: list[Attribute] = []
        for arg in args:
            if isinstance(arg, int | Affine):
                size = _size(arg)
                if size is not None:
                    attrs.append(_blas_int(size))
                    continue
                arg = b.value(EmitC_CastOp(b.index(arg), i32))
            if isinstance(arg, SSAValue):
                attrs.append(_operand(len(operands)))
                operands.append(arg)
            else:
                attrs.append(arg)
        b.call(callee, operands, attrs)

    def threads(self, limit: int) -> SSAValue:
        """`min(byoc_rt_num_threads(), limit)`: how many chunks a split makes."""
        b = self.b
        self.uses_libbyoc = True
        count = b.call("byoc_rt_num_threads", [], results=[i32]).results[0]
        count = b.value(EmitC_CastOp(count, i64))
        cap = b.i64(limit)
        over = b.value(EmitC_CmpOp("gt", count, cap))
        return b.value(EmitC_ConditionalOp(over, cap, count))

    @contextmanager
    def chunks(self, threads: SSAValue, size: int) -> Iterator[tuple[Affine, Affine]]:
        """A parallel loop over `threads` chunks of [0, size); yields chunk t's bounds,
        [t * size / threads, (t + 1) * size / threads)."""
        b = self.b
        with b.span(0, Affine.of(threads), parallel=True) as t:
            start = b.value(EmitC_DivOp(b.index(t * size), threads, i64))
            stop = b.value(EmitC_DivOp(b.index(t * size + size), threads, i64))
            yield Affine.of(start), Affine.of(stop)

    def gemm(
        self,
        g: Gemm,
        batch: int = 1,
        strides: tuple[int, int, int] = (0, 0, 0),
        epilogue: BlockEpilogue | None = None,
        softmax: bool = False,
        mask: Mask | None = None,
    ) -> bool:
        """`C = op(A) op(B)`, `batch` times with the given element strides.

        With `parallel` and enough work, a batch is a parallel loop, and a single
        product is split into chunks of its longer side, each followed by
        `epilogue` on its block. Returns whether `epilogue` was applied.
        `softmax`: each product's rows (or chunk's, split by rows) normalised
        right after it, by the thread that computed them (no `epilogue` then),
        `mask` added to them first.
        """
        m, n = _size(g.m), _size(g.n)
        assert m is not None and n is not None
        assert not softmax or (epilogue is None and g.ldc == n)
        if self.parallel and batch * m * n * g.k >= PARALLEL_MIN_WORK:
            if batch >= 2:
                with self.b.loop(batch, parallel=True) as i:
                    self.blas(g.shifted(i, strides))
                    if softmax:
                        self.softmax_rows(g.shifted(i, strides).c, m, n, self._mask_at(mask, i, 0))
                return False
            along_columns = n >= m and not softmax
            size = n if along_columns else m
            if size // MIN_CHUNK >= 2:
                threads = self.threads(size // MIN_CHUNK)
                with self.chunks(threads, size) as (start, stop):
                    if along_columns:
                        self.blas(g.columns(start, stop))
                        rows, cols = (0, m), (start, stop)
                    else:
                        self.blas(g.rows(start, stop))
                        rows, cols = (start, stop), (0, n)
                        if softmax:
                            mask_rows = self._mask_at(mask, 0, start)
                            self.softmax_rows(g.rows(start, stop).c, stop - start, n, mask_rows)
                    if epilogue is not None:
                        self.epilogue_block(g.c, g.ldc, rows, cols, epilogue)
                return epilogue is not None
        with self.b.loop(batch) as i:
            self.blas(g.shifted(i, strides))
            if softmax:
                self.softmax_rows(g.shifted(i, strides).c, m, n, self._mask_at(mask, i, 0))
        return False

    def softmax_rows(self, c: Ref, rows: Index, length: int, mask: Mask | None = None) -> None:
        """libbyoc's softmax, in place, over `rows` contiguous rows at `c`,
        `mask`'s rows (from its first) added first."""
        b = self.b
        self.uses_libbyoc = True
        pointer = b.pointer(c)
        args: list[Attribute] = []
        operands: list[SSAValue] = []
        if (known := _size(rows)) is not None:
            args.append(IntegerAttr(known, i64))
        else:
            args.append(_operand(len(operands)))
            operands.append(b.index(rows))
        args += [IntegerAttr(length, i64), _operand(len(operands))]
        operands.append(pointer)
        if mask is None:
            args += [_opaque("NULL"), IntegerAttr(0, i64)]
        else:
            args += [_operand(len(operands)), IntegerAttr(mask.row_stride, i64)]
            operands.append(b.pointer(mask.ref))
        args.append(_operand(0 if _size(rows) is not None else 1))
        b.call("byoc_rt_softmax", operands, args)

    def _dense(self, op: relay.DenseOp, out: Ref, epilogue: BlockEpilogue | None) -> bool:
        data, weight = op.operands
        (n, k), m = _shape(weight), math.prod(_shape(data)[:-1])
        g = Gemm(self.refs[data], self.refs[weight], out, False, True, m, n, k, k, k, n)
        return self.gemm(g, epilogue=epilogue)

    def _matmul(self, op: relay.MatmulOp, out: Ref, epilogue: BlockEpilogue | None) -> bool:
        a, b = op.operands
        attrs = op.attrs()
        ta, tb = bool(attrs["transpose_a"]), bool(attrs["transpose_b"])
        a_shape, b_shape = _shape(a), _shape(b)
        n = b_shape[0] if tb else b_shape[1]
        ldb = b_shape[1]
        if not ta:  # every leading dimension of a is a row of one GEMM
            k = a_shape[-1]
            m = math.prod(a_shape[:-1])
            g = Gemm(self.refs[a], self.refs[b], out, False, tb, m, n, k, k, ldb, n)
            return self.gemm(g, epilogue=epilogue)
        k, m = a_shape[-2:]
        batch = math.prod(a_shape[:-2])
        g = Gemm(self.refs[a], self.refs[b], out, True, tb, m, n, k, m, ldb, n)
        return self.gemm(g, batch, (k * m, 0, m * n), epilogue if batch == 1 else None)

    def _batch_matmul(
        self, op: relay.BatchMatmulOp, out: Ref, epilogue: BlockEpilogue | None,
        step: Step, softmax: bool = False, mask: Mask | None = None,
    ) -> bool:
        """sgemm per product; an operand or the result seen through reshapes and
        transposes (attention's heads: `step.views`, `step.out_view`) is read or
        written in place, its matrices `batch stride` apart with their leading
        dimension."""
        x, y = op.operands
        attrs = op.attrs()
        ta, tb = bool(attrs["transpose_a"]), bool(attrs["transpose_b"])
        x_shape, y_shape = _shape(x), _shape(y)
        batch, m, n = _shape(op.results[0])
        k = x_shape[1] if ta else x_shape[2]
        (a, sa, lda), (b, sb, ldb) = self._operand_places(step)
        sc, ldc = step.out_view or (m * n, n)
        stacked = sa == x_shape[1] * lda and sc == m * ldc
        # One y for every batch: stack x's rows (if they share one mask row).
        one_mask_row = mask is None or (mask.product_stride, mask.row_stride) == (0, 0)
        if y_shape[0] == 1 and not ta and stacked and one_mask_row:
            g = Gemm(a, b, out, False, tb, x_shape[0] * m, n, k, lda, ldb, ldc)
            return self.gemm(g, epilogue=epilogue, softmax=softmax, mask=mask)
        g = Gemm(a, b, out, ta, tb, m, n, k, lda, ldb, ldc)
        return self.gemm(
            g, batch, (sa, sb, sc), epilogue if batch == 1 else None, softmax, mask
        )

    def _mask(self, step: Step) -> Mask | None:
        """The attention mask `step` adds to its scores before their softmax."""
        ep = step.epilogue
        if ep.mask is None:
            return None
        return Mask(replace(self.refs[ep.mask], readonly=True), *ep.mask_layout)

    def _mask_at(self, mask: Mask | None, product: Index, row: Index) -> Mask | None:
        """`mask` from product `product`'s row `row` on (products in groups of
        `mask.group` share one matrix: a division in the C)."""
        if mask is None:
            return None
        first = product
        if mask.group > 1 and mask.product_stride:
            if (known := _size(product)) is not None:
                first = known // mask.group
            else:
                group = self.b.i64(mask.group)
                first = Affine.of(self.b.value(EmitC_DivOp(self.b.index(product), group, i64)))
        offset = first * mask.product_stride + row * mask.row_stride
        return replace(mask, ref=mask.ref.at(offset))

    def _operand_places(self, step: Step, which: Sequence[int] = (0, 1)) -> list[tuple[Ref, int, int]]:
        """`(where, batch stride, leading dimension)` of a batch matmul step's
        operands `which`, read in place through their views if they have them."""
        places = []
        for i in which:
            value = step.op.operands[i]
            view = step.views[i] if step.views else None
            if view is None:
                shape = _shape(value)
                places.append((self.refs[value], shape[1] * shape[2] if shape[0] > 1 else 0, shape[2]))
            else:
                places.append((self.refs[view[0]], view[1], view[2]))
        return places

    def _attention(self, step: Step, out: Ref) -> None:
        """One call of libbyoc's `byoc_rt_attention`: `step` (a batch matmul by
        the values) and its `scores` step (queries times keys, softmax), every
        operand read and the result written in place (views included)."""
        assert step.scores is not None
        b = self.b
        (q, sq, ldq), (k, sk, ldk) = self._operand_places(step.scores)
        ((v, sv, ldv),) = self._operand_places(step, (1,))
        heads, rows, width = _shape(step.op.results[0])
        keys, depth = _shape(step.scores.op.operands[1])[1:]
        so, ldo = step.out_view or (rows * width if heads > 1 else 0, width)
        mask = self._mask(step.scores)
        mask_fields = (1, 0, 0)
        if mask is not None:
            mask_fields = (mask.group, mask.product_stride, mask.row_stride)
        fields = (heads, rows, keys, depth, width, sq, ldq, sk, ldk, sv, ldv, so, ldo, *mask_fields)
        name = f"{self.function.sym_name.data}_heads_{len(self.globals)}"
        self.globals.append(
            EmitC_VerbatimOp(f"static const byoc_rt_heads {name} = {{{', '.join(map(str, fields))}}};")
        )
        self.uses_libbyoc = True
        heads_ptr = b.value(EmitC_LiteralOp(f"&{name}", HEADS_PTR))
        mask_ptr = (
            b.value(EmitC_LiteralOp("NULL", CONST_F32_PTR)) if mask is None else b.pointer(mask.ref)
        )
        status = b.call(
            "byoc_rt_attention",
            [heads_ptr, *(b.pointer(ref) for ref in (q, k, v)), mask_ptr, b.pointer(out)],
            results=[i32],
        ).results[0]
        self.fail_on(status)

    def _libbyoc_conv(
        self,
        kernel: str,
        op: relay.Conv2dOp | relay.Conv2dPackedOp,
        out: Ref,
        epilogue: Epilogue,
        shuffle: tuple[SSAValue, int] | None = None,
    ) -> None:
        """One call of libbyoc's `kernel` (byoc_rt_conv2d for conv2d_packed,
        byoc_rt_depthwise_conv2d for a depthwise conv2d), its shape a
        `static const` struct, the epilogue (bias, residual, relu or clip)
        applied by the kernel; a depthwise conv reads `shuffle`'s input
        through the channel permutation."""
        b = self.b
        data, weight = op.operands
        groups_shuffled = 0
        if shuffle is not None:
            data, groups_shuffled = shuffle
        name = self._conv_struct(op, data, epilogue, groups_shuffled)
        conv = b.value(EmitC_LiteralOp(f"&{name}", CONV_PTR))
        null = b.value(EmitC_LiteralOp("NULL", F32_PTR))
        optional = [
            b.pointer(self.refs[v]) if v is not None else null
            for v in (epilogue.bias, epilogue.residual)
        ]
        status = b.call(
            kernel,
            [conv, b.pointer(self.refs[data]), b.pointer(self.refs[weight]), *optional,
             b.pointer(out)],
            results=[i32],
        ).results[0]
        self.fail_on(status)

    def _libbyoc_conv_pool(
        self, op: relay.Conv2dPackedOp, pool_op: relay.MaxPool2dOp | relay.AvgPool2dOp, out: Ref,
        epilogue: Epilogue,
    ) -> None:
        """One call of libbyoc's `byoc_rt_conv2d_pool2d`: the conv (its epilogue
        without a residual) and the pool of its output, by bands of rows."""
        b = self.b
        data, weight = op.operands
        conv = b.value(EmitC_LiteralOp(f"&{self._conv_struct(op, data, epilogue, 0)}", CONV_PTR))
        pool = b.value(EmitC_LiteralOp(f"&{self._pool_struct(pool_op)}", POOL_PTR))
        bias = b.pointer(self.refs[epilogue.bias]) if epilogue.bias is not None else b.value(
            EmitC_LiteralOp("NULL", F32_PTR)
        )
        status = b.call(
            "byoc_rt_conv2d_pool2d",
            [conv, pool, b.pointer(self.refs[data]), b.pointer(self.refs[weight]), bias,
             b.pointer(out)],
            results=[i32],
        ).results[0]
        self.fail_on(status)

    def _conv_struct(
        self, op: relay.Conv2dOp | relay.Conv2dPackedOp, data: SSAValue, epilogue: Epilogue,
        groups_shuffled: int,
    ) -> str:
        """A `static const byoc_rt_conv` of `op`'s shape (reading `data`) and
        activation, by name."""
        weight = op.operands[1]
        attrs = op.attrs()
        n, c, h, w = _shape(data)
        _, o, oh, ow = _shape(op.results[0])
        kh, kw = _shape(weight)[2:4]
        if attrs.get("kernel_layout") in relay.WINOGRAD_LAYOUTS:
            kh, kw = 3, 3  # packed as G g G^T, 4x4 (6x6) each
        top, left, _, _ = relay.normalize_padding(attrs["padding"], op.name)  # type: ignore[arg-type]
        sh, sw = attrs["strides"]  # type: ignore[misc]
        dh, dw = attrs["dilation"]  # type: ignore[misc]
        layout = LIBBYOC_LAYOUTS.get(attrs.get("kernel_layout"), 0)  # type: ignore[arg-type]
        activation, low, high = _activation(epilogue)
        fields = [n, c, h, w, o, oh, ow, kh, kw, sh, sw, dh, dw, top, left, attrs["groups"],
                  layout, activation]
        name = f"{self.function.sym_name.data}_conv_{len(self.globals)}"
        values = ", ".join([*map(str, fields), _c_float(low), _c_float(high), str(groups_shuffled)])
        self.globals.append(EmitC_VerbatimOp(f"static const byoc_rt_conv {name} = {{{values}}};"))
        self.uses_libbyoc = True
        return name

    def _libbyoc_dense(self, op: relay.DensePackedOp, out: Ref, epilogue: Epilogue) -> None:
        """One call of libbyoc's `byoc_rt_dense`, its shape a `static const`
        struct, the epilogue (bias, residual, relu, clip or gelu) applied by the
        kernel."""
        b = self.b
        data, weight = op.operands
        k = _shape(data)[-1]
        m, n = math.prod(_shape(data)[:-1]), op.attrs()["units"]
        activation, low, high = _activation(epilogue)
        name = f"{self.function.sym_name.data}_product_{len(self.globals)}"
        values = ", ".join([*map(str, (m, n, k, activation)), _c_float(low), _c_float(high)])
        self.globals.append(EmitC_VerbatimOp(f"static const byoc_rt_product {name} = {{{values}}};"))
        self.uses_libbyoc = True
        null = b.value(EmitC_LiteralOp("NULL", F32_PTR))
        optional = [
            b.pointer(self.refs[v]) if v is not None else null
            for v in (epilogue.bias, epilogue.residual)
        ]
        product = b.value(EmitC_LiteralOp(f"&{name}", PRODUCT_PTR))
        status = b.call(
            "byoc_rt_dense",
            [product, b.pointer(self.refs[data]), b.pointer(self.refs[weight]), *optional,
             b.pointer(out)],
            results=[i32],
        ).results[0]
        self.fail_on(status)

    def _libbyoc_layer_norm(self, op: relay.LayerNormOp, out: Ref) -> None:
        """One call of libbyoc's `byoc_rt_layer_norm` over the rows of the last
        axis; gamma and beta NULL when the op does not scale or centre."""
        b = self.b
        data, gamma, beta = op.operands
        shape = _shape(data)
        attrs = op.attrs()
        self.uses_libbyoc = True
        null = b.value(EmitC_LiteralOp("NULL", F32_PTR))
        operands = [
            b.pointer(self.refs[data]),
            b.pointer(self.refs[gamma]) if attrs["scale"] else null,
            b.pointer(self.refs[beta]) if attrs["center"] else null,
            b.pointer(out),
        ]
        args = [
            IntegerAttr(math.prod(shape[:-1]), i64), IntegerAttr(shape[-1], i64),
            _operand(0), _operand(1), _operand(2), FloatAttr(float(attrs["epsilon"]), f32),
            _operand(3),
        ]
        b.call("byoc_rt_layer_norm", operands, args)

    def _libbyoc_pool(
        self, op: relay.MaxPool2dOp | relay.AvgPool2dOp | relay.GlobalAvgPool2dOp, out: Ref
    ) -> None:
        """One call of libbyoc's `byoc_rt_pool2d` (strides 1 and 2; a global
        average pool is an average pool of the whole plane), its shape a
        `static const` struct."""
        b = self.b
        pool = b.value(EmitC_LiteralOp(f"&{self._pool_struct(op)}", POOL_PTR))
        data = b.pointer(self.refs[op.operands[0]])
        status = b.call("byoc_rt_pool2d", [pool, data, b.pointer(out)], results=[i32]).results[0]
        self.fail_on(status)

    def _pool_struct(
        self, op: relay.MaxPool2dOp | relay.AvgPool2dOp | relay.GlobalAvgPool2dOp
    ) -> str:
        """A `static const byoc_rt_pool` of `op`'s shape, by name."""
        (data,) = op.operands
        attrs = op.attrs()
        n, c, h, w = _shape(data)
        _, _, oh, ow = _shape(op.results[0])
        if isinstance(op, relay.GlobalAvgPool2dOp):
            (kh, kw), (sh, sw), (top, left, bottom, right) = (h, w), (1, 1), (0, 0, 0, 0)
            average, include = True, False
        else:
            kh, kw = attrs["pool_size"]  # type: ignore[misc]
            sh, sw = attrs["strides"]  # type: ignore[misc]
            top, left, bottom, right = relay.normalize_padding(attrs["padding"], op.name)  # type: ignore[arg-type]
            average = isinstance(op, relay.AvgPool2dOp)
            include = bool(attrs["count_include_pad"]) if average else False
        fields = (n, c, h, w, oh, ow, kh, kw, sh, sw, top, left, bottom, right, int(average), int(include))
        name = f"{self.function.sym_name.data}_pool_{len(self.globals)}"
        self.globals.append(
            EmitC_VerbatimOp(f"static const byoc_rt_pool {name} = {{{', '.join(map(str, fields))}}};")
        )
        self.uses_libbyoc = True
        return name

    def fail_on(self, status: SSAValue) -> None:
        """`if (status) return status;`, freeing the scratch allocation first."""
        if self.base is None:
            self.b.add(EmitC_VerbatimOp("if ({}) return {};", [status, status]))
        else:
            self.b.add(
                EmitC_VerbatimOp("if ({}) {{ free({}); return {}; }", [status, self.base, status])
            )

    def _conv2d(self, op: relay.Conv2dOp, out: Ref, col: Ref | None, epilogue: Epilogue) -> None:
        """Per image: im2col (unless 1x1 direct), one sgemm per group, the epilogue.

        With `parallel` and enough work per image, the output rows of each image
        are split across threads: each fills its columns of the im2col
        buffer, multiplies them and applies the epilogue to them.
        """
        data, weight = op.operands
        attrs = op.attrs()
        groups = attrs["groups"]
        assert isinstance(groups, int)
        n_images, channels, h, w = _shape(data)
        out_channels, per_group, kh, kw = _shape(weight)
        _, _, oh, ow = _shape(op.results[0])
        og, kg, ohw = out_channels // groups, per_group * kh * kw, oh * ow
        x = self.refs[data]
        per_image = epilogue.bias is None or epilogue.axis >= 1
        image_epilogue = Epilogue(epilogue.bias, max(epilogue.axis - 1, 0), epilogue.relu)
        limit = min(oh, ohw // MIN_CHUNK)
        split = self.parallel and out_channels * ohw * kg >= PARALLEL_MIN_WORK and limit >= 2
        threads = self.threads(limit) if split else None
        with self.b.loop(n_images) as n:
            image = x.at(n * (channels * h * w))
            result = out.at(n * (out_channels * ohw))
            if col is None:  # 1x1 direct: B is the image, [C, H*W]
                source, group_stride = image, per_group * h * w
            else:
                source, group_stride = col, kg * ohw
            g = Gemm(self.refs[weight], source, result, False, False, og, ohw, kg, kg, ohw, ohw)
            strides = (og * kg, group_stride, og * ohw)
            block = None
            if threads is None:
                if col is not None:
                    self.im2col(image, col, op, (channels, h, w), (kh, kw), (oh, ow))
                self.gemm(g, batch=groups, strides=strides)
            else:
                if per_image and (epilogue.bias is None or epilogue.axis == 1):
                    # Over [C, OH*OW]: the bias, if any, is one per row.
                    bias = None if epilogue.bias is None else self.refs[epilogue.bias]
                    block = BlockEpilogue(bias, True, epilogue.relu) if epilogue else None
                with self.chunks(threads, oh) as (y0, y1):
                    if col is not None:
                        self.im2col(
                            image, col, op, (channels, h, w), (kh, kw), (oh, ow), (y0, y1)
                        )
                    part = g.columns(y0 * ow, y1 * ow)
                    with self.b.loop(groups) as i:
                        self.blas(part.shifted(i, strides))
                    if block is not None:
                        self.epilogue_block(
                            result, ohw, (0, out_channels), (y0 * ow, y1 * ow), block
                        )
            if per_image and epilogue and block is None:
                self.epilogue(result, result, (out_channels, oh, ow), image_epilogue)
        if not per_image:
            self.epilogue(out, out, _shape(op.results[0]), epilogue)

    def im2col(
        self,
        image: Ref,
        col: Ref,
        op: relay.Conv2dOp,
        chw: tuple[int, int, int],
        kernel: tuple[int, int],
        out_hw: tuple[int, int],
        rows: tuple[Index, Index] | None = None,
    ) -> None:
        """`col[(c, i, j), (y, x)] = image[c, y*sh + i*dh - top, x*sw + j*dw - left]`, 0 outside.

        Only the output rows y in `rows` (all by default) when given: the
        columns of one chunk, in the same [C*KH*KW, OH*OW] layout.

        The columns x where a kernel column j reads inside the image are
        known at codegen time, so j is unrolled and each row is a zero
        prefix, a copy and a zero suffix; the rows y outside the image are a
        runtime test, only when there is vertical padding.
        """
        b = self.b
        attrs = op.attrs()
        sh, sw = attrs["strides"]  # type: ignore[misc]
        dh, dw = attrs["dilation"]  # type: ignore[misc]
        top, left, _, _ = relay.normalize_padding(attrs["padding"], op.name)  # type: ignore[arg-type]
        channels, h, w = chw
        kh, kw = kernel
        oh, ow = out_hw
        # Rows y*sh + i*dh - top can fall outside [0, h) only with vertical padding.
        above = top > 0
        below = (oh - 1) * sh + (kh - 1) * dh - top >= h
        with b.loop(channels) as c, b.loop(kh) as i:
            for j in range(kw):
                shift = j * dw - left
                # Columns x reading inside the image: 0 <= x*sw + shift < w.
                first = max(0, -(shift // sw))
                last = max(first, min(ow, (w - 1 - shift) // sw + 1))
                with b.loop(oh) if rows is None else b.span(*rows) as y:
                    row = col.at((((c * kh + i) * kw + j) * oh + y) * ow)
                    iy = y * sh + i * dh - top
                    source = image.at(((c * h) + iy) * w + shift)
                    if not (above or below):
                        self._copy_row(row, source, sw, first, last, ow)
                        continue
                    at = b.index(iy)
                    checks = []
                    if above:
                        checks.append(b.value(EmitC_CmpOp("ge", at, b.i64(0))))
                    if below:
                        checks.append(b.value(EmitC_CmpOp("lt", at, b.i64(h))))
                    inside = checks[0]
                    for check in checks[1:]:
                        inside = b.value(EmitC_LogicalAndOp(inside, check))
                    then_block, else_block = b.branch(inside)
                    with b.inside(then_block):
                        self._copy_row(row, source, sw, first, last, ow)
                    with b.inside(else_block):
                        self._fill(row, 0, ow)

    def _copy_row(self, row: Ref, source: Ref, stride: int, first: int, last: int, width: int) -> None:
        self._fill(row, 0, first)
        if last > first:
            with self.b.loop(last, first) as x:
                self.b.store(row, x, self.b.load(source, x * stride))
        self._fill(row, last, width)

    def _fill(self, ref: Ref, start: int, stop: int) -> None:
        if stop > start:
            zero = self.b.f32(0.0)
            with self.b.loop(stop, start) as x:
                self.b.store(ref, x, zero)

    def epilogue(self, src: Ref, dst: Ref, shape: Sequence[int], epilogue: Epilogue) -> None:
        """One pass over `shape`: `dst = relu(src + bias)` (bias and relu as planned).

        With `parallel`, a pass over at least PARALLEL_MIN_ELEMENTS is a parallel
        loop over its outermost axis.
        """
        if not epilogue:
            assert src == dst
            return
        b = self.b
        if epilogue.bias is not None:
            axis = epilogue.axis
            outer, channels = math.prod(shape[:axis]), shape[axis]
            inner = math.prod(shape[axis + 1 :])
            bias = self.refs[epilogue.bias]
        else:
            outer, channels, inner = 1, 1, math.prod(shape)
            bias = None
        parallel = self.parallel and math.prod(shape) >= PARALLEL_MIN_ELEMENTS
        with (
            b.loop(outer, parallel=parallel) as o,
            b.loop(channels, parallel=parallel and outer == 1) as c,
        ):
            add = b.load(bias, c) if bias is not None else None
            with b.loop(inner, parallel=parallel and outer == channels == 1) as i:
                at = (o * channels + c) * inner + i
                b.store(dst, at, self._apply(b.load(src, at), add, epilogue.relu))

    def epilogue_block(
        self,
        c: Ref,
        ldc: int,
        rows: tuple[Index, Index],
        cols: tuple[Index, Index],
        epilogue: BlockEpilogue,
    ) -> None:
        """The epilogue, in place, on rows x cols of the matrix `c` (leading dimension `ldc`)."""
        b = self.b
        bias = epilogue.bias
        with self._range(*rows) as r:
            add = b.load(bias, r) if bias is not None and epilogue.on_rows else None
            with self._range(*cols) as x:
                at = r * ldc + x
                if bias is not None and not epilogue.on_rows:
                    add = b.load(bias, x)
                b.store(c, at, self._apply(b.load(c, at), add, epilogue.relu))

    def _range(self, start: Index, stop: Index):  # noqa: ANN202 - a context manager
        low, high = _size(start), _size(stop)
        if low is not None and high is not None:
            return self.b.loop(high, low)
        return self.b.span(start, stop)

    def _apply(self, value: SSAValue, add: SSAValue | None, relu: bool) -> SSAValue:
        """`relu(value + add)`, each part only if given."""
        b = self.b
        if add is not None:
            value = b.value(EmitC_AddOp(value, add, f32))
        if relu:
            # `x < 0 ? 0 : x` keeps NaN, as relay's max(x, 0) does.
            zero = b.f32(0.0)
            negative = b.value(EmitC_CmpOp("lt", value, zero))
            value = b.value(EmitC_ConditionalOp(negative, zero, value))
        return value


# ---------------------------------------------------------------------------
# Codegen
# ---------------------------------------------------------------------------


def emitc_module(functions: ModuleOp, parallel: bool | None = None) -> ModuleOp:
    """The emitc module of a module of outlined functions (verified).

    `parallel` (default: `libbyoc.parallel_code()`) lets large products be
    split across libbyoc's pool of threads.
    """
    return _emitc_module(functions, libbyoc.parallel_code() if parallel is None else parallel).module


@dataclass(frozen=True)
class Generated:
    """The emitc module of a cblas library and what its C needs."""

    module: ModuleOp
    parallel: bool
    """Whether the C splits work across libbyoc's pool."""
    libbyoc: bool
    """Whether the C calls libbyoc (includes byoc_runtime.h)."""


def _emitc_module(functions: ModuleOp, parallel: bool) -> Generated:
    ops: list[Operation] = []
    pool = False
    runtime = False
    for function in functions.ops:
        if isinstance(function, func.FuncOp):
            emitter = FunctionEmitter(function, parallel)
            kernel = emitter.emit()
            ops += [*emitter.globals, kernel]
            pool = pool or emitter.uses_pool
            runtime = runtime or emitter.uses_libbyoc or emitter.uses_pool
    head: list[Operation] = [EmitC_IncludeOp("cblas.h")]
    if runtime:
        head.append(EmitC_IncludeOp(libbyoc.HEADER, is_standard_include=False))
    if pool:
        head.append(EmitC_VerbatimOp(ONE_OPENBLAS_THREAD))
    module = ModuleOp([*head, *ops])
    outline_parallel_loops(module)
    module.verify()
    return Generated(module, pool, runtime)


def generate_c(functions: ModuleOp) -> str:
    """C source for a module of outlined relay functions."""
    from byoc.targets.c import emit_c

    return emit_c(_emitc_module(functions, libbyoc.parallel_code()).module)


def codegen(functions: ModuleOp) -> Artifact:
    """Generate C calling sgemm (and libbyoc) and compile it against the wheel's OpenBLAS.

    C calling libbyoc (its kernels or its pool of threads) includes its header
    and lists libbyoc first among the libraries; the artifact's flags carry
    both for the AOT exporter.
    """
    from byoc.targets.c import emit_c

    library = openblas()
    generated = _emitc_module(functions, libbyoc.parallel_code())
    source = emit_c(generated.module)
    runtime = libbyoc.compile_flags() if generated.libbyoc else ()
    runtime_libraries = [libbyoc.library()] if generated.libbyoc else []
    runtime_links = libbyoc.link_flags() if generated.libbyoc else ()
    symbols = [op.sym_name.data for op in functions.ops if isinstance(op, func.FuncOp)]
    return Artifact(
        backend=NAME,
        symbols=symbols,
        sources={"cblas.c": source},
        libraries=[
            *runtime_libraries,
            compile_shared(source, (*library.flags, *runtime), library.libraries),
        ],
        c_flags=[f"-I{library.include_dir}", *runtime],
        link_flags=[*library.link_flags, *runtime_links],
        vendor_libraries=[*runtime_libraries, library.shared_object],
    )


WINOGRAD_MIN_CHANNELS = 8
"""Input channels a group from which a 3x3 conv of stride 1 is computed by
Winograd's F(2x2, 3x3) ("winograd8o"): below, its transforms cost what it saves
(3 -> 16 channels at 32x32: 15 us either way)."""

WINOGRAD_MAX_PRODUCT = 256 * 256
"""Input times output channels a group up to which it is: the transformed
weights (16 floats a pair against 9) are read once per block of up to 48
tiles, and from memory in a model. One thread, CPU time, in -> out channels at
a size, direct (COLUMNS) -> Winograd: 64 -> 64 at 56x56 2.14 -> 1.36 ms, 128 at
28x28 2.08 -> 1.30, 256 at 14x14 2.04 -> 1.50, 64 -> 192 at 56x56 6.82 -> 3.89,
224 at 7x7 0.41 -> 0.26; but 384 at 14x14 4.91 -> 7.64 and 512 at 7x7 2.48 ->
3.31 (9 and 16 MB of weights)."""


WINOGRAD4_MIN_SIZE = 14
"""Output rows and columns from which such a conv is computed by F(4x4, 3x3)
("winograd4x4_8o": 36 multiply-adds a 4x4 tile and input channel, 2.25 an
output, against F(2x2, 3x3)'s 4) rather than F(2x2, 3x3): a vector of 16
tiles of 4x4 outputs from 14x14 on; at 7x7 its 4 tiles filled a quarter of a
vector (Inception v2's 160 -> 224 at 7x7 188 -> 411 us). One thread, CPU
time, F(2x2) -> F(4x4), in ResNet-50 (the sum of its convs of a shape,
minimum of 15 calls): 64 -> 64 at 56x56 (3 convs) 3.41 -> 2.51 ms, 128 at
28x28 (3) 3.29 -> 2.96-3.20, 256 at 14x14 (5) 7.54 -> 5.93-6.30 (their 9.4 MB
of weights read once a call); standalone: Inception v2's 64 -> 192 at 56x56
3.23 -> 2.10 ms, 96 at 28x28 0.72 -> 0.58, 128 -> 192 at 14x14 0.49 -> 0.32.
The transforms' coefficients (up to 8 and 1/24) cost precision: errors of a
few 1e-6 of the output's scale against 1e-7 (rtol 1e-4 holds)."""


def conv2d_kernel_layout(op: relay.Conv2dOp) -> str:
    """The packed layout libbyoc computes `op` in fastest: "winograd4x4_8o" or
    "winograd8o" for a 3x3 convolution of stride and dilation 1
    (WINOGRAD_MIN_CHANNELS, WINOGRAD_MAX_PRODUCT, WINOGRAD4_MIN_SIZE), else
    "OIHW8o" (vectors of
    output pixels) for a 1x1 convolution of a wide image as it is, "OIHW32o"
    (vectors of output channels) for strides other than 1, and otherwise the
    one computing fewer multiply-adds, padding lanes included, ROWS given a
    tenth's handicap: ShuffleNet's 1x1 convs on narrow images, 34 channels a
    group, fill blocks of 8 better than of 32 (40 against 48), and so do convs
    of few output channels (3 or 8 of a 3x3 conv at 56x56: 0.17 against
    0.27 ms). A padded conv's ROWS tiles also compute the grid positions past
    each row's end and store the vectors straddling one lane by lane: with
    channels filling blocks of 32 as well as of 8, COLUMNS is faster
    (SqueezeNet's 16->64 3x3 expand conv at 55x55 0.73 -> 0.53 ms, the float
    CNN's 3->16 3x3 at 32x32 22 -> 13 us, ResNet-50's 64->64 at 56x56 2.20 ->
    2.06 ms; one thread)."""
    attrs = op.attrs()
    _, _, height, width = _shape(op.results[0])
    if tuple(attrs["strides"]) != (1, 1):  # type: ignore[arg-type]
        return "OIHW32o"
    out_channels, per_group_in, kh, kw = _shape(op.operands[1])
    per_group_out = out_channels // attrs["groups"]  # type: ignore[operator]
    if (
        (kh, kw) == (3, 3)
        and tuple(attrs["dilation"]) == (1, 1)  # type: ignore[arg-type]
        and per_group_in >= WINOGRAD_MIN_CHANNELS
        and per_group_in * per_group_out <= WINOGRAD_MAX_PRODUCT
    ):
        if height >= WINOGRAD4_MIN_SIZE and width >= WINOGRAD4_MIN_SIZE:
            return "winograd4x4_8o"
        return "winograd8o"
    padding = relay.normalize_padding_nd(attrs["padding"], 2, op.name)
    direct = (kh, kw) == (1, 1) and not any(padding)
    if direct and width >= 32:
        return "OIHW8o"
    per_group = per_group_out
    pixels = height * width
    if direct:
        # Pixels contiguous across rows, in vectors of 16.
        positions = pixels // 48 * 48 + math.ceil(pixels % 48 / 16) * 16
    else:
        # A grid row per output row, as wide as the padded input row, in tiles of 48.
        grid = width + (kw - 1) * attrs["dilation"][1]  # type: ignore[index]
        positions = math.ceil(((height - 1) * grid + width) / 48) * 48
    rows = math.ceil(per_group / 8) * 8 * positions
    columns = (per_group // 32 * 32 + (0 if per_group % 32 == 0 else 16 if per_group % 32 <= 16 else 32)) * pixels
    return "OIHW8o" if rows < 0.9 * columns else "OIHW32o"


def alter_op(op: Operation) -> None:
    """A conv2d or dense with a constant weight becomes conv2d_packed or
    dense_packed, its weight packed (at compile time: a new constant) in the
    layout libbyoc's kernel reads."""
    if isinstance(op, relay.DenseOp):
        _alter_dense(op)
        return
    if not isinstance(op, relay.Conv2dOp):
        return
    weight = op.operands[1].owner
    if (
        not isinstance(weight, relay.ConstantOp)
        or conv2d_check(op) is not None
        or is_depthwise(op)
    ):
        return
    attrs = op.attrs()
    groups = attrs["groups"]
    layout = conv2d_kernel_layout(op)
    packed = relay.ConstantOp.from_numpy(
        relay.pack_conv2d_weight(weight.to_numpy(), groups, layout)  # type: ignore[arg-type]
    )
    conv = relay.Conv2dPackedOp(
        op.operands[0],
        packed.result,
        channels=_shape(op.operands[1])[0],
        kernel_layout=layout,
        strides=attrs["strides"],  # type: ignore[arg-type]
        padding=attrs["padding"],  # type: ignore[arg-type]
        dilation=attrs["dilation"],  # type: ignore[arg-type]
        groups=groups,  # type: ignore[arg-type]
        result_type=op.results[0].type,
    )
    conv.attributes.update(op.attributes)
    _replace(op, [packed, conv], weight)


def _alter_dense(op: relay.DenseOp) -> None:
    weight = op.operands[1].owner
    if not isinstance(weight, relay.ConstantOp) or dense_check(op) is not None:
        return
    units = _shape(op.operands[1])[0]
    if math.prod(_shape(op.operands[0])[:-1]) == 1 and 2 * DENSE_PANEL * -(-units // DENSE_PANEL) >= 3 * units:
        # One row (a classifier at batch 1) is a matrix-vector product, bound by
        # reading the weight: sgemv reads it as it is, where panels of 32 units
        # read a 10-unit layer's weight 3.2 times over (bench/run.py's CNN,
        # 8192 x 10: 1.3 MB for 0.33 MB, 12 us of its 58; sgemv 5 us).
        return
    packed = relay.ConstantOp.from_numpy(relay.pack_dense_weight(weight.to_numpy()))
    dense = relay.DensePackedOp(
        op.operands[0], packed.result, _shape(op.operands[1])[0], op.results[0].type
    )
    dense.attributes.update(op.attributes)
    _replace(op, [packed, dense], weight)


def _replace(op: Operation, new: list[Operation], weight: relay.ConstantOp) -> None:
    """`op` replaced by `new` (its last op gives the result); the old weight
    constant is erased once nothing else reads it."""
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before(new, op)
    op.results[0].replace_all_uses_with(new[-1].results[0])
    erase_op(op)
    if weight.results[0].first_use is None:
        erase_op(weight)  # its bytes go now, not at the end of the compile


backend = Backend(
    name=NAME,
    ops={**KERNEL_CHECKS, **{op.name: view_check for op in VIEW_OPS}},
    codegen=codegen,
    description=(
        "matmul and batch_matmul as OpenBLAS sgemm/sgemv calls; dense and conv2d "
        "as libbyoc's kernels on packed weights (or sgemm, im2col and sgemm); "
        "stride-1 pools in libbyoc"
    ),
    source=generate_c,
    composites=COMPOSITES,
    alter_op=alter_op,
)
