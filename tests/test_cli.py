"""The command-line tools: what they print on good input, and how they fail on bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphs import TANH_CHAIN

BIN = Path(sys.executable).parent
EXAMPLES = Path(__file__).parent.parent / "examples"
GUIDE = EXAMPLES / "byoc_guide.mlir"

ILL_TYPED = """\
func.func @main(%a: tensor<10x10xf32>, %b: tensor<3xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<3xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}
"""

SYNTAX_ERROR = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.frobnicate %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""



def run(tool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / tool), *map(str, args)], capture_output=True, text=True
    )


def assert_clean_failure(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str, name: str = "model.mlir") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


TOOLS_ON_FILES = [
    ("byoc-opt", ()),
    ("byoc-opt", ("--annotate", "--partition")),
    ("byoc-translate", ("--emit-c",)),
    ("byoc-run", ("--check",)),
]


@pytest.mark.parametrize("tool,flags", TOOLS_ON_FILES)
def test_ill_typed_input_names_the_place(tool, flags, write):
    path = write(ILL_TYPED)
    proc = run(tool, path, *flags)
    assert_clean_failure(proc, f"{path}:2:3: error: 'relay.add': operand shapes")


@pytest.mark.parametrize("tool,flags", TOOLS_ON_FILES)
def test_syntax_error_names_the_place(tool, flags, write):
    path = write(SYNTAX_ERROR)
    proc = run(tool, path, *flags)
    assert_clean_failure(proc, f"{path}:3:", "relay.frobnicate is not registered")


@pytest.mark.parametrize("tool,flags", TOOLS_ON_FILES)
def test_missing_file(tool, flags, tmp_path):
    proc = run(tool, tmp_path / "nope.mlir", *flags)
    assert_clean_failure(proc, "nope.mlir")


@pytest.mark.parametrize(
    "tool,flags",
    [
        ("byoc-opt", ("--annotate=nosuch",)),
        ("byoc-translate", ("--emit-c", "--annotate=nosuch")),
        ("byoc-run", ("--annotate=nosuch",)),
    ],
)
def test_unknown_backend_lists_the_known_ones(tool, flags):
    proc = run(tool, GUIDE, *flags)
    assert_clean_failure(proc, "unknown backend 'nosuch'", "ccompiler")


@pytest.mark.parametrize("tool", ["byoc-opt", "byoc-translate", "byoc-run"])
def test_bad_option_exits_1(tool):
    proc = run(tool, GUIDE, "--no-such-flag")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "pipeline, needle",
    [
        ("nosuchpass", "Unrecognized passes: ['nosuchpass']"),
        ("byoc-mark-parallel-loops{bogus=1}", 'Provided arguments ["bogus"] not found'),
        ("byoc-mark-parallel-loops{min_work", "Expected equals"),
        ("byoc-mark-parallel-loops{min_work=abc}", "Incompatible types"),
    ],
)
def test_a_bad_pass_pipeline_is_one_message(pipeline, needle):
    proc = run("byoc-opt", GUIDE, "-p", pipeline)
    assert_clean_failure(proc, "error: bad pass pipeline", needle)
    assert "internal compiler error" not in proc.stderr


def test_binary_garbage_input(write, tmp_path):
    path = tmp_path / "garbage.mlir"
    path.write_bytes(bytes(range(256)) * 4)
    for tool in ("byoc-opt", "byoc-run"):
        assert_clean_failure(run(tool, path))


def test_opt_partitions_the_guide_example():
    proc = run("byoc-opt", GUIDE, "--annotate", "--partition")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("extern.call @ccompiler_0(") == 1
    assert "func.func private @ccompiler_0" in proc.stdout
    assert "ccompiler_1" not in proc.stdout


def test_translate_emits_c_that_compiles_with_warnings_as_errors(write, tmp_path):
    path = write(TANH_CHAIN)
    proc = run("byoc-translate", path, "--emit-c", "--annotate=ccompiler")
    assert proc.returncode == 0, proc.stderr
    source = tmp_path / "kernels.c"
    source.write_text(proc.stdout)
    cc = subprocess.run(
        ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", str(source), "-o", str(tmp_path / "k.o")],
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0, cc.stderr + proc.stdout
    assert "ccompiler_0" in proc.stdout and "ccompiler_1" in proc.stdout
    assert "tanh" not in proc.stdout  # tanh stays on the host


def test_run_checks_against_the_reference(write, tmp_path):
    path = write(TANH_CHAIN)
    out = tmp_path / "out.npz"
    proc = run("byoc-run", path, "--annotate=ccompiler", "--check", "--output", out)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "matches the reference" in proc.stdout
    assert "ccompiler: 2 function(s)" in proc.stdout
    with np.load(out) as data:
        assert data[data.files[0]].shape == (10, 10)


def test_run_reads_inputs_by_name(write, tmp_path):
    path = write(TANH_CHAIN)
    rng = np.random.default_rng(1)
    arrays = {k: rng.standard_normal((10, 10)).astype(np.float32) for k in "abcd"}
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **arrays)
    out = tmp_path / "out.npz"
    proc = run("byoc-run", path, "--inputs", inputs, "--output", out)
    assert proc.returncode == 0, proc.stderr
    a, b, c, d = (arrays[k] for k in "abcd")
    with np.load(out) as data:
        np.testing.assert_allclose(data[data.files[0]], np.tanh(a + b) * c - d, rtol=1e-6, atol=1e-6)


def test_run_rejects_inputs_of_the_wrong_shape(write, tmp_path):
    path = write(TANH_CHAIN)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{k: np.zeros((10, 9), np.float32) for k in "abcd"})
    proc = run("byoc-run", path, "--inputs", inputs)
    assert_clean_failure(proc, "array 'a' has shape (10, 9); the input takes (10, 10)")


def test_run_rejects_a_corrupt_npz(write, tmp_path):
    path = write(TANH_CHAIN)
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(b"PK\x03\x04 not really a zip")
    assert_clean_failure(run("byoc-run", path, "--inputs", inputs), "cannot read the inputs")


@pytest.mark.parametrize(
    "arrays, needle",
    [
        ({"a": 0, "b": 0, "c": 0}, "no array for d"),
        ({"a": 0, "b": 0, "c": 0, "d": 0, "e": 0}, "arrays e match no input"),
        ({"arr_0": 0, "arr_1": 0, "arr_2": 0, "arr_3": 0}, "no array for a, b, c, d; arrays arr_0"),
        ({"a": 0, "b": 0, "c": 0, "d": np.float64}, "array 'd' has dtype float64; the input takes float32"),
        ({"a": 0, "b": 0, "c": 0, "d": np.int32}, "array 'd' has dtype int32"),
    ],
    ids=["missing", "extra", "unnamed", "float64", "int32"],
)
def test_run_inputs_are_strict_and_checked_before_compiling(write, tmp_path, arrays, needle):
    path = write(TANH_CHAIN)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{k: np.zeros((10, 10), v or np.float32) for k, v in arrays.items()})
    proc = run("byoc-run", path, "--inputs", inputs)
    assert_clean_failure(proc, f"{inputs}: ", needle, "(@main takes a: 10x10xfloat32" if "array '" not in needle else "")
    assert "compiling" not in proc.stdout


@pytest.mark.parametrize(
    "content, needle",
    [
        ("npy", "is an .npy file (one unnamed array); --inputs takes an .npz"),
        ("text", "is not an .npz file; --inputs takes an .npz"),
        ("pickle", "array 'a' holds Python objects"),
    ],
)
def test_run_inputs_of_another_kind_get_our_message(write, tmp_path, content, needle):
    path = write(TANH_CHAIN)
    inputs = tmp_path / "in.npz"
    if content == "npy":
        with open(inputs, "wb") as f:
            np.save(f, np.zeros((10, 10), np.float32))
    elif content == "text":
        inputs.write_text("a = [1, 2, 3]\n")
    else:
        np.savez(inputs, a=np.array([{"x": 1}], dtype=object))
    proc = run("byoc-run", path, "--inputs", inputs)
    assert_clean_failure(proc, needle)
    assert "context manager" not in proc.stderr and "pickled" not in proc.stderr


def test_partition_without_annotate_annotates_for_the_default_backend():
    plain = run("byoc-opt", GUIDE, "--partition")
    explicit = run("byoc-opt", GUIDE, "--annotate=ccompiler", "--partition")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == explicit.stdout and "extern.call @ccompiler_0" in plain.stdout
    merged = run("byoc-opt", GUIDE, "--merge")
    assert merged.returncode == 0 and "extern.region" in merged.stdout


CNN_LIKE = """\
func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = relay.nn.bias_add %0, %b {axis = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = relay.nn.relu %1 : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %3 = relay.tanh %2 : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %3 : tensor<1x4x6x6xf32>
}
"""


def test_report_without_partition_tells_the_truth(write):
    """Ops a composite took are the composite's, not 'unsupported'; nothing is 'pruned'."""
    path = write(CNN_LIKE)
    proc = run("byoc-opt", path, "--annotate=cblas,ccompiler", "-t", "report")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "# not partitioned: ops are only annotated" in out
    assert "backend cblas: 0 function(s), 3 op(s)" in out
    assert "relay.nn.bias_add" in out and "[cblas.conv2d_bias_relu]" in out
    assert "does not support relay.nn.bias_add" not in out and "pruned" not in out
    assert "host: 1 op(s)" in out and "relay.tanh" in out
    merged = run("byoc-opt", path, "--annotate=cblas,ccompiler", "--merge", "-t", "report")
    assert "region 0 (not outlined): 3 op(s)" in merged.stdout and "pruned" not in merged.stdout


def test_report_names_pruning_only_when_it_happened(write):
    path = write(CNN_LIKE)
    proc = run("byoc-opt", path, "--annotate=cblas", "--partition", "--min-region-size=4", "-t", "report")
    assert proc.returncode == 0, proc.stderr
    assert "pruned: cblas takes it, but its region had fewer than 4 ops" in proc.stdout
    assert "relay.tanh" in proc.stdout and "unsupported: cblas does not support relay.tanh" in proc.stdout


def test_opt_help_leads_with_byocs_own_passes_targets_and_flags():
    proc = run("byoc-opt", "--help")
    assert proc.returncode == 0
    text = proc.stdout
    assert "xDSL modular optimizer driver" not in text
    first = {name: text.index(name) for name in ("byoc-annotate", "byoc-outline-regions", "report", "--annotate", "--partition", "--debug")}
    upstream = text.index("upstream xDSL passes")
    assert all(at < upstream for at in first.values()), first
    assert text.index("apply-pdl") > upstream  # an upstream pass, in its own section
    assert "Outlines every `extern.region`" in text
    assert text.index("--annotate") < text.index("--print-op-generic")


def test_byoc_opt_takes_onnx_files():
    proc = run("byoc-opt", EXAMPLES / "cnn.onnx", "--annotate=ccompiler", "--partition")
    assert proc.returncode == 0, proc.stderr
    assert "extern.call @ccompiler_0" in proc.stdout
    assert 'extern.compiler = "ccompiler"' in proc.stdout


def test_byoc_opt_onnx_errors_are_one_message(write, tmp_path):
    assert_clean_failure(run("byoc-opt", write("not a model", "bad.onnx")), "bad.onnx", "not an ONNX model")
    with open(EXAMPLES / "cnn.onnx", "rb") as stdin:
        proc = subprocess.run(
            [str(BIN / "byoc-opt"), "-f", "onnx"], stdin=stdin, capture_output=True, text=True
        )
    assert_clean_failure(proc, "reads ONNX models from a file")
