"""The fuzzing worker: runs one input after another and says how each ended.

Started by the runner (tests/fuzz/runner.py) as a child process, so that a
crash or a hang here is counted there. Reads one JSON request a line on
stdin, `{"kind": "mlir" | "onnx" | "saved", "path": ..., "targets": [...]}`,
and answers one JSON line `{"outcome": ..., "detail": ...}` on the file
descriptor given as its argument (stdout belongs to whatever the compiled
code or the C compiler prints).

Outcomes: "clean error" (a ByocError naming the input), "unlocated error" (a
ByocError that does not name it), "success" (compiled, and its results agree
with a reference, or there was nothing to compare), "wrong answer",
"traceback" (any other exception).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

MAX_CHECKED_ELEMENTS = 1 << 22
"""Inputs or outputs larger than this are not run: a mutant's dims are free."""


def _elements(specs: Any) -> float:
    return sum(float(np.prod(s.shape, dtype=np.float64)) for s in specs)


def random_inputs(specs: Any, seed: int = 0, outputs: Any = ()) -> list[np.ndarray] | None:
    """Inputs for `specs`, or None when they or the `outputs` are too large to run."""
    rng = np.random.default_rng(seed)
    if _elements(specs) > MAX_CHECKED_ELEMENTS or _elements(outputs) > MAX_CHECKED_ELEMENTS:
        return None
    arrays = []
    for spec in specs:
        if spec.dtype.kind == "f":
            arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        elif spec.dtype.kind == "b":
            arrays.append(rng.integers(0, 2, spec.shape).astype(spec.dtype))
        else:
            arrays.append(rng.integers(0, 3, spec.shape).astype(spec.dtype))
    return arrays


def disagreement(got: Any, expected: list[np.ndarray], nan_is_any: bool = False) -> str | None:
    """Why `got` (a model's result) is not `expected`, or None if it is.
    `nan_is_any`: a NaN on either side matches anything (against other
    projects' code, whose max and min may skip NaN where numpy's propagate
    it: their references, and the onnxruntime backend)."""
    got = list(got) if isinstance(got, tuple) else [got]
    if len(got) != len(expected):
        return f"{len(got)} results, the reference has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            return f"result {i} has shape {g.shape}, the reference {e.shape}"
        if g.dtype.kind in "iub" and e.dtype.kind in "iub":
            if not np.array_equal(g, e):
                return f"result {i} differs at {int(np.argmax(g != e))}"
            continue
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        finite = np.isfinite(e64)
        scale = max(1.0, float(np.max(np.abs(e64[finite]), initial=0.0)))
        close = np.isclose(g64, e64, rtol=1e-3, atol=1e-4 * scale, equal_nan=True)
        # Infinite weights: the reference multiplies padding zeros by them
        # (nan), compiled kernels skip padded taps (inf, as onnxruntime does);
        # either value is no answer to compare.
        close |= ~np.isfinite(g64) & ~np.isfinite(e64)
        # Values at the end of the float range: the reference computes in
        # float64 and rounds once, kernels overflow on the way (inf).
        if g.dtype.kind == "f":
            huge = np.finfo(g.dtype).max / 2
            close |= np.isinf(g64) & (np.abs(e64) > huge) & (np.sign(g64) == np.sign(e64))
        if nan_is_any:
            close |= np.isnan(g64) | np.isnan(e64)
        if not close.all():
            at = int(np.argmax(~close.ravel()))
            return f"result {i}[{at}] is {g64.ravel()[at]!r}, the reference {e64.ravel()[at]!r}"
    return None


def located(message: str, path: str) -> bool:
    """Whether a ByocError names the input it is about (its file's name)."""
    return Path(path).name in message


def compare_mlir(model: Any, path: str) -> tuple[str, str]:
    from byoc.frontend.parse import parse_file
    from byoc.runtime.reference import run_reference

    args = random_inputs(model.inputs, outputs=model.outputs)
    if args is None:
        return "success", "too large to run"
    got = model(*args)
    try:
        expected = run_reference(parse_file(path), args)
    except Exception as err:  # noqa: BLE001 - the reference's limits are not byoc's errors
        return "success", f"no reference ({type(err).__name__})"
    wrong = disagreement(got, expected)
    return ("wrong answer", wrong) if wrong else ("success", "")


def compare_onnx(model: Any, path: str, targets: list[str]) -> tuple[str, str]:
    import onnx
    from onnx.reference import ReferenceEvaluator

    from byoc.frontend.onnx import from_onnx
    from byoc.runtime.reference import run_reference

    args = random_inputs(model.inputs, outputs=model.outputs)
    if args is None:
        return "success", "too large to run"
    got = model(*args)
    try:
        expected = run_reference(from_onnx(path), args)
    except Exception as err:  # noqa: BLE001
        return "success", f"no reference ({type(err).__name__})"
    wrong = disagreement(got, expected, nan_is_any="onnxruntime" in targets)
    try:
        proto = onnx.load(path)
        names = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
        feeds = dict(zip(names, args, strict=True))
    except Exception as err:  # noqa: BLE001
        return ("wrong answer", f"against byoc's reference: {wrong}") if wrong else ("success", f"no onnx reference ({type(err).__name__})")
    if wrong:
        # byoc's reference computes some float32 ops in float64 (a pool's
        # sum): where float32 overflows on the way (inf) and it does not,
        # onnxruntime, computing in float32 too, decides.
        runtime = onnxruntime_outputs(path, feeds)
        if runtime is not None and disagreement(got, runtime, nan_is_any=True) is None:
            return "success", f"byoc's reference differs; onnxruntime agrees: {wrong}"
        return "wrong answer", f"against byoc's reference: {wrong}"
    # The importer's meaning against onnx's own, for models onnx calls valid.
    try:
        onnx.checker.check_model(proto, full_check=True)
        official = ReferenceEvaluator(proto).run(None, feeds)
    except Exception as err:  # noqa: BLE001
        return "success", f"no onnx reference ({type(err).__name__})"
    wrong = disagreement(got, [np.asarray(o) for o in official], nan_is_any=True)
    if wrong is None:
        return "success", ""
    # onnx's reference has its own reading of old opsets and of NaN (its
    # MaxPool skips NaN, its BatchNormalization-9 differs from onnxruntime's):
    # onnxruntime, in a child process as it may crash, has the last word.
    runtime = onnxruntime_outputs(path, feeds)
    if runtime is None:
        # Opsets onnxruntime does not run (before 7): onnx's reference alone
        # decides nothing (its AveragePool-1 counts padding, which the
        # operator's text excludes, as byoc does).
        return "success", f"unverified: onnx's reference differs, onnxruntime refuses: {wrong}"
    wrong_runtime = disagreement(got, runtime, nan_is_any=True)
    if wrong_runtime is None:
        return "success", "onnx's reference differs; onnxruntime agrees"
    return "wrong answer", f"against onnxruntime: {wrong_runtime} (and onnx's reference: {wrong})"


ONNXRUNTIME = """import sys, numpy as np, onnxruntime as ort
ort.set_default_logger_severity(3)
feeds = dict(np.load(sys.argv[2]))
outputs = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"]).run(None, feeds)
np.savez(sys.argv[3], *outputs)
"""


def onnxruntime_outputs(path: str, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's results on `feeds`, or None if it refuses or crashes."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="byoc-fuzz-ort-") as tmp:
        np.savez(Path(tmp) / "in.npz", **feeds)
        try:
            proc = subprocess.run(
                [sys.executable, "-c", ONNXRUNTIME, path, str(Path(tmp) / "in.npz"), str(Path(tmp) / "out.npz")],
                capture_output=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            return None
        if proc.returncode != 0:
            return None
        with np.load(Path(tmp) / "out.npz") as out:
            return [out[f"arr_{i}"] for i in range(len(out.files))]


def compare_saved(model: Any, path: str) -> tuple[str, str]:
    """A mutant that loads must still compute what its original did."""
    original = Path(path).with_name(Path(path).name.split(".mutant")[0])
    args = random_inputs(model.inputs, outputs=model.outputs)
    if args is None or not original.exists():
        return "success", "nothing to compare"
    import byoc

    expected = byoc.load(original)(*args)
    wrong = disagreement(model(*args), list(expected) if isinstance(expected, tuple) else [expected])
    return ("wrong answer", wrong) if wrong else ("success", "")


def run_case(kind: str, path: str, targets: list[str]) -> tuple[str, str]:
    import byoc

    try:
        if kind == "saved":
            model = byoc.load(path)
            return compare_saved(model, path)
        model = byoc.compile(path, targets=targets, quiet=True)
        if kind == "mlir":
            return compare_mlir(model, path)
        return compare_onnx(model, path, targets)
    except byoc.ByocError as err:
        message = str(err).strip()
        first = message.splitlines()[0] if message else ""
        if "internal compiler error" in message:
            return "traceback", first
        return ("clean error" if located(message, path) else "unlocated error"), first
    except Exception as err:  # noqa: BLE001 - exactly what the harness looks for
        frame = traceback.extract_tb(err.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return "traceback", f"{type(err).__name__} at {where}: {str(err)[:300]}"


ADDRESS_SPACE = 8 << 30
"""The worker's address space: a mutant's gigabyte buffers fail to allocate
(a clean out-of-memory error) instead of taking a shared machine's memory."""


def main() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    answers = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    answers.write(json.dumps({"outcome": "ready"}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        outcome, detail = run_case(request["kind"], request["path"], request.get("targets", []))
        answers.write(json.dumps({"outcome": outcome, "detail": detail}) + "\n")


if __name__ == "__main__":
    main()
