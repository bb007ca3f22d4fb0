"""Misused inputs outside the IR: files that are no saved model (FIFOs, devices,
zip bombs, damaged cache entries), library names that shadow system headers,
ill-typed or misspelt Python arguments, and an onnxruntime that crashes under
`byoc-run --check`. Each is one ByocError (exit status 1), or for the last a
note while byoc's own check stands."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import byoc

BIN = Path(sys.executable).parent
EXAMPLES = Path(__file__).parent.parent / "examples"
GUIDE = EXAMPLES / "byoc_guide.mlir"


def test_load_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "model.byoc"
    os.mkfifo(fifo)
    code = f"import byoc\ntry:\n    byoc.load({str(fifo)!r})\nexcept byoc.ByocError as e:\n    print(e)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == f"{fifo}: error: not a regular file, so not a saved model"


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/"])
def test_load_refuses_devices_and_directories(path):
    with pytest.raises(byoc.ByocError, match="not a regular file|not a byoc compiled model"):
        byoc.load(path)


def test_load_refuses_a_zip_bomb_before_inflating_it(tmp_path):
    bomb = tmp_path / "bomb.byoc"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", '{"format": "byoc-compiled-model"}')
        with zf.open("partitioned.mlir", "w", force_zip64=True) as out:
            zeros = bytes(1 << 24)
            for _ in range(192):  # 3 GiB of zeros, 3 MB in the file
                out.write(zeros)
    with pytest.raises(byoc.ByocError, match=r"member partitioned.mlir claims 3221225472 bytes .* \(a zip bomb\?\)"):
        byoc.load(bomb)


def test_load_refuses_a_member_named_twice(tmp_path):
    path = tmp_path / "twice.byoc"
    byoc.compile(GUIDE, targets=[], cache=False).save(path)
    with zipfile.ZipFile(path, "a") as zf, pytest.warns(UserWarning):
        zf.writestr("host.o", b"not code")
    with pytest.raises(byoc.ByocError, match="member host.o appears twice"):
        byoc.load(path)


def test_damaged_cache_entry_is_recompiled_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    text = GUIDE.read_text() + "\n// a fresh cache key\n"
    first = byoc.compile(text, targets=["ccompiler"])
    entries = list((tmp_path / "cache").rglob("*.byoc"))
    assert len(entries) == 1
    entry = entries[0]
    # Break the deflate stream of a compressed member: zlib.error, before.
    with zipfile.ZipFile(entry) as zf:
        info = zf.getinfo("partitioned.mlir")
    data = bytearray(entry.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start : start + 16] = b"\xff" * 16
    entry.write_bytes(bytes(data))
    with pytest.raises(byoc.ByocError, match="truncated or corrupted"):
        byoc.load(entry)
    again = byoc.compile(text, targets=["ccompiler"])
    x = [np.full((10, 10), i, np.float32) for i in range(4)]
    np.testing.assert_array_equal(again(*x), first(*x))
    byoc.load(entry)  # replaced by a good one


@pytest.mark.parametrize("name", ["stdint", "math", "cblas", "stdio"])
def test_library_names_that_shadow_system_headers_are_refused(name, tmp_path):
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(GUIDE), "--emit-library", "--name", name, "-o", str(tmp_path / f"lib{name}.so")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert f"error: library name '{name}' would write {name}.h, which shadows the system header" in proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"targets": 5}, "targets must be backend names in priority order .* not a int"),
        ({"targets": {"ccompiler"}}, "not a set"),
        ({"targets": b"ccompiler"}, "not a bytes"),
        ({"targets": ["ccompiler", None]}, r"targets must be backend names \(strings\); got None"),
        ({"target": ["ccompiler"]}, r"byoc.compile\(\) has no argument 'target'"),
        ({"cache": "no"}, "cache must be True or False"),
    ],
)
def test_ill_typed_or_misspelt_arguments(kwargs, message):
    with pytest.raises(byoc.ByocError, match=message):
        byoc.compile(GUIDE, **kwargs)


def test_load_of_a_non_path():
    with pytest.raises(byoc.ByocError, match=r"byoc.load\(\) takes a path, not a int"):
        byoc.load(5)


CRASHING_ONNXRUNTIME = """\
import os
import signal


def set_default_logger_severity(level):
    pass


class InferenceSession:
    def __init__(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_check_survives_onnxruntime_crashing(tmp_path):
    """A model that crashes onnxruntime is reported; the reference check stands."""
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(CRASHING_ONNXRUNTIME)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"))
    proc = subprocess.run(
        [str(BIN / "byoc-run"), str(EXAMPLES / "cnn.onnx"), "--check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "note: onnxruntime crashed on this model (SIGSEGV); not compared with it" in proc.stderr
    assert "check: matches the reference" in proc.stdout


def test_check_against_onnxruntime_still_compares(tmp_path):
    pytest.importorskip("onnxruntime")
    proc = subprocess.run(
        [str(BIN / "byoc-run"), str(EXAMPLES / "cnn.onnx"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "check: matches onnxruntime" in proc.stdout
