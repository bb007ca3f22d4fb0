"""Ahead-of-time export: a C program links the exported library and runs with no Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

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
