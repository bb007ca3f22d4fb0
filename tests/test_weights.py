"""The weights blob: weights travel as bytes, saved models and cache entries map
them, damaged blobs are rejected, and exported libraries carry them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.runtime import saved
from byoc.runtime.cache import file_digest, module_digest
from byoc.runtime.weights import Blob, Weights, checksum

BIN = Path(sys.executable).parent
K, N, OUT = 512, 256, 10


def mlp(seed: int = 0):
    """x[4, 512] -> Gemm(512x256) -> Relu -> Gemm(256x10) -> Tanh, weights as initializers."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((K, N)) * 0.05).astype(np.float32)
    b1 = rng.standard_normal(N).astype(np.float32) * 0.1
    w2 = (rng.standard_normal((N, OUT)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["m"]),
        helper.make_node("Tanh", ["m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, OUT])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    want = lambda x: np.tanh(np.maximum(x @ w1 + b1, 0) @ w2)  # noqa: E731
    return model, want


@pytest.fixture(scope="module")
def compiled():
    model, want = mlp()
    host_only = byoc.compile(model, targets=[], cache=False)
    offloaded = byoc.compile(model, targets=["cblas", "ccompiler"], cache=False)
    return model, want, host_only, offloaded


def inputs(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, K)).astype(np.float32)


def test_weights_are_a_blob_not_code(compiled):
    _, want, host_only, offloaded = compiled
    x = inputs()
    for model in (host_only, offloaded):
        np.testing.assert_allclose(model(x), want(x), rtol=1e-4, atol=1e-5)
        assert model.weights is not None and model.weights.size >= (K * N + N * OUT) * 4
        assert model.weights.address % 64 == 0
        # Neither the object nor the LLVM IR holds the weights.
        assert sum(map(len, model.host.emit_objects())) < 100_000
        assert len(model.host.llvm_ir) < 100_000
        # No byte-string constants but the host code's signature (runtime/signature.py).
        strings = [line for line in model.host.llvm_ir.splitlines() if ' c"' in line]
        assert len(strings) == 1 and strings[0].startswith(f"@{model.entry_name.removesuffix('entry')}signature")
        # The partitioned IR shows the weights elided.
        assert "dense_resource<__elided__>" in model.partitioned_ir
        assert len(model.partitioned_ir) < 20_000


def test_two_models_in_one_process_keep_their_own_weights():
    a_model, a_want = mlp(seed=0)
    b_model, b_want = mlp(seed=5)
    a = byoc.compile(a_model, targets=[], cache=False)
    b = byoc.compile(b_model, targets=[], cache=False)
    assert a.weights_symbol != b.weights_symbol
    x = inputs()
    np.testing.assert_allclose(a(x), a_want(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b(x), b_want(x), rtol=1e-4, atol=1e-5)


def blob_offset(path: Path) -> tuple[int, int]:
    """Where weights.bin's data starts in a saved model, and its size."""
    with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
        info = zf.getinfo(saved.WEIGHTS_MEMBER)
        return saved._data_offset(f, info), info.file_size


@pytest.fixture(scope="module")
def saved_file(compiled, tmp_path_factory):
    _, _, _, offloaded = compiled
    path = tmp_path_factory.mktemp("weights") / "mlp.byoc"
    offloaded.save(path)
    return offloaded, path


def test_saved_blob_is_stored_aligned_and_mapped(saved_file):
    model, path = saved_file
    offset, size = blob_offset(path)
    assert offset % 4096 == 0 and size == model.weights.size
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo(saved.WEIGHTS_MEMBER).compress_type == zipfile.ZIP_STORED
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["weights"]["checksum"].startswith("fletcher64:")
    assert manifest["weights"]["symbol"] == model.weights_symbol
    loaded = byoc.load(path)
    assert loaded.weights.mapped  # not copied
    x = inputs()
    np.testing.assert_array_equal(loaded(x), model(x))


def test_round_trip_in_a_fresh_process(saved_file, tmp_path):
    model, path = saved_file
    x = inputs(seed=7)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, byoc\n"
        "m = byoc.load(sys.argv[1])\n"
        "np.save(sys.argv[3], m(np.load(sys.argv[2])))\n"
    )
    env = {"PATH": "/nonexistent", "CC": "/nonexistent/cc", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), model(x))


def test_one_flipped_byte_in_the_blob_is_rejected(saved_file, tmp_path):
    _, path = saved_file
    offset, size = blob_offset(path)
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0x10
    bad = tmp_path / "flipped.byoc"
    bad.write_bytes(bytes(data))
    with pytest.raises(byoc.ByocError, match="corrupted: weights.bin does not match its checksum"):
        byoc.load(bad)


def test_truncated_blob_is_rejected(saved_file, tmp_path):
    _, path = saved_file
    offset, size = blob_offset(path)
    bad = tmp_path / "cut.byoc"
    bad.write_bytes(path.read_bytes()[: offset + size // 3])
    with pytest.raises(byoc.ByocError, match="truncated or corrupted|truncated"):
        byoc.load(bad)


def test_blob_rewritten_by_another_tool_still_loads(saved_file, tmp_path):
    """An archive rewritten by zipfile (deflated, unaligned) and sealed again
    is read, not mapped; rewritten and not sealed, its bytes changed: refused."""
    model, path = saved_file
    copy = tmp_path / "rewritten.byoc"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, src.read(item.filename))
    with pytest.raises(byoc.ByocError, match="not a sealed byoc compiled model"):
        byoc.load(copy)
    with zipfile.ZipFile(copy, "a") as zf:
        zf.comment = saved.SEAL_PREFIX + bytes(saved.SEAL_DIGITS)
    saved._seal(copy)
    loaded = byoc.load(copy)
    assert loaded.weights is not None and not loaded.weights.mapped
    x = inputs()
    np.testing.assert_array_equal(loaded(x), model(x))


def test_manifest_without_the_weights_the_code_reads(saved_file, tmp_path):
    _, path = saved_file
    bad = tmp_path / "no_weights.byoc"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["weights"] = None
                data = json.dumps(manifest).encode()
            if item.filename != saved.WEIGHTS_MEMBER:
                dst.writestr(item, data)
        dst.comment = saved.SEAL_PREFIX + bytes(saved.SEAL_DIGITS)
    saved._seal(bad)  # consistent but for the code, which the signature tells
    with pytest.raises(byoc.ByocError, match=r"the weights blob \(symbol, bytes\): None in the manifest"):
        byoc.load(bad)


def test_damaged_blob_in_the_cache_is_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    model, want = mlp(seed=2)
    first = byoc.compile(model, targets=[])
    (entry,) = (tmp_path / "cache" / "models").glob("*.byoc")
    assert first.weights.mapped  # from the entry it wrote
    offset, size = blob_offset(entry)
    data = bytearray(entry.read_bytes())
    data[offset + 8] ^= 0xFF
    entry.unlink()  # the first model still maps the old file
    entry.write_bytes(bytes(data))
    second = byoc.compile(model, targets=[])
    x = inputs()
    np.testing.assert_allclose(second(x), want(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(first(x), second(x))
    assert saved.load(entry)  # replaced by a good one


def test_checksum_sees_single_changes_and_swaps():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**63, 1000, dtype=np.uint64)
    base = checksum([(0, memoryview(words.tobytes()))])
    changed = words.copy()
    changed[500] ^= np.uint64(1)
    swapped = words.copy()
    swapped[[10, 20]] = swapped[[20, 10]]
    assert checksum([(0, memoryview(changed.tobytes()))]) != base
    assert checksum([(0, memoryview(swapped.tobytes()))]) != base
    # Pieces at aligned offsets equal the blob with zeros between them.
    a, b = words[:100].tobytes(), words[100:].tobytes() + b"xyz"
    blob = Blob(1024 + len(b) + 5, checksum([(0, memoryview(a)), (1024, memoryview(b))]),
                ((0, memoryview(a)), (1024, memoryview(b))))
    whole = b"".join(bytes(c) for c in blob.chunks())
    assert len(whole) == blob.size
    assert checksum([(0, memoryview(whole))]) == blob.checksum
    copy = Weights.copy_of(blob)
    assert bytes(copy.buffer) == whole and copy.address % 64 == 0


def test_cache_key_hashes_weights_not_text():
    a, _ = mlp(seed=0)
    b, _ = mlp(seed=1)
    ma, mb = byoc.from_onnx(a), byoc.from_onnx(b)
    assert module_digest(ma) != module_digest(mb)
    assert module_digest(ma) == module_digest(byoc.from_onnx(a))


def test_file_digest_sees_changes(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(b"one")
    first = file_digest(path)
    assert file_digest(path) == first
    path.write_bytes(b"two")
    assert file_digest(path) != first
    # A digest taken long after the last change is reused; a change is still seen.
    old = 1_000_000_000  # 1970: long before the digest
    os.utime(path, ns=(old, old))
    third = file_digest(path)
    assert file_digest(path) == third
    path.write_bytes(b"six")
    os.utime(path, ns=(old, old))  # same size and mtime: the ctime still moves
    assert file_digest(path) != third


PROGRAM = r"""
#include <stdio.h>
#include "mlp.h"

int main(int argc, char** argv) {
  (void)argc;
  static float x[MLP_INPUT_0_SIZE], y[MLP_OUTPUT_0_SIZE];
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof(float), MLP_INPUT_0_SIZE, f) != MLP_INPUT_0_SIZE) return 10;
  fclose(f);
#ifdef MLP_WEIGHTS_FILE
  if (mlp_run(x, y) != -1) return 11; /* weights not loaded yet */
  int32_t loaded = mlp_load_weights(argc > 2 ? argv[2] : MLP_WEIGHTS_FILE);
  if (loaded != 0) return 20 + loaded;
#endif
  if (mlp_run(x, y) != 0) return 12;
  for (int i = 0; i < MLP_OUTPUT_0_SIZE; ++i) printf("%.9g\n", y[i]);
  return 0;
}
"""


@pytest.mark.parametrize("mode", ["embed", "file"])
def test_exported_library_carries_its_weights(mode, tmp_path):
    import onnx

    model, want = mlp(seed=3 if mode == "embed" else 4)  # not a cache hit of the other
    onnx.save(model, tmp_path / "mlp.onnx")
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(tmp_path / "mlp.onnx"), "--emit-library", "--annotate=cblas,ccompiler",
         "--name", "mlp", f"--weights={mode}", "-o", str(tmp_path / "libmlp.so")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "mlp.h").read_text()
    assert ("MLP_WEIGHTS_FILE" in header) == (mode == "file")
    assert (tmp_path / "mlp.weights").exists() == (mode == "file")
    (tmp_path / "main.c").write_text(PROGRAM)
    build = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(tmp_path / "main.c"), "-I", str(tmp_path),
         "-L", str(tmp_path), "-lmlp", f"-Wl,-rpath,{tmp_path}", "-o", str(tmp_path / "main")],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr
    x = inputs(seed=4)
    x.tofile(tmp_path / "x.bin")
    run = subprocess.run([str(tmp_path / "main"), str(tmp_path / "x.bin")], cwd=tmp_path, env={},
                         capture_output=True, text=True)
    assert run.returncode == 0, (run.returncode, run.stderr)
    got = np.array([float(v) for v in run.stdout.split()], np.float32).reshape(4, OUT)
    np.testing.assert_allclose(got, want(x), rtol=1e-4, atol=1e-5)
    if mode == "file":
        weights = (tmp_path / "mlp.weights").read_bytes()
        (tmp_path / "bad.weights").write_bytes(weights[:100] + bytes([weights[100] ^ 1]) + weights[101:])
        (tmp_path / "short.weights").write_bytes(weights[:-64])
        for name, status in (("bad.weights", 24), ("short.weights", 22), ("missing.weights", 21)):
            run = subprocess.run([str(tmp_path / "main"), str(tmp_path / "x.bin"), str(tmp_path / name)],
                                 env={}, capture_output=True, text=True)
            assert run.returncode == status, name


def test_concurrent_compiles_of_a_model_with_weights(tmp_path):
    """Processes compiling the same model at once each write a whole entry (its
    blob included) and rename it into place; every one of them, and a process
    loading the entry afterwards, sees the right weights."""
    import onnx

    model, want = mlp(seed=8)
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    x = inputs(seed=9)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, byoc\n"
        "m = byoc.compile(sys.argv[1], targets=sys.argv[2].split(',') if sys.argv[2] else [])\n"
        "np.save(sys.argv[3], m(np.load(sys.argv[4])))\n"
    )
    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    runs = [(targets, i) for targets in ("", "cblas,ccompiler") for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), targets, str(tmp_path / f"y{i}{targets}.npy"),
             str(tmp_path / "x.npy")],
            stderr=subprocess.PIPE, text=True, env=env,
        )
        for targets, i in runs
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    for targets, i in runs:
        np.testing.assert_allclose(np.load(tmp_path / f"y{i}{targets}.npy"), want(x), rtol=1e-4, atol=1e-5)
    entries = sorted((tmp_path / "cache" / "models").glob("*.byoc"))
    assert len(entries) == 2  # one per set of targets
    for entry in entries:
        loaded = saved.load(entry)  # whole: checksum and all
        assert loaded.weights.mapped
        np.testing.assert_allclose(loaded(x), want(x), rtol=1e-4, atol=1e-5)
    assert not list((tmp_path / "cache" / "models").glob(".*"))  # no temporary left
