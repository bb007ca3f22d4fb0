"""Saved models that cannot lie (runtime/saved.py, signature.py, elf.py).

In a fresh process, every single byte of a small saved model changed (the
checksums and seal as they were), every member cut short, and every doctored
file (manifest or member edited, checksums recomputed, resealed) must be
refused by `byoc.load` with a ByocError: never loaded, never a crash. The
fuzz harness (`python -m tests.fuzz --kind saved`) sweeps longer.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.runtime.elf import RelocatableObject
from byoc.runtime.signature import signature_name

TESTS = Path(__file__).parent
EXAMPLES = TESTS.parent / "examples"

TINY = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Three saved models: host only, one C backend, and two backends with weights."""
    root = tmp_path_factory.mktemp("saved")
    models = {
        "tiny": (TINY, []),
        "guide": (EXAMPLES / "byoc_guide.mlir", ["ccompiler"]),
        "cnn": (EXAMPLES / "cnn.onnx", ["cblas", "ccompiler"]),
    }
    paths = {}
    for name, (source, targets) in models.items():
        paths[name] = root / f"{name}.byoc"
        byoc.compile(source, targets=targets, cache=False).save(paths[name])
    return paths


@pytest.fixture
def scratch(tmp_path):
    """A directory for the mutants: in memory when the machine has one (each
    of thousands of mutants is written once)."""
    import tempfile

    shm = Path("/dev/shm")
    if shm.is_dir():
        with tempfile.TemporaryDirectory(dir=shm, prefix="byoc-test-") as tmp:
            yield Path(tmp)
    else:
        yield tmp_path


def run_sweep(jobs: list[tuple[Path, str]], tmp_path: Path) -> dict:
    log = tmp_path / "sweep.log"
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from fuzz.saved_files import sweep\n"
        f"jobs = {[(str(p), k) for p, k in jobs]!r}\n"
        f"print(json.dumps(sweep(jobs, {str(tmp_path / 'mutant.byoc')!r}, {str(log)!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    last = log.read_text().splitlines()[-1] if log.exists() else "nothing"
    assert proc.returncode == 0, f"the loader died ({proc.returncode}) on {last}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_single_byte_change_is_refused(saved, scratch):
    """Exhaustive over the host-only model; every 4th byte of the one with C
    (the fuzz harness does all of them)."""
    result = run_sweep([(saved["tiny"], "flips")], scratch)
    assert result["escaped"] == []
    assert result["counts"] == {"clean error": saved["tiny"].stat().st_size}
    guide = saved["guide"].read_bytes()
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from pathlib import Path\n"
        "from fuzz.saved_files import byte_flips, load_outcome\n"
        f"data = Path({str(saved['guide'])!r}).read_bytes()\n"
        f"scratch = Path({str(scratch / 'g.byoc')!r})\n"
        "bad = []\n"
        "for what, mutant in byte_flips(data, range(0, len(data), 4)):\n"
        "    scratch.write_bytes(mutant)\n"
        "    outcome, detail = load_outcome(scratch)\n"
        "    if outcome != 'clean error':\n"
        "        bad.append(what + ': ' + outcome + ' ' + detail)\n"
        "print(json.dumps(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == [], len(guide)


def test_truncated_and_doctored_files_are_refused(saved, scratch):
    result = run_sweep(
        [(saved[name], "truncations,doctored") for name in ("tiny", "guide", "cnn")], scratch
    )
    assert result["escaped"] == []
    assert result["counts"]["clean error"] > 60


def _doctor(path: Path, target: Path, edit) -> None:
    sys.path.insert(0, str(TESTS))
    from fuzz.saved_files import read_members, write_sealed

    manifest, members = read_members(path.read_bytes())
    edit(manifest, members)
    target.write_bytes(write_sealed(manifest, members))


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("output shape larger", r"outputs: \(output0: 1x18xfloat32\) in the manifest, \(output0: 1x10xfloat32\) in the code"),
        ("output shape smaller", r"outputs: \(output0: 1x9xfloat32\) in the manifest"),
        ("extra output", r"outputs: \(output0: 1x10xfloat32, extra: 1x10xfloat32\) in the manifest"),
        ("input dtype float64", r"inputs: \(x: 1x3x32x32xfloat64\) in the manifest, \(x: 1x3x32x32xfloat32\) in the code"),
        ("entry renamed", r"the host code has no signature for entry 'byoc_\w+_main'"),
        ("artifact dropped", r"the backends: \['cblas'\] in the manifest, \['cblas', 'ccompiler'\] in the code"),
        ("weights dropped", r"the weights blob \(symbol, bytes\): None in the manifest"),
        ("host objects renamed", r"malformed manifest: host_objects is \['lib/0_0.so'\]"),
        ("host object listed twice", r"malformed manifest: host_objects is \['host.o', 'host.o'\]"),
        ("host object missing", r"malformed manifest \(KeyError: 'host.1.o'\)"),
        ("host.o truncated", r"corrupted: host.o is not a valid object \(section table out of the file\)"),
        ("host.o zeroed", r"corrupted: host.o is not a valid object \(not an ELF object\)"),
        ("library truncated", r"corrupted: lib/0_0.so is not a valid shared object \(segment \d runs past the end"),
    ],
)
def test_doctored_file_names_the_lie(saved, tmp_path, case, message):
    """The crafted files of issue 13 that crashed or misled `load` (run in this
    process: each must be refused before any code is mapped)."""
    from fuzz.saved_files import DOCTORINGS

    bad = tmp_path / "doctored.byoc"
    _doctor(saved["cnn"], bad, DOCTORINGS[case])
    with pytest.raises(byoc.ByocError, match=message):
        byoc.load(bad)


def test_a_sealed_file_loads_and_runs(saved):
    model = byoc.load(saved["cnn"])
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    fresh = byoc.compile(EXAMPLES / "cnn.onnx", targets=["cblas", "ccompiler"], cache=False)
    np.testing.assert_allclose(model(x), fresh(x), rtol=1e-5, atol=1e-6)


def test_host_object_carries_its_signature(saved):
    with zipfile.ZipFile(saved["cnn"]) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        host = RelocatableObject(zf.read("host.o"), platform.machine())
    signature = json.loads(host.symbol_bytes(signature_name(manifest["entry"])))
    assert signature["entry"] == manifest["entry"]
    assert signature["inputs"] == manifest["inputs"] and signature["outputs"] == manifest["outputs"]
    assert sorted(signature["calls"]) == ["cblas", "ccompiler"]
    assert signature["weights"] == {"symbol": manifest["weights"]["symbol"], "size": manifest["weights"]["size"]}
    called = {name for names in signature["calls"].values() for name in names}
    assert called and called <= set(host.undefined())


def test_an_unsealed_archive_is_refused(saved, tmp_path):
    rewritten = tmp_path / "unsealed.byoc"
    with zipfile.ZipFile(saved["guide"]) as src, zipfile.ZipFile(rewritten, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info))
    with pytest.raises(byoc.ByocError, match="not a sealed byoc compiled model"):
        byoc.load(rewritten)
