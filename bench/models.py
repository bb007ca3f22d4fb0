"""Real models: byoc (cblas,ccompiler) against onnxruntime, in one process.

Models: the light CNNs of onnx's test data with random weights
(real_models.py: ResNet-50, DenseNet-121, Inception v2, ShuffleNet,
SqueezeNet; their logits, without the final softmax), a BERT-base encoder
layer (sequence 128, hidden 768, 12 heads) built with onnx.helper the way
PyTorch exports it, and the MLP and CNN of bench/run.py.

For each model and thread count (`byoc.set_threads` and onnxruntime's
intra_op_num_threads), the two contenders take turns in rounds; the table
gives each one's median and minimum latency and the ratio of medians
(byoc / onnxruntime: below 1 byoc is faster). The `loaded` columns repeat the
measurement with one CPU-bound process running beside: byoc's and
onnxruntime's loaded medians, byoc's loaded median over its loaded minimum
(`/ min`: how steady it is under load) and over its unloaded minimum
(`/ quiet`: how much the busy process costs it), and the loaded ratio over the
unloaded one. Every model's output is checked against onnxruntime's (within
`--rtol` of the output's largest magnitude) before it is timed.

A model's unloaded rows are measured at every thread count before its loaded
ones, and the loaded ones end with a rest of `SETTLE` seconds.

Each contender's round starts after a pause: onnxruntime's workers spin for
about 40 ms of CPU after its last call (`session.intra_op.allow_spinning`), and
without the pause they take the second core from the next round's byoc (its
MLP's worker ran 27% of the chunks right after onnxruntime's round, 46% after
a 0.1 s pause, on the shared machine). libbyoc's workers spin 400 us.

`--pool` prints, per call, what libbyoc's pool did at each thread count
(`libbyoc.pool_stats()`): loops on the pool and on the caller alone, chunks,
the claims that took them and the workers' share, wake-ups and sleeps, loops
no worker joined, the caller's time waiting for chunks other threads held,
late loops and the loops run alone after them, workers that found themselves
preempted while spinning, and CPU time per call (the process's, so a
spinning worker counts; measured after a pause, like a round, so
onnxruntime's spinning workers are not).

    python bench/models.py [--models resnet50,bert] [--threads 1,2] [--runs 30]
                           [--no-load] [--profile] [--pool] [--no-simplify]

A benchmark, not a test: numbers depend on the machine and on what else runs.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_models  # noqa: E402

LIGHT = ("resnet50", "densenet121", "inception_v2", "shufflenet", "squeezenet")
MODELS = (*LIGHT, "bert", "mlp", "cnn")
"""The default models: issue 15's list."""
OTHER_LIGHT = tuple(m for m in real_models.LIGHT_MODELS if m not in LIGHT)
"""The onnx wheel's other light architectures (inception_v1, vgg19,
bvlc_alexnet, zfnet512), by name with --models."""
OTHER_MODELS = (*OTHER_LIGHT, "bert_mask")
"""Models by name with --models only: those, and the BERT layer with an
attention mask input."""
TARGETS = ["cblas", "ccompiler"]
ROUNDS = 5
PAUSE = 0.1
"""Seconds between two contenders' rounds: onnxruntime's workers stop spinning
about 40 ms of CPU after its last call; libbyoc's after 400 us."""
SETTLE = 2.0
"""Seconds of rest after the busy process is killed."""


# --- Models ---------------------------------------------------------------------------


def light_model(name: str):
    import onnx

    proto = onnx.load(real_models.light_model_path(name))
    proto = real_models.without_final_softmax(real_models.with_random_weights(proto))
    return proto, real_models.runner_inputs(proto)


def bert_layer(seq: int = 128, hidden: int = 768, heads: int = 12, ffn: int = 3072,
               decomposed_layer_norm: bool = False, seed: int = 0, mask: bool = False):
    """One BERT-base encoder layer as torch.onnx exports BertLayer (opset 17):
    MatMul + Add projections, Reshape/Transpose to heads (keys in one
    (0, 2, 3, 1) permutation), a scaled MatMul, Softmax, the context back
    through Transpose/Reshape, residual Adds, LayerNormalization (or its
    decomposed ReduceMean/Sub/Pow/Sqrt/Div form, as before opset 17) and the
    erf GELU `x * 0.5 * (1 + erf(x / sqrt(2)))`. With `mask`, a second
    input, the additive attention mask [1, 1, 1, seq] (0 or -10000: what
    transformers' extended attention mask holds), is added to the scaled
    scores, as transformers' BERT exports do; its last quarter masks keys."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    size = hidden // heads
    inits: dict[str, np.ndarray] = {}

    def param(name: str, shape: tuple[int, ...], scale: float = 0.02, mean: float = 0.0):
        inits[name] = (mean + rng.standard_normal(shape) * scale).astype(np.float32)
        return name

    def const(name: str, value) -> str:
        inits[name] = np.asarray(value)
        return name

    nodes = []

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, name: str, n_in: int, n_out: int) -> str:
        mm = node("MatMul", [x, param(f"{name}.weight", (n_in, n_out))], f"{name}_mm")
        return node("Add", [mm, param(f"{name}.bias", (n_out,))], f"{name}_out")

    def layer_norm(x: str, name: str) -> str:
        gamma = param(f"{name}.weight", (hidden,), 0.1, 1.0)
        beta = param(f"{name}.bias", (hidden,), 0.1)
        if not decomposed_layer_norm:
            return node("LayerNormalization", [x, gamma, beta], f"{name}_out", axis=-1, epsilon=1e-12)
        mean = node("ReduceMean", [x], f"{name}_mean", axes=[-1])
        centred = node("Sub", [x, mean], f"{name}_centred")
        square = node("Pow", [centred, const(f"{name}_two", np.float32(2.0))], f"{name}_sq")
        var = node("ReduceMean", [square], f"{name}_var", axes=[-1])
        var_eps = node("Add", [var, const(f"{name}_eps", np.float32(1e-12))], f"{name}_var_eps")
        std = node("Sqrt", [var_eps], f"{name}_std")
        normed = node("Div", [centred, std], f"{name}_normed")
        scaled = node("Mul", [normed, gamma], f"{name}_scaled")
        return node("Add", [scaled, beta], f"{name}_out")

    heads_shape = const("heads_shape", np.array([1, seq, heads, size], np.int64))
    q = node("Reshape", [linear("x", "query", hidden, hidden), heads_shape], "q_heads")
    k = node("Reshape", [linear("x", "key", hidden, hidden), heads_shape], "k_heads")
    v = node("Reshape", [linear("x", "value", hidden, hidden), heads_shape], "v_heads")
    q = node("Transpose", [q], "q", perm=[0, 2, 1, 3])
    k = node("Transpose", [k], "k_t", perm=[0, 2, 3, 1])
    v = node("Transpose", [v], "v", perm=[0, 2, 1, 3])
    scores = node("MatMul", [q, k], "scores")
    scores = node("Div", [scores, const("sqrt_size", np.float32(math.sqrt(size)))], "scores_scaled")
    if mask:
        scores = node("Add", [scores, "mask"], "scores_masked")
    probs = node("Softmax", [scores], "probs", axis=-1)
    context = node("MatMul", [probs, v], "context")
    context = node("Transpose", [context], "context_t", perm=[0, 2, 1, 3])
    context = node("Reshape", [context, const("hidden_shape", np.array([1, seq, hidden], np.int64))], "context_flat")
    attention = linear(context, "attention.output", hidden, hidden)
    h = layer_norm(node("Add", [attention, "x"], "attention_residual"), "attention.norm")
    inter = linear(h, "intermediate", hidden, ffn)
    erf = node("Erf", [node("Div", [inter, const("sqrt2", np.float32(math.sqrt(2.0)))], "gelu_div")], "gelu_erf")
    gelu = node("Mul", [node("Mul", [inter, node("Add", [erf, const("one", np.float32(1.0))], "gelu_add")], "gelu_mul"),
                        const("half", np.float32(0.5))], "gelu")
    out = linear(gelu, "output", ffn, hidden)
    node("Add", [out, h], "output_residual")
    y = layer_norm("output_residual", "output.norm")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])]
    if mask:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq]))
    graph = helper.make_graph(
        nodes,
        "bert_layer",
        inputs,
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, seq, hidden])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.standard_normal((1, seq, hidden)).astype(np.float32)
    if not mask:
        return proto, [x]
    additive = np.zeros((1, 1, 1, seq), np.float32)
    additive[..., seq - seq // 4:] = -10000.0
    return proto, [x, additive]


def run_py_model(name: str):
    """The MLP or CNN of bench/run.py."""
    import run

    proto, feeds, _ = {"mlp": run.mlp_model, "cnn": run.cnn_model}[name]()
    return proto, feeds


def build(name: str, decomposed: bool):
    if name in LIGHT or name in OTHER_LIGHT:
        return light_model(name)
    if name in ("bert", "bert_mask"):
        return bert_layer(decomposed_layer_norm=decomposed, mask=name == "bert_mask")
    return run_py_model(name)


# --- Threads ----------------------------------------------------------------------------


def set_byoc_threads(n: int) -> None:
    """Threads byoc's compiled models use from now on (libbyoc's pool, and
    OpenBLAS's as the pool needs them)."""
    import byoc

    byoc.set_threads(n)


def ort_runner(proto, threads: int) -> Callable[..., list[np.ndarray]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda *xs: session.run(None, dict(zip(names, xs)))


# --- Timing -----------------------------------------------------------------------------


def take_turns(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Seconds per call of each contender, measured in `ROUNDS` interleaved rounds."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    per_round = max(1, runs // ROUNDS)
    for _ in range(ROUNDS):
        for name, fn in contenders.items():
            time.sleep(PAUSE)  # the other contender's threads stop spinning
            fn()  # warm: caches, thread pools
            for _ in range(per_round):
                start = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - start)
    return samples


class BusyProcess:
    """One CPU-bound process running beside the measurement (a `with` block)."""

    def __enter__(self) -> BusyProcess:
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.wait()
        time.sleep(SETTLE)


def runs_for(seconds_per_call: float, runs: int) -> int:
    """Fewer runs for slow models, so a table takes minutes, not hours."""
    budget = 6.0  # seconds per contender and configuration
    return max(ROUNDS * 2, min(runs, int(budget / max(seconds_per_call, 1e-6))))


def check(got, want, rtol: float) -> tuple[bool, float]:
    got = list(got) if isinstance(got, tuple) else [got]
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        scale = max(float(np.max(np.abs(w))), 1e-30)
        worst = max(worst, float(np.max(np.abs(g - w))) / scale)
    return worst <= rtol, worst


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f}"


def pool_counts(call: Callable[[], object], calls: int) -> str:
    """What libbyoc's pool does per call of `call` (see --pool)."""
    from byoc.runtime import libbyoc

    # Right after onnxruntime's round its workers spin on (about 43 ms of CPU
    # over 40-50 ms, SqueezeNet at 2 threads): they took a core from byoc's
    # worker, which missed the loops meanwhile, and process_time counted their
    # spin as byoc's CPU (SqueezeNet 15 calls of 4.3 ms: ~2.9 ms a call).
    time.sleep(PAUSE)
    call()
    before, cpu = libbyoc.pool_stats(), time.process_time()
    for _ in range(calls):
        call()
    cpu = (time.process_time() - cpu) / calls
    after = libbyoc.pool_stats()
    d = {k: (after[k] - before[k]) / calls for k in after}
    share = d["worker_chunks"] / d["chunks"] if d["chunks"] else 0.0
    return (f"pool per call: {d['loops']:.0f} loops (+{d['alone']:.0f} alone), {d['chunks']:.0f} chunks "
            f"in {d['claims']:.0f} claims, "
            f"{share:.0%} on workers, {d['wakes']:.1f} wakes, {d['sleeps']:.1f} sleeps, "
            f"{d['missed']:.1f} loops unjoined, waiting {d['wait_ns'] / 1e6:.3f} ms, "
            f"first worker chunk after {d['late_ns'] / 1e6:.3f} ms (summed), {d['late']:.1f} late loops, "
            f"{d['backed_off']:.1f} loops alone after them, {d['preempted']:.1f} workers preempted spinning, "
            f"{d['caller_away']:.1f} loops with the caller away, {d['moves']:.1f} moves off its core, {d['breaks']:.1f} breaks between chunks, {d['steers']:.1f} steered; "
            f"CPU {cpu * 1e3:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)} (the default), "
                        f"or {', '.join(OTHER_MODELS)}")
    parser.add_argument("--threads", default="1,2", help="thread counts (comma-separated)")
    parser.add_argument("--runs", type=int, default=50, help="calls per contender and configuration (fewer for slow models)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="tolerance of the check, relative to the output's scale")
    parser.add_argument("--no-load", action="store_true", help="skip the columns with a busy process beside")
    parser.add_argument("--profile", action="store_true", help="print byoc's profile of each model")
    parser.add_argument("--pool", action="store_true", help="print what libbyoc's pool does per call")
    parser.add_argument("--no-simplify", action="store_true", help="compile without byoc-simplify")
    parser.add_argument("--decomposed-layer-norm", action="store_true", help="BERT with LayerNormalization decomposed")
    args = parser.parse_args()

    import onnxruntime as ort

    import byoc

    ort.set_default_logger_severity(3)
    threads = [int(t) for t in args.threads.split(",")]
    print(f"byoc {'+'.join(TARGETS)} against onnxruntime (CPU provider), {os.cpu_count()} cores; "
          "times in ms; ratio = byoc median / onnxruntime median")
    header = (f"{'model':13} {'thr':>3} {'byoc med':>9} {'byoc min':>9} {'ort med':>9} {'ort min':>9} {'ratio':>6}")
    if not args.no_load:
        header += f" | {'loaded byoc':>11} {'byoc min':>9} {'ort':>9} {'/ min':>6} {'/ quiet':>7} {'ratio':>6} {'/ unloaded':>10}"
    header += "  check"
    print(header)
    for name in args.models.split(","):
        try:
            proto, feeds = build(name, args.decomposed_layer_norm)
        except Exception as err:  # noqa: BLE001 - report and go on with the next model
            print(f"{name:13} cannot build: {err}")
            continue
        started = time.perf_counter()
        try:
            model = byoc.compile(proto, targets=TARGETS, simplify=not args.no_simplify)
        except byoc.ByocError as err:
            print(f"{name:13} byoc cannot compile: {str(err).splitlines()[0][:150]}")
            continue
        print(f"{name:13} compiled in {time.perf_counter() - started:.1f} s", flush=True)
        lines: dict[int, str] = {}
        verdicts: dict[int, str] = {}
        rows: dict[int, tuple[dict[str, Callable[[], object]], int, float, float]] = {}
        # Unloaded rows at every thread count before any loaded one: measured
        # right after a loaded 1-thread row, an unloaded 2-thread row ran both
        # contenders at about 1-thread speed in two sessions' quiet runs
        # (SqueezeNet 6.8-7.1 ms against 3.96-4.32 in a rerun).
        for n in threads:
            set_byoc_threads(n)
            ort_run = ort_runner(proto, n)
            want = ort_run(*feeds)
            ok, worst = check(model(*feeds), want, args.rtol)
            verdicts[n] = f"ok ({worst:.1e})" if ok else f"MISMATCH ({worst:.1e})"
            contenders = {"byoc": lambda: model(*feeds), "ort": lambda ort_run=ort_run: ort_run(*feeds)}
            start = time.perf_counter()
            model(*feeds)
            runs = runs_for(time.perf_counter() - start, args.runs)
            times = take_turns(contenders, runs)
            b_med, b_min = statistics.median(times["byoc"]), min(times["byoc"])
            o_med, o_min = statistics.median(times["ort"]), min(times["ort"])
            rows[n] = (contenders, runs, b_min, b_med / o_med)
            lines[n] = f"{name:13} {n:3d} {fmt(b_med)} {fmt(b_min)} {fmt(o_med)} {fmt(o_min)} {b_med / o_med:6.2f}"
            if args.no_load:
                print(f"{lines[n]}  {verdicts[n]}", flush=True)
        for n in threads if not args.no_load else ():
            set_byoc_threads(n)
            contenders, runs, b_min, ratio = rows[n]
            with BusyProcess():
                loaded = take_turns(contenders, runs)
            lb, lo = statistics.median(loaded["byoc"]), statistics.median(loaded["ort"])
            lb_min = min(loaded["byoc"])
            print(f"{lines[n]} | {fmt(lb):>11} {fmt(lb_min)} {fmt(lo)} {lb / lb_min:6.2f} {lb / b_min:7.2f} "
                  f"{lb / lo:6.2f} {(lb / lo) / ratio:10.2f}  {verdicts[n]}", flush=True)
        if args.pool:
            for n in threads:
                set_byoc_threads(n)
                print(f"{name:13} {n:3d} {pool_counts(rows[n][0]['byoc'], max(ROUNDS, rows[n][1] // 2))}", flush=True)
        if args.profile:
            print(f"\n{name}, byoc's profile ({threads[-1]} threads):")
            model.profile(*feeds)
            print()


if __name__ == "__main__":
    main()
