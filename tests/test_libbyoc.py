"""libbyoc, the C runtime library: its convolution kernel (reached through
cblas, which packs constant conv2d weights into relay.nn.conv2d_packed), its
pool of threads, and relay.nn.conv2d_packed itself on every exit.

Kernels are checked against the numpy reference over odd shapes, strides,
padding, dilation, groups and every epilogue, in both packed layouts; many
convolutions share one compiled model so the suite stays fast.
"""

from __future__ import annotations

import functools
import math
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import byoc
from graphs import build, model_matches_reference
from byoc.backends import cblas
from byoc.dialects import relay
from byoc.runtime import libbyoc

pytest.importorskip("scipy_openblas32")

RTOL, ATOL = 1e-4, 1e-4

# (data NCHW, out channels, kernel, strides, padding (t, l, b, r), dilation, groups, epilogue)
CONVS = [
    ((1, 3, 17, 19), 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
    ((2, 8, 9, 33), 20, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "bias_add_relu"),
    ((1, 16, 34, 34), 40, (3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 1, "bias_add_clip"),
    ((1, 6, 20, 40), 9, (3, 2), (1, 1), (2, 1, 0, 3), (2, 1), 3, "add_relu"),
    ((1, 4, 11, 7), 33, (5, 5), (1, 2), (2, 2, 2, 2), (1, 1), 1, "clip"),
    ((1, 12, 14, 14), 48, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 2, "bias"),
    ((1, 32, 7, 7), 70, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_add"),
    ((1, 5, 40, 41), 8, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, "none"),
    ((1, 64, 3, 3), 17, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "relu"),
    ((1, 2, 1, 50), 3, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1, "bias_relu"),
    ((1, 9, 5, 6), 6, (2, 2), (1, 1), (0, 0, 0, 0), (2, 2), 3, "add_clip"),
    ((1, 24, 16, 16), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_add_relu"),
    # ROWS over a padded grid (57 positions a row of 55 outputs): vectors
    # crossing a row's end, a partial panel, a residual.
    ((1, 4, 9, 55), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_add_relu"),
    # Strided 1x1 convs read a subsampled copy: rows of 37 (19 outputs, the
    # second vector's loads masked), strides (3, 2) with groups, stride 3 along
    # the rows (no vector path).
    ((1, 20, 13, 37), 36, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, "bias_add_relu"),
    ((1, 6, 9, 50), 10, (1, 1), (3, 2), (0, 0, 0, 0), (1, 1), 2, "add"),
    ((1, 7, 8, 8), 5, (1, 1), (2, 3), (0, 0, 0, 0), (1, 1), 1, "relu"),
    # 3x3 convs of stride 1 by Winograd (2x2 output tiles): odd output sizes
    # (a tile half outside), asymmetric padding, two images, a partial panel;
    # rows of 52 tiles (longer than a chunk's 48) with groups; 49 tiles of 16
    # channels in two chunks, the second starting mid tile row, 64 channels
    # split in two ranges of panels at 2 threads; 200 channels (chunks of 32
    # tiles at most) on a 5x5 image; 288 channels to 96 (blocks of 16 tiles;
    # at 3 threads ranges of panels whose weights exceed half of L2, so a
    # chunk is a block and a range, where smaller ranges' chunks take every
    # block); 64 tiles of
    # 40 channels (F(4x4): blocks of 48 and 16 tiles, output rows of 30
    # ending mid tile); F(4x4)'s tile rows of 7 read two at a time (an odd
    # count of them: the last vector's second row is past the image; F(2x2)'s
    # tile rows of 3 on the 5x5 image are read four at a time).
    ((2, 10, 13, 9), 19, (3, 3), (1, 1), (0, 1, 2, 1), (1, 1), 1, "bias_add_relu"),
    ((1, 40, 30, 30), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_add_relu"),
    ((1, 16, 6, 103), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, "bias_clip"),
    ((1, 16, 14, 14), 64, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "add"),
    ((1, 200, 5, 5), 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
    ((1, 288, 13, 13), 96, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
    ((1, 12, 27, 25), 20, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_add_relu"),
    # Grouped 1x1 convs (ShuffleNet's), every image and group in one loop of
    # the pool: two images of 4 groups of 5 outputs (a partial panel), and 3
    # groups of 16 outputs over rows of 10.
    ((2, 12, 7, 9), 20, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4, "bias_add_relu"),
    ((1, 24, 6, 10), 48, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 3, "add_clip"),
]


def conv_graph(convs: Sequence[tuple], seed: int = 0) -> tuple[ModuleOp, list[np.ndarray]]:
    """One model computing every conv of `convs` on its own input (plus a residual
    input for the epilogues with an add); constant weights and biases. A ninth
    entry g shuffles the input's channels in g groups first (reshape, transpose,
    reshape, as ShuffleNet does). Returns the module and its inputs."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, ...]] = []
    plans = []
    for data, out, (kh, kw), strides, padding, dilation, groups, epilogue, *shuffle in convs:
        n, c, h, w = data
        out_shape = relay.conv2d_output_shape(
            data, (out, c // groups, kh, kw), strides, padding, dilation, groups
        )
        shapes.append(data)
        if "add" in epilogue:
            shapes.append(out_shape)
        weight = rng.standard_normal((out, c // groups, kh, kw)) / math.sqrt(c // groups * kh * kw)
        bias = rng.standard_normal(out)
        plans.append((weight.astype(np.float32), bias.astype(np.float32), strides, padding,
                      dilation, groups, epilogue, data, shuffle[0] if shuffle else 0))

    def body(e, *args):
        args = list(args)
        results = []
        for weight, bias, strides, padding, dilation, groups, epilogue, data, shuffle in plans:
            x = args.pop(0)
            if shuffle:
                n, c, h, w = data
                x = e(relay.ReshapeOp(x, (n, shuffle, c // shuffle, h, w)))
                x = e(relay.TransposeOp(x, (0, 2, 1, 3, 4)))
                x = e(relay.ReshapeOp(x, data))
            w = e(relay.ConstantOp.from_numpy(weight))
            y = e(relay.Conv2dOp(x, w, strides, padding, dilation, groups))
            if "bias" in epilogue:
                y = e(relay.BiasAddOp(y, e(relay.ConstantOp.from_numpy(bias)), axis=1))
            if "add" in epilogue:
                y = e(relay.AddOp(y, args.pop(0)))
            if "relu" in epilogue:
                y = e(relay.ReluOp(y))
            if "clip" in epilogue:
                y = e(relay.ClipOp(y, -0.25, 0.5))
            results.append(y)
        return results

    module = build(shapes, body)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return module, inputs


def check(model: byoc.CompiledModule, module: ModuleOp, inputs: list[np.ndarray]) -> None:
    model_matches_reference(model, module, inputs, RTOL, ATOL)


def legal(layout: str, conv: tuple) -> bool:
    """Whether libbyoc computes `conv` in `layout` (vectors of pixels need stride 1,
    or a 1x1 kernel without padding: its subsampled copy; Winograd's a 3x3
    kernel of stride and dilation 1)."""
    if layout in relay.WINOGRAD_LAYOUTS:
        return tuple(conv[2]) == (3, 3) and tuple(conv[3]) == (1, 1) and tuple(conv[5]) == (1, 1)
    strided_1x1 = tuple(conv[2]) == (1, 1) and not any(conv[4])
    return layout == "OIHW32o" or tuple(conv[3]) == (1, 1) or strided_1x1


def compiled_in_layout(module, layout: str):
    """`module` compiled for cblas with every conv forced into `layout`."""
    original = cblas.conv2d_kernel_layout
    cblas.conv2d_kernel_layout = lambda op: layout
    try:
        return byoc.compile(module, targets=["cblas"], cache=False)
    finally:
        cblas.conv2d_kernel_layout = original


@pytest.fixture(scope="module", params=["OIHW8o", "OIHW32o", "winograd8o", "winograd4x4_8o"])
def packed_model(request):
    """Every conv of CONVS its layout can compute, in one model, that layout forced."""
    layout = request.param
    convs = [c for c in CONVS if legal(layout, c)]
    module, inputs = conv_graph(convs)
    model = compiled_in_layout(module, layout)
    return layout, model, module, inputs


def test_every_conv_and_epilogue_matches_the_reference(packed_model):
    layout, model, module, inputs = packed_model
    check(model, module, inputs)


def test_convs_are_packed_and_epilogues_fused(packed_model):
    layout, model, module, _ = packed_model
    host = model.partitioned_ir.split("func.func private")[0]
    assert "relay.nn.conv2d " not in model.partitioned_ir
    assert model.partitioned_ir.count(f'kernel_layout = "{layout}"') == sum(
        legal(layout, c) for c in CONVS
    )
    # Bias, residual add, relu and clip run in the kernel: none is left on the host.
    for name in ("relay.nn.bias_add", "relay.add", "relay.nn.relu", "relay.clip"):
        assert name not in host
    source = model.sources["cblas.c"]
    assert '#include "byoc_runtime.h"' in source
    assert source.count("byoc_rt_conv2d(") == sum(legal(layout, c) for c in CONVS)


def test_results_do_not_depend_on_the_thread_count(packed_model):
    _, model, module, inputs = packed_model
    before = libbyoc.threads()
    try:
        libbyoc.set_threads(1)
        one = model(*inputs)
        libbyoc.set_threads(3)
        three = model(*inputs)
    finally:
        libbyoc.set_threads(before)
    for a, b in zip(one, three, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_layout_is_chosen_by_shape():
    module, inputs = conv_graph(
        [
            # A 1x1 conv of a wide image as it is: vectors of pixels.
            ((1, 8, 40, 40), 16, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "bias_relu"),
            ((1, 8, 40, 40), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
            ((1, 8, 7, 7), 16, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "bias_relu"),
            # A padded 3x3 conv of a wide image: 16 channels fill a block of
            # 16 as well as two of 8, and ROWS would compute the grid
            # positions past each row's end (the float CNN's first conv).
            ((1, 3, 33, 33), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
            # 3 output channels: a block of 8 wastes less than of 16, wide or narrow.
            ((1, 5, 37, 37), 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),
            ((1, 5, 9, 9), 3, (3, 3), (1, 1), (1, 0, 1, 2), (1, 2), 1, "bias_relu"),
            # 1x1 on a narrow image, 34 channels a group (ShuffleNet's): blocks
            # of 8 waste less than of 32; its rows are contiguous.
            ((1, 68, 20, 19), 136, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4, "bias_add_relu"),
            ((1, 68, 20, 19), 136, (1, 1), (1, 1), (0, 1, 0, 0), (1, 1), 4, "bias_relu"),
        ]
    )
    model = byoc.compile(module, targets=["cblas", "ccompiler"], cache=False)
    check(model, module, inputs)
    layouts = [line.split('kernel_layout = "')[1][:7] for line in model.partitioned_ir.splitlines()
               if "conv2d_packed" in line and "kernel_layout" in line]
    assert [layout.rstrip('"') for layout in layouts] == [
        "OIHW8o", "OIHW32o", "OIHW32o", "OIHW32o", "OIHW8o", "OIHW8o", "OIHW8o", "OIHW32o"
    ]


def test_a_weight_that_is_not_a_constant_keeps_the_im2col_path():
    def body(e, x, w, r):
        y = e(relay.Conv2dOp(x, w, (1, 1), (1, 1)))
        return e(relay.ReluOp(e(relay.AddOp(y, r))))

    module = build([(1, 4, 8, 8), (6, 4, 3, 3), (1, 6, 8, 8)], body)
    model = byoc.compile(module, targets=["cblas", "ccompiler"], cache=False)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 8, 8), (6, 4, 3, 3), (1, 6, 8, 8))]
    check(model, module, inputs)
    assert "conv2d_packed" not in model.partitioned_ir
    assert "scipy_cblas_sgemm" in model.sources["cblas.c"]


DEPTHWISE = [
    ((1, 16, 28, 28), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16, "bias"),
    ((2, 6, 15, 17), 12, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 6, "bias_add_relu"),
    ((1, 5, 9, 40), 5, (5, 3), (1, 3), (2, 1, 2, 1), (2, 1), 5, "add_clip"),
    ((1, 3, 7, 7), 3, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 3, "relu"),
    # Rows narrower than a vector (all tail), channel multiplier 2, a residual.
    ((1, 4, 11, 6), 8, (3, 3), (1, 2), (2, 1, 2, 1), (2, 1), 4, "bias_add_relu"),
    # Stride 1: rows copied as whole vectors, rows a multiple of a vector
    # wide (the last row too), and a left padding wider than a vector.
    ((1, 2, 5, 32), 2, (3, 3), (1, 1), (1, 2, 0, 1), (1, 1), 2, "bias_relu"),
    ((1, 3, 4, 5), 3, (2, 3), (1, 1), (1, 17, 0, 2), (1, 1), 3, "add_relu"),
    # Read in place through masked loads (AVX-512): stride 2 over rows of
    # several vectors with a column dilation, padding past the plane's end,
    # 7x7 planes (ShuffleNet's), a stride 3 row (the split copy).
    ((1, 3, 13, 50), 3, (3, 3), (2, 2), (1, 1, 2, 3), (1, 2), 3, "bias_add_relu"),
    ((2, 4, 7, 7), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, "bias_relu"),
    ((1, 2, 9, 35), 2, (3, 5), (2, 2), (0, 4, 3, 0), (1, 1), 2, "add_clip"),
    ((1, 2, 8, 21), 2, (3, 3), (1, 3), (1, 1, 1, 1), (1, 1), 2, "bias"),
    # Rows of at most 8 outputs, two a vector: an odd row count, stride 2
    # with a column dilation and a channel multiplier, padding rows on both
    # sides of a pair, one output.
    ((1, 3, 14, 14), 3, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 3, "bias_add_relu"),
    ((1, 2, 9, 9), 4, (3, 3), (2, 2), (1, 1, 1, 1), (1, 2), 2, "add_clip"),
    ((1, 2, 6, 3), 2, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2, "bias_relu"),
    ((1, 2, 1, 1), 2, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, "relu"),
]


def test_depthwise_convs_match_the_reference():
    """Depthwise convs (not packed: the weight is read as it is), any stride, padding,
    dilation and channel multiplier, with every epilogue."""
    module, inputs = conv_graph(DEPTHWISE)
    model = byoc.compile(module, targets=["cblas"], cache=False)
    check(model, module, inputs)
    assert model.sources["cblas.c"].count("byoc_rt_depthwise_conv2d(") == len(DEPTHWISE)
    assert "conv2d_packed" not in model.partitioned_ir


# Channel shuffles (9th entry: its groups) read by depthwise convs in place:
# shuffle groups of 2 to 5, strides, padding, a channel multiplier, epilogues.
SHUFFLED_DEPTHWISE = [
    ((1, 12, 9, 10), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 12, "none", 4),
    ((1, 12, 9, 10), 12, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 12, "bias", 3),
    ((2, 10, 7, 19), 20, (3, 3), (1, 2), (2, 1, 0, 1), (1, 1), 10, "bias_add_relu", 5),
    ((1, 6, 5, 33), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6, "relu", 2),
    ((1, 8, 6, 6), 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8, "bias_clip", 2),
]


def test_shuffled_depthwise_convs_read_the_shuffle_in_place():
    """A channel shuffle read only by a depthwise conv is a cblas composite
    (`shuffle_conv2d...`): no copy of the shuffled tensor, the kernel permutes
    the channels it reads."""
    module, inputs = conv_graph(SHUFFLED_DEPTHWISE)
    model = byoc.compile(module, targets=["cblas", "ccompiler"], cache=False)
    check(model, module, inputs)
    ir = model.partitioned_ir
    # reshape, transpose, reshape, conv2d and each epilogue op, in one composite
    ops = sum(4 + (0 if c[7] == "none" else len(c[7].split("_"))) for c in SHUFFLED_DEPTHWISE)
    assert ir.count('extern.composite = "cblas.shuffle_conv2d') == ops
    assert "ccompiler" not in ir
    assert model.sources["cblas.c"].count("byoc_rt_depthwise_conv2d(") == len(SHUFFLED_DEPTHWISE)


def test_other_transposes_before_a_depthwise_conv_are_not_read_in_place():
    """Not a channel shuffle (the transpose swaps rows and columns), or one
    whose result something else also reads: the copies stay on ccompiler."""
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)

    def body(e, x):
        w = e(relay.ConstantOp.from_numpy(weight))
        swapped = e(relay.ReshapeOp(x, (1, 2, 3, 7, 7)))
        swapped = e(relay.ReshapeOp(e(relay.TransposeOp(swapped, (0, 1, 2, 4, 3))), (1, 6, 7, 7)))
        shuffled = e(relay.ReshapeOp(x, (1, 2, 3, 7, 7)))
        shuffled = e(relay.ReshapeOp(e(relay.TransposeOp(shuffled, (0, 2, 1, 3, 4))), (1, 6, 7, 7)))
        first = e(relay.Conv2dOp(swapped, w, (1, 1), (1, 1, 1, 1), (1, 1), 6))
        second = e(relay.Conv2dOp(shuffled, w, (1, 1), (1, 1, 1, 1), (1, 1), 6))
        return [first, second, shuffled]

    module = build([(1, 6, 7, 7)], body)
    model = byoc.compile(module, targets=["cblas", "ccompiler"], cache=False)
    check(model, module, [rng.standard_normal((1, 6, 7, 7)).astype(np.float32)])
    assert "shuffle_conv2d" not in model.partitioned_ir
    assert model.partitioned_ir.count("relay.transpose") == 2


def test_a_residual_add_of_the_other_branch_first_is_fused():
    """`relu(add(main, shortcut_conv))` (ResNet's projection blocks, the
    shortcut conv last): the add joins the shortcut conv's composite with its
    operands swapped, and nothing runs outside cblas."""
    rng = np.random.default_rng(7)
    w1, w2 = (rng.standard_normal((12, 6, k, k)).astype(np.float32) / 4 for k in (3, 1))
    bias = rng.standard_normal(12).astype(np.float32)

    def body(e, x):
        b = e(relay.ConstantOp.from_numpy(bias))
        main = e(relay.BiasAddOp(e(relay.Conv2dOp(x, e(relay.ConstantOp.from_numpy(w1)),
                                                  (2, 2), (1, 1, 1, 1))), b, axis=1))
        shortcut = e(relay.BiasAddOp(e(relay.Conv2dOp(x, e(relay.ConstantOp.from_numpy(w2)),
                                                      (2, 2))), b, axis=1))
        return e(relay.ReluOp(e(relay.AddOp(main, shortcut))))

    module = build([(1, 6, 9, 11)], body)
    model = byoc.compile(module, targets=["cblas", "ccompiler"], cache=False)
    check(model, module, [rng.standard_normal((1, 6, 9, 11)).astype(np.float32)])
    assert "ccompiler" not in model.partitioned_ir
    assert 'extern.composite = "cblas.conv2d_bias_add_relu"' in model.partitioned_ir


def residual_chain(e, x, weights, biases):
    """A bottleneck block whose residual is an intermediate of the cblas function:
    h = relu(conv0(x)); y = relu(conv1(h) + h), h also the input of conv1, a 1x1
    conv reading it in place; z =
    relu(conv3(relu(conv2(y))) + y), y read last as conv3's residual; then
    conv4(z), so z is an intermediate too."""

    def conv(i, data, padding):
        w = e(relay.ConstantOp.from_numpy(weights[i]))
        y = e(relay.Conv2dOp(data, w, (1, 1), padding))
        return e(relay.BiasAddOp(y, e(relay.ConstantOp.from_numpy(biases[i])), axis=1))

    h = e(relay.ReluOp(conv(0, x, (1, 1, 1, 1))))
    y = e(relay.ReluOp(e(relay.AddOp(conv(1, h, (0, 0, 0, 0)), h))))
    t = e(relay.ReluOp(conv(2, y, (0, 0, 0, 0))))
    z = e(relay.ReluOp(e(relay.AddOp(conv(3, t, (1, 1, 1, 1)), y))))
    return conv(4, z, (0, 0, 0, 0))


@pytest.mark.parametrize("layout", ["OIHW8o", "OIHW32o"])
def test_an_output_written_over_its_residual_is_right(layout):
    """A conv's output takes the scratch buffer of a residual read last there
    (ResNet's identity shortcuts), never that of a residual that is also the
    conv's input, which other tiles still read: 13 channels at 9x11 (partial
    panels and tiles), both layouts."""
    rng = np.random.default_rng(11)
    kernels = [(13, 5, 3), (13, 13, 1), (7, 13, 1), (13, 7, 3), (3, 13, 1)]
    weights = [(rng.standard_normal((o, c, k, k)) / math.sqrt(c * k * k)).astype(np.float32)
               for o, c, k in kernels]
    biases = [rng.standard_normal(o).astype(np.float32) for o, _, _ in kernels]
    module = build([(1, 5, 9, 11)], lambda e, x: residual_chain(e, x, weights, biases))
    model = compiled_in_layout(module, layout)
    check(model, module, [rng.standard_normal((1, 5, 9, 11)).astype(np.float32)])
    calls = [line for line in model.c_source.splitlines() if "byoc_rt_conv2d(" in line]
    assert len(calls) == 5
    # The last two arguments: the residual and the output.
    *_, residual, out = (a.strip(" );") for a in calls[1].split(","))
    assert residual != out, calls[1]  # conv1 reads h as its input and residual
    *_, residual, out = (a.strip(" );") for a in calls[3].split(","))
    assert residual == out, calls[3]


# --- relay.nn.conv2d_packed on its own ---------------------------------------


@pytest.mark.parametrize("layout", ["OIHW8o", "OIHW32o"])
@pytest.mark.parametrize("groups, channels, out", [(1, 5, 11), (2, 6, 34), (3, 9, 3)])
def test_pack_and_unpack_are_inverse(layout, groups, channels, out):
    weight = np.random.default_rng(0).standard_normal((out, channels // groups, 3, 2))
    packed = relay.pack_conv2d_weight(weight, groups, layout)
    block = relay.PACKED_KERNEL_LAYOUTS[layout]
    assert packed.shape == (groups * -(-(out // groups) // block), channels // groups, 3, 2, block)
    assert np.array_equal(relay.unpack_conv2d_weight(packed, groups, out), weight)


@pytest.mark.parametrize("layout, size, g", [("winograd8o", 4, relay.WINOGRAD_G),
                                             ("winograd4x4_8o", 6, relay.WINOGRAD4_G)])
@pytest.mark.parametrize("groups, channels, out", [(1, 5, 11), (2, 6, 34)])
def test_winograd_packing_transforms_each_kernel(groups, channels, out, layout, size, g):
    """"winograd8o" ("winograd4x4_8o") holds G g G^T of each 3x3 kernel g, 4x4
    (6x6), in blocks of 8 output channels; unpacking recovers g (G's left
    inverse)."""
    weight = np.random.default_rng(1).standard_normal((out, channels // groups, 3, 3))
    packed = relay.pack_conv2d_weight(weight, groups, layout)
    blocks = groups * -(-(out // groups) // 8)
    assert packed.shape == (blocks, channels // groups, size, size, 8)
    g = np.array(g)
    per_group = out // groups
    # Output channel o of group 1 sits at block blocks/groups + o // 8, lane o % 8.
    o = per_group + 3 if groups == 2 else 9
    block, lane = divmod(o % per_group, 8)
    block += (o // per_group) * (blocks // groups)
    np.testing.assert_allclose(packed[block, :, :, :, lane], g @ weight[o] @ g.T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        relay.unpack_conv2d_weight(packed, groups, out, layout), weight, rtol=1e-9, atol=1e-12
    )


def packed_module(layout: str, groups: int = 2) -> tuple[ModuleOp, list[np.ndarray]]:
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((10, 6 // groups, 3, 2)).astype(np.float32)
    packed = relay.pack_conv2d_weight(weight, groups, layout)

    def body(e, x, w):
        return e(relay.Conv2dPackedOp(x, w, 10, layout, (2, 1), (1, 1, 1, 0), (1, 2), groups))

    module = build([(2, 6, 7, 6), packed.shape], body)
    return module, [rng.standard_normal((2, 6, 7, 6)).astype(np.float32), packed]


@pytest.mark.parametrize("layout", ["OIHW8o", "OIHW32o"])
def test_conv2d_packed_means_conv2d_of_the_unpacked_weight(layout):
    module, (x, packed) = packed_module(layout)
    weight = relay.unpack_conv2d_weight(packed, 2, 10)

    def body(e, x, w):
        return e(relay.Conv2dOp(x, w, (2, 1), (1, 1, 1, 0), (1, 2), 2))

    plain = build([x.shape, weight.shape], body)
    got = byoc.run_reference(module, [x, packed])[0]
    want = byoc.run_reference(plain, [x, weight])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["cblas"]])
def test_conv2d_packed_runs_on_every_exit(targets):
    module, inputs = packed_module("OIHW32o")
    model = byoc.compile(module, targets=targets)
    check(model, module, inputs)


def winograd_module(layout: str = "winograd8o") -> tuple[ModuleOp, list[np.ndarray]]:
    rng = np.random.default_rng(4)
    weight = rng.standard_normal((10, 6, 3, 3)).astype(np.float32)
    packed = relay.pack_conv2d_weight(weight, 1, layout)

    def body(e, x, w):
        return e(relay.Conv2dPackedOp(x, w, 10, layout, padding=(1, 0, 1, 2)))

    module = build([(1, 6, 9, 7), packed.shape], body)
    return module, [rng.standard_normal((1, 6, 9, 7)).astype(np.float32), packed]


@pytest.mark.parametrize("layout", ["winograd8o", "winograd4x4_8o"])
def test_winograd_conv2d_packed_means_conv2d_of_the_unpacked_weight(layout):
    module, (x, packed) = winograd_module(layout)
    weight = relay.unpack_conv2d_weight(packed, 1, 10, layout)

    def body(e, x, w):
        return e(relay.Conv2dOp(x, w, padding=(1, 0, 1, 2)))

    plain = build([x.shape, weight.shape], body)
    got = byoc.run_reference(module, [x, packed])[0]
    want = byoc.run_reference(plain, [x, weight])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    check(byoc.compile(module, targets=["cblas"]), module, [x, packed])


@pytest.mark.parametrize("layout", ["winograd8o", "winograd4x4_8o"])
@pytest.mark.parametrize("targets", [[], ["ccompiler"]])
def test_winograd_conv2d_packed_elsewhere_is_an_error(targets, layout):
    """Only libbyoc computes Winograd-packed weights: other exits say so."""
    module, _ = winograd_module(layout)
    with pytest.raises(byoc.ByocError, match=f'"{layout}".*libbyoc'):
        byoc.compile(module, targets=targets)


def test_conv2d_packed_with_a_wrong_weight_shape_is_an_error():
    from byoc.frontend.parse import parse_text

    text = """func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<1x4x3x3x8xf32>) -> tensor<1x9x3x3xf32> {
  %y = relay.nn.conv2d_packed %x, %w {channels = 9 : i64, kernel_layout = "OIHW8o"} : (tensor<1x4x5x5xf32>, tensor<1x4x3x3x8xf32>) -> tensor<1x9x3x3xf32>
  func.return %y : tensor<1x9x3x3xf32>
}"""
    with pytest.raises(byoc.ByocError, match=r"9 channels in groups=1 packed as OIHW8o have \[2, 4, 3, 3, 8\]"):
        parse_text(text, "t.mlir")
    with pytest.raises(byoc.ByocError, match='kernel_layout "OIHW4o" is not one of'):
        parse_text(text.replace("OIHW8o", "OIHW4o"), "t.mlir")


# --- The pool of threads -------------------------------------------------------


def test_threads_can_be_set_and_read():
    before = libbyoc.threads()
    try:
        libbyoc.set_threads(3)
        assert libbyoc.threads() == 3
    finally:
        libbyoc.set_threads(before)
    with pytest.raises(byoc.ByocError, match="at least one thread"):
        libbyoc.set_threads(0)


@functools.cache
def parallel_for():
    """cffi and the process's byoc_rt_parallel_for, made once: a test that
    times the pool's spin after a loop calls it again within microseconds."""
    import cffi

    libbyoc.threads()  # loads libbyoc
    ffi = cffi.FFI()
    ffi.cdef("void byoc_rt_parallel_for(int64_t, void (*)(void *, int64_t), void *);")
    return ffi, ffi.dlopen(None)


LAST_LOOP: dict[str, int] = {}
"""What libbyoc's pool counted during chunk_threads' last loop (for messages)."""


def chunk_threads(chunks: int, meet: bool, seconds: float = 0.0) -> set[int]:
    """The Python threads that ran the chunks of one byoc_rt_parallel_for of
    `chunks` chunks. With `meet`, each chunk waits (at most a minute) until a
    second thread has run one: the chunk a thread holds cannot be taken from
    it, so the pool's second thread must take the other, however busy the
    machine (no timing is measured). A loop the pool runs on its caller alone
    instead (it backs off while a worker it woke has not come: a busy
    machine) is run again until one runs on the pool: a test's loops alone
    are its `backed_off` loops. Each chunk lasts at least `seconds`."""
    ffi, process = parallel_for()
    deadline = time.monotonic() + 60
    while True:
        lock, met, alone, seen = threading.Lock(), threading.Event(), threading.Event(), set()
        alone_before = libbyoc.pool_stats()["alone"]

        @ffi.callback("void(void *, int64_t)")
        def task(context, index):
            with lock:
                seen.add(threading.get_ident())
                if len(seen) > 1:
                    met.set()
            while meet and not met.wait(0.005):
                if libbyoc.pool_stats()["alone"] > alone_before or time.monotonic() > deadline:
                    alone.set()
                    break
            time.sleep(seconds)

        start = libbyoc.pool_stats()
        process.byoc_rt_parallel_for(chunks, task, ffi.NULL)
        end = libbyoc.pool_stats()
        LAST_LOOP.clear()
        LAST_LOOP.update({k: end[k] - start[k] for k in start if end[k] != start[k]})
        if not alone.is_set() or time.monotonic() > deadline:
            return seen
        time.sleep(0.01)


def test_the_thread_setting_reaches_the_pool_after_it_ran():
    """bench/models.py's order: a model runs at one thread, then at two. The
    pool's setting is read at every loop, not fixed by its first."""
    before = byoc.threads()
    try:
        byoc.set_threads(1)
        assert byoc.threads() == 1
        assert chunk_threads(8, meet=False) == {threading.get_ident()}
        byoc.set_threads(2)
        assert byoc.threads() == 2
        # OpenBLAS stays single-threaded inside the pool's chunks.
        assert cblas.get_threads() == (1 if libbyoc.parallel_code() else 2)
        ran = chunk_threads(2, meet=True)
        assert len(ran) == 2 and threading.get_ident() in ran, LAST_LOOP
    finally:
        byoc.set_threads(before)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(byoc.ByocError, match="at least one thread"):
            byoc.set_threads(bad)


def test_the_pool_counts_its_loops_and_chunks():
    """libbyoc.pool_stats: a loop of 8 chunks on 2 threads is one loop of the
    pool, 8 chunks, at least one on a worker (the chunks meet); on 1 thread it
    is a loop its caller ran alone."""
    before = byoc.threads()
    try:
        byoc.set_threads(2)
        start = libbyoc.pool_stats()
        assert len(chunk_threads(8, meet=True)) == 2, LAST_LOOP
        after = libbyoc.pool_stats()
        change = {k: after[k] - start[k] for k in start}
        assert change["loops"] == 1 and change["alone"] == change["backed_off"] and change["chunks"] == 8
        assert 1 <= change["worker_chunks"] <= 7 and change["missed"] == 0
        assert change["loop_ns"] > 0 and all(v >= 0 for v in change.values())
        byoc.set_threads(1)
        start = libbyoc.pool_stats()
        chunk_threads(8, meet=False)
        after = libbyoc.pool_stats()
        assert after["alone"] - start["alone"] == 1 and after["loops"] == start["loops"]
    finally:
        byoc.set_threads(before)


def test_a_worker_that_holds_the_caller_up_makes_a_late_loop():
    """A loop whose worker keeps its chunk far longer than the caller's own
    chunk took is counted late, and every chunk still runs once; the caller
    then runs its next two loops alone and the third on the pool again (the
    back-off counts loops, byoc_runtime.h). The worker's chunk outlasts three
    times the caller's plus a second, whatever the load. Meanwhile the worker
    spins (each loop alone outlasts its 400 us spin after a loop), so the third
    loop finds it awake, unless the OS preempted it (a busy machine)."""
    ffi, process = parallel_for()
    caller, met, ran, worker_done = threading.get_ident(), threading.Event(), [], []
    started = time.monotonic()

    @ffi.callback("void(void *, int64_t)")
    def task(context, index):
        ran.append(index)
        if threading.get_ident() == caller:
            met.wait(60)  # the worker takes the other chunk
        else:
            met.set()
            time.sleep(3 * (time.monotonic() - started) + 1.0)
            worker_done.append(time.monotonic())

    before = byoc.threads()
    try:
        byoc.set_threads(2)  # also ends any backing off from earlier loops
        start = libbyoc.pool_stats()
        started = time.monotonic()
        process.byoc_rt_parallel_for(2, task, ffi.NULL)
        after = libbyoc.pool_stats()
        late_end = time.monotonic()
        alone = [chunk_threads(4, meet=False, seconds=0.001) for _ in range(2)]
        backed_off = libbyoc.pool_stats()
        # Alone for at most 64 ms after the late loop: a test descheduled longer
        # than that between its loops cannot tell the count.
        in_time = time.monotonic() - late_end < 0.05
        assert len(chunk_threads(2, meet=True)) == 2
        last = libbyoc.pool_stats()
    finally:
        byoc.set_threads(before)
    assert sorted(ran) == [0, 1] and met.is_set()
    change = {k: after[k] - start[k] for k in start}
    assert change["loops"] == 1 and change["worker_chunks"] == 1 and change["late"] == 1
    # The caller waits from the end of its own chunk, shortly after the worker
    # began its sleep of over a second: a loaded machine delays that end.
    assert change["wait_ns"] >= 0.5e9
    assert all(threads == {caller} for threads in alone) or not in_time
    assert backed_off["backed_off"] - after["backed_off"] == (2 if in_time else backed_off["alone"] - after["alone"])
    assert last["loops"] - backed_off["loops"] == 1
    assert last["backed_off"] - backed_off["backed_off"] == last["alone"] - backed_off["alone"]
    # The worker spins 400 us after its chunk: if the loops alone began well
    # within that (the caller was not descheduled meanwhile), and nothing
    # preempted the worker, it did not fall asleep during them (4 ms each).
    if in_time and late_end - worker_done[0] < 2e-4 and last["preempted"] == after["preempted"]:
        assert backed_off["sleeps"] == after["sleeps"]


def test_a_worker_gives_its_core_away_between_chunks_not_inside_one():
    """A worker that has run 1 ms without a break yields its core before
    claiming another chunk (`breaks`), so a busy machine preempts it while it
    holds none. Here the caller's chunk waits (at most a minute) until the
    worker has run the two others, 5 ms each."""
    ffi, process = parallel_for()
    caller, done, worker_chunks = threading.get_ident(), threading.Event(), []

    @ffi.callback("void(void *, int64_t)")
    def task(context, index):
        if threading.get_ident() == caller:
            done.wait(60)
            return
        time.sleep(0.005)
        worker_chunks.append(index)
        if len(worker_chunks) == 2:
            done.set()

    before = byoc.threads()
    try:
        byoc.set_threads(2)
        start = libbyoc.pool_stats()
        process.byoc_rt_parallel_for(3, task, ffi.NULL)
        after = libbyoc.pool_stats()
    finally:
        byoc.set_threads(before)
    assert len(worker_chunks) == 2 and done.is_set()
    assert after["worker_chunks"] - start["worker_chunks"] == 2
    assert after["breaks"] - start["breaks"] >= 1


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="steering needs two cores")
def test_a_worker_woken_after_a_sleep_is_steered_off_its_callers_core():
    """A loop that wakes a worker asleep for over a millisecond first takes the
    caller's core from the worker's cores (`steers`); woken, the worker may use
    every core again."""
    before = byoc.threads()
    try:
        byoc.set_threads(2)  # also ends any backing off from earlier loops
        asleep = libbyoc.pool_stats()["sleeps"]
        assert len(chunk_threads(2, meet=True)) == 2  # a worker runs
        # It spins 400 us, then sleeps: on a busy machine it may take a while
        # to get the core it needs to fall asleep (at most 20 s here).
        deadline = time.monotonic() + 20
        while libbyoc.pool_stats()["sleeps"] == asleep and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.01)  # asleep for over a millisecond
        start = libbyoc.pool_stats()
        assert len(chunk_threads(2, meet=True)) == 2  # it woke and ran a chunk
        after = libbyoc.pool_stats()
    finally:
        byoc.set_threads(before)
    assert after["wakes"] - start["wakes"] >= 1 and after["steers"] - start["steers"] >= 1
    everywhere = os.sched_getaffinity(0)
    for task in os.listdir("/proc/self/task"):
        assert os.sched_getaffinity(int(task)) == everywhere


def test_models_called_from_many_threads_at_once_are_right(packed_model):
    """Callers that find the pool busy run their loops alone: every result is right."""
    _, model, module, inputs = packed_model
    want = model(*inputs)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(5):
                for g, w in zip(model(*inputs), want, strict=True):
                    np.testing.assert_array_equal(g, w)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


HELD_CALLER = r"""
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_t caller;
static atomic_int holding, joined, held;
static _Atomic int64_t sleeps_at_join;

static int64_t stat(int which) {
  int64_t stats[BYOC_RT_STATS];
  byoc_rt_pool_stats(stats, BYOC_RT_STATS);
  return stats[which];
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void task(void *context, int64_t index) {
  (void)context, (void)index;
  if (!pthread_equal(pthread_self(), caller) && !atomic_load(&joined)) {
    atomic_store(&sleeps_at_join, stat(BYOC_RT_STAT_SLEEPS));
    atomic_store(&joined, 1);
  }
}

/* Between publishing a loop and waking the sleepers: hold the caller until
 * its spinning worker has run the loop and fallen asleep (at most 0.2 s: a
 * worker asleep at the publication cannot join). */
void hold_after_publish(void) {
  if (!atomic_load(&holding))
    return;
  double deadline = seconds() + 0.2;
  while (seconds() < deadline)
    if (atomic_load(&joined) && stat(BYOC_RT_STAT_SLEEPS) > atomic_load(&sleeps_at_join)) {
      atomic_store(&held, 1);
      return;
    }
}

int main(void) {
  caller = pthread_self();
  byoc_rt_set_num_threads(2);
  /* Until a loop publishes while the worker spins (a busy machine may run
   * the worker late, making loops back off: at most a minute). */
  double give_up = seconds() + 60;
  while (!atomic_load(&held) && seconds() < give_up) {
    usleep(1000);
    byoc_rt_parallel_for(2, task, NULL); /* the worker spins after it */
    atomic_store(&joined, 0);
    atomic_store(&holding, 1);
    byoc_rt_parallel_for(2, task, NULL);
    atomic_store(&holding, 0);
  }
  if (!atomic_load(&held)) {
    printf("never held\n");
    return 2;
  }
  /* The next loops run on the pool again (a back-off lasts 64 ms at most). */
  int64_t loops = stat(BYOC_RT_STAT_LOOPS);
  double deadline = seconds() + 5;
  while (stat(BYOC_RT_STAT_LOOPS) == loops && seconds() < deadline) {
    usleep(1000);
    byoc_rt_parallel_for(2, task, NULL);
  }
  printf("loops %ld alone %ld late %ld\n", (long)(stat(BYOC_RT_STAT_LOOPS) - loops),
         (long)stat(BYOC_RT_STAT_ALONE), (long)stat(BYOC_RT_STAT_LATE));
  return stat(BYOC_RT_STAT_LOOPS) > loops ? 0 : 1;
}
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the pool's workers are Linux threads")
def test_a_worker_woken_for_a_loop_it_already_ran_leaves_the_pool_usable(tmp_path):
    """A caller preempted between publishing a loop and waking the sleepers
    (held there by a test build of threads.c) wakes a worker that meanwhile
    ran the loop and fell asleep: that worker sleeps on, and the wake-up must
    still count as answered. Counted as unanswered, every later loop of the
    process backed off for a late worker no loop woke again, and ran on its
    caller alone (test_the_thread_setting_reaches_the_pool_after_it_ran
    failed so after a minute of loops alone on a busy machine)."""
    from byoc.runtime.toolchain import compiler

    (tmp_path / "held.c").write_text(HELD_CALLER)
    program = tmp_path / "held"
    subprocess.run(
        [*shlex.split(compiler()), "-std=c11", "-O1", "-pthread", "-Wall", "-Wextra", "-Werror",
         "-DBYOC_RT_TEST_AFTER_PUBLISH=hold_after_publish", f"-I{libbyoc.include_dir()}",
         str(tmp_path / "held.c"), str(libbyoc.include_dir() / "threads.c"), "-o", str(program)],
        check=True, capture_output=True, text=True,
    )
    proc = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


FORK_CHILD = """
import os, sys, numpy as np
sys.path.insert(0, {tests!r})
import test_libbyoc as t
import byoc
module, inputs = t.conv_graph(t.CONVS[:3])
model = byoc.compile(module, targets=["cblas"])
want = model(*inputs)
pid = os.fork()
if pid == 0:
    got = model(*inputs)
    ok = all(np.array_equal(g, w) for g, w in zip(got, want))
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_runs_parallel_kernels():
    """The child has none of the parent's workers; it starts its own."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = FORK_CHILD.format(tests=tests)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


WAKING_CHILD = """
import sys, threading, numpy as np
sys.path.insert(0, {tests!r})
import test_libbyoc as t
import byoc
from byoc.runtime import libbyoc
module, inputs = t.conv_graph(t.CONVS[:3])
model = byoc.compile(module, targets=["cblas"])
byoc.set_threads(1)
want = model(*inputs)
bad = []
def run():
    for _ in range(3):
        if not all(np.array_equal(g, w) for g, w in zip(model(*inputs), want)):
            bad.append(1)
for count in (2, 3):
    byoc.set_threads(count)
    run()
    threads = [threading.Thread(target=run) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
# The loops above take about a millisecond: on a busy machine the workers may
# not have been scheduled once in it, let alone gone to sleep. Give them time
# to fall asleep between calls until a call has woken one (or 20 s passed).
import time
deadline = time.monotonic() + 20
while libbyoc.pool_stats()["wake_ns"] == 0 and time.monotonic() < deadline:
    time.sleep(0.02)
    run()
stats = libbyoc.pool_stats()
assert stats["loops"] > 0 and stats["backed_off"] == 0, stats
assert stats["wakes"] > 0 and stats["wake_ns"] > 0, stats  # woken workers were timed
sys.exit(3 if bad else 0)
"""


def test_workers_that_never_spin_wake_for_every_loop_and_are_right():
    """$BYOC_POOL_SPIN_US=0: workers sleep after every loop, so each loop wakes
    them (the condition variable's path, hard); $BYOC_POOL_BACKOFF=0: no loop
    is run alone for late workers. Results at 2 and 3 threads, from several
    Python threads at once, equal the 1-thread ones."""
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "BYOC_POOL_SPIN_US": "0", "BYOC_POOL_BACKOFF": "0"}
    code = WAKING_CHILD.format(tests=tests)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr


BATCHING_CHILD = """
import cffi
from byoc.runtime import libbyoc
libbyoc.threads()  # loads libbyoc
ffi = cffi.FFI()
ffi.cdef("void byoc_rt_parallel_for(int64_t, void (*)(void *, int64_t), void *);")
process = ffi.dlopen(None)
for threads in (2, 3):
    libbyoc.set_threads(threads)
    ran = [0] * 1000
    @ffi.callback("void(void *, int64_t)")
    def task(context, index):
        ran[index] += 1
    start = libbyoc.pool_stats()
    process.byoc_rt_parallel_for(len(ran), task, ffi.NULL)
    end = libbyoc.pool_stats()
    assert ran == [1] * len(ran), [i for i, r in enumerate(ran) if r != 1]
    change = {k: end[k] - start[k] for k in start}
    if change["loops"] == 1:  # on the pool (else alone: a busy machine)
        print(change["claims"])
"""


@pytest.mark.parametrize("batch_us", ["0", "1000000"])
def test_a_thread_claims_runs_of_chunks(batch_us):
    """A claim takes as many chunks as run in $BYOC_POOL_BATCH_US (one with 0),
    at most a (2 x threads)th of those left, so each claim takes a part of what
    is left (a thousand chunks in a few dozen claims, whichever threads
    claim them) and every chunk runs once."""
    env = {**os.environ, "BYOC_POOL_BATCH_US": batch_us}
    proc = subprocess.run([sys.executable, "-c", BATCHING_CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    for claims in map(int, proc.stdout.split()):
        assert claims == 1000 if batch_us == "0" else 2 <= claims <= 100


def test_the_library_is_built_once_and_named_by_its_build():
    path = libbyoc.library()
    assert path.name == f"libbyoc_runtime_{libbyoc.build_key()[:16]}.so"
    assert libbyoc.library() == path
    assert f"-I{libbyoc.include_dir()}" in libbyoc.compile_flags()


def test_codegens_in_threads_build_the_library_once(tmp_path, monkeypatch):
    """cblas's and ccompiler's codegens ask for libbyoc at once: one thread
    builds it, the other waits and gets the same file."""
    libbyoc.build_key()  # the compiler's version, read before the fake compiler below
    monkeypatch.setenv("BYOC_RUNTIME_DIR", str(tmp_path))
    links = []

    def fake_compiler(cmd, **kwargs):  # noqa: ANN001, ANN202 - subprocess.run's shape
        if "-shared" in cmd:
            links.append(cmd)
            time.sleep(0.2)  # both threads are inside library() meanwhile
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    libbyoc._build.cache_clear()
    monkeypatch.setattr(subprocess, "run", fake_compiler)
    try:
        paths = []
        threads = [threading.Thread(target=lambda: paths.append(libbyoc.library())) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        libbyoc._build.cache_clear()  # the next caller builds in its own folder
    assert len(links) == 1 and len(paths) == 2 and paths[0] == paths[1]
    assert paths[0].parent.parent == tmp_path
    assert [p.name for p in paths[0].parent.iterdir() if p.name.startswith(".build-")] == []


def test_the_library_is_shared_by_every_compile_cache(tmp_path, monkeypatch):
    """It is built into the runtime folder, not into a model cache: a compile
    with an empty cache does not build it again."""
    path = libbyoc.library()
    assert path.parent.parent == libbyoc.runtime_dir()
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    assert libbyoc.library() == path
    assert not (tmp_path / "cache").exists()


def test_a_build_the_compiler_rejects_is_one_clear_error(tmp_path, monkeypatch):
    libbyoc.build_key()
    monkeypatch.setenv("BYOC_RUNTIME_DIR", str(tmp_path))

    def failing_compiler(cmd, **kwargs):  # noqa: ANN001, ANN202 - subprocess.run's shape
        return subprocess.CompletedProcess(cmd, 1, "", "conv2d.c:1:1: error: no")

    libbyoc._build.cache_clear()
    monkeypatch.setattr(subprocess, "run", failing_compiler)
    try:
        with pytest.raises(byoc.ByocError, match="(?s)rejected libbyoc.*error: no"):
            libbyoc.library()
    finally:
        libbyoc._build.cache_clear()
    folder = next(tmp_path.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == [".lock"]  # no half-built library


FAKE_CC = r"""
import pathlib, sys, time
args = sys.argv[1:]
if "--version" in args:
    print("fake-cc 1.0")
    sys.exit(0)
if "-shared" in args:
    folder = pathlib.Path({folder!r})
    with open(folder / "links", "a") as log:
        log.write("link\n")
    # Hold the build until both processes have asked for the library.
    for _ in range(100):
        if len(list(folder.glob("ready-*"))) == 2:
            break
        time.sleep(0.1)
    time.sleep(0.5)
pathlib.Path(args[args.index("-o") + 1]).write_bytes(b"")
"""

ASK = r"""
import os, pathlib, sys
from byoc.runtime import libbyoc
pathlib.Path(sys.argv[1], f"ready-{os.getpid()}").touch()
print(libbyoc.library())
"""


def test_processes_building_at_once_build_the_library_once(tmp_path):
    """Two processes with an empty runtime folder ask for libbyoc at once: one
    builds it while the other waits on the lock, then finds it."""
    (tmp_path / "fake_cc.py").write_text(FAKE_CC.format(folder=str(tmp_path)))
    env = {
        **os.environ,
        "CC": f"{sys.executable} {tmp_path / 'fake_cc.py'}",
        "BYOC_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    procs = [
        subprocess.Popen([sys.executable, "-c", ASK, str(tmp_path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].strip().endswith(".so")
    assert (tmp_path / "links").read_text() == "link\n"


# --- Saved and exported models -----------------------------------------------


def test_a_saved_model_carries_libbyoc(tmp_path, packed_model):
    _, model, module, inputs = packed_model
    model.save(tmp_path / "m.byoc")
    import zipfile

    with zipfile.ZipFile(tmp_path / "m.byoc") as archive:
        names = archive.namelist()
    assert sum(name.startswith("lib/") for name in names) == 2  # libbyoc, then cblas's C
    check(byoc.load(tmp_path / "m.byoc"), module, inputs)


EXPORT_PROGRAM = r"""
#include <stdio.h>
#include "net.h"
int main(int argc, char** argv) {
  static float x[NET_INPUT_0_SIZE], y[NET_OUTPUT_0_SIZE];
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof(float), NET_INPUT_0_SIZE, f) != NET_INPUT_0_SIZE) return 3;
  fclose(f);
  if (net_run(x, y) != 0) return 4;
  f = fopen(argv[2], "wb");
  fwrite(y, sizeof(float), NET_OUTPUT_0_SIZE, f);
  fclose(f);
  return 0;
}
"""


def test_an_exported_library_runs_libbyoc_without_python(tmp_path):
    from byoc.runtime.aot import export_library
    from byoc.runtime.toolchain import compiler

    module, inputs = conv_graph(CONVS[:1])
    model = byoc.compile(module, targets=["cblas"])
    export_library(model, tmp_path / "libnet.so", "net")
    (tmp_path / "main.c").write_text(EXPORT_PROGRAM)
    subprocess.run(
        [compiler(), "main.c", "-o", "main", "-L.", "-lnet", "-Wl,-rpath,$ORIGIN"],
        cwd=tmp_path, check=True, capture_output=True,
    )
    inputs[0].tofile(tmp_path / "x.bin")
    subprocess.run([str(tmp_path / "main"), "x.bin", "y.bin"], cwd=tmp_path, check=True)
    got = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(model(*inputs).shape)
    np.testing.assert_allclose(got, model(*inputs), rtol=1e-6, atol=1e-6)
