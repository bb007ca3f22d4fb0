"""Per-op speed of the host compiler against numpy, at typical sizes.

For each op: a one-op model compiled for the host only (`targets=[]`), timed
against the numpy reference implementation of the same op, median of several
runs. Prints a table; it is a benchmark, not a test.

    python bench/ops.py [--runs 20] [--only conv2d,dense]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import byoc
from byoc.runtime.build import load_source
from byoc.runtime.reference import REFERENCE


def t(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def model(op_text: str, args: list[tuple[int, ...]], out: tuple[int, ...]) -> str:
    params = ", ".join(f"%a{i}: {t(s)}" for i, s in enumerate(args))
    operands = ", ".join(f"%a{i}" for i in range(len(args)))
    types = ", ".join(t(s) for s in args)
    return (
        f"func.func @main({params}) -> {t(out)} {{\n"
        f"  %0 = {op_text.format(operands=operands)} : ({types}) -> {t(out)}\n"
        f"  func.return %0 : {t(out)}\n}}\n"
    )


CASES: list[tuple[str, str, list[tuple[int, ...]], tuple[int, ...]]] = [
    ("add", "relay.add {operands}", [(1024, 1024), (1024, 1024)], (1024, 1024)),
    ("multiply (bcast)", "relay.multiply {operands}", [(1024, 1024), (1024,)], (1024, 1024)),
    ("relu", "relay.nn.relu {operands}", [(1024, 1024)], (1024, 1024)),
    ("tanh", "relay.tanh {operands}", [(1024, 1024)], (1024, 1024)),
    ("exp", "relay.exp {operands}", [(1024, 1024)], (1024, 1024)),
    ("dense", "relay.nn.dense {operands}", [(128, 1024), (1024, 1024)], (128, 1024)),
    ("batch_matmul", "relay.nn.batch_matmul {operands}", [(8, 128, 64), (8, 128, 64)], (8, 128, 128)),
    (
        "conv2d 3x3",
        "relay.nn.conv2d {operands} {{padding = array<i64: 1, 1, 1, 1>}}",
        [(1, 64, 56, 56), (64, 64, 3, 3)],
        (1, 64, 56, 56),
    ),
    (
        "max_pool2d 2x2",
        "relay.nn.max_pool2d {operands} {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}}",
        [(1, 64, 56, 56)],
        (1, 64, 28, 28),
    ),
    ("softmax", "relay.nn.softmax {operands}", [(128, 1000)], (128, 1000)),
    ("sum axis=1", "relay.sum {operands} {{axis = array<i64: 1>}}", [(1024, 1024)], (1024,)),
    ("transpose", "relay.transpose {operands} {{axes = array<i64: 1, 0>}}", [(1024, 1024)], (1024, 1024)),
]


def median_time(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", help="comma-separated case names (prefix match)")
    args = parser.parse_args()
    only = [o.strip() for o in args.only.split(",")] if args.only else None
    rng = np.random.default_rng(0)
    print(f"{'op':18} {'shape':32} {'host ms':>9} {'numpy ms':>9} {'ratio':>7}")
    for name, op_text, shapes, out in CASES:
        if only and not any(name.startswith(o) for o in only):
            continue
        text = model(op_text, shapes, out)
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        shape_text = " ".join("x".join(map(str, s)) for s in shapes)
        try:
            compiled = byoc.compile(text, targets=[])
        except byoc.ByocError as err:
            print(f"{name:18} {shape_text:32} {'-':>9} {'-':>9} {'-':>7}  ({str(err).splitlines()[0]})")
            continue
        op = next(o for o in load_source(text).walk() if o.name.startswith("relay."))
        kernel = REFERENCE[op.name]
        host = median_time(lambda: compiled(*inputs), args.runs)
        ref = median_time(lambda: kernel(op, inputs), args.runs)
        print(f"{name:18} {shape_text:32} {host * 1e3:9.3f} {ref * 1e3:9.3f} {host / ref:7.2f}")


if __name__ == "__main__":
    main()
