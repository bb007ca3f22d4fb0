"""Compile time: real models cold and cached next to onnxruntime, and growth with graph size.

Part 1, the light architectures of the onnx wheel with random weights (see
real_models.py), each in fresh processes:

- libbyoc: the C runtime's first build on this machine (into an empty runtime
  folder), wall and CPU; then the shared runtime folder (`$BYOC_RUNTIME_DIR`,
  default `~/.cache/byoc/runtime`) is warmed, as it is after a machine's first
  compile: it is built once per machine, compiler and flags, not per model;
- cold: `byoc.compile` with an empty cache (libbyoc built), for
  `cblas,ccompiler` and host only (`[]`), with the stages that took longest
  and the peak memory (RSS) of the process, saving the model included (C
  compilers not counted);
- cached: `byoc.compile` of the same file in a new process;
- load: `byoc.load` of the saved model;
- ort: `onnxruntime.InferenceSession` on the same file.

Every figure is timed after `import byoc` (or `import onnxruntime`); "cpu"
is the CPU time of the compile (all its threads and C compilers), which a
loaded machine disturbs less than the wall clock. With
`--repeat N` the contenders alternate N times and the table shows medians
(minimums in brackets).

Part 2, chains and diamonds (bench/partition_scaling.py's graphs: add for
ccompiler, tanh on the host; their repeated blocks compile once) and varied
graphs (`varied`: nothing repeats) of 1k to 32k ops, compiled host-only and with
ccompiler, each run once and checked against the numpy reference; the
growth per doubling; and one 100k-op chain.

Goals (issue 14): ResNet-50 <= 3 s, DenseNet-121 <= 4 s, VGG-19 <= 8 s cold
with cblas,ccompiler (peak memory <= 2x the file), host-only within 1.5x;
cached <= 0.3 s; load of VGG-19 <= 1 s; doubling <= 2.2x, 32k ops <= 60 s.

    python bench/compile_time.py                       # everything (~15 min)
    python bench/compile_time.py --models resnet50,vgg19 --no-graphs
    python bench/compile_time.py --no-models --max 8000 --huge 0
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_MODELS = "resnet50,densenet121,inception_v2,vgg19,shufflenet,squeezenet"
TARGET_SETS = {"cblas,ccompiler": ["cblas", "ccompiler"], "host": []}


# --- The worker: one measurement in a fresh process ------------------------------


def _peak() -> float:
    """Peak RSS of this process, in MB (10^6 bytes, the unit the file sizes
    are printed in, so the two compare directly). Not getrusage's ru_maxrss:
    Linux keeps that across fork and exec, so a worker would report its
    parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):  # in kB (1024 bytes)
                return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def _cpu() -> float:
    """CPU seconds of this process (all threads) and its children so far: a
    figure a loaded machine disturbs less than the wall clock."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def work(task: dict) -> dict:
    kind = task["kind"]
    if kind == "ort":
        import onnxruntime as ort

        ort.set_default_logger_severity(3)
        start = time.perf_counter()
        ort.InferenceSession(task["path"], providers=["CPUExecutionProvider"])
        return {"seconds": time.perf_counter() - start, "peak": _peak()}
    os.environ["BYOC_CACHE_DIR"] = task["cache"]
    if kind == "libbyoc":  # its first build, into an empty runtime folder
        os.environ["BYOC_RUNTIME_DIR"] = task["runtime"]
        from byoc.runtime import libbyoc

        libbyoc.build_key()  # the compiler's version and the CPU: not the build's
        cpu = _cpu()
        start = time.perf_counter()
        libbyoc.library()
        return {"seconds": time.perf_counter() - start, "cpu": _cpu() - cpu}
    import numpy as np

    import byoc

    if kind == "load":
        start = time.perf_counter()
        byoc.load(task["saved"])
        return {"seconds": time.perf_counter() - start, "peak": _peak()}
    if kind in ("cold", "cached"):
        cpu = _cpu()
        start = time.perf_counter()
        model = byoc.compile(task["path"], targets=task["targets"], quiet=True)
        seconds = time.perf_counter() - start
        cpu = _cpu() - cpu
        if task.get("saved"):
            model.save(task["saved"])
        return {"seconds": seconds, "cpu": cpu, "timings": model.timings, "peak": _peak()}
    # A chain or a diamond of n ops.
    sys.path.insert(0, str(HERE))
    import partition_scaling

    from byoc.runtime.reference import run_reference

    build = varied if task["graph"] == "varied" else getattr(partition_scaling, task["graph"])
    module = build(task["n"])
    cpu = _cpu()
    start = time.perf_counter()
    model = byoc.compile(module, targets=task["targets"], cache=False, quiet=True)
    seconds = time.perf_counter() - start
    cpu = _cpu() - cpu
    x = np.random.default_rng(0).uniform(-1, 1, 16).astype(np.float32)
    start = time.perf_counter()
    got = model(x)
    run = time.perf_counter() - start
    want = run_reference(module, [x])[0]
    # Long graphs amplify rounding (an 8k-op varied graph turns a 1-ulp change
    # of its input into 4e-4 of its output): the compiled code may differ from
    # the reference by what the reference itself moves for such a change.
    moved = run_reference(module, [np.nextafter(x, np.float32(2))])[0]
    ok = bool(np.allclose(got, want, rtol=1e-4, atol=1e-5 + 10 * float(np.abs(moved - want).max())))
    return {"seconds": seconds, "cpu": cpu, "timings": model.timings, "run": run, "ok": ok,
            "peak": _peak()}


def varied(n: int):  # noqa: ANN201 - a ModuleOp
    """n ops no two stretches of which are alike (so nothing is deduplicated):
    add, multiply by a constant of its own (ccompiler), tanh (host), subtract,
    each reading a value from up to 50 ops back."""
    import numpy as np
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType, ModuleOp
    from xdsl.ir import Block, Region

    from byoc.dialects import relay

    sys.path.insert(0, str(HERE))
    from partition_scaling import TYPE

    rng = np.random.default_rng(n)
    block = Block(arg_types=[TYPE])
    values = [block.args[0]]
    for i in range(n):
        a = values[-1]
        b = values[max(0, len(values) - 1 - int(rng.integers(0, 50)))]
        kind = i % 4
        if kind == 0:
            op = relay.AddOp(a, b)
        elif kind == 1:
            w = relay.ConstantOp.from_numpy(rng.uniform(0.5, 1.0, TYPE.get_shape()).astype(np.float32))
            block.add_op(w)
            op = relay.MultiplyOp(a, w.result)
        elif kind == 2:
            op = relay.TanhOp(a)
        else:
            op = relay.SubtractOp(a, b)
        block.add_op(op)
        values.append(op.results[0])
    block.add_op(func.ReturnOp(values[-1]))
    main = func.FuncOp("main", FunctionType.from_lists([TYPE], [TYPE]), Region(block))
    return ModuleOp([main])


def measure(task: dict) -> dict:
    """Run `task` in a fresh Python; its result, or {"error": ...}."""
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(task)],
        capture_output=True, text=True,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {"error": tail[:100]}
    return json.loads(lines[-1])


# --- Part 1: real models ---------------------------------------------------------


def model_file(name: str, folder: Path) -> Path:
    """light_<name>.onnx with random weights (seed 0), written once into `folder`."""
    path = folder / f"{name}-random.onnx"
    if not path.exists():
        import onnx

        import real_models

        model = real_models.with_random_weights(onnx.load(real_models.light_model_path(name)))
        tmp = path.with_suffix(".tmp")
        onnx.save(model, tmp)
        tmp.replace(path)
    return path


def _stat(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f})"


def _top_stages(timings: dict[str, float], count: int = 4) -> str:
    stages = sorted(((s, n) for n, s in timings.items() if n != "total"), reverse=True)
    return ", ".join(f"{n} {s:.2f}" for s, n in stages[:count])


def bench_libbyoc(repeat: int) -> None:
    """libbyoc's first build on this machine (into empty runtime folders), then
    the shared runtime folder warmed, so the cold compiles below leave it out:
    it is built once per machine, compiler and flags, not per model or cache."""
    from byoc.runtime import libbyoc

    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        runtime = tempfile.mkdtemp(prefix="byoc-bench-runtime-")
        try:
            result = measure({"kind": "libbyoc", "cache": runtime, "runtime": runtime})
        finally:
            shutil.rmtree(runtime, ignore_errors=True)
        if "error" in result:
            print(f"libbyoc's first build FAILED: {result['error']}")
            return
        wall.append(result["seconds"])
        cpu.append(result["cpu"])
    print(f"libbyoc (the C runtime, built once per machine): first build {_stat(wall)} s wall, "
          f"{_stat(cpu)} CPU-s")
    path = libbyoc.library()
    print(f"  warm in {path.parent.parent} before the models: their cold compiles leave it out")
    print()


def bench_models(names: list[str], folder: Path, repeat: int) -> None:
    print(
        f"Real models (random weights), seconds; median (min) of {repeat}; file and peak "
        "RSS in MB (10^6 bytes); x file = peak / file size"
    )
    print("cold: empty compile cache, libbyoc already built (see above)")
    header = (
        f"{'model':13} {'MB':>5} {'targets':16} {'cold s':>12} {'cold cpu':>12} {'cached s':>12} {'load s':>7} "
        f"{'ort s':>7} {'peak':>6} {'x file':>6}  slowest stages (cold)"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        path = model_file(name, folder)
        size = path.stat().st_size / 1e6
        for label, targets in TARGET_SETS.items():
            cold: list[float] = []
            cold_cpu: list[float] = []
            cached: list[float] = []
            loads: list[float] = []
            orts: list[float] = []
            peak = 0.0
            timings: dict[str, float] = {}
            error = None
            for _ in range(repeat):
                cache = tempfile.mkdtemp(prefix="byoc-bench-cache-")
                saved = str(Path(cache) / "model.byoc")
                try:
                    base = {"path": str(path), "targets": targets, "cache": cache}
                    first = measure({**base, "kind": "cold", "saved": saved})
                    if "error" in first:
                        error = first["error"]
                        break
                    cold.append(first["seconds"])
                    cold_cpu.append(first["cpu"])
                    peak = max(peak, first["peak"])
                    timings = first["timings"]
                    again = measure({**base, "kind": "cached"})
                    if "error" not in again:
                        cached.append(again["seconds"])
                    loaded = measure({**base, "kind": "load", "saved": saved})
                    if "error" not in loaded:
                        loads.append(loaded["seconds"])
                    session = measure({"kind": "ort", "path": str(path)})
                    if "error" not in session:
                        orts.append(session["seconds"])
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
            if error:
                print(f"{name:13} {size:5.0f} {label:16} FAILED: {error}")
                continue
            print(
                f"{name:13} {size:5.0f} {label:16} {_stat(cold):>12} {_stat(cold_cpu):>12} {_stat(cached):>12} "
                f"{_stat(loads):>7} {_stat(orts):>7} {peak:6.0f} {peak / size:6.2f}  "
                f"{_top_stages(timings)}",
                flush=True,
            )


# --- Part 2: growth --------------------------------------------------------------


def bench_graphs(graphs: list[str], largest: int, huge: int) -> None:
    sizes = []
    n = 1000
    while n <= largest:
        sizes.append(n)
        n *= 2
    print()
    print("Chains, diamonds (add: ccompiler, tanh: host) and varied graphs, cold compile in seconds")
    header = (
        f"{'graph':8} {'targets':10} {'ops':>7} {'compile s':>10} {'x prev':>7} {'cpu s':>7} "
        f"{'x prev':>7} {'run ms':>7} {'ok':>3}  slowest stages"
    )
    print(header)
    print("-" * len(header))
    runs = [(g, t, n) for g in graphs for t in ("host", "ccompiler") for n in sizes]
    if huge:
        runs += [("chain", t, huge) for t in ("host", "ccompiler")]
    previous: dict[tuple[str, str], tuple[float, float]] = {}
    for graph, label, n in runs:
        targets = [] if label == "host" else ["ccompiler"]
        cache = tempfile.mkdtemp(prefix="byoc-bench-cache-")  # no object cache either
        try:
            result = measure({"kind": "graph", "graph": graph, "n": n, "targets": targets, "cache": cache})
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if "error" in result:
            print(f"{graph:8} {label:10} {n:7d} FAILED: {result['error']}", flush=True)
            continue
        seconds, cpu = result["seconds"], result["cpu"]
        before = previous.get((graph, label))
        doubled = before is not None and n in sizes and n > sizes[0]
        ratio = f"{seconds / before[0]:.2f}" if doubled else "-"
        cpu_ratio = f"{cpu / before[1]:.2f}" if doubled else "-"
        previous[(graph, label)] = (seconds, cpu)
        print(
            f"{graph:8} {label:10} {n:7d} {seconds:10.2f} {ratio:>7} {cpu:7.2f} {cpu_ratio:>7} "
            f"{result['run'] * 1e3:7.1f} "
            f"{'yes' if result['ok'] else 'NO':>3}  {_top_stages(result['timings'], 3)}",
            flush=True,
        )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(work(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help=f"comma-separated light models (default {DEFAULT_MODELS})")
    parser.add_argument("--no-models", action="store_true", help="skip part 1")
    parser.add_argument("--no-graphs", action="store_true", help="skip part 2")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (medians)")
    parser.add_argument("--graphs", default="chain,diamond,varied",
                        help="chain, diamond (repeated blocks, deduplicated) and varied (nothing alike)")
    parser.add_argument("--max", type=int, default=32000, help="largest graph")
    parser.add_argument("--huge", type=int, default=100000, help="one chain this long (0: none)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "byoc-bench-models"),
                        help="where the random-weight models are written (kept for reuse)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} (timings are noisy on a shared machine)")
    if not args.no_models:
        bench_libbyoc(args.repeat)
        folder = Path(args.workdir)
        folder.mkdir(parents=True, exist_ok=True)
        bench_models([m for m in args.models.split(",") if m], folder, args.repeat)
    if not args.no_graphs:
        bench_graphs([g for g in args.graphs.split(",") if g], args.max, args.huge)


if __name__ == "__main__":
    main()
