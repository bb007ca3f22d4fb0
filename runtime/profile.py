"""Profiling a compiled model: where one call's time goes, per external
function and per host op group.

Nothing of this is in a model's normal code. `profile` JIT-compiles a second
host from the partitioned IR, as the model's own was built, with a call to a
timer before each op group of the host's functions (convert-relay-to-loops'
`profile` option: one lowered op with the ops fused into it, or one call of
an external function) and after the last one. The timer, a small LLVM IR
module linked in, reads the monotonic clock (`clock_gettime`, tens of
nanoseconds) and adds the time since the previous mark to the group that
mark closed. The
external functions are the model's own, already loaded, and the code reads
the model's own weights blob (`partitioned_ir` elides the weights: the
instrumented module is laid out with placeholders of their sizes, which
reproduces the model's layout).
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)

from byoc.dialects import relay
from byoc.dialects.extern import COMPILER_ATTR
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.reference import numpy_dtype

ELIDED_HANDLE = "__elided__"
"""The resource name of a weight `partitioned_ir` prints without its bytes."""

CLOCK_MONOTONIC = 1
"""Linux's clock id for `clock_gettime` (the clock `time.monotonic` reads)."""


def timer_ir(prefix: str) -> str:
    """LLVM IR defining `int32_t <prefix>mark(int64_t group)`: it adds the time
    since the previous mark to the group that mark opened, in the int64
    array `<prefix>ns` points to (bound by the profiler), and opens `group`
    (-1: none)."""
    ns, last, open_ = f"@{prefix}ns", f"@{prefix}last", f"@{prefix}open"
    return f"""{ns} = global ptr null
{last} = internal global i64 0
{open_} = internal global i64 -1
declare i32 @clock_gettime(i32, ptr)
define i32 @{prefix}mark(i64 %next) {{
  %ts = alloca [2 x i64], align 8
  %status = call i32 @clock_gettime(i32 {CLOCK_MONOTONIC}, ptr %ts)
  %seconds = load i64, ptr %ts, align 8
  %nsp = getelementptr [2 x i64], ptr %ts, i64 0, i64 1
  %nanos = load i64, ptr %nsp, align 8
  %scaled = mul i64 %seconds, 1000000000
  %t = add i64 %scaled, %nanos
  %group = load i64, ptr {open_}, align 8
  %has = icmp sge i64 %group, 0
  br i1 %has, label %add, label %done
add:
  %since = load i64, ptr {last}, align 8
  %elapsed = sub i64 %t, %since
  %times = load ptr, ptr {ns}, align 8
  %slot = getelementptr i64, ptr %times, i64 %group
  %total = load i64, ptr %slot, align 8
  %sum = add i64 %total, %elapsed
  store i64 %sum, ptr %slot, align 8
  br label %done
done:
  store i64 %next, ptr {open_}, align 8
  store i64 %t, ptr {last}, align 8
  ret i32 0
}}
"""


@dataclass(frozen=True)
class Entry:
    """One row of a profile: a group of the host's `@main` and its time per call."""

    seconds: float
    where: str
    """`host`, or the backend of an external function."""
    name: str
    """The external function's symbol, or the host group's last op."""
    ops: str
    """The relay ops the time covers."""
    count: int = 1
    """How many groups of identical ops and shapes the row adds up."""


@dataclass(frozen=True)
class Profile:
    """Time per call of a model, split by where it went, largest first."""

    entries: tuple[Entry, ...]
    runs: int
    total: float
    """Seconds per profiled call, marks included (their sum plus the time
    outside every group)."""
    uninstrumented: float
    """Median seconds per call of the model itself, for comparison."""
    own_weights: bool = True
    """Whether the instrumented code read the model's weights (else zeros)."""

    def by_place(self) -> dict[str, float]:
        """Seconds per call spent in each backend and on the host."""
        out: dict[str, float] = {}
        for entry in self.entries:
            out[entry.where] = out.get(entry.where, 0.0) + entry.seconds
        return out

    def __str__(self) -> str:
        lines = [
            f"profile over {self.runs} runs: {self.total * 1e3:.3f} ms per call "
            f"instrumented, {self.uninstrumented * 1e3:.3f} ms as compiled"
            + ("" if self.own_weights else " (timed on zero weights)"),
            f"{'ms':>9} {'share':>6}  {'where':<12} {'function / op group':<34} ops",
        ]
        for e in self.entries:
            share = e.seconds / self.total if self.total else 0.0
            name = f"{e.name} (x{e.count})" if e.count > 1 else e.name
            lines.append(
                f"{e.seconds * 1e3:9.3f} {share:6.1%}  {e.where:<12} {name:<34} {e.ops}"
            )
        places = ", ".join(
            f"{where} {seconds * 1e3:.3f} ms ({seconds / self.total if self.total else 0:.0%})"
            for where, seconds in sorted(self.by_place().items(), key=lambda kv: -kv[1])
        )
        lines.append(f"by place: {places}")
        return "\n".join(lines)


def _short(op_name: str) -> str:
    return op_name.removeprefix("relay.").removeprefix("nn.")


def function_ops(function: func.FuncOp) -> str:
    """The relay ops of an outlined function, counted: `conv2d x3, relu x2, add`."""
    counts = Counter(
        _short(op.name)
        for op in function.body.block.ops
        if op.name.startswith("relay.") and op.name != "relay.constant"
    )
    return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items())


def describe_groups(labels: Sequence[str], partitioned: ModuleOp) -> list[tuple[str, str, str]]:
    """`(where, name, ops)` of each group label written by the profiling marks."""
    outlined = {
        op.sym_name.data: op
        for op in partitioned.ops
        if isinstance(op, func.FuncOp) and COMPILER_ATTR in op.attributes
    }
    described = []
    for label in labels:
        if label.startswith("call @"):
            symbol = label.removeprefix("call @")
            function = outlined.get(symbol)
            backend = function.attributes.get(COMPILER_ATTR) if function else None
            where = backend.data if isinstance(backend, StringAttr) else "?"
            ops = function_ops(function) if function is not None else ""
            described.append((where, re.sub(r"^byoc_[0-9a-f]+_", "", symbol), ops))
        else:
            names, _, shape = label.partition(" ")
            ops = " + ".join(_short(n) for n in names.split("+"))
            described.append(("host", _short(names.split("+")[-1]), f"{ops} {shape}".rstrip()))
    return described


def with_placeholder_weights(module: ModuleOp) -> None:
    """Give each elided weight of `module` (`dense_resource<__elided__>`, as
    `partitioned_ir` prints large constants) a value of its size, distinct
    from every other: lowered, the module then lays its weights out as the
    model's compile did (equal weights share one place; placeholders never
    do, which a differing blob size reveals)."""
    for op in module.walk():
        if not isinstance(op, relay.ConstantOp) or not isinstance(op.value, DenseResourceAttr):
            continue
        if not op.value.resource_handle.data.startswith(ELIDED_HANDLE):
            continue  # the parser numbers repeated handles: __elided___0, ...
        typ = op.result.type
        assert isinstance(typ, TensorType)
        size = math.prod(typ.get_shape()) * numpy_dtype(typ.element_type).itemsize
        data = bytearray(size)
        marker = id(op).to_bytes(8, "little")[: min(8, size)]
        data[: len(marker)] = marker
        op.properties["value"] = DenseIntOrFPElementsAttr(typ, BytesAttr(bytes(data)))


class Profiler:
    """The instrumented host of one compiled model, built on first use."""

    def __init__(self, model) -> None:  # noqa: ANN001 - a CompiledModule
        from byoc.backends.host import host_module, lower_host
        from byoc.frontend.parse import parse_text
        from byoc.passes.convert_relay_to_loops import ProfileMarks
        from byoc.passes.dedup_functions import dedup_functions
        from byoc.runtime.build import rename_symbols
        from byoc.runtime.jit import JitModule, ffi
        from byoc.runtime.weights import aligned_zeros

        if not model.entry_name.endswith("entry"):
            raise ByocError("error: this model's host code cannot be profiled")
        base = model.entry_name.removesuffix("entry")
        prefix = f"{base}profile_"
        partitioned = parse_text(model.partitioned_ir, "<partitioned IR>")
        with_placeholder_weights(partitioned)
        rename_symbols(partitioned, base, "main")
        # The compile merged identical outlined functions after printing
        # partitioned_ir: only the kept ones are in the model's libraries.
        dedup_functions(partitioned)
        # The profiled main gets names of its own, beside the model's; the
        # host is built as the model's was (split, deduplicated), with marks.
        self.main = f"{prefix}main"
        for op in partitioned.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == f"{base}main":
                op.sym_name = StringAttr(self.main)
        marks = ProfileMarks(prefix)
        weights_symbol = f"{prefix}weights"
        host, layout = lower_host(
            host_module(partitioned),
            self.main,
            f"{prefix}entry",
            weights_symbol,
            marks=marks,
            companions=[timer_ir(prefix)],
        )
        self.groups = describe_groups(marks.groups, partitioned)
        libraries = [lib for a in model.artifacts for lib in a.libraries]
        self.jit = JitModule(host, libraries)
        self.own_weights = True
        """Whether the instrumented code reads the model's weights (else zeros
        of the same layout: the model shares one copy between equal weights,
        which the elided IR cannot tell apart)."""
        if layout.entries:
            weights = model.weights
            if weights is not None and weights.size == layout.size:
                self.jit.bind_pointer(weights_symbol, weights.address)
            else:
                self.own_weights = False
                self._zeros = aligned_zeros(layout.size)
                self.jit.bind_pointer(weights_symbol, self._zeros.__array_interface__["data"][0])
        self.times = np.zeros(max(1, len(self.groups)), np.int64)
        self.jit.bind_pointer(f"{prefix}ns", self.times.__array_interface__["data"][0])
        n = len(model.inputs) + len(model.outputs)
        self.call = self.jit.function(self.main, f"int32_t(*)({', '.join(['void*'] * n) or 'void'})")
        self.ffi = ffi

    def run(self, model, inputs: Sequence[np.ndarray], runs: int) -> Profile:  # noqa: ANN001
        arrays = [model._argument(i, x) for i, x in enumerate(inputs)]
        outputs = [np.empty(s.shape, s.dtype) for s in model.outputs]
        pointers = [self.ffi.from_buffer(a) for a in (*arrays, *outputs)]
        self.outputs = outputs
        """What the instrumented code computed (tests compare it with the model's)."""
        self._call(pointers)  # warm up
        self.times[:] = 0
        started = time.perf_counter()
        for _ in range(runs):
            self._call(pointers)
        total = (time.perf_counter() - started) / runs
        plain = []
        for _ in range(runs):
            start = time.perf_counter()
            model(*arrays)
            plain.append(time.perf_counter() - start)
        merged: dict[tuple[str, str, str], float] = {}
        counts: Counter[tuple[str, str, str]] = Counter()
        for k, key in enumerate(self.groups):
            merged[key] = merged.get(key, 0.0) + float(self.times[k]) * 1e-9 / runs
            counts[key] += 1
        entries = sorted(
            (
                Entry(seconds, where, name, ops, counts[(where, name, ops)])
                for (where, name, ops), seconds in merged.items()
            ),
            key=lambda e: -e.seconds,
        )
        return Profile(
            tuple(entries), runs, total, statistics.median(plain), self.own_weights
        )

    def _call(self, pointers) -> None:  # noqa: ANN001
        status = self.call(*pointers)
        if status:
            raise ByocError(f"error: the compiled model failed (status {status})")


def profile(model, inputs: Sequence[np.ndarray], runs: int | None = None) -> Profile:  # noqa: ANN001
    """Profile `model` on `inputs` over `runs` calls (by default enough for about
    a second), building its instrumented host on the first call."""
    profiler = getattr(model, "_profiler", None)
    if profiler is None:
        profiler = Profiler(model)
        model._profiler = profiler
    if runs is None:
        start = time.perf_counter()
        model(*inputs)
        once = time.perf_counter() - start
        runs = max(3, min(1000, math.ceil(1.0 / max(once, 1e-6))))
    return profiler.run(model, inputs, runs)
