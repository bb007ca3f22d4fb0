"""Compile time stays linear: bounded functions (split + dedup), C in several
translation units compiled concurrently, and the stages of a compile."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

import byoc
from byoc.backends import ccompiler, host
from byoc.dialects import relay
from byoc.passes.dedup_functions import dedup_functions
from byoc.passes.split_functions import split_functions, translation_units
from byoc.runtime import progress
from byoc.runtime.reference import run_reference
from byoc.runtime.toolchain import DEFAULT_FLAGS, LibraryBuild
from graphs import check_dominance

BIN = Path(sys.executable).parent
TYPE = TensorType(f32, (8,))


def mixed(n: int, seed: int = 0) -> ModuleOp:
    """n ops mixing ccompiler ops (add, multiply by a constant) and host ops
    (tanh), with values read again far downstream (live across cuts)."""
    rng = np.random.default_rng(seed)
    block = Block(arg_types=[TYPE, TYPE])
    values = list(block.args)
    for i in range(n):
        kind = i % 4
        a = values[-1]
        b = values[int(rng.integers(0, len(values)))]
        if kind == 0:
            op = relay.AddOp(a, b)
        elif kind == 1:
            w = relay.ConstantOp.from_numpy(rng.uniform(0.5, 1.0, 8).astype(np.float32))
            block.add_op(w)
            op = relay.MultiplyOp(a, w.result)
        elif kind == 2:
            op = relay.TanhOp(a)
        else:
            op = relay.SubtractOp(a, b)
        block.add_op(op)
        values.append(op.results[0])
    block.add_op(func.ReturnOp(values[-1], values[len(values) // 2]))
    main = func.FuncOp("main", FunctionType.from_lists([TYPE, TYPE], [TYPE, TYPE]), Region(block))
    return ModuleOp([main])


def inputs(seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(8).astype(np.float32) for _ in range(2)]


def test_split_keeps_the_meaning_and_bounds_every_function():
    module = mixed(101)
    want = run_reference(module.clone(), inputs())
    parts = split_functions(module, 7)
    assert len(parts) == 15
    check_dominance(module)
    module.verify()
    for function in module.ops:
        ops = [op for op in function.body.block.ops if not isinstance(op, (relay.ConstantOp, func.ReturnOp))]
        assert len(ops) <= 15  # a part: 7 ops; main: 15 calls
    got = run_reference(module, inputs())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def repeated(n: int) -> ModuleOp:
    block = Block(arg_types=[TYPE])
    value = block.args[0]
    for i in range(n):
        op = relay.AddOp(value, value) if i % 2 == 0 else relay.TanhOp(value)
        block.add_op(op)
        value = op.results[0]
    block.add_op(func.ReturnOp(value))
    return ModuleOp([func.FuncOp("main", FunctionType.from_lists([TYPE], [TYPE]), Region(block))])


def test_dedup_keeps_one_of_each_part():
    module = repeated(400)
    want = run_reference(module.clone(), inputs()[:1])
    split_functions(module, 20)
    merged = dedup_functions(module)
    assert len(merged) == 19 and len(list(module.ops)) == 2
    np.testing.assert_array_equal(run_reference(module, inputs()[:1])[0], want[0])


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["cblas", "ccompiler"]])
def test_models_larger_than_the_budget_compile_and_match(targets, monkeypatch):
    """With budgets of a few ops, every path (host parts, backend parts, several
    translation units, OpenMP or not) is exercised by a small model."""
    monkeypatch.setattr(host, "MAX_OPS", 5)
    monkeypatch.setattr(ccompiler, "MAX_OPS", 3)
    monkeypatch.setattr(ccompiler, "UNIT_OPS", 7)
    module = mixed(60, seed=3)
    want = run_reference(module.clone(), inputs())
    model = byoc.compile(module, targets=targets, cache=False)
    got = model(*inputs())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if "ccompiler" in targets:
        c_files = [name for name in model.sources if name.startswith("ccompiler")]
        assert len(c_files) > 1, c_files  # several translation units
    assert "_part" in model.host.llvm_ir and "noinline" in model.host.llvm_ir


@pytest.mark.parametrize("shares", [2, 3])
def test_host_parts_optimised_on_several_threads_match(shares, monkeypatch, tmp_path):
    """A host module cut into parts is optimised as `shares` modules on
    threads of their own, then linked: the same answers as one module, every
    part compiled once and internal again, and the object saves and loads."""
    from byoc.runtime import jit

    monkeypatch.setattr(host, "MAX_OPS", 5)
    monkeypatch.setattr(jit, "parallel_shares", lambda: shares)
    monkeypatch.setattr(jit, "PARALLEL_MIN_INSTRUCTIONS", 0)
    optimised: list[int] = []
    optimise_share = jit._optimise_share
    monkeypatch.setattr(jit, "_optimise_share", lambda text: (optimised.append(1), optimise_share(text))[1])
    module = mixed(60, seed=5)
    want = run_reference(module.clone(), inputs())
    model = byoc.compile(module, targets=[], cache=False)
    assert len(optimised) == shares
    for g, w in zip(model(*inputs()), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    ir = model.host.llvm_ir
    parts = [line for line in ir.splitlines() if line.startswith("define") and "_part" in line]
    assert len(parts) > shares and all(line.startswith("define internal") for line in parts)
    assert len(parts) == len(set(parts))
    assert len(model.host.emit_objects()) == shares  # emitted on the threads too
    model.save(tmp_path / "model.byoc")
    loaded = byoc.load(tmp_path / "model.byoc")
    for g, w in zip(loaded(*inputs()), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    check_exported_library(model, want, tmp_path)


def check_exported_library(model, want, tmp_path):
    """`model` exported ahead of time computes `want` from `inputs()`, and its
    library exports the entry points, none of the host's own functions (linked
    from several objects, they are hidden)."""
    import cffi

    from byoc.runtime.aot import export_library

    library, _ = export_library(model, tmp_path / "libnet.so", "net")
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    assert "net_run" in symbols.stdout and "_part" not in symbols.stdout
    ffi = cffi.FFI()
    args = [np.ascontiguousarray(x) for x in inputs()] + [np.zeros_like(w) for w in want]
    ffi.cdef(f"int32_t net_run({', '.join(['float*'] * len(args))});")
    lib = ffi.dlopen(str(library))
    assert lib.net_run(*[ffi.cast("float*", ffi.from_buffer(a)) for a in args]) == 0
    for g, w in zip(args[len(args) - len(want):], want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_long_chain_compiles_once_per_distinct_part():
    """8,000 ops alternating between ccompiler and the host: 4,000 identical
    regions become one function, `main` a few hundred calls of one part."""
    from partition_scaling import chain

    model = byoc.compile(chain(8000), targets=["ccompiler"], cache=False)
    (artifact,) = model.artifacts
    assert model.c_source.count("int32_t byoc_") <= 4
    assert model.host.llvm_ir.count("define internal") <= 3
    x = np.linspace(-1, 1, 16).astype(np.float32)
    want = x
    for i in range(8000):
        want = want + want if i % 2 == 0 else np.tanh(want)
    np.testing.assert_allclose(model(x), want, rtol=1e-5, atol=1e-6)
    assert len(artifact.symbols) == 1


def test_translation_units_declare_what_they_call():
    module = mixed(40)
    split_functions(module, 4)
    units = translation_units(module, 9)
    assert len(units) > 2 and not list(module.ops)
    names = set()
    for unit in units:
        defined = {f.sym_name.data for f in unit.ops if f.body.blocks}
        declared = {f.sym_name.data for f in unit.ops if not f.body.blocks}
        assert not defined & names
        names |= defined
        assert not declared & defined
    assert "main" in names


def test_translation_units_keep_kinds_apart():
    module = mixed(40)
    split_functions(module, 4)
    kinds = {f.sym_name.data: int(f.sym_name.data.endswith(("1", "3", "5", "7", "9")))
             for f in module.ops}
    units = translation_units(module, 1000, lambda f: kinds[f.sym_name.data])
    assert len(units) == len(set(kinds.values())) == 2
    for unit in units:
        assert len({kinds[f.sym_name.data] for f in unit.ops if f.body.blocks}) == 1


def test_products_compile_with_o3_and_the_rest_with_o2(tmp_path, monkeypatch):
    """A function holding a dense (compute-bound) is compiled with -O3; the
    elementwise one after the host's tanh with -O2, in a unit of its own (when
    the model is large enough to be cut at all)."""
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ccompiler, "MIN_UNIT_OPS", 1)
    monkeypatch.delenv("BYOC_CFLAGS", raising=False)
    added: list[tuple[str, tuple[str, ...]]] = []
    add = LibraryBuild.add
    monkeypatch.setattr(LibraryBuild, "add", lambda self, source, flags=DEFAULT_FLAGS: (
        added.append((source, flags)), add(self, source, flags))[1])
    x_type, w_type, y_type = TensorType(f32, (4, 16)), TensorType(f32, (8, 16)), TensorType(f32, (4, 8))
    block = Block(arg_types=[x_type])
    w = relay.ConstantOp.from_numpy(np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16))
    dense = relay.DenseOp(block.args[0], w.result)
    tanh = relay.TanhOp(dense.results[0])
    total = relay.AddOp(tanh.results[0], tanh.results[0])
    block.add_ops([w, dense, tanh, total, func.ReturnOp(total.results[0])])
    module = ModuleOp([func.FuncOp("main", FunctionType.from_lists([x_type], [y_type]), Region(block))])
    want = run_reference(module.clone(), [np.ones((4, 16), np.float32)])[0]
    model = byoc.compile(module, targets=["ccompiler"], cache=False)
    np.testing.assert_allclose(model(np.ones((4, 16), np.float32)), want, rtol=1e-5)
    levels = sorted(next(f for f in flags if f.startswith("-O")) for _, flags in added)
    assert levels == ["-O2", "-O3"]
    hot = next(source for source, flags in added if "-O3" in flags)
    assert "for (" in hot and hot.count("int32_t byoc_") == 1


def test_library_of_several_units_compiles_concurrently_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    a = "#include <stdint.h>\nint32_t byoc_probe_b(int32_t);\nint32_t byoc_probe_a(int32_t x) { return byoc_probe_b(x) + 1; }\n"
    b = "#include <stdint.h>\nint32_t byoc_probe_b(int32_t x) { return 2 * x; }\n"
    build = LibraryBuild()
    build.add(a)
    build.add(b, DEFAULT_FLAGS)
    library = build.link()
    assert library.exists() and len(list((tmp_path / "cache" / "objects").glob("*.o"))) == 2
    again = LibraryBuild()
    again.add(a)
    again.add(b)
    assert again.link() == library
    broken = LibraryBuild()
    broken.add("int32_t oops(void) { return undefined_name; }\n")
    with pytest.raises(byoc.ByocError, match="rejected generated code"):
        broken.link()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, and can be waited on for a text."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Condition()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.changed:
            count = super().write(text)
            self.changed.notify_all()
        return count

    def wait_for(self, text: str, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: text in self.getvalue(), timeout)


def test_compile_collects_the_seconds_of_its_stages(monkeypatch):
    with progress.stage("outside"):  # no compile under way: nothing happens
        pass
    monkeypatch.setattr(sys, "stderr", Terminal())
    model = byoc.compile(mixed(12), targets=["ccompiler"], cache=False)
    for name in ("import", "partition", "codegen ccompiler", "codegen host", "host JIT", "total"):
        assert name in model.timings, model.timings
    # Whether a line was shown depends on how fast this machine is; if one
    # was, it is cleared at the end.
    shown = sys.stderr.getvalue()
    assert shown == "" or shown.endswith("\r\x1b[K"), repr(shown)


def test_the_line_names_the_stages_under_way_on_a_terminal(monkeypatch):
    # No timing here: the stage waits until the ticker has written (the line
    # is due at once), however slow or loaded the machine is.
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.compile_stages() as stages:
        with progress.stage("codegen ccompiler"):
            assert terminal.wait_for("codegen ccompiler", 120), "the line never appeared"
    shown = terminal.getvalue()
    assert "byoc:" in shown and "codegen ccompiler" in shown
    assert shown.endswith("\r\x1b[K")  # the line is cleared
    assert "codegen ccompiler" in stages.seconds


def test_quiet_or_not_a_terminal_shows_nothing(monkeypatch):
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress.compile_stages(quiet=True) as stages:
        assert stages._ticker is None  # nothing that could ever write
    byoc.compile(mixed(12, seed=4), targets=["ccompiler"], cache=False, quiet=True)
    assert terminal.getvalue() == ""
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    with progress.compile_stages() as stages:
        assert stages._ticker is None
    byoc.compile(mixed(12, seed=5), targets=["ccompiler"], cache=False)
    assert plain.getvalue() == ""


def test_cached_compile_reports_the_cache_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "m.mlir"
    path.write_text(str(mixed(8)))
    byoc.compile(path, targets=["ccompiler"])
    again = byoc.compile(path, targets=["ccompiler"])
    assert set(again.timings) == {"cache", "total"}


def test_byoc_run_prints_the_stages(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(str(mixed(8, seed=9)))
    proc = subprocess.run(
        [str(BIN / "byoc-run"), str(path), "--annotate=ccompiler", "--timings", "--quiet"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("import", "partition", "codegen ccompiler", "host JIT", "total"):
        assert name in proc.stdout
    assert proc.stderr == ""
def test_a_cache_hit_loads_no_backend(tmp_path):
    """Importing a backend's code costs more than a whole cache hit: a hit
    keys the backends by their entry points' files, without loading them."""
    path = tmp_path / "m.mlir"
    path.write_text(str(mixed(8, seed=11)))
    script = (
        "import sys, numpy as np, byoc\n"
        f"model = byoc.compile({str(path)!r}, targets=['cblas', 'ccompiler'])\n"
        "x = [np.full(8, 0.5, np.float32), np.full(8, -0.25, np.float32)]\n"
        "print(sorted(model.timings), sorted(m for m in sys.modules if m.startswith('byoc.backends.')))\n"
        "print(*[float(v.sum()) for v in model(*x)])\n"
    )
    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    first, second = (proc.stdout.splitlines() for proc in runs)
    assert "codegen ccompiler" in first[0] and "byoc.backends.ccompiler" in first[0]
    assert second[0].startswith("['cache', 'total']")
    for backend in ("ccompiler", "cblas", "onnxruntime", "ccompiler_int8"):
        assert f"byoc.backends.{backend}'" not in second[0]
    assert first[1] == second[1]  # the same results from the entry
