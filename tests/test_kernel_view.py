"""The kernel view (backends/kernel.py) and Backend objects passed to byoc.compile."""

from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc.backends import Artifact, Backend, Composite, always, kernels_of, op_view
from byoc.runtime.build import functions_of, load_source, partition_for
from byoc.runtime.toolchain import compile_shared
from byoc.targets.c import c_array

MODEL = """\
func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x4xf32>) {
  %k = relay.constant dense<[[1.0, -2.0, 0.5], [0.0, 3.0, 1.0e-3]]> : tensor<2x3xf32>
  %0 = relay.add %x, %k : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = relay.nn.dense %0, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %2 = relay.nn.bias_add %1, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = relay.nn.softmax %2 {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %2, %x, %2 : tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x4xf32>
}
"""


def outlined(backend: Backend, text: str = MODEL):
    module = load_source(text)
    partition_for(module, [backend])
    return kernels_of(functions_of(module, backend.name))


def capture(name: str, ops, composites=()) -> tuple[Backend, list]:
    seen: list = []

    def codegen(kernels):
        seen.extend(kernels)
        raise NotImplementedError("capture only")

    return Backend(name, ops, kernel_codegen=codegen, composites=composites), seen


def test_a_kernel_lists_inputs_constants_ops_and_outputs():
    backend, _ = capture(
        "vendor",
        {"relay.add": always, "relay.nn.dense": always, "relay.nn.bias_add": always},
        (Composite("dense_bias", ("relay.nn.dense", "relay.nn.bias_add")),),
    )
    [kernel] = outlined(backend)
    assert kernel.symbol == "vendor_0"
    assert [(v.name, v.shape, str(v.dtype)) for v in kernel.inputs] == [
        ("in0", (2, 3), "float32"),
        ("in1", (4, 3), "float32"),
        ("in2", (4,), "float32"),
    ]
    [constant] = kernel.constants
    assert constant.value.name == "const0" and constant.value.shape == (2, 3)
    np.testing.assert_array_equal(
        constant.data, np.array([[1, -2, 0.5], [0, 3, 1e-3]], np.float32)
    )
    assert not constant.data.flags.writeable
    add, dense, bias = kernel.ops
    assert add.name == "relay.add" and [v.name for v in add.operands] == ["in0", "const0"]
    assert dense.operands == (add.result, kernel.inputs[1])
    assert dense.composite == "vendor.dense_bias" and bias.composite == "vendor.dense_bias"
    assert add.composite is None
    assert bias.attrs == {"axis": 1}
    assert dense.attrs == {"units": None}
    assert bias.result.shape == (2, 4) and bias.result.name == "t2"
    assert kernel.outputs == (bias.result,)
    assert kernel.function.sym_name.data == "vendor_0"  # the xDSL function too
    assert "t2 = relay.nn.bias_add(t1, in2) axis=1" in str(kernel)


def test_attributes_are_python_values_with_defaults():
    backend, _ = capture("vendor", {"relay.nn.softmax": always})
    text = MODEL.replace("func.return %2, %x, %2", "func.return %3, %x, %3")
    [kernel] = outlined(backend, text)
    [softmax] = kernel.ops
    assert softmax.attrs == {"axis": -1}
    assert isinstance(softmax.attrs["axis"], int)


def test_op_view_reads_an_op_for_a_check():
    module = load_source(MODEL)
    dense = next(op for op in module.walk() if op.name == "relay.nn.dense")
    view = op_view(dense)
    assert [v.shape for v in view.operands] == [(2, 3), (4, 3)]
    assert view.result.shape == (2, 4) and view.result.dtype == np.float32


def test_a_kernel_backend_compiles_and_runs_from_an_object():
    """A backend tried in a test before it is packaged: byoc.compile(targets=[obj])."""

    def generate(kernels):
        parts = ["#include <stdint.h>", "#include <string.h>"]
        for k in kernels:
            parts += [c_array(c.value.name, c.data) for c in k.constants]
            params = [f"const float* {v.name}" for v in k.inputs]
            params += [f"float* out{i}" for i in range(len(k.outputs))]
            body = []
            for op in k.ops:
                a, b = (v.name for v in op.operands)
                body.append(f"  float {op.result.name}[{op.result.size}];")
                body.append(
                    f"  for (int i = 0; i < {op.result.size}; ++i) {op.result.name}[i] = {a}[i] + {b}[i];"
                )
            body += [
                f"  memcpy(out{i}, {v.name}, {v.size} * sizeof(float));"
                for i, v in enumerate(k.outputs)
            ]
            parts.append(f"int32_t {k.symbol}({', '.join(params)}) {{\n" + "\n".join(body) + "\n  return 0;\n}")
        return "\n".join(parts) + "\n"

    def codegen(kernels):
        source = generate(kernels)
        return Artifact("adder", [k.symbol for k in kernels], {"adder.c": source}, [compile_shared(source)])

    adder = Backend("adder", {"relay.add": always}, kernel_codegen=codegen, kernel_source=generate)
    model = byoc.compile(MODEL, targets=[adder, "ccompiler"])
    assert model.placement["adder"] == 1
    assert "const0[6] = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f, 0.001f}" in model.c_source
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s.shape).astype(np.float32) for s in model.inputs]
    want = byoc.run_reference(load_source(MODEL), args)
    for got, expected in zip(model(*args), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # Keyword arguments by input name give the same answer.
    np.testing.assert_array_equal(model(x=args[0], w=args[1], b=args[2])[0], model(*args)[0])


def test_backend_objects_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    calls = []

    def codegen(functions):
        calls.append(1)
        from byoc.backends.ccompiler import codegen as c_codegen

        artifact = c_codegen(functions)
        artifact.backend = "mine"
        return artifact

    mine = Backend("mine", {"relay.add": always}, codegen)  # positional, as before
    for _ in range(2):
        byoc.compile(MODEL, targets=[mine])
    assert len(calls) == 2
    assert not (tmp_path / "models").exists()


def test_a_backend_gives_exactly_one_codegen():
    with pytest.raises(byoc.ByocError, match="exactly one of codegen"):
        Backend("none", {})
    with pytest.raises(byoc.ByocError, match="exactly one of codegen"):
        Backend("both", {}, codegen=lambda m: None, kernel_codegen=lambda k: None)  # type: ignore[arg-type, return-value]


def test_targets_mix_names_and_objects_and_reject_others():
    backend, _ = capture("vendor", {"relay.add": always})
    from byoc.backends import parse_targets

    assert [b.name for b in parse_targets([backend, "ccompiler"])] == ["vendor", "ccompiler"]
    with pytest.raises(byoc.ByocError, match="listed twice"):
        parse_targets([backend, backend])
    with pytest.raises(byoc.ByocError, match="got 3 \\(int\\)"):
        parse_targets([3])  # type: ignore[list-item]


def test_c_array_holds_every_float_exactly():
    data = np.array([0.1, -0.0, 1e-45, 3.4028235e38, np.inf, -np.inf], np.float32)
    text = c_array("w", data)
    assert text.startswith("static const float w[6] = {0.1f, -0.0f,")
    assert "INFINITY" in text and "-INFINITY" in text


def test_a_backend_changed_in_place_never_runs_its_old_code():
    """A notebook edits its backend and compiles again: the new model must call
    the new C, not the old library's symbol of the same name."""
    offset = {"value": 1.0}

    def codegen(kernels):
        parts = ["#include <stdint.h>"]
        for k in kernels:
            a, b = (v.name for v in k.ops[0].operands)
            parts.append(
                f"int32_t {k.symbol}(const float* {a}, const float* {b}, float* out0) {{\n"
                f"  for (int i = 0; i < 4; ++i) out0[i] = {a}[i] + {b}[i] + {offset['value']}f;\n"
                "  return 0;\n}"
            )
        source = "\n".join(parts) + "\n"
        return Artifact("evolving", [k.symbol for k in kernels], {"e.c": source}, [compile_shared(source)])

    evolving = Backend("evolving", {"relay.add": always}, kernel_codegen=codegen)
    text = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
    zeros = np.zeros(4, np.float32)
    first = byoc.compile(text, targets=[evolving])
    offset["value"] = 2.0
    second = byoc.compile(text, targets=[evolving])
    np.testing.assert_array_equal(first(zeros, zeros), np.full(4, 1, np.float32))
    np.testing.assert_array_equal(second(zeros, zeros), np.full(4, 2, np.float32))
