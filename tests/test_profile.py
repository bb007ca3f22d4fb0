"""CompiledModule.profile and byoc-run --profile: where a call's time goes,
per external function and host op group, from an instrumented copy of the
host (the model itself carries no timer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import byoc

MODEL = """
func.func @main(%x: tensor<16x32xf32>, %w: tensor<8x32xf32>) -> tensor<16x8xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<16x8xf32>
  %1 = relay.nn.relu %0 : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = relay.exp %1 : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %3 = relay.tanh %2 : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %4 = relay.nn.softmax %3 : (tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %4 : tensor<16x8xf32>
}
"""


@pytest.fixture(scope="module")
def model():
    return byoc.compile(MODEL, targets=["cblas", "ccompiler"])


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((8, 32)).astype(np.float32)]


def test_profile_rows(model, inputs, capsys):
    want = model(*inputs)
    result = model.profile(*inputs, runs=20)
    printed = capsys.readouterr().out
    assert printed.startswith("profile over 20 runs")
    rows = {(e.where, e.name): e for e in result.entries}
    # dense + relu went to cblas as one composite function; exp+tanh are one
    # fused host group, softmax another.
    assert set(rows) == {("cblas", "cblas_0"), ("host", "tanh"), ("host", "softmax")}
    assert rows[("cblas", "cblas_0")].ops == "dense, relu"
    assert rows[("host", "tanh")].ops == "exp + tanh 16x8"
    assert rows[("host", "softmax")].ops == "softmax 16x8"
    seconds = [e.seconds for e in result.entries]
    assert seconds == sorted(seconds, reverse=True) and all(s > 0 for s in seconds)
    assert sum(seconds) <= result.total
    assert set(result.by_place()) == {"cblas", "host"}
    for entry in result.entries:
        assert f"{entry.where:<12}" in printed and entry.ops in printed
    # Profiling leaves the model as it was: same results, no timer in its code.
    np.testing.assert_array_equal(model(*inputs), want)
    assert "mark_" not in model.host.llvm_ir


def test_profile_of_a_loaded_model_and_repeated_groups(tmp_path, inputs):
    text = MODEL.replace(
        "%4 = relay.nn.softmax %3",
        "%s = relay.nn.softmax %3 : (tensor<16x8xf32>) -> tensor<16x8xf32>\n"
        "  %4 = relay.nn.softmax %s",
    )
    compiled = byoc.compile(text, targets=["cblas", "ccompiler"])
    compiled.save(tmp_path / "m.byoc")
    loaded = byoc.load(tmp_path / "m.byoc")
    result = loaded.profile(*inputs, runs=5, show=False)
    softmax = [e for e in result.entries if e.name == "softmax"]
    assert len(softmax) == 1 and softmax[0].count == 2
    assert "softmax (x2)" in str(result)


def test_profile_argument_errors(model):
    with pytest.raises(byoc.ByocError, match="takes 2 arguments"):
        model.profile(np.zeros((16, 32), np.float32))
    with pytest.raises(byoc.ByocError, match="shape"):
        model.profile(np.zeros((3, 3), np.float32), np.zeros((8, 32), np.float32))


def test_byoc_run_profile(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MODEL)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "byoc-run"), str(path), "--annotate=cblas,ccompiler", "--profile"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "profile over" in proc.stdout and "cblas_0" in proc.stdout and "by place:" in proc.stdout


REPEATED = """
func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %1 = relay.nn.relu %0 : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %2 = relay.nn.softmax %1 : (tensor<16x32xf32>) -> tensor<16x32xf32>
  %3 = relay.nn.dense %2, %w : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %4 = relay.nn.relu %3 : (tensor<16x32xf32>) -> tensor<16x32xf32>
  func.return %4 : tensor<16x32xf32>
}
"""


def test_profile_of_merged_external_functions():
    """The compile merges identical outlined functions after printing
    partitioned_ir (one symbol in the library): the profile calls the kept
    one for both and adds their times up."""
    model = byoc.compile(REPEATED, targets=["cblas", "ccompiler"])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 32)).astype(np.float32)
    result = model.profile(x, w, runs=3, show=False)
    cblas = [e for e in result.entries if e.where == "cblas"]
    assert len(cblas) == 1 and cblas[0].count == 2 and cblas[0].ops == "dense, relu"
    np.testing.assert_array_equal(model._profiler.outputs[0], model(x, w))


WEIGHTED = """
func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w = relay.constant dense<WEIGHT> : tensor<64x64xf32>
  %v = relay.constant dense<OTHER> : tensor<64x64xf32>
  %0 = relay.nn.dense %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %1 = relay.tanh %0 : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %2 = relay.nn.dense %1, %v : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  func.return %2 : tensor<8x64xf32>
}
"""


def _hex(array: np.ndarray) -> str:
    return '"0x' + array.astype(np.float32).tobytes().hex().upper() + '"'


@pytest.mark.parametrize("equal", [False, True], ids=["distinct", "equal"])
def test_profile_reads_the_model_weights(equal):
    """The instrumented host reads the model's weights blob (partitioned_ir
    elides weights over 1024 elements); a model sharing one copy between
    equal weights is timed on zeros of its layout, and says so."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 64)) / 8
    v = w if equal else rng.standard_normal((64, 64)) / 8
    text = WEIGHTED.replace("WEIGHT", _hex(w)).replace("OTHER", _hex(v))
    model = byoc.compile(text, targets=[])
    assert "__elided__" in model.partitioned_ir
    x = rng.standard_normal((8, 64)).astype(np.float32)
    result = model.profile(x, runs=3, show=False)
    profiler = model._profiler
    assert result.own_weights is (not equal)
    if equal:
        assert "timed on zero weights" in str(result)
    else:
        np.testing.assert_array_equal(profiler.outputs[0], model(x))
    counts = {e.name: e.count for e in result.entries}
    assert counts == {"dense": 2, "tanh": 1} and all(e.where == "host" for e in result.entries)


def test_profile_of_a_split_main():
    """A host main of more than MAX_OPS ops is compiled in parts (compile
    time stays linear): the instrumented host is built the same way, so it
    reads the model's weights where the model does and times every group."""
    from byoc.passes.split_functions import MAX_OPS

    rng = np.random.default_rng(2)
    n = MAX_OPS // 2 + 10
    lines = ["func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {"]
    for name in ("a", "b"):
        w = rng.standard_normal((64, 64)) / 8
        lines.append(f"  %w{name} = relay.constant dense<{_hex(w)}> : tensor<64x64xf32>")
    lines.append("  %x0 = relay.nn.dense %x, %wa : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>")
    for i in range(n):
        c = rng.uniform(0.5, 1.5, (4, 64))
        lines += [
            f"  %c{i} = relay.constant dense<{_hex(c)}> : tensor<4x64xf32>",
            f"  %m{i} = relay.multiply %x{i}, %c{i} : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>",
            f"  %x{i + 1} = relay.tanh %m{i} : (tensor<4x64xf32>) -> tensor<4x64xf32>",
        ]
    lines += [
        f"  %y = relay.nn.dense %x{n}, %wb : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>",
        "  func.return %y : tensor<4x64xf32>",
        "}",
    ]
    model = byoc.compile("\n".join(lines), targets=[])
    x = rng.standard_normal((4, 64)).astype(np.float32)
    result = model.profile(x, runs=2, show=False)
    assert result.own_weights
    np.testing.assert_array_equal(model._profiler.outputs[0], model(x))
    # Every op is in one group (elementwise chains are fused, 64 ops at most).
    ops = [name for e in result.entries for _ in range(e.count) for name in e.ops.split()]
    assert ops.count("dense") == 2 and ops.count("tanh") == ops.count("multiply") == n
