"""A backend's mistakes are named as its own; codegen that fails falls back safely;
verify and failing statuses name the function and backend at fault."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.backends import Artifact, Backend, BackendError, Composite, always, parse_targets
from byoc.backends.errors import BackendWarning
from byoc.runtime.build import load_source
from byoc.runtime.toolchain import compile_shared

BIN = Path(sys.executable).parent

MODEL = """\
func.func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c = relay.constant dense<1.5> : tensor<4x4xf32>
  %0 = relay.add %a, %c : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = relay.tanh %0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = relay.multiply %1, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = relay.nn.relu %2 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %3 : tensor<4x4xf32>
}
"""

SUPPORTED = MODEL.replace("relay.tanh %0", "relay.nn.relu %0")
"""MODEL with every op one of the test backends takes (nothing on the host)."""

C_EXPRESSIONS = {
    "relay.add": "{0}[i] + {1}[i]",
    "relay.subtract": "{0}[i] - {1}[i]",
    "relay.multiply": "{0}[i] * {1}[i]",
    "relay.nn.relu": "{0}[i] > 0.0f ? {0}[i] : 0.0f",
}


def elementwise_c(kernels, expressions=C_EXPRESSIONS, status: int = 0) -> str:
    """C for same-shape elementwise kernels (one stack buffer per op)."""
    from byoc.targets.c import c_array

    parts = ["#include <stdint.h>", "#include <string.h>"]
    for k in kernels:
        parts += [c_array(f"{k.symbol}_{c.value.name}", c.data) for c in k.constants]
        names = {c.value: f"{k.symbol}_{c.value.name}" for c in k.constants}
        params = [f"const float* {v.name}" for v in k.inputs]
        params += [f"float* out{i}" for i in range(len(k.outputs))]
        body = []
        for op in k.ops:
            t = op.result
            args = [names.get(v, v.name) for v in op.operands]
            body.append(f"  static float {t.name}[{t.size}];")
            body.append(f"  for (int i = 0; i < {t.size}; ++i) {t.name}[i] = {expressions[op.name].format(*args)};")
        body += [f"  memcpy(out{i}, {names.get(v, v.name)}, {v.size} * sizeof(float));" for i, v in enumerate(k.outputs)]
        parts.append(f"int32_t {k.symbol}({', '.join(params)}) {{\n" + "\n".join(body) + f"\n  return {status};\n}}")
    return "\n".join(parts) + "\n"


def c_backend(name: str, ops=tuple(C_EXPRESSIONS), source=elementwise_c, **options) -> Backend:
    def codegen(kernels):
        text = source(kernels)
        return Artifact(name, [k.symbol for k in kernels], {f"{name}.c": text}, [compile_shared(text)])

    return Backend(name, {op: always for op in ops}, kernel_codegen=codegen, **options)


def inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s.shape).astype(np.float32) for s in model.inputs]


def reference(args, text=MODEL):
    return byoc.run_reference(load_source(text), args)[0]


# --- Op names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "typo, meant",
    [("relay.relu", "relay.nn.relu"), ("relay.nn.dens", "relay.nn.dense"), ("relay.conv2d", "relay.nn.conv2d")],
)
def test_a_typod_op_name_fails_with_the_nearest_name(typo, meant):
    backend = Backend("typo", {typo: always}, kernel_codegen=lambda k: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(BackendError, match=f"backend 'typo' .*'{typo}', which is not a relay op; did you mean {meant}\\?"):
        byoc.compile(MODEL, targets=[backend])


def test_a_typo_in_a_composite_is_named_too():
    backend = Backend(
        "typo",
        {"relay.add": always},
        kernel_codegen=lambda k: None,  # type: ignore[arg-type, return-value]
        composites=(Composite("fused", ("relay.add", "relay.tanhh")),),
    )
    with pytest.raises(BackendError, match="composite fused name 'relay.tanhh'.*did you mean relay.tanh"):
        parse_targets([backend])


# --- Checks --------------------------------------------------------------------


def test_an_exception_in_a_check_names_backend_module_and_op():
    def check(op):
        return op.no_such_attribute

    backend = Backend("buggy", {"relay.add": check}, kernel_codegen=lambda k: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(BackendError) as info:
        byoc.compile(MODEL, targets=[backend])
    message = str(info.value)
    assert "backend 'buggy' (module test_backend_errors): check of relay.add" in message
    assert "<string>:3:" in message and "AttributeError" in message
    assert "an error in the backend, not in byoc" in message
    assert "internal compiler error" not in message


def test_a_check_must_return_none_or_a_reason():
    backend = Backend("truthy", {"relay.add": lambda op: True}, kernel_codegen=lambda k: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(BackendError, match="returned True; a check returns None to take the op"):
        byoc.compile(MODEL, targets=[backend])


def test_an_exception_in_a_pattern_check_is_the_backends():
    def pattern(ops):
        raise KeyError("axis")

    backend = c_backend("fused", composites=(Composite("mul_relu", ("relay.multiply", "relay.nn.relu"), pattern),))
    with pytest.raises(BackendError, match="backend 'fused' .*pattern check of mul_relu for .*relay.multiply.*KeyError"):
        byoc.compile(MODEL, targets=[backend])


def test_debug_shows_the_backends_traceback(monkeypatch):
    def check(op):
        return {}["deep inside the vendor"]

    backend = Backend("buggy", {"relay.add": check}, kernel_codegen=lambda k: None)  # type: ignore[arg-type, return-value]
    monkeypatch.setenv("BYOC_DEBUG", "1")
    with pytest.raises(BackendError) as info:
        byoc.compile(MODEL, targets=[backend])
    assert "Traceback (most recent call last)" in str(info.value)
    assert "in check" in str(info.value) and "deep inside the vendor" in str(info.value)


# --- Codegen that fails safely -------------------------------------------------


def raising_backend(bad_op: str) -> Backend:
    """Generates C, but raises for a function holding `bad_op`."""

    def codegen(kernels):
        if any(op.name == bad_op for k in kernels for op in k.ops):
            raise RuntimeError(f"{bad_op} is not ready")
        text = elementwise_c(kernels)
        return Artifact("flaky", [k.symbol for k in kernels], {"flaky.c": text}, [compile_shared(text)])

    return Backend("flaky", {op: always for op in C_EXPRESSIONS}, kernel_codegen=codegen)


def test_a_codegen_that_raises_falls_back_with_a_warning():
    with pytest.warns(BackendWarning) as caught:
        model = byoc.compile(MODEL, targets=[raising_backend("relay.nn.relu"), "ccompiler"])
    [warning] = caught
    text = str(warning.message)
    assert "backend 'flaky' could not generate code for @flaky_1" in text
    assert "relay.multiply, relay.nn.relu" in text and "RuntimeError: relay.nn.relu is not ready" in text
    assert "they run on ccompiler (2)" in text
    # The function that worked stays on flaky; the failed one went elsewhere.
    assert model.placement == {"host": 1, "flaky": 1, "ccompiler": 2}
    [record] = model.fallbacks
    assert record.backend == "flaky" and record.ops == ("relay.multiply", "relay.nn.relu")
    args = inputs(model)
    np.testing.assert_allclose(model(*args), reference(args), rtol=1e-5, atol=1e-6)


def test_a_fallback_goes_to_the_host_when_no_backend_remains():
    with pytest.warns(BackendWarning, match="they run on the host \\(1\\)"):
        model = byoc.compile(MODEL, targets=[raising_backend("relay.add")])
    assert model.placement == {"host": 2, "flaky": 2}
    args = inputs(model)
    np.testing.assert_allclose(model(*args), reference(args), rtol=1e-5, atol=1e-6)


def test_no_fallback_makes_a_failing_codegen_an_error():
    with pytest.raises(BackendError, match="backend 'flaky' .*codegen for @byoc_\\w+_flaky_0 .*RuntimeError"):
        byoc.compile(SUPPORTED, targets=[raising_backend("relay.multiply"), "ccompiler"], fallback=False)
    # and, as for --no-fallback in byoc-opt, so is an op no backend takes
    with pytest.raises(byoc.ByocError, match="--no-fallback: 1 op\\(s\\) are not supported"):
        byoc.compile(MODEL, targets=["ccompiler"], fallback=False)


def test_c_that_does_not_compile_is_the_backends_and_falls_back():
    def broken(kernels):
        return elementwise_c(kernels).replace("return 0;", "return undeclared;")

    backend = c_backend("sloppy", source=broken)
    with pytest.raises(BackendError) as info:
        byoc.compile(SUPPORTED, targets=[backend], fallback=False)
    message = str(info.value)
    assert "backend 'sloppy' (module test_backend_errors): codegen for @" in message
    assert "its generated C does not compile" in message and "undeclared" in message
    assert "byoc bug" not in message
    with pytest.warns(BackendWarning, match="sloppy.*its generated C does not compile.*undeclared"):
        model = byoc.compile(MODEL, targets=[backend, "ccompiler"])
    assert "sloppy" not in model.placement
    args = inputs(model)
    np.testing.assert_allclose(model(*args), reference(args), rtol=1e-5, atol=1e-6)


def test_a_bad_artifact_is_the_backends():
    backend = Backend("lazy", {"relay.add": always}, kernel_codegen=lambda kernels: "C text")  # type: ignore[arg-type, return-value]
    with pytest.raises(BackendError, match="backend 'lazy' .*returned str, not a byoc.backends.Artifact"):
        byoc.compile(SUPPORTED, targets=[backend, "ccompiler"], fallback=False)

    def no_symbols(kernels):
        return Artifact("forgetful", [], {}, [])

    backend = Backend("forgetful", {"relay.add": always}, kernel_codegen=no_symbols)
    with pytest.raises(BackendError, match="its Artifact does not export byoc_\\w+_forgetful_0"):
        byoc.compile(SUPPORTED, targets=[backend, "ccompiler"], fallback=False)


def test_only_the_failing_function_of_many_falls_back():
    """Halving finds the one bad function among several; the others keep their code."""
    chain = ["%x0 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>"]
    for i in range(8):
        op = "relay.multiply" if i == 5 else "relay.add"
        chain.append(f"%y{i} = {op} %x{i}, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>")
        chain.append(f"%x{i + 1} = relay.tanh %y{i} : (tensor<4xf32>) -> tensor<4xf32>")
    text = (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  "
        + "\n  ".join(chain)
        + "\n  func.return %x8 : tensor<4xf32>\n}\n"
    )
    with pytest.warns(BackendWarning) as caught:
        model = byoc.compile(text, targets=[raising_backend("relay.multiply"), "ccompiler"])
    assert len(caught) == 1 and "@flaky_5" in str(caught[0].message)
    assert model.placement["flaky"] == 7 and model.placement["ccompiler"] == 1
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    np.testing.assert_allclose(model(x), byoc.run_reference(load_source(text), [x])[0], rtol=1e-5)


def test_a_cache_hit_warns_again(tmp_path, monkeypatch):
    """A registered backend's fallback is saved with the cached model and reported again."""
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    from byoc.backends import get_backend

    ccompiler = get_backend("ccompiler")
    real = ccompiler.codegen

    def failing(functions):
        raise RuntimeError("simulated")

    object.__setattr__(ccompiler, "codegen", failing)
    try:
        for _ in range(2):
            with pytest.warns(BackendWarning, match="backend 'ccompiler' could not generate") as caught:
                model = byoc.compile(MODEL, targets=["ccompiler"])
            assert len(caught) == 2  # @ccompiler_0 and @ccompiler_1
            assert model.placement == {"host": 4} and len(model.fallbacks) == 2
    finally:
        object.__setattr__(ccompiler, "codegen", real)
    assert any((tmp_path / "models").iterdir())


# --- Statuses and verify ---------------------------------------------------------


def test_a_failing_status_names_the_function_and_backend():
    backend = c_backend("grumpy", source=lambda k: elementwise_c(k, status=7))
    model = byoc.compile(MODEL, targets=[backend])
    with pytest.raises(byoc.ByocError) as info:
        model(*inputs(model))
    message = str(info.value)
    assert "external function @grumpy_0 (backend 'grumpy', module test_backend_errors) failed with status 7" in message
    assert "relay.add" in message


def test_verify_names_the_backend_computing_one_op_wrongly():
    wrong = {**C_EXPRESSIONS, "relay.multiply": "{0}[i] * {1}[i] + 1e-3f"}
    backend = c_backend("sloppy", source=lambda k: elementwise_c(k, wrong))
    model = byoc.compile(MODEL, targets=[backend, "ccompiler"])
    args = inputs(model)
    with pytest.raises(byoc.ByocError) as info:
        model.verify(*args)
    message = str(info.value)
    assert "external function @sloppy_1 (backend 'sloppy'" in message
    assert "disagrees with the reference interpreter on output 0" in message
    assert "relay.multiply, relay.nn.relu" in message


def test_verify_passes_a_correct_model_and_reports_each_function():
    model = byoc.compile(MODEL, targets=[c_backend("fine"), "ccompiler"])
    checks = model.verify(*inputs(model))
    assert [(c.function, c.backend, c.ok) for c in checks] == [("fine_0", "fine", True), ("fine_1", "fine", True)]
    assert checks[1].ops == ("relay.multiply", "relay.nn.relu")


def test_verify_names_the_host_when_every_function_agrees(monkeypatch):
    model = byoc.compile(MODEL, targets=["ccompiler"])
    args = inputs(model)
    from byoc.runtime import verify as verify_module

    real = verify_module.ReferenceInterpreter.call

    def skewed(self, name, values):
        out = real(self, name, values)
        return [o + 1 for o in out] if name == "main" else out

    monkeypatch.setattr(verify_module.ReferenceInterpreter, "call", skewed)
    with pytest.raises(byoc.ByocError, match="every external function agrees.*the host code disagrees"):
        model.verify(*args)


# --- The CLIs, with an installed backend that fails ---------------------------


@pytest.fixture(scope="module")
def broken_plugin(tmp_path_factory):
    """A backend package installed by hand (a dist-info with an entry point)."""
    site = tmp_path_factory.mktemp("site")
    package = site / "brokenvendor"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """\
            import os
            from byoc.backends import Artifact, Backend, always

            def check(op):
                if os.environ.get("BROKEN_CHECK"):
                    return op.shape_of_everything
                return None

            def codegen(kernels):
                raise ValueError("the vendor's codegen is broken")

            backend = Backend("broken", {"relay.add": check, "relay.multiply": always}, kernel_codegen=codegen)
            """
        )
    )
    info = site / "brokenvendor-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenvendor\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[byoc.backends]\nbroken = brokenvendor:backend\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def run(env, *args, **extra):
    return subprocess.run(
        [str(BIN / args[0]), *map(str, args[1:])], capture_output=True, text=True, env={**env, **extra}
    )


def test_cli_fallback_warns_and_still_checks(broken_plugin, tmp_path):
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    proc = run(broken_plugin, "byoc-run", path, "--annotate=broken,ccompiler", "--check")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "warning: backend 'broken' could not generate code for @broken_0" in proc.stderr
    assert "ValueError: the vendor's codegen is broken" in proc.stderr
    assert "fallback: backend 'broken'" in proc.stdout
    assert "matches the reference" in proc.stdout
    path.write_text(SUPPORTED)
    strict = run(broken_plugin, "byoc-run", path, "--annotate=broken,ccompiler", "--no-fallback")
    assert strict.returncode == 1 and "Traceback" not in strict.stderr
    assert "backend 'broken' (package brokenvendor): codegen for @" in strict.stderr


def test_cli_debug_shows_the_backends_traceback(broken_plugin, tmp_path):
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    quiet = run(broken_plugin, "byoc-opt", path, "--annotate=broken", BROKEN_CHECK="1")
    assert quiet.returncode == 1 and "Traceback" not in quiet.stderr
    assert "backend 'broken' (package brokenvendor): check of relay.add for" in quiet.stderr
    assert "AttributeError" in quiet.stderr and "--debug shows its traceback" in quiet.stderr
    for extra, env in ((("--debug",), {}), ((), {"BYOC_DEBUG": "1"})):
        loud = run(broken_plugin, "byoc-opt", path, "--annotate=broken", *extra, BROKEN_CHECK="1", **env)
        assert loud.returncode == 1
        assert "Traceback (most recent call last)" in loud.stderr
        assert "brokenvendor/__init__.py" in loud.stderr and "return op.shape_of_everything" in loud.stderr


def test_cli_check_functions_names_the_bad_function(tmp_path):
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    proc = run(dict(os.environ), "byoc-run", path, "--annotate=ccompiler", "--check=functions")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "@ccompiler_0 (ccompiler; relay.add): ok" in proc.stdout
    assert "external function call(s) and the outputs match the reference" in proc.stdout


WEIGHTED = """\
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x32xf32> {
  %w = relay.constant dense<"0xHEX"> : tensor<32x64xf32>
  %0 = relay.nn.dense %x, %w : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
  %1 = relay.tanh %0 : (tensor<1x32xf32>) -> tensor<1x32xf32>
  %2 = relay.nn.relu %1 : (tensor<1x32xf32>) -> tensor<1x32xf32>
  func.return %2 : tensor<1x32xf32>
}
""".replace("HEX", np.random.default_rng(5).standard_normal((32, 64)).astype("<f4").tobytes().hex().upper())


def test_verify_gets_elided_weights_from_the_source(tmp_path, monkeypatch):
    """partitioned_ir elides the 2048-element weight; verify partitions the
    source again, for a fresh compile and for a cache hit alike."""
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    path = tmp_path / "weighted.mlir"
    path.write_text(WEIGHTED)
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    for _ in range(2):  # a miss, then a hit
        model = byoc.compile(path, targets=["ccompiler"])
        assert "__elided__" in model.partitioned_ir
        checks = model.verify(x)
        assert [c.backend for c in checks] == ["ccompiler", "ccompiler"] and all(c.ok for c in checks)
    model.save(tmp_path / "m.byoc")
    with pytest.raises(byoc.ByocError, match="loaded from a file: compile it with byoc.compile"):
        byoc.load(tmp_path / "m.byoc").verify(x)
    unverified = byoc.compile(path, targets=["ccompiler"])
    path.write_text(WEIGHTED.replace("relay.nn.relu %1", "relay.negative %1"))
    with pytest.raises(byoc.ByocError, match="no longer partitions as it did"):
        unverified.verify(x)


REPEATED = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.multiply %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %1, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.tanh %2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
"""


def test_identical_functions_merged_by_dedup_verify_and_fall_back_together():
    """@ccompiler_1 is compiled once as @ccompiler_0; verify still runs it, and a
    failure of the one compiled function sends both copies elsewhere."""
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    model = byoc.compile(REPEATED, targets=["ccompiler"])
    checks = model.verify(x, x)
    assert [c.function for c in checks] == ["ccompiler_0", "ccompiler_1"] and all(c.ok for c in checks)
    with pytest.warns(BackendWarning, match="flaky.*2 op\\(s\\): relay.multiply.*ccompiler \\(2\\)"):
        fallen = byoc.compile(REPEATED, targets=[raising_backend("relay.multiply"), "ccompiler"])
    assert fallen.placement == {"ccompiler": 2, "host": 2}
    np.testing.assert_allclose(fallen(x, x), byoc.run_reference(load_source(REPEATED), [x, x])[0], rtol=1e-6)


def test_verify_an_onnx_model_pinned_by_input_shapes():
    """verify partitions the source again as it was compiled: an ONNX model
    with a symbolic batch needs its pins then too."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)  # elided
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "pinned",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 64])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    compiled = byoc.compile(model, targets=["ccompiler"], input_shapes={"x": [3, 64]})
    assert "__elided__" in compiled.partitioned_ir
    x = np.random.default_rng(3).standard_normal((3, 64)).astype(np.float32)
    checks = compiled.verify(x)
    assert checks and all(c.ok for c in checks)
    np.testing.assert_allclose(compiled(x), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
