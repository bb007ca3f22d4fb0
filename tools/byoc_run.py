"""byoc-run: compile a model, run it on arrays, and optionally check it.

    byoc-run model.mlir --annotate=ccompiler --check
    byoc-run model.mlir --annotate=mybackend,ccompiler --check=functions
    byoc-run model.mlir --inputs in.npz --output out.npz
    byoc-run model.onnx --input-shape x=1,3,224,224 --check

Without --inputs, inputs are seeded random normal arrays. --check compares the
results with the numpy reference interpreter (and onnxruntime for .onnx);
--check=functions compares each external function with the reference on the
inputs it received, naming the first that disagrees. Either exits with
status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from byoc.backends import DEFAULT_BACKEND
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.build import compile, load_source, main_function, tensor_specs
from byoc.runtime.compiled import CompiledModule, TensorSpec
from byoc.runtime.reference import run_reference
from byoc.tools.common import (
    add_debug_argument,
    add_input_shape_argument,
    apply_debug,
    input_shapes,
    run_cli,
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="byoc-run", description="Compile and run a model on numpy arrays."
    )
    p.add_argument("file", help="relay-dialect .mlir file or ONNX .onnx model")
    p.add_argument(
        "--annotate",
        nargs="?",
        const=DEFAULT_BACKEND,
        default=DEFAULT_BACKEND,
        metavar="BACKENDS",
        help="backends in priority order, comma-separated (default "
        f"{DEFAULT_BACKEND}; empty: host only)",
    )
    add_input_shape_argument(p)
    p.add_argument(
        "--inputs",
        metavar="NPZ",
        help=".npz with one array per input of @main, named as the inputs "
        "(np.savez(path, a=..., b=...)), of their exact shapes and dtypes",
    )
    p.add_argument("--output", help="write the results to this .npz")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs")
    p.add_argument(
        "--check",
        nargs="?",
        const="outputs",
        choices=("outputs", "functions"),
        help="compare with the reference interpreter: the model's outputs "
        "(--check), or each external function on its own inputs (--check=functions)",
    )
    p.add_argument(
        "--no-fallback",
        action="store_true",
        help="fail instead of running on the host or another backend what a "
        "backend declines or fails to generate code for",
    )
    add_debug_argument(p)
    p.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of --check")
    p.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of --check")
    p.add_argument(
        "--runs", type=int, default=0, help="also time this many runs (median)"
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="print where a call's time goes, per external function and host op group",
    )
    p.add_argument(
        "--timings", action="store_true", help="print the seconds of each compile stage"
    )
    p.add_argument(
        "--quiet", action="store_true", help="no progress line while a slow compile runs"
    )
    p.add_argument(
        "--no-simplify",
        action="store_true",
        help="compile the graph as given, without byoc-simplify",
    )
    return p


NPZ_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"


def read_inputs(path: str, specs: Sequence[TensorSpec]) -> list[np.ndarray]:
    """Arrays for @main's inputs from an .npz, by name, each of its input's exact
    shape and dtype; anything else is a ByocError naming the file and the array."""
    where = f"error: {path}"
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as err:
        raise ByocError(f"{where}: cannot read the inputs: {err.strerror or err}") from None
    usage = "--inputs takes an .npz with one array per input, by name (np.savez(path, a=..., b=...))"
    if magic.startswith(NPY_MAGIC):
        raise ByocError(f"{where}: is an .npy file (one unnamed array); {usage}")
    if not magic.startswith(NPZ_MAGIC):
        raise ByocError(f"{where}: is not an .npz file; {usage}")
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as data:
            for name in data.files:
                try:
                    arrays[name] = data[name]
                except ValueError as err:
                    if "allow_pickle" in str(err):
                        raise ByocError(
                            f"{where}: array '{name}' holds Python objects; inputs are "
                            "numeric arrays"
                        ) from None
                    raise
    except ByocError:
        raise
    except Exception as err:
        raise ByocError(f"{where}: cannot read the inputs: {err}") from None
    names = [s.name for s in specs]
    expected = ", ".join(str(s) for s in specs) or "none"
    missing = [n for n in names if n not in arrays]
    extra = [n for n in arrays if n not in names]
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"no array for {', '.join(missing)}")
        if extra:
            problems.append(f"arrays {', '.join(extra)} match no input")
        raise ByocError(f"{where}: {'; '.join(problems)} (@main takes {expected})")
    for spec in specs:
        array = arrays[spec.name]
        if array.dtype != spec.dtype:
            raise ByocError(
                f"{where}: array '{spec.name}' has dtype {array.dtype}; the input takes "
                f"{spec.dtype} (convert it with .astype(np.{spec.dtype}))"
            )
        if array.shape != spec.shape:
            raise ByocError(
                f"{where}: array '{spec.name}' has shape {array.shape}; the input takes "
                f"{spec.shape}"
            )
    return [arrays[n] for n in names]


def input_specs(path: str, shapes: dict[str, list[int]] | None = None) -> list[TensorSpec]:
    """The inputs of a model's @main (ONNX inputs pinned by `shapes`), read
    without compiling it."""
    main = main_function(load_source(path, shapes))
    return tensor_specs(
        main.function_type.inputs.data, "input", [a.name_hint for a in main.body.block.args]
    )


def random_inputs(model: CompiledModule, seed: int) -> list[np.ndarray]:
    """Seeded random normal arrays, one per input."""
    rng = np.random.default_rng(seed)
    try:
        return [rng.standard_normal(s.shape).astype(s.dtype) for s in model.inputs]
    except MemoryError as err:
        raise ByocError(f"error: out of memory making random inputs: {err}") from None


def stage_table(timings: dict[str, float]) -> str:
    """The compile's stages and their seconds, one per line (stages that ran at
    the same time in several threads each count their own time)."""
    width = max((len(name) for name in timings), default=0)
    return "\n".join(f"  {name:<{width}}  {seconds:8.3f} s" for name, seconds in timings.items())


def partition_summary(model: CompiledModule) -> str:
    """Functions and ops per backend, and the ops left on the host."""
    lines = [
        f"  {a.backend}: {len(a.symbols)} function(s), "
        f"{model.placement.get(a.backend, 0)} op(s)"
        for a in model.artifacts
    ]
    lines.append(f"  host: {model.placement.get('host', 0)} op(s)")
    lines += [f"  fallback: {f}" for f in model.fallbacks]
    return "\n".join(lines)


def compare(name: str, results, expected, args: argparse.Namespace, model: CompiledModule) -> bool:
    """Print whether `results` match `expected` within the tolerances."""
    worst, ok = 0.0, True
    for spec, got, want in zip(model.outputs, results, expected, strict=True):
        want = np.asarray(want, dtype=spec.dtype)
        close = np.allclose(got, want, rtol=args.rtol, atol=args.atol, equal_nan=True)
        err = float(np.max(np.abs(got - want))) if got.size else 0.0
        worst = max(worst, err)
        if not close:
            ok = False
            print(f"MISMATCH with {name}: {spec.name}: max abs error {err:g}", file=sys.stderr)
    if ok:
        print(f"check: matches {name} (max abs error {worst:g})")
    return ok


ONNXRUNTIME_CHILD = """\
import sys
import numpy as np
try:
    import onnxruntime as ort
except ImportError:
    sys.exit(3)
ort.set_default_logger_severity(3)
model, inputs, outputs = sys.argv[1:4]
with np.load(inputs) as data:
    arrays = [data[f"a{i}"] for i in range(len(data.files))]
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
names = [i.name for i in session.get_inputs()]
results = session.run(None, dict(zip(names, arrays)))
np.savez(outputs, **{f"r{i}": r for i, r in enumerate(results)})
"""


def onnxruntime_results(path: str, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's outputs for an .onnx model, or None (saying why) when it is
    not installed, refuses the model or crashes on it.

    It runs in a child process: a model that crashes onnxruntime must not take
    byoc down with it, and byoc's own check against the reference stands.
    """
    with tempfile.TemporaryDirectory(prefix="byoc-check-") as tmp:
        given, produced = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        np.savez(given, **{f"a{i}": a for i, a in enumerate(inputs)})
        try:
            proc = subprocess.run(
                [sys.executable, "-c", ONNXRUNTIME_CHILD, path, str(given), str(produced)],
                capture_output=True,
                text=True,
                timeout=ONNXRUNTIME_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            print(f"note: onnxruntime did not finish in {ONNXRUNTIME_TIMEOUT} s; "
                  "not compared with it", file=sys.stderr)
            return None
        if proc.returncode == 3:
            return None  # not installed
        if proc.returncode < 0:
            try:
                name = signal.Signals(-proc.returncode).name
            except ValueError:
                name = f"signal {-proc.returncode}"
            print(f"note: onnxruntime crashed on this model ({name}); not compared "
                  "with it", file=sys.stderr)
            return None
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            print(f"note: onnxruntime cannot run this model ({why}); not compared "
                  "with it", file=sys.stderr)
            return None
        with np.load(produced) as data:
            return [data[f"r{i}"] for i in range(len(data.files))]


ONNXRUNTIME_TIMEOUT = 600
"""Seconds onnxruntime may take on `--check` before byoc stops waiting."""


def run(args: argparse.Namespace) -> int:
    apply_debug(args)
    targets = [t for t in args.annotate.split(",") if t.strip()]
    shapes = input_shapes(args.input_shape)
    given = read_inputs(args.inputs, input_specs(args.file, shapes)) if args.inputs else None
    print(f"compiling {args.file} for {', '.join(targets) or 'the host only'} ...", flush=True)
    started = time.perf_counter()
    model = compile(
        args.file,
        targets=targets,
        quiet=args.quiet,
        input_shapes=shapes,
        fallback=not args.no_fallback,
        simplify=not args.no_simplify,
    )
    compiled_in = time.perf_counter() - started
    print(f"compiled in {compiled_in:.2f} s")
    if args.timings:
        print(stage_table(model.timings))
    print(partition_summary(model))
    inputs = given if given is not None else random_inputs(model, args.seed)
    outputs = model(*inputs)
    results = list(outputs) if isinstance(outputs, tuple) else [outputs]
    for spec, value in zip(model.outputs, results):
        print(f"  {spec.name}: shape {value.shape} {value.dtype}")
    if args.output:
        np.savez(args.output, **{s.name: v for s, v in zip(model.outputs, results)})
    if args.runs > 0:
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            model(*inputs)
            times.append(time.perf_counter() - t0)
        print(f"median latency over {args.runs} runs: {np.median(times) * 1e6:.1f} us")
    if args.profile:
        model.profile(*inputs)
    if args.check == "functions":
        print("checking each external function against the reference ...", flush=True)
        checks = model.verify(*inputs, rtol=args.rtol, atol=args.atol)
        for check in checks:
            print(f"  {check}")
        print(f"check: {len(checks)} external function call(s) and the outputs match the reference")
    elif args.check:
        print("checking against the reference interpreter ...", flush=True)
        ok = compare("the reference", results, run_reference(load_source(args.file, shapes), inputs), args, model)
        if str(args.file).endswith(".onnx"):
            expected = onnxruntime_results(str(args.file), inputs)
            if expected is not None:
                ok = compare("onnxruntime", results, expected, args, model) and ok
        if not ok:
            return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    status = 0

    def body() -> None:
        nonlocal status
        status = run(parser().parse_args(argv))

    return run_cli(body) or status


if __name__ == "__main__":
    sys.exit(main())
