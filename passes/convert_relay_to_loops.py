"""convert-relay-to-loops: relay functions on tensors become the loop-level IR of
docs/architecture.md, which both exits (emitc, llvm) consume.

Each function becomes destination-passing `(memref ins..., memref outs...) ->
i32`. Its ops are walked once, in order: every op result gets a buffer (the
function's output buffer when the result is returned, else a `memref.alloc`
freed right after its last use) and the op's lowering writes into it; a
`relay.constant` is instead a read-only module-level `memref.global`.
Elementwise chains are fused (`plan_fusion`): a single-use, same-shape,
unreturned elementwise value gets no buffer and is computed inside the loop
nest of the elementwise op that reads it.
`extern.call` becomes a `func.call` whose `i32` status is or-ed into the
function's status, so a failing kernel is never silent.

To support a new op: give it a scalar builder in `SCALAR_BUILDERS` if it is
elementwise (in `SCALAR_BUILDERS_OF_OP` if it has attributes), otherwise write
an `OpLowering` and register it in `LOWERINGS` (compute ops: lower_nn.py).
"""

from __future__ import annotations

import gc
import math as pymath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    UnregisteredOp,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects import extern, relay
from byoc.frontend.diagnostics import ByocError
from byoc.passes.loop_nests import (
    I32,
    BodyBuilder,
    ConstantPool,
    ScalarBuilder,
    alloc,
    compare_floats,
    compare_in_order,
    compare_integers,
    copy_nest,
    dealloc,
    element_type_of,
    elementwise_nest,
    load_broadcast,
    loop_nest,
    select,
    shape_of,
    store,
    wrapping,
)
from byoc.passes.lower_nn import NN_LOWERINGS, integer_max_min
from byoc.passes.lower_qnn import QNN_LOWERINGS
from byoc.passes.remainders_and_shifts import remainder, shift
from byoc.passes.concat_in_place import copied_operands, plan_slices, tensor_bytes
from byoc.passes.lower_shapes import (
    SHAPE_LOWERINGS,
    GlobalConstants,
    copy_into_slices,
    lower_constant,
)
from byoc.passes.lower_transform import TRANSFORM_LOWERINGS, cast_scalar, where_scalar
from byoc.passes.vector_math import erf_of, exp_of
from byoc.passes.widen_half import widen_half

PASS_NAME = "convert-relay-to-loops"


# --- Scalar builders: the body of an elementwise op, for one element ----------


def _binary(op_type: type[Operation]) -> ScalarBuilder:
    def build(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
        return b.scalar(op_type, args[0], args[1])

    return build


def _unary(op_type: type[Operation]) -> ScalarBuilder:
    def build(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
        return b.scalar(op_type, args[0])

    return build


def _arithmetic(float_op: type[Operation], integer_op: type[Operation]) -> ScalarBuilder:
    """relay.add / subtract / multiply: IEEE on floats, wrapping on integers."""

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        if isinstance(typ, IntegerType):
            return wrapping(b, integer_op, args[0], args[1])
        return b.scalar(float_op, args[0], args[1])

    return build


# arith.cmpf predicates (ordered, but `une`: numpy's != is true on NaN) and
# the integer order, by relay comparison.
_COMPARISONS: dict[type[Operation], tuple[str, str]] = {
    relay.EqualOp: ("oeq", "eq"),
    relay.NotEqualOp: ("une", "ne"),
    relay.LessOp: ("olt", "lt"),
    relay.LessEqualOp: ("ole", "le"),
    relay.GreaterOp: ("ogt", "gt"),
    relay.GreaterEqualOp: ("oge", "ge"),
}


def _comparison(op_type: type[Operation]) -> ScalarBuilder:
    """A relay comparison: `arith.cmpf` on floats, `arith.cmpi` on integers
    (unsigned order for unsigned types and i1, where false < true)."""
    on_floats, on_integers = _COMPARISONS[op_type]

    def build(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
        x, y = args
        if not isinstance(x.type, IntegerType):
            return compare_floats(b, on_floats, x, y)
        if on_integers in ("eq", "ne"):
            return compare_integers(b, on_integers, x, y)
        return compare_in_order(b, on_integers, x, y)

    return build


def _logical_not(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    return b.scalar(arith.XOrIOp, args[0], b.constant(1, i1))


def _max_min(is_max: bool) -> ScalarBuilder:
    """relay.maximum / minimum: NaN-propagating on floats, compare and select
    on integers (signed or unsigned by the element type)."""
    float_op = arith.MaximumfOp if is_max else arith.MinimumfOp

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        if isinstance(typ, IntegerType):
            return integer_max_min(b, is_max, args[0], args[1])
        return b.scalar(float_op, args[0], args[1])

    return build


def _relu(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    return b.scalar(arith.MaximumfOp, args[0], b.constant(0.0, typ))


def _exp(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
    return exp_of(b, args[0])


def _erf(b: BodyBuilder, args: Sequence[SSAValue], _: Attribute) -> SSAValue:
    return erf_of(b, args[0])


def _sigmoid(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    one = b.constant(1.0, typ)
    exp = exp_of(b, b.scalar(arith.NegfOp, args[0]))
    return b.scalar(arith.DivfOp, one, b.scalar(arith.AddfOp, one, exp))


def _clip(op: Operation) -> ScalarBuilder:
    assert isinstance(op, relay.ClipOp)
    attrs = op.attrs()
    low, high = float(attrs["a_min"]), float(attrs["a_max"])  # type: ignore[arg-type]

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        if isinstance(typ, IntegerType):
            low_int, high_int = relay.integer_clip_bounds(typ, low, high)
            raised = integer_max_min(b, True, args[0], b.constant(low_int, typ))
            return integer_max_min(b, False, raised, b.constant(high_int, typ))
        # maximumf/minimumf propagate NaN, as numpy's clip does.
        raised = b.scalar(arith.MaximumfOp, args[0], b.constant(low, typ))
        return b.scalar(arith.MinimumfOp, raised, b.constant(high, typ))

    return build


def _less(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return compare_floats(b, "olt", x, y)


def _greater(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    return compare_floats(b, "ogt", x, y)


def _clamp01(b: BodyBuilder, x: SSAValue, typ: Attribute) -> SSAValue:
    """`min(max(x, 0), 1)`, NaN kept."""
    raised = b.scalar(arith.MaximumfOp, x, b.constant(0.0, typ))
    return b.scalar(arith.MinimumfOp, raised, b.constant(1.0, typ))


def _exp_minus_one(b: BodyBuilder, x: SSAValue, typ: Attribute) -> SSAValue:
    return b.scalar(arith.SubfOp, b.scalar(math.ExpOp, x), b.constant(1.0, typ))


def _sign(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    (x,) = args
    zero = b.constant(0.0, typ)
    negative = select(b, _less(b, x, zero), b.constant(-1.0, typ), x)
    return select(b, _greater(b, x, zero), b.constant(1.0, typ), negative)


_MANTISSA_BITS = {"f16": 10, "f32": 23, "f64": 52}


def _round_even(b: BodyBuilder, x: SSAValue, typ: Attribute) -> SSAValue:
    """`x` rounded to the nearest integer, halves to even, with arithmetic only
    (no libm, so the C backend takes it): adding and subtracting 2**p, where
    the float spacing is 1, rounds `|x| < 2**p` in the default rounding mode;
    from 2**p on every float is an integer already."""
    assert isinstance(typ, AnyFloat)
    magic = b.constant(float(2 ** _MANTISSA_BITS[str(typ)]), typ)
    size = b.scalar(math.AbsFOp, x)
    rounded = b.scalar(arith.SubfOp, b.scalar(arith.AddfOp, size, magic), magic)
    rounded = select(b, _less(b, size, magic), rounded, size)
    negated = b.scalar(arith.NegfOp, rounded)
    return select(b, _less(b, x, b.constant(0.0, typ)), negated, rounded)


def _round(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    return _round_even(b, args[0], typ)


def _floor(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    # The nearest integer, one less where that is above x.
    (x,) = args
    nearest = _round_even(b, x, typ)
    lower = b.scalar(arith.SubfOp, nearest, b.constant(1.0, typ))
    return select(b, _greater(b, nearest, x), lower, nearest)


def _ceil(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    (x,) = args
    nearest = _round_even(b, x, typ)
    upper = b.scalar(arith.AddfOp, nearest, b.constant(1.0, typ))
    return select(b, _less(b, nearest, x), upper, nearest)


def _reciprocal(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    return b.scalar(arith.DivfOp, b.constant(1.0, typ), args[0])


def _softplus(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    # max(x, 0) + log(1 + exp(-|x|)): exp never overflows.
    (x,) = args
    small = b.scalar(math.ExpOp, b.scalar(arith.NegfOp, b.scalar(math.AbsFOp, x)))
    tail = b.scalar(math.LogOp, b.scalar(arith.AddfOp, b.constant(1.0, typ), small))
    return b.scalar(arith.AddfOp, b.scalar(arith.MaximumfOp, x, b.constant(0.0, typ)), tail)


def _softsign(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    (x,) = args
    denominator = b.scalar(arith.AddfOp, b.constant(1.0, typ), b.scalar(math.AbsFOp, x))
    return b.scalar(arith.DivfOp, x, denominator)


def _hard_sigmoid_of(
    b: BodyBuilder, x: SSAValue, alpha: float, beta: float, typ: Attribute
) -> SSAValue:
    scaled = b.scalar(arith.MulfOp, x, b.constant(alpha, typ))
    return _clamp01(b, b.scalar(arith.AddfOp, scaled, b.constant(beta, typ)), typ)


def _hard_swish(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
    (x,) = args
    return b.scalar(arith.MulfOp, x, _hard_sigmoid_of(b, x, 1.0 / 6.0, 0.5, typ))


def _float_attrs(op: Operation, *names: str) -> list[float]:
    assert isinstance(op, relay.RelayOp)
    attrs = op.attrs()
    return [float(attrs[name]) for name in names]  # type: ignore[arg-type]


def _leaky_relu(op: Operation) -> ScalarBuilder:
    (alpha,) = _float_attrs(op, "alpha")

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        (x,) = args
        scaled = b.scalar(arith.MulfOp, x, b.constant(alpha, typ))
        return select(b, _less(b, x, b.constant(0.0, typ)), scaled, x)

    return build


def _elu(op: Operation) -> ScalarBuilder:
    (alpha,) = _float_attrs(op, "alpha")

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        (x,) = args
        below = b.scalar(arith.MulfOp, _exp_minus_one(b, x, typ), b.constant(alpha, typ))
        return select(b, _less(b, x, b.constant(0.0, typ)), below, x)

    return build


def _selu(op: Operation) -> ScalarBuilder:
    alpha, gamma = _float_attrs(op, "alpha", "gamma")

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        (x,) = args
        below = b.scalar(arith.MulfOp, _exp_minus_one(b, x, typ), b.constant(alpha, typ))
        chosen = select(b, _greater(b, x, b.constant(0.0, typ)), x, below)
        return b.scalar(arith.MulfOp, chosen, b.constant(gamma, typ))

    return build


def _hard_sigmoid(op: Operation) -> ScalarBuilder:
    alpha, beta = _float_attrs(op, "alpha", "beta")

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        return _hard_sigmoid_of(b, args[0], alpha, beta, typ)

    return build


def _shrink(op: Operation) -> ScalarBuilder:
    bias, lambd = _float_attrs(op, "bias", "lambd")

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        (x,) = args
        above = select(
            b,
            _greater(b, x, b.constant(lambd, typ)),
            b.scalar(arith.SubfOp, x, b.constant(bias, typ)),
            b.constant(0.0, typ),
        )
        return select(
            b,
            _less(b, x, b.constant(-lambd, typ)),
            b.scalar(arith.AddfOp, x, b.constant(bias, typ)),
            above,
        )

    return build


def _gelu(op: Operation) -> ScalarBuilder:
    assert isinstance(op, relay.GeluOp)
    approximate = op.attrs()["approximate"] == "tanh"

    def build(b: BodyBuilder, args: Sequence[SSAValue], typ: Attribute) -> SSAValue:
        (x,) = args
        if approximate:
            cube = b.scalar(arith.MulfOp, b.scalar(arith.MulfOp, x, x), x)
            inner = b.scalar(
                arith.AddfOp, x, b.scalar(arith.MulfOp, cube, b.constant(0.044715, typ))
            )
            scaled = b.scalar(
                arith.MulfOp, inner, b.constant(pymath.sqrt(2.0 / pymath.pi), typ)
            )
            curve = b.scalar(math.TanhOp, scaled)
        else:
            scaled = b.scalar(arith.MulfOp, x, b.constant(pymath.sqrt(0.5), typ))
            curve = erf_of(b, scaled)
        half = b.scalar(arith.MulfOp, x, b.constant(0.5, typ))
        return b.scalar(
            arith.MulfOp, half, b.scalar(arith.AddfOp, b.constant(1.0, typ), curve)
        )

    return build


SCALAR_BUILDERS: dict[type[Operation], ScalarBuilder] = {
    relay.AddOp: _arithmetic(arith.AddfOp, arith.AddiOp),
    relay.SubtractOp: _arithmetic(arith.SubfOp, arith.SubiOp),
    relay.MultiplyOp: _arithmetic(arith.MulfOp, arith.MuliOp),
    relay.DivideOp: _binary(arith.DivfOp),
    relay.ReluOp: _relu,
    relay.NegativeOp: _unary(arith.NegfOp),
    relay.TanhOp: _unary(math.TanhOp),
    relay.ExpOp: _exp,
    relay.MaximumOp: _max_min(True),
    relay.MinimumOp: _max_min(False),
    relay.PowerOp: _binary(math.PowFOp),
    relay.AbsOp: _unary(math.AbsFOp),
    relay.LogOp: _unary(math.LogOp),
    relay.SqrtOp: _unary(math.SqrtOp),
    relay.RsqrtOp: _unary(math.RsqrtOp),
    relay.SigmoidOp: _sigmoid,
    relay.ErfOp: _erf,
    relay.SinOp: _unary(math.SinOp),
    relay.CosOp: _unary(math.CosOp),
    relay.TanOp: _unary(math.TanOp),
    relay.AsinOp: _unary(math.AsinOp),
    relay.AcosOp: _unary(math.AcosOp),
    relay.AtanOp: _unary(math.AtanOp),
    relay.SinhOp: _unary(math.SinhOp),
    relay.CoshOp: _unary(math.CoshOp),
    relay.AsinhOp: _unary(math.AsinhOp),
    relay.AcoshOp: _unary(math.AcoshOp),
    relay.AtanhOp: _unary(math.AtanhOp),
    relay.SignOp: _sign,
    relay.FloorOp: _floor,
    relay.CeilOp: _ceil,
    relay.RoundOp: _round,
    relay.ReciprocalOp: _reciprocal,
    relay.SoftplusOp: _softplus,
    relay.SoftsignOp: _softsign,
    relay.HardSwishOp: _hard_swish,
    relay.WhereOp: where_scalar,
    **{op: _comparison(op) for op in relay.COMPARISON_OPS},
    relay.LogicalAndOp: _binary(arith.AndIOp),
    relay.LogicalOrOp: _binary(arith.OrIOp),
    relay.LogicalXorOp: _binary(arith.XOrIOp),
    relay.LogicalNotOp: _logical_not,
    relay.ModOp: remainder(floored=False),
    relay.FloorModOp: remainder(floored=True),
    relay.LeftShiftOp: shift(left=True),
    relay.RightShiftOp: shift(left=False),
}
"""Elementwise relay op class -> `(builder, scalar operands, element type) ->
scalar result`, in operand order. Reusable wherever one element is computed
(loop nests here, fused nests later)."""

SCALAR_BUILDERS_OF_OP: dict[type[Operation], Callable[[Operation], ScalarBuilder]] = {
    relay.ClipOp: _clip,
    relay.LeakyReluOp: _leaky_relu,
    relay.EluOp: _elu,
    relay.SeluOp: _selu,
    relay.HardSigmoidOp: _hard_sigmoid,
    relay.ShrinkOp: _shrink,
    relay.GeluOp: _gelu,
    relay.CastOp: cast_scalar,
}
"""Elementwise relay ops with attributes: op class -> `op -> its scalar builder`."""


# --- Op lowerings: one per op family -----------------------------------------

OpLowering = Callable[
    [BodyBuilder, Operation, Sequence[SSAValue], Sequence[SSAValue]],
    SSAValue | None,
]
"""`(builder, op, operand memrefs, result memrefs) -> i32 status or None`.

Writes every result of `op` into the given (already allocated) result buffer;
returns a status value only if the lowered code can fail (a call)."""


def lower_elementwise(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> None:
    """Lowers an elementwise op (any arity, numpy broadcasting) to one loop nest."""
    scalar = SCALAR_BUILDERS.get(type(op)) or SCALAR_BUILDERS_OF_OP[type(op)](op)
    typ = element_type_of(results[0])
    elementwise_nest(b, lambda inner, xs: scalar(inner, xs, typ), operands, results[0])


# --- Fusion: chains of elementwise ops share one loop nest --------------------

ELEMENTWISE: frozenset[type[Operation]] = frozenset(
    (*SCALAR_BUILDERS, *SCALAR_BUILDERS_OF_OP)
)
"""Relay op classes with a scalar builder: the ops fusion may combine."""

MAX_FUSED_OPS = 64
"""The most relay ops computed in one fused loop nest (keeps loop bodies small)."""


def scalar_builder_of(op: Operation) -> ScalarBuilder:
    """The scalar builder of an elementwise op."""
    return SCALAR_BUILDERS.get(type(op)) or SCALAR_BUILDERS_OF_OP[type(op)](op)


def _shape(typ: Attribute) -> tuple[int, ...] | None:
    return typ.get_shape() if isinstance(typ, TensorType) else None


def plan_fusion(
    ops: Sequence[Operation], block: Block, returned: set[SSAValue]
) -> dict[SSAValue, Operation]:
    """Which values are computed inline, mapped to the op that consumes them.

    A value is fused into its consumer when it is the only result of an
    elementwise op, has exactly one use, that use is an elementwise op of
    `block` (with one result) whose result has the value's shape (so both
    iterate over the same indices: a broadcast producer keeps its buffer), and
    the value is not returned. A fused tree holds at most `MAX_FUSED_OPS` ops:
    past that, its largest subtrees are left unfused. One linear sweep, no
    recursion.
    """
    fused: dict[SSAValue, Operation] = {}
    size: dict[Operation, int] = {}
    for op in ops:
        if type(op) not in ELEMENTWISE or len(op.results) != 1:
            continue
        shape = _shape(op.results[0].type)
        candidates: list[tuple[int, SSAValue]] = []
        for value in op.operands:
            producer = value.owner
            if (
                not isinstance(producer, Operation)
                or producer not in size
                or value in returned
                or producer.parent is not block
                or value.get_user_of_unique_use() is not op
                or shape is None
                or _shape(value.type) != shape
            ):
                continue
            candidates.append((size[producer], value))
        total = 1 + sum(n for n, _ in candidates)
        if total > MAX_FUSED_OPS:
            candidates.sort(key=lambda c: c[0])
            while candidates and total > MAX_FUSED_OPS:
                total -= candidates.pop()[0]
        for _, value in candidates:
            fused[value] = op
        size[op] = total
    return fused


def lower_fused(
    b: BodyBuilder,
    root: Operation,
    buffers: dict[SSAValue, SSAValue],
    fused: dict[SSAValue, Operation],
    output: SSAValue,
) -> None:
    """One loop nest computing `root` and every op fused into it, storing only
    `root`'s result into `output`. The expression tree is walked with an
    explicit stack (post-order, operands left to right); unfused operands are
    loaded (once per buffer) from their buffers."""
    inner, ivs = loop_nest(b, shape_of(output))
    scalars: dict[SSAValue, SSAValue] = {}
    # (value to load, None) or (op, ready): ready once its operands are computed.
    stack: list[tuple[SSAValue | Operation, bool]] = [(root, False)]
    while stack:
        item, ready = stack.pop()
        if isinstance(item, SSAValue):
            if item not in scalars:
                scalars[item] = load_broadcast(inner, buffers[item], ivs)
            continue
        if ready:
            result = item.results[0]
            typ = result.type
            assert isinstance(typ, TensorType)
            args = [scalars[v] for v in item.operands]
            scalars[result] = scalar_builder_of(item)(inner, args, typ.element_type)
            continue
        stack.append((item, True))
        for value in reversed(item.operands):
            if value in fused:
                stack.append((value.owner, False))  # type: ignore[arg-type]
            else:
                stack.append((value, False))
    store(inner, scalars[root.results[0]], output, ivs)


def lower_call(
    b: BodyBuilder,
    op: Operation,
    operands: Sequence[SSAValue],
    results: Sequence[SSAValue],
) -> SSAValue:
    """Lowers `extern.call` to a destination-passing `func.call` returning its status."""
    assert isinstance(op, extern.CallOp | func.CallOp)
    call = func.CallOp(op.callee, [*operands, *results], [I32])
    return b.insert(call).res[0]


LOWERINGS: dict[type[Operation], OpLowering] = {
    **{op_type: lower_elementwise for op_type in SCALAR_BUILDERS},
    **{op_type: lower_elementwise for op_type in SCALAR_BUILDERS_OF_OP},
    **SHAPE_LOWERINGS,
    **TRANSFORM_LOWERINGS,
    **NN_LOWERINGS,
    **QNN_LOWERINGS,
    extern.CallOp: lower_call,
    func.CallOp: lower_call,
}
"""Op class -> its lowering. Ops missing here are reported, never skipped."""

_HINTS: dict[str, str] = {
    "extern.region": " (outline regions with byoc-partition first)",
}


# --- Functions ----------------------------------------------------------------


class TypeConverter:
    """Tensor types to memref types, cached: building a type costs microseconds."""

    def __init__(self) -> None:
        self.memrefs: dict[Attribute, MemRefType] = {}

    def memref(self, typ: Attribute, where: Callable[[], str]) -> MemRefType:
        """The identity-layout memref of a static-shape tensor type."""
        found = self.memrefs.get(typ)
        if found is not None:
            return found
        if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
            raise ByocError(
                f"error: {PASS_NAME}: {where()} has type {typ}; expected a "
                "static-shape tensor"
            )
        found = MemRefType(typ.element_type, typ.get_shape())
        self.memrefs[typ] = found
        return found


def is_loop_level(function: func.FuncOp) -> bool:
    """Whether `function` already has the destination-passing signature."""
    ftype = function.function_type
    return tuple(ftype.outputs.data) == (I32,) and all(
        isinstance(t, MemRefType) for t in ftype.inputs.data
    )


def convert_signature(function: func.FuncOp, types: TypeConverter) -> list[MemRefType]:
    """Give `function` its destination-passing type; returns its argument memrefs."""
    name = function.sym_name.data
    ftype = function.function_type
    ins = [
        types.memref(t, lambda i=i: f"argument {i} of @{name}")
        for i, t in enumerate(ftype.inputs.data)
    ]
    outs = [
        types.memref(t, lambda i=i: f"result {i} of @{name}")
        for i, t in enumerate(ftype.outputs.data)
    ]
    args = [*ins, *outs]
    function.function_type = FunctionType.from_lists(args, [I32])
    # Result attributes now describe the output arguments.
    arg_attrs, res_attrs = function.arg_attrs, function.res_attrs
    if arg_attrs is not None or res_attrs is not None:
        empty = DictionaryAttr({})
        function.arg_attrs = ArrayAttr(
            [
                *(arg_attrs.data if arg_attrs else [empty] * len(ins)),
                *(res_attrs.data if res_attrs else [empty] * len(outs)),
            ]
        )
        function.res_attrs = None
    return args


SPLAT_FILL_BYTES = 1 << 20
"""A splat constant larger than this is filled at run time, not stored."""


def large_splat(op: relay.ConstantOp) -> int | float | None:
    """The one value of `op`, a `dense<v>` splat of more than `SPLAT_FILL_BYTES`
    held as one element (as the parser keeps splats), or None."""
    value = op.value
    if not isinstance(value, DenseIntOrFPElementsAttr) or len(value) != 1:
        return None
    typ = value.type
    if pymath.prod(typ.get_shape()) * value.get_element_type().compile_time_size <= SPLAT_FILL_BYTES:
        return None
    one = op.to_numpy().flat[0].item()
    return int(one) if isinstance(one, bool) else one


def is_read_only(value: SSAValue) -> bool:
    """Whether the buffer of `value` exists before the function runs and is only
    read (an argument, or a constant's global): never written, never freed, and
    copied to the output when returned."""
    return isinstance(value, BlockArgument) or isinstance(value.owner, relay.ConstantOp)


class ProfileMarks:
    """Calls that let a profiler time each op group: before the ops of each
    group of a host function (one lowered op with the ops fused into it, or
    one call of an external function), `func.call @<prefix>mark(k : i64)`,
    and `@<prefix>mark(-1)` after the last one. The mark is declared in the
    module and defined by the profiler (runtime/profile.py); `groups[k]`
    describes group `k`: its relay ops and result shape, or `call @callee`."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.groups: list[str] = []

    @property
    def symbol(self) -> str:
        return f"{self.prefix}mark"

    def mark(self, b: BodyBuilder, label: str | None) -> None:
        """A mark opening the next group (`label` describes it), or closing the
        last one (`None`)."""
        index = -1 if label is None else len(self.groups)
        if label is not None:
            self.groups.append(label)
        b.insert(func.CallOp(self.symbol, [b.constant(index, i64)], [I32]))

    def declare(self, module: ModuleOp) -> None:
        module.body.block.add_op(func.FuncOp.external(self.symbol, [i64], [I32]))


def group_label(op: Operation, fused: dict[SSAValue, Operation]) -> str:
    """`op` and the ops fused into it, in evaluation order, with its result's
    shape: `relay.add+relay.nn.relu 1x64x56x56`; a call is `call @callee`."""
    if isinstance(op, extern.CallOp | func.CallOp):
        return f"call @{op.callee.root_reference.data}"
    names: list[str] = []
    stack = [op]
    while stack:
        item = stack.pop()
        names.append(item.name)
        stack.extend(
            v.owner for v in item.operands if v in fused and isinstance(v.owner, Operation)
        )
    shape = _shape(op.results[0].type) if op.results else None
    dims = "x".join(map(str, shape)) if shape is not None else ""
    return f"{'+'.join(reversed(names))} {dims}".rstrip()


POOLED_BY_SIZE_BYTES = 1 << 16
"""Host buffers of at least this many bytes are pooled by size (see
`convert_body`); smaller ones, which the caches hold anyway, by type."""


def by_size(value: SSAValue) -> bool:
    """Whether `value`'s buffer is a view of a byte buffer pooled by size: a
    large tensor of whole-byte elements (an i1 buffer's layout is the host's)."""
    typ = value.type
    if not isinstance(typ, TensorType):
        return False
    width = getattr(typ.element_type, "bitwidth", None)
    return isinstance(width, int) and width >= 8 and tensor_bytes(value) >= POOLED_BY_SIZE_BYTES


def byte_size(buffer: SSAValue) -> int:
    """The size of a `memref<Nxi8>` buffer: N."""
    typ = buffer.type
    assert isinstance(typ, MemRefType)
    return typ.get_shape()[0]


def convert_body(
    function: func.FuncOp,
    old: Block,
    args: Sequence[MemRefType],
    types: TypeConverter,
    constants: GlobalConstants,
    marks: ProfileMarks | None = None,
    in_place: bool = False,
) -> Block:
    """The loop-level body computing what `old` computes, on the arguments `args`.

    With `in_place`, concatenations are written in place (`plan_slices`): a
    value living in a slice of one gets a `memref.view` of its root's buffer,
    an `i8` buffer of the root's bytes, and the concatenation copies only the
    operands that are not.
    """
    name = function.sym_name.data
    ops = list(old.ops)
    ret = ops[-1] if ops else None
    if not isinstance(ret, func.ReturnOp):
        raise ByocError(f"error: {PASS_NAME}: @{name} does not end in func.return")
    ops.pop()
    returned = list(ret.arguments)

    block = Block(arg_types=args)
    n_in = len(old.args)
    buffers: dict[SSAValue, SSAValue] = {}
    for index, (old_arg, new_arg) in enumerate(zip(old.args, block.args)):
        new_arg.name_hint = old_arg.name_hint or f"arg{index}"
        buffers[old_arg] = new_arg
    for index, out in enumerate(block.args[n_in:]):
        out.name_hint = f"out{index}"

    # Returned values are computed straight into their output buffer; a value
    # that cannot be (an argument, a constant, or a value already returned) is
    # copied there.
    destinations: dict[SSAValue, SSAValue] = {}
    copies: list[tuple[SSAValue, SSAValue]] = []
    for value, out in zip(returned, block.args[n_in:]):
        if is_read_only(value) or value in destinations:
            copies.append((value, out))
        else:
            destinations[value] = out

    # Fusion: a fused value has no buffer; its op is computed inside the loop
    # nest of the op it feeds, at that op's position (its emission position).
    fused = plan_fusion(ops, old, set(returned))
    emitted_at: dict[Operation, int] = {}
    for position in range(len(ops) - 1, -1, -1):
        op = ops[position]
        consumer = fused.get(op.results[0]) if len(op.results) == 1 else None
        emitted_at[op] = position if consumer is None else emitted_at[consumer]

    slices = plan_slices(ops, set(returned)) if in_place else {}

    # Liveness, linearly: the position where each value is last used (or defined).
    last_use: dict[SSAValue, int] = {}
    for op in ops:
        at = emitted_at[op]
        for value in op.operands:
            if last_use.get(value, -1) < at:
                last_use[value] = at
        for value in op.results:
            if last_use.get(value, -1) < at:
                last_use[value] = at
    frees: dict[int, list[SSAValue]] = {}
    # A root's buffer is free once every value living in it is dead.
    root_end: dict[SSAValue, int] = {}
    for value, position in last_use.items():
        if not is_read_only(value) and value not in destinations and value not in fused:
            place = slices.get(value)
            if place is None:
                frees.setdefault(position, []).append(value)
            elif root_end.get(place.root, -1) < position:
                root_end[place.root] = position
    root_frees: dict[int, list[SSAValue]] = {}
    for root, position in root_end.items():
        root_frees.setdefault(position, []).append(root)

    b = BodyBuilder(block, ConstantPool(block))
    status: SSAValue | None = None
    # Static memory planning: a buffer whose value is dead goes back to a pool
    # and serves the next value of the same type (in host functions, of 64 KiB
    # and more: the next value it is big enough for); all are freed at the end.
    pool: dict[Attribute, list[SSAValue]] = {}
    pooled: list[SSAValue] = []
    roots: dict[SSAValue, SSAValue] = {}
    # In host functions (`in_place`) large buffers are pooled by size: a value
    # gets a view of the smallest free byte buffer that holds it, so the
    # activations of a whole network cycle through a few buffers that stay in
    # cache, where a pool by type keeps one buffer per shape.
    free_bytes: list[SSAValue] = []  # memref<Nxi8> buffers no value holds
    byte_root: dict[SSAValue, SSAValue] = {}

    def new_buffer(typ: MemRefType, name: str | None) -> SSAValue:
        free = pool.get(typ)
        if free:
            return free.pop()
        buffer = alloc(b, typ)
        buffer.name_hint = name
        pooled.append(buffer)
        return buffer

    def sized_buffer(typ: MemRefType, value: SSAValue) -> SSAValue:
        need = tensor_bytes(value)
        fits = [root for root in free_bytes if byte_size(root) >= need]
        if fits:
            root = min(fits, key=byte_size)
            free_bytes.remove(root)
        else:
            root = new_buffer(MemRefType(i8, [need]), value.name_hint)
        byte_root[value] = root
        viewed = b.insert(memref.ViewOp(root, b.index(0), [], typ)).result
        viewed.name_hint = value.name_hint
        return viewed

    def view(value: SSAValue, typ: MemRefType) -> SSAValue:
        """`value`'s slice of its root's buffer (allocated by the first slice)."""
        place = slices[value]
        root = roots.get(place.root)
        if root is None:
            typ_bytes = MemRefType(i8, [tensor_bytes(place.root)])
            root = roots[place.root] = new_buffer(typ_bytes, place.root.name_hint)
        shift = b.index(place.offset)
        viewed = b.insert(memref.ViewOp(root, shift, [], typ)).result
        viewed.name_hint = value.name_hint
        return viewed
    for position, op in enumerate(ops):
        if isinstance(op, relay.ConstantOp):
            if op.result.first_use is not None:  # a dead weight costs nothing
                typ = types.memref(op.result.type, lambda: f"'{op.name}' in @{name}")
                splat = large_splat(op)
                if splat is None:
                    buffers[op.result] = lower_constant(b, op, constants, typ)
                else:
                    # A few bytes of text may spell gigabytes of one value:
                    # filled at run time, never expanded here.
                    buffer = buffers[op.result] = alloc(b, typ)
                    buffer.name_hint = op.result.name_hint
                    pooled.append(buffer)
                    element = typ.element_type
                    elementwise_nest(b, lambda inner, _: inner.constant(splat, element), [], buffer)
            continue
        if len(op.results) == 1 and op.results[0] in fused:
            continue  # computed inside its consumer's loop nest
        lowering = LOWERINGS.get(type(op))
        if lowering is None:
            op_name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
            raise ByocError(
                f"error: {PASS_NAME}: no lowering for '{op_name}' in @{name}"
                f"{_HINTS.get(op_name, '')}"
            )
        if marks is not None and not isinstance(op, func.CallOp):
            # A call of another host function (a part of a split main) is
            # not a group: the marks inside it time its ops.
            marks.mark(b, group_label(op, fused))
        fuses = any(v in fused for v in op.operands)
        operands = [] if fuses else [buffers[v] for v in op.operands]
        results: list[SSAValue] = []
        for index, value in enumerate(op.results):
            buffer = destinations.get(value)
            if buffer is None:
                typ = types.memref(
                    value.type, lambda i=index: f"result {i} of '{op.name}' in @{name}"
                )
                if value in slices:
                    buffer = view(value, typ)
                elif in_place and by_size(value):
                    buffer = sized_buffer(typ, value)
                else:
                    buffer = new_buffer(typ, value.name_hint)
            buffers[value] = buffer
            results.append(buffer)
        if fuses:
            lower_fused(b, op, buffers, fused, results[0])
            op_status = None
        elif op.results and op.results[0] in slices and isinstance(op, relay.ConcatenateOp):
            copy_into_slices(b, op, operands, results[0], copied_operands(op, slices))
            op_status = None
        else:
            op_status = lowering(b, op, operands, results)
        if op_status is not None:
            status = (
                op_status
                if status is None
                else b.insert(arith.OrIOp(status, op_status)).result
            )
        for value in frees.get(position, ()):
            root = byte_root.get(value)
            if root is not None:
                free_bytes.append(root)
            else:
                pool.setdefault(buffers[value].type, []).append(buffers[value])
        for root in root_frees.get(position, ()):
            pool.setdefault(roots[root].type, []).append(roots[root])

    if marks is not None:
        marks.mark(b, None)
    for value, out in copies:
        copy_nest(b, buffers[value], out)
    for buffer in pooled:
        dealloc(b, buffer)
    b.insert(func.ReturnOp(status if status is not None else b.constant(0, I32)))
    return block


def convert_function(
    function: func.FuncOp,
    types: TypeConverter,
    constants: GlobalConstants,
    marks: ProfileMarks | None = None,
    in_place: bool = False,
) -> None:
    """Lower one relay function (or declaration) to the loop-level IR, in place
    (`in_place`: see `convert_body`)."""
    if is_loop_level(function):
        return
    region = function.body
    blocks = list(region.blocks)
    if len(blocks) > 1:
        raise ByocError(
            f"error: {PASS_NAME}: @{function.sym_name.data} has {len(blocks)} "
            "blocks; expected one"
        )
    args = convert_signature(function, types)
    if not blocks:
        return
    old = blocks[0]
    widen_half(old)
    new = convert_body(function, old, args, types, constants, marks, in_place)
    region.detach_block(old)
    region.add_block(new)
    old.erase(safe_erase=False)


def convert_relay_to_loops(module: ModuleOp, marks: ProfileMarks | None = None) -> None:
    """Lower every function of `module` to the loop-level IR; with `marks`,
    with profiling marks between the op groups of host functions."""
    types = TypeConverter()
    constants = GlobalConstants(module)
    for op in list(module.body.block.ops):
        if isinstance(op, func.FuncOp):
            host = extern.COMPILER_ATTR not in op.attributes
            # Only the host exit reads memref.view: backends' functions copy.
            convert_function(op, types, constants, marks if host else None, host)
    if marks is not None:
        marks.declare(module)


@dataclass(frozen=True)
class ConvertRelayToLoopsPass(ModulePass):
    """Lowers relay functions on tensors to destination-passing loop nests on memrefs."""

    name = PASS_NAME

    profile: str = ""
    """A symbol prefix: if given, a call to `<profile>mark_<k>` precedes each
    op group of the host's functions (see `ProfileMarks`), for profiling
    builds only."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        enabled = gc.isenabled()
        gc.disable()  # creating IR makes many objects and no garbage cycles
        try:
            convert_relay_to_loops(op, ProfileMarks(self.profile) if self.profile else None)
        finally:
            if enabled:
                gc.enable()
