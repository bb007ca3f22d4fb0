"""ONNX conformance: runs the onnx package's test models through byoc and
prints, per suite and configuration, how many pass, are unsupported, fail
with an error, or give wrong results, and the unsupported ops ranked by how
many tests they block.

Suites: the test data shipped in the onnx wheel (`light`, `pytorch-converted`,
`pytorch-operator`, `simple`; see real_models.py) and the node tests the onnx
package generates (`node`: `onnx.backend.test.loader.load_model_tests(kind=
"node")`, written once to `$BYOC_CACHE_DIR/onnx-node-tests-<onnx version>/`
so later runs skip the generation). The light models get the onnx runner's
inputs (`runner_inputs`) and are compared with their shipped outputs; every
other test with its `test_data_set_*`, at the tolerances the test declares.

    python bench/onnx_suites.py                          # everything, both configurations
    python bench/onnx_suites.py --suite node --filter 'resize|slice'
    python bench/onnx_suites.py --suite light --targets cblas,ccompiler
    python bench/onnx_suites.py --suite light --random-weights   # against onnxruntime
    python bench/onnx_suites.py --suite node --targets host --jobs 2 --json out.json
    python bench/onnx_suites.py --report out.json        # its tables again, from the file

Each test runs in a worker process (one per `--jobs`) with a timeout, so a
crash or a hang costs one test, not the run; compiles go through byoc's
compile cache, so a second run mostly loads. For the node suite the runner
also prints the share of passing tests among those whose inputs are float32
(or int32/int64 index tensors: Gather's indices, or a shape, axes or pads
frozen at import) and whose every op byoc converts
(`byoc.frontend.onnx.SUPPORTED_OPS`), and lists the others of that set with
their reasons.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_models  # noqa: E402

SUITES = (*real_models.SUITES, "node")
CONFIGS = {"cblas,ccompiler": ["cblas", "ccompiler"], "host": []}
"""The configurations run by default: name -> byoc.compile targets."""
TIMEOUTS = {"light": 1800.0}
DEFAULT_TIMEOUT = 180.0
RTOL, ATOL = 1e-3, 1e-7
"""The onnx backend runner's default tolerances."""


@dataclass
class Test:
    """One model and its data: a directory with model.onnx and test_data_set_*
    (or a light model), and the tolerances it declares."""

    suite: str
    name: str
    path: str
    rtol: float = RTOL
    atol: float = ATOL
    skip: str = ""  # why it cannot be run at all (non-tensor data)
    random_weights: bool = False  # a light model with random weights, against onnxruntime


@dataclass
class Result:
    suite: str
    name: str
    config: str
    status: str  # pass, unsupported, error, wrong
    detail: str = ""
    blockers: list[str] = field(default_factory=list)  # op types (or variants) at fault
    ops: list[str] = field(default_factory=list)  # the model's op types
    input_dtypes: list[str] = field(default_factory=list)
    integer_data: list[str] = field(default_factory=list)  # integer inputs read as data, not indices
    frozen: list[str] = field(default_factory=list)  # graph inputs given their test values
    seconds: float = 0.0


# --- Collecting tests -----------------------------------------------------------------


def cache_root() -> Path:
    return Path(os.environ.get("BYOC_CACHE_DIR") or Path.home() / ".cache" / "byoc")


def node_tests_dir() -> Path:
    """The node tests as files (model.onnx, test_data_set_0/), written on first use."""
    import onnx

    root = cache_root() / f"onnx-node-tests-{onnx.__version__}"
    done = root / ".complete"
    if done.exists():
        return root
    from onnx import numpy_helper
    from onnx.backend.test.loader import load_model_tests

    print(f"writing onnx's node tests to {root} (once) ...", file=sys.stderr, flush=True)
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tests = load_model_tests(kind="node")
    for test in tests:
        folder = root / test.name
        data = folder / "test_data_set_0"
        data.mkdir(parents=True, exist_ok=True)
        onnx.save(test.model, str(folder / "model.onnx"))
        (folder / "tolerance.json").write_text(json.dumps({"rtol": test.rtol, "atol": test.atol}))
        try:
            inputs, outputs = test.data_sets[0]
            for kind, arrays in (("input", inputs), ("output", outputs)):
                for i, array in enumerate(arrays):
                    if isinstance(array, onnx.TensorProto):
                        proto = array
                    elif array is None or isinstance(array, list):
                        raise TypeError("a sequence or optional value")
                    else:
                        proto = numpy_helper.from_array(np.asarray(array))
                    (data / f"{kind}_{i}.pb").write_bytes(proto.SerializeToString())
        except Exception as err:  # non-tensor data: record why, run nothing
            (folder / "skip.txt").write_text(f"{err}")
    done.write_text("")
    return root


def collect(suites: list[str], pattern: re.Pattern[str] | None, random_weights: bool = False) -> list[Test]:
    tests: list[Test] = []
    for suite in suites:
        if suite == "light":
            for name in real_models.LIGHT_MODELS:
                path = str(real_models.light_model_path(name))
                if random_weights:
                    tests.append(Test("light", f"light_{name}_random", path, random_weights=True))
                else:
                    tests.append(Test("light", f"light_{name}", path))
            continue
        folders = (
            sorted(p for p in node_tests_dir().iterdir() if p.is_dir())
            if suite == "node"
            else list(real_models.model_dirs(suite))
        )
        for folder in folders:
            test = Test(suite, folder.name, str(folder))
            tolerance = folder / "tolerance.json"
            if tolerance.exists():
                values = json.loads(tolerance.read_text())
                test.rtol, test.atol = values["rtol"], values["atol"]
            skip = folder / "skip.txt"
            if skip.exists():
                test.skip = skip.read_text()
            tests.append(test)
    if pattern is not None:
        tests = [t for t in tests if pattern.search(f"{t.suite}/{t.name}")]
    return tests


# --- Running one test (in a worker) -------------------------------------------------------


def _load(test: Test):
    """The model, its inputs and expected outputs."""
    import onnx
    from onnx import numpy_helper

    if test.suite == "light":
        model = onnx.load(test.path)
        name = test.name.removeprefix("light_")
        if not test.random_weights:
            return model, real_models.runner_inputs(model), [real_models.light_model_output(name)]
        # The logits of random weights (the shipped 0.02 hide wrong indexing),
        # against onnxruntime on the same file.
        import onnxruntime

        model = real_models.without_final_softmax(real_models.with_random_weights(model, seed=1))
        inputs = real_models.runner_inputs(model)
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, {i.name: a for i, a in zip(session.get_inputs(), inputs)})
        test.atol = 1e-4 * float(np.abs(expected[0]).max())
        return model, inputs, expected
    folder = Path(test.path)
    model = onnx.load(str(folder / "model.onnx"))
    data = folder / "test_data_set_0"

    def arrays(kind: str) -> list[np.ndarray]:
        files = sorted(data.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]

    return model, arrays("input"), arrays("output")


_UNSUPPORTED = re.compile(r"unsupported ONNX nodes?: (.*)$")
_NEEDS_CONSTANT = re.compile(r"\(input \d+, '([^']*)'\) must be a constant")
_NODE_OP = re.compile(r"\(([\w.]+)\)")
_REFUSALS = (
    "is not supported",
    "does not support",
    "are not supported",
    "not supported (",
    "byoc runs only",
    "only the first output",
    "must be a constant",
    "known at import",
    "has no C type",
)


def _compile(model, inputs: list[np.ndarray], targets: list[str]):
    """byoc.compile, freezing each graph input byoc needs to know at import (a
    shape, axes, pads or scales fed as an input, as node tests do) to the
    test's value: the compiled model, or the error message, and what was frozen."""
    import byoc
    from byoc.frontend.diagnostics import ByocError

    frozen: list[str] = []
    while True:
        try:
            return byoc.compile(model, targets=targets), model, inputs, frozen
        except ByocError as err:
            message = str(err)
            wanted = _NEEDS_CONSTANT.search(message)
            initializers = {t.name for t in model.graph.initializer}
            names = [i.name for i in model.graph.input if i.name not in initializers]
            name = wanted.group(1) if wanted else None
            if name not in names or name in frozen or len(names) != len(inputs):
                return message, model, inputs, frozen
            model = _freeze(model, name, inputs[names.index(name)])
            inputs = [a for n, a in zip(names, inputs) if n != name]
            frozen.append(name)


def _freeze(model, name: str, value: np.ndarray):
    """A copy of `model` whose graph input `name` is an initializer holding `value`."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    kept = [i for i in model.graph.input if i.name != name]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.append(numpy_helper.from_array(value, name))
    return model


def run_test(test: Test, config: str, targets: list[str]) -> Result:
    """Import, compile for `targets`, run and compare one test."""
    from byoc.frontend.diagnostics import ByocError

    started = time.perf_counter()
    result = Result(test.suite, test.name, config, "error")
    try:
        model, inputs, expected = _load(test)
        result.ops = sorted({n.op_type for n in model.graph.node})
        result.input_dtypes = [a.dtype.name for a in inputs]
        compiled, model, inputs, result.frozen = _compile(model, inputs, targets)
        result.integer_data = _integer_data(model)
        if isinstance(compiled, str):
            message = compiled
            match = _UNSUPPORTED.search(message)
            if match:
                result.status = "unsupported"
                result.blockers = sorted(set(_NODE_OP.findall(match.group(1))))
            elif any(r in message for r in _REFUSALS):
                result.status = "unsupported"
                node = re.search(r"node (?:'[^']*'|#\d+) \(([\w.]+)\)", message)
                kind = node.group(1) if node else "model"
                result.blockers = [f"{kind} ({_variant(message)})"]
            result.detail = message
            return result
        got = compiled(*inputs)
        got = list(got) if isinstance(got, tuple) else [got]
        result.status, result.detail = _compare(got, expected, test.rtol, test.atol)
    except ByocError as err:
        result.detail = str(err)
    except Exception as err:  # report, never stop the run
        result.detail = f"{type(err).__name__}: {err}"
        if os.environ.get("BYOC_SUITES_TRACEBACK"):
            result.detail += "\n" + traceback.format_exc()
    finally:
        result.seconds = time.perf_counter() - started
    return result


INDEX_OPERANDS = {("Gather", 1), ("GatherElements", 1), ("GatherND", 1), ("OneHot", 0)}
"""(op, input) pairs that read an integer tensor as indices."""


def _integer_data(model) -> list[str]:  # noqa: ANN001 - an onnx.ModelProto
    """The integer graph inputs some node reads as data rather than as indices
    (after freezing, which turned shape-like inputs into initializers)."""
    import onnx

    integers = {
        i.name
        for i in model.graph.input
        if i.type.tensor_type.elem_type in (onnx.TensorProto.INT32, onnx.TensorProto.INT64)
    } - {t.name for t in model.graph.initializer}
    return sorted(
        {
            name
            for node in model.graph.node
            for k, name in enumerate(node.input)
            if name in integers and (node.op_type, k) not in INDEX_OPERANDS
        }
    )


def _variant(message: str) -> str:
    """A short reason from a refusal: what is not supported."""
    text = message.split("): ", 1)[-1]
    constant = re.search(r"(.*?) \(input \d+, '[^']*'\) must be a constant", text)
    if constant:
        return f"{constant.group(1)} computed at run time"
    for marker in (" is not supported", " are not supported"):
        if marker in text:
            return text.split(marker)[0][-60:].strip()
    return text[:60]


def _compare(got: list[np.ndarray], want: list[np.ndarray], rtol: float, atol: float) -> tuple[str, str]:
    if len(got) != len(want):
        return "wrong", f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return "wrong", f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return "wrong", f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if w.dtype.kind in "fc":
            close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                err = np.abs(g.astype(np.float64) - w.astype(np.float64))
                return "wrong", (
                    f"output {i}: {int((~close).sum())}/{close.size} elements differ, "
                    f"max abs error {np.nanmax(err):.3g}"
                )
        elif not np.array_equal(g, w):
            return "wrong", f"output {i}: {int((g != w).sum())}/{g.size} elements differ"
    return "pass", ""


def _worker(conn: Connection) -> None:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    while True:
        task = conn.recv()
        if task is None:
            return
        test, config, targets = task
        conn.send(run_test(Test(**test), config, targets))


# --- The pool: one task per (test, configuration), a timeout each -------------------------


class Pool:
    """Worker processes fed one task at a time; a worker that crashes or
    overruns its task's timeout is killed and replaced."""

    def __init__(self, jobs: int):
        self.context = multiprocessing.get_context("spawn")
        self.jobs = jobs
        self.workers: list[dict] = []

    def _spawn(self) -> dict:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(child,), daemon=True)
        process.start()
        child.close()
        return {"process": process, "conn": parent, "task": None, "deadline": 0.0, "started": 0.0}

    def run(self, tasks: list[tuple[Test, str, list[str], float]]) -> Iterator[Result]:
        pending = list(reversed(tasks))
        self.workers = [self._spawn() for _ in range(min(self.jobs, len(tasks)))]
        busy = 0
        while pending or busy:
            for worker in self.workers:
                if worker["task"] is None and pending:
                    task = pending.pop()
                    test, config, targets, timeout = task
                    worker["conn"].send((asdict(test), config, targets))
                    worker["task"] = task
                    worker["started"] = time.perf_counter()
                    worker["deadline"] = worker["started"] + timeout
                    busy += 1
            ready = wait([w["conn"] for w in self.workers if w["task"] is not None], timeout=1.0)
            now = time.perf_counter()
            for index, worker in enumerate(self.workers):
                task = worker["task"]
                if task is None:
                    continue
                test, config, _, timeout = task
                if worker["conn"] in ready:
                    try:
                        result = worker["conn"].recv()
                    except (EOFError, OSError):
                        result = Result(test.suite, test.name, config, "error", "the worker crashed")
                        self._replace(index)
                    else:
                        worker["task"] = None
                    busy -= 1
                    yield result
                elif not worker["process"].is_alive() or now > worker["deadline"]:
                    why = (
                        f"timed out after {timeout:.0f} s"
                        if worker["process"].is_alive()
                        else f"the worker crashed (exit code {worker['process'].exitcode})"
                    )
                    self._replace(index)
                    busy -= 1
                    yield Result(test.suite, test.name, config, "error", why, seconds=now - worker["started"])
        self.close()

    def _replace(self, index: int) -> None:
        worker = self.workers[index]
        if worker["process"].is_alive():
            worker["process"].kill()
        worker["process"].join()
        worker["conn"].close()
        self.workers[index] = self._spawn()

    def close(self) -> None:
        for worker in self.workers:
            try:
                worker["conn"].send(None)
            except OSError:
                pass
            worker["process"].join(timeout=5)
            if worker["process"].is_alive():
                worker["process"].kill()
        self.workers = []


# --- Reporting ------------------------------------------------------------------------------


def eligible(result: Result) -> bool:
    """A node test in the 95% target: float32 inputs, or int32/int64 ones read
    as indices (Gather's) or frozen as a shape, axes or pads; and every op one
    byoc converts."""
    from byoc.frontend.onnx import SUPPORTED_OPS

    return (
        bool(result.ops)
        and all(op in SUPPORTED_OPS for op in result.ops)
        and all(d in ("float32", "int32", "int64") for d in result.input_dtypes)
        and not result.integer_data
    )


def report(results: list[Result], configs: list[str], out=sys.stdout) -> None:
    statuses = ("pass", "unsupported", "error", "wrong")
    suites = [s for s in SUITES if any(r.suite == s for r in results)]
    print(f"\n{'suite':<20}{'configuration':<18}" + "".join(f"{s:>12}" for s in statuses) + f"{'total':>8}", file=out)
    for suite in suites:
        for config in configs:
            mine = [r for r in results if r.suite == suite and r.config == config]
            if not mine:
                continue
            counts = Counter(r.status for r in mine)
            print(
                f"{suite:<20}{config:<18}" + "".join(f"{counts[s]:>12}" for s in statuses) + f"{len(mine):>8}",
                file=out,
            )
    blocked: dict[str, set[str]] = defaultdict(set)
    for r in results:
        if r.status == "unsupported":
            for op in r.blockers or ["?"]:
                blocked[op].add(f"{r.suite}/{r.name}")
    if blocked:
        print("\nunsupported, by tests blocked (all configurations):", file=out)
        ranked = sorted(blocked.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for op, tests in ranked:
            print(f"  {len(tests):5d}  {op}", file=out)
    node = [r for r in results if r.suite == "node" and eligible(r)]
    for config in configs:
        mine = [r for r in node if r.config == config]
        if not mine:
            continue
        passed = sum(r.status == "pass" for r in mine)
        frozen = sum(r.status == "pass" and bool(r.frozen) for r in mine)
        print(
            f"\nnode tests with float32/integer inputs and supported ops, {config}: "
            f"{passed}/{len(mine)} pass ({100 * passed / len(mine):.1f}%; {frozen} of "
            "them with shape, axes, pads or scales inputs frozen to their test values)",
            file=out,
        )
        for r in sorted(mine, key=lambda r: r.name):
            if r.status != "pass":
                print(f"  {r.status:<12}{r.name}: {r.detail.splitlines()[0][:160] if r.detail else ''}", file=out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", action="append", choices=SUITES, help="suites to run (repeatable; default all)")
    p.add_argument("--filter", help="regular expression on SUITE/TEST names")
    p.add_argument(
        "--targets",
        action="append",
        help="a configuration: comma-separated backends, or 'host' (repeatable; "
        "default: cblas,ccompiler and host)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    p.add_argument("--timeout", type=float, help=f"seconds per test (default {DEFAULT_TIMEOUT:.0f}, light models {TIMEOUTS['light']:.0f})")
    p.add_argument("--json", help="write every result to this file")
    p.add_argument("--verbose", "-v", action="store_true", help="print each result as it arrives")
    p.add_argument("--list", action="store_true", help="list the selected tests and exit")
    p.add_argument(
        "--random-weights",
        action="store_true",
        help="light models with random weights (logits), against onnxruntime instead of their shipped outputs",
    )
    p.add_argument("--report", metavar="JSON", help="print the report of the results --json wrote, run nothing")
    args = p.parse_args(argv)

    if args.report:
        saved = [Result(**r) for r in json.loads(Path(args.report).read_text())]
        report(saved, list(dict.fromkeys(r.config for r in saved)))
        return 0

    suites = args.suite or list(SUITES)
    pattern = re.compile(args.filter) if args.filter else None
    tests = collect(suites, pattern, args.random_weights)
    if args.list:
        for t in tests:
            print(f"{t.suite}/{t.name}")
        return 0
    configs = {}
    for spec in args.targets or list(CONFIGS):
        configs[spec] = [] if spec in ("host", "") else [t for t in spec.split(",") if t]
    results: list[Result] = []
    tasks = []
    for test in tests:
        for name, targets in configs.items():
            if test.skip:
                results.append(Result(test.suite, test.name, name, "unsupported", test.skip, ["non-tensor data"]))
                continue
            tasks.append((test, name, targets, args.timeout or TIMEOUTS.get(test.suite, DEFAULT_TIMEOUT)))
    # The slowest (light models) first, so they overlap with the many small ones.
    tasks.sort(key=lambda t: t[0].suite != "light")
    started = time.perf_counter()
    done = 0
    for result in Pool(max(1, args.jobs)).run(tasks):
        results.append(result)
        done += 1
        if args.verbose:
            print(f"[{done}/{len(tasks)}] {result.suite}/{result.name} {result.config}: {result.status} "
                  f"({result.seconds:.1f} s) {result.detail.splitlines()[0][:120] if result.detail else ''}", flush=True)
        elif done % 50 == 0:
            print(f"  {done}/{len(tasks)} done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(f"\n{len(tasks)} runs of {len(tests)} tests in {time.perf_counter() - started:.0f} s "
          f"({args.jobs} workers)")
    report(results, list(configs))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
