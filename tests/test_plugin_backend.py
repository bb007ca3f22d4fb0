"""A third-party backend installed with pip is used with --annotate=<name>, byoc unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "byoc_vendor_add"
BIN = Path(sys.executable).parent

MODEL = """\
func.func @main(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = relay.add %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = relay.nn.relu %0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = relay.add %1, %c : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %3 = relay.tanh %2 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = relay.add %3, %3 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %4, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The plugin pip-installed into a private directory, on the tools' path.

    Installing into the test environment itself would leak into other runs;
    entry points are found the same way from any directory on sys.path.
    """
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(FIXTURE)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return {**os.environ, "PYTHONPATH": str(target)}


def run(env, *args):
    return subprocess.run([str(BIN / args[0]), *map(str, args[1:])], capture_output=True, text=True, env=env)


def test_plugin_partitions_with_its_name(installed, tmp_path):
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    proc = run(installed, "byoc-opt", model, "--annotate=vendoradd", "--partition", "-t", "report")
    assert proc.returncode == 0, proc.stderr
    assert "backend vendoradd: 2 function(s), 3 op(s)" in proc.stdout
    # The broadcasting add is declined with the plugin's own reason.
    assert "vendoradd does not broadcast" in proc.stdout


def test_plugin_runs_and_matches_the_reference(installed, tmp_path):
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    proc = run(installed, "byoc-run", model, "--annotate=vendoradd,ccompiler", "--check")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "vendoradd: 2 function(s)" in proc.stdout
    assert "matches the reference" in proc.stdout


def test_plugin_c_is_shown(installed, tmp_path):
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    proc = run(installed, "byoc-translate", model, "--emit-c", "--annotate=vendoradd")
    assert proc.returncode == 0, proc.stderr
    assert "vendor_add_f32(" in proc.stdout and "vendor_relu_f32(" in proc.stdout


CONSTANTS = """\
func.func @main(%a: tensor<4x4xf32>, %v: tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %k = relay.constant dense<[[1.5, -2.0, 0.25, 1.0e-5], [1.0, 2.0, 3.0, 4.0], [0.0, -0.5, 0.5, 9.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %0 = relay.add %a, %k : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = relay.nn.relu %0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = relay.add %1, %v : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %3 = relay.add %k, %k : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %2, %3 : tensor<4x4xf32>, tensor<4x4xf32>
}
"""

LARGE = """\
func.func @main(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %v: tensor<1024xf32>) -> tensor<1024x1024xf32> {
  %k = relay.constant dense<0.5> : tensor<1024x1024xf32>
  %0 = relay.add %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %1 = relay.add %0, %k : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %2 = relay.nn.relu %1 : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %3 = relay.add %2, %v : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32>
  %4 = relay.nn.relu %3 : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  func.return %4 : tensor<1024x1024xf32>
}
"""


@pytest.mark.parametrize(
    "text, placement",
    [
        # the inlined constant is a C array; the broadcasting add goes to
        # ccompiler; byoc-simplify folds %k + %k into a constant
        (CONSTANTS, ["vendoradd: 1 function(s), 2 op(s)", "ccompiler: 1 function(s), 1 op(s)"]),
        # 1M-element inputs; the large constant is an argument; the broadcast add declined
        (LARGE, ["vendoradd: 2 function(s), 4 op(s)", "ccompiler: 1 function(s), 1 op(s)"]),
    ],
    ids=["constants", "1024x1024"],
)
def test_plugin_on_constants_broadcasting_and_large_inputs(installed, tmp_path, text, placement):
    model = tmp_path / "model.mlir"
    model.write_text(text)
    proc = run(installed, "byoc-run", model, "--annotate=vendoradd,ccompiler", "--check=functions")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    for line in placement:
        assert line in proc.stdout, proc.stdout
    assert "vendoradd does not broadcast" not in proc.stderr
    assert "outputs match the reference" in proc.stdout


def test_plugin_c_holds_its_constants(installed, tmp_path):
    model = tmp_path / "model.mlir"
    model.write_text(CONSTANTS)
    proc = run(installed, "byoc-translate", model, "--emit-c", "--annotate=vendoradd")
    assert proc.returncode == 0, proc.stderr
    assert "_const0[16] = {1.5f, -2.0f, 0.25f, 1e-05f," in proc.stdout
    assert "vendor_add_f32(in0, vendoradd_0_const" in proc.stdout
    assert "(, " not in proc.stdout  # the old bug: a constant became an empty argument
