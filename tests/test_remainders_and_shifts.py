"""relay.mod, relay.floor_mod, relay.left_shift and relay.right_shift on both
exits against Python's own integer and float arithmetic, over every integer
type and the edges where C and LLVM trap or are undefined (x % 0, INT_MIN % -1,
shifts by negative amounts or by the width)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import byoc
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.build import load_source

INTEGERS = {
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
}  # fmt: skip
TARGETS = [[], ["ccompiler"]]


def model(op: str, dtype: str, n: int) -> str:
    t = f"tensor<{n}x{dtype}>"
    return (
        f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
        f"  %0 = relay.{op} %a, %b : ({t}, {t}) -> {t}\n"
        f"  func.return %0 : {t}\n}}\n"
    )


def wrap(value: int, np_type) -> int:
    info = np.iinfo(np_type)
    span = 1 << info.bits
    value %= span
    return value - span if value > info.max else value


def integer_operands(np_type) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(np_type)
    edges = [info.min, info.max, 0, 1, 7, 100 % (info.max + 1)]
    if info.min < 0:
        edges += [-1, -7, -100 % (info.max + 1) - (info.max + 1) if info.bits == 8 else -100]
    pairs = [(x, y) for x in edges for y in edges + [3, 2]]
    x = np.array([p[0] for p in pairs], np_type)
    y = np.array([p[1] for p in pairs], np_type)
    return x, y


def python_remainder(x: int, y: int, floored: bool) -> int:
    if y == 0:
        return 0  # as numpy
    if floored:
        return x % y  # Python's % is floored
    r = abs(x) % abs(y)  # truncated: the dividend's sign
    return r if x >= 0 else -r


@pytest.mark.parametrize("targets", TARGETS, ids=["host", "ccompiler"])
@pytest.mark.parametrize("dtype", sorted(INTEGERS))
@pytest.mark.parametrize("op", ["mod", "floor_mod"])
def test_integer_remainders(op, dtype, targets):
    np_type = INTEGERS[dtype]
    x, y = integer_operands(np_type)
    floored = op == "floor_mod"
    want = np.array(
        [wrap(python_remainder(int(a), int(b), floored), np_type) for a, b in zip(x, y)], np_type
    )
    got = byoc.compile(model(op, dtype, x.size), targets=targets)(x, y)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(byoc.run_reference(load_source(model(op, dtype, x.size)), [x, y])[0], want)


def python_shift(x: int, amount: int, left: bool, np_type) -> int:
    bits = np.iinfo(np_type).bits
    if not 0 <= amount < bits:
        return -1 if (not left and x < 0) else 0
    return wrap(x << amount if left else x >> amount, np_type)  # Python's >> is arithmetic


@pytest.mark.parametrize("targets", TARGETS, ids=["host", "ccompiler"])
@pytest.mark.parametrize("dtype", sorted(INTEGERS))
@pytest.mark.parametrize("op", ["left_shift", "right_shift"])
def test_shifts(op, dtype, targets):
    np_type = INTEGERS[dtype]
    info = np.iinfo(np_type)
    values = [info.min, info.max, 0, 1, 5, 100 % (info.max + 1)] + ([-1, -6] if info.min < 0 else [])
    amounts = [0, 1, 3, info.bits - 1, info.bits, info.bits + 1, min(info.max, 200)]
    amounts += [-1, -8] if info.min < 0 else []
    x = np.array([v for v in values for _ in amounts], np_type)
    y = np.array([a for _ in values for a in amounts], np_type)
    left = op == "left_shift"
    want = np.array([python_shift(int(a), int(b), left, np_type) for a, b in zip(x, y)], np_type)
    got = byoc.compile(model(op, dtype, x.size), targets=targets)(x, y)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(byoc.run_reference(load_source(model(op, dtype, x.size)), [x, y])[0], want)


FLOAT_PAIRS = [
    (5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (-5.5, -2.0), (0.0, 2.0), (-0.0, 2.0),
    (0.0, -2.0), (-0.0, -2.0), (math.inf, 2.0), (1.0, 0.0), (-1.0, math.inf),
    (1.0, -math.inf), (math.nan, 1.0), (7.0, math.nan), (-1e-30, 1.0), (3.0, -0.0),
    (1e30, 3.0), (-7.25, 0.5),
]  # fmt: skip


def python_float_remainder(x: float, y: float, floored: bool) -> float:
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return math.nan
    if not floored:
        return math.fmod(x, y)
    return x % y  # Python's float % is numpy's mod: floored, a zero of y's sign


@pytest.mark.parametrize("targets", TARGETS, ids=["host", "ccompiler"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", ["mod", "floor_mod"])
def test_float_remainders(op, dtype, targets):
    np_type = np.float32 if dtype == "f32" else np.float64
    x = np.array([p[0] for p in FLOAT_PAIRS], np_type)
    y = np.array([p[1] for p in FLOAT_PAIRS], np_type)
    floored = op == "floor_mod"
    want = np.array(
        [python_float_remainder(float(a), float(b), floored) for a, b in zip(x, y)]
    ).astype(np_type)
    got = byoc.compile(model(op, dtype, x.size), targets=targets)(x, y)
    np.testing.assert_array_equal(got, want)  # NaN where NaN, exact elsewhere
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))  # zeros' signs


def test_broadcast_remainder_by_a_scalar():
    text = (
        "func.func @main(%a: tensor<2x3xi32>, %b: tensor<i32>) -> tensor<2x3xi32> {\n"
        "  %0 = relay.floor_mod %a, %b : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>\n"
        "  func.return %0 : tensor<2x3xi32>\n}\n"
    )
    x = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
    for targets in TARGETS:
        got = byoc.compile(text, targets=targets)(x, np.array(-4, np.int32))
        np.testing.assert_array_equal(got, x % -4)


@pytest.mark.parametrize(
    "text, message",
    [
        (model("left_shift", "f32", 3), "lhs must have an integer element type, got f32"),
        (model("right_shift", "i1", 3), "lhs must have an integer element type, got i1"),
        (model("mod", "i1", 3), "lhs must have a float or integer element type, got i1"),
    ],
)
def test_bad_element_types_are_located_errors(text, message):
    with pytest.raises(ByocError, match=message):
        byoc.compile(text)
