"""Ahead-of-time export: a C program links the exported library and runs with no Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import byoc

BIN = Path(sys.executable).parent
TANH_CHAIN = """\
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> (tensor<10x10xf32>, tensor<10x10xf32>) {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.tanh %0 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %3 = relay.subtract %2, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %3, %0 : tensor<10x10xf32>, tensor<10x10xf32>
}
"""

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "net.h"

static int read_all(const char* path, float* data, size_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return 1;
  size_t got = fread(data, sizeof(float), n, f);
  fclose(f);
  return got != n;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  static float in[4][NET_INPUT_0_SIZE];
  static float out0[NET_OUTPUT_0_SIZE], out1[NET_OUTPUT_1_SIZE];
  if (read_all(argv[1], &in[0][0], 4 * NET_INPUT_0_SIZE)) return 3;
  int32_t status = net_run(in[0], in[1], in[2], in[3], out0, out1);
  if (status != 0) return 4;
  FILE* f = fopen(argv[2], "wb");
  if (!f) return 5;
  fwrite(out0, sizeof(float), NET_OUTPUT_0_SIZE, f);
  fwrite(out1, sizeof(float), NET_OUTPUT_1_SIZE, f);
  fclose(f);
  return 0;
}
"""


def test_c_program_runs_the_exported_model(tmp_path):
    model_path = tmp_path / "model.mlir"
    model_path.write_text(TANH_CHAIN)
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(model_path), "--emit-library", "--annotate=ccompiler", "--name", "net", "-o", str(tmp_path / "libnet.so")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "net.h").exists()
    (tmp_path / "main.c").write_text(PROGRAM)
    build = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-I", str(tmp_path),
         "-L", str(tmp_path), "-lnet", f"-Wl,-rpath,{tmp_path}", "-o", str(tmp_path / "main")],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr

    rng = np.random.default_rng(3)
    inputs = rng.standard_normal((4, 10, 10)).astype(np.float32)
    inputs.tofile(tmp_path / "in.bin")
    run = subprocess.run([str(tmp_path / "main"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], env={}, capture_output=True)
    assert run.returncode == 0, run.stderr
    out = np.fromfile(tmp_path / "out.bin", dtype=np.float32).reshape(2, 10, 10)
    want = byoc.run_reference(byoc.runtime.build.load_source(TANH_CHAIN), list(inputs))
    np.testing.assert_allclose(out[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], want[1], rtol=1e-6)


def test_bad_library_name_is_an_error(tmp_path):
    model_path = tmp_path / "model.mlir"
    model_path.write_text(TANH_CHAIN)
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(model_path), "--emit-library", "--name", "x; rm -rf /", "-o", str(tmp_path / "l.so")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "not a C identifier" in proc.stderr
    assert "Traceback" not in proc.stderr


MLP = """\
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = relay.nn.bias_add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = relay.nn.relu %1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = relay.tanh %2 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %3 : tensor<4x16xf32>
}
"""

MLP_PROGRAM = r"""
#include <stdio.h>
#include "mlp.h"

int main(void) {
  static float x[MLP_INPUT_0_SIZE], w[MLP_INPUT_1_SIZE], b[MLP_INPUT_2_SIZE], y[MLP_OUTPUT_0_SIZE];
  for (int i = 0; i < MLP_INPUT_0_SIZE; ++i) x[i] = (float)(i % 7) * 0.25f - 0.5f;
  for (int i = 0; i < MLP_INPUT_1_SIZE; ++i) w[i] = (float)(i % 5) * 0.125f - 0.25f;
  for (int i = 0; i < MLP_INPUT_2_SIZE; ++i) b[i] = (float)(i % 3) * 0.1f;
  if (mlp_run(x, w, b, y) != 0) return 1;
  for (int i = 0; i < MLP_OUTPUT_0_SIZE; ++i) printf("%.9g\n", y[i]);
  return 0;
}
"""


def test_library_with_a_vendor_backend(tmp_path):
    """cblas's OpenBLAS flags travel with its C into the exported library."""
    model_path = tmp_path / "mlp.mlir"
    model_path.write_text(MLP)
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(model_path), "--emit-library", "--annotate=cblas,ccompiler", "--name", "mlp", "-o", str(tmp_path / "libmlp.so")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "main.c").write_text(MLP_PROGRAM)
    build = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-I", str(tmp_path),
         "-L", str(tmp_path), "-lmlp", f"-Wl,-rpath,{tmp_path}", "-o", str(tmp_path / "main")],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "main")], env={}, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = np.array([float(v) for v in run.stdout.split()], np.float32).reshape(4, 16)
    x = ((np.arange(32) % 7) * 0.25 - 0.5).astype(np.float32).reshape(4, 8)
    w = ((np.arange(128) % 5) * 0.125 - 0.25).astype(np.float32).reshape(16, 8)
    b = ((np.arange(16) % 3) * np.float32(0.1)).astype(np.float32)
    want = np.tanh(np.maximum(x @ w.T + b, 0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def emit_library(model_path, out_dir, *flags, env=None):
    return subprocess.run(
        [str(BIN / "byoc-translate"), str(model_path), "--emit-library", "--name", "net",
         "-o", str(out_dir / "libnet.so"), *flags],
        capture_output=True,
        text=True,
        env=env,
    )


def test_emit_library_from_a_compile_cache_hit(tmp_path):
    """A cached model keeps its backends' C and link flags (cblas.h, OpenMP)."""
    import os

    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    model_path = tmp_path / "mlp.mlir"
    model_path.write_text(MLP)
    models = tmp_path / "cache" / "models"
    for attempt in ("miss", "hit"):
        entries = sorted(models.rglob("*")) if models.exists() else []
        assert bool(entries) == (attempt == "hit")
        out = tmp_path / attempt
        out.mkdir()
        proc = emit_library(model_path, out, "--annotate=cblas,ccompiler", env=env)
        assert proc.returncode == 0, (attempt, proc.stderr)
        assert (out / "libnet.so").exists() and (out / "net.h").exists()
    assert sorted(models.rglob("*")) == entries  # the second export was a hit


def test_a_failed_export_writes_nothing(tmp_path, monkeypatch):
    from byoc.frontend.diagnostics import ByocError
    from byoc.runtime.aot import export_library

    model = byoc.compile(MLP, targets=["cblas", "ccompiler"])
    monkeypatch.setenv("CC", "false")
    with pytest.raises(ByocError, match="linking"):
        export_library(model, tmp_path / "libnet.so", "net")
    assert list(tmp_path.iterdir()) == []


CNN_PROGRAM = r"""
#include <stdio.h>
#include "net.h"

int main(int argc, char** argv) {
  static float x[NET_INPUT_0_SIZE], y[NET_OUTPUT_0_SIZE];
  FILE* f = fopen(argv[1], "rb");
  if (argc != 2 || !f || fread(x, sizeof(float), NET_INPUT_0_SIZE, f) != NET_INPUT_0_SIZE) return 2;
  fclose(f);
  if (net_run(x, y) != 0) return 1;
  for (int i = 0; i < NET_OUTPUT_0_SIZE; ++i) printf("%.9g\n", y[i]);
  return 0;
}
"""


def tour_model() -> Path:
    """The README tour's model: SqueezeNet from the onnx wheel (`byoc-models squeezenet`)."""
    from byoc.frontend.onnx.shipped import light_model_path

    return light_model_path("squeezenet")


@pytest.mark.parametrize(
    "model_path",
    [lambda: Path(__file__).parent.parent / "examples" / "cnn.onnx", tour_model],
    ids=["cnn", "squeezenet-tour"],
)
def test_tour_library_runs_from_a_copy_with_no_build_paths(tmp_path, model_path):
    """The README tour's model (and the small CNN of examples/) on cblas: the
    library and the OpenBLAS and libbyoc it ships run from another directory,
    and name no path of the build machine."""
    import shutil

    from byoc.runtime.elf import dynamic_entries

    built = tmp_path / "built"
    built.mkdir()
    cnn = model_path()
    proc = emit_library(cnn, built, "--annotate=cblas,ccompiler")
    assert proc.returncode == 0, proc.stderr
    shipped = tmp_path / "elsewhere" / "lib"
    shutil.copytree(built, shipped)
    shutil.rmtree(built)
    assert (shipped / "libscipy_openblas.so").exists()

    dynamic = dynamic_entries(shipped / "libnet.so")
    # What cblas calls travels with it: OpenBLAS (sgemm) and libbyoc (the
    # convolutions on packed weights; all of SqueezeNet's run there).
    beside = [name for name in dynamic["NEEDED"] if (shipped / name).exists()]
    assert beside and all(
        name == "libscipy_openblas.so" or name.startswith("libbyoc_runtime_") for name in beside
    ), dynamic["NEEDED"]
    assert dynamic["RUNPATH"] + dynamic["RPATH"] == ["$ORIGIN"]
    for value in (v for values in dynamic.values() for v in values):
        assert "/" not in value.replace("$ORIGIN", ""), value
    readelf = shutil.which("readelf")
    if readelf:  # the system's reader agrees with ours
        text = subprocess.run([readelf, "-d", str(shipped / "libnet.so")], capture_output=True, text=True).stdout
        assert "[$ORIGIN]" in text and sys.prefix not in text and str(tmp_path) not in text

    (tmp_path / "main.c").write_text(CNN_PROGRAM)
    program = tmp_path / "elsewhere" / "main"
    build = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-I", str(shipped),
         "-L", str(shipped), "-lnet", "-Wl,-rpath,$ORIGIN/lib", "-o", str(program)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    module = byoc.runtime.build.load_source(str(cnn))
    main = byoc.runtime.build.main_function(module)
    [x_type] = main.function_type.inputs.data
    x = np.random.default_rng(0).standard_normal(tuple(x_type.get_shape())).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    run = subprocess.run([str(program), str(tmp_path / "x.bin")], env={}, capture_output=True, text=True, cwd="/")
    assert run.returncode == 0, run.stderr
    want = byoc.run_reference(module, [x])[0]
    got = np.array([float(v) for v in run.stdout.split()], np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_run_time_path_into_the_build_machine_is_refused(tmp_path):
    from byoc.frontend.diagnostics import ByocError
    from byoc.runtime.aot import export_library

    model = byoc.compile(TANH_CHAIN, targets=["ccompiler"])
    model.artifacts[0].link_flags.append("-Wl,-rpath,/opt/vendor/lib")
    try:
        with pytest.raises(ByocError, match="would depend on /opt/vendor/lib"):
            export_library(model, tmp_path / "libnet.so", "net")
    finally:
        model.artifacts[0].link_flags.pop()
    assert list(tmp_path.iterdir()) == []
