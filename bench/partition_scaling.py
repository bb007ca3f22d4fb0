"""Time annotate + merge + partition on chain and diamond graphs of 1,000 to 32,000 ops.

Graphs are built through the Python API (not parsed). Prints a table of
seconds per phase and the growth factor per doubling of N (goal: 32,000-op
diamond under 2 s, each doubling at most 2.2x).

    python bench/partition_scaling.py [--max 32000]
"""

from __future__ import annotations

import argparse
import gc
import time

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

from byoc.backends import get_backend
from byoc.dialects import relay
from byoc.passes.annotate import annotate
from byoc.passes.partition import partition

TYPE = TensorType(f32, (16,))


def chain(n: int) -> ModuleOp:
    """add (ccompiler) and tanh (host) alternating: n/2 regions."""
    block = Block(arg_types=[TYPE])
    value = block.args[0]
    for i in range(n):
        op = relay.AddOp(value, value) if i % 2 == 0 else relay.TanhOp(value)
        block.add_op(op)
        value = op.results[0]
    block.add_op(func.ReturnOp(value))
    return _module(block)


def diamond(n: int) -> ModuleOp:
    """Diamonds x -> {add (cc), tanh (host)} -> multiply (cc): 3 ops each."""
    block = Block(arg_types=[TYPE])
    value = block.args[0]
    for _ in range(n // 3):
        left = relay.AddOp(value, value)
        right = relay.TanhOp(value)
        join = relay.MultiplyOp(left.results[0], right.results[0])
        block.add_ops([left, right, join])
        value = join.results[0]
    block.add_op(func.ReturnOp(value))
    return _module(block)


def _module(block: Block) -> ModuleOp:
    main = func.FuncOp("main", FunctionType.from_lists([TYPE], [TYPE]), Region(block))
    return ModuleOp([main])


def measure(build, n: int) -> tuple[float, float, int]:
    module = build(n)
    backends = [get_backend("ccompiler")]
    gc.collect()
    t0 = time.perf_counter()
    annotate(module, backends)
    t1 = time.perf_counter()
    functions = partition(module)  # merge + outline, straight to functions
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, len(functions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=32000)
    args = parser.parse_args()
    sizes = []
    n = 1000
    while n <= args.max:
        sizes.append(n)
        n *= 2
    print(f"{'graph':8} {'ops':>7} {'regions':>8} {'annotate':>9} {'partition':>10} {'total s':>8} {'x prev':>7}")
    for name, build in (("chain", chain), ("diamond", diamond)):
        previous = None
        for n in sizes:
            a, p, regions = measure(build, n)
            total = a + p
            ratio = f"{total / previous:.2f}" if previous else "-"
            previous = total
            print(f"{name:8} {n:7d} {regions:8d} {a:9.3f} {p:10.3f} {total:8.3f} {ratio:>7}")


if __name__ == "__main__":
    main()
