"""The numpy reference of every relay op, against independent computations.

Each op is built through the Python API (so its constructor infers the result
type and its verifier runs), run through `run_reference`, and compared with a
naive loop, a per-element `math` evaluation, a hand-computed value or plain
numpy; the output shapes are checked against the dialect's shape functions.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Block, Operation, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import make_context, relay
from byoc.runtime.reference import REFERENCE, run_reference

F32 = np.float32


def run_op(
    build: Callable[..., Operation], *inputs: np.ndarray
) -> np.ndarray:
    """Build `@main(inputs) { return build(*args) }`, verify it and run the reference."""
    types = [TensorType(f32, x.shape) for x in inputs]
    block = Block(arg_types=types)
    op = build(*block.args)
    block.add_op(op)
    block.add_op(func.ReturnOp(op.results[0]))
    main = func.FuncOp(
        "main", FunctionType.from_lists(types, [op.results[0].type]), Region(block)
    )
    module = ModuleOp([main])
    module.verify()
    (out,) = run_reference(module, [np.asarray(x, dtype=F32) for x in inputs])
    assert out.dtype == F32
    result = op.results[0].type
    assert isinstance(result, TensorType)
    assert out.shape == tuple(result.get_shape())
    return out


def rand(shape: Sequence[int], seed: int = 0, low: float = -2.0, high: float = 2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(F32)


# --- The table -----------------------------------------------------------------


def test_every_op_is_registered_and_has_a_reference():
    names = {op.name for op in relay.RELAY_OPS}
    assert len(names) == len(relay.RELAY_OPS)
    assert names == {op.name for op in relay.Relay.operations}
    assert names == set(REFERENCE)
    for family in (
        relay.BINARY_OPS,
        relay.UNARY_OPS,
        relay.ELEMENTWISE_OPS,
        relay.MATMUL_OPS,
        relay.CONV_OPS,
        relay.POOL_OPS,
        relay.NORMALIZATION_OPS,
        relay.SHAPE_OPS,
        relay.TRANSFORM_OPS,
        relay.REDUCTION_OPS,
    ):
        assert set(family) <= set(relay.RELAY_OPS)
    for op in relay.RELAY_OPS:
        assert op.__doc__ and op.__doc__.strip(), f"{op.name} has no docstring"


# --- Elementwise -----------------------------------------------------------------

dims = st.sampled_from([1, 1, 2, 3, 5])


@st.composite
def broadcastable(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes of rank 0..4 that broadcast (size-1 dims on either side)."""
    out = draw(st.lists(dims, min_size=0, max_size=4))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank :]
        shapes.append(tuple(d if draw(st.booleans()) else 1 for d in tail))
    return shapes[0], shapes[1]


BINARY_NUMPY = {
    relay.AddOp: np.add,
    relay.SubtractOp: np.subtract,
    relay.MultiplyOp: np.multiply,
    relay.DivideOp: np.divide,
    relay.MaximumOp: np.maximum,
    relay.MinimumOp: np.minimum,
    relay.PowerOp: np.power,
}


def test_zero_against_one_broadcasts_to_zero():
    assert relay.broadcast_shapes((2, 0, 4), (2, 1, 4), "t") == (2, 0, 4)
    assert relay.broadcast_shapes((1, 3), (0, 1), "t") == (0, 3)


def test_binary_table_is_complete():
    assert set(BINARY_NUMPY) == set(relay.BINARY_OPS)


@settings(max_examples=60, deadline=None)
@given(shapes=broadcastable(), op_type=st.sampled_from(sorted(BINARY_NUMPY, key=str)))
def test_binary_broadcasts_like_numpy(shapes, op_type):
    lhs, rhs = shapes
    a, b = rand(lhs, 1), rand(rhs, 2, 0.5, 2.0)
    out = run_op(lambda x, y: op_type(x, y), a, b)
    assert out.shape == relay.broadcast_shapes(lhs, rhs, op_type.name)
    assert out.shape == np.broadcast_shapes(lhs, rhs)
    with np.errstate(invalid="ignore"):
        expected = BINARY_NUMPY[op_type](a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_binary_special_values():
    a = np.array([np.nan, 1.0, -0.0, np.inf], F32)
    b = np.array([1.0, np.nan, 0.0, 2.0], F32)
    assert np.isnan(run_op(relay.MaximumOp, a, b)[:2]).all()
    assert np.isnan(run_op(relay.MinimumOp, a, b)[:2]).all()
    np.testing.assert_array_equal(
        run_op(relay.PowerOp, np.array([-8.0, 2.0, 0.0], F32), np.array([1 / 3, -1.0, 0.0], F32)),
        np.array([np.nan, 0.5, 1.0], F32),
    )


def scalar_math(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """Apply `fn` to every element in double precision, then round to float32."""

    def apply(x: np.ndarray) -> np.ndarray:
        out = [fn(float(v)) for v in x.ravel()]
        return np.array(out, dtype=np.float64).reshape(x.shape).astype(F32)

    return apply


def _log(v: float) -> float:
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


def _sqrt(v: float) -> float:
    return math.sqrt(v) if v >= 0 else math.nan


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v > -700 else 0.0


def _integral(fn: Callable[[float], int]) -> Callable[[float], float]:
    """`fn` (floor, ceil, round) on finite values; infinities and NaN kept."""
    return lambda v: float(fn(v)) if math.isfinite(v) else v


def _softplus(v: float) -> float:
    return math.log1p(math.exp(v)) if v < 30 else v + math.log1p(math.exp(-v))


def _in_domain(fn: Callable[[float], float]) -> Callable[[float], float]:
    """`fn` where Python's math defines it, NaN outside its domain (asin(2))."""

    def apply(v: float) -> float:
        try:
            return fn(v)
        except ValueError:
            return math.nan

    return apply


UNARY_MATH = {
    relay.ReluOp: scalar_math(lambda v: max(v, 0.0)),
    relay.TanhOp: scalar_math(math.tanh),
    relay.ExpOp: scalar_math(math.exp),
    relay.NegativeOp: scalar_math(lambda v: -v),
    relay.AbsOp: scalar_math(abs),
    relay.LogOp: scalar_math(_log),
    relay.SqrtOp: scalar_math(_sqrt),
    relay.RsqrtOp: scalar_math(lambda v: 1.0 / _sqrt(v) if v != 0 else math.copysign(math.inf, v)),
    relay.SigmoidOp: scalar_math(_sigmoid),
    relay.ErfOp: scalar_math(math.erf),
    relay.SignOp: scalar_math(lambda v: v if v == 0 or v != v else math.copysign(1.0, v)),
    relay.FloorOp: scalar_math(_integral(math.floor)),
    relay.CeilOp: scalar_math(_integral(math.ceil)),
    relay.RoundOp: scalar_math(_integral(round)),  # Python rounds halves to even
    relay.ReciprocalOp: scalar_math(lambda v: 1.0 / v if v != 0 else math.copysign(math.inf, v)),
    relay.SoftplusOp: scalar_math(_softplus),
    relay.SoftsignOp: scalar_math(lambda v: v / (1.0 + abs(v))),
    relay.HardSwishOp: scalar_math(lambda v: v * min(max(v / 6.0 + 0.5, 0.0), 1.0)),
    relay.SinOp: scalar_math(_in_domain(math.sin)),  # NaN at +-inf
    relay.CosOp: scalar_math(_in_domain(math.cos)),
    relay.TanOp: scalar_math(_in_domain(math.tan)),
    relay.AsinOp: scalar_math(_in_domain(math.asin)),
    relay.AcosOp: scalar_math(_in_domain(math.acos)),
    relay.AtanOp: scalar_math(math.atan),
    relay.SinhOp: scalar_math(math.sinh),
    relay.CoshOp: scalar_math(math.cosh),
    relay.AsinhOp: scalar_math(math.asinh),
    relay.AcoshOp: scalar_math(_in_domain(math.acosh)),
    relay.AtanhOp: scalar_math(
        lambda v: math.copysign(math.inf, v) if abs(v) == 1 else _in_domain(math.atanh)(v)
    ),
}


def test_unary_table_is_complete():
    assert set(UNARY_MATH) == set(relay.UNARY_OPS)


@pytest.mark.parametrize("op_type", list(UNARY_MATH), ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 1, 3), (2, 3, 1, 5)])
def test_unary_against_math(op_type, shape):
    x = rand(shape, 3, -4.0, 4.0)
    out = run_op(op_type, x)
    # Within 2 ulp of the correctly rounded value (float32 kernels round twice).
    np.testing.assert_allclose(out, UNARY_MATH[op_type](x), rtol=2.5e-7, atol=0)


def test_unary_edge_values():
    x = np.array([0.0, -0.0, 1e-30, -1.0, 40.0, -40.0, np.inf, -np.inf], F32)
    for op_type, expected in UNARY_MATH.items():
        np.testing.assert_allclose(run_op(op_type, x), expected(x), rtol=2.5e-7, atol=0)
    # erf near 0 is relative-accurate (a polynomial fit of absolute error 1e-7 is not).
    tiny = np.array([1e-3, 1e-6, -2e-5], F32)
    np.testing.assert_allclose(
        run_op(relay.ErfOp, tiny), scalar_math(math.erf)(tiny), rtol=1e-7
    )


def test_round_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 8388607.5, 2.0**24 + 2], F32)
    np.testing.assert_array_equal(
        run_op(relay.RoundOp, x), [-2, -2, -0.0, 0, 2, 2, 8388608, 2.0**24 + 2]
    )


def _expm1(v: float) -> float:
    return math.expm1(v) if v > -700 else -1.0


ACTIVATIONS = [
    # (op builder, per-element meaning)
    (lambda d: relay.LeakyReluOp(d), lambda v: v if v >= 0 else 0.01 * v),
    (lambda d: relay.LeakyReluOp(d, 0.3), lambda v: v if v >= 0 else 0.3 * v),
    (lambda d: relay.EluOp(d, 0.7), lambda v: v if v >= 0 else 0.7 * _expm1(v)),
    (
        lambda d: relay.SeluOp(d),
        lambda v: relay.SELU_GAMMA * (v if v > 0 else relay.SELU_ALPHA * _expm1(v)),
    ),
    (lambda d: relay.SeluOp(d, 2.0, 0.5), lambda v: 0.5 * (v if v > 0 else 2.0 * _expm1(v))),
    (lambda d: relay.HardSigmoidOp(d), lambda v: min(max(0.2 * v + 0.5, 0.0), 1.0)),
    (lambda d: relay.HardSigmoidOp(d, 0.5, 0.25), lambda v: min(max(0.5 * v + 0.25, 0.0), 1.0)),
    (lambda d: relay.ShrinkOp(d), lambda v: v + 0.0 if v < -0.5 else (v - 0.0 if v > 0.5 else 0.0)),
    (lambda d: relay.ShrinkOp(d, 1.5, 1.0), lambda v: v + 1.5 if v < -1.0 else (v - 1.5 if v > 1.0 else 0.0)),
    (lambda d: relay.GeluOp(d), lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2)))),
    (
        lambda d: relay.GeluOp(d, "tanh"),
        lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))),
    ),
]


@pytest.mark.parametrize("index", range(len(ACTIVATIONS)))
def test_activations_against_math(index):
    build, meaning = ACTIVATIONS[index]
    x = np.concatenate([rand((3, 7), index, -4.0, 4.0).ravel(), [0.0, -0.0, 1e-30, -1e-30, -40.0, 40.0]])
    x = x.astype(F32)
    out = run_op(build, x)
    expected = np.array([meaning(float(v)) for v in x], np.float64).astype(F32)
    np.testing.assert_allclose(out, expected, rtol=2.5e-7, atol=1e-45)


def test_gelu_rejects_an_unknown_approximation():
    x = Block(arg_types=[TensorType(f32, [3])]).args[0]
    op = relay.GeluOp(x, "sigmoid")
    with pytest.raises(VerifyException, match='approximate "sigmoid" is not one of "none", "tanh"'):
        op.verify()


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_prelu(axis):
    data = rand((2, 3, 4), 21)
    alpha = rand((data.shape[axis],), 22)
    out = run_op(lambda d, a: relay.PReluOp(d, a, axis), data, alpha)
    for index in itertools.product(*map(range, data.shape)):
        v = float(data[index])
        assert out[index] == (v if v >= 0 else F32(v * float(alpha[index[axis]])))
    with pytest.raises(VerifyException, match="alpha has shape \\[5\\] but data has 3 elements along axis 1"):
        run_op(relay.PReluOp, data, rand((5,), 1))


def test_clip():
    x = rand((3, 4), 4, -10, 10)
    out = run_op(lambda v: relay.ClipOp(v, -1.5, 6.0), x)
    expected = np.array([[min(max(float(v), -1.5), 6.0) for v in row] for row in x], F32)
    np.testing.assert_array_equal(out, expected)
    op = relay.ClipOp(Block(arg_types=[TensorType(f32, [2])]).args[0], 0.0, 6.0)
    assert op.attrs() == {"a_min": 0.0, "a_max": 6.0}


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_bias_add(axis):
    data = rand((2, 3, 4), 5)
    n = data.shape[axis]
    bias = rand((n,), 6)
    out = run_op(lambda d, b: relay.BiasAddOp(d, b, axis), data, bias)
    expected = np.empty_like(data)
    for index in itertools.product(*map(range, data.shape)):
        expected[index] = data[index] + bias[index[axis]]
    np.testing.assert_array_equal(out, expected)


# --- Linear algebra ---------------------------------------------------------------


def naive_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a [M, K] @ b [K, N]` with loops, in double."""
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n))
    for i, j in itertools.product(range(m), range(n)):
        out[i, j] = sum(float(a[i, t]) * float(b[t, j]) for t in range(k))
    return out


@pytest.mark.parametrize("data_shape", [(1, 1), (3, 5), (2, 3, 4)])
def test_dense(data_shape):
    data = rand(data_shape, 7)
    weight = rand((6, data_shape[-1]), 8)
    out = run_op(lambda d, w: relay.DenseOp(d, w), data, weight)
    assert out.shape == relay.dense_output_shape(data.shape, weight.shape)
    flat = data.reshape(-1, data.shape[-1])
    expected = naive_matmul(flat, weight.T).reshape(*data_shape[:-1], 6)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_matmul_transposes(ta, tb):
    a = rand((4, 3) if ta else (3, 4), 9)  # M=3, K=4
    b = rand((5, 4) if tb else (4, 5), 10)  # N=5
    out = run_op(lambda x, y: relay.MatmulOp(x, y, transpose_a=ta, transpose_b=tb), a, b)
    assert out.shape == (3, 5)
    expected = naive_matmul(a.T if ta else a, b.T if tb else b)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bx,by", [(2, 2), (1, 3), (3, 1)])
@pytest.mark.parametrize("ta,tb", [(False, True), (False, False), (True, True), (True, False)])
def test_batch_matmul(bx, by, ta, tb):
    m, k, n = 2, 3, 4
    x = rand((bx, k, m) if ta else (bx, m, k), 11)
    y = rand((by, n, k) if tb else (by, k, n), 12)
    out = run_op(
        lambda p, q: relay.BatchMatmulOp(p, q, transpose_a=ta, transpose_b=tb), x, y
    )
    batch = max(bx, by)
    assert out.shape == (batch, m, n)
    assert out.shape == relay.batch_matmul_output_shape(x.shape, y.shape, ta, tb)
    for i in range(batch):
        xi, yi = x[i if bx > 1 else 0], y[i if by > 1 else 0]
        expected = naive_matmul(xi.T if ta else xi, yi.T if tb else yi)
        np.testing.assert_allclose(out[i], expected, rtol=1e-6, atol=1e-6)


def test_batch_matmul_defaults_are_relays():
    x = Block(arg_types=[TensorType(f32, [2, 3, 4])]).args[0]
    y = Block(arg_types=[TensorType(f32, [2, 5, 4])]).args[0]
    op = relay.BatchMatmulOp(x, y)
    assert op.attrs() == {"transpose_a": False, "transpose_b": True}
    assert op.result.type == TensorType(f32, [2, 3, 5])


# --- Convolution --------------------------------------------------------------------


def naive_conv2d(
    data: np.ndarray,
    weight: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> np.ndarray:
    """Direct loops over every output element (padding as top, left, bottom, right)."""
    n, c, h, w = data.shape
    o, i, kh, kw = weight.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for b, oc, y, x in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // per_group
        total = 0.0
        for ic, ky, kx in itertools.product(range(i), range(kh), range(kw)):
            yy = y * strides[0] + ky * dilation[0] - top
            xx = x * strides[1] + kx * dilation[1] - left
            if 0 <= yy < h and 0 <= xx < w:
                total += float(data[b, g * i + ic, yy, xx]) * float(weight[oc, ic, ky, kx])
        out[b, oc, y, x] = total
    return out


@st.composite
def conv_cases(draw: st.DrawFn):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c = groups * draw(st.integers(1, 2))
    depthwise = draw(st.booleans())
    if depthwise:
        groups = c
    o = groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(
        st.one_of(
            st.lists(st.integers(0, 2), min_size=1, max_size=1),
            st.lists(st.integers(0, 2), min_size=2, max_size=2),
            st.lists(st.integers(0, 2), min_size=4, max_size=4),
        )
    )
    pads = relay.normalize_padding(padding, "test")
    h = draw(st.integers(max(1, dilation[0] * (kh - 1) + 1 - pads[0] - pads[2]), 7))
    w = draw(st.integers(max(1, dilation[1] * (kw - 1) + 1 - pads[1] - pads[3]), 7))
    n = draw(st.integers(1, 2))
    return (n, c, h, w), (o, c // groups, kh, kw), strides, padding, dilation, groups


@settings(max_examples=60, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 1000))
def test_conv2d_against_loops(case, seed):
    data_shape, weight_shape, strides, padding, dilation, groups = case
    data, weight = rand(data_shape, seed), rand(weight_shape, seed + 1)
    out = run_op(
        lambda d, w: relay.Conv2dOp(d, w, strides, padding, dilation, groups), data, weight
    )
    assert out.shape == relay.conv2d_output_shape(
        data_shape, weight_shape, strides, padding, dilation, groups
    )
    expected = naive_conv2d(
        data, weight, strides, relay.normalize_padding(padding, "t"), dilation, groups
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_padding_forms_agree():
    data, weight = rand((1, 2, 5, 6), 1), rand((3, 2, 3, 3), 2)
    one = run_op(lambda d, w: relay.Conv2dOp(d, w, padding=1), data, weight)
    two = run_op(lambda d, w: relay.Conv2dOp(d, w, padding=(1, 1)), data, weight)
    four = run_op(lambda d, w: relay.Conv2dOp(d, w, padding=(1, 1, 1, 1)), data, weight)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, four)
    asym = run_op(lambda d, w: relay.Conv2dOp(d, w, padding=(0, 1, 2, 0)), data, weight)
    assert asym.shape == (1, 3, 5, 5)
    np.testing.assert_allclose(
        asym, naive_conv2d(data, weight, (1, 1), (0, 1, 2, 0), (1, 1), 1), rtol=1e-5, atol=1e-6
    )


def test_depthwise_conv2d_by_hand():
    """groups == C with a channel multiplier of 2: each output sees one input channel."""
    data = np.arange(2 * 3 * 3, dtype=F32).reshape(1, 2, 3, 3)
    weight = np.zeros((4, 1, 1, 1), F32)
    weight[:, 0, 0, 0] = [1, 2, 3, 4]
    out = run_op(lambda d, w: relay.Conv2dOp(d, w, groups=2), data, weight)
    np.testing.assert_array_equal(out[0, 0], data[0, 0])
    np.testing.assert_array_equal(out[0, 1], 2 * data[0, 0])
    np.testing.assert_array_equal(out[0, 2], 3 * data[0, 1])
    np.testing.assert_array_equal(out[0, 3], 4 * data[0, 1])


# --- Pooling --------------------------------------------------------------------------


def naive_pool(
    data: np.ndarray,
    kind: str,
    pool_size: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool = False,
) -> np.ndarray:
    """Loops over every window; positions are classified as real, explicit padding
    or the extra padding `ceil_mode` adds past the bottom/right padding."""
    n, c, h, w = data.shape
    top, left, bottom, right = padding
    spans = [d * (k - 1) + 1 for k, d in zip(pool_size, dilation)]
    sizes = []
    for length, pad, span, s in zip((h, w), (top + bottom, left + right), spans, strides):
        room = length + pad - span
        sizes.append((room + (s - 1 if ceil_mode else 0)) // s + 1)
    out = np.zeros((n, c, *sizes))
    for b, ch, y, x in itertools.product(range(n), range(c), range(sizes[0]), range(sizes[1])):
        values, explicit = [], 0
        for i, j in itertools.product(range(pool_size[0]), range(pool_size[1])):
            yy = y * strides[0] + i * dilation[0] - top
            xx = x * strides[1] + j * dilation[1] - left
            if 0 <= yy < h and 0 <= xx < w:
                values.append(float(data[b, ch, yy, xx]))
            elif -top <= yy < h + bottom and -left <= xx < w + right:
                explicit += 1
        if kind == "max":
            out[b, ch, y, x] = max(values) if values else -math.inf
        else:
            count = len(values) + (explicit if count_include_pad else 0)
            out[b, ch, y, x] = sum(values) / max(count, 1)
    return out


@st.composite
def pool_cases(draw: st.DrawFn):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, k[d % 2] - 1)) for d in range(4))
    hw = []
    for d in range(2):
        span = dilation[d] * (k[d] - 1) + 1
        hw.append(draw(st.integers(max(1, span - padding[d] - padding[d + 2]), 7)))
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *hw), k, strides, padding, dilation


@settings(max_examples=80, deadline=None)
@given(
    case=pool_cases(),
    ceil_mode=st.booleans(),
    include=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_pools_against_loops(case, ceil_mode, include, seed):
    shape, k, strides, padding, dilation = case
    data = rand(shape, seed)
    out = run_op(
        lambda d: relay.MaxPool2dOp(d, k, strides, padding, dilation, ceil_mode), data
    )
    assert out.shape == relay.pool2d_output_shape(
        shape, k, strides, padding, dilation, ceil_mode
    )
    np.testing.assert_array_equal(
        out, naive_pool(data, "max", k, strides, padding, dilation, ceil_mode)
    )
    out = run_op(
        lambda d: relay.AvgPool2dOp(
            d, k, strides, padding, dilation, ceil_mode, count_include_pad=include
        ),
        data,
    )
    expected = naive_pool(data, "avg", k, strides, padding, dilation, ceil_mode, include)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_avg_pool_count_include_pad_by_hand():
    data = np.arange(1, 10, dtype=F32).reshape(1, 1, 3, 3)
    exclude = run_op(lambda d: relay.AvgPool2dOp(d, (2, 2), padding=1), data)
    include = run_op(
        lambda d: relay.AvgPool2dOp(d, (2, 2), padding=1, count_include_pad=True), data
    )
    assert exclude.shape == (1, 1, 4, 4)
    assert exclude[0, 0, 0, 0] == 1.0  # only data[0, 0] is real
    assert include[0, 0, 0, 0] == 0.25  # ... of four counted positions
    assert exclude[0, 0, 1, 1] == (1 + 2 + 4 + 5) / 4
    assert include[0, 0, 3, 3] == 9 / 4


def test_pool_ceil_mode_by_hand():
    data = np.arange(5, dtype=F32).reshape(1, 1, 1, 5) + 1  # 1 2 3 4 5
    floor = run_op(lambda d: relay.MaxPool2dOp(d, (1, 2), (1, 2)), data)
    ceil = run_op(lambda d: relay.MaxPool2dOp(d, (1, 2), (1, 2), ceil_mode=True), data)
    np.testing.assert_array_equal(floor.ravel(), [2, 4])
    np.testing.assert_array_equal(ceil.ravel(), [2, 4, 5])
    avg = run_op(
        lambda d: relay.AvgPool2dOp(d, (1, 2), (1, 2), ceil_mode=True, count_include_pad=True),
        data,
    )
    # The extra ceil_mode position never counts, even with count_include_pad.
    np.testing.assert_array_equal(avg.ravel(), [1.5, 3.5, 5.0])


def test_max_pool_pads_with_minus_infinity():
    data = np.full((1, 1, 2, 2), -5.0, F32)
    out = run_op(lambda d: relay.MaxPool2dOp(d, (2, 2), padding=1), data)
    np.testing.assert_array_equal(out, np.full((1, 1, 3, 3), -5.0, F32))


def test_global_avg_pool2d():
    data = rand((2, 3, 4, 5), 13)
    out = run_op(relay.GlobalAvgPool2dOp, data)
    assert out.shape == relay.global_pool2d_output_shape(data.shape) == (2, 3, 1, 1)
    for b, c in itertools.product(range(2), range(3)):
        assert out[b, c, 0, 0] == pytest.approx(
            sum(map(float, data[b, c].ravel())) / 20, rel=1e-6
        )


# --- 3-d windows and transposed convolutions ---------------------------------------


def naive_conv_nd(data, weight, strides, pads, dilation, groups) -> np.ndarray:
    """Direct loops over every output element of a conv over any number of
    spatial dims (`pads` as begins..., ends...)."""
    n, c, *sizes = data.shape
    o, i, *kernel = weight.shape
    k = len(sizes)
    outs = [
        (sizes[d] + pads[d] + pads[d + k] - dilation[d] * (kernel[d] - 1) - 1) // strides[d] + 1
        for d in range(k)
    ]
    out = np.zeros((n, o, *outs))
    per_group = o // groups
    for b, oc, *pos in itertools.product(range(n), range(o), *map(range, outs)):
        g = oc // per_group
        total = 0.0
        for ic, *tap in itertools.product(range(i), *map(range, kernel)):
            at = [pos[d] * strides[d] + tap[d] * dilation[d] - pads[d] for d in range(k)]
            if all(0 <= at[d] < sizes[d] for d in range(k)):
                total += float(data[(b, g * i + ic, *at)]) * float(weight[(oc, ic, *tap)])
        out[(b, oc, *pos)] = total
    return out


def naive_conv_transpose(data, weight, strides, pads, dilation, groups, output_padding) -> np.ndarray:
    """Every input element scatters `data * weight` over the output, by loops."""
    n, c, *sizes = data.shape
    _, per_group, *kernel = weight.shape
    k = len(sizes)
    outs = [
        (sizes[d] - 1) * strides[d] - pads[d] - pads[d + k] + dilation[d] * (kernel[d] - 1)
        + output_padding[d] + 1
        for d in range(k)
    ]
    out = np.zeros((n, per_group * groups, *outs))
    in_group = c // groups
    for b, ic, *pos in itertools.product(range(n), range(c), *map(range, sizes)):
        g = ic // in_group
        for oc, *tap in itertools.product(range(per_group), *map(range, kernel)):
            at = [pos[d] * strides[d] + tap[d] * dilation[d] - pads[d] for d in range(k)]
            if all(0 <= at[d] < outs[d] for d in range(k)):
                out[(b, g * per_group + oc, *at)] += float(data[(b, ic, *pos)]) * float(
                    weight[(ic, oc, *tap)]
                )
    return out


def naive_pool_nd(data, kind, pool_size, strides, pads, dilation, ceil_mode, count_include_pad=False):
    """`naive_pool` over any number of spatial dims (`pads` as begins..., ends...)."""
    n, c, *sizes = data.shape
    k = len(sizes)
    outs = []
    for d in range(k):
        room = sizes[d] + pads[d] + pads[d + k] - (dilation[d] * (pool_size[d] - 1) + 1)
        outs.append((room + (strides[d] - 1 if ceil_mode else 0)) // strides[d] + 1)
    out = np.zeros((n, c, *outs))
    for b, ch, *pos in itertools.product(range(n), range(c), *map(range, outs)):
        values, explicit = [], 0
        for tap in itertools.product(*map(range, pool_size)):
            at = [pos[d] * strides[d] + tap[d] * dilation[d] - pads[d] for d in range(k)]
            if all(0 <= at[d] < sizes[d] for d in range(k)):
                values.append(float(data[(b, ch, *at)]))
            elif all(-pads[d] <= at[d] < sizes[d] + pads[d + k] for d in range(k)):
                explicit += 1
        if kind == "max":
            out[(b, ch, *pos)] = max(values) if values else -math.inf
        else:
            count = len(values) + (explicit if count_include_pad else 0)
            out[(b, ch, *pos)] = sum(values) / max(count, 1)
    return out


@st.composite
def windows_3d(draw: st.DrawFn, transposed: bool = False):
    """Kernel, strides, dilation, pads (6 values) and input sizes of a 3-d window op."""
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(3))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(3))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(3))
    pads = tuple(draw(st.integers(0, kernel[d % 3] - 1)) for d in range(6))
    sizes = []
    for d in range(3):
        span = dilation[d] * (kernel[d] - 1) + 1
        low = 1 if transposed else max(1, span - pads[d] - pads[d + 3])
        sizes.append(draw(st.integers(low, low + 3)))
    return kernel, strides, dilation, pads, tuple(sizes)


@settings(max_examples=25, deadline=None)
@given(case=windows_3d(), groups=st.sampled_from([1, 2]), seed=st.integers(0, 1000))
def test_conv3d_against_loops(case, groups, seed):
    kernel, strides, dilation, pads, sizes = case
    data = rand((1, 2 * groups, *sizes), seed)
    weight = rand((2 * groups, 2, *kernel), seed + 1)
    out = run_op(
        lambda d, w: relay.Conv3dOp(d, w, strides, pads, dilation, groups), data, weight
    )
    expected = naive_conv_nd(data, weight, strides, pads, dilation, groups)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@st.composite
def transposed_cases(draw: st.DrawFn):
    spatial = draw(st.sampled_from([2, 3]))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(spatial))
    sizes = tuple(draw(st.integers(1, 4)) for _ in range(spatial))
    extra = tuple(draw(st.integers(0, s - 1)) for s in strides)
    # Padding never removes the whole output.
    pads = []
    for d in range(2 * spatial):
        full = (sizes[d % spatial] - 1) * strides[d % spatial] + dilation[d % spatial] * (
            kernel[d % spatial] - 1
        ) + 1
        pads.append(draw(st.integers(0, max(0, (full - 1) // 2))))
    groups = draw(st.sampled_from([1, 2]))
    return spatial, kernel, strides, dilation, tuple(pads), sizes, extra, groups


@settings(max_examples=40, deadline=None)
@given(case=transposed_cases(), seed=st.integers(0, 1000))
def test_conv_transpose_against_loops(case, seed):
    spatial, kernel, strides, dilation, pads, sizes, extra, groups = case
    op_type = relay.Conv2dTransposeOp if spatial == 2 else relay.Conv3dTransposeOp
    data = rand((2, 2 * groups, *sizes), seed)
    weight = rand((2 * groups, 3, *kernel), seed + 1)
    out = run_op(
        lambda d, w: op_type(
            d, w, strides, pads, dilation, groups, output_padding=extra
        ),
        data,
        weight,
    )
    expected = naive_conv_transpose(data, weight, strides, pads, dilation, groups, extra)
    assert out.shape == expected.shape == relay.conv_transpose_output_shape(
        data.shape, weight.shape, strides, pads, dilation, groups, None, None, extra,
        op_type.name, spatial,
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_by_hand():
    """A 2x2 input, all-ones 3x3 kernel, stride 2: each input's window of 9."""
    data = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], F32)
    out = run_op(lambda d, w: relay.Conv2dTransposeOp(d, w, 2), data, np.ones((1, 1, 3, 3), F32))
    assert out.shape == (1, 1, 5, 5)
    np.testing.assert_array_equal(
        out[0, 0],
        [[1, 1, 3, 2, 2], [1, 1, 3, 2, 2], [4, 4, 10, 6, 6], [3, 3, 7, 4, 4], [3, 3, 7, 4, 4]],
    )


@settings(max_examples=25, deadline=None)
@given(case=windows_3d(), ceil_mode=st.booleans(), include=st.booleans(), seed=st.integers(0, 1000))
def test_pools_3d_against_loops(case, ceil_mode, include, seed):
    kernel, strides, dilation, pads, sizes = case
    data = rand((1, 2, *sizes), seed)
    out = run_op(lambda d: relay.MaxPool3dOp(d, kernel, strides, pads, dilation, ceil_mode), data)
    np.testing.assert_array_equal(
        out, naive_pool_nd(data, "max", kernel, strides, pads, dilation, ceil_mode)
    )
    out = run_op(
        lambda d: relay.AvgPool3dOp(d, kernel, strides, pads, dilation, ceil_mode, include), data
    )
    expected = naive_pool_nd(data, "avg", kernel, strides, pads, dilation, ceil_mode, include)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: relay.conv_output_shape((1, 2, 3, 3, 3), (4, 2, 2, 2), (1,) * 3, (0,), (1,) * 3, spatial=3, op_name="relay.nn.conv3d"), "weight (OIDHW) must have rank 5"),
        (lambda: relay.pool_output_shape((1, 2, 3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 2), (1, 1, 1), spatial=3), "padding must have 1, 3 or 6 values (front, top, left, back, bottom, right)"),
        (lambda: relay.conv_transpose_output_shape((1, 2, 3, 3), (3, 2, 2, 2), (1, 1), (0,), (1, 1)), "data has 2 channels but weight expects 3"),
        (lambda: relay.conv_transpose_output_shape((1, 2, 1, 1), (2, 2, 1, 1), (1, 1), (1,), (1, 1)), "the output would have -1 elements along the height"),
        (lambda: relay.conv_transpose_output_shape((1, 2, 3, 3), (2, 2, 2, 2), (1, 1), (0,), (1, 1), output_padding=(-1, 0)), "output_padding must be non-negative"),
    ],
)
def test_window_shape_function_errors(call, message):
    with pytest.raises(VerifyException) as info:
        call()
    assert message in str(info.value)


# --- Normalisation ---------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_softmax_and_log_softmax(axis):
    data = rand((2, 3, 4), 14, -5, 5)
    out = run_op(lambda d: relay.SoftmaxOp(d, axis), data)
    np.testing.assert_allclose(out.sum(axis=axis), 1.0, rtol=1e-6)
    e = np.exp(data.astype(np.float64))
    np.testing.assert_allclose(out, e / e.sum(axis=axis, keepdims=True), rtol=1e-6)
    log = run_op(lambda d: relay.LogSoftmaxOp(d, axis), data)
    np.testing.assert_allclose(log, np.log(e / e.sum(axis=axis, keepdims=True)), rtol=1e-5, atol=1e-6)


def test_softmax_is_stable():
    data = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], F32)
    out = run_op(relay.SoftmaxOp, data)
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.0, 1.0]], atol=1e-7)
    log = run_op(relay.LogSoftmaxOp, data)
    assert np.isfinite(log[0]).all()
    np.testing.assert_allclose(log[0], [math.log(0.5)] * 2, rtol=1e-6)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm(axis):
    data = rand((3, 8, 5), 15, -3, 7)
    n = data.shape[axis]
    ones, zeros = np.ones(n, F32), np.zeros(n, F32)
    out = run_op(lambda d, g, b: relay.LayerNormOp(d, g, b, axis, epsilon=0.0), data, ones, zeros)
    np.testing.assert_allclose(out.mean(axis=axis), 0.0, atol=1e-6)
    np.testing.assert_allclose(out.var(axis=axis), 1.0, rtol=1e-5)
    gamma, beta = rand((n,), 16), rand((n,), 17)
    out = run_op(lambda d, g, b: relay.LayerNormOp(d, g, b, axis), data, gamma, beta)
    moved = np.moveaxis(data.astype(np.float64), axis, -1)
    expected = np.empty_like(moved)
    for index in itertools.product(*map(range, moved.shape[:-1])):
        row = moved[index]
        mean = sum(row) / n
        var = sum((v - mean) ** 2 for v in row) / n
        expected[index] = (row - mean) / math.sqrt(var + 1e-5) * gamma + beta
    np.testing.assert_allclose(out, np.moveaxis(expected, -1, axis), rtol=1e-5, atol=1e-6)
    plain = run_op(
        lambda d, g, b: relay.LayerNormOp(d, g, b, axis, center=False, scale=False),
        data,
        gamma,
        beta,
    )
    np.testing.assert_allclose(plain.mean(axis=axis), 0.0, atol=1e-6)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("axis", [1, -1])
def test_lrn_against_loops(size, axis):
    data = rand((2, 5, 3), 30, -3, 3)
    out = run_op(
        lambda d: relay.LrnOp(d, size, axis, bias=1.5, alpha=0.3, beta=0.7), data
    )
    moved = np.moveaxis(data.astype(np.float64), axis, 1)
    expected = np.empty_like(moved)
    channels = moved.shape[1]
    for n, c, s in itertools.product(*map(range, moved.shape)):
        # ONNX's window: floor((size-1)/2) before, ceil((size-1)/2) after.
        lo = max(0, c - math.floor((size - 1) / 2))
        hi = min(channels - 1, c + math.ceil((size - 1) / 2))
        total = sum(moved[n, j, s] ** 2 for j in range(lo, hi + 1))
        expected[n, c, s] = moved[n, c, s] / (1.5 + 0.3 / size * total) ** 0.7
    np.testing.assert_allclose(out, np.moveaxis(expected, 1, axis), rtol=1e-6)


def test_lrn_rejects_a_bad_size():
    x = Block(arg_types=[TensorType(f32, [1, 3, 2, 2])]).args[0]
    with pytest.raises(VerifyException, match="'relay.nn.lrn': size must be positive, got 0"):
        relay.LrnOp(x, 0)
    with pytest.raises(VerifyException, match="axis 4 is out of range for rank 4"):
        relay.LrnOp(x, 3, axis=4)


@pytest.mark.parametrize("center,scale", list(itertools.product([True, False], repeat=2)))
@pytest.mark.parametrize("axis", [1, -1])
def test_batch_norm_formula(center, scale, axis):
    data = rand((2, 3, 4, 3), 18)
    c = data.shape[axis]
    gamma, beta, mean = rand((c,), 19), rand((c,), 20), rand((c,), 21)
    var = rand((c,), 22, 0.1, 2.0)
    out = run_op(
        lambda *v: relay.BatchNormOp(*v, axis=axis, epsilon=1e-3, center=center, scale=scale),
        data,
        gamma,
        beta,
        mean,
        var,
    )
    expected = np.empty(data.shape)
    for index in itertools.product(*map(range, data.shape)):
        ch = index[axis]
        v = (float(data[index]) - float(mean[ch])) / math.sqrt(float(var[ch]) + 1e-3)
        v = v * float(gamma[ch]) if scale else v
        expected[index] = v + float(beta[ch]) if center else v
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


# --- Shape manipulation -------------------------------------------------------------------

# TVM's documented examples of reshape's special values.
TVM_RESHAPES = [
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
    ((), (1, 1), (1, 1)),
    ((1,), (), ()),
]


@pytest.mark.parametrize("shape,newshape,expected", TVM_RESHAPES)
def test_reshape_special_values(shape, newshape, expected):
    assert relay.reshape_output_shape(shape, newshape) == expected
    data = rand(shape, 23)
    out = run_op(lambda d: relay.ReshapeOp(d, newshape), data)
    np.testing.assert_array_equal(out, data.reshape(expected))


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=4),
    data=st.data(),
)
def test_reshape_with_copy_and_infer_matches_numpy(shape, data):
    """newshape from a random target: some dims kept as 0 (copy), one as -1."""
    shape = tuple(shape)
    total = math.prod(shape)
    target = list(data.draw(st.permutations(shape)))  # same element count
    if data.draw(st.booleans()) and target:
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    newshape = [
        0 if i < len(shape) and t == shape[i] and data.draw(st.booleans()) else t
        for i, t in enumerate(target)
    ]
    x = np.arange(total, dtype=F32).reshape(shape)
    expected = x.reshape([t for t in target]) if target else x.reshape(())
    assert relay.reshape_output_shape(shape, newshape) == expected.shape
    out = run_op(lambda d: relay.ReshapeOp(d, newshape), x)
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=4), data=st.data())
def test_transpose_matches_numpy(shape, data):
    x = rand(shape, 24)
    axes = data.draw(st.permutations(range(len(shape))))
    axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    out = run_op(lambda d: relay.TransposeOp(d, axes), x)
    np.testing.assert_array_equal(out, np.transpose(x, axes))
    assert out.shape == relay.transpose_output_shape(shape, axes)
    reverse = run_op(relay.TransposeOp, x)
    np.testing.assert_array_equal(reverse, x.T)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate(axis):
    parts = [rand((2, 3, 4)[:axis % 3] + (k,) + (2, 3, 4)[axis % 3 + 1 :], k) for k in (1, 2, 3)]
    out = run_op(lambda *v: relay.ConcatenateOp(v, axis), *parts)
    np.testing.assert_array_equal(out, np.concatenate(parts, axis=axis))
    assert out.shape == relay.concatenate_output_shape([p.shape for p in parts], axis)
    single = run_op(lambda v: relay.ConcatenateOp([v], axis), parts[0])
    np.testing.assert_array_equal(single, parts[0])


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (1, 1, 5, 1)])
def test_batch_flatten(shape):
    x = rand(shape, 25)
    out = run_op(relay.BatchFlattenOp, x)
    np.testing.assert_array_equal(out, x.reshape(shape[0], -1))


@pytest.mark.parametrize(
    "shape,axis", [((1, 3, 1, 2), None), ((1, 3, 1, 2), (0,)), ((1, 3, 1, 2), (-2, 0)), ((1,), None), ((2, 3), ())]
)
def test_squeeze(shape, axis):
    x = rand(shape, 26)
    out = run_op(lambda d: relay.SqueezeOp(d, axis), x)
    expected = np.squeeze(x, axis=None if axis is None else tuple(axis))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("num_newaxis", [0, 1, 2])
def test_expand_dims(axis, num_newaxis):
    x = rand((2, 3), 27)
    out = run_op(lambda d: relay.ExpandDimsOp(d, axis, num_newaxis), x)
    expected = x
    position = axis if axis >= 0 else axis + x.ndim + 1
    for _ in range(num_newaxis):
        expected = np.expand_dims(expected, position)
    np.testing.assert_array_equal(out, expected)


# --- Reductions ---------------------------------------------------------------------------

REDUCE_NUMPY = {
    relay.SumOp: np.sum,
    relay.MeanOp: np.mean,
    relay.MaxOp: np.max,
    relay.MinOp: np.min,
    relay.ProdOp: np.prod,
}


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=4),
    op_type=st.sampled_from(sorted(REDUCE_NUMPY, key=str)),
    keepdims=st.booleans(),
    exclude=st.booleans(),
    data=st.data(),
)
def test_reductions_match_numpy(shape, op_type, keepdims, exclude, data):
    rank = len(shape)
    axis = None
    if rank and data.draw(st.booleans()):
        chosen = data.draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
        axis = [a - rank if data.draw(st.booleans()) else a for a in chosen]
    x = rand(shape, 28)
    out = run_op(lambda d: op_type(d, axis, keepdims, exclude), x)
    if not axis:  # None or []: every axis, as Relay
        axes = tuple(range(rank))
    else:
        listed = {a % rank for a in axis}
        axes = tuple(a for a in range(rank) if (a in listed) != exclude)
    assert relay.reduce_axes(rank, axis, exclude) == axes
    expected = REDUCE_NUMPY[op_type](x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_reduction_table_is_complete():
    assert set(REDUCE_NUMPY) == set(relay.REDUCTION_OPS)


@pytest.mark.parametrize("axis", [1, -1, 0, 2])
def test_instance_norm(axis):
    data = rand((2, 3, 4, 5), 31, -3, 7)
    c = data.shape[axis]
    gamma, beta = rand((c,), 32), rand((c,), 33)
    out = run_op(lambda d, g, b: relay.InstanceNormOp(d, g, b, axis, 1e-3), data, gamma, beta)
    ax = axis % 4
    expected = np.empty(data.shape)
    x = data.astype(np.float64)
    for n, k in itertools.product(range(2), range(c)):
        if ax == 0 and k != n:
            continue  # the channel is the instance
        index = tuple(n if d == 0 else (k if d == ax else slice(None)) for d in range(4))
        block = x[index]
        mean = block.sum() / block.size
        var = ((block - mean) ** 2).sum() / block.size
        expected[index] = (block - mean) / math.sqrt(var + 1e-3) * gamma[k] + beta[k]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    plain = run_op(
        lambda d, g, b: relay.InstanceNormOp(d, g, b, axis, 0.0, False, False), data, gamma, beta
    )
    axes = relay.instance_norm_axes(4, axis)
    np.testing.assert_allclose(plain.mean(axis=axes), 0.0, atol=1e-5)
    np.testing.assert_allclose(plain.var(axis=axes), 1.0, rtol=1e-4)


# --- Constants ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(), (1,), (3, 4), (2, 1, 3)])
def test_constant_round_trips_numpy(dtype, shape):
    array = rand(shape, 29).astype(dtype)
    op = relay.ConstantOp.from_numpy(array)
    op.verify()
    back = op.to_numpy()
    assert back.dtype == dtype and back.shape == shape
    np.testing.assert_array_equal(back, array)
    assert run_op(lambda: relay.ConstantOp.from_numpy(array.astype(F32))).tolist() == array.astype(F32).tolist()


def test_constant_builds_from_non_contiguous_and_integer_arrays():
    array = np.arange(12, dtype=F32).reshape(3, 4).T
    np.testing.assert_array_equal(relay.ConstantOp.from_numpy(array).to_numpy(), array)
    ints = relay.ConstantOp.from_numpy(np.arange(3, dtype=np.int64))
    assert ints.result.type == TensorType(IntegerType(64), [3])
    np.testing.assert_array_equal(ints.to_numpy(), [0, 1, 2])
    flags = relay.ConstantOp.from_numpy(np.array([True, False]))
    assert flags.result.type == TensorType(IntegerType(1), [2])  # bool is i1
    np.testing.assert_array_equal(flags.to_numpy(), [True, False])


def _print(module: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def _module_of(*ops: Operation) -> ModuleOp:
    block = Block()
    block.add_ops(ops)
    block.add_op(func.ReturnOp(*[op.results[0] for op in ops]))
    types = [op.results[0].type for op in ops]
    main = func.FuncOp("main", FunctionType.from_lists([], types), Region(block))
    return ModuleOp([main])


@pytest.mark.parametrize("size", [3, 100, 101, 1000])
def test_constant_text_round_trip(size):
    values = rand((size,), 30)
    splat = np.full((size,), 0.5, F32)
    module = _module_of(relay.ConstantOp.from_numpy(values), relay.ConstantOp.from_numpy(splat))
    text = _print(module)
    if size > 100:
        assert '"0x' in text  # the hex form, not a list of floats
    assert "dense<5.000000e-01>" in text  # splats print as one value
    parsed = Parser(make_context(), text).parse_module()
    parsed.verify()
    assert run_reference(parsed, [])[0].tolist() == values.tolist()
    assert run_reference(parsed, [])[1].tolist() == splat.tolist()
    # The generic form (xDSL's own printer) gives the same value back.
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    again = Parser(make_context(), stream.getvalue()).parse_module()
    assert run_reference(again, [])[0].tolist() == values.tolist()


def test_constant_from_dense_resource():
    text = """
    func.func @main() -> tensor<2xf32> {
      %0 = relay.constant dense_resource<relay_test_blob> : tensor<2xf32>
      func.return %0 : tensor<2xf32>
    }
    {-#
      dialect_resources: {
        builtin: {
          relay_test_blob: "0x040000000000803F00000040"
        }
      }
    #-}
    """
    module = Parser(make_context(), text).parse_module()
    module.verify()
    assert run_reference(module, [])[0].tolist() == [1.0, 2.0]


def test_large_constant_is_fast(monkeypatch: pytest.MonkeyPatch):
    """A 25 MB float32 weight: from numpy, back to numpy, and printed, without
    unpacking its elements into Python floats."""

    def unpack(*_: object) -> None:
        raise AssertionError("the elements were unpacked one by one")

    monkeypatch.setattr(DenseIntOrFPElementsAttr, "get_values", unpack)
    monkeypatch.setattr(DenseIntOrFPElementsAttr, "iter_values", unpack)
    array = rand((2560, 2560), 31)
    op = relay.ConstantOp.from_numpy(array)
    back = op.to_numpy()
    assert back.base is not None  # a view of the attribute's bytes, not a copy
    np.testing.assert_array_equal(back, array)
    op.verify()
    text = _print(_module_of(op))
    assert len(text) < 2.1 * array.nbytes + 1000  # two hex digits a byte


# --- Shape functions' errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: relay.conv2d_output_shape((1, 3, 5, 5), (4, 4, 3, 3)), "data has 3 channels but weight expects 4 (groups=1)"),
        (lambda: relay.conv2d_output_shape((1, 3, 5, 5), (4, 3, 3, 3), strides=(0, 1)), "strides must be positive, got [0, 1]"),
        (lambda: relay.conv2d_output_shape((1, 3, 2, 2), (4, 3, 3, 3)), "does not fit"),
        (lambda: relay.pool2d_output_shape((1, 3, 5, 5), (2, 2), padding=(1, 2, 3)), "padding must have 1, 2 or 4 values"),
        (lambda: relay.reshape_output_shape((2, 3), (-1, -1)), "more than one -1"),
        (lambda: relay.reshape_output_shape((2, 3), (4, -1)), "cannot infer the -1"),
        (lambda: relay.reshape_output_shape((2, 3), (7,)), "has 6 elements"),
        (lambda: relay.transpose_output_shape((2, 3), (0, 0)), "repeats an axis"),
        (lambda: relay.squeeze_output_shape((2, 1), (0,)), "cannot squeeze axis 0 of size 2"),
        (lambda: relay.reduce_output_shape((2, 3), (2,), op_name="relay.mean"), "'relay.mean': axis 2 is out of range for rank 2"),
        (lambda: relay.concatenate_output_shape([(2, 3), (3, 3)], 1), "input 1 has shape [3, 3]"),
        (lambda: relay.batch_matmul_output_shape((2, 3, 4), (3, 5, 4)), "batch sizes 2 and 3 do not broadcast"),
        (lambda: relay.dense_output_shape((2, 3), (5, 4)), "data has 3 input features but weight expects 4"),
    ],
)
def test_shape_function_errors(call, message):
    with pytest.raises(VerifyException) as info:
        call()
    assert message in str(info.value)


def test_constructors_infer_result_types():
    block = Block(arg_types=[TensorType(f32, [1, 3, 8, 8]), TensorType(f32, [6, 1, 3, 3])])
    x, w = block.args
    conv = relay.Conv2dOp(x, w, strides=2, padding=1, groups=3)
    assert conv.result.type == TensorType(f32, [1, 6, 4, 4])
    assert conv.attrs()["strides"] == (2, 2) and conv.attrs()["padding"] == (1,)
    pool = relay.MaxPool2dOp(conv.result, 2, 2)
    assert pool.result.type == TensorType(f32, [1, 6, 2, 2])
    flat = relay.BatchFlattenOp(pool.result)
    assert flat.result.type == TensorType(f32, [1, 24])
    red = relay.MeanOp(x, [2, 3], keepdims=True)
    assert red.result.type == TensorType(f32, [1, 3, 1, 1])
    for op in (conv, pool, flat, red):
        op.verify()
    with pytest.raises(VerifyException, match="'relay.nn.max_pool2d': strides must be positive"):
        relay.MaxPool2dOp(x, 2, 0)


def test_verifier_rejects_a_wrong_declared_type():
    x = Block(arg_types=[TensorType(f32, [2, 3])]).args[0]
    op = relay.TransposeOp(x, result_type=TensorType(f32, [2, 3]))
    with pytest.raises(VerifyException, match="does not match the inferred type tensor<3x2xf32>"):
        op.verify()

