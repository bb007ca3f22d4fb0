"""ccompiler's int8 stride-1 convolution without im2col (libbyoc's
int8_direct.c, ccompiler_int8.direct_conv_kernel) against the reference bit
for bit: channels that are not a multiple of 4 and output channels not of 8
(partial packed blocks), uneven padding, dilation, a 5x3 and a 1x1 kernel,
batches of 2, uint8 and int8 data, per-tensor and per-channel scales, weight
zero points that are the scalar 0 or per-channel zeros; on 1 to 3 threads, and
on the portable loop that CPUs without VNNI run."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import byoc
from portable_int8 import run_portably
from byoc.dialects import relay
from byoc.frontend.parse import parse_text

F32 = np.float32


def _dense(array: np.ndarray, element: str) -> str:
    shape = "x".join(str(n) for n in array.shape)
    typ = f"tensor<{shape}x{element}>" if shape else f"tensor<{element}>"
    return f"relay.constant dense<{array.tolist()}> : {typ}"


def _t(shape, element: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


IMAGES = {"x": (2, 5, 9, 11), "y": (2, 17, 6, 7), "u": (2, 8, 23, 30)}
"""The model's inputs: 5 channels (2 groups of 4, 3 of them padding), 17
channels for a 1x1 kernel (depth 17), and an image large enough for several
bands of rows on several cores (23 rows: a last, shorter band)."""

CLIPPED = "a"
"""The conv whose requantize a clip narrows (libbyoc requantizes it from its
registers, with the clip's bounds)."""
RESIDUAL = "f"
"""The conv that a quantized add of its input follows (its sums go through a
tile and the generated epilogue, which computes the add)."""
BYTES = "c"
"""The conv whose quantized output the model returns (libbyoc writes the
bytes; the others' dequantize is fused, libbyoc writes floats)."""

CONVS = [
    # name, input, weight shape, output shape, attributes, per-channel zero weight points
    ("a", "x", (70, 5, 3, 3), (2, 70, 9, 11), " {padding = array<i64: 1, 1, 1, 1>}", True),
    ("f", "y", (17, 17, 3, 3), (2, 17, 6, 7), " {padding = array<i64: 1, 1, 1, 1>}", False),
    ("b", "x", (70, 5, 3, 3), (2, 70, 7, 11),
     " {padding = array<i64: 2, 1, 0, 3>, dilation = array<i64: 2, 2>}", False),
    ("c", "x", (13, 5, 5, 3), (2, 13, 9, 8),
     " {padding = array<i64: 2, 0, 2, 1>, dilation = array<i64: 1, 2>}", False),
    ("d", "y", (9, 17, 1, 1), (2, 9, 6, 7), "", True),
    ("e", "u", (20, 8, 3, 3), (2, 20, 23, 30), " {padding = array<i64: 1, 1, 1, 1>}", False),
]


def direct_model(dtype: str) -> str:
    """Every conv of CONVS, requantized per channel (or per tensor for the
    scalar zero weight points) and dequantized."""
    rng = np.random.default_rng(41)
    q = "ui8" if dtype == "uint8" else "i8"
    low, high = (0, 255) if dtype == "uint8" else (-128, 127)
    outs = ", ".join(_t(out, q if name == BYTES else "f32") for name, _, _, out, _, _ in CONVS)
    args = ", ".join(f"%{n}: {_t(shape, 'f32')}" for n, shape in IMAGES.items())
    lines = [
        f"func.func @main({args}) -> ({outs}) {{",
        f"  %s = {_dense(np.asarray(0.05, F32), 'f32')}",
        f"  %z = {_dense(np.asarray(int(rng.integers(low + 30, high - 30)), np.int32), 'i32')}",
        f"  %zero = {_dense(np.asarray(0, np.int32), 'i32')}",
        f"  %os = {_dense(np.asarray(0.3, F32), 'f32')}",
        f"  %oz = {_dense(np.asarray(int(rng.integers(low + 30, high - 30)), np.int32), 'i32')}",
    ]
    for n, shape in IMAGES.items():
        lines.append(
            f'  %q{n} = relay.qnn.quantize %{n}, %s, %z {{out_dtype = "{dtype}"}} : '
            f"({_t(shape, 'f32')}, tensor<f32>, tensor<i32>) -> {_t(shape, q)}"
        )
    results = []
    for name, data, w_shape, out_shape, attrs, per_channel in CONVS:
        units = w_shape[0]
        weight = rng.integers(-128, 128, w_shape).astype(np.int8)
        if per_channel:
            w_scale = (0.02 * rng.uniform(0.5, 2.0, units)).astype(F32)
            in_scale = (0.001 * w_scale / 0.02).astype(F32)
            w_zero = np.zeros(units, np.int32)
        else:
            w_scale, in_scale, w_zero = np.asarray(0.02, F32), np.asarray(0.001, F32), np.asarray(0, np.int32)
        pt = f"tensor<{units}x" if per_channel else "tensor<"
        depth = w_shape[1] * w_shape[2] * w_shape[3]
        out_scale = _dense(np.asarray(0.3 * depth / 45, F32), "f32")
        lines += [
            f"  %{name}w = {_dense(weight, 'i8')}",
            f"  %{name}ws = {_dense(w_scale, 'f32')}",
            f"  %{name}wz = {_dense(w_zero, 'i32')}",
            f"  %{name}is = {_dense(in_scale, 'f32')}",
            f"  %{name}os = {out_scale}",
            f"  %{name}0 = relay.qnn.conv2d %q{data}, %{name}w, %z, %{name}wz, %s, %{name}ws{attrs} : "
            f"({_t(IMAGES[data], q)}, {_t(w_shape, 'i8')}, tensor<i32>, {pt}i32>, tensor<f32>, {pt}f32>) "
            f"-> {_t(out_shape, 'i32')}",
            f'  %{name}1 = relay.qnn.requantize %{name}0, %{name}is, %zero, %{name}os, %oz '
            f'{{axis = 1 : i64, out_dtype = "{dtype}"}} : ({_t(out_shape, "i32")}, {pt}f32>, tensor<i32>, '
            f"tensor<f32>, tensor<i32>) -> {_t(out_shape, q)}",
        ]
        last = f"%{name}1"
        if name == CLIPPED:
            lines.append(
                f"  %{name}c = relay.clip {last} {{a_min = {low + 40}.0 : f64, a_max = {high - 50}.0 : f64}} : "
                f"({_t(out_shape, q)}) -> {_t(out_shape, q)}"
            )
            last = f"%{name}c"
        if name == RESIDUAL:
            lines.append(
                f"  %{name}r = relay.qnn.add {last}, %q{data}, %{name}os, %oz, %s, %z, %{name}os, %oz : "
                f"({_t(out_shape, q)}, {_t(out_shape, q)}, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, "
                f"tensor<f32>, tensor<i32>) -> {_t(out_shape, q)}"
            )
            last = f"%{name}r"
        if name == BYTES:
            results.append(last)
            continue
        lines.append(
            f"  %{name}2 = relay.qnn.dequantize {last}, %{name}os, %oz : ({_t(out_shape, q)}, tensor<f32>, "
            f"tensor<i32>) -> {_t(out_shape, 'f32')}"
        )
        results.append(f"%{name}2")
    lines += [f"  func.return {', '.join(results)} : {outs}", "}"]
    return "\n".join(lines)


def direct_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(43)
    return [(rng.standard_normal(shape) * 3).astype(F32) for shape in IMAGES.values()]


@pytest.fixture(scope="module", params=["uint8", "int8"])
def direct_case(request):
    """`direct_model(dtype)`'s text, the reference's outputs, and the compiled model."""
    text = direct_model(request.param)
    want = byoc.run_reference(parse_text(text), direct_inputs())
    return text, want, byoc.compile(text, targets=["ccompiler"])


def test_stride_one_convs_take_the_direct_kernel(direct_case):
    """Every conv of the model is a call of libbyoc's direct convolution,
    requantized (and dequantized) by libbyoc but for the one with a residual
    add, and no conv copies windows (im2col's `byoc_rt_int8_products`)."""
    _, _, model = direct_case
    source = model.c_source
    assert source.count("byoc_rt_int8_pack_image(") == len(CONVS)
    assert source.count("byoc_rt_int8_conv_products(") == 1  # the residual's, one band
    assert source.count("byoc_rt_int8_conv_requantize(") >= 1  # BYTES
    assert source.count("byoc_rt_int8_conv_dequantize(") >= len(CONVS) - 2
    assert "byoc_rt_int8_products(" not in source


def test_the_direct_convs_match_the_reference_on_1_to_3_threads(direct_case):
    _, want, model = direct_case
    before = byoc.threads()
    try:
        for threads in (1, 2, 3):
            byoc.set_threads(threads)
            got = model(*direct_inputs())
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                np.testing.assert_array_equal(g, w, err_msg=f"output {i}, {threads} threads")
    finally:
        byoc.set_threads(before)
    for w in want:
        assert len(np.unique(w)) > 30  # real values, not all saturated


def test_the_portable_direct_products_match_the_reference(direct_case, tmp_path):
    """libbyoc's loop for CPUs without VNNI ($BYOC_RT_INT8_PORTABLE forces it,
    read once per process: run in a process of its own)."""
    text, want, _ = direct_case
    got = run_portably(text, direct_inputs(), tmp_path)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_direct_weights_are_packed_at_compile_time():
    """alter_op packs a direct conv's OIHW weight as `[ceil(O/8), ceil(C/4), KH,
    KW, 8, 4]` (zeros past O and C) and reads it back through ops that unpack
    it, which give the weight back (what code other than libbyoc runs)."""
    from byoc.backends import get_backend
    from byoc.backends.ccompiler_int8 import direct_packed, packed_weight
    from byoc.dialects.relay.qnn import constant_value
    from byoc.passes.annotate import annotate

    text = direct_model("uint8")
    before = next(iter(parse_text(text).ops))
    weights = [constant_value(op.kernel) for op in before.body.block.ops if isinstance(op, relay.QnnConv2dOp)]
    module = parse_text(text)
    annotate(module, [get_backend("ccompiler")])
    main = next(iter(module.ops))
    convs = [op for op in main.body.block.ops if isinstance(op, relay.QnnConv2dOp)]
    for weight, conv in zip(weights, convs, strict=True):
        packed = constant_value(packed_weight(conv))
        n_out, channels, kh, kw = weight.shape
        assert packed.shape == (-(-n_out // 8), -(-channels // 4), kh, kw, 8, 4)
        np.testing.assert_array_equal(packed, direct_packed(weight))
        oihw = packed.transpose(0, 4, 1, 5, 2, 3).reshape(packed.shape[0] * 8, packed.shape[1] * 4, kh, kw)
        np.testing.assert_array_equal(oihw[:n_out, :channels], weight)
        assert not oihw[n_out:].any() and not oihw[:, channels:].any()
    got = byoc.run_reference(module, direct_inputs())
    want = byoc.run_reference(parse_text(text), direct_inputs())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_libbyoc_direct_builds_without_vnni_and_without_avx512(tmp_path):
    """The portable loops and the SSE2 interleave are what other CPUs compile:
    int8_direct.c and quantize.c build warning-free for Haswell and x86-64-v2."""
    import shlex

    from byoc.runtime import libbyoc
    from byoc.runtime.toolchain import compiler

    flags = [f for f in libbyoc._flags() if not f.startswith("-march")]
    for march in ("haswell", "x86-64-v2"):
        for source in ("int8_direct.c", "quantize.c"):
            cmd = [
                *shlex.split(compiler()), *flags, f"-march={march}", f"-I{libbyoc.SOURCE_DIR}",
                "-c", str(libbyoc.SOURCE_DIR / source), "-o", str(tmp_path / "out.o"),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            assert proc.returncode == 0, f"{march}, {source}: {proc.stderr}"
