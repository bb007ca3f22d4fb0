"""A conv and the pool of its output in one libbyoc call
(byoc_rt_conv2d_pool2d): the conv's output rows computed a band at a time
and pooled in cache. Checked against the numpy reference over odd shapes,
conv strides and padding, partial panels, several bands and runs of pool
rows (threads), max and average pools with padding, ceil_mode and
count_include_pad; and which pools cblas fuses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import byoc
from byoc.backends import cblas
from byoc.dialects import relay
from byoc.runtime import libbyoc
from graphs import build, model_matches_reference

pytest.importorskip("scipy_openblas32")

# (data NCHW, out channels, kernel, conv strides, conv padding (t, l, b, r),
#  epilogue, pool kind, pool size, pool strides, pool padding, ceil_mode)
CASES = [
    # SqueezeNet's first conv and pool: 3 channels, 3x3 stride 2, one panel
    # of 19 channels (its vectors partly empty), a 3x3 stride-2 max pool.
    ((1, 3, 45, 71), 19, (3, 3), (2, 2), (0, 0, 0, 0), "bias_relu", "max", (3, 3), (2, 2),
     (0, 0, 0, 0), False),
    # ResNet's: 7x7 stride 2 padded (a padded copy), two panels (32 + 8
    # channels), a padded max pool; two images.
    ((2, 3, 30, 70), 40, (7, 7), (2, 2), (3, 3, 3, 3), "bias_relu", "max", (3, 3), (2, 2),
     (1, 1, 1, 1), False),
    # Stride 1, uneven padding, clip; an average pool with row stride 1,
    # ceil_mode and windows past the plane.
    ((1, 8, 20, 40), 33, (3, 3), (1, 1), (1, 1, 1, 1), "bias_clip", "avg", (2, 3), (1, 2),
     (0, 1, 1, 0), True),
    # A 1x1 conv read in place; a 2x2 max pool over an odd number of rows.
    ((1, 16, 9, 34), 24, (1, 1), (1, 1), (0, 0, 0, 0), "relu", "max", (2, 2), (2, 2),
     (0, 0, 0, 0), False),
    # An average counting its padding; a conv without epilogue.
    ((1, 4, 13, 36), 16, (3, 3), (1, 1), (1, 0, 1, 2), "none", "avg_include_pad", (3, 3),
     (2, 2), (1, 1, 1, 1), False),
    # Windows wholly in the padding (top rows), a kernel one row high.
    ((1, 5, 6, 66), 10, (3, 3), (2, 2), (1, 1, 1, 1), "bias", "max", (1, 3), (2, 2),
     (2, 0, 2, 1), False),
]


def conv_pool_graph(cases, seed: int = 0):
    """One model computing conv -> epilogue -> pool for every case on its own input."""
    rng = np.random.default_rng(seed)
    shapes = [case[0] for case in cases]
    plans = []
    for data, out, (kh, kw), strides, padding, *_ in cases:
        c = data[1]
        weight = rng.standard_normal((out, c, kh, kw)) / math.sqrt(c * kh * kw)
        plans.append((weight.astype(np.float32), rng.standard_normal(out).astype(np.float32)))

    def body(e, *args):
        results = []
        for x, case, (weight, bias) in zip(args, cases, plans, strict=True):
            _, _, _, strides, padding, epilogue, kind, size, pool_strides, pool_padding, ceil = case
            y = e(relay.Conv2dOp(x, e(relay.ConstantOp.from_numpy(weight)), strides, padding))
            if "bias" in epilogue:
                y = e(relay.BiasAddOp(y, e(relay.ConstantOp.from_numpy(bias)), axis=1))
            if "relu" in epilogue:
                y = e(relay.ReluOp(y))
            if "clip" in epilogue:
                y = e(relay.ClipOp(y, -0.25, 0.5))
            if kind == "max":
                y = e(relay.MaxPool2dOp(y, pool_size=size, strides=pool_strides,
                                        padding=pool_padding, ceil_mode=ceil))
            else:
                y = e(relay.AvgPool2dOp(y, pool_size=size, strides=pool_strides,
                                        padding=pool_padding, ceil_mode=ceil,
                                        count_include_pad=kind.endswith("pad")))
            results.append(y)
        return results

    module = build(shapes, body)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return module, inputs


def compiled(module, layout: str = "OIHW32o", threshold: int = 0):
    """`module` for cblas, every conv in `layout`, pools fused from `threshold` bytes on."""
    original = cblas.conv2d_kernel_layout, cblas.POOL_WITH_CONV_BYTES
    cblas.conv2d_kernel_layout = lambda op: layout
    cblas.POOL_WITH_CONV_BYTES = threshold
    try:
        return byoc.compile(module, targets=["cblas"], cache=False)
    finally:
        cblas.conv2d_kernel_layout, cblas.POOL_WITH_CONV_BYTES = original


@pytest.fixture(scope="module")
def fused():
    module, inputs = conv_pool_graph(CASES)
    return compiled(module), module, inputs


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_convs_pooled_by_bands_match_the_reference(fused, threads):
    """One thread pools an image's rows in one run, more in several runs
    (each computing its first band's shared rows again)."""
    model, module, inputs = fused
    before = libbyoc.threads()
    try:
        libbyoc.set_threads(threads)
        model_matches_reference(model, module, inputs, 1e-4, 1e-4)
    finally:
        libbyoc.set_threads(before)


def test_each_conv_and_its_pool_are_one_call(fused):
    model, _, _ = fused
    source = model.sources["cblas.c"]
    assert source.count("byoc_rt_conv2d_pool2d(") == len(CASES)
    assert "byoc_rt_conv2d(" not in source and "byoc_rt_pool2d(" not in source


def test_what_is_not_pooled_with_its_conv():
    """A conv output read twice or returned, a residual, ROWS, a pool of
    column stride 1, rows of two vectors or less, and (by default) an output
    under POOL_WITH_CONV_BYTES keep their two calls; a conv of 64 channels
    at 100x100 (2.5 MB) is pooled with it."""
    rng = np.random.default_rng(2)
    w8 = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    w64 = (rng.standard_normal((64, 3, 3, 3)) / 5).astype(np.float32)

    def body(e, x, r, big):
        def conv(v, w):
            return e(relay.Conv2dOp(v, e(relay.ConstantOp.from_numpy(w)), (1, 1), (1, 1)))

        def pool(v, s=(2, 2)):
            return e(relay.MaxPool2dOp(v, pool_size=(3, 3), strides=s))

        twice = e(relay.ReluOp(conv(x, w8)))
        residual = e(relay.AddOp(conv(x, w8), r))
        narrow = conv(e(relay.MaxPool2dOp(x, pool_size=(1, 1), strides=(2, 2))), w8)
        return [pool(twice), twice, pool(residual), pool(conv(x, w8), (2, 1)), pool(narrow),
                pool(conv(big, w64)), pool(conv(x, w8))]

    shapes = [(1, 4, 20, 40), (1, 8, 20, 40), (1, 3, 100, 100)]
    module = build(shapes, body)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    model = compiled(module, threshold=cblas.POOL_WITH_CONV_BYTES)
    model_matches_reference(model, module, inputs, 1e-4, 1e-4)
    assert model.sources["cblas.c"].count("byoc_rt_conv2d_pool2d(") == 1
    rows = compiled(conv_pool_graph(CASES[:1])[0], layout="OIHW8o")
    assert "byoc_rt_conv2d_pool2d(" not in rows.sources["cblas.c"]
