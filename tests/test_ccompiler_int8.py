"""ccompiler's int8 kernels (backends/ccompiler_int8.py) against the reference
bit for bit: conv2d and dense chains with what their epilogue fuses (bias,
requantize, clip, and the quantized adds after them: a residual of the
output's shape, a bias broadcast along the channels), odd shapes that leave
partial register blocks, uint8 and int8 data, per-tensor and per-channel."""

from __future__ import annotations

import numpy as np
import pytest

import byoc
from portable_int8 import run_portably
from byoc.backends.ccompiler_int8 import match_chain
from byoc.dialects import relay
from byoc.frontend.parse import parse_text

F32 = np.float32


def _dense(array: np.ndarray, element: str) -> str:
    """`relay.constant` of `array`."""
    shape = "x".join(str(n) for n in array.shape)
    typ = f"tensor<{shape}x{element}>" if shape else f"tensor<{element}>"
    return f"relay.constant dense<{array.tolist()}> : {typ}"


def fused_model(
    dtype: str, per_channel: bool, channels: int = 6, size: int = 3, zero_weight_points: bool = False
) -> str:
    """A conv2d chain (`channels` -> `channels`, `size`x`size` kernel, 7x9
    image) and a dense chain (13 rows, depth 20, 11 units), each requantized
    and clipped, then added to a residual (the chain on the right) with a clip,
    then to a per-channel constant (the chain on the left). Weight zero points
    are not zero when `per_channel` (per-channel zeros when `zero_weight_points`)."""
    rng = np.random.default_rng(17)
    q = "ui8" if dtype == "uint8" else "i8"
    low, high = (0, 255) if dtype == "uint8" else (-128, 127)

    def zp() -> int:
        return int(rng.integers(low + 20, high - 20))

    def scales(n: int, base: float) -> np.ndarray:
        if not per_channel:
            return np.asarray(base, F32)
        return (base * rng.uniform(0.5, 2.0, n)).astype(F32)

    def tensor(shape, element: str) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{element}>"

    image = (1, channels, 7, 9)
    conv_out, dense_out = image, (13, 11)
    lines = [
        f"func.func @main(%x: {tensor(image, 'f32')}, %v: tensor<13x20xf32>, %u: tensor<13x11xf32>)"
        f" -> ({tensor(image, 'f32')}, tensor<13x11xf32>) {{",
        f"  %xs = {_dense(np.asarray(0.05, F32), 'f32')}",
        f"  %xz = {_dense(np.asarray(zp(), np.int32), 'i32')}",
        f"  %us = {_dense(np.asarray(0.07, F32), 'f32')}",
        f"  %uz = {_dense(np.asarray(zp(), np.int32), 'i32')}",
        f"  %zero = {_dense(np.asarray(0, np.int32), 'i32')}",
        f'  %qx = relay.qnn.quantize %x, %xs, %xz {{out_dtype = "{dtype}"}} : ({tensor(image, "f32")}, tensor<f32>, tensor<i32>) -> {tensor(image, q)}',
        f'  %qv = relay.qnn.quantize %v, %xs, %xz {{out_dtype = "{dtype}"}} : (tensor<13x20xf32>, tensor<f32>, tensor<i32>) -> {tensor((13, 20), q)}',
        f'  %qu = relay.qnn.quantize %u, %us, %uz {{out_dtype = "{dtype}"}} : (tensor<13x11xf32>, tensor<f32>, tensor<i32>) -> {tensor((13, 11), q)}',
    ]
    outputs = []
    for name, units, weight_shape, out_shape in (
        ("c", channels, (channels, channels, size, size), conv_out),
        ("d", 11, (11, 20), dense_out),
    ):
        data = "%qx" if name == "c" else "%qv"
        data_type = tensor(image, q) if name == "c" else tensor((13, 20), q)
        channel = 1 if name == "c" else 1
        weight = rng.integers(-128, 128, weight_shape).astype(np.int8)
        w_scale = scales(units, 0.02)
        w_zero = (
            rng.integers(-5, 6, units).astype(np.int32) if per_channel else np.asarray(0, np.int32)
        )
        if zero_weight_points:
            w_zero = np.zeros(units, np.int32)
        in_scale = (np.float32(0.05) * w_scale).astype(F32)
        pshape = (units,) if per_channel else ()
        pad = size // 2
        attrs = f" {{padding = array<i64: {pad}, {pad}, {pad}, {pad}>}}" if name == "c" else ""
        root = "relay.qnn.conv2d" if name == "c" else "relay.qnn.dense"
        out = tensor(out_shape, q)
        acc = tensor(out_shape, "i32")
        ptype = tensor(pshape, "f32") if pshape else "tensor<f32>"
        ztype = tensor(pshape, "i32") if pshape else "tensor<i32>"
        bias_const = rng.integers(low, high + 1, units).astype(np.int32)
        bias_shape = (units, 1, 1) if name == "c" else (units,)
        lines += [
            f"  %{name}w = {_dense(weight, 'i8')}",
            f"  %{name}ws = {_dense(w_scale, 'f32')}",
            f"  %{name}wz = {_dense(w_zero, 'i32')}",
            f"  %{name}is = {_dense(in_scale, 'f32')}",
            f"  %{name}b = {_dense(rng.integers(-3000, 3000, units).astype(np.int32), 'i32')}",
            f"  %{name}os = {_dense(np.asarray(0.3 if name == 'c' else 0.2, F32), 'f32')}",
            f"  %{name}oz = {_dense(np.asarray(zp(), np.int32), 'i32')}",
            f"  %{name}as = {_dense(np.asarray(0.35, F32), 'f32')}",
            f"  %{name}az = {_dense(np.asarray(zp(), np.int32), 'i32')}",
            f"  %{name}k = {_dense(bias_const.reshape(bias_shape), q)}",
            f"  %{name}ks = {_dense(np.asarray(0.1, F32), 'f32')}",
            f"  %{name}kz = {_dense(np.asarray(zp(), np.int32), 'i32')}",
            f"  %{name}fs = {_dense(np.asarray(0.4, F32), 'f32')}",
            f"  %{name}fz = {_dense(np.asarray(zp(), np.int32), 'i32')}",
            f"  %{name}0 = {root} {data}, %{name}w, %xz, %{name}wz, %xs, %{name}ws{attrs} : "
            f"({data_type}, {tensor(weight_shape, 'i8')}, tensor<i32>, {ztype}, tensor<f32>, {ptype}) -> {acc}",
            f"  %{name}1 = relay.nn.bias_add %{name}0, %{name}b {{axis = {channel} : i64}} : ({acc}, tensor<{units}xi32>) -> {acc}",
            f'  %{name}2 = relay.qnn.requantize %{name}1, %{name}is, %zero, %{name}os, %{name}oz {{axis = {channel} : i64, out_dtype = "{dtype}"}} : '
            f"({acc}, {ptype}, tensor<i32>, tensor<f32>, tensor<i32>) -> {out}",
            f"  %{name}3 = relay.clip %{name}2 {{a_min = {low + 5}.0 : f64, a_max = {high - 9}.5 : f64}} : ({out}) -> {out}",
        ]
        residual, residual_type = ("%qx", tensor(image, q)) if name == "c" else ("%qu", tensor((13, 11), q))
        lines += [
            f"  %{name}4 = relay.qnn.add {residual}, %{name}3, "
            + ("%xs, %xz" if name == "c" else "%us, %uz")
            + f", %{name}os, %{name}oz, %{name}as, %{name}az : ({residual_type}, {out}, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> {out}",
            f"  %{name}5 = relay.clip %{name}4 {{a_min = {low + 2}.0 : f64, a_max = {high - 30}.0 : f64}} : ({out}) -> {out}",
            f"  %{name}6 = relay.qnn.add %{name}5, %{name}k, %{name}as, %{name}az, %{name}ks, %{name}kz, %{name}fs, %{name}fz : "
            f"({out}, {tensor(bias_shape, q)}, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> {out}",
            f"  %{name}7 = relay.qnn.dequantize %{name}6, %{name}fs, %{name}fz : ({out}, tensor<f32>, tensor<i32>) -> {tensor(out_shape, 'f32')}",
        ]
        outputs.append((f"%{name}7", tensor(out_shape, "f32")))
    lines += [
        f"  func.return {', '.join(v for v, _ in outputs)} : {', '.join(t for _, t in outputs)}",
        "}",
    ]
    return "\n".join(lines)


def inputs(channels: int = 6) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [
        (rng.standard_normal((1, channels, 7, 9)) * 3).astype(F32),
        (rng.standard_normal((13, 20)) * 3).astype(F32),
        (rng.standard_normal((13, 11)) * 4).astype(F32),
    ]


def _annotated(text: str):
    from byoc.backends import get_backend
    from byoc.passes.annotate import annotate

    module = parse_text(text)
    annotate(module, [get_backend("ccompiler")])
    return next(iter(module.ops))


CASES = [("uint8", True), ("int8", False), ("uint8", False), ("int8", True)]


@pytest.mark.parametrize(
    "dtype,per_channel,channels,size",
    [(*case, 6, 3) for case in CASES] + [("uint8", True, 16, 1), ("int8", False, 16, 1)],
)
def test_fused_adds_match_the_reference(dtype, per_channel, channels, size):
    """3x3 kernels of 54 taps (patches padded to 56), 1x1 of 16 (not padded)."""
    text = fused_model(dtype, per_channel, channels, size)
    args = inputs(channels)
    want = byoc.run_reference(parse_text(text), args)
    model = byoc.compile(text, targets=["ccompiler"])
    for i, (got, expected) in enumerate(zip(model(*args), want)):
        np.testing.assert_array_equal(got, expected, err_msg=f"output {i}")
    # Not everything saturated: the comparison sees real values.
    assert all(len(np.unique(w)) > 12 for w in want)


def test_the_kernels_take_both_adds_and_their_clips():
    main = _annotated(fused_model("uint8", True))
    chains = [
        match_chain(op)
        for op in main.body.block.ops
        if isinstance(op, relay.QnnConv2dOp | relay.QnnDenseOp)
    ]
    assert [len(c.adds) for c in chains] == [2, 2]
    assert [c.adds[0].chain_is_lhs for c in chains] == [False, False]
    assert all(c.adds[0].clip is not None and c.adds[1].clip is None for c in chains)
    # The model's dequantize of the last add ends each chain: the kernel writes floats.
    assert all(isinstance(c.ops[-2], relay.QnnAddOp) for c in chains)
    assert all(c.dequantize is not None and c.result.owner is c.dequantize for c in chains)


def test_constant_weights_are_packed_at_compile_time():
    """ccompiler's alter_op: conv2d and dense read their weights through ops
    unpacking libbyoc's packed weight (`[ceil(N/16), ceil(K/4), 16, 4]`, the
    conv2d's rows in the patches' order i, j, c); the dense's data zero point
    becomes 0, its weight sums folded into the bias."""
    from byoc.backends.ccompiler_int8 import packed_weight, vnni_packed
    from byoc.dialects.relay.qnn import constant_value

    text = fused_model("uint8", True)
    before = next(iter(parse_text(text).ops))
    conv0 = next(op for op in before.body.block.ops if isinstance(op, relay.QnnConv2dOp))
    dense0 = next(op for op in before.body.block.ops if isinstance(op, relay.QnnDenseOp))
    weight = constant_value(conv0.kernel)
    main = _annotated(text)
    conv = next(op for op in main.body.block.ops if isinstance(op, relay.QnnConv2dOp))
    packed = constant_value(packed_weight(conv))
    assert packed.shape == (1, 14, 16, 4)  # 6 channels, 54 taps
    rows = weight.transpose(0, 2, 3, 1).reshape(6, 54)
    np.testing.assert_array_equal(packed.transpose(0, 2, 1, 3).reshape(16, 56)[:6, :54], rows)
    assert not packed.transpose(0, 2, 1, 3).reshape(16, 56)[6:].any()
    assert not packed.transpose(0, 2, 1, 3).reshape(16, 56)[:, 54:].any()
    np.testing.assert_array_equal(packed, vnni_packed(rows))

    dense = next(op for op in main.body.block.ops if isinstance(op, relay.QnnDenseOp))
    np.testing.assert_array_equal(constant_value(packed_weight(dense)), vnni_packed(constant_value(dense0.weight)))
    assert not constant_value(dense.operands[2]).any()
    zx = int(constant_value(dense0.operands[2]))
    w = constant_value(dense0.weight).astype(np.int64)
    zw = constant_value(dense0.operands[3]).astype(np.int64)
    bias0 = constant_value(next(iter(dense0.results[0].uses)).operation.bias)
    bias = constant_value(next(iter(dense.results[0].uses)).operation.bias)
    np.testing.assert_array_equal(bias, bias0 - zx * (w.sum(axis=1) - 20 * zw))
    # The unpacking ops (what code other than libbyoc runs) give the weights back.
    got = byoc.run_reference(main.parent_op(), inputs())
    want = byoc.run_reference(parse_text(text), inputs())
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w_)


DENSE_NO_BIAS = """
func.func @main(%v: tensor<7x33xf32>) -> tensor<7x9xf32> {
  %s = relay.constant dense<0.05> : tensor<f32>
  %z = relay.constant dense<37> : tensor<i32>
  %q = relay.qnn.quantize %v, %s, %z {out_dtype = "uint8"} : (tensor<7x33xf32>, tensor<f32>, tensor<i32>) -> tensor<7x33xui8>
  %w = relay.constant dense<WEIGHT> : tensor<9x33xi8>
  %wz = relay.constant dense<[3, -2, 0, 1, 5, -4, 2, 0, -1]> : tensor<9xi32>
  %ws = relay.constant dense<0.01> : tensor<f32>
  %d = relay.qnn.dense %q, %w, %z, %wz, %s, %ws : (tensor<7x33xui8>, tensor<9x33xi8>, tensor<i32>, tensor<9xi32>, tensor<f32>, tensor<f32>) -> tensor<7x9xi32>
  %is = relay.constant dense<0.0005> : tensor<f32>
  %os = relay.constant dense<0.08> : tensor<f32>
  %oz = relay.constant dense<120> : tensor<i32>
  %r = relay.qnn.requantize %d, %is, %z, %os, %oz {out_dtype = "uint8"} : (tensor<7x9xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<7x9xui8>
  %y = relay.qnn.dequantize %r, %os, %oz : (tensor<7x9xui8>, tensor<f32>, tensor<i32>) -> tensor<7x9xf32>
  func.return %y : tensor<7x9xf32>
}
"""


def test_dense_without_a_bias_gets_one_for_its_zero_point():
    weight = np.random.default_rng(5).integers(-128, 128, (9, 33)).astype(np.int8)
    text = DENSE_NO_BIAS.replace("WEIGHT", str(weight.tolist()))
    main = _annotated(text)
    dense = next(op for op in main.body.block.ops if isinstance(op, relay.QnnDenseOp))
    (use,) = dense.results[0].uses
    assert isinstance(use.operation, relay.BiasAddOp)
    x = (np.random.default_rng(6).standard_normal((7, 33)) * 4).astype(F32)
    want = byoc.run_reference(parse_text(text), [x])[0]
    got = byoc.compile(text, targets=["ccompiler"])(x)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 12


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_per_channel_zero_weight_points_become_a_scalar(dtype):
    """alter_op: a weight zero point of per-channel zeros (quantize_static's
    symmetric weights) becomes the scalar 0, scales still per channel; the
    result is unchanged."""
    from byoc.dialects.relay.qnn import constant_value

    text = fused_model(dtype, True, zero_weight_points=True)
    main = _annotated(text)
    products = [op for op in main.body.block.ops if isinstance(op, relay.QnnConv2dOp | relay.QnnDenseOp)]
    assert len(products) == 2
    for op in products:
        zero = constant_value(op.operands[3])
        assert zero.shape == () and zero == 0
        assert constant_value(op.operands[5]).shape != ()
    want = byoc.run_reference(parse_text(text), inputs())
    got = byoc.compile(text, targets=["ccompiler"])(*inputs())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def odd_model(dtype: str) -> str:
    """Products whose shapes leave partial blocks everywhere in libbyoc: 70
    output channels (4 whole blocks of 16 and 6 lanes; 4 vectors and 1 per
    register block), 13 and 99 rows (not multiples of 6), depth 37 (a partial
    group of 4 bytes) and 45 (patches padded to 48), batches of 2, strided,
    dilated and unevenly padded conv2ds, per-channel weight zero points that
    are not zero (the data sums)."""
    rng = np.random.default_rng(23)
    q = "ui8" if dtype == "uint8" else "i8"
    low, high = (0, 255) if dtype == "uint8" else (-128, 127)

    def t(shape, element):
        return f"tensor<{'x'.join(map(str, shape))}x{element}>"

    lines = [
        f"func.func @main(%x: {t((2, 5, 9, 11), 'f32')}, %v: {t((2, 13, 37), 'f32')}) -> "
        f"({t((2, 70, 9, 11), 'f32')}, {t((2, 70, 4, 5), 'f32')}, {t((2, 70, 4, 11), 'f32')}, {t((2, 13, 70), 'f32')}) {{",
        f"  %s = {_dense(np.asarray(0.05, F32), 'f32')}",
        f"  %z = {_dense(np.asarray(int(rng.integers(low + 30, high - 30)), np.int32), 'i32')}",
        f"  %zero = {_dense(np.asarray(0, np.int32), 'i32')}",
        f"  %os = {_dense(np.asarray(0.3, F32), 'f32')}",
        f"  %oz = {_dense(np.asarray(int(rng.integers(low + 30, high - 30)), np.int32), 'i32')}",
        f"  %ws = {_dense((0.02 * rng.uniform(0.5, 2.0, 70)).astype(F32), 'f32')}",
        f"  %wz = {_dense(rng.integers(-4, 5, 70).astype(np.int32), 'i32')}",
        f"  %is = {_dense((0.001 * rng.uniform(0.5, 2.0, 70)).astype(F32), 'f32')}",
        f'  %qx = relay.qnn.quantize %x, %s, %z {{out_dtype = "{dtype}"}} : ({t((2, 5, 9, 11), "f32")}, tensor<f32>, tensor<i32>) -> {t((2, 5, 9, 11), q)}',
        f'  %qv = relay.qnn.quantize %v, %s, %z {{out_dtype = "{dtype}"}} : ({t((2, 13, 37), "f32")}, tensor<f32>, tensor<i32>) -> {t((2, 13, 37), q)}',
    ]
    products = [
        ("c", "relay.qnn.conv2d", "%qx", (2, 5, 9, 11), (70, 5, 3, 3), (2, 70, 9, 11), 1,
         " {padding = array<i64: 1, 1, 1, 1>}"),
        ("k", "relay.qnn.conv2d", "%qx", (2, 5, 9, 11), (70, 5, 3, 3), (2, 70, 4, 5), 1,
         " {strides = array<i64: 2, 2>}"),
        ("g", "relay.qnn.conv2d", "%qx", (2, 5, 9, 11), (70, 5, 3, 3), (2, 70, 4, 11), 1,
         " {padding = array<i64: 2, 1, 0, 3>, dilation = array<i64: 2, 2>, strides = array<i64: 2, 1>}"),
        ("d", "relay.qnn.dense", "%qv", (2, 13, 37), (70, 37), (2, 13, 70), 2, ""),
    ]
    results = []
    for name, root, data, data_shape, w_shape, out_shape, axis, attrs in products:
        weight = rng.integers(-128, 128, w_shape).astype(np.int8)
        lines += [
            f"  %{name}w = {_dense(weight, 'i8')}",
            f"  %{name}0 = {root} {data}, %{name}w, %z, %wz, %s, %ws{attrs} : ({t(data_shape, q)}, "
            f"{t(w_shape, 'i8')}, tensor<i32>, tensor<70xi32>, tensor<f32>, tensor<70xf32>) -> {t(out_shape, 'i32')}",
            f'  %{name}1 = relay.qnn.requantize %{name}0, %is, %zero, %os, %oz {{axis = {axis} : i64, out_dtype = "{dtype}"}} : '
            f"({t(out_shape, 'i32')}, tensor<70xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> {t(out_shape, q)}",
            f"  %{name}2 = relay.qnn.dequantize %{name}1, %os, %oz : ({t(out_shape, q)}, tensor<f32>, tensor<i32>) -> {t(out_shape, 'f32')}",
        ]
        results.append((f"%{name}2", t(out_shape, "f32")))
    lines += [f"  func.return {', '.join(r for r, _ in results)} : {', '.join(t_ for _, t_ in results)}", "}"]
    return "\n".join(lines)


def odd_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(29)
    return [
        (rng.standard_normal((2, 5, 9, 11)) * 3).astype(F32),
        (rng.standard_normal((2, 13, 37)) * 3).astype(F32),
    ]


@pytest.fixture(scope="module", params=["uint8", "int8"])
def odd_case(request):
    """`odd_model(dtype)`'s text, the reference's outputs, and the compiled model."""
    text = odd_model(request.param)
    want = byoc.run_reference(parse_text(text), odd_inputs())
    return text, want, byoc.compile(text, targets=["ccompiler"])


def test_odd_shapes_match_the_reference(odd_case):
    text, want, model = odd_case
    assert model.c_source.count("byoc_rt_int8_products(") >= 4  # and the weight sums
    for i, (got, expected) in enumerate(zip(model(*odd_inputs()), want, strict=True)):
        np.testing.assert_array_equal(got, expected, err_msg=f"output {i}")
        assert len(np.unique(expected)) > 50  # real values, not all saturated


def _cpu_has_vnni() -> bool:
    from pathlib import Path

    info = Path("/proc/cpuinfo")
    flags = info.read_text().split() if info.exists() else []
    return "avx512_vnni" in flags and "avx512bw" in flags


def test_the_products_run_on_vnni_where_the_cpu_has_it():
    from byoc.runtime import libbyoc

    assert libbyoc.int8_uses_vnni() == _cpu_has_vnni()


def test_the_portable_products_match_the_reference(odd_case, tmp_path):
    """libbyoc's loop for CPUs without VNNI ($BYOC_RT_INT8_PORTABLE forces it,
    read once per process: run in a process of its own)."""
    text, want, _ = odd_case
    got = run_portably(text, odd_inputs(), tmp_path)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_libbyoc_int8_builds_without_vnni(tmp_path):
    """The portable loop is what a CPU without AVX-512 VNNI compiles: it builds
    warning-free with VNNI's macro undefined."""
    import shlex
    import subprocess

    from byoc.runtime import libbyoc
    from byoc.runtime.toolchain import compiler

    cmd = [
        *shlex.split(compiler()), *libbyoc._flags(), "-U__AVX512VNNI__", f"-I{libbyoc.SOURCE_DIR}",
        "-c", str(libbyoc.SOURCE_DIR / "int8.c"), "-o", str(tmp_path / "int8.o"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_int8_dense_data_get_zero_point_minus_128():
    """alter_op on a dense of int8 data: zero point -128 (what the kernel reads,
    `x + 128`, minus 0) and `(zx + 128)` times the weight sums in the bias, so
    the kernel sums no weights per call; the result is unchanged."""
    from byoc.dialects.relay.qnn import constant_value

    text = fused_model("int8", True)
    before = next(iter(parse_text(text).ops))
    dense0 = next(op for op in before.body.block.ops if isinstance(op, relay.QnnDenseOp))
    main = _annotated(text)
    dense = next(op for op in main.body.block.ops if isinstance(op, relay.QnnDenseOp))
    assert int(constant_value(dense.operands[2])) == -128
    zx = int(constant_value(dense0.operands[2])) + 128
    w = constant_value(dense0.weight).astype(np.int64)
    zw = constant_value(dense0.operands[3]).astype(np.int64)
    bias0 = constant_value(next(iter(dense0.results[0].uses)).operation.bias)
    bias = constant_value(next(iter(dense.results[0].uses)).operation.bias)
    np.testing.assert_array_equal(bias, bias0 - zx * (w.sum(axis=1) - 20 * zw))
    got = byoc.run_reference(main.parent_op(), inputs())
    want = byoc.run_reference(parse_text(text), inputs())
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w_)


def tall_dense_model() -> str:
    """A quantized dense of 64 rows, depth 128, 64 units (uint8 in and out, so
    it is the model's only loop): tiles of 24 rows, so two whole tiles and a
    last one of 16 (itself two register blocks of 6 and one of 4), with work
    for four chunks (2^19 multiply-adds), so each tile is one."""
    rng = np.random.default_rng(31)
    weight = rng.integers(-128, 128, (64, 128)).astype(np.int8)
    return "\n".join([
        "func.func @main(%q: tensor<64x128xui8>) -> tensor<64x64xui8> {",
        f"  %s = {_dense(np.asarray(0.05, F32), 'f32')}",
        f"  %z = {_dense(np.asarray(131, np.int32), 'i32')}",
        f"  %zero = {_dense(np.asarray(0, np.int32), 'i32')}",
        f"  %ws = {_dense(np.asarray(0.02, F32), 'f32')}",
        f"  %is = {_dense(np.asarray(0.001, F32), 'f32')}",
        f"  %os = {_dense(np.asarray(0.3, F32), 'f32')}",
        f"  %oz = {_dense(np.asarray(120, np.int32), 'i32')}",
        f"  %w = {_dense(weight, 'i8')}",
        "  %d = relay.qnn.dense %q, %w, %z, %zero, %s, %ws : (tensor<64x128xui8>, tensor<64x128xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<64x64xi32>",
        '  %r = relay.qnn.requantize %d, %is, %zero, %os, %oz {axis = 1 : i64, out_dtype = "uint8"} : (tensor<64x64xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<64x64xui8>',
        "  func.return %r : tensor<64x64xui8>",
        "}",
    ])


def test_a_dense_is_one_loop_of_the_pool_with_its_last_short_tile():
    """The last, shorter tile of rows is a chunk of the dense's parallel loop
    (run after it on the caller alone, it was serial): each call is one loop
    of three chunks, whoever runs it (the pool, or its caller alone while the
    pool backs off on a busy machine), and the same answer on 1, 2 or 3 threads."""
    from byoc.runtime import libbyoc

    text = tall_dense_model()
    q = np.random.default_rng(37).integers(0, 256, (64, 128)).astype(np.uint8)
    (want,) = byoc.run_reference(parse_text(text), [q])
    model = byoc.compile(text, targets=["ccompiler"])
    before = byoc.threads()
    try:
        for threads in (1, 2, 3):
            byoc.set_threads(threads)
            start = libbyoc.pool_stats()
            got = model(q)
            after = libbyoc.pool_stats()
            np.testing.assert_array_equal(got, want)
            change = {k: after[k] - start[k] for k in start}
            assert change["loops"] + change["alone"] == 1, change
            assert change["chunks"] == 3 * change["loops"], change
    finally:
        byoc.set_threads(before)
    assert len(np.unique(want)) > 50  # real values, not all saturated
