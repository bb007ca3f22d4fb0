"""libbyoc's pooling (byoc_rt_pool2d) through cblas: max and average pools
against the numpy reference over odd shapes, kernels, strides 1 and 2 (each
dimension its own), padding (uneven, wider than the kernel), ceil_mode,
count_include_pad, batches, and NaN and infinities for max; pools with a
stride of 3 stay on ccompiler."""

from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.dialects import relay
from graphs import build

CASES = [
    # (input shape, pool size, strides, padding (top, left, bottom, right), ceil_mode)
    ((1, 3, 7, 7), (3, 3), (1, 1), (1, 1, 1, 1), False),
    ((2, 5, 14, 13), (3, 3), (1, 1), (1, 1, 1, 1), False),
    ((1, 4, 5, 23), (2, 3), (1, 1), (0, 2, 1, 0), False),
    ((1, 2, 9, 40), (5, 5), (1, 1), (2, 2, 2, 2), False),
    ((1, 3, 4, 4), (3, 2), (1, 1), (3, 2, 3, 2), False),
    ((1, 2, 6, 5), (1, 2), (1, 1), (0, 0, 0, 0), False),
    ((3, 1, 1, 17), (1, 4), (1, 1), (0, 1, 0, 2), True),
    ((1, 6, 28, 28), (3, 3), (1, 1), (1, 1, 1, 1), True),
    ((1, 3, 9, 9), (2, 1), (1, 1), (0, 0, 0, 0), False),  # in place: rows of one vector, masked
    # Stride 2: SqueezeNet's 3x3 pools on odd planes read in place (111 -> 55,
    # 27 -> 13: rows of several vectors, the last one partial).
    ((1, 4, 111, 111), (3, 3), (2, 2), (0, 0, 0, 0), False),
    ((1, 5, 27, 27), (3, 3), (2, 2), (0, 0, 0, 0), False),
    ((2, 3, 13, 40), (3, 3), (2, 2), (0, 0, 0, 0), False),
    # ceil_mode: the last windows run past the plane (a padded copy).
    ((1, 3, 27, 27), (3, 3), (2, 2), (0, 0, 0, 0), True),
    ((1, 2, 8, 35), (3, 3), (2, 2), (0, 0, 0, 0), True),
    # ResNet's 3x3 stride-2 pool with padding 1, uneven and oversized padding.
    ((1, 3, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), False),
    ((1, 2, 17, 33), (3, 2), (2, 2), (0, 1, 2, 0), True),
    ((1, 2, 6, 6), (3, 3), (2, 2), (3, 3, 3, 3), False),
    ((2, 3, 10, 10), (2, 2), (2, 2), (0, 0, 0, 0), False),
    # One dimension strided, the other not.
    ((1, 3, 20, 37), (3, 2), (2, 1), (1, 0, 1, 1), False),
    ((1, 3, 19, 50), (2, 3), (1, 2), (0, 1, 0, 1), True),
    ((1, 1, 5, 70), (1, 5), (1, 2), (0, 2, 0, 2), False),
    # Rows wider than two vectors go in registers: windows in the padding
    # only (top rows), one kernel row, rows that end mid-vector.
    ((1, 2, 5, 40), (2, 3), (2, 2), (3, 1, 3, 1), False),
    ((1, 3, 9, 64), (1, 2), (2, 2), (0, 0, 0, 0), False),
    ((1, 2, 7, 98), (3, 3), (2, 2), (1, 0, 1, 2), True),
    # Windows the size of the plane: one run of floats (whole_plane).
    ((2, 3, 7, 9), (7, 9), (1, 1), (0, 0, 0, 0), False),
    ((1, 5, 1, 3), (1, 3), (1, 1), (0, 0, 0, 0), False),
]


def pool_module(shape, size, strides, padding, ceil_mode, kind, include_pad=False):
    def body(emit, x):
        if kind == "max":
            return emit(relay.MaxPool2dOp(
                x, pool_size=size, strides=strides, padding=padding, ceil_mode=ceil_mode))
        return emit(relay.AvgPool2dOp(
            x, pool_size=size, strides=strides, padding=padding, ceil_mode=ceil_mode,
            count_include_pad=include_pad))

    return build([shape], body)


@pytest.mark.parametrize("kind", ["max", "avg", "avg_include_pad"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_pool_matches_reference(case, kind):
    shape, size, strides, padding, ceil_mode = case
    module = pool_module(shape, size, strides, padding, ceil_mode, kind.split("_")[0], kind.endswith("pad"))
    model = byoc.compile(module.clone(), targets=["cblas"])
    assert model.placement["cblas"] == 1
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    if kind == "max":
        flat = x.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = np.inf
        flat[5::13] = -np.inf
    (want,) = byoc.run_reference(module, [x])
    np.testing.assert_allclose(model(x), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 7, 13, 13), (2, 5, 7, 7), (1, 3, 1, 1), (1, 2, 3, 5), (1, 3, 20, 21)], ids=str)
def test_global_avg_pool_matches_reference(shape):
    """A global average pool is byoc_rt_pool2d's average over the whole plane:
    planes of one float, of a masked vector only, of several vectors with a
    masked one and of more than four vectors."""
    module = build([shape], lambda emit, x: emit(relay.GlobalAvgPool2dOp(x)))
    model = byoc.compile(module.clone(), targets=["cblas"])
    assert model.placement["cblas"] == 1
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32) + 3.0
    (want,) = byoc.run_reference(module, [x])
    np.testing.assert_allclose(model(x), want, rtol=1e-6, atol=1e-6)


def test_whole_plane_max_of_negatives():
    """A max over the whole plane whose floats are all negative: the lanes past
    the plane's end must not count as 0."""
    shape = (1, 4, 3, 5)
    module = pool_module(shape, (3, 5), (1, 1), (0, 0, 0, 0), False, "max")
    model = byoc.compile(module.clone(), targets=["cblas"])
    x = -np.abs(np.random.default_rng(6).standard_normal(shape)).astype(np.float32) - 1.0
    np.testing.assert_array_equal(model(x), byoc.run_reference(module, [x])[0])


def test_stride_3_pool_stays_on_ccompiler():
    module = build([(1, 3, 9, 9)], lambda emit, x: emit(relay.MaxPool2dOp(x, pool_size=(3, 3), strides=(3, 3))))
    model = byoc.compile(module.clone(), targets=["cblas", "ccompiler"])
    assert model.placement == {"host": 0, "ccompiler": 1}
    x = np.random.default_rng(0).standard_normal((1, 3, 9, 9)).astype(np.float32)
    np.testing.assert_array_equal(model(x), byoc.run_reference(module, [x])[0])
