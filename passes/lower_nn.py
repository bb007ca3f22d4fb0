"""Lowerings of the compute relay ops (bias_add, the matmul family, conv2d,
pooling, softmax, normalisation, reductions) to loop nests of the loop-level IR.

Used by convert-relay-to-loops (`NN_LOWERINGS`). The loop-level IR has no
iter_args, so sums and maxima accumulate in memory: in the destination buffer
when its layout allows, else in small scratch memrefs. Loops are ordered so the
innermost one walks contiguous memory and carries no reduction where that is
possible, which is what LLVM and gcc vectorise without reassociating floats.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith, math, memref, scf
from xdsl.dialects.builtin import IntegerType, MemRefType, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.dialects import relay
from byoc.frontend.diagnostics import ByocError
from byoc.passes.vector_math import exp_of
from byoc.passes.loop_nests import (
    I32,
    INDEX,
    BodyBuilder,
    alloc,
    compare_floats,
    compare_in_order,
    compare_integers,
    dealloc,
    element_type_of,
    select,
    shape_of,
    wrapping,
)

if TYPE_CHECKING:
    from byoc.passes.convert_relay_to_loops import OpLowering

Index = int | SSAValue
"""An index known when lowering (an int) or computed at run time (an `index` value)."""

# --- Index arithmetic, folded while both sides are known ------------------------



def value_of(b: BodyBuilder, x: Index) -> SSAValue:
    """`x` as an `index` value (a hoisted constant if it is known)."""
    return b.index(x) if isinstance(x, int) else x


def index_add(b: BodyBuilder, x: Index, y: Index) -> Index:
    """`x + y`."""
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    if isinstance(x, int) and x == 0:
        return y
    if isinstance(y, int) and y == 0:
        return x
    return b.scalar(arith.AddiOp, value_of(b, x), value_of(b, y))


def div_const(b: BodyBuilder, x: Index, divisor: int) -> Index:
    """`x / divisor` for `x >= 0`."""
    if isinstance(x, int):
        return x // divisor
    if divisor == 1:
        return x
    return b.scalar(arith.DivUIOp, x, b.index(divisor))


def index_sub(b: BodyBuilder, x: Index, y: Index) -> Index:
    """`x - y`."""
    if isinstance(y, int):
        return index_add(b, x, -y)
    return b.scalar(arith.SubiOp, value_of(b, x), y)


def index_mul(b: BodyBuilder, x: Index, factor: int) -> Index:
    """`x * factor`."""
    if isinstance(x, int):
        return x * factor
    if factor == 0:
        return 0
    if factor == 1:
        return x
    return b.scalar(arith.MuliOp, x, b.index(factor))


def _pick(b: BodyBuilder, predicate: str, x: Index, y: Index) -> Index:
    """`x` if `x <predicate> y` else `y` (signed)."""
    xv, yv = value_of(b, x), value_of(b, y)
    return b.scalar(arith.SelectOp, compare_integers(b, predicate, xv, yv), xv, yv, result_type=INDEX)


def index_max(b: BodyBuilder, x: Index, y: Index) -> Index:
    """`max(x, y)` (signed)."""
    if isinstance(x, int) and isinstance(y, int):
        return max(x, y)
    return _pick(b, "sgt", x, y)


def index_min(b: BodyBuilder, x: Index, y: Index) -> Index:
    """`min(x, y)` (signed)."""
    if isinstance(x, int) and isinstance(y, int):
        return min(x, y)
    return _pick(b, "slt", x, y)


def ceil_div(b: BodyBuilder, x: Index, divisor: int, offset: int = 0) -> Index:
    """`ceil((x + offset) / divisor)` when `x + offset > 0`, else some value
    `<= 0` (every caller clamps at 0, so the truncating `divsi` needs no sign
    fix-up)."""
    if isinstance(x, int):
        return -(-(x + offset) // divisor)
    if divisor == 1:
        return index_add(b, x, offset)
    numerator = value_of(b, index_add(b, x, offset + divisor - 1))
    return b.scalar(arith.DivSIOp, numerator, b.index(divisor))


# --- Loops, loads and stores ------------------------------------------------------


def for_range(
    b: BodyBuilder, lower: Index, upper: Index, name: str | None = None
) -> tuple[BodyBuilder, Index]:
    """A unit-step `scf.for` over `[lower, upper)`: a builder in its body and its
    induction variable (named `name`). A range known to hold one index builds
    no loop."""
    if isinstance(lower, int) and isinstance(upper, int) and upper - lower == 1:
        return b, lower
    body = Block(arg_types=(INDEX,))
    body.args[0].name_hint = name
    terminator = scf.YieldOp.create()
    body.add_op(terminator)
    b.insert(
        scf.ForOp.create(
            operands=(value_of(b, lower), value_of(b, upper), b.index(1)),
            regions=(Region(body),),
        )
    )
    return b.at(body, terminator), body.args[0]


def nest(
    b: BodyBuilder, extents: Sequence[int], names: Sequence[str] | str = "i"
) -> tuple[BodyBuilder, list[Index]]:
    """One loop per extent from 0, outermost first (none for extent 1, whose
    index is 0). Induction variables are named by `names`, one per loop, or
    `names` followed by the loop's position."""
    ivs: list[Index] = []
    for position, extent in enumerate(extents):
        name = names + str(position) if isinstance(names, str) else names[position]
        b, iv = for_range(b, 0, extent, name)
        ivs.append(iv)
    return b, ivs


def load(b: BodyBuilder, source: SSAValue, indices: Sequence[Index]) -> SSAValue:
    """`memref.load source[indices]`."""
    return b.scalar(
        memref.LoadOp,
        source,
        *(value_of(b, i) for i in indices),
        result_type=element_type_of(source),
    )


def store(
    b: BodyBuilder, value: SSAValue, target: SSAValue, indices: Sequence[Index]
) -> None:
    """`memref.store value, target[indices]`."""
    b.insert(
        memref.StoreOp.create(
            operands=(value, target, *(value_of(b, i) for i in indices))
        )
    )


def fill(b: BodyBuilder, target: SSAValue, value: SSAValue) -> None:
    """Store `value` into every element of `target`."""
    inner, ivs = nest(b, shape_of(target))
    store(inner, value, target, ivs)


def scratch(
    b: BodyBuilder, shape: Sequence[int], element: Attribute, name: str
) -> SSAValue:
    """A scratch buffer named `name`: a `memref.alloca` for shape `()`, else
    heap memory (freed with `release`)."""
    if shape:
        buffer = alloc(b, MemRefType(element, shape))
    else:
        buffer = b.insert(memref.AllocaOp.get(element, shape=())).memref
    buffer.name_hint = name
    return buffer


def entry_alloca(
    b: BodyBuilder, shape: Sequence[int], element: Attribute, name: str
) -> SSAValue:
    """A `memref.alloca` at the function entry, out of every loop."""
    entry = b.pool.entry
    buffer = (
        b.at(entry, entry.first_op)
        .insert(memref.AllocaOp.get(element, shape=shape))
        .memref
    )
    buffer.name_hint = name
    return buffer


def integer_max_min(b: BodyBuilder, is_max: bool, x: SSAValue, y: SSAValue) -> SSAValue:
    """`max(x, y)` (or min) of integer scalars, signed or unsigned by their type,
    as a compare and select (the loop-level IR has no integer max)."""
    cond = compare_in_order(b, "gt" if is_max else "lt", x, y)
    return b.scalar(arith.SelectOp, cond, x, y, result_type=x.type)


def _integer_max(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return integer_max_min(b, True, x, y)


def lowest(typ: Attribute) -> float | int:
    """The identity of max for element type `typ`: -inf, or the smallest integer."""
    if isinstance(typ, IntegerType):
        return relay.integer_range(typ)[0]
    return -pymath.inf


def release(b: BodyBuilder, buffer: SSAValue) -> None:
    """Free a buffer made by `scratch`."""
    if isinstance(buffer.owner, memref.AllocOp):
        dealloc(b, buffer)


def binary(
    b: BodyBuilder, op_type: type[Operation], x: SSAValue, y: SSAValue
) -> SSAValue:
    """`op_type(x, y)` on scalars."""
    return b.scalar(op_type, x, y)


def accumulate(
    b: BodyBuilder,
    op_type: type[Operation],
    target: SSAValue,
    indices: Sequence[Index],
    value: SSAValue,
) -> None:
    """`target[indices] = op_type(target[indices], value)`."""
    store(b, binary(b, op_type, load(b, target, indices), value), target, indices)


# --- bias_add, batch_norm: per-channel elementwise ------------------------------


def lower_bias_add(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.bias_add` to one nest adding `bias[i_axis]`."""
    assert isinstance(op, relay.BiasAddOp)
    (data, bias), (out,) = operands, results
    shape = shape_of(out)
    axis = relay.normalize_axis(op.attrs()["axis"], len(shape), op.name)
    inner, ivs = nest(b, shape)
    x, y = load(inner, data, ivs), load(inner, bias, [ivs[axis]])
    if isinstance(element_type_of(out), IntegerType):
        total = wrapping(inner, arith.AddiOp, x, y)
    else:
        total = binary(inner, arith.AddfOp, x, y)
    store(inner, total, out, ivs)


def lower_prelu(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.prelu` to one nest scaling the negative elements by
    `alpha[i_axis]` (a select: NaN stays NaN)."""
    assert isinstance(op, relay.PReluOp)
    (data, alpha), (out,) = operands, results
    shape = shape_of(out)
    axis = relay.normalize_axis(op.attrs()["axis"], len(shape), op.name)
    inner, ivs = nest(b, shape)
    x = load(inner, data, ivs)
    scaled = binary(inner, arith.MulfOp, x, load(inner, alpha, [ivs[axis]]))
    negative = compare_floats(inner, "olt", x, b.constant(0.0, element_type_of(out)))
    store(inner, select(inner, negative, scaled, x), out, ivs)


def _normalise(
    b: BodyBuilder,
    op: Operation,
    x: SSAValue,
    mean: SSAValue,
    std: SSAValue,
    gamma: Callable[[], SSAValue],
    beta: Callable[[], SSAValue],
) -> SSAValue:
    """`(x - mean) / std`, times gamma if `scale`, plus beta if `center`."""
    attrs = op.attrs()
    y = binary(b, arith.DivfOp, binary(b, arith.SubfOp, x, mean), std)
    if attrs["scale"]:
        y = binary(b, arith.MulfOp, y, gamma())
    if attrs["center"]:
        y = binary(b, arith.AddfOp, y, beta())
    return y


def lower_batch_norm(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers inference `relay.nn.batch_norm` to one nest over its output."""
    assert isinstance(op, relay.BatchNormOp)
    (data, gamma, beta, mean, var), (out,) = operands, results
    shape = shape_of(out)
    typ = element_type_of(out)
    attrs = op.attrs()
    axis = relay.normalize_axis(attrs["axis"], len(shape), op.name)
    epsilon = b.constant(attrs["epsilon"], typ)
    inner, ivs = nest(b, shape)
    channel = [ivs[axis]]
    variance = binary(inner, arith.AddfOp, load(inner, var, channel), epsilon)
    std = inner.scalar(math.SqrtOp, variance)
    y = _normalise(
        inner,
        op,
        load(inner, data, ivs),
        load(inner, mean, channel),
        std,
        lambda: load(inner, gamma, channel),
        lambda: load(inner, beta, channel),
    )
    store(inner, y, out, ivs)


# --- Matmul family: out[rows..., n] = sum_k lhs(rows, k) * rhs(rows, k, n) ---------
# The loop order follows rhs's layout: `accumulate_rows` when it is [k, n],
# `times_transposed` when it is [n, k] (dot products, or for a short k a
# transposed copy and `accumulate_rows`); the innermost loop is contiguous.

IndexMap = Callable[[Sequence[Index], Index, Index], list[Index]]
"""`(row indices, k, n) -> indices` of an operand of a contraction."""


DOT_LANES = 16
"""Partial sums a long sum keeps (one per `k mod DOT_LANES`): independent and
contiguous, so LLVM and gcc hold them in vector registers (two AVX2 vectors,
one AVX-512 vector)."""


def accumulate_rows(
    b: BodyBuilder,
    out: SSAValue,
    lhs: SSAValue,
    lhs_at: IndexMap,
    rhs: SSAValue,
    rhs_at: IndexMap,
    depth: int,
) -> None:
    """`out[rows..., n] = sum_k lhs[lhs_at] * rhs[rhs_at]` for an `rhs` laid
    out `[k, n]`: the k loop goes outside the n loop, and each k adds
    `lhs * rhs[k, :]` to the output row, so the innermost loop is unit-stride
    and carries no reduction."""
    shape = shape_of(out)
    rows, width = shape[:-1], shape[-1]
    row_b, r = nest(b, rows, "m")
    fill_b, (n,) = nest(row_b, (width,), ["n"])
    store(fill_b, b.constant(0.0, element_type_of(out)), out, [*r, n])
    k_b, (k,) = nest(row_b, (depth,), ["k"])
    a = load(k_b, lhs, lhs_at(r, k, 0))
    n_b, (n,) = nest(k_b, (width,), ["n"])
    product = binary(n_b, arith.MulfOp, a, load(n_b, rhs, rhs_at(r, k, n)))
    accumulate(n_b, arith.AddfOp, out, [*r, n], product)


def dot_product(
    b: BodyBuilder,
    out: SSAValue,
    lhs: SSAValue,
    lhs_at: IndexMap,
    rhs: SSAValue,
    rhs_at: IndexMap,
    depth: int,
) -> None:
    """`out[rows..., n] = sum_k lhs[lhs_at] * rhs[rhs_at]` for an `rhs` laid
    out `[n, k]` (dense's weight): one dot product per output, both operands
    read along contiguous k (`sum_along`)."""
    shape = shape_of(out)
    rows, width = shape[:-1], shape[-1]
    row_b, r = nest(b, rows, "m")
    n_b, (n,) = nest(row_b, (width,), ["n"])
    store(n_b, b.constant(0.0, element_type_of(out)), out, [*r, n])

    def product(inner: BodyBuilder, k: Index) -> SSAValue:
        a = load(inner, lhs, lhs_at(r, k, n))
        return binary(inner, arith.MulfOp, a, load(inner, rhs, rhs_at(r, k, n)))

    sum_along(n_b, depth, product, out, [*r, n])


def sum_along(
    b: BodyBuilder,
    depth: int,
    term: Callable[[BodyBuilder, Index], SSAValue],
    target: SSAValue,
    at: Sequence[Index],
) -> None:
    """`target[at] += sum_{k < depth} term(k)` (see `reduce_along`)."""
    reduce_along(b, depth, term, target, at, arith.AddfOp, 0.0)


def reduce_along(
    b: BodyBuilder,
    depth: int,
    term: Callable[[BodyBuilder, Index], SSAValue],
    target: SSAValue,
    at: Sequence[Index],
    combine: type[Operation],
    identity: float,
) -> None:
    """`target[at] = combine(target[at], term(0), ..., term(depth - 1))` for an
    associative `combine` (sum, maximum) with `identity`.

    A running sum is a chain of dependent adds, which compilers may not
    reorder; so a long sum keeps `DOT_LANES` interleaved partial sums (lane
    `k mod DOT_LANES`) in a `memref.alloca`, added up at the end: the loop
    over the lanes vectorises, `term` included (it may store, as softmax's
    exponentials do). A maximum is exact in any order, and LLVM vectorises
    its plain loop as it is (lanes would make it gather).
    """
    if depth < 2 * DOT_LANES or combine is not arith.AddfOp:
        k_b, (k,) = nest(b, (depth,), ["k"])
        accumulate(k_b, combine, target, at, term(k_b, k))
        return
    lanes, chunks = DOT_LANES, depth // DOT_LANES
    typ = element_type_of(target)
    partial = entry_alloca(b, (lanes,), typ, "partial")
    zero_b, (lane,) = nest(b, (lanes,), ["lane"])
    store(zero_b, b.constant(identity, typ), partial, [lane])
    lane_b, (chunk, lane) = nest(b, (chunks, lanes), ["kc", "lane"])
    k = index_add(lane_b, index_mul(lane_b, chunk, lanes), lane)
    accumulate(lane_b, combine, partial, [lane], term(lane_b, k))
    if depth > chunks * lanes:
        tail_b, k = for_range(b, chunks * lanes, depth, "k")
        lane = index_add(tail_b, k, -chunks * lanes)
        accumulate(tail_b, combine, partial, [lane], term(tail_b, k))
    total_b, (lane,) = nest(b, (lanes,), ["lane"])
    accumulate(total_b, combine, target, at, load(total_b, partial, [lane]))


def times_transposed(
    b: BodyBuilder,
    out: SSAValue,
    lhs: SSAValue,
    lhs_at: IndexMap,
    rhs: SSAValue,
    rhs_batch: Callable[[Sequence[Index]], list[Index]],
    depth: int,
) -> None:
    """`out[rows..., n] = sum_k lhs[lhs_at] * rhs[batch..., n, k]`, `rhs_batch`
    giving rhs's batch indices from the row indices.

    Dot products (`dot_product`) unless k is short and many rows share each
    rhs matrix: then their partial sums vectorise poorly, and transposing rhs
    once for `accumulate_rows` is cheaper.
    """
    rows = pymath.prod(shape_of(out)[:-1])
    rows_per_matrix = rows // max(1, pymath.prod(shape_of(rhs)[:-2]))
    if depth >= SHORT_DEPTH or rows_per_matrix < TRANSPOSE_MIN_ROWS:
        dot_product(
            b, out, lhs, lhs_at, rhs, lambda r, k, n: [*rhs_batch(r), n, k], depth
        )
        return
    flipped = transposed(b, rhs)
    flipped.name_hint = "transposed"
    accumulate_rows(
        b, out, lhs, lhs_at, flipped, lambda r, k, n: [*rhs_batch(r), k, n], depth
    )
    dealloc(b, flipped)


SHORT_DEPTH = 8 * DOT_LANES
TRANSPOSE_MIN_ROWS = 64
"""`times_transposed` copies rhs transposed when `k < SHORT_DEPTH` and at least
`TRANSPOSE_MIN_ROWS` rows use each rhs matrix. Measured with LLVM on AVX2
(dense, 128 rows, n = 1024): 2-3x faster for k from 16 to 96, slower from
k = 128 on (where LLVM keeps the partial sums in vector registers), and
slower with 16 rows (the copy is not amortised)."""

TRANSPOSE_TILE = 8
"""Side of the square tiles `transposed` copies, so both its reads and its
writes stay within a few cache lines at a time."""


def transposed(b: BodyBuilder, source: SSAValue) -> SSAValue:
    """A new heap buffer holding `source` with its last two dims swapped,
    copied tile by tile (then the rows and columns left over)."""
    shape = shape_of(source)
    *batch, rows, cols = shape
    target = alloc(b, MemRefType(element_type_of(source), (*batch, cols, rows)))
    tile = TRANSPOSE_TILE
    bat_b, bat = nest(b, batch, "t")

    def copy(inner: BodyBuilder, r: Index, c: Index) -> None:
        store(inner, load(inner, source, [*bat, r, c]), target, [*bat, c, r])

    full_rows, full_cols = rows - rows % tile, cols - cols % tile
    if full_rows and full_cols:
        tiles_b, (rt, ct, r, c) = nest(
            bat_b,
            (full_rows // tile, full_cols // tile, tile, tile),
            ["rt", "ct", "r", "c"],
        )
        copy(
            tiles_b,
            index_add(tiles_b, index_mul(tiles_b, rt, tile), r),
            index_add(tiles_b, index_mul(tiles_b, ct, tile), c),
        )
    if full_cols < cols and full_rows:
        r_b, (r,) = nest(bat_b, (full_rows,), ["r"])
        c_b, c = for_range(r_b, full_cols, cols, "c")
        copy(c_b, r, c)
    if full_rows < rows:
        r_b, r = for_range(bat_b, full_rows, rows, "r")
        c_b, (c,) = nest(r_b, (cols,), ["c"])
        copy(c_b, r, c)
    return target


def lower_dense(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.dense` (`data[..., k] * weight[n, k]`) to dot products along k."""
    assert isinstance(op, relay.DenseOp)
    (data, weight), (out,) = operands, results
    depth = shape_of(weight)[1]
    times_transposed(b, out, data, lambda r, k, n: [*r, k], weight, lambda r: [], depth)


def lower_dense_packed(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.dense_packed`: output feature `n` is column `n mod 32` of
    panel `n / 32` (`[panels, K, 32]`), so the loops run over whole panels and
    then the last panel's features, each step adding `data[k] * panel[k, :]`
    to the output row (`accumulate_rows`' order: unit stride, no reduction)."""
    assert isinstance(op, relay.DensePackedOp)
    (data, weight), (out,) = operands, results
    panels, depth, block = shape_of(weight)
    shape = shape_of(out)
    rows, units = shape[:-1], shape[-1]
    full, tail = divmod(units, block)
    row_b, r = nest(b, rows, "m")
    fill_b, (n,) = nest(row_b, (units,), ["n"])
    store(fill_b, b.constant(0.0, element_type_of(out)), out, [*r, n])
    k_b, (k,) = nest(row_b, (depth,), ["k"])
    a = load(k_b, data, [*r, k])
    if full:
        p_b, (p, j) = nest(k_b, (full, block), ["p", "j"])
        n = index_add(p_b, index_mul(p_b, p, block), j)
        product = binary(p_b, arith.MulfOp, a, load(p_b, weight, [p, k, j]))
        accumulate(p_b, arith.AddfOp, out, [*r, n], product)
    if tail:
        t_b, (j,) = nest(k_b, (tail,), ["j"])
        n = index_add(t_b, j, full * block)
        product = binary(t_b, arith.MulfOp, a, load(t_b, weight, [full, k, j]))
        accumulate(t_b, arith.AddfOp, out, [*r, n], product)


def lower_matmul(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.matmul` (a `[..., M, K]`, 2-d b, either transposed)."""
    assert isinstance(op, relay.MatmulOp)
    (a, b_matrix), (out,) = operands, results
    attrs = op.attrs()
    transpose_a, transpose_b = attrs["transpose_a"], attrs["transpose_b"]
    a_shape = shape_of(a)
    depth = a_shape[-2] if transpose_a else a_shape[-1]

    def a_at(r: Sequence[Index], k: Index, n: Index) -> list[Index]:
        # The row indices are a's batch indices then m (no m for a 1-d a).
        return [*r[:-1], k, r[-1]] if transpose_a else [*r, k]

    if transpose_b:
        times_transposed(b, out, a, a_at, b_matrix, lambda r: [], depth)
    else:
        accumulate_rows(b, out, a, a_at, b_matrix, lambda r, k, n: [k, n], depth)


def lower_batch_matmul(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.batch_matmul` (transposes, a batch of 1 broadcasts)."""
    assert isinstance(op, relay.BatchMatmulOp)
    (x, y), (out,) = operands, results
    attrs = op.attrs()
    transpose_a, transpose_b = attrs["transpose_a"], attrs["transpose_b"]
    x_shape, y_shape = shape_of(x), shape_of(y)
    depth = x_shape[1] if transpose_a else x_shape[2]

    def batch(r: Sequence[Index], shape: Sequence[int]) -> Index:
        return 0 if shape[0] == 1 else r[0]

    def x_at(r: Sequence[Index], k: Index, n: Index) -> list[Index]:
        bx = batch(r, x_shape)
        return [bx, k, r[1]] if transpose_a else [bx, r[1], k]

    def y_batch(r: Sequence[Index]) -> list[Index]:
        return [batch(r, y_shape)]

    if transpose_b:
        times_transposed(b, out, x, x_at, y, y_batch, depth)
    else:
        accumulate_rows(b, out, x, x_at, y, lambda r, k, n: [*y_batch(r), k, n], depth)


# --- Convolution and pooling ----------------------------------------------------


class Window:
    """One spatial dimension of a conv or pool: input size, kernel, stride,
    dilation, padding before and after, and output size."""

    __slots__ = ("dilation", "kernel", "outputs", "pad", "pad_after", "size", "stride")

    def __init__(
        self,
        size: int,
        kernel: int,
        stride: int,
        dilation: int,
        pad: int,
        pad_after: int,
        outputs: int,
    ):
        self.size, self.kernel, self.stride, self.dilation = (
            size,
            kernel,
            stride,
            dilation,
        )
        self.pad, self.pad_after, self.outputs = pad, pad_after, outputs

    def _first(self, tap: int) -> int:
        return max(0, -(-(self.pad - tap * self.dilation) // self.stride))

    def _end(self, tap: int) -> int:
        return min(
            self.outputs,
            -(-(self.size + self.pad - tap * self.dilation) // self.stride),
        )

    def outputs_of(self, b: BodyBuilder, tap: Index) -> tuple[Index, Index]:
        """The outputs `o` in `[0, outputs)` whose input `o * stride + tap *
        dilation - pad` lies in `[0, size)`, as a range: clamping the loop is
        what padding means. Known (no index arithmetic) when `tap` is, or when
        every tap sees every output."""
        if isinstance(tap, int):
            return self._first(tap), self._end(tap)
        # `_first` and `_end` fall as `tap` grows: every tap sees every output
        # when the first tap starts at 0 and the last one ends at `outputs`
        # (checked in O(1), not per tap: a window may be 2^40 wide).
        if self._first(0) == 0 and self._end(self.kernel - 1) == self.outputs:
            return 0, self.outputs
        offset = index_mul(b, tap, -self.dilation)
        first = index_max(b, 0, ceil_div(b, offset, self.stride, self.pad))
        end = index_min(
            b, self.outputs, ceil_div(b, offset, self.stride, self.size + self.pad)
        )
        return first, end

    def taps_of(self, b: BodyBuilder, output: Index) -> tuple[Index, Index]:
        """The taps `t` in `[0, kernel)` whose input `output * stride + t *
        dilation - pad` lies in `[0, size)`, as a range (the inverse of
        `outputs_of`). Known when every output sees every tap."""
        if self._first(0) == 0 and self._end(self.kernel - 1) == self.outputs:
            return 0, self.kernel
        offset = index_mul(b, output, -self.stride)
        first = index_max(b, 0, ceil_div(b, offset, self.dilation, self.pad))
        end = index_min(
            b, self.kernel, ceil_div(b, offset, self.dilation, self.size + self.pad)
        )
        return first, end

    def _uniform_count(self, include_pad: bool) -> bool:
        """Whether every output's window counts the same taps. Exact when every
        window lies inside the counted range (the usual case: no padding), or
        when there are few outputs; otherwise the count is left to run time
        rather than spending compile time per output."""
        if self.outputs <= 4096:
            first = self.count(0, include_pad)
            return all(self.count(o, include_pad) == first for o in range(1, self.outputs))
        low, high = (
            (-self.pad, self.size + self.pad_after) if include_pad else (0, self.size)
        )
        last = (self.outputs - 1) * self.stride - self.pad + (self.kernel - 1) * self.dilation
        return -self.pad >= low and last < high

    def start_of(self, b: BodyBuilder, tap: Index) -> Index:
        """The input index kernel position `tap` reads for output 0 (maybe < 0)."""
        return index_add(b, index_mul(b, tap, self.dilation), -self.pad)

    def input_of(self, b: BodyBuilder, output: Index, start: Index) -> Index:
        """The input index for `output` of the tap whose `start_of` is `start`."""
        return index_add(b, index_mul(b, output, self.stride), start)

    def count(self, output: int, include_pad: bool) -> int:
        """How many taps of the window at `output` an average divides by: the
        taps t in [0, kernel) with low <= output * stride - pad + t * dilation
        < high, counted in closed form."""
        low, high = (
            (-self.pad, self.size + self.pad_after) if include_pad else (0, self.size)
        )
        start = output * self.stride - self.pad
        first = max(0, -(-(low - start) // self.dilation))
        end = min(self.kernel, -(-(high - start) // self.dilation))
        return max(0, end - first)

    def count_of(self, b: BodyBuilder, output: Index, include_pad: bool) -> Index:
        """`count(output)`, computed at run time unless it is the same everywhere."""
        if self._uniform_count(include_pad):
            return self.count(0, include_pad)
        low, high = (
            (-self.pad, self.size + self.pad_after) if include_pad else (0, self.size)
        )
        # Taps t with low <= output * stride - pad + t * dilation < high.
        offset = index_mul(b, output, -self.stride)
        first = index_max(b, 0, ceil_div(b, offset, self.dilation, low + self.pad))
        last = index_min(
            b, self.kernel, ceil_div(b, offset, self.dilation, high + self.pad)
        )
        return index_max(b, 0, index_sub(b, last, first))


def _windows(
    op: Operation, data: SSAValue, out: SSAValue, kernel: Sequence[int]
) -> list[Window]:
    """The spatial windows (D, H, W or H, W) of a conv or pool op from its attributes."""
    attrs = op.attrs()
    sizes, outs = shape_of(data)[2:], shape_of(out)[2:]
    n = len(sizes)
    pads = relay.normalize_padding_nd(attrs["padding"], n, op.name)
    return [
        Window(
            sizes[d],
            kernel[d],
            attrs["strides"][d],
            attrs["dilation"][d],
            pads[d],
            pads[d + n],
            outs[d],
        )
        for d in range(n)
    ]


TAP_NAMES = ("kd", "ki", "kj")
OUTPUT_NAMES = ("oz", "oy", "ox")
"""Loop names of the kernel taps and the outputs along (D,) H, W."""


def sweep_window_taps(
    b: BodyBuilder,
    windows: Sequence[Window],
    body: Callable[[BodyBuilder, list[Index], list[Index], list[Index]], None],
    names: Sequence[str] = OUTPUT_NAMES,
) -> None:
    """For each kernel tap (one loop per window, outermost), call
    `body(builder, taps, outputs, inputs)` over every output the tap sees.

    The innermost loop runs along the last output dim (unit stride in the
    output, the stride in the input), without a branch: padding is skipped by
    the ranges, each computed beside its tap loop.
    """
    n = len(windows)
    taps: list[Index] = []
    ranges: list[tuple[Index, Index]] = []
    starts: list[Index] = []
    for window, name in zip(windows, TAP_NAMES[-n:]):
        b, (tap,) = nest(b, (window.kernel,), [name])
        taps.append(tap)
        ranges.append(window.outputs_of(b, tap))
        starts.append(window.start_of(b, tap))
    outputs: list[Index] = []
    inputs: list[Index] = []
    for window, (low, high), start, name in zip(windows, ranges, starts, names[-n:]):
        b, output = for_range(b, low, high, name)
        outputs.append(output)
        inputs.append(window.input_of(b, output, start))
    body(b, taps, outputs, inputs)


def sweep_taps(
    b: BodyBuilder,
    rows: Window,
    cols: Window,
    plane: Sequence[Index],
    body: Callable[[BodyBuilder, Index, Index, list[Index], list[Index]], None],
) -> None:
    """`sweep_window_taps` over two windows, calling `body(builder, i, j, out
    indices, input indices)` with the output indices after `plane`."""

    def tap(x_b: BodyBuilder, taps: list[Index], at: list[Index], src: list[Index]) -> None:
        body(x_b, taps[0], taps[1], [*plane, *at], src)

    sweep_window_taps(b, [rows, cols], tap)


def lower_conv(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.conv2d` and `conv3d` (NC..., OI..., groups) to output
    planes accumulated tap by tap; `relay.nn.conv2d_packed` likewise, reading
    weight [o, c, i, j] at [g * blocks + o_g / b, c, i, j, o_g % b]."""
    assert isinstance(op, relay.Conv2dOp | relay.Conv3dOp | relay.Conv2dPackedOp)
    (data, weight), (out,) = operands, results
    packed = isinstance(op, relay.Conv2dPackedOp)
    if packed and op.attrs()["kernel_layout"] in relay.WINOGRAD_LAYOUTS:
        raise ByocError(
            f"error: {op.name}: kernel_layout \"{op.attrs()['kernel_layout']}\" (Winograd-transformed 3x3 "
            "kernels) is computed by libbyoc (the cblas backend) only; pack the weight "
            "as \"OIHW8o\" for other backends"
        )
    if packed:
        blocks, channels_in, *kernel, block = shape_of(weight)
        n_out = op.attrs()["channels"]
    else:
        n_out, channels_in, *kernel = shape_of(weight)
    groups = op.attrs()["groups"]
    per_group = n_out // groups
    windows = _windows(op, data, out, kernel)
    typ = element_type_of(out)
    zero = b.constant(0.0, typ)

    plane_b, (n, g, o_in_group) = nest(
        b, (shape_of(data)[0], groups, per_group), ["n", "g", "o"]
    )
    o = index_add(plane_b, index_mul(plane_b, g, per_group), o_in_group)
    fill_b, outputs = nest(
        plane_b, [w.outputs for w in windows], OUTPUT_NAMES[-len(windows) :]
    )
    store(fill_b, zero, out, [n, o, *outputs])
    c_b, (c,) = nest(plane_b, (channels_in,), ["c"])
    channel = index_add(c_b, index_mul(c_b, g, channels_in), c)

    def weight_at(x_b: BodyBuilder, taps: list[Index]) -> list[Index]:
        if not packed:
            return [o, c, *taps]
        o_block = div_const(x_b, o_in_group, block)
        lane = index_sub(x_b, o_in_group, index_mul(x_b, o_block, block))
        first = index_mul(x_b, g, blocks // groups)
        return [index_add(x_b, first, o_block), c, *taps, lane]

    def tap(x_b: BodyBuilder, taps: list[Index], at: list[Index], src: list[Index]):
        # The weight load is invariant in the plane loops (hoisted by LICM).
        product = binary(
            x_b,
            arith.MulfOp,
            load(x_b, data, [n, channel, *src]),
            load(x_b, weight, weight_at(x_b, taps)),
        )
        accumulate(x_b, arith.AddfOp, out, [n, o, *at], product)

    sweep_window_taps(c_b, windows, tap)


def lower_conv_transpose(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.conv2d_transpose` and `conv3d_transpose` as a scatter:
    each tap adds `data * weight[c, o, tap]` over the input plane into the
    output at `input * stride + tap * dilation - pad`. The input ranges are
    clamped so every write lands in the output (a conv's windows with the
    roles of input and output swapped)."""
    assert isinstance(op, relay.ConvTransposeOp)
    (data, weight), (out,) = operands, results
    attrs = op.attrs()
    channels_in, per_group, *kernel = shape_of(weight)
    groups = attrs["groups"]
    in_group = channels_in // groups
    sizes, outs = shape_of(data)[2:], shape_of(out)[2:]
    n = len(sizes)
    pads = relay.normalize_padding_nd(attrs["padding"], n, op.name)
    windows = [
        Window(
            outs[d],
            kernel[d],
            attrs["strides"][d],
            attrs["dilation"][d],
            pads[d],
            pads[d + n],
            sizes[d],
        )
        for d in range(n)
    ]
    fill(b, out, b.constant(0.0, element_type_of(out)))
    plane_b, (batch, g, o_in_group) = nest(
        b, (shape_of(data)[0], groups, per_group), ["n", "g", "o"]
    )
    o = index_add(plane_b, index_mul(plane_b, g, per_group), o_in_group)
    c_b, (c,) = nest(plane_b, (in_group,), ["c"])
    channel = index_add(c_b, index_mul(c_b, g, in_group), c)

    def tap(x_b: BodyBuilder, taps: list[Index], at: list[Index], dst: list[Index]):
        product = binary(
            x_b,
            arith.MulfOp,
            load(x_b, data, [batch, channel, *at]),
            load(x_b, weight, [channel, o_in_group, *taps]),
        )
        accumulate(x_b, arith.AddfOp, out, [batch, o, *dst], product)

    sweep_window_taps(c_b, windows, tap, ("iz", "iy", "ix"))


MAX_POOL_UNROLLED = 8
"""Widest max-pool window whose column taps `_max_pool_rows` unrolls."""

MAX_POOL_ROW = 4096
"""Longest padded input row `_max_pool_rows` keeps in a local array."""


def lower_max_pool(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.max_pool2d` and `max_pool3d`: a 2-d pool row by row
    (`_max_pool_rows`), a 3-d one (or a very wide window or row) as planes
    started at -inf (the smallest integer) and maxed tap by tap."""
    assert isinstance(op, relay.MaxPool2dOp | relay.MaxPool3dOp)
    (data,), (out,) = operands, results
    windows = _windows(op, data, out, op.attrs()["pool_size"])
    if (
        len(windows) == 2
        and windows[1].kernel <= MAX_POOL_UNROLLED
        and _padded_row(windows[1]) <= MAX_POOL_ROW
    ):
        _max_pool_rows(b, data, out, windows[0], windows[1])
        return
    n_batch, channels = shape_of(out)[:2]
    typ = element_type_of(out)
    low = b.constant(lowest(typ), typ)
    plane_b, plane = nest(b, (n_batch, channels), ["n", "c"])
    fill_b, outputs = nest(
        plane_b, [w.outputs for w in windows], OUTPUT_NAMES[-len(windows) :]
    )
    store(fill_b, low, out, [*plane, *outputs])

    def tap(x_b: BodyBuilder, taps: list[Index], at: list[Index], src: list[Index]):
        value = load(x_b, data, [*plane, *src])
        where = [*plane, *at]
        store(x_b, _max(x_b, load(x_b, out, where), value), out, where)

    sweep_window_taps(plane_b, windows, tap)


def _max(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """max(x, y), NaN if `y` is (a NaN `x` stays, as no comparison with it
    holds): `y != y ? y : (y > x ? y : x)`, where `arith.maximumf`, which also
    orders -0 below +0, needs more and kept C compilers from vectorising
    pools well. The inner select is one max instruction (x86's maxss takes
    exactly it) and the NaN test a branch that never goes: written as one
    select of `y > x || y != y`, GCC branched on both comparisons in scalar
    code (the narrow rows' remainders), mispredicting on real data: a pool
    of 576 planes of 14x14 took 10x as long."""
    if isinstance(x.type, IntegerType):
        return _integer_max(b, x, y)
    larger = select(b, compare_floats(b, "ogt", y, x), y, x)
    return select(b, compare_floats(b, "une", y, y), y, larger)


def _padded_row(cols: Window) -> int:
    """Elements of an input row with its padding, as far as any window reaches."""
    reach = (cols.outputs - 1) * cols.stride + (cols.kernel - 1) * cols.dilation + 1
    return max(reach, cols.pad + cols.size)


def _max_pool_rows(
    b: BodyBuilder, data: SSAValue, out: SSAValue, rows: Window, cols: Window
) -> None:
    """A 2-d max pool one output row at a time, in two passes over a padded
    row (a local array of each plane, its padding at the lowest value): the
    maximum of the window's input rows (kernel rows clamped to the input),
    contiguous, then each output the maximum of its window's columns of that
    row, the taps unrolled and none clamped. Maxing each input row into the
    output column tap by column tap read the input with the stride once per
    column tap: SqueezeNet's first pool (111 to 55 columns) took 0.65 ms,
    now 0.17 (with `_max`'s form; onnxruntime 0.21-0.30)."""
    n_batch, channels = shape_of(out)[:2]
    typ = element_type_of(out)
    low = b.constant(lowest(typ), typ)
    plane_b, plane = nest(b, (n_batch, channels), ["n", "c"])
    # In the plane's loop, not at the function's entry: each plane (a
    # parallel iteration) has its own.
    row = plane_b.insert(memref.AllocaOp.get(typ, shape=(_padded_row(cols),))).memref
    row.name_hint = "row"
    for lo, hi in ((0, cols.pad), (cols.pad + cols.size, _padded_row(cols))):
        if lo < hi:
            pad_b, p = for_range(plane_b, lo, hi, "p")
            store(pad_b, low, row, [p])
    row_b, oy = for_range(plane_b, 0, rows.outputs, "oy")
    fill_b, x = for_range(row_b, 0, cols.size, "ix")
    store(fill_b, low, row, [index_add(fill_b, x, cols.pad)])
    first, end = rows.taps_of(row_b, oy)
    tap_b, ki = for_range(row_b, first, end, "ki")
    y = rows.input_of(tap_b, oy, rows.start_of(tap_b, ki))
    x_b, x = for_range(tap_b, 0, cols.size, "ix")
    at = [index_add(x_b, x, cols.pad)]
    store(x_b, _max(x_b, load(x_b, row, at), load(x_b, data, [*plane, y, x])), row, at)
    col_b, ox = for_range(row_b, 0, cols.outputs, "ox")
    start = index_mul(col_b, ox, cols.stride)
    value = load(col_b, row, [start])
    for kj in range(1, cols.kernel):
        tap = load(col_b, row, [index_add(col_b, start, kj * cols.dilation)])
        value = _max(col_b, value, tap)
    store(col_b, value, out, [*plane, oy, ox])


def lower_avg_pool(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.avg_pool2d` and `avg_pool3d` to planes summed tap by
    tap, then divided by each window's count (padding counted if
    `count_include_pad`)."""
    assert isinstance(op, relay.AvgPool2dOp | relay.AvgPool3dOp)
    (data,), (out,) = operands, results
    attrs = op.attrs()
    include_pad = bool(attrs["count_include_pad"])
    windows = _windows(op, data, out, attrs["pool_size"])
    names = OUTPUT_NAMES[-len(windows) :]
    n_batch, channels = shape_of(out)[:2]
    typ = element_type_of(out)
    plane_b, plane = nest(b, (n_batch, channels), ["n", "c"])
    fill_b, outputs = nest(plane_b, [w.outputs for w in windows], names)
    store(fill_b, b.constant(0.0, typ), out, [*plane, *outputs])

    def tap(x_b: BodyBuilder, taps: list[Index], at: list[Index], src: list[Index]):
        accumulate(x_b, arith.AddfOp, out, [*plane, *at], load(x_b, data, [*plane, *src]))

    sweep_window_taps(plane_b, windows, tap)

    o_b = plane_b
    outputs, count = [], 1
    for window, name in zip(windows, names):
        o_b, output = for_range(o_b, 0, window.outputs, name)
        outputs.append(output)
        count = _index_product(o_b, count, window.count_of(o_b, output, include_pad))
    count = index_max(o_b, 1, count)
    if isinstance(count, int):
        divisor = o_b.constant(float(count), typ)
    else:
        wide = o_b.scalar(arith.IndexCastOp, count, result_type=i64)
        divisor = o_b.scalar(arith.SIToFPOp, wide, result_type=typ)
    accumulate(o_b, arith.DivfOp, out, [*plane, *outputs], divisor)


def _index_product(b: BodyBuilder, x: Index, y: Index) -> Index:
    if isinstance(y, int):
        return index_mul(b, x, y)
    if isinstance(x, int):
        return index_mul(b, y, x)
    return b.scalar(arith.MuliOp, x, y)


# --- Reductions ------------------------------------------------------------------


def reduce_into(
    b: BodyBuilder,
    data: SSAValue,
    out: SSAValue,
    axes: Sequence[int],
    keepdims: bool,
    combine: type[Operation],
    identity: float,
) -> None:
    """`out = identity`, then `out[kept] = combine(out[kept], data[all])` over
    `data` in row-major order: its innermost loop is contiguous, and carries no
    reduction unless the last axis is reduced (then sums use `sum_along`;
    compilers vectorise max reductions as they are)."""
    reduced = set(axes)
    shape = shape_of(data)
    fill(b, out, b.constant(identity, element_type_of(out)))

    def out_at(ivs: Sequence[Index]) -> list[Index]:
        if keepdims:
            return [0 if d in reduced else iv for d, iv in enumerate(ivs)]
        return [iv for d, iv in enumerate(ivs) if d not in reduced]

    if combine is arith.AddfOp and len(shape) - 1 in reduced:
        # A sum along the contiguous last axis: partial sums, as a dot product.
        row_b, rows = nest(b, shape[:-1])

        def element(inner: BodyBuilder, k: Index) -> SSAValue:
            return load(inner, data, [*rows, k])

        sum_along(row_b, shape[-1], element, out, out_at([*rows, 0]))
        return
    inner, ivs = nest(b, shape)
    accumulate(inner, combine, out, out_at(ivs), load(inner, data, ivs))


def divide_all(b: BodyBuilder, target: SSAValue, count: int) -> None:
    """`target /= count`, elementwise."""
    divisor = b.constant(float(count), element_type_of(target))
    inner, ivs = nest(b, shape_of(target))
    accumulate(inner, arith.DivfOp, target, ivs, divisor)


_REDUCE_COMBINE: dict[type[Operation], tuple[type[Operation], float]] = {
    relay.MaxOp: (arith.MaximumfOp, -pymath.inf),
    relay.MinOp: (arith.MinimumfOp, pymath.inf),
    relay.ProdOp: (arith.MulfOp, 1.0),
}
"""Reductions but sum and mean: how they combine and their identity."""


def lower_reduce(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.sum`, `mean`, `max`, `min` and `prod` over their axes into the output."""
    assert isinstance(op, relay.ReduceOp)
    (data,), (out,) = operands, results
    axes = op.reduced_axes()
    keepdims = bool(op.attrs()["keepdims"])
    typ = element_type_of(out)
    if isinstance(op, relay.MaxOp | relay.MinOp) and isinstance(typ, IntegerType):
        _integer_extreme_into(b, data, out, axes, keepdims, isinstance(op, relay.MaxOp))
        return
    combine = _REDUCE_COMBINE.get(type(op))
    if combine is not None:
        reduce_into(b, data, out, axes, keepdims, *combine)
        return
    reduce_into(b, data, out, axes, keepdims, arith.AddfOp, 0.0)
    if isinstance(op, relay.MeanOp):
        shape = shape_of(data)
        divide_all(b, out, pymath.prod(shape[d] for d in axes))


def _integer_extreme_into(
    b: BodyBuilder,
    data: SSAValue,
    out: SSAValue,
    axes: Sequence[int],
    keepdims: bool,
    is_max: bool,
) -> None:
    """`relay.max` / `min` of integers (bools: any / all), started at the
    type's smallest (largest) value and compared element by element."""
    typ = element_type_of(out)
    assert isinstance(typ, IntegerType)
    low, high = (0, 1) if typ.width.data == 1 else relay.integer_range(typ)
    fill(b, out, b.constant(low if is_max else high, typ))
    reduced = set(axes)
    inner, ivs = nest(b, shape_of(data))
    at = [0 if d in reduced else iv for d, iv in enumerate(ivs) if keepdims or d not in reduced]
    value = load(inner, data, ivs)
    store(inner, integer_max_min(inner, is_max, load(inner, out, at), value), out, at)


_BETTER = {True: ("gt", "ge"), False: ("lt", "le")}
"""The orders (strictly better, better or equal), by is_max."""


def _replaces(
    b: BodyBuilder, is_max: bool, last: bool, value: SSAValue, best: SSAValue
) -> SSAValue:
    """Whether `value`, met after `best` in row-major order, is the new extreme:
    strictly beyond it (or as far, to keep the last), or a NaN where `best` is
    not one (the first NaN; with `last`, any NaN)."""
    if isinstance(value.type, IntegerType):
        return compare_in_order(b, _BETTER[is_max][last], value, best)
    beyond = compare_floats(b, "o" + _BETTER[is_max][last], value, best)
    is_nan = compare_floats(b, "uno", value, value)
    if not last:
        best_nan = compare_floats(b, "uno", best, best)
        best_is_number = b.scalar(arith.XOrIOp, best_nan, b.constant(1, i1))
        is_nan = b.scalar(arith.AndIOp, is_nan, best_is_number)
    return b.scalar(arith.OrIOp, beyond, is_nan)


def lower_arg_reduce(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.argmax` / `argmin`: one row-major walk over `data` keeping
    each output's extreme so far (in a scratch buffer shaped like the output)
    and its row-major position within the reduced axes."""
    assert isinstance(op, relay.ArgReduceOp)
    (data,), (out,) = operands, results
    is_max = isinstance(op, relay.ArgmaxOp)
    last = bool(op.attrs()["select_last_index"])
    reduced = set(op.reduced_axes())
    shape = shape_of(data)
    typ = element_type_of(data)
    if typ == i1:
        start: float | int = 0 if is_max else 1
    elif isinstance(typ, IntegerType):
        start = relay.integer_range(typ)[0 if is_max else 1]
    else:
        start = -pymath.inf if is_max else pymath.inf
    best = scratch(b, shape_of(out), typ, "best")
    fill(b, best, b.constant(start, typ))
    fill(b, out, b.constant(0, I32))
    inner, ivs = nest(b, shape)
    keepdims = bool(op.attrs()["keepdims"])
    at = [0 if d in reduced else iv for d, iv in enumerate(ivs) if keepdims or d not in reduced]
    position: Index = 0
    for d in sorted(reduced):
        position = index_add(inner, index_mul(inner, position, shape[d]), ivs[d])
    value, current = load(inner, data, ivs), load(inner, best, at)
    replaces = _replaces(inner, is_max, last, value, current)
    index = inner.scalar(arith.IndexCastOp, value_of(inner, position), result_type=I32)
    store(inner, select(inner, replaces, value, current), best, at)
    store(inner, select(inner, replaces, index, load(inner, out, at)), out, at)
    release(b, best)


def lower_global_avg_pool2d(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.global_avg_pool2d` as a mean over H and W: each plane's
    columns summed down its rows into a local array (adds independent along
    the row: they vectorise), then those sums added up. The plane summed in
    order was one chain of dependent adds: SqueezeNet's 1000 planes of 13x13
    took 3x onnxruntime's time. Rows longer than `GAP_COLUMNS` (whose sums
    `reduce_into` splits into partial sums) keep that."""
    assert isinstance(op, relay.GlobalAvgPool2dOp)
    (data,), (out,) = operands, results
    n_batch, channels, height, width = shape_of(data)
    typ = element_type_of(out)
    if width > GAP_COLUMNS or height == 1 or isinstance(typ, IntegerType):
        reduce_into(b, data, out, (2, 3), True, arith.AddfOp, 0.0)
        divide_all(b, out, height * width)
        return
    plane_b, (n, c) = nest(b, (n_batch, channels), ["n", "c"])
    # In the plane's loop: each plane (a parallel iteration) has its own.
    sums = plane_b.insert(memref.AllocaOp.get(typ, shape=(width,))).memref
    sums.name_hint = "sums"
    first_b, x = for_range(plane_b, 0, width, "ix")
    store(first_b, load(first_b, data, [n, c, 0, x]), sums, [x])
    row_b, y = for_range(plane_b, 1, height, "iy")
    x_b, x = for_range(row_b, 0, width, "ix")
    accumulate(x_b, arith.AddfOp, sums, [x], load(x_b, data, [n, c, y, x]))
    at = [n, c, 0, 0]
    store(plane_b, load(plane_b, sums, [0]), out, at)
    total_b, x = for_range(plane_b, 1, width, "ix")
    accumulate(total_b, arith.AddfOp, out, at, load(total_b, sums, [x]))
    accumulate(plane_b, arith.DivfOp, out, at, b.constant(float(height * width), typ))


GAP_COLUMNS = 256
"""Widest rows `lower_global_avg_pool2d` sums column by column."""


# --- Softmax and layer_norm: statistics along one axis -----------------------------


def _along_axis(
    op: Operation, data: SSAValue
) -> tuple[int, tuple[int, ...], int, tuple[int, ...]]:
    """`(axis, outer shape, axis size, inner shape)` of an op with an `axis`."""
    shape = shape_of(data)
    axis = relay.normalize_axis(op.attrs()["axis"], len(shape), op.name)
    return axis, shape[:axis], shape[axis], shape[axis + 1 :]


def lower_softmax(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.softmax` and `log_softmax` along any axis: the maximum,
    then the sum of `exp(x - max)`, then the normalisation (no overflow)."""
    assert isinstance(op, relay.SoftmaxOp | relay.LogSoftmaxOp)
    (data,), (out,) = operands, results
    log = isinstance(op, relay.LogSoftmaxOp)
    _, outer, size, inner = _along_axis(op, data)
    if not inner:
        softmax_rows(b, data, out, outer, size, log)
        return
    typ = element_type_of(out)
    # Statistics for one outer index, laid out like the dims after the axis, so
    # every loop below walks memory contiguously.
    peak, total = scratch(b, inner, typ, "max"), scratch(b, inner, typ, "sum")
    o_b, o = nest(b, outer)

    init_b, s = nest(o_b, inner, "j")
    store(init_b, o_b.constant(-pymath.inf, typ), peak, s)
    store(init_b, o_b.constant(0.0, typ), total, s)

    max_b, (a, *s) = nest(o_b, (size, *inner), "j")
    accumulate(max_b, arith.MaximumfOp, peak, s, load(max_b, data, [*o, a, *s]))

    exp_b, (a, *s) = nest(o_b, (size, *inner), "j")
    shifted = binary(
        exp_b, arith.SubfOp, load(exp_b, data, [*o, a, *s]), load(exp_b, peak, s)
    )
    exp = exp_of(exp_b, shifted)
    store(exp_b, shifted if log else exp, out, [*o, a, *s])
    accumulate(exp_b, arith.AddfOp, total, s, exp)

    if log:
        log_b, s = nest(o_b, inner, "j")
        store(log_b, log_b.scalar(math.LogOp, load(log_b, total, s)), total, s)
    norm_b, (a, *s) = nest(o_b, (size, *inner), "j")
    accumulate(
        norm_b,
        arith.SubfOp if log else arith.DivfOp,
        out,
        [*o, a, *s],
        load(norm_b, total, s),
    )
    release(b, peak)
    release(b, total)


def softmax_rows(
    b: BodyBuilder,
    data: SSAValue,
    out: SSAValue,
    outer: Sequence[int],
    size: int,
    log: bool,
) -> None:
    """Softmax (or log_softmax) along the contiguous last axis, one row at a
    time while it is in cache: the maximum, then `exp(x - max)` stored and
    summed, then one multiply by `1 / sum` (or subtract `log(sum)`). The
    maximum and the sum keep vector-wide partial results (`reduce_along`) and
    exp is vectorisable arithmetic, so every pass over the row vectorises."""
    typ = element_type_of(out)
    peak, total = scratch(b, (), typ, "max"), scratch(b, (), typ, "sum")
    o_b, o = nest(b, outer)
    store(o_b, o_b.constant(-pymath.inf, typ), peak, [])
    store(o_b, o_b.constant(0.0, typ), total, [])

    def element(inner: BodyBuilder, k: Index) -> SSAValue:
        return load(inner, data, [*o, k])

    reduce_along(o_b, size, element, peak, [], arith.MaximumfOp, -pymath.inf)

    def exponential(inner: BodyBuilder, k: Index) -> SSAValue:
        shifted = binary(inner, arith.SubfOp, element(inner, k), load(inner, peak, []))
        exp = exp_of(inner, shifted)
        store(inner, shifted if log else exp, out, [*o, k])
        return exp

    reduce_along(o_b, size, exponential, total, [], arith.AddfOp, 0.0)
    if log:
        scale = o_b.scalar(math.LogOp, load(o_b, total, []))
    else:
        scale = binary(o_b, arith.DivfOp, o_b.constant(1.0, typ), load(o_b, total, []))
    n_b, (k,) = nest(o_b, (size,), ["k"])
    accumulate(n_b, arith.SubfOp if log else arith.MulfOp, out, [*o, k], scale)


def layer_norm_rows(
    b: BodyBuilder,
    op: relay.LayerNormOp,
    operands: Sequence[SSAValue],
    out: SSAValue,
    outer: Sequence[int],
    size: int,
) -> None:
    """layer_norm along the contiguous last axis, one row at a time while it is
    in cache: the mean, the variance (both with vector-wide partial sums),
    then `(x - mean) * (1 / sqrt(var + epsilon)) * gamma + beta` in one
    vectorised pass."""
    data, gamma, beta = operands
    attrs = op.attrs()
    typ = element_type_of(out)
    count = b.constant(float(size), typ)
    mean, spread = scratch(b, (), typ, "mean"), scratch(b, (), typ, "var")
    o_b, o = nest(b, outer)
    zero = o_b.constant(0.0, typ)
    store(o_b, zero, mean, [])
    store(o_b, zero, spread, [])

    def element(inner: BodyBuilder, k: Index) -> SSAValue:
        return load(inner, data, [*o, k])

    sum_along(o_b, size, element, mean, [])
    accumulate(o_b, arith.DivfOp, mean, [], count)

    def deviation(inner: BodyBuilder, k: Index) -> SSAValue:
        return binary(inner, arith.SubfOp, element(inner, k), load(inner, mean, []))

    def square(inner: BodyBuilder, k: Index) -> SSAValue:
        d = deviation(inner, k)
        return binary(inner, arith.MulfOp, d, d)

    sum_along(o_b, size, square, spread, [])
    variance = binary(o_b, arith.DivfOp, load(o_b, spread, []), count)
    variance = binary(o_b, arith.AddfOp, variance, o_b.constant(attrs["epsilon"], typ))
    inverse = binary(
        o_b, arith.DivfOp, o_b.constant(1.0, typ), o_b.scalar(math.SqrtOp, variance)
    )
    n_b, (k,) = nest(o_b, (size,), ["k"])
    y = binary(n_b, arith.MulfOp, deviation(n_b, k), inverse)
    if attrs["scale"]:
        y = binary(n_b, arith.MulfOp, y, load(n_b, gamma, [k]))
    if attrs["center"]:
        y = binary(n_b, arith.AddfOp, y, load(n_b, beta, [k]))
    store(n_b, y, out, [*o, k])


def lower_layer_norm(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.layer_norm`: the mean, then the (population) variance
    along `axis`, then the normalisation with gamma and beta along `axis`."""
    assert isinstance(op, relay.LayerNormOp)
    (data, gamma, beta), (out,) = operands, results
    _, outer, size, inner = _along_axis(op, data)
    if not inner:
        layer_norm_rows(b, op, operands, out, outer, size)
        return
    typ = element_type_of(out)
    count = b.constant(float(size), typ)
    epsilon = b.constant(op.attrs()["epsilon"], typ)
    mean, std = scratch(b, inner, typ, "mean"), scratch(b, inner, typ, "std")
    o_b, o = nest(b, outer)

    init_b, s = nest(o_b, inner, "j")
    zero = o_b.constant(0.0, typ)
    store(init_b, zero, mean, s)
    store(init_b, zero, std, s)

    sum_b, (a, *s) = nest(o_b, (size, *inner), "j")
    accumulate(sum_b, arith.AddfOp, mean, s, load(sum_b, data, [*o, a, *s]))
    div_b, s = nest(o_b, inner, "j")
    accumulate(div_b, arith.DivfOp, mean, s, count)

    var_b, (a, *s) = nest(o_b, (size, *inner), "j")
    deviation = binary(
        var_b, arith.SubfOp, load(var_b, data, [*o, a, *s]), load(var_b, mean, s)
    )
    accumulate(
        var_b, arith.AddfOp, std, s, binary(var_b, arith.MulfOp, deviation, deviation)
    )
    std_b, s = nest(o_b, inner, "j")
    variance = binary(std_b, arith.DivfOp, load(std_b, std, s), count)
    variance = binary(std_b, arith.AddfOp, variance, epsilon)
    store(std_b, std_b.scalar(math.SqrtOp, variance), std, s)

    norm_b, (a, *s) = nest(o_b, (size, *inner), "j")
    y = _normalise(
        norm_b,
        op,
        load(norm_b, data, [*o, a, *s]),
        load(norm_b, mean, s),
        load(norm_b, std, s),
        lambda: load(norm_b, gamma, [a]),
        lambda: load(norm_b, beta, [a]),
    )
    store(norm_b, y, out, [*o, a, *s])
    release(b, mean)
    release(b, std)


def _sum_over(
    b: BodyBuilder,
    extents: Sequence[int],
    term: Callable[[BodyBuilder, list[Index]], SSAValue],
    target: SSAValue,
) -> None:
    """`target[] += sum of term(indices)` over the index space `extents`, the
    last one in partial sums (`sum_along`)."""
    if not extents:
        accumulate(b, arith.AddfOp, target, [], term(b, []))
        return
    outer_b, outer = nest(b, extents[:-1], "r")
    sum_along(
        outer_b, extents[-1], lambda inner, k: term(inner, [*outer, k]), target, []
    )


def lower_instance_norm(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.instance_norm`: per instance and channel, the mean, then
    the (population) variance over the other axes, in partial sums, then one
    multiply-add per element (`x * scale + shift`, the two folded from gamma,
    beta and the statistics)."""
    assert isinstance(op, relay.InstanceNormOp)
    (data, gamma, beta), (out,) = operands, results
    attrs = op.attrs()
    shape = shape_of(data)
    axis = relay.normalize_axis(attrs["axis"], len(shape), op.name)
    reduced = relay.instance_norm_axes(len(shape), axis, op.name)
    kept = [d for d in range(len(shape)) if d not in reduced]
    typ = element_type_of(out)
    mean, spread = (entry_alloca(b, (), typ, name) for name in ("mean", "var"))
    zero = b.constant(0.0, typ)

    kept_b, kept_ivs = nest(b, [shape[d] for d in kept], ["n", "c"][: len(kept)])

    def full(indices: Sequence[Index]) -> list[Index]:
        where = dict(zip(kept, kept_ivs)) | dict(zip(reduced, indices))
        return [where[d] for d in range(len(shape))]

    extents = [shape[d] for d in reduced]
    count = kept_b.constant(float(pymath.prod(extents)), typ)
    store(kept_b, zero, mean, [])
    store(kept_b, zero, spread, [])
    _sum_over(kept_b, extents, lambda x_b, r: load(x_b, data, full(r)), mean)
    centre = binary(kept_b, arith.DivfOp, load(kept_b, mean, []), count)

    def square(x_b: BodyBuilder, r: list[Index]) -> SSAValue:
        deviation = binary(x_b, arith.SubfOp, load(x_b, data, full(r)), centre)
        return binary(x_b, arith.MulfOp, deviation, deviation)

    _sum_over(kept_b, extents, square, spread)
    variance = binary(kept_b, arith.DivfOp, load(kept_b, spread, []), count)
    epsilon = kept_b.constant(attrs["epsilon"], typ)
    std = kept_b.scalar(math.SqrtOp, binary(kept_b, arith.AddfOp, variance, epsilon))
    channel = [kept_ivs[kept.index(axis)]] if axis in kept else [0]
    scale = binary(kept_b, arith.DivfOp, kept_b.constant(1.0, typ), std)
    if attrs["scale"]:
        scale = binary(kept_b, arith.MulfOp, scale, load(kept_b, gamma, channel))
    shift = binary(kept_b, arith.SubfOp, zero, binary(kept_b, arith.MulfOp, centre, scale))
    if attrs["center"]:
        shift = binary(kept_b, arith.AddfOp, shift, load(kept_b, beta, channel))
    norm_b, r = nest(kept_b, extents, "r")
    y = binary(norm_b, arith.MulfOp, load(norm_b, data, full(r)), scale)
    store(norm_b, binary(norm_b, arith.AddfOp, y, shift), out, full(r))


def lower_lrn(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers `relay.nn.lrn`: per index along `axis`, the sum of squares over its
    window (a loop clamped to the axis, so no padding), then the scaling. The
    innermost loops walk the dims after the axis, contiguous in memory."""
    assert isinstance(op, relay.LrnOp)
    (data,), (out,) = operands, results
    attrs = op.attrs()
    _, outer, channels, inner = _along_axis(op, data)
    size = attrs["size"]
    typ = element_type_of(out)
    o_b, o = nest(b, outer)
    c_b, (c,) = nest(o_b, (channels,), ["c"])
    zero_b, s = nest(c_b, inner, "j")
    store(zero_b, b.constant(0.0, typ), out, [*o, c, *s])
    first = index_max(c_b, 0, index_add(c_b, c, -((size - 1) // 2)))
    end = index_min(c_b, channels, index_add(c_b, c, size // 2 + 1))
    k_b, k = for_range(c_b, first, end, "k")
    sum_b, s = nest(k_b, inner, "j")
    x = load(sum_b, data, [*o, k, *s])
    accumulate(sum_b, arith.AddfOp, out, [*o, c, *s], binary(sum_b, arith.MulfOp, x, x))

    scale_b, s = nest(c_b, inner, "j")
    at = [*o, c, *s]
    scaled = binary(
        scale_b,
        arith.MulfOp,
        load(scale_b, out, at),
        b.constant(attrs["alpha"] / size, typ),
    )
    base = binary(scale_b, arith.AddfOp, scaled, b.constant(attrs["bias"], typ))
    power = binary(scale_b, math.PowFOp, base, b.constant(attrs["beta"], typ))
    store(scale_b, binary(scale_b, arith.DivfOp, load(scale_b, data, at), power), out, at)


NN_LOWERINGS: dict[type[Operation], OpLowering] = {
    relay.BiasAddOp: lower_bias_add,
    relay.PReluOp: lower_prelu,
    relay.DenseOp: lower_dense,
    relay.DensePackedOp: lower_dense_packed,
    relay.MatmulOp: lower_matmul,
    relay.BatchMatmulOp: lower_batch_matmul,
    relay.Conv2dOp: lower_conv,
    relay.Conv2dPackedOp: lower_conv,
    relay.Conv3dOp: lower_conv,
    relay.Conv2dTransposeOp: lower_conv_transpose,
    relay.Conv3dTransposeOp: lower_conv_transpose,
    relay.MaxPool2dOp: lower_max_pool,
    relay.AvgPool2dOp: lower_avg_pool,
    relay.MaxPool3dOp: lower_max_pool,
    relay.AvgPool3dOp: lower_avg_pool,
    relay.GlobalAvgPool2dOp: lower_global_avg_pool2d,
    relay.SoftmaxOp: lower_softmax,
    relay.LogSoftmaxOp: lower_softmax,
    relay.BatchNormOp: lower_batch_norm,
    relay.LayerNormOp: lower_layer_norm,
    relay.LrnOp: lower_lrn,
    relay.InstanceNormOp: lower_instance_norm,
    relay.SumOp: lower_reduce,
    relay.ArgmaxOp: lower_arg_reduce,
    relay.ArgminOp: lower_arg_reduce,
    relay.MeanOp: lower_reduce,
    relay.MaxOp: lower_reduce,
    relay.MinOp: lower_reduce,
    relay.ProdOp: lower_reduce,
}
"""Compute relay op class -> its lowering, for `LOWERINGS`."""
