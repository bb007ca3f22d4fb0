"""Each distinct convolution of a real model alone: byoc's kernels against onnxruntime.

For every distinct Conv of a light model (bench/real_models.py, random
weights), a one-node model conv + bias + relu is compiled for
`cblas,ccompiler` (libbyoc's packed-weight kernels) and run beside
onnxruntime's CPU provider, the two taking turns. Prints per shape the
count in the model, microseconds per call of each, their ratio and byoc's
GFLOP/s, then the model's total (per-shape time x count).

`--cpu` measures the calling thread's CPU time instead of wall-clock time:
with one thread every kernel runs on the caller, and CPU time does not count
the time spent waiting for a core, so the kernels compare fairly on a
machine others are loading.

    python bench/conv_layers.py resnet50 [--threads 1] [--cpu] [--reps 10]
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path

import numpy as np

import byoc


def distinct_convs(model) -> collections.Counter:  # noqa: ANN001 - an onnx.ModelProto
    """(input shape, weight shape, strides, pads, group, dilations) -> count."""
    import onnx
    from onnx import helper

    model = onnx.shape_inference.infer_shapes(model)
    graph = model.graph
    values = [*graph.value_info, *graph.input, *graph.output]
    shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim) for v in values}
    initializers = {t.name: tuple(t.dims) for t in graph.initializer}
    convs: collections.Counter = collections.Counter()
    for node in graph.node:
        if node.op_type != "Conv" or node.input[1] not in initializers:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        convs[
            (
                shapes[node.input[0]],
                initializers[node.input[1]],
                tuple(attrs.get("strides", (1, 1))),
                tuple(attrs.get("pads", (0, 0, 0, 0))),
                attrs.get("group", 1),
                tuple(attrs.get("dilations", (1, 1))),
            )
        ] += 1
    return convs


def conv_model(key, rng: np.random.Generator):  # noqa: ANN001, ANN201
    from onnx import TensorProto, helper, numpy_helper

    x, w, strides, pads, group, dilations = key
    weight = numpy_helper.from_array((rng.standard_normal(w) * 0.1).astype(np.float32), "w")
    bias = numpy_helper.from_array((rng.standard_normal(w[0]) * 0.1).astype(np.float32), "b")
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"],
            strides=list(strides), pads=list(pads), group=group, dilations=list(dilations),
        ),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight, bias],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def main() -> None:
    import onnx
    import onnxruntime as ort

    import real_models

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=real_models.LIGHT_MODELS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="CPU time of the calling thread")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    ort.set_default_logger_severity(3)
    byoc.set_threads(args.threads)
    clock = time.thread_time if args.cpu else time.perf_counter
    model = real_models.with_random_weights(onnx.load(str(real_models.light_model_path(args.model))))
    rng = np.random.default_rng(0)
    totals = [0.0, 0.0]
    print(f"{args.model}: {args.threads} thread(s), {'CPU' if args.cpu else 'wall-clock'} time, min of {args.reps}")
    print(f"{'input':>18} {'weight':>20} {'s':>1} {'p':>1} {'g':>4} {'n':>3} {'byoc us':>9} {'ort us':>9} {'ratio':>6} {'GF/s':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conv.onnx"
        convs = distinct_convs(model)
        for key, count in sorted(convs.items(), key=lambda kv: -kv[1]):
            onnx.save(conv_model(key, rng), path)
            compiled = byoc.compile(str(path), targets=["cblas", "ccompiler"], quiet=True)
            options = ort.SessionOptions()
            options.intra_op_num_threads = args.threads
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            x = rng.standard_normal(key[0]).astype(np.float32)
            contenders = (lambda: compiled(x), lambda: session.run(None, {"x": x}))
            np.testing.assert_allclose(contenders[0](), contenders[1]()[0], rtol=1e-3, atol=1e-3)
            best = [float("inf"), float("inf")]
            for _ in range(args.reps):
                for i, run in enumerate(contenders):
                    run()
                    start = clock()
                    run()
                    run()
                    best[i] = min(best[i], (clock() - start) / 2)
            b, o = best[0] * 1e6, best[1] * 1e6
            x_shape, w, strides, pads, group, _ = key
            out = compiled(x)
            flops = 2 * np.prod(w) * out.shape[2] * out.shape[3] * x_shape[0]
            totals[0] += b * count
            totals[1] += o * count
            print(
                f"{str(x_shape):>18} {str(w):>20} {strides[0]:>1} {pads[0]:>1} {group:>4} {count:>3}"
                f" {b:9.1f} {o:9.1f} {b / o:6.2f} {flops / b / 1e3:6.1f}",
                flush=True,
            )
    print(f"total: byoc {totals[0] / 1e3:.2f} ms, onnxruntime {totals[1] / 1e3:.2f} ms, ratio {totals[0] / totals[1]:.2f}")


if __name__ == "__main__":
    main()
