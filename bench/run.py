"""End-to-end latency of byoc configurations against numpy and onnxruntime.

Workloads (each built once as an ONNX model, imported into byoc, so every
contender runs the same graph and weights):
  (a) ((a+b)*c)-d on 1024x1024 float32
  (b) MLP x[64,512] -> dense 1024 + bias + relu -> dense 10 + bias
  (c) CNN 1x3x32x32 -> conv 16 3x3 pad 1 + bias + relu -> maxpool 2
      -> conv 32 3x3 pad 1 + bias + relu -> flatten -> dense 10
  (d) per-call overhead: a 4-element add called from Python
  (e) quantized CNN 1x3x32x32 (bench/qdq_models.py: 3 convs, residual, global
      pool, gemm) and (f) quantized transformer MLP 1x64x256 -> 1024 -> 256,
      both made QDQ by onnxruntime.quantization.quantize_static here: byoc and
      onnxruntime on the same QDQ file, and both on the float32 model
  (g) int8 kernels against float32 ones on the same shapes (a 64->64 3x3
      conv on 56x56, a 128x1024x1024 dense; with bias and relu)

Prints median latency (ms, or us for the overhead) and the ratio to
onnxruntime (CPU provider, 2 threads) and to numpy, the contenders taking
turns in rounds; the quantized tables add each contender's minimum. A
benchmark, not a test.

    python bench/run.py [--runs 500] [--only float|quantized] [--threads 2] [--pool]

`--pool` prints, under each quantized workload, what libbyoc's pool did per
call of each byoc contender (bench/models.py's `--pool`: loops, chunks, the
workers' share, wake-ups, late loops and loops run alone after them, CPU time).

`--threads` sets onnxruntime's intra-op threads and byoc's (`byoc.set_threads`:
libbyoc's pool, OpenBLAS single-threaded inside its chunks). On a machine
shared with other work, compare the minimums too: a call preempted by other
jobs counts in the median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import byoc
from byoc.backends import available_backends

CONFIGS = {
    "byoc host": [],
    "byoc ccompiler": ["ccompiler"],
    "byoc cblas,ccompiler": ["cblas", "ccompiler"],
    "byoc onnxruntime": ["onnxruntime"],
}


ROUNDS = 5
"""Contenders take turns, `runs / ROUNDS` calls each per round, so a noisy
moment of the machine falls on all of them alike."""

PAUSE = 0.1
"""Seconds before each contender's round: onnxruntime's workers spin for about
40 ms of CPU after its last call (`session.intra_op.allow_spinning`), and
without the pause they hold the second core during the next contender's
round (bench/models.py pauses the same way); libbyoc's spin 400 us."""


def median_times(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median seconds per call of each contender, measured in interleaved rounds."""
    return {name: statistics.median(times) for name, times in sample_times(contenders, runs).items()}


def sample_times(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Seconds of every call of each contender, measured in interleaved rounds."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    per_round = max(1, runs // ROUNDS)
    for _ in range(ROUNDS):
        for name, fn in contenders.items():
            time.sleep(PAUSE)  # the other contenders' threads stop spinning
            for _ in range(3):
                fn()
            for _ in range(per_round):
                start = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - start)
    return samples


def print_samples(title: str, samples: dict[str, list[float]], reference: str) -> None:
    """One row per contender: median and minimum in ms, each with its ratio to
    `reference`'s. On a loaded machine the minimum is a call the scheduler
    left alone, while a long call's median counts its preemptions."""
    base, base_min = statistics.median(samples[reference]), min(samples[reference])
    for name, times in samples.items():
        median, best = statistics.median(times), min(times)
        print(
            f"{title:26} {name:28} {median * 1e3:8.3f}ms {median / base:7.2f} "
            f"{best * 1e3:8.3f}ms {best / base_min:7.2f}"
        )
    print()


def elementwise_model():
    from onnx import TensorProto, helper

    shape = [1024, 1024]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "abcd"]
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Mul", ["s", "c"], ["p"]),
        helper.make_node("Sub", ["p", "d"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "elementwise", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]

    def numpy_fn(a, b, c, d):
        return ((a + b) * c) - d

    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds, numpy_fn


def mlp_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((512, 1024)) * 0.05).astype(np.float32)
    b1 = rng.standard_normal(1024).astype(np.float32)
    w2 = (rng.standard_normal((1024, 10)) * 0.05).astype(np.float32)
    b2 = rng.standard_normal(10).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 10])],
        inits,
    )
    feeds = [rng.standard_normal((64, 512)).astype(np.float32)]

    def numpy_fn(x):
        return np.maximum(x @ w1 + b1, 0) @ w2 + b2

    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds, numpy_fn


def cnn_model():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "make_cnn", Path(__file__).parent.parent / "examples" / "make_cnn.py"
    )
    assert spec and spec.loader
    make_cnn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_cnn)
    model = make_cnn.build_model()
    rng = np.random.default_rng(2)
    return model, [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)], None


def add4_model():
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "ab"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "add4",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    feeds = [np.ones(4, np.float32), np.ones(4, np.float32)]
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds, np.add


THREADS = 2


def set_threads(threads: int) -> None:
    """Threads for every contender (onnxruntime's sessions read THREADS)."""
    global THREADS
    THREADS = threads
    byoc.set_threads(threads)


def ort_session(model):
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda *xs: session.run(None, dict(zip(names, xs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="calls per contender")
    parser.add_argument(
        "--only", choices=["float", "quantized"], help="run only these workloads"
    )
    parser.add_argument(
        "--threads", type=int, default=2, help="threads of onnxruntime and of byoc"
    )
    parser.add_argument("--pool", action="store_true", help="print what libbyoc's pool does per call")
    args = parser.parse_args()
    set_threads(args.threads)
    if args.only != "quantized":
        float_workloads(args.runs)
    if args.only != "float":
        print(f"{'workload':26} {'contender':28} {'median':>10} {'x ort':>7} {'minimum':>10} {'x ort':>7}")
        quantized_workloads(args.runs, args.pool)
        print(f"{'workload':26} {'contender':28} {'median':>10} {'x int8':>7} {'minimum':>10} {'x int8':>7}")
        kernel_workloads(max(10, args.runs // 25))


def float_workloads(runs: int) -> None:
    """(a) to (d)."""
    from byoc.frontend.onnx import from_onnx

    installed = set(available_backends())
    workloads = [
        ("(a) ((a+b)*c)-d 1024^2", elementwise_model, 1e3, "ms"),
        ("(b) MLP 64x512", mlp_model, 1e3, "ms"),
        ("(c) CNN 1x3x32x32", cnn_model, 1e3, "ms"),
        ("(d) add of 4, per call", add4_model, 1e6, "us"),
    ]
    print(f"{'workload':26} {'contender':24} {'median':>10} {'x ort':>7} {'x numpy':>8}")
    for title, make, scale, unit in workloads:
        model, feeds, numpy_fn = make()
        ort_run = ort_session(model)
        contenders: dict[str, Callable[[], object]] = {"onnxruntime": lambda: ort_run(*feeds)}
        if numpy_fn is not None:
            contenders["numpy"] = lambda: numpy_fn(*feeds)
        module = from_onnx(model)
        expected = ort_run(*feeds)[0]
        for name, targets in CONFIGS.items():
            if any(t not in installed for t in targets):
                continue
            try:
                compiled = byoc.compile(module, targets=targets)
            except byoc.ByocError as err:
                print(f"{title:26} {name:24} failed: {str(err).splitlines()[0]}")
                continue
            if not np.allclose(compiled(*feeds), expected, rtol=1e-3, atol=1e-4):
                print(f"{title:26} {name:24} WRONG: differs from onnxruntime")
                continue
            contenders[name] = lambda compiled=compiled: compiled(*feeds)
        times = median_times(contenders, runs)
        ort_time = times["onnxruntime"]
        numpy_time = times.get("numpy")
        for name, seconds in times.items():
            vs_ort = seconds / ort_time
            vs_np = f"{seconds / numpy_time:8.2f}" if numpy_time else f"{'-':>8}"
            print(f"{title:26} {name:24} {seconds * scale:8.3f}{unit} {vs_ort:7.2f} {vs_np}")
        print()


QDQ_CONFIGS = {
    "byoc ccompiler": ["ccompiler"],
    "byoc cblas,ccompiler": ["cblas", "ccompiler"],
}


def quantized_workloads(runs: int, pool: bool = False) -> None:
    """(e), (f): QDQ models, byoc against onnxruntime on the same file and
    against both on the float32 model; byoc's output must be within 3 steps
    of the output's quantization scale of onnxruntime's."""
    import tempfile
    from pathlib import Path

    import onnx
    import qdq_models

    installed = set(available_backends())
    workloads = [
        ("(e) QDQ CNN 1x3x32x32", qdq_models.cnn_model),
        ("(f) QDQ MLP 1x64x256", qdq_models.mlp_model),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for title, make in workloads:
            model = make()
            path = qdq_models.quantize(model, Path(tmp) / "model.onnx")
            qdq = onnx.load(path)
            feeds = [np.random.default_rng(5).standard_normal(qdq_models.input_shape(model)).astype(np.float32)]
            ort_qdq, ort_float = ort_session(qdq), ort_session(model)
            contenders: dict[str, Callable[[], object]] = {
                "onnxruntime QDQ": lambda: ort_qdq(*feeds),
                "onnxruntime float32": lambda: ort_float(*feeds),
            }
            want = ort_qdq(*feeds)[0]
            step = qdq_models.output_scale(path)
            for name, targets in QDQ_CONFIGS.items():
                if any(t not in installed for t in targets):
                    continue
                compiled = byoc.compile(path, targets=targets)
                steps = float(np.abs(compiled(*feeds) - want).max()) / step
                if steps > 3:
                    print(f"{title:26} {name + ' QDQ':28} WRONG: {steps:.1f} steps from onnxruntime")
                    continue
                contenders[f"{name} QDQ"] = lambda compiled=compiled: compiled(*feeds)
            best_float = byoc.compile(model, targets=[t for t in ("cblas", "ccompiler") if t in installed])
            contenders["byoc cblas,ccompiler float32"] = lambda: best_float(*feeds)
            print_samples(title, sample_times(contenders, runs), "onnxruntime QDQ")
            if pool:
                from models import pool_counts

                for name, fn in contenders.items():
                    if name.startswith("byoc"):
                        print(f"{'':26} {name:28} {pool_counts(fn, max(ROUNDS, runs // 2))}")
                print()


def kernel_workloads(runs: int) -> None:
    """(g): one quantized conv2d / dense (ccompiler's int8 kernels) against the
    same float32 op (ccompiler's and cblas's kernels), same shapes."""
    import tempfile
    from pathlib import Path

    import qdq_models

    installed = set(available_backends())
    workloads = [
        ("(g) conv 64->64 3x3 56x56", qdq_models.conv_model),
        ("(g) dense 128x1024x1024", qdq_models.dense_model),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for title, make in workloads:
            model = make()
            path = qdq_models.quantize(model, Path(tmp) / "kernel.onnx")
            feeds = [np.random.default_rng(6).standard_normal(qdq_models.input_shape(model)).astype(np.float32)]
            int8 = byoc.compile(path, targets=["ccompiler"])
            contenders: dict[str, Callable[[], object]] = {"byoc int8 (ccompiler)": lambda: int8(*feeds)}
            for name, targets in (("byoc float32 (ccompiler)", ["ccompiler"]), ("byoc float32 (cblas)", ["cblas", "ccompiler"])):
                if all(t in installed for t in targets):
                    compiled = byoc.compile(model, targets=targets)
                    contenders[name] = lambda compiled=compiled: compiled(*feeds)
            print_samples(title, sample_times(contenders, runs), "byoc int8 (ccompiler)")


if __name__ == "__main__":
    main()
