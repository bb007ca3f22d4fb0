"""ccompiler's int8 kernels: `relay.qnn.dense` and `relay.qnn.conv2d` with what
follows them in a quantized model (the int32 bias, the requantize, a clip that
is a fused relu, and `relay.qnn.add`s of a residual or a per-channel bias after
it, each with its clip, and a dequantize that ends the quantized part)
computed in one pass, the int32 accumulators never stored and no
intermediate tensor written.

Before ccompiler lowers its functions, each such chain is replaced by a call
of a kernel function written here in the loop-level IR, which the C exit
prints like any other function, so no C text is pasted:

- the products are libbyoc's (`byoc_rt_int8_products`, runtime/libbyoc/int8.c):
  int32 sums of unsigned 8-bit data and signed 8-bit weights, output channels
  in the vector lanes (`vpdpbusd` with AVX-512 VNNI, a portable loop
  elsewhere), into a tile of the output on the stack. The weight is packed at
  compile time (`pack_int8_weights`: `[ceil(N/16), ceil(K/4), 16, 4]`, a
  conv2d's in the patches' order). Signed data are made unsigned by flipping
  the sign bit (`x ^ 0x80 = x + 128`) while they are copied, with the zero
  point moved by 128;
- zero points are corrections outside the products:
  `sum (x - zx)(w - zw) = sum x w - zx sum w - zw sum x + K zx zw`, with the
  weight sums computed once per call and the data sums only when some weight
  zero point is not a constant zero;
- the epilogue (generated, along the tile) adds the bias and the corrections,
  multiplies by `input_scale / output_scale`, clamps to the output type and
  to the clip's bounds, rounds half to even (the 1.5 * 2^23 constant) and adds
  the zero point, exactly as `relay.qnn.requantize` (lower_qnn.py) does; then
  each fused add rescales that integer and the other operand's and rounds
  again, as `relay.qnn.add` does (a separate pass over the output cost 5% of
  a small quantized CNN); a fused dequantize makes the result a float as
  `relay.qnn.dequantize` does.

A stride-1 conv2d (one group) with a weight zero point of constant 0 runs on
libbyoc's direct convolution (`byoc_rt_int8_conv_products`, int8_direct.c):
the image packed 4 channels side by side into its padded grid, output
positions in the vector lanes, the weight packed at compile time as
`[ceil(O/8), ceil(C/4), KH, KW, 8, 4]` (`direct_packed`), no window copies;
without fused adds libbyoc also computes the epilogue, from its registers.
Any other one-group conv2d (NCHW) copies each image's input windows into a
`[pixels, C * KH * KW]` buffer (padding holds the input zero point) and runs
the same products as a dense on it. The loop over tiles runs across cores
(libbyoc's pool) when there is enough work. A `relay.qnn.quantize` of float32
with one scale and zero point is a call of libbyoc's `byoc_rt_quantize` per
chunk. Other quantized ops, and chains that do not fit (grouped convolutions,
unsigned or non-constant weights), use the generic lowering.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.dialects import relay
from byoc.dialects.extern import TARGET_ATTR
from byoc.dialects.relay.qnn import INT8, UINT8, constant_value, type_range
from byoc.passes.speed import erase_op
from byoc.passes.convert_relay_to_loops import is_loop_level
from byoc.passes.loop_nests import (
    I32,
    READS_ATTR,
    BodyBuilder,
    ConstantPool,
    alloc,
    compare_integers,
    dealloc,
    shape_of,
)
from byoc.passes.lower_nn import (
    Index,
    Window,
    _windows,
    for_range,
    index_add,
    index_mul,
    load,
    nest,
    store,
    value_of,
)
from byoc.passes.lower_qnn import parameter, saturate_round, to_f32, to_i32
from byoc.passes.parallel_loops import CHUNKS_ATTR, PARALLEL_ATTR

if TYPE_CHECKING:
    import numpy as np

LANES, GROUP = 16, 4
"""libbyoc's packed int8 weight (`byoc_rt_int8_products`, byoc_runtime.h):
blocks of 16 output channels (a vector of int32 sums), each step of 4 bytes
of k (what one `vpdpbusd` lane adds) of all 16 side by side."""

MIN_DEPTH = 16
"""Dot products shorter than this stay with the generic lowering (a depthwise
3x3 convolution has 9)."""


def grouped_depth(depth: int) -> int:
    """`depth` rounded up to whole groups of 4 bytes: conv2d's patches are
    padded to it (data: the zero point, weight: 0, which adds nothing), so
    libbyoc never reads a partial group of them."""
    return -(-depth // GROUP) * GROUP


PARALLEL_MIN_WORK = 1 << 18
"""Multiply-adds above which the row blocks are split across cores."""

CHUNK_WORK = 1 << 17
"""Multiply-adds of one chunk of the pool at least (about a microsecond with
its epilogue): the QDQ CNN's first conv2d (3 channels) cut its 32 output rows
into 32 chunks of 0.4 us, each claimed on a cache line both cores share."""


# --- Which chains ------------------------------------------------------------------------


@dataclass
class FusedAdd:
    """A `relay.qnn.add` of the chain's quantized value and another tensor (of
    the output's shape, or broadcast along the channel), with its clip."""

    op: relay.QnnAddOp
    chain_is_lhs: bool
    clip: relay.ClipOp | None = None

    @property
    def other(self) -> SSAValue:
        return self.op.operands[1 if self.chain_is_lhs else 0]

    @property
    def parameters(self) -> list[SSAValue]:
        """Scale and zero point of the chain's side, of the other side, of the output."""
        lhs, rhs, out = self.op.operands[2:4], self.op.operands[4:6], self.op.operands[6:8]
        own, other = (lhs, rhs) if self.chain_is_lhs else (rhs, lhs)
        return [*own, *other, *out]


@dataclass
class Chain:
    """A quantized product and the ops fused into its kernel, in order."""

    root: relay.QnnConv2dOp | relay.QnnDenseOp
    bias: relay.BiasAddOp | None
    requantize: relay.RequantizeOp | None
    clip: relay.ClipOp | None
    adds: list[FusedAdd] = field(default_factory=list)
    """Residual and bias adds after the requantize, each rounded as its own op."""
    packed: SSAValue | None = None
    """The weight as libbyoc reads it (`packed_weight`): the chain's kernel
    takes it, and the ops unpacking it for others never run."""
    dequantize: relay.DequantizeOp | None = None
    """A dequantize of the chain's last value (the model's quantized part ends
    there): the kernel writes the floats, not the bytes then the floats."""

    @property
    def ops(self) -> list[Operation]:
        ops = [o for o in (self.root, self.bias, self.requantize, self.clip) if o is not None]
        for add in self.adds:
            ops += [o for o in (add.op, add.clip) if o is not None]
        if self.dequantize is not None:
            ops.append(self.dequantize)
        return ops

    @property
    def result(self) -> SSAValue:
        return self.ops[-1].results[0]


def _element(value: SSAValue) -> Attribute:
    typ = value.type
    assert isinstance(typ, TensorType)
    return typ.element_type


def _only_user(value: SSAValue) -> Operation | None:
    return value.get_user_of_unique_use()


def _channel_axis(op: Operation, rank: int) -> int:
    return relay.normalize_axis(op.attrs()["axis"], rank, op.name)  # type: ignore[attr-defined]


def match_chain(op: Operation) -> Chain | None:
    """The chain rooted at `op`, if a kernel here computes it."""
    if isinstance(op, relay.QnnConv2dOp):
        weight = op.kernel
        kh, kw = _shape(weight)[2:]
        if op.attrs()["groups"] != 1 or _shape(weight)[1] * kh * kw < MIN_DEPTH:
            return None
    elif isinstance(op, relay.QnnDenseOp):
        weight = op.weight
        if _shape(weight)[1] < MIN_DEPTH or len(_shape(op.data)) < 2:
            return None
    else:
        return None
    if _element(weight) != INT8:
        return None
    rank = len(_shape(op.results[0]))
    channel = 1 if isinstance(op, relay.QnnConv2dOp) else rank - 1
    chain = Chain(op, None, None, None, packed=packed_weight(op))
    if chain.packed is None:
        return None
    value = op.results[0]
    user = _only_user(value)
    if isinstance(user, relay.BiasAddOp) and user.data == value:
        if _channel_axis(user, rank) != channel:
            return chain
        chain.bias, value, user = user, user.result, _only_user(user.result)
    if isinstance(user, relay.RequantizeOp) and _element(user.result) in (INT8, UINT8):
        per_channel = any(pymath.prod(_shape(v)) > 1 for v in user.operands[1:])
        if per_channel and _channel_axis(user, rank) != channel:
            return chain
        chain.requantize, value, user = user, user.result, _only_user(user.result)
        if isinstance(user, relay.ClipOp):
            chain.clip, value, user = user, user.result, _only_user(user.result)
        while isinstance(user, relay.QnnAddOp):
            add = _fusable_add(user, value, channel)
            if add is None:
                break
            chain.adds.append(add)
            value, user = user.result, _only_user(user.result)
            if isinstance(user, relay.ClipOp):
                add.clip, value, user = user, user.result, _only_user(user.result)
        if isinstance(user, relay.DequantizeOp) and user.data == value:
            per_channel = any(pymath.prod(_shape(v)) > 1 for v in user.operands[1:])
            if not per_channel or _channel_axis(user, rank) == channel:
                chain.dequantize = user
    return chain


def _fusable_add(op: relay.QnnAddOp, value: SSAValue, channel: int) -> FusedAdd | None:
    """`op` as an add the kernel's epilogue computes, if it adds `value` to a
    tensor read at the output's index: of the output's shape, or broadcast
    along the channel `channel` only (a bias)."""
    if op.operands[0] == op.operands[1]:
        return None
    add = FusedAdd(op, op.operands[0] == value)
    shape = _shape(value)
    if _shape(op.results[0]) != shape:
        return None
    other = _shape(add.other)
    lead = len(shape) - len(other)
    if other != shape and any(
        extent != 1 and lead + dim != channel for dim, extent in enumerate(other)
    ):
        return None
    return add


def _shape(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, TensorType | MemRefType)
    return tuple(typ.get_shape())


# --- Weights packed at compile time -------------------------------------------------------

_OHWI_TO_OIHW = (0, 3, 1, 2)


def _unary_source(value: SSAValue, kind: type[Operation]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def vnni_packed(matrix: np.ndarray) -> np.ndarray:
    """An int8 `[N, K]` matrix as libbyoc reads it, `[ceil(N / 16), ceil(K / 4),
    16, 4]`: element `[nb, g, l, i]` is `matrix[16 nb + l, 4 g + i]`, zeros
    past N and K."""
    import numpy as np

    units, depth = matrix.shape
    blocks, groups = -(-units // LANES), -(-depth // GROUP)
    padded = np.zeros((blocks * LANES, groups * GROUP), np.int8)
    padded[:units, :depth] = matrix
    return np.ascontiguousarray(
        padded.reshape(blocks, LANES, groups, GROUP).transpose(0, 2, 1, 3)
    )


_UNPACK_AXES = (0, 2, 1, 3)


def _packed_shape(units: int, depth: int) -> tuple[int, int, int, int]:
    return (-(-units // LANES), -(-depth // GROUP), LANES, GROUP)


def packed_matrix(value: SSAValue) -> SSAValue | None:
    """The packed `[ceil(N / 16), ceil(K / 4), 16, 4]` value that the `[N, K]`
    `value` unpacks, when it is `strided_slice(reshape(transpose(packed)))` as
    `pack_int8_weights` writes it (the slice left out when nothing is padded)."""
    units, depth = _shape(value)
    shape = _packed_shape(units, depth)
    rows, columns = shape[0] * LANES, shape[1] * GROUP
    source = value
    if (rows, columns) != (units, depth):
        cut = _unary_source(value, relay.StridedSliceOp)
        if cut is None or _shape(cut.operands[0]) != (rows, columns) or not _is_leading_cut(cut, (units, depth)):
            return None
        source = cut.operands[0]
    reshape = _unary_source(source, relay.ReshapeOp)
    if reshape is None or _shape(reshape.results[0]) != (rows, columns):
        return None
    transpose = _unary_source(reshape.operands[0], relay.TransposeOp)
    if transpose is None or tuple(transpose.attrs()["axes"] or ()) != _UNPACK_AXES:
        return None
    packed = transpose.operands[0]
    return packed if packed.type == TensorType(INT8, shape) else None


def packed_weight(op: relay.QnnConv2dOp | relay.QnnDenseOp) -> SSAValue | None:
    """The packed weight libbyoc reads for `op`, when `pack_int8_weights`
    packed it: a dense's `[N, K]` weight, or a conv2d's OIHW weight as the
    `[O, C * KH * KW]` matrix of its rows in the patches' order (i, j, c),
    `transpose(reshape(matrix))`."""
    if isinstance(op, relay.QnnDenseOp):
        return packed_matrix(op.weight)
    direct = packed_direct(op.kernel)
    if direct is not None:
        return direct
    transpose = _unary_source(op.kernel, relay.TransposeOp)
    if transpose is None or tuple(transpose.attrs()["axes"] or ()) != _OHWI_TO_OIHW:
        return None
    reshape = _unary_source(transpose.operands[0], relay.ReshapeOp)
    n_out, channels, kh, kw = _shape(op.kernel)
    if reshape is None or _shape(reshape.results[0]) != (n_out, kh, kw, channels):
        return None
    matrix = reshape.operands[0]
    if _shape(matrix) != (n_out, channels * kh * kw):
        return None
    return packed_matrix(matrix)


def pack_int8_weights(op: Operation) -> None:
    """ccompiler's `alter_op` for quantized products with constant weights, so
    their kernels prepare nothing per call (TVM's AlterOpLayout and QNN
    canonicalisation, folded at compile time):

    - a one-group `relay.qnn.conv2d` reads its OIHW weight through
      `transpose(reshape(strided_slice(packed)))`, `packed` the constant
      `[O, padded depth]` the kernel reads (`packed_conv2d_weight`): the
      unpacking ops are what the host or any other code runs, the kernel takes
      `packed` itself;
    - a `relay.qnn.dense` of uint8 data with a constant zero point zx gets zero
      point 0 and the bias `- zx * (sum_k w[n, k] - K * zw[n])` added to its
      bias (exact in int32: `sum (x - zx)(w - zw) = sum x (w - zw) - zx sum (w - zw)`),
      so its kernel sums no weights; of int8 data, which the kernel reads as
      `x + 128`, zero point -128 and `zx + 128` in the bias;
    - a weight zero point of per-channel zeros becomes the scalar 0.
    """
    if isinstance(op, relay.QnnConv2dOp | relay.QnnDenseOp):
        _scalar_zero_weight_point(op)
    if isinstance(op, relay.QnnConv2dOp):
        _pack_conv2d(op)
    elif isinstance(op, relay.QnnDenseOp):
        _fold_dense_zero_point(op)
        _pack_dense(op)


def _scalar_zero_weight_point(op: relay.QnnConv2dOp | relay.QnnDenseOp) -> None:
    """A per-channel weight zero point of constant zeros (what `quantize_static`
    writes for symmetric int8 weights) becomes the scalar 0: the kernel's
    C then folds the zero point away instead of reading an array of zeros
    per output channel (0.191 to 0.180 ms on the bench's QDQ CNN)."""
    zero = constant_value(op.operands[3])
    if zero is None or zero.size <= 1 or zero.any():
        return
    import numpy as np

    old = op.operands[3].owner
    scalar = _insert_before(op, relay.ConstantOp.from_numpy(np.zeros((), zero.dtype)))
    op.operands[3] = scalar.results[0]
    _erase_if_unused(old if isinstance(old, Operation) else None)


def _insert_before(op: Operation, new: Operation) -> Operation:
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(new, op)
    return new


def _erase_if_unused(op: Operation | None) -> None:
    if op is not None and all(r.first_use is None for r in op.results):
        erase_op(op)


def _packed_constant(op: Operation, matrix: np.ndarray) -> SSAValue:
    """The constant `vnni_packed(matrix)` inserted before `op`, and the ops
    unpacking it to `matrix`'s `[N, K]` (what the host, or any code but
    libbyoc's, runs), tagged with `op`'s target; returns the unpacked value."""
    units, depth = matrix.shape
    packed = vnni_packed(matrix)
    target = {k: v for k, v in op.attributes.items() if k == TARGET_ATTR}
    value = _insert_before(op, relay.ConstantOp.from_numpy(packed)).results[0]
    unpacking: list[Operation] = [relay.TransposeOp(value, _UNPACK_AXES)]
    unpacking.append(relay.ReshapeOp(unpacking[-1].results[0], [packed.shape[0] * LANES, packed.shape[1] * GROUP]))
    if (packed.shape[0] * LANES, packed.shape[1] * GROUP) != (units, depth):
        unpacking.append(relay.StridedSliceOp(unpacking[-1].results[0], [0, 0], [units, depth]))
    for new in unpacking:
        new.attributes.update(target)
        _insert_before(op, new)
    return unpacking[-1].results[0]


def _pack_conv2d(op: relay.QnnConv2dOp) -> None:
    weight = op.kernel.owner
    if not isinstance(weight, relay.ConstantOp) or _element(op.kernel) != INT8:
        return
    n_out, channels, kh, kw = _shape(op.kernel)
    taps = channels * kh * kw
    if op.attrs()["groups"] != 1 or taps < MIN_DEPTH:
        return
    if direct_conv(op):
        op.operands[1] = _direct_constant(op, weight.to_numpy())
        _erase_if_unused(weight)
        return
    matrix = weight.to_numpy().transpose(0, 2, 3, 1).reshape(n_out, taps)
    target = {k: v for k, v in op.attributes.items() if k == TARGET_ATTR}
    source = _packed_constant(op, matrix)
    reshape = _insert_before(op, relay.ReshapeOp(source, [n_out, kh, kw, channels]))
    transpose = _insert_before(op, relay.TransposeOp(reshape.results[0], _OHWI_TO_OIHW))
    for new in (reshape, transpose):
        new.attributes.update(target)
    op.operands[1] = transpose.results[0]
    _erase_if_unused(weight)


DIRECT_BLOCK, DIRECT_MAX_TAPS = 8, 64
"""libbyoc's direct convolution (`byoc_rt_int8_conv_products`, int8_direct.c):
output channels per packed block, and kernel taps (KH * KW) at most."""

_DIRECT_UNPACK_AXES = (0, 4, 1, 5, 2, 3)


def direct_conv(op: relay.QnnConv2dOp) -> bool:
    """Whether libbyoc's direct convolution computes `op`: one group, stride 1,
    no negative padding, at most DIRECT_MAX_TAPS taps, and a weight zero point
    that is a constant zero (symmetric weights, what `quantize_static` writes;
    others need each window's data sum, which im2col's patches give)."""
    attrs = op.attrs()
    n_out, channels, kh, kw = _shape(op.kernel)
    if attrs["groups"] != 1 or any(s != 1 for s in attrs["strides"]) or kh * kw > DIRECT_MAX_TAPS:
        return False
    if channels * kh * kw < MIN_DEPTH or _element(op.kernel) != INT8:
        return False
    zero = constant_value(op.operands[3])
    if zero is None or zero.any():
        return False
    rank = len(_shape(op.data))
    pads = relay.normalize_padding_nd(attrs["padding"], rank - 2, op.name)
    if rank != 4 or any(p < 0 for p in pads):
        return False
    sizes, outs = _shape(op.data)[2:], _shape(op.results[0])[2:]
    return all(
        outs[d] == pads[d] + sizes[d] + pads[d + 2] - attrs["dilation"][d] * (k - 1)
        for d, k in enumerate((kh, kw))
    )


def direct_packed(weight: np.ndarray) -> np.ndarray:
    """An int8 OIHW weight as libbyoc's direct convolution reads it,
    `[ceil(O / 8), ceil(C / 4), KH, KW, 8, 4]`: element `[b, g, i, j, m, l]` is
    `weight[8 b + m, 4 g + l, i, j]`, zeros past O and C."""
    import numpy as np

    n_out, channels, kh, kw = weight.shape
    blocks, groups = -(-n_out // DIRECT_BLOCK), -(-channels // GROUP)
    padded = np.zeros((blocks * DIRECT_BLOCK, groups * GROUP, kh, kw), np.int8)
    padded[:n_out, :channels] = weight
    shaped = padded.reshape(blocks, DIRECT_BLOCK, groups, GROUP, kh, kw)
    return np.ascontiguousarray(shaped.transpose(0, 2, 4, 5, 1, 3))


def _direct_constant(op: relay.QnnConv2dOp, weight: np.ndarray) -> SSAValue:
    """The constant `direct_packed(weight)` inserted before `op`, and the ops
    unpacking it to the OIHW weight (what any code but libbyoc's runs), tagged
    with `op`'s target; returns the unpacked value."""
    n_out, channels, kh, kw = weight.shape
    packed = direct_packed(weight)
    blocks, groups = packed.shape[:2]
    target = {k: v for k, v in op.attributes.items() if k == TARGET_ATTR}
    value = _insert_before(op, relay.ConstantOp.from_numpy(packed)).results[0]
    unpacking: list[Operation] = [relay.TransposeOp(value, _DIRECT_UNPACK_AXES)]
    full = [blocks * DIRECT_BLOCK, groups * GROUP, kh, kw]
    unpacking.append(relay.ReshapeOp(unpacking[-1].results[0], full))
    if full != [n_out, channels, kh, kw]:
        unpacking.append(relay.StridedSliceOp(unpacking[-1].results[0], [0, 0, 0, 0], [n_out, channels, kh, kw]))
    for new in unpacking:
        new.attributes.update(target)
        _insert_before(op, new)
    return unpacking[-1].results[0]


def packed_direct(value: SSAValue) -> SSAValue | None:
    """The packed `[ceil(O / 8), ceil(C / 4), KH, KW, 8, 4]` value that the OIHW
    `value` unpacks, when it is `strided_slice(reshape(transpose(packed)))` as
    `_direct_constant` writes it (the slice left out when nothing is padded)."""
    n_out, channels, kh, kw = _shape(value)
    shape = (-(-n_out // DIRECT_BLOCK), -(-channels // GROUP), kh, kw, DIRECT_BLOCK, GROUP)
    full = (shape[0] * DIRECT_BLOCK, shape[1] * GROUP, kh, kw)
    source = value
    if full != (n_out, channels, kh, kw):
        cut = _unary_source(value, relay.StridedSliceOp)
        if cut is None or _shape(cut.operands[0]) != full or not _is_leading_cut(cut, (n_out, channels, kh, kw)):
            return None
        source = cut.operands[0]
    reshape = _unary_source(source, relay.ReshapeOp)
    if reshape is None or _shape(reshape.results[0]) != full:
        return None
    transpose = _unary_source(reshape.operands[0], relay.TransposeOp)
    if transpose is None or tuple(transpose.attrs()["axes"] or ()) != _DIRECT_UNPACK_AXES:
        return None
    packed = transpose.operands[0]
    return packed if packed.type == TensorType(INT8, shape) else None


def _is_leading_cut(cut: relay.StridedSliceOp, end: tuple[int, ...]) -> bool:
    """Whether `cut` keeps `[0, end)` of every axis, with unit strides."""
    attrs = cut.attrs()
    strides = attrs["strides"]
    return (
        tuple(attrs["begin"]) == (0,) * len(end)
        and tuple(attrs["end"]) == end
        and not attrs["axes"]
        and not (strides and any(s != 1 for s in strides))
        and attrs["slice_mode"] == "end"
    )


def _pack_dense(op: relay.QnnDenseOp) -> None:
    weight = op.weight.owner
    if (
        not isinstance(weight, relay.ConstantOp)
        or _element(op.weight) != INT8
        or _shape(op.weight)[1] < MIN_DEPTH
        or len(_shape(op.data)) < 2
    ):
        return
    op.operands[1] = _packed_constant(op, weight.to_numpy())
    _erase_if_unused(weight)


def _fold_dense_zero_point(op: relay.QnnDenseOp) -> None:
    weight, data_zero, weight_zero = (constant_value(v) for v in op.operands[1:4])
    if (
        weight is None
        or data_zero is None
        or weight_zero is None
        or _element(op.data) not in (UINT8, INT8)
        or _element(op.weight) != INT8
        or data_zero.size != 1
        or len(_shape(op.data)) < 2
    ):
        return
    # The kernel reads int8 data as uint8 (x + 128): its zero point becomes
    # -128 (x + 128 - 0), and (zx + 128) times the weight sums moves to the bias.
    shift = 128 if _element(op.data) == INT8 else 0
    if int(data_zero.reshape(-1)[0]) + shift == 0:
        return
    import numpy as np

    units, depth = weight.shape
    if depth < MIN_DEPTH:
        return
    rank = len(_shape(op.results[0]))
    user = _only_user(op.results[0])
    bias_op = user if isinstance(user, relay.BiasAddOp) and user.data == op.results[0] else None
    bias = None
    if bias_op is not None:
        bias = constant_value(bias_op.bias)
        if bias is None or _channel_axis(bias_op, rank) != rank - 1:
            return
    zx = np.int64(data_zero.reshape(-1)[0]) + shift
    zw = np.broadcast_to(weight_zero.reshape(-1).astype(np.int64), (units,))
    correction = -zx * (weight.astype(np.int64).sum(axis=1) - depth * zw)
    total = correction if bias is None else correction + bias.astype(np.int64)
    folded = _insert_before(op, relay.ConstantOp.from_numpy(total.astype(np.int32)))
    zero = _insert_before(op, relay.ConstantOp.from_numpy(np.full(data_zero.shape, -shift, data_zero.dtype)))
    old_zero = op.operands[2].owner
    op.operands[2] = zero.results[0]
    _erase_if_unused(old_zero if isinstance(old_zero, Operation) else None)
    if bias_op is not None:
        old_bias = bias_op.bias.owner
        bias_op.operands[1] = folded.results[0]
        _erase_if_unused(old_bias if isinstance(old_bias, Operation) else None)
        return
    add = relay.BiasAddOp(op.results[0], folded.results[0], axis=rank - 1)
    add.attributes.update({k: v for k, v in op.attributes.items() if k == TARGET_ATTR})
    block = op.parent_block()
    assert block is not None
    block.insert_op_after(add, op)
    op.results[0].replace_all_uses_with(add.results[0])
    add.operands[0] = op.results[0]


# --- Outlining ---------------------------------------------------------------------------


def outline_int8_kernels(module: ModuleOp) -> int:
    """Replace every chain in `module`'s relay functions (the outlined
    functions, and the parts a large one is cut into) by a call of a new
    kernel function; returns how many."""
    count = 0
    for function in list(module.ops):
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        if is_loop_level(function):
            continue
        for op in list(function.body.block.ops):
            if op.parent is None:
                continue
            if _quantize_fits(op):
                name = f"{function.sym_name.data}_int8_{count}"
                module.body.block.insert_op_after(quantize_kernel(op, name), function)
                call = func.CallOp(SymbolRefAttr(name), list(op.operands), [op.results[0].type])
                call.location = op.location  # type: ignore[assignment]
                function.body.block.insert_op_before(call, op)
                call.res[0].name_hint = op.results[0].name_hint
                op.results[0].replace_all_uses_with(call.res[0])
                op.detach()
                op.erase()
                count += 1
                continue
            chain = match_chain(op)
            if chain is None:
                continue
            name = f"{function.sym_name.data}_int8_{count}"
            kernel, operands = build_kernel(chain, name)
            module.body.block.insert_op_after(kernel, function)
            call = func.CallOp(SymbolRefAttr(name), operands, [chain.result.type])
            call.location = chain.root.location  # type: ignore[assignment]
            function.body.block.insert_op_before(call, chain.ops[-1])
            call.res[0].name_hint = chain.result.name_hint
            chain.result.replace_all_uses_with(call.res[0])
            unpacking = chain.root.operands[1].owner
            for member in reversed(chain.ops):
                member.detach()
                member.erase()
            while isinstance(unpacking, relay.TransposeOp | relay.ReshapeOp | relay.StridedSliceOp):
                source = unpacking.operands[0].owner
                if unpacking.results[0].first_use is not None:
                    break
                erase_op(unpacking)
                unpacking = source
            count += 1
    return count


QUANTIZE_CHUNK = 16384
"""Values per call of libbyoc's quantize (about 2 us), a chunk of the pool."""


def _quantize_fits(op: Operation) -> bool:
    """Whether libbyoc's `byoc_rt_quantize` computes `op`: a `relay.qnn.quantize`
    of float32 to int8 or uint8 with one scale and zero point."""
    return (
        isinstance(op, relay.QuantizeOp)
        and _element(op.operands[0]) == f32
        and _element(op.results[0]) in (INT8, UINT8)
        and all(pymath.prod(_shape(v)) == 1 for v in op.operands[1:3])
    )


def quantize_kernel(op: relay.QuantizeOp, name: str) -> func.FuncOp:
    """The kernel function of `op`: chunks of the values (across cores when
    there are enough), each a call of libbyoc's quantize, which with AVX-512
    multiplies by the scale's reciprocal and divides only where the rounding
    could differ, bit for bit (the bench conv's input, 200704 values, alone
    at 1 thread: 0.044 ms for the generated division loop, 0.029 ms)."""
    arg_types = [_memref(v) for v in op.operands] + [_memref(op.results[0])]
    block = Block(arg_types=arg_types)
    data, scale, zero, out = block.args
    b = BodyBuilder(block, ConstantPool(block))
    values = pymath.prod(_shape(op.operands[0]))
    low, high = type_range(_element(op.results[0]))
    scale_value, zero_value = parameter(b, scale, None), parameter(b, zero, None)
    trips = -(-values // QUANTIZE_CHUNK)
    c_b, (t,) = nest(b, (trips,), ["chunk"])
    if values >= 4 * QUANTIZE_CHUNK:
        loop = c_b.block.parent_op()
        assert loop is not None
        loop.attributes[PARALLEL_ATTR] = UnitAttr()
        loop.attributes[CHUNKS_ATTR] = IntegerAttr(min(trips, 64), i64)
    first = value_of(c_b, index_mul(c_b, t, QUANTIZE_CHUNK))
    _call(c_b, QUANTIZE, values, first, QUANTIZE_CHUNK, data, scale_value, zero_value, low, high, out, reads=(data,))
    b.insert(func.ReturnOp(b.constant(0, I32)))
    return func.FuncOp(name, FunctionType.from_lists(arg_types, [I32]), Region(block), visibility="private")


def _memref(value: SSAValue) -> MemRefType:
    typ = value.type
    assert isinstance(typ, TensorType)
    return MemRefType(typ.element_type, typ.get_shape())


def build_kernel(chain: Chain, name: str) -> tuple[func.FuncOp, list[SSAValue]]:
    """The loop-level kernel function of `chain`, and the relay values to call it with."""
    root = chain.root
    assert chain.packed is not None
    operands = [root.operands[0], chain.packed, root.operands[2], root.operands[3]]
    if chain.bias is not None:
        operands.append(chain.bias.bias)
    if chain.requantize is not None:
        operands.extend(chain.requantize.operands[1:])
    for add in chain.adds:
        operands += [add.other, *add.parameters]
    if chain.dequantize is not None:
        operands += chain.dequantize.operands[1:]
    arg_types = [_memref(v) for v in operands] + [_memref(chain.result)]
    block = Block(arg_types=arg_types)
    args = list(block.args)
    b = BodyBuilder(block, ConstantPool(block))
    params = KernelParams.of(chain, args)
    if isinstance(root, relay.QnnConv2dOp) and len(_shape(chain.packed)) == 6:
        direct_conv_kernel(b, root, params)
    elif isinstance(root, relay.QnnConv2dOp):
        conv_kernel(b, root, params)
    else:
        dense_kernel(b, params)
    b.insert(func.ReturnOp(b.constant(0, I32)))
    kernel = func.FuncOp(
        name, FunctionType.from_lists(arg_types, [I32]), Region(block), visibility="private"
    )
    return kernel, operands


@dataclass
class AddParams:
    """A fused `relay.qnn.add`'s arguments: the other tensor, the scales and zero
    points (the chain's side, the other side, the output), the output's element
    type and its range narrowed by the add's clip."""

    other: SSAValue
    own_scale: SSAValue
    own_zero: SSAValue
    other_scale: SSAValue
    other_zero: SSAValue
    out_scale: SSAValue
    out_zero: SSAValue
    element: Attribute
    bounds: tuple[int, int]


def _bounds(element: Attribute, clip: relay.ClipOp | None) -> tuple[int, int]:
    """`element`'s range, narrowed by `clip`."""
    bounds = type_range(element)
    if clip is None:
        return bounds
    low, high = relay.integer_clip_bounds(element, clip.attrs()["a_min"], clip.attrs()["a_max"])
    return max(bounds[0], low), min(bounds[1], high)


@dataclass
class KernelParams:
    """The kernel's arguments, by meaning."""

    data: SSAValue
    weight: SSAValue
    data_zero: SSAValue
    weight_zero: SSAValue
    bias: SSAValue | None
    in_scale: SSAValue | None
    in_zero: SSAValue | None
    out_scale: SSAValue | None
    out_zero: SSAValue | None
    out: SSAValue
    bounds: tuple[int, int] | None
    """The requantized integer range, narrowed by the clip (None: int32 output)."""
    weight_zero_is_zero: bool
    element: Attribute | None = None
    """The requantized element type (None: int32 output)."""
    adds: list[AddParams] = field(default_factory=list)
    data_zero_is_zero: bool = False
    """Data whose zero point is a constant 0 as the kernel reads them (uint8:
    0; int8, read as `x + 128`: -128): no weight sums needed."""
    float_scale: SSAValue | None = None
    float_zero: SSAValue | None = None
    """The fused dequantize's scale and zero point (None: none)."""

    @staticmethod
    def of(chain: Chain, args: list[SSAValue]) -> KernelParams:
        data, weight, data_zero, weight_zero = args[:4]
        rest = args[4:-1]
        bias = rest.pop(0) if chain.bias is not None else None
        in_scale = in_zero = out_scale = out_zero = element = None
        bounds = None
        adds = []
        if chain.requantize is not None:
            in_scale, in_zero, out_scale, out_zero = rest[:4]
            element = _element(chain.requantize.result)
            bounds = _bounds(element, chain.clip)
            rest = rest[4:]
            for add in chain.adds:
                values, rest = rest[:7], rest[7:]
                add_element = _element(add.op.results[0])
                adds.append(AddParams(*values, add_element, _bounds(add_element, add.clip)))
        float_scale, float_zero = rest if chain.dequantize is not None else (None, None)
        known = constant_value(chain.root.operands[3])
        known_data = constant_value(chain.root.operands[2])
        return KernelParams(
            data, weight, data_zero, weight_zero, bias, in_scale, in_zero, out_scale,
            out_zero, args[-1], bounds, known is not None and not known.any(), element, adds,
            known_data is not None
            and known_data.size == 1
            and int(known_data.reshape(-1)[0]) + (128 if _element(chain.root.operands[0]) == INT8 else 0) == 0,
            float_scale,
            float_zero,
        )


# --- The kernels -----------------------------------------------------------------------


def _xor_sign(b: BodyBuilder, value: SSAValue) -> SSAValue:
    """An int8 value as the uint8 `value + 128` (bits of the unsigned byte)."""
    return b.scalar(arith.XOrIOp, value, b.constant(-128, INT8))


def _unsigned_i32(b: BodyBuilder, value: SSAValue) -> SSAValue:
    """A byte read as unsigned, widened to i32."""
    return b.scalar(arith.ExtUIOp, value, result_type=I32)


def _signed_i32(b: BodyBuilder, value: SSAValue) -> SSAValue:
    return b.scalar(arith.ExtSIOp, value, result_type=I32)


def _add(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(arith.AddiOp, x, y)


def _sub(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(arith.SubiOp, x, y)


def _mul(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.scalar(arith.MuliOp, x, y)


def _scalar_cell(b: BodyBuilder, name: str, value: SSAValue) -> SSAValue:
    """A rank-0 `memref.alloca` at this point (inside the loop: private to an
    iteration, a register for the C compiler), holding `value`."""
    cell = b.insert(memref.AllocaOp.get(I32, shape=())).memref
    cell.name_hint = name
    store(b, value, cell, [])
    return cell


@dataclass
class Epilogue:
    """Per output channel: `correction[n]` (bias, zero points, weight sums) and
    `multiplier[n]` (input over output scale); per row: the data sums."""

    correction: SSAValue
    multiplier: SSAValue | None
    row_sums: SSAValue | None
    params: KernelParams

    def finish(
        self, b: BodyBuilder, acc: SSAValue, row: Index, unit: Index, at: list[Index]
    ) -> SSAValue:
        """The output value of accumulator `acc` of `row` and output channel
        `unit`, stored at index `at` of the output."""
        p = self.params
        total = _add(b, acc, load(b, self.correction, [unit]))
        if self.row_sums is not None:
            w_zero = parameter(b, p.weight_zero, unit)
            total = _sub(b, total, _mul(b, w_zero, load(b, self.row_sums, [row])))
        if self.multiplier is None:
            return total
        assert p.out_zero is not None and p.bounds is not None and p.element is not None
        value = b.scalar(arith.MulfOp, to_f32(b, total), load(b, self.multiplier, [unit]))
        out_zero = parameter(b, p.out_zero, unit)
        result = saturate_round(b, value, out_zero, p.element, p.bounds)
        for add in p.adds:
            result = _add_epilogue(b, add, result, at)
        if p.float_scale is not None:
            assert p.float_zero is not None
            # relay.qnn.dequantize as lower_qnn.lower_dequantize computes it.
            shifted = _sub(b, to_i32(b, result), parameter(b, p.float_zero, unit))
            result = b.scalar(arith.MulfOp, to_f32(b, shifted), parameter(b, p.float_scale, unit))
        return result


def _add_epilogue(b: BodyBuilder, add: AddParams, value: SSAValue, at: list[Index]) -> SSAValue:
    """`relay.qnn.add` of the quantized `value` and the other tensor at `at`, as
    `lower_qnn_binary` computes it (each term scaled, one rounding)."""
    out_scale = parameter(b, add.out_scale, None)

    def term(quantized: SSAValue, scale: SSAValue, zero: SSAValue) -> SSAValue:
        shifted = _sub(b, to_i32(b, quantized), parameter(b, zero, None))
        ratio = b.scalar(arith.DivfOp, parameter(b, scale, None), out_scale)
        return b.scalar(arith.MulfOp, ratio, to_f32(b, shifted))

    shape = shape_of(add.other)
    lead = len(at) - len(shape)
    other = load(b, add.other, [0 if n == 1 else at[lead + d] for d, n in enumerate(shape)])
    total = b.scalar(
        arith.AddfOp,
        term(value, add.own_scale, add.own_zero),
        term(other, add.other_scale, add.other_zero),
    )
    return saturate_round(b, total, parameter(b, add.out_zero, None), add.element, add.bounds)


def _prepare(
    b: BodyBuilder,
    p: KernelParams,
    units: int,
    depth: int,
    data_zero: SSAValue,
    weight_sums: Callable[[BodyBuilder], SSAValue] | None = None,
) -> tuple[SSAValue, SSAValue | None]:
    """Per output channel n: the int32 correction `bias[n] - in_zero[n] -
    zx * sum_k w[n, k] + K * zx * zw[n]` and the float multiplier; the weight
    sums `[1, units]` by `weight_sums` (default: of the products' packing)."""
    correction = alloc(b, MemRefType(I32, (units,)))
    correction.name_hint = "correction"
    multiplier = None
    if p.in_scale is not None:
        multiplier = alloc(b, MemRefType(f32, (units,)))
        multiplier.name_hint = "multiplier"
    sums = None
    if not p.data_zero_is_zero:
        sums = (weight_sums or (lambda wb: _weight_sums(wb, p.weight, units, depth)))(b)
    n_b, (n,) = nest(b, (units,), ["n"])
    if sums is None:
        value = n_b.constant(0, I32)
    else:
        w_zero = parameter(n_b, p.weight_zero, n)
        value = _mul(n_b, data_zero, _mul(n_b, n_b.constant(depth, I32), w_zero))
        value = _sub(n_b, value, _mul(n_b, data_zero, load(n_b, sums, [0, n])))
    if p.bias is not None:
        value = _add(n_b, value, load(n_b, p.bias, [n]))
    if p.in_zero is not None:
        value = _sub(n_b, value, parameter(n_b, p.in_zero, n))
    store(n_b, value, correction, [n])
    if multiplier is not None:
        assert p.in_scale is not None and p.out_scale is not None
        ratio = n_b.scalar(
            arith.DivfOp, parameter(n_b, p.in_scale, n), parameter(n_b, p.out_scale, n)
        )
        store(n_b, ratio, multiplier, [n])
    if sums is not None:
        dealloc(b, sums)
    return correction, multiplier


def _weight_sums(b: BodyBuilder, packed: SSAValue, units: int, depth: int) -> SSAValue:
    """`sums[0, n] = sum_k w[n, k]`: libbyoc's products of a row of ones with
    the packed weight (one `vpdpbusd` per 64 bytes of it, not a loop over its
    bytes adding each to a sum in memory)."""
    ones = alloc(b, MemRefType(UINT8, (1, depth)))
    ones.name_hint = "ones"
    o_b, (k,) = nest(b, (depth,), ["k"])
    store(o_b, o_b.constant(1, UINT8), ones, [0, k])
    sums = alloc(b, MemRefType(I32, (1, units)))
    sums.name_hint = "weight_sums"
    tile_products(b, ones, 0, 1, depth, packed, sums, rows_first=True)
    dealloc(b, ones)
    return sums


def _row_sums(
    b: BodyBuilder,
    rows: int,
    depth: int,
    read: Callable[[BodyBuilder, Index, Index], SSAValue],
    sums: SSAValue | None = None,
    first: Index = 0,
) -> SSAValue:
    """`sums[m] = sum_k x'[m, k]` (for weight zero points that are not zero)
    for the `rows` rows from `first`, into `sums` (a new buffer of `rows`)."""
    if sums is None:
        sums = alloc(b, MemRefType(I32, (rows,)))
        sums.name_hint = "row_sums"
    m_b, (m,) = nest(b, (rows,), ["m"])
    row = index_add(m_b, first, m)
    cell = _scalar_cell(m_b, "xsum", m_b.constant(0, I32))
    k_b, (k,) = nest(m_b, (depth,), ["k"])
    store(k_b, _add(k_b, load(k_b, cell, []), read(k_b, row, k)), cell, [])
    store(m_b, load(m_b, cell, []), sums, [row])
    return sums


Reader = Callable[[BodyBuilder, Index, Index], SSAValue]
"""`(builder, row, k) -> the data byte as unsigned i32`."""

PRODUCTS = "byoc_rt_int8_products"
"""libbyoc's int8 products (byoc_runtime.h), called from the kernels' C."""
DIRECT_PRODUCTS = "byoc_rt_int8_conv_products"
DIRECT_REQUANTIZE = "byoc_rt_int8_conv_requantize"
DIRECT_DEQUANTIZE = "byoc_rt_int8_conv_dequantize"
QUANTIZE = "byoc_rt_quantize"
PACK_IMAGE = "byoc_rt_int8_pack_image"
DIRECT_SUMS = "byoc_rt_int8_conv_weight_sums"
"""libbyoc's direct convolution (int8_direct.c)."""
DIRECT_SLACK = 64
"""Bytes after the packed grid that a vector of the last positions may read."""


def tile_products(
    b: BodyBuilder,
    data: SSAValue,
    first_row: Index,
    count: int,
    depth: int,
    weight: SSAValue,
    tile: SSAValue,
    rows_first: bool,
) -> None:
    """`tile[i, u]` (`tile[u, i]` unless `rows_first`) `= sum_k data[first_row
    + i, k] * weight[u, k]` for `i < count` and every output channel `u`: a
    call of libbyoc's VNNI products (`data` unsigned bytes, rows of `depth`
    bytes one after another; `weight` packed)."""
    units = _shape(tile)[1 if rows_first else 0]
    row_step, unit_step = (units, 1) if rows_first else (1, count)
    integers = [b.index(n) for n in (count, units, depth)]
    steps = [b.index(n) for n in (row_step, unit_step)]
    _call(b, PRODUCTS, *integers, data, value_of(b, first_row), depth, weight, tile, *steps, reads=(data, weight))


def _tile(b: BodyBuilder, shape: tuple[int, int]) -> SSAValue:
    """An int32 tile on the stack at this point (private to a parallel iteration)."""
    tile = b.insert(memref.AllocaOp.get(I32, shape=shape)).memref
    tile.name_hint = "tile"
    return tile


def _worth_parallel(work: int, trips: int) -> bool:
    return work >= PARALLEL_MIN_WORK and trips > 1


def _if_else(b: BodyBuilder, condition: SSAValue) -> tuple[BodyBuilder, BodyBuilder]:
    """Builders in the then- and else-blocks of a new `scf.if condition`."""
    blocks = []
    for _ in range(2):
        block = Block()
        block.add_op(scf.YieldOp.create())
        blocks.append(block)
    b.insert(scf.IfOp.create(operands=(condition,), regions=tuple(Region(k) for k in blocks)))
    return tuple(b.at(k, k.last_op) for k in blocks)  # type: ignore[return-value]


def _parallel(loop_body: BodyBuilder, work: int, trips: int) -> None:
    """Mark the loop around `loop_body` to run across cores when it pays."""
    if _worth_parallel(work, trips):
        loop = loop_body.block.parent_op()
        assert loop is not None
        loop.attributes[PARALLEL_ATTR] = UnitAttr()
        loop.attributes[CHUNKS_ATTR] = IntegerAttr(max(2, min(trips, work // CHUNK_WORK)), i64)


TILE_BYTES = 16384
"""Most bytes of int32 sums a tile holds (on the stack of each thread)."""

ROW_BLOCK = 6
"""Rows of libbyoc's register block (int8.c's INT8_MR): tiles hold at least
this many rows."""


def dense_kernel(b: BodyBuilder, p: KernelParams) -> None:
    """qnn.dense `data [..., rows, K]` x `weight [N, K]`: tiles of ROW_BLOCK rows
    times every output channel, then their epilogue along the channels
    (contiguous in the output and the parameters: it vectorises)."""
    shape = shape_of(p.data)
    units, depth = _shape(p.out)[-1], shape[-1]
    outer, rows = shape[:-2], shape[-2]
    signed_data = p.data.type.element_type == INT8  # type: ignore[attr-defined]
    data_zero = parameter(b, p.data_zero, None)
    source = p.data
    if signed_data:
        data_zero = _add(b, data_zero, b.constant(128, I32))
        source = alloc(b, MemRefType(INT8, shape))
        source.name_hint = "flipped"
        cb, ivs = nest(b, shape)
        store(cb, _xor_sign(cb, load(cb, p.data, ivs)), source, ivs)
    correction, multiplier = _prepare(b, p, units, depth, data_zero)
    ob, lead = nest(b, outer, "t")

    def read(rb: BodyBuilder, row: Index, k: Index) -> SSAValue:
        return _unsigned_i32(rb, load(rb, source, [*lead, row, k]))

    row_sums = None if p.weight_zero_is_zero else _row_sums(ob, rows, depth, read)
    epilogue = Epilogue(correction, multiplier, row_sums, p)
    matrix = 0  # the first row of this matrix, in rows of the whole data
    for extent, index in zip(outer, lead):
        matrix = index_add(ob, index_mul(ob, matrix, extent), index)
    matrix = index_mul(ob, matrix, rows)

    def tiles(count: int, first: Callable[[BodyBuilder], Index], tb: BodyBuilder) -> None:
        base = first(tb)
        tile = _tile(tb, (count, units))
        tile_products(tb, source, index_add(tb, matrix, base), count, depth, p.weight, tile, rows_first=True)
        eb, (i, n) = nest(tb, (count, units), ["i", "n"])
        row = index_add(eb, base, i)
        at = [*lead, row, n]
        store(eb, epilogue.finish(eb, load(eb, tile, [i, n]), row, n, at), p.out, at)

    height = ROW_BLOCK * max(1, min(4, TILE_BYTES // (4 * units * ROW_BLOCK)))
    full = rows - rows % height
    trips = -(-rows // height)
    if full and full < rows and _worth_parallel(rows * units * depth, trips):
        # The last, shorter tile is a chunk of the parallel loop too: run after
        # it on the caller alone, it was 6% of the QDQ MLP's products serial
        # (4 of 64 rows), and the other threads waited for it.
        tb, (t,) = nest(ob, (trips,), ["tile"])
        _parallel(tb, rows * units * depth, trips)
        whole, last = _if_else(tb, compare_integers(tb, "slt", t, tb.index(full // height)))
        tiles(height, lambda eb: index_mul(eb, t, height), whole)
        tiles(rows - full, lambda eb: full, last)
    else:
        if full:
            tb, (t,) = nest(ob, (full // height,), ["tile"])
            _parallel(tb, rows * units * depth, full // height)
            tiles(height, lambda eb: index_mul(eb, t, height), tb)
        if full < rows:
            tiles(rows - full, lambda eb: full, ob)
    if row_sums is not None:
        dealloc(ob, row_sums)
    for buffer in (correction, multiplier):
        if buffer is not None:
            dealloc(b, buffer)
    if signed_data:
        dealloc(b, source)


def _call(b: BodyBuilder, name: str, *operands: SSAValue | int, reads: tuple[SSAValue, ...] = ()) -> None:
    """A call of libbyoc's `name` (byoc_runtime.h); ints are index constants;
    the memrefs `reads` it only reads (READS_ATTR)."""
    values = [b.index(x) if isinstance(x, int) else x for x in operands]
    call = b.insert(func.CallOp(name, values, []))
    read = [i for i, value in enumerate(values) if any(value is r for r in reads)]
    call.attributes[READS_ATTR] = DenseArrayBase.from_list(i64, read)


def _band_rows(out_rows: int, grid_width: int, out_width: int) -> int:
    """Output rows per band of the direct convolution: its products run in
    vectors of 16 positions of the grid, so a band of R rows computes
    `ceil16(R * grid_width - (grid_width - out_width))` positions. The R with
    the fewest positions over all bands (each band costing one vector more, for
    its calls), among those giving at least 4 bands (work for the cores) when
    there are that many rows."""

    def cost(rows: int) -> int:
        total = 0
        for first in range(0, out_rows, rows):
            count = min(rows, out_rows - first) * grid_width - (grid_width - out_width)
            total += -(-count // 16) * 16 + 16
        return total

    most = max(1, out_rows // 4) if out_rows >= 4 else out_rows
    return min(range(1, most + 1), key=lambda rows: (cost(rows), -rows))


def direct_conv_kernel(b: BodyBuilder, op: relay.QnnConv2dOp, p: KernelParams) -> None:
    """qnn.conv2d by libbyoc's direct convolution (int8_direct.c): per image,
    the image packed 4 channels side by side into the padded grid (padding:
    the zero point), then per band of output rows (the bands run across cores)
    the products of its grid positions, requantized by libbyoc straight from
    its registers when a requantize to bytes ends the chain (the bench's
    64->64 3x3 56x56 conv model: 0.674 to 0.642 ms at 1 thread), else into a
    tile `[O, positions]`
    and the epilogue along each output row (contiguous in the tile and the
    output: it vectorises)."""
    batch, channels, height, width = shape_of(p.data)
    n_out, _, kh, kw = _shape(op.kernel)
    rows_w, cols_w = _windows(op, p.data, p.out, (kh, kw))
    grid_rows = rows_w.pad + rows_w.size + rows_w.pad_after
    grid_width = cols_w.pad + cols_w.size + cols_w.pad_after
    out_rows, out_width = rows_w.outputs, cols_w.outputs
    groups = -(-channels // GROUP)
    signed_data = p.data.type.element_type == INT8  # type: ignore[attr-defined]
    data_zero = parameter(b, p.data_zero, None)
    if signed_data:
        data_zero = _add(b, data_zero, b.constant(128, I32))

    def weight_sums(wb: BodyBuilder) -> SSAValue:
        sums = alloc(wb, MemRefType(I32, (1, n_out)))
        sums.name_hint = "weight_sums"
        _call(wb, DIRECT_SUMS, n_out, groups * kh * kw, p.weight, sums, reads=(p.weight,))
        return sums

    correction, multiplier = _prepare(b, p, n_out, channels * kh * kw, data_zero, weight_sums)
    epilogue = Epilogue(correction, multiplier, None, p)
    positions = out_rows * grid_width
    grid = alloc(b, MemRefType(UINT8, (groups * grid_rows * grid_width * GROUP + DIRECT_SLACK,)))
    grid.name_hint = "grid"
    # A requantize to bytes with nothing after it is computed by libbyoc from
    # the registers; fused adds, or int32 sums, go through a tile.
    zeros = tile = float_scales = float_zeros = None
    if multiplier is not None and not p.adds:
        assert p.out_zero is not None and p.bounds is not None
        zeros = alloc(b, MemRefType(I32, (n_out,)))
        zeros.name_hint = "out_zero"
        if p.float_scale is not None:
            float_scales, float_zeros = alloc(b, MemRefType(f32, (n_out,))), alloc(b, MemRefType(I32, (n_out,)))
            float_scales.name_hint, float_zeros.name_hint = "float_scale", "float_zero"
        z_b, (n,) = nest(b, (n_out,), ["n"])
        store(z_b, parameter(z_b, p.out_zero, n), zeros, [n])
        if float_scales is not None and float_zeros is not None:
            assert p.float_scale is not None and p.float_zero is not None
            store(z_b, parameter(z_b, p.float_scale, n), float_scales, [n])
            store(z_b, parameter(z_b, p.float_zero, n), float_zeros, [n])
    else:
        tile = alloc(b, MemRefType(I32, (n_out, positions)))
        tile.name_hint = "tile"
    pad = b.scalar(arith.IndexCastOp, data_zero, result_type=IndexType())
    img_b, (img,) = nest(b, (batch,), ["img"])

    g_b, (g,) = nest(img_b, (groups,), ["g"])
    _parallel(g_b, groups * grid_rows * grid_width * GROUP, groups)
    _call(
        g_b, PACK_IMAGE, channels, height, width, p.data, value_of(g_b, img), groups, grid_rows,
        grid_width, rows_w.pad, cols_w.pad, pad, 0x80 if signed_data else 0, value_of(g_b, g),
        index_add(g_b, g, 1), grid, reads=(p.data,),
    )

    band = _band_rows(out_rows, grid_width, out_width)
    full, trips = out_rows // band, -(-out_rows // band)

    def products(pb: BodyBuilder, first_row: Index, count: int) -> None:
        first = value_of(pb, index_mul(pb, first_row, grid_width))
        geometry = (
            n_out, groups, kh, kw, rows_w.dilation, cols_w.dilation, grid_rows, grid_width, grid,
            first, count * grid_width - (grid_width - out_width), p.weight,
        )
        if tile is None:
            assert zeros is not None and multiplier is not None and p.bounds is not None
            requantize = (correction, multiplier, zeros, *p.bounds, p.out, value_of(pb, img), out_width, out_rows * out_width)
            if float_scales is None:
                _call(pb, DIRECT_REQUANTIZE, *geometry, *requantize, reads=(grid, p.weight, correction, multiplier, zeros))
                return
            assert float_zeros is not None
            _call(
                pb, DIRECT_DEQUANTIZE, *geometry, *requantize, float_scales, float_zeros,
                reads=(grid, p.weight, correction, multiplier, zeros, float_scales, float_zeros),
            )
            return
        _call(pb, DIRECT_PRODUCTS, *geometry, tile, positions, reads=(grid, p.weight))
        eb, (n, r, x) = nest(pb, (n_out, count, out_width), ["n", "r", "x"])
        y = index_add(eb, first_row, r)
        at = [img, n, y, x]
        position = index_add(eb, index_mul(eb, y, grid_width), x)
        store(eb, epilogue.finish(eb, load(eb, tile, [n, position]), position, n, at), p.out, at)

    t_b, (t,) = nest(img_b, (trips,), ["band"])
    _parallel(t_b, out_rows * out_width * n_out * channels * kh * kw, trips)
    if full == trips:
        products(t_b, index_mul(t_b, t, band), band)
    else:
        whole, last = _if_else(t_b, compare_integers(t_b, "slt", t, t_b.index(full)))
        products(whole, index_mul(whole, t, band), band)
        products(last, full * band, out_rows - full * band)
    for buffer in (grid, tile, zeros, float_scales, float_zeros, correction, multiplier):
        if buffer is not None:
            dealloc(b, buffer)


def conv_kernel(b: BodyBuilder, op: relay.QnnConv2dOp, p: KernelParams) -> None:
    """qnn.conv2d (one group): each image transposed to channels last; then,
    per output row (the rows run across cores), its pixels' windows copied as
    rows of `[pixels, C*KH*KW]` (padding: the zero point), padded to whole
    groups of 4 bytes, and per stretch of the row a tile of pixels times every
    output channel (libbyoc, the weight packed in the patches' order) and its
    epilogue along the row (contiguous in the output: it vectorises). Copying
    every window before the rows split left that copy on one core: 15% of the
    QDQ CNN at one thread, serial at two."""
    batch, channels, _, _ = shape_of(p.data)
    n_out, _, kh, kw = _shape(op.kernel)
    rows_w, cols_w = _windows(op, p.data, p.out, (kh, kw))
    height, width = rows_w.outputs, cols_w.outputs
    pixels = height * width
    depth = grouped_depth(channels * kh * kw)
    element = p.data.type.element_type  # type: ignore[attr-defined]
    signed_data = element == INT8
    data_zero = parameter(b, p.data_zero, None)
    if signed_data:
        data_zero = _add(b, data_zero, b.constant(128, I32))
    correction, multiplier = _prepare(b, p, n_out, depth, data_zero)
    patches = alloc(b, MemRefType(element, (pixels, depth)))
    patches.name_hint = "patches"
    pad_byte = b.scalar(arith.TruncIOp, data_zero, result_type=element)
    img_b, (img,) = nest(b, (batch,), ["img"])
    rows_last = _channels_last(img_b, p.data, img, element, signed_data)

    def read(rb: BodyBuilder, row: Index, k: Index) -> SSAValue:
        return _unsigned_i32(rb, load(rb, patches, [row, k]))

    row_sums = None
    if not p.weight_zero_is_zero:
        row_sums = alloc(img_b, MemRefType(I32, (pixels,)))
        row_sums.name_hint = "row_sums"
    epilogue = Epilogue(correction, multiplier, row_sums, p)
    stretch = min(width, max(ROW_BLOCK, TILE_BYTES // (4 * n_out)))
    y_b, (y,) = nest(img_b, (height,), ["y"])
    _parallel(y_b, pixels * n_out * depth, height)
    _im2col_row(y_b, rows_last, y, patches, rows_w, cols_w, (channels, kh, kw), pad_byte)
    if row_sums is not None:
        _row_sums(y_b, width, depth, read, row_sums, index_mul(y_b, y, width))

    def segment(sb: BodyBuilder, x0: Index, count: int) -> None:
        base = index_add(sb, index_mul(sb, y, width), x0)
        tile = _tile(sb, (n_out, count))
        tile_products(sb, patches, base, count, depth, p.weight, tile, rows_first=False)
        eb, (n, x) = nest(sb, (n_out, count), ["n", "x"])
        at = [img, n, y, index_add(eb, x0, x)]
        value = epilogue.finish(eb, load(eb, tile, [n, x]), index_add(eb, base, x), n, at)
        store(eb, value, p.out, at)

    full = width - width % stretch
    if full:
        sb, (s,) = nest(y_b, (full // stretch,), ["s"])
        segment(sb, index_mul(sb, s, stretch), stretch)
    if full < width:
        segment(y_b, full, width - full)
    dealloc(img_b, rows_last)
    if row_sums is not None:
        dealloc(img_b, row_sums)
    for buffer in (patches, correction, multiplier):
        if buffer is not None:
            dealloc(b, buffer)


def _channels_last(
    b: BodyBuilder, data: SSAValue, img: Index, element: Attribute, flip: bool
) -> SSAValue:
    """Image `img` of `data` as rows of `W * C` bytes (channels last; sign bit
    flipped when `flip`), so a tap's C channels, and with no dilation a whole
    window row of `KW * C` bytes, are one contiguous copy: the copies
    vectorise, where writing the patches tap by tap would store single bytes a
    patch row apart."""
    _, channels, height, width = shape_of(data)
    rows_last = alloc(b, MemRefType(element, (height, width * channels)))
    rows_last.name_hint = "channels_last"
    t_b, (c, y, x) = nest(b, (channels, height, width), ["c", "y", "x"])
    value = load(t_b, data, [img, c, y, x])
    if flip:
        value = _xor_sign(t_b, value)
    store(t_b, value, rows_last, [y, index_add(t_b, index_mul(t_b, x, channels), c)])
    return rows_last


def _im2col_row(
    b: BodyBuilder,
    rows_last: SSAValue,
    oy: Index,
    patches: SSAValue,
    rows: Window,
    cols: Window,
    kernel: tuple[int, int, int],
    pad_byte: SSAValue,
) -> None:
    """`patches[oy * OW + ox, (i * KW + j) * C + c] = image[c, iy, ix]` for
    every pixel of output row `oy` (`rows_last`: the image channels last), the
    padding's entries and the columns after the taps (whole groups of 4 bytes)
    the zero point: each patch byte of the row is written once."""
    channels, kh, kw = kernel
    _, depth = _shape(patches)
    taps = channels * kh * kw
    out_width = cols.outputs
    row_base = index_mul(b, oy, out_width)

    def fill(fb: BodyBuilder, ox: Index, column: int, count: int) -> None:
        pixel = index_add(fb, row_base, ox)
        q_b, (q,) = nest(fb, (count,), ["q"])
        store(q_b, pad_byte, patches, [pixel, index_add(q_b, q, column)])

    def copy(cb: BodyBuilder, ox: Index, column: int, iy: Index, ix: Index, count: int) -> None:
        """`count` bytes of input row iy from column `ix` (channel 0) to the
        patch of pixel (oy, ox) from `column`."""
        pixel = index_add(cb, row_base, ox)
        source = index_mul(cb, ix, channels)
        q_b, (q,) = nest(cb, (count,), ["q"])
        byte = load(q_b, rows_last, [iy, index_add(q_b, source, q)])
        store(q_b, byte, patches, [pixel, index_add(q_b, q, column)])

    inside: list[int] = []
    if cols.dilation == 1:
        # Pixels whose whole window row is inside the image copy KW * C bytes at
        # once; the few at the borders copy tap by tap.
        inside = [
            ox for ox in range(out_width)
            if ox * cols.stride - cols.pad >= 0
            and ox * cols.stride - cols.pad + kw - 1 < cols.size
        ]
    border = [ox for ox in range(out_width) if not inside or not inside[0] <= ox <= inside[-1]]

    def window_row(rb: BodyBuilder, i: int) -> None:
        """Kernel row `i` of every pixel of the row, its input row inside the image."""
        iy = index_add(rb, index_mul(rb, oy, rows.stride), i * rows.dilation - rows.pad)
        if inside:
            x_b, ox = for_range(rb, inside[0], inside[-1] + 1, "ox")
            ix = index_add(x_b, index_mul(x_b, ox, cols.stride), -cols.pad)
            copy(x_b, ox, i * kw * channels, iy, ix, kw * channels)
        for ox in border:
            for j in range(kw):
                ix = ox * cols.stride + j * cols.dilation - cols.pad
                if 0 <= ix < cols.size:
                    copy(rb, ox, (i * kw + j) * channels, iy, ix, channels)
                else:
                    fill(rb, ox, (i * kw + j) * channels, channels)

    def padding_row(rb: BodyBuilder, i: int) -> None:
        """Kernel row `i` of every pixel of the row, its input row in the padding."""
        x_b, ox = for_range(rb, 0, out_width, "ox")
        fill(x_b, ox, i * kw * channels, kw * channels)

    for i in range(kh):
        first, end = rows.outputs_of(b, i)  # the output rows whose row i is inside
        if isinstance(oy, int):
            (window_row if first <= oy < end else padding_row)(b, i)
        elif first >= end:
            padding_row(b, i)
        elif first == 0 and end == rows.outputs:
            window_row(b, i)
        else:
            conditions = []
            if first > 0:
                conditions.append(compare_integers(b, "sge", oy, b.index(first)))
            if end < rows.outputs:
                conditions.append(compare_integers(b, "slt", oy, b.index(end)))
            condition = conditions[0]
            if len(conditions) == 2:
                condition = b.scalar(arith.AndIOp, *conditions)
            in_image, in_padding = _if_else(b, condition)
            window_row(in_image, i)
            padding_row(in_padding, i)
    if taps < depth:
        x_b, ox = for_range(b, 0, out_width, "ox")
        fill(x_b, ox, taps, depth - taps)
