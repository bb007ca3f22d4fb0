"""ccompiler's `relay.qnn.quantize` of float32 (libbyoc's quantize.c, which
multiplies by the reciprocal of the scale and divides only where the rounding
could differ) against the reference bit for bit: values on and one or two
floats either side of every rounding boundary `(k + 1/2) * scale`, NaN,
infinities, huge and tiny values, uint8 and int8, scales whose reciprocal is
inexact or not a normal float, a size that leaves a partial chunk and a
partial vector, on 1 to 3 threads."""

from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.frontend.parse import parse_text

F32 = np.float32
SIZE = 3 * 21851  # 65553: 5 chunks of 16384 (across cores), the last of 17 values
SCALES = [0.038377073, 1 / 3, 0.0070710678, 1e-6, 0.75, 1.1754944e-38, 4e-39, 1e30]


def model(dtype: str, scale: float, zero: int) -> str:
    q = "ui8" if dtype == "uint8" else "i8"
    return "\n".join([
        f"func.func @main(%x: tensor<3x21851xf32>) -> tensor<3x21851x{q}> {{",
        f"  %s = relay.constant dense<{float(F32(scale))!r}> : tensor<f32>",
        f"  %z = relay.constant dense<{zero}> : tensor<i32>",
        f'  %q = relay.qnn.quantize %x, %s, %z {{out_dtype = "{dtype}"}} : '
        f"(tensor<3x21851xf32>, tensor<f32>, tensor<i32>) -> tensor<3x21851x{q}>",
        f"  func.return %q : tensor<3x21851x{q}>",
        "}",
    ])


def hard_values(scale: float) -> np.ndarray:
    """Boundaries `(k + 1/2) * scale` and their neighbours, multiples of the
    scale, random values, and the special ones."""
    rng = np.random.default_rng(47)
    s = F32(scale)
    k = rng.integers(-300, 300, SIZE).astype(F32)
    base = ((k + F32(0.5)) * s).astype(F32)
    kind = np.arange(SIZE) % 8
    x = base.copy()
    x[kind == 1] = np.nextafter(base, F32(np.inf))[kind == 1]
    x[kind == 2] = np.nextafter(base, F32(-np.inf))[kind == 2]
    x[kind == 3] = np.nextafter(np.nextafter(base, F32(np.inf)), F32(np.inf))[kind == 3]
    x[kind == 4] = (rng.uniform(-350, 350, SIZE).astype(F32) * s)[kind == 4]
    x[kind == 5] = (k * s)[kind == 5]
    special = np.array([np.nan, np.inf, -np.inf, 1e-30, -1e-30, 0.0, -0.0, 3e38, -3e38], F32)
    x[kind == 6] = special[np.arange(SIZE)[kind == 6] % special.size]
    x[kind == 7] = rng.uniform(-3e38, 3e38, SIZE).astype(F32)[kind == 7]
    return x.reshape(3, 21851)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_quantize_matches_the_reference_bit_for_bit(dtype):
    before = byoc.threads()
    try:
        for i, scale in enumerate(SCALES):
            zero = (125, -3)[dtype == "int8"] + i
            text = model(dtype, scale, zero)
            compiled = byoc.compile(text, targets=["ccompiler"])
            assert "byoc_rt_quantize(" in compiled.c_source
            x = hard_values(scale)
            (want,) = byoc.run_reference(parse_text(text), [x])
            for threads in (1, 2, 3) if i == 0 else (1,):
                byoc.set_threads(threads)
                np.testing.assert_array_equal(compiled(x), want, err_msg=f"scale {scale}, {threads} threads")
    finally:
        byoc.set_threads(before)
