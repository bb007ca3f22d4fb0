"""The compute relay ops end to end, on both exits, against the numpy reference.

Each test builds ONE `@main` holding many independent cases (each case: an op
on its own inputs, one result), so a whole table costs one compile per exit:
the host through `byoc.compile(module, targets=[])` (LLVM JIT), the C exit by
lowering the same function (marked as an outlined kernel) with
convert-relay-to-loops + convert-loops-to-emitc + `emit_c`, compiling it with
the system C compiler (`-Wall -Wextra -Werror`) and calling it through cffi.

Linear ops get inputs that are multiples of 1/8: every sum is then exact in
f32 whatever the order, so a mismatch is an indexing bug, never rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from cffi import FFI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

import byoc
from byoc.dialects import make_context, relay
from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass
from byoc.passes.convert_relay_to_loops import ConvertRelayToLoopsPass
from byoc.runtime.toolchain import compile_shared, have_compiler
from byoc.targets.c import emit_c

RTOL, ATOL = 1e-5, 1e-6
ELEMENT = {np.dtype(np.float32): f32, np.dtype(np.float64): f64}
C_TYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

# --- Cases: one op on its own inputs ------------------------------------------


@dataclass
class Case:
    """`make(*inputs)` builds the op; `arrays` are its inputs."""

    label: str
    make: Callable[..., Operation]
    arrays: list[np.ndarray]


def dyadic(*shape: int, seed: int = 0) -> np.ndarray:
    """Multiples of 1/8 in [-2, 2]: products and sums of these are exact in f32."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-16, 17, size=shape) / 8).astype(np.float32)


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def build(cases: Sequence[Case], name: str = "main") -> ModuleOp:
    """`@name` taking every case's inputs and returning every case's result."""
    types = [TensorType(ELEMENT[a.dtype], a.shape) for c in cases for a in c.arrays]
    block = Block(arg_types=types)
    args = iter(block.args)
    results: list[SSAValue] = []
    for case in cases:
        op = case.make(*[next(args) for _ in case.arrays])
        block.add_op(op)
        results.append(op.results[0])
    block.add_op(func.ReturnOp(*results))
    function = func.FuncOp(
        name, FunctionType.from_lists(types, [r.type for r in results]), Region(block)
    )
    return ModuleOp([function])


def inputs_of(cases: Sequence[Case]) -> list[np.ndarray]:
    return [a for c in cases for a in c.arrays]


def compare(
    cases: Sequence[Case],
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    exit: str,
):
    assert len(got) == len(want) == len(cases)
    for case, g, w in zip(cases, got, want):
        assert g.shape == w.shape, f"{exit}: {case.label}: shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(
            g, w, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=f"{exit}: {case.label}"
        )


def run_host(cases: Sequence[Case]) -> list[np.ndarray]:
    """The results of `cases` compiled for the host (LLVM JIT)."""
    model = byoc.compile(build(cases), targets=[])
    got = model(*inputs_of(cases))
    return list(got) if isinstance(got, tuple) else [got]


def run_c(cases: Sequence[Case], want: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of `cases` through the C exit (an outlined kernel in a .so)."""
    module = build(cases, "kernel")
    kernel = module.body.block.first_op
    assert isinstance(kernel, func.FuncOp)
    kernel.attributes["extern.compiler"] = StringAttr("ccompiler")
    ctx = make_context()
    ConvertRelayToLoopsPass().apply(ctx, module)
    ConvertLoopsToEmitCPass().apply(ctx, module)
    library = compile_shared(emit_c(module))  # -Wall -Wextra -Werror
    buffers = [
        *(np.ascontiguousarray(a) for a in inputs_of(cases)),
        *(np.full(w.shape, np.nan, w.dtype) for w in want),
    ]
    ffi = FFI()
    types = [f"{C_TYPE[a.dtype]}*" for a in buffers]
    ffi.cdef(f"int32_t kernel({', '.join(types)});")
    status = ffi.dlopen(str(library)).kernel(
        *(ffi.cast(t, ffi.from_buffer(a)) for t, a in zip(types, buffers))
    )
    assert status == 0
    return buffers[-len(want) :]


def check(cases: Sequence[Case], exits: Sequence[str] = ("host", "c")) -> None:
    """Every case on every exit matches `byoc.run_reference`."""
    module = build(cases)
    want = byoc.run_reference(module, inputs_of(cases))
    if "host" in exits:
        compare(cases, run_host(cases), want, "host")
    if "c" in exits and have_compiler():
        compare(cases, run_c(cases, want), want, "C")


EXITS = ["host", "c"]

# --- Elementwise ------------------------------------------------------------------


def special(*shape: int, seed: int = 0) -> np.ndarray:
    """Normal values with zeros, +-inf, NaN, large magnitudes and -0 mixed in."""
    x = normal(*shape, seed=seed, scale=2.0).ravel()
    extras = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0, 1.0], np.float32
    )
    x[: min(len(extras), x.size)] = extras[: x.size]
    np.random.default_rng(seed).shuffle(x)
    return x.reshape(shape)


@pytest.mark.parametrize("exit", EXITS)
def test_exp_and_erf_over_their_range(exit):
    """exp and erf of f32 are arithmetic (passes/vector_math.py): within 2e-7
    of numpy's float32 exp and of the exact erf over their whole range, with
    inf, 0, subnormals, -0 and NaN where they belong."""
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.3, -103.9, -104.5, 1e-30, -1e-30],
        np.float32,
    )
    x = np.concatenate([np.linspace(-110, 95, 20011, dtype=np.float32), edges])
    z = np.concatenate([np.linspace(-6, 6, 20011, dtype=np.float32), edges])
    cases = [
        Case("exp", relay.ExpOp, [x]),
        Case("erf", relay.ErfOp, [z]),
        Case("sigmoid", relay.SigmoidOp, [x]),
    ]
    want = byoc.run_reference(build(cases), inputs_of(cases))
    if exit == "host":
        got = run_host(cases)
    elif have_compiler():
        got = run_c(cases, want)
    else:
        pytest.skip("no C compiler")
    for case, g, w in zip(cases, got, want):
        # sigmoid's 1 / (1 + exp(-x)) is 0 where the exact value is subnormal.
        atol = 1.2e-38 if case.label == "sigmoid" else 1e-44
        np.testing.assert_allclose(g, w, rtol=2e-7, atol=atol, equal_nan=True, err_msg=case.label)
        # Signs of zeros and infinities, as the reference (a NaN's sign means nothing).
        real = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[real]), np.signbit(w[real]), err_msg=case.label)


@pytest.mark.parametrize("exit", EXITS)
def test_elementwise(exit):
    cases = []
    for op in (
        relay.AbsOp,
        relay.LogOp,
        relay.SqrtOp,
        relay.RsqrtOp,
        relay.SigmoidOp,
        relay.ErfOp,
    ):
        cases.append(Case(op.name, op, [special(3, 7, seed=1)]))
        cases.append(Case(f"{op.name} rank 0", op, [np.array(0.25, np.float32)]))
    shapes = [((3, 1, 5), (4, 1)), ((7,), ()), ((2, 3), (2, 3)), ((1,), (4, 1))]
    for op in (relay.MaximumOp, relay.MinimumOp, relay.PowerOp):
        for lhs, rhs in shapes:
            cases.append(
                Case(
                    f"{op.name} {lhs} {rhs}",
                    op,
                    [special(*lhs, seed=2), special(*rhs, seed=3)],
                )
            )
    # Integer exponents: real results for negative bases.
    exponents = np.array([0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5], np.float32)
    cases.append(Case("power int", relay.PowerOp, [normal(2, 7, seed=4), exponents]))
    for low, high in [
        (-0.5, 0.75),
        (0.0, 6.0),
        (-math.inf, 0.0),
        (1.0, 1.0),
        (-3.0, math.inf),
    ]:
        cases.append(
            Case(
                f"clip {low} {high}",
                lambda x, lo=low, hi=high: relay.ClipOp(x, lo, hi),
                [special(4, 5, seed=5)],
            )
        )
    check(cases, [exit])


HALVES = np.array(
    [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.49999997, 0.50000006, 8388607.5, -8388609.0,
     3e9, -1e-30, 1e30, 0.0],
    np.float32,
)
"""Ties and near-ties of rounding, the last fractions below 2**23, large integers."""


@pytest.mark.parametrize("exit", EXITS)
def test_activations(exit):
    """The elementwise ops of issue 10, on special values and rounding ties."""
    cases = []
    for op in (
        relay.SignOp,
        relay.FloorOp,
        relay.CeilOp,
        relay.RoundOp,
        relay.ReciprocalOp,
        relay.SoftplusOp,
        relay.SoftsignOp,
        relay.HardSwishOp,
    ):
        cases.append(Case(op.name, op, [special(3, 7, seed=1)]))
        cases.append(Case(f"{op.name} halves", op, [HALVES]))
        cases.append(Case(f"{op.name} rank 0", op, [np.array(-1.25, np.float32)]))
    for label, make in [
        ("leaky_relu", lambda d: relay.LeakyReluOp(d, 0.1)),
        ("elu", lambda d: relay.EluOp(d, 0.7)),
        ("selu", relay.SeluOp),
        ("hard_sigmoid", lambda d: relay.HardSigmoidOp(d, 0.3, 0.4)),
        ("shrink", lambda d: relay.ShrinkOp(d, 0.25, 0.75)),
        ("gelu", relay.GeluOp),
        ("gelu tanh", lambda d: relay.GeluOp(d, "tanh")),
    ]:
        cases.append(Case(label, make, [special(4, 5, seed=2)]))
        cases.append(Case(f"{label} normal", make, [normal(2, 9, seed=3, scale=3.0)]))
    for shape, axis in [((2, 3, 4, 5), 1), ((2, 3, 4), -1), ((5,), 0), ((4, 1), 1)]:
        cases.append(
            Case(
                f"prelu {shape} axis {axis}",
                lambda d, a, ax=axis: relay.PReluOp(d, a, axis=ax),
                [special(*shape, seed=4), normal(shape[axis], seed=5)],
            )
        )
    check(cases, [exit])


@pytest.mark.parametrize("exit", EXITS)
def test_rounding_in_float64(exit):
    """Rounding adds and subtracts 2**52 for doubles (2**23 for floats)."""
    x = np.concatenate([HALVES, [2.0**52 - 0.5, 4503599627370497.0, -2.5e15 - 0.5]])
    cases = [
        Case(op.name, op, [x.astype(np.float64)])
        for op in (relay.RoundOp, relay.FloorOp, relay.CeilOp)
    ]
    check(cases, [exit])


def test_maximum_and_clip_propagate_nan():
    x = np.array([np.nan, 1.0, -1.0, np.nan], np.float32)
    y = np.array([0.0, np.nan, -2.0, np.nan], np.float32)
    cases = [
        Case("maximum", relay.MaximumOp, [x, y]),
        Case("minimum", relay.MinimumOp, [x, y]),
        Case("clip", lambda a: relay.ClipOp(a, -0.5, 0.5), [x]),
    ]
    got = run_host(cases)
    assert np.isnan(got[0]).tolist() == [True, True, False, True]
    assert np.isnan(got[1]).tolist() == [True, True, False, True]
    assert np.isnan(got[2]).tolist() == [True, False, False, True]
    check(cases)


# --- bias_add, batch_norm, layer_norm ----------------------------------------------


@pytest.mark.parametrize("exit", EXITS)
def test_channel_ops(exit):
    cases = []
    for shape, axis in [
        ((2, 3, 4, 5), 1),
        ((2, 3, 4, 5), -1),
        ((2, 3, 4, 5), 0),
        ((5,), 0),
        ((4, 1), 1),
    ]:
        cases.append(
            Case(
                f"bias_add {shape} axis {axis}",
                lambda d, b, a=axis: relay.BiasAddOp(d, b, axis=a),
                [dyadic(*shape, seed=1), dyadic(shape[axis], seed=2)],
            )
        )
    for shape, axis, center, scale in [
        ((2, 3, 4, 5), 1, True, True),
        ((2, 3, 4), -1, True, True),
        ((3, 2), 0, False, True),
        ((2, 5, 1), 1, True, False),
        ((1, 4), 1, False, False),
    ]:
        c = shape[axis]
        params = [
            normal(c, seed=3),
            normal(c, seed=4),
            normal(c, seed=5),
            np.abs(normal(c, seed=6)) + 0.1,
        ]
        cases.append(
            Case(
                f"batch_norm {shape} axis {axis} center {center} scale {scale}",
                lambda *v, a=axis, ce=center, sc=scale: relay.BatchNormOp(
                    *v, axis=a, epsilon=1e-3, center=ce, scale=sc
                ),
                [normal(*shape, seed=7), *params],
            )
        )
    for shape, axis, center, scale in [
        ((2, 3, 4), -1, True, True),
        ((2, 3, 4), 1, True, True),
        ((2, 3, 4), 0, False, True),
        ((2, 3, 4), -3, True, False),
        ((6,), 0, False, False),
        ((3, 1), 1, True, True),
    ]:
        c = shape[axis]
        cases.append(
            Case(
                f"layer_norm {shape} axis {axis} center {center} scale {scale}",
                lambda d, g, b, a=axis, ce=center, sc=scale: relay.LayerNormOp(
                    d, g, b, axis=a, epsilon=1e-5, center=ce, scale=sc
                ),
                [
                    normal(*shape, seed=8, scale=3.0) + 1.0,
                    normal(c, seed=9),
                    normal(c, seed=10),
                ],
            )
        )
    check(cases, [exit])


@pytest.mark.parametrize("exit", EXITS)
def test_lrn(exit):
    cases = []
    for shape, size, axis in [
        ((1, 7, 3, 4), 5, 1),
        ((2, 6, 5), 4, 1),
        ((2, 3, 4), 3, -1),
        ((1, 2, 2, 2), 9, 1),  # a window wider than the axis
        ((3, 1, 4), 1, 1),
        ((5,), 3, 0),
    ]:
        cases.append(
            Case(
                f"lrn {shape} size {size} axis {axis}",
                lambda d, s=size, a=axis: relay.LrnOp(
                    d, s, a, bias=1.5, alpha=0.3, beta=0.7
                ),
                [normal(*shape, seed=size, scale=2.0)],
            )
        )
    check(cases, [exit])


@pytest.mark.parametrize("exit", EXITS)
def test_instance_norm(exit):
    cases = []
    for shape, axis, center, scale in [
        ((2, 3, 4, 5), 1, True, True),
        ((1, 2, 70), 1, True, True),  # a long row: partial sums
        ((2, 3, 2, 2, 3), 1, False, True),
        ((2, 4, 3), -1, True, False),
        ((3, 4), 1, True, True),  # nothing to average: beta
        ((2, 3, 4), 0, False, False),
    ]:
        c = shape[axis]
        cases.append(
            Case(
                f"instance_norm {shape} axis {axis} center {center} scale {scale}",
                lambda d, g, b, a=axis, ce=center, sc=scale: relay.InstanceNormOp(
                    d, g, b, axis=a, epsilon=1e-3, center=ce, scale=sc
                ),
                [
                    normal(*shape, seed=8, scale=3.0) + 1.0,
                    normal(c, seed=9),
                    normal(c, seed=10),
                ],
            )
        )
    check(cases, [exit])


# --- Matmul family -------------------------------------------------------------------


@pytest.mark.parametrize("exit", EXITS)
def test_matmul_family(exit):
    cases = []
    # K around DOT_LANES multiples: short (no split), split with and without a tail.
    for data, units in [
        ((4, 6), 5),
        ((6,), 5),
        ((2, 3, 40), 7),
        ((1, 33), 1),
        ((3, 1), 2),
        ((5, 64), 3),
    ]:
        cases.append(
            Case(
                f"dense {data} x {units}",
                relay.DenseOp,
                [dyadic(*data, seed=1), dyadic(units, data[-1], seed=2)],
            )
        )
    for a_shape, b_shape, ta, tb in [
        ((4, 6), (6, 5), False, False),
        ((4, 6), (5, 6), False, True),
        ((2, 6, 4), (6, 5), True, False),
        ((2, 37, 3), (5, 37), True, True),
        ((37,), (37, 3), False, False),
        ((3, 2, 1, 35), (4, 35), False, True),
    ]:
        cases.append(
            Case(
                f"matmul {a_shape} {b_shape} ta={ta} tb={tb}",
                lambda x, y, ta=ta, tb=tb: relay.MatmulOp(
                    x, y, transpose_a=ta, transpose_b=tb
                ),
                [dyadic(*a_shape, seed=3), dyadic(*b_shape, seed=4)],
            )
        )
    b, m, n, k = 3, 4, 5, 6
    for bx, by, ta, tb, depth in [
        (b, b, False, True, k),
        (b, 1, False, True, 40),
        (1, b, True, False, k),
        (b, b, True, True, k),
        (1, 1, False, False, 1),
        (b, 1, False, False, 34),
    ]:
        x = (bx, depth, m) if ta else (bx, m, depth)
        y = (by, n, depth) if tb else (by, depth, n)
        cases.append(
            Case(
                f"batch_matmul {x} {y} ta={ta} tb={tb}",
                lambda p, q, ta=ta, tb=tb: relay.BatchMatmulOp(
                    p, q, transpose_a=ta, transpose_b=tb
                ),
                [dyadic(*x, seed=5), dyadic(*y, seed=6)],
            )
        )
    check(cases, [exit])


@pytest.mark.parametrize("exit", EXITS)
def test_matmul_family_transposing_a_short_rhs(exit):
    """Many rows and a short k: rhs is copied transposed (tile by tile, then the
    rows and columns left over) and the output rows accumulate along n."""
    cases = [
        Case(
            "dense 64x21 . (13x21)^T",
            relay.DenseOp,
            [dyadic(64, 21), dyadic(13, 21, seed=1)],
        ),
        Case(
            "dense 64x10 . (5x10)^T",
            relay.DenseOp,
            [dyadic(64, 10, seed=9), dyadic(5, 10, seed=10)],
        ),
        Case(
            "dense 2x40x16 . (24x16)^T",
            relay.DenseOp,
            [dyadic(2, 40, 16), dyadic(24, 16, seed=2)],
        ),
        Case(
            "matmul tb 70x100 . (9x100)^T",
            lambda x, y: relay.MatmulOp(x, y, transpose_b=True),
            [dyadic(70, 100, seed=3), dyadic(9, 100, seed=4)],
        ),
        Case(
            "batch_matmul 3x64x33 . (3x17x33)^T",
            relay.BatchMatmulOp,
            [dyadic(3, 64, 33, seed=5), dyadic(3, 17, 33, seed=6)],
        ),
        Case(
            "batch_matmul 4x16x8 . (1x8x8)^T (64 rows share y)",
            relay.BatchMatmulOp,
            [dyadic(4, 16, 8, seed=7), dyadic(1, 8, 8, seed=8)],
        ),
    ]
    check(cases, [exit])


def test_dense_accuracy_on_a_long_dot_product():
    """Partial sums stay within the f32 error bound of the float64 reference."""
    data, weight = normal(3, 1000, seed=1), normal(8, 1000, seed=2)
    module = build([Case("dense", relay.DenseOp, [data, weight])])
    got = byoc.compile(module, targets=[])(data, weight)
    want = data.astype(np.float64) @ weight.T.astype(np.float64)
    bound = 1000 * np.finfo(np.float32).eps * (np.abs(data) @ np.abs(weight).T)
    assert np.all(np.abs(got - want) <= bound)
    # The bound is loose; in practice the partial sums are much closer.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# --- Convolution and pooling ---------------------------------------------------------


@dataclass
class Conv:
    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def case(self, seed: int = 0) -> Case:
        def make(x: SSAValue, w: SSAValue) -> Operation:
            return relay.Conv2dOp(
                x, w, self.strides, self.padding, self.dilation, self.groups
            )

        return Case(
            str(self),
            make,
            [
                dyadic(self.n, self.c, self.h, self.w, seed=seed),
                dyadic(self.o, self.c // self.groups, self.kh, self.kw, seed=seed + 1),
            ],
        )


CONVS = [
    Conv(1, 3, 5, 5, 2, 1, 1),
    Conv(2, 3, 6, 7, 4, 3, 3, padding=(1, 1)),
    Conv(1, 2, 7, 6, 3, 3, 3, strides=(2, 2), padding=(1, 0, 2, 1)),
    Conv(1, 2, 9, 8, 2, 3, 2, dilation=(2, 2), padding=(2, 2)),
    Conv(1, 4, 5, 5, 6, 3, 3, padding=(1,), groups=2),
    Conv(2, 4, 6, 5, 4, 3, 3, strides=(2, 1), padding=(1, 1), groups=4),  # depthwise
    Conv(1, 3, 5, 4, 6, 3, 3, padding=(1, 1), groups=3),  # depthwise, multiplier 2
    Conv(1, 1, 3, 3, 1, 5, 5, padding=(2, 2)),  # kernel larger than the input
    Conv(1, 2, 1, 1, 3, 3, 3, padding=(1, 1)),  # one pixel, every tap but one padding
    Conv(1, 2, 8, 9, 2, 3, 2, strides=(3, 2), dilation=(1, 3), padding=(0, 3, 1, 3)),
    Conv(3, 1, 4, 4, 1, 2, 2, strides=(2, 2)),
]


@pytest.mark.parametrize("exit", EXITS)
def test_conv2d(exit):
    check([conv.case(seed=i) for i, conv in enumerate(CONVS)], [exit])


@pytest.mark.parametrize("exit", ["host", "c"])
def test_conv2d_one_column_kernel(exit):
    """A 3x1 kernel with padding: the row range is computed right beside its loop."""
    conv = Conv(
        1, 2, 8, 9, 2, 3, 1, strides=(3, 2), dilation=(1, 3), padding=(0, 3, 1, 3)
    )
    check([conv.case()], [exit])


@st.composite
def convs(draw: st.DrawFn) -> Conv:
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c = groups * draw(st.integers(1, 2))
    o = groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.lists(st.integers(0, 3), min_size=4, max_size=4)))
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, (kh, kw))]
    h = max(1, spans[0] - padding[0] - padding[2]) + draw(st.integers(0, 4))
    w = max(1, spans[1] - padding[1] - padding[3]) + draw(st.integers(0, 4))
    n = draw(st.integers(1, 2))
    return Conv(n, c, h, w, o, kh, kw, strides, padding, dilation, groups)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(convs(), min_size=1, max_size=6))
def test_conv2d_generated(configs: list[Conv]):
    check([conv.case(seed=i) for i, conv in enumerate(configs)], ["host"])


@dataclass
class Pool:
    shape: tuple[int, int, int, int]
    pool_size: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def cases(self, seed: int = 0) -> list[Case]:
        common = (
            self.pool_size,
            self.strides,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
        x = dyadic(*self.shape, seed=seed)
        with_nan = x.copy()
        with_nan.ravel()[::7] = np.nan
        return [
            Case(f"max_pool2d {self}", lambda d: relay.MaxPool2dOp(d, *common), [x]),
            Case(
                f"max_pool2d NaN {self}",
                lambda d: relay.MaxPool2dOp(d, *common),
                [with_nan],
            ),
            Case(
                f"avg_pool2d {self}",
                lambda d: relay.AvgPool2dOp(d, *common, count_include_pad=False),
                [x],
            ),
            Case(
                f"avg_pool2d count_include_pad {self}",
                lambda d: relay.AvgPool2dOp(d, *common, count_include_pad=True),
                [x],
            ),
        ]


POOLS = [
    Pool((1, 2, 6, 6), (2, 2), (2, 2)),
    Pool((2, 3, 7, 5), (3, 3), (2, 2), (1, 1)),
    Pool((1, 2, 6, 7), (3, 3), (2, 2), (1, 1), ceil_mode=True),
    Pool((1, 1, 5, 5), (2, 2), (2, 2), ceil_mode=True),
    Pool((1, 2, 9, 8), (3, 2), (1, 2), (1, 0, 2, 1), dilation=(2, 1)),
    Pool((1, 1, 1, 1), (3, 3), (1, 1), (1, 1)),
    Pool((1, 1, 4, 4), (4, 4), (3, 3), (2, 2), ceil_mode=True),
    # Rows long enough to vectorise, columns cut by padding on either side.
    Pool((1, 3, 21, 37), (3, 3), (2, 2), (1, 2, 0, 1)),
    Pool((1, 2, 17, 40), (2, 5), (1, 3), (0, 2, 1, 2), dilation=(1, 2), ceil_mode=True),
    # Windows wider than the unrolled ones: maxed tap by tap.
    Pool((1, 2, 11, 13), (3, 9), (2, 3), (1, 4, 1, 3)),
    # Long rows: padding on either side, ceil mode reaching past it, dilation,
    # stride 1, a window of 8 columns.
    Pool((1, 3, 9, 75), (3, 3), (2, 2), (1, 2, 0, 1)),
    Pool((2, 2, 6, 70), (2, 3), (1, 2), (0, 1, 1, 2), dilation=(2, 1), ceil_mode=True),
    Pool((1, 1, 5, 40), (3, 3), (1, 1), (1, 1)),
    Pool((1, 1, 4, 90), (2, 8), (1, 2), (0, 3, 0, 4), dilation=(1, 2)),
]


@pytest.mark.parametrize("exit", EXITS)
def test_pool2d(exit):
    cases = [c for i, pool in enumerate(POOLS) for c in pool.cases(seed=i)]
    # Rows summed column by column; one row; rows too wide for that (partial sums).
    for shape in [(2, 3, 5, 7), (1, 1, 1, 1), (1, 4, 2, 1), (1, 2, 1, 9), (1, 2, 3, 300)]:
        cases.append(
            Case(
                f"global_avg_pool2d {shape}", relay.GlobalAvgPool2dOp, [dyadic(*shape)]
            )
        )
    check(cases, [exit])


@st.composite
def pools(draw: st.DrawFn) -> Pool:
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.lists(st.integers(0, 2), min_size=4, max_size=4)))
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    h = max(1, spans[0] - padding[0] - padding[2]) + draw(st.integers(0, 4))
    w = max(1, spans[1] - padding[1] - padding[3]) + draw(st.integers(0, 4))
    return Pool((1, 2, h, w), kernel, strides, padding, dilation, draw(st.booleans()))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pools(), min_size=1, max_size=4))
def test_pool2d_generated(configs: list[Pool]):
    check([c for i, pool in enumerate(configs) for c in pool.cases(seed=i)], ["host"])


# --- 3-d windows, transposed convolutions -------------------------------------------


WINDOW_OPS_3D = [
    # (label, builder, data shape, weight shape or None)
    ("conv3d 3x3x3 pad 1", lambda d, w: relay.Conv3dOp(d, w, padding=1), (1, 2, 4, 5, 3), (3, 2, 3, 3, 3)),
    (
        "conv3d strided dilated asymmetric",
        lambda d, w: relay.Conv3dOp(d, w, (2, 1, 2), (0, 1, 2, 1, 0, 1), (1, 2, 1)),
        (2, 2, 5, 6, 5),
        (2, 2, 2, 3, 2),
    ),
    ("conv3d groups", lambda d, w: relay.Conv3dOp(d, w, groups=2), (1, 4, 3, 3, 3), (4, 2, 2, 1, 2)),
    ("conv3d depthwise", lambda d, w: relay.Conv3dOp(d, w, padding=1, groups=3), (1, 3, 3, 4, 2), (3, 1, 3, 3, 3)),
    ("conv2d_transpose", lambda d, w: relay.Conv2dTransposeOp(d, w), (1, 3, 4, 5), (3, 2, 3, 3)),
    (
        "conv2d_transpose strided padded output_padding",
        lambda d, w: relay.Conv2dTransposeOp(d, w, (2, 3), (1, 0, 0, 2), (1, 1), output_padding=(1, 2)),
        (2, 2, 3, 4),
        (2, 3, 3, 4),
    ),
    (
        "conv2d_transpose dilated groups",
        lambda d, w: relay.Conv2dTransposeOp(d, w, 2, 1, 2, groups=2),
        (1, 4, 3, 3),
        (4, 1, 2, 3),
    ),
    (
        "conv2d_transpose padding crops more than a kernel",
        lambda d, w: relay.Conv2dTransposeOp(d, w, 1, (3, 0, 0, 1)),
        (1, 1, 6, 2),
        (1, 1, 2, 2),
    ),
    (
        "conv3d_transpose",
        lambda d, w: relay.Conv3dTransposeOp(d, w, (2, 1, 2), 1, output_padding=(1, 0, 0)),
        (1, 2, 2, 3, 3),
        (2, 2, 3, 2, 3),
    ),
    ("max_pool3d", lambda d: relay.MaxPool3dOp(d, 2, 2), (1, 2, 4, 5, 4), None),
    (
        "max_pool3d padded dilated ceil",
        lambda d: relay.MaxPool3dOp(d, (3, 2, 2), (2, 2, 1), (1, 1, 0, 1, 0, 1), (1, 1, 2), True),
        (2, 1, 5, 4, 5),
        None,
    ),
    ("avg_pool3d", lambda d: relay.AvgPool3dOp(d, 3, 1, 1), (1, 2, 3, 4, 5), None),
    (
        "avg_pool3d count_include_pad ceil",
        lambda d: relay.AvgPool3dOp(d, 2, 2, 1, 1, True, True),
        (1, 1, 4, 3, 5),
        None,
    ),
]


@pytest.mark.parametrize("exit", EXITS)
def test_window_ops_3d_and_transposed(exit):
    cases = []
    for i, (label, make, data, weight) in enumerate(WINDOW_OPS_3D):
        arrays = [dyadic(*data, seed=i)]
        if weight is not None:
            arrays.append(dyadic(*weight, seed=i + 100))
        cases.append(Case(label, make, arrays))
    check(cases, [exit])


# --- Softmax and reductions -------------------------------------------------------------


@pytest.mark.parametrize("exit", EXITS)
def test_softmax(exit):
    cases = []
    for op in (relay.SoftmaxOp, relay.LogSoftmaxOp):
        for axis in (-3, -2, -1, 0, 1, 2):
            cases.append(
                Case(
                    f"{op.name} axis {axis}",
                    lambda d, op=op, a=axis: op(d, a),
                    [normal(2, 3, 5, seed=axis + 3)],
                )
            )
        cases.append(Case(f"{op.name} (7,)", op, [normal(7, seed=1)]))
        cases.append(Case(f"{op.name} (1,)", op, [normal(1, seed=1)]))
        cases.append(
            Case(f"{op.name} (4, 1) axis 1", lambda d, op=op: op(d, 1), [normal(4, 1)])
        )
        # exp would overflow without subtracting the maximum first.
        cases.append(Case(f"{op.name} large", op, [normal(3, 8, seed=2, scale=1000.0)]))
    check(cases, [exit])


@pytest.mark.parametrize("exit", EXITS)
def test_normalisation_long_rows(exit):
    """softmax, log_softmax and layer_norm along long last axes: the
    vectorised paths (partial results per lane, a tail after the whole
    lanes, exp as arithmetic), on rows of 32 (no tail), 77 and 128."""
    cases = []
    for shape in ((3, 32), (2, 1, 77), (5, 128)):
        for op in (relay.SoftmaxOp, relay.LogSoftmaxOp):
            cases.append(
                Case(f"{op.name} {shape}", op, [normal(*shape, seed=len(shape), scale=4.0)])
            )
        c = shape[-1]
        for center, scale in ((True, True), (False, False)):
            cases.append(
                Case(
                    f"layer_norm {shape} center {center} scale {scale}",
                    lambda d, g, b, ce=center, sc=scale: relay.LayerNormOp(
                        d, g, b, epsilon=1e-12, center=ce, scale=sc
                    ),
                    [normal(*shape, seed=c, scale=3.0) + 2.0, normal(c, seed=1), normal(c, seed=2)],
                )
            )
    # The maximum subtracted first: no overflow; and -inf entries give 0.
    wide = normal(2, 40, seed=5, scale=1000.0)
    wide[1, 3] = -np.inf
    cases.append(Case("softmax large", relay.SoftmaxOp, [wide]))
    check(cases, [exit])


REDUCTIONS = [
    # (shape, axis, keepdims, exclude)
    ((2, 3, 4), None, False, False),
    ((2, 3, 4), [], True, False),
    ((2, 3, 4), [0], False, False),
    ((2, 3, 4), [1], True, False),
    ((2, 3, 4), [-1], False, False),
    ((2, 3, 4), [0, 2], True, False),
    ((2, 3, 4), [-3, -1], False, False),
    ((2, 3, 4), [1], False, True),
    ((2, 3, 4), [0, 1, 2], True, True),
    ((5,), [0], False, False),
    ((1, 7, 1), [1], True, False),
    ((3, 40), [1], False, False),
]


@pytest.mark.parametrize("exit", EXITS)
def test_reductions(exit):
    cases = []
    for op in (relay.SumOp, relay.MeanOp, relay.MaxOp, relay.MinOp, relay.ProdOp):
        for i, (shape, axis, keepdims, exclude) in enumerate(REDUCTIONS):
            cases.append(
                Case(
                    f"{op.name} {shape} axis={axis} keepdims={keepdims} exclude={exclude}",
                    lambda d, op=op, a=axis, k=keepdims, e=exclude: op(d, a, k, e),
                    [dyadic(*shape, seed=i)],
                )
            )
    x = dyadic(3, 4, seed=9)
    x[1, 2] = np.nan
    cases.append(Case("max NaN", lambda d: relay.MaxOp(d, [1]), [x]))
    cases.append(Case("min NaN", lambda d: relay.MinOp(d, [1]), [x]))
    check(cases, [exit])


def test_every_compute_op_has_a_lowering():
    from byoc.passes.convert_relay_to_loops import LOWERINGS

    ops = {
        *relay.ELEMENTWISE_OPS,
        *relay.MATMUL_OPS,
        *relay.CONV_OPS,
        *relay.POOL_OPS,
        *relay.NORMALIZATION_OPS,
        *relay.REDUCTION_OPS,
    }
    assert ops <= set(LOWERINGS)


@pytest.mark.parametrize("exit", EXITS)
def test_float64(exit):
    """Constants, scratch buffers and math calls follow the element type."""

    def f64(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64)

    cases = [
        Case("dense", relay.DenseOp, [f64(normal(2, 40)), f64(normal(3, 40, seed=1))]),
        Case(
            "conv2d",
            Conv(1, 2, 5, 4, 2, 3, 3, padding=(1, 1)).case().make,
            [f64(normal(1, 2, 5, 4)), f64(normal(2, 2, 3, 3, seed=1))],
        ),
        Case("softmax", relay.SoftmaxOp, [f64(normal(3, 5))]),
        Case(
            "layer_norm",
            relay.LayerNormOp,
            [f64(normal(3, 5)), f64(normal(5)), f64(normal(5))],
        ),
        Case(
            "avg_pool2d",
            lambda d: relay.AvgPool2dOp(d, 3, 2, 1),
            [f64(normal(1, 1, 5, 5))],
        ),
        Case(
            "max_pool2d",
            lambda d: relay.MaxPool2dOp(d, 3, 2, 1),
            [f64(normal(1, 1, 5, 5))],
        ),
        Case("mean", lambda d: relay.MeanOp(d, [1]), [f64(normal(2, 40))]),
        Case("sigmoid", relay.SigmoidOp, [f64(normal(7))]),
        Case("erf", relay.ErfOp, [f64(normal(7))]),
        Case("clip", lambda d: relay.ClipOp(d, -0.5, 0.5), [f64(normal(7))]),
    ]
    check(cases, [exit])
