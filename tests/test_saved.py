"""Save/load of compiled models, and the content-keyed compile cache."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import byoc
from graphs import TANH_CHAIN
from byoc.runtime import build, saved

EXAMPLES = Path(__file__).parent.parent / "examples"


def args(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((10, 10)).astype(np.float32) for _ in range(4)]


@pytest.fixture
def model_file(tmp_path):
    model = byoc.compile(TANH_CHAIN, targets=["ccompiler"], cache=False)
    path = tmp_path / "model.byoc"
    model.save(path)
    return model, path


def test_round_trip_in_a_fresh_process(model_file, tmp_path):
    model, path = model_file
    inputs = args()
    np.savez(tmp_path / "in.npz", *inputs)
    script = (
        "import sys, numpy as np, byoc\n"
        "m = byoc.load(sys.argv[1])\n"
        "with np.load(sys.argv[2]) as d: xs = [d[k] for k in d.files]\n"
        "np.save(sys.argv[3], m(*xs))\n"
    )
    out = tmp_path / "out.npy"
    # No C compiler in the loading process: loading must not need one.
    env = {"PATH": "/nonexistent", "CC": "/nonexistent/cc", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "in.npz"), str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), model(*inputs))


def test_loaded_model_keeps_its_description(model_file):
    model, path = model_file
    loaded = byoc.load(path)
    assert loaded.inputs == model.inputs and loaded.outputs == model.outputs
    assert loaded.c_source == model.c_source
    assert loaded.partitioned_ir == model.partitioned_ir


def test_truncated_file(model_file, tmp_path):
    _, path = model_file
    data = path.read_bytes()
    bad = tmp_path / "truncated.byoc"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(byoc.ByocError, match="truncated or corrupted"):
        byoc.load(bad)


def test_corrupted_member(model_file, tmp_path):
    _, path = model_file
    bad = tmp_path / "corrupted.byoc"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "host.o":
                data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
            dst.writestr(item, data)
    with pytest.raises(byoc.ByocError, match="corrupted: host.o does not match its checksum"):
        byoc.load(bad)


def test_foreign_files(tmp_path):
    text = tmp_path / "notes.byoc"
    text.write_text("hello")
    with pytest.raises(byoc.ByocError, match="not a byoc compiled model"):
        byoc.load(text)
    other_zip = tmp_path / "other.byoc"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "something-else"}))
    with pytest.raises(byoc.ByocError, match="not a byoc compiled model"):
        byoc.load(other_zip)
    with pytest.raises(byoc.ByocError, match="cannot read the file"):
        byoc.load(tmp_path / "missing.byoc")


def _rewrite_manifest(path: Path, target: Path, change) -> None:
    """A copy with the manifest edited and the archive sealed again (as a tool
    that knows the format would): only what the manifest says is wrong."""
    from byoc.runtime.saved import SEAL_DIGITS, SEAL_PREFIX, _seal

    with zipfile.ZipFile(path) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                change(manifest)
                data = json.dumps(manifest).encode()
            dst.writestr(item, data)
        dst.comment = SEAL_PREFIX + bytes(SEAL_DIGITS)
    _seal(target)


def test_other_cpu(model_file, tmp_path):
    _, path = model_file
    bad = tmp_path / "other_cpu.byoc"
    _rewrite_manifest(path, bad, lambda m: m["host"].update(cpu="some-other-cpu"))
    with pytest.raises(byoc.ByocError, match="built for another CPU"):
        byoc.load(bad)


def test_other_byoc_version(model_file, tmp_path):
    _, path = model_file
    bad = tmp_path / "old.byoc"
    _rewrite_manifest(path, bad, lambda m: m.update(byoc_version="0.0.1"))
    with pytest.raises(byoc.ByocError, match=r"built by byoc 0.0.1"):
        byoc.load(bad)


def test_malformed_manifest(model_file, tmp_path):
    _, path = model_file
    bad = tmp_path / "malformed.byoc"
    _rewrite_manifest(path, bad, lambda m: m.pop("inputs"))
    with pytest.raises(byoc.ByocError, match="malformed manifest"):
        byoc.load(bad)


def test_second_compile_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    first = byoc.compile(TANH_CHAIN)

    def fail(*_args, **_kwargs):
        raise AssertionError("the pipeline ran again")

    monkeypatch.setattr(build, "compile_uncached", fail)
    second = byoc.compile(TANH_CHAIN)
    inputs = args()
    np.testing.assert_array_equal(first(*inputs), second(*inputs))
    # A different model, or other backends, is a miss.
    with pytest.raises(AssertionError, match="ran again"):
        byoc.compile(TANH_CHAIN, targets=[])


def test_damaged_cache_entry_is_recompiled(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    byoc.compile(TANH_CHAIN)
    (entry,) = (tmp_path / "cache" / "models").glob("*.byoc")
    entry.write_bytes(b"garbage")
    model = byoc.compile(TANH_CHAIN)
    a, b, c, d = args()
    np.testing.assert_allclose(model(a, b, c, d), np.tanh(a + b) * c - d, rtol=1e-6, atol=1e-7)
    assert saved.load(entry)  # replaced by a good one


def test_concurrent_compiles_share_the_cache(tmp_path):
    model = tmp_path / "model.mlir"
    model.write_text(TANH_CHAIN)
    script = (
        "import sys, numpy as np, byoc\n"
        "m = byoc.compile(sys.argv[1])\n"
        "x = np.ones((10, 10), np.float32)\n"
        "print(float(m(x, x, x, x).sum()))\n"
    )
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "BYOC_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(model)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(4)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(float(out))
    expected = float((np.tanh(np.float32(2)) - 1) * 100)
    assert all(abs(r - expected) < 1e-3 for r in results)
    # Every entry in the cache is whole.
    for entry in (tmp_path / "cache" / "models").glob("*.byoc"):
        assert saved.load(entry)


def test_c_flags_come_from_the_environment(tmp_path, monkeypatch):
    """$BYOC_CFLAGS replaces the optimisation flags (a different cache entry)."""
    from byoc.runtime import toolchain

    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    source = "int byoc_probe(void) { return 7; }\n"
    default = toolchain.compile_shared(source)
    monkeypatch.setenv("BYOC_CFLAGS", "-O0 -g")
    custom = toolchain.compile_shared(source)
    assert custom != default and custom.exists()
    monkeypatch.setenv("BYOC_CFLAGS", "-Ono-such-level")
    with pytest.raises(byoc.ByocError, match="rejected generated code"):
        toolchain.compile_shared(source)
