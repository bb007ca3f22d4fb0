"""The converter of ONNX's Attention (opsets 23 and 24): scaled dot-product
attention resolved at import into relay's batch matmuls, softmax and
elementwise ops, so the partitioner and every backend see ops they know.

What the node may add, in the order ONNX applies it:
- 3-d inputs `[batch, seq, heads * size]` split into heads (`q_num_heads`,
  `kv_num_heads`), and joined again in the output;
- the cache: `past_key`/`past_value` concatenated before the new keys and
  values (outputs 1 and 2 are the results);
- grouped-query attention: each key/value head serves `q_heads / kv_heads`
  consecutive query heads;
- `softcap * tanh(scores / softcap)`, then an additive bias: the mask (bool:
  false is -inf; shorter than the keys: padded with -inf), the causal and
  sliding-window frontiers (aligned bottom-right: a query `i` sees key `j`
  while `j <= i + offset`, the offset being the cache's length, or per batch
  `nonpad_kv_seqlen - q_len`), and the padding of `nonpad_kv_seqlen`;
- the softmax, whose rows with every key masked are 0 (not NaN), and the
  product with the values. Output 3 is the scores at `qk_matmul_output_mode`.

A bias known at import (causal or window frontiers with a fixed offset) is a
constant; one that depends on a mask or `nonpad_kv_seqlen` is computed.

float16 attention computes in float32 (Q, K, V and a float mask converted on
the way in, outputs 0 and 3 rounded back once at the end), as onnxruntime's
CPU kernels do: scores, softmax and sums rounded to half at every step drift
beyond the half-precision tests' tolerance. The cache outputs are the inputs
concatenated, in float16, with no round trip."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import Float16Type, IntegerType
from xdsl.ir import SSAValue

from byoc.dialects import relay
from byoc.frontend.onnx.graph import Converter, Node, shape_of

_NEG_INF = np.float32(-np.inf)


def _int64(node: Node, array: np.ndarray | int) -> SSAValue:
    """An int64 relay.constant (`Node.const` makes float32 ones)."""
    return node.emit(relay.ConstantOp.from_numpy(np.asarray(array, np.int64)))


def _heads(node: Node, value: SSAValue, heads: int, what: str) -> SSAValue:
    """`[B, S, H * D]` as `[B, H, S, D]`."""
    batch, length, hidden = shape_of(value)
    if heads < 1 or hidden % heads:
        raise node.error(f"{what}'s hidden size {hidden} is not a multiple of its {heads} heads")
    value = node.emit(relay.ReshapeOp(value, [batch, length, heads, hidden // heads]))
    return node.emit(relay.TransposeOp(value, [0, 2, 1, 3]))


def _repeat_heads(node: Node, value: SSAValue, times: int) -> SSAValue:
    """`[B, H, T, D]` with each head repeated `times` times in place: `[B, H * times, T, D]`."""
    if times == 1:
        return value
    b, h, t, d = shape_of(value)
    value = node.emit(relay.ReshapeOp(value, [b, h, 1, t, d]))
    value = node.emit(relay.BroadcastToOp(value, [b, h, times, t, d]))
    return node.emit(relay.ReshapeOp(value, [b, h * times, t, d]))


def _matmul(node: Node, x: SSAValue, y: SSAValue, transpose_b: bool) -> SSAValue:
    """`x [.., M, K]` times `y [.., K, N]` (or `y [.., N, K]` transposed) over
    equal leading dimensions."""
    *lead, m, k = shape_of(x)
    y_shape = shape_of(y)
    n = y_shape[-2] if transpose_b else y_shape[-1]
    batch = math.prod(lead)
    x = node.emit(relay.ReshapeOp(x, [batch, m, k]))
    y = node.emit(relay.ReshapeOp(y, [batch, *y_shape[-2:]]))
    out = node.emit(relay.BatchMatmulOp(x, y, transpose_b=transpose_b))
    return node.emit(relay.ReshapeOp(out, [*lead, m, n]))


def _scaled(node: Node, value: SSAValue, factor: float) -> SSAValue:
    if factor == 1.0:
        return value
    return node.emit(relay.MultiplyOp(value, node.const_like(factor, value)))


def _as_float32(node: Node, value: SSAValue) -> SSAValue:
    """`value` converted to float32 when it is float16 (see the module's doc)."""
    if isinstance(value.type.element_type, Float16Type):  # type: ignore[attr-defined]
        return node.emit(relay.CastOp(value, "float32"))
    return value


def _mask_bias(node: Node, keys: int) -> SSAValue | None:
    """Input 3 as an additive float bias whose last axis covers all `keys`."""
    if not node.has(3):
        return None
    mask = _as_float32(node, node.value(3))
    shape = shape_of(mask)
    if not shape:
        raise node.error("attn_mask (input 3) must have at least one axis")
    is_bool = isinstance(mask.type.element_type, IntegerType)  # type: ignore[attr-defined]
    if is_bool:
        mask = node.emit(
            relay.WhereOp(mask, node.const(np.float32(0.0)), node.const(_NEG_INF))
        )
    short = keys - shape[-1]
    if short < 0:
        raise node.error(f"attn_mask covers {shape[-1]} keys, more than the {keys} there are")
    if short:
        pad = node.const(np.full((*shape[:-1], short), _NEG_INF, np.float32))
        mask = node.emit(relay.ConcatenateOp([mask, pad], axis=len(shape) - 1))
    return mask


def _frontier(
    node: Node,
    queries: int,
    keys: int,
    offset: int | SSAValue,
    causal: bool,
    left: int,
    right: int,
) -> SSAValue | None:
    """The causal and sliding-window bias (0 where a query sees a key, -inf
    elsewhere): `[S, T]` for a fixed offset, `[B, 1, S, T]` for one per batch."""
    if not causal and left < 0 and right < 0:
        return None
    i = np.arange(queries, dtype=np.int64).reshape(queries, 1)
    j = np.arange(keys, dtype=np.int64).reshape(1, keys)
    if isinstance(offset, int):
        diff = i + offset - j
        allowed = np.ones((queries, keys), bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return node.const(np.where(allowed, np.float32(0.0), _NEG_INF))
    (batch,) = shape_of(offset)
    per_batch = node.emit(relay.ReshapeOp(offset, [batch, 1, 1]))
    diff = node.emit(
        relay.SubtractOp(node.emit(relay.AddOp(_int64(node, i), per_batch)), _int64(node, j))
    )
    allowed = None
    tests = []
    if causal:
        tests.append(relay.GreaterEqualOp(diff, _int64(node, 0)))
    if left >= 0:
        tests.append(relay.LessEqualOp(diff, _int64(node, left)))
    if right >= 0:
        tests.append(relay.GreaterEqualOp(diff, _int64(node, -right)))
    for test in tests:
        ok = node.emit(test)
        allowed = ok if allowed is None else node.emit(relay.LogicalAndOp(allowed, ok))
    bias = node.emit(relay.WhereOp(allowed, node.const(np.float32(0.0)), node.const(_NEG_INF)))
    return node.emit(relay.ReshapeOp(bias, [batch, 1, queries, keys]))


def _add(node: Node, x: SSAValue | None, y: SSAValue | None) -> SSAValue | None:
    if x is None or y is None:
        return y if x is None else x
    return node.emit(relay.AddOp(x, y))


def _attention(node: Node) -> list[SSAValue]:
    q, k, v = node.value(0), node.value(1), node.value(2)
    rank = len(shape_of(q))
    if rank not in (3, 4) or len(shape_of(k)) != rank or len(shape_of(v)) != rank:
        raise node.error(
            f"Q, K and V must all be 3-d or all 4-d, got ranks {rank}, "
            f"{len(shape_of(k))}, {len(shape_of(v))}"
        )
    for i in (0, 1, 2):
        element = node.value(i).type.element_type  # type: ignore[attr-defined]
        if isinstance(element, IntegerType):
            raise node.error(f"input {i} must be a float tensor, got {element}")
    if rank == 3:
        q_heads, kv_heads = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if q_heads is None or kv_heads is None:
            raise node.error("3-d inputs need the q_num_heads and kv_num_heads attributes")
        q = _heads(node, q, int(q_heads), "Q")
        k = _heads(node, k, int(kv_heads), "K")
        v = _heads(node, v, int(kv_heads), "V")
    batch, q_heads, queries, size = shape_of(q)
    if shape_of(k)[0] != batch or shape_of(v)[0] != batch:
        raise node.error("Q, K and V must have the same batch size")
    if node.has(4) != node.has(5):
        raise node.error("past_key and past_value (inputs 4 and 5) come together")
    past = 0
    if node.has(4):
        past = shape_of(node.value(4))[2]
        k = node.emit(relay.ConcatenateOp([node.value(4), k], axis=2))
        v = node.emit(relay.ConcatenateOp([node.value(5), v], axis=2))
    present_key, present_value = k, v
    half = isinstance(q.type.element_type, Float16Type)  # type: ignore[attr-defined]
    q, k, v = (_as_float32(node, value) for value in (q, k, v))
    kv_heads, keys = shape_of(k)[1], shape_of(k)[2]
    if shape_of(v)[1] != kv_heads or shape_of(v)[2] != keys or shape_of(k)[3] != size:
        raise node.error(
            f"K {list(shape_of(k))} and V {list(shape_of(v))} do not fit Q {list(shape_of(q))}"
        )
    if q_heads % kv_heads:
        raise node.error(f"{q_heads} query heads cannot share {kv_heads} key/value heads")
    k = _repeat_heads(node, k, q_heads // kv_heads)
    v = _repeat_heads(node, v, q_heads // kv_heads)

    scale = node.attr("scale")
    scale = 1.0 / math.sqrt(size) if scale is None else float(scale)
    root = float(np.float32(math.sqrt(scale)))  # on both Q and K, as ONNX's reference
    scores = _matmul(node, _scaled(node, q, root), _scaled(node, k, root), transpose_b=True)
    softcap = float(node.attr("softcap", 0.0) or 0.0)
    if softcap > 0:
        scores = node.emit(relay.DivideOp(scores, node.const_like(softcap, scores)))
        scores = node.emit(relay.TanhOp(scores))
        scores = _scaled(node, scores, softcap)

    nonpad = node.value(6) if node.has(6) else None
    if nonpad is not None and past:
        raise node.error("nonpad_kv_seqlen (input 6) cannot be combined with past_key")
    if nonpad is not None:
        if shape_of(nonpad) != (batch,):
            raise node.error(f"nonpad_kv_seqlen must have shape [{batch}]")
        nonpad = node.emit(relay.CastOp(nonpad, "int64"))
        offset: int | SSAValue = node.emit(
            relay.SubtractOp(nonpad, _int64(node, queries))
        )
    else:
        offset = past
    bias = _mask_bias(node, keys)
    frontier = _frontier(
        node,
        queries,
        keys,
        offset,
        bool(node.attr("is_causal", 0)),
        int(node.attr("left_window_size", -1)),
        int(node.attr("right_window_size", -1)),
    )
    bias = _add(node, bias, frontier)
    if nonpad is not None:
        seen = node.emit(relay.LessOp(
            _int64(node, np.arange(keys)),
            node.emit(relay.ReshapeOp(nonpad, [batch, 1])),
        ))
        padding = node.emit(
            relay.WhereOp(seen, node.const(np.float32(0.0)), node.const(_NEG_INF))
        )
        bias = _add(node, bias, node.emit(relay.ReshapeOp(padding, [batch, 1, 1, keys])))

    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise node.error(f"qk_matmul_output_mode is {mode}; it must be 0, 1, 2 or 3")
    exposed = scores
    biased = _add(node, scores, bias)
    assert biased is not None
    if mode == 2:
        exposed = biased
    weights = node.emit(relay.SoftmaxOp(biased, axis=-1))
    if bias is not None:
        # A query that sees no key gets zeros, decided on the bias (its scores
        # may be NaN): 0 @ V is 0.
        blocked = node.emit(relay.MaxOp(bias, axis=len(shape_of(bias)) - 1, keepdims=True))
        blocked = node.emit(relay.EqualOp(blocked, node.const(_NEG_INF)))
        weights = node.emit(relay.WhereOp(blocked, node.const(np.float32(0.0)), weights))
    if mode == 3:
        exposed = weights
    out = _matmul(node, weights, v, transpose_b=False)
    if rank == 3:
        out = node.emit(relay.TransposeOp(out, [0, 2, 1, 3]))
        b, s, h, d = shape_of(out)
        out = node.emit(relay.ReshapeOp(out, [b, s, h * d]))
    if half:
        out, exposed = (node.emit(relay.CastOp(x, "float16")) for x in (out, exposed))
    return [out, present_key, present_value, exposed]


CONVERTERS: dict[str, Converter] = {"Attention": _attention}
