"""A short, deterministic slice of the fuzzing harness (tests/fuzz/).

Each kind of input, mutated by a fixed seed, must end in clean errors and
successes only: no traceback, crash, hang, unlocated error or wrong answer.
`python -m tests.fuzz --minutes 10` runs the long version by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.runner import fuzz

CASES = 16


@pytest.mark.parametrize("kind", ["mlir", "onnx", "saved"])
def test_fuzz_slice(kind, tmp_path):
    tally = fuzz(kind, tmp_path / kind, cases=CASES, seed=13, findings=tmp_path / "findings", case_seconds=300)
    assert sum(tally.counts.values()) == CASES
    assert tally.bad == 0, "\n".join(tally.findings)


FOUND = {
    # @main taking a memref: the message did not say where (python -m tests.fuzz).
    "memref input": (
        "func.func @main(%a: memref<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  func.return %b : tensor<4xf32>\n}\n",
        r"model\.mlir:1:1: error: input 0 of @main has type memref<4xf32>; expected a static-shape tensor",
    ),
    "no main": (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n",
        r"model\.mlir: error: the module has no function @main",
    ),
    # A bad first token: the parser lexes it as it is made, outside the
    # try that turns ParseErrors into ByocErrors (a traceback).
    "bad first character": (
        "\U001077bdfunc.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n",
        r"model\.mlir:1:1: error: Unexpected character",
    ),
    "unterminated string first": ('"main', r"model\.mlir:1:1: error: End of file reached before closing string"),
    # A line of @main repeated after its end: a relay op at module level
    # reached the LLVM lowering ("module: error: ... cannot lower").
    "relay op at module level": (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n"
        "  %c = relay.constant dense<0.5> : tensor<f32>\n",
        r"model\.mlir:4:3: error: 'relay.constant': is at module level; a model's ops belong in a function",
    ),
    # An empty @main body: failed in convert-relay-to-loops, naming no place.
    "empty main": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n}\n",
        r"model\.mlir:1:1: error: 'func.func': @main does not end in func.return",
    ),
    # A splat constant of 2^63-1 elements: xDSL materialises it (MemoryError).
    "huge splat": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %b = relay.constant dense<0.0> : tensor<9223372036854775807xf32>\n"
        "  func.return %x : tensor<4xf32>\n}\n",
        r"model\.mlir:\d+:\d+: error: out of memory parsing this value",
    ),
    # An f128 attribute: xDSL parses it but cannot print or pack it (traceback).
    "f128 attribute": (
        "func.func @main(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {\n"
        '  %0 = relay.take %t, %ids {axis = 0 : f128, mode = "fast"} : '
        "(tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>\n"
        "  func.return %0 : tensor<2x3x4xf32>\n}\n",
        r"model\.mlir:2:36: error: float attributes of type f128 are not supported",
    ),
    # A loop-level value used above its definition: xDSL's verifier raised ValueError.
    "use before definition": (
        "func.func @main(%a: memref<4xf32>) {\n"
        "  %x = memref.load %a[%i] : memref<4xf32>\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %c4 = arith.constant 4 : index\n"
        "  %c1 = arith.constant 1 : index\n"
        "  scf.for %i = %c0 to %c4 step %c1 {\n"
        "    memref.store %x, %a[%i] : memref<4xf32>\n"
        "  }\n"
        "  func.return\n}\n",
        r"model\.mlir:\d+:\d+: error: .*(used before its definition|not defined|undefined|dominate)",
    ),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_what_the_fuzzer_found(case, tmp_path):
    import byoc

    text, message = FOUND[case]
    path = tmp_path / "model.mlir"
    path.write_text(text)
    with pytest.raises(byoc.ByocError, match=message):
        byoc.compile(path, targets=[], cache=False)


def _onnx_file(tmp_path, patch):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(np.ones((2, 5), np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="fuzz-test")
    data = model.SerializeToString().replace(*patch)
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("targets", [[], ["onnxruntime"]])
def test_onnx_found_by_the_fuzzer(tmp_path, targets):
    """An op type or producer name that is not UTF-8 (proto2 gives bytes: a
    TypeError in the checks, a UnicodeDecodeError copying the model), and an
    initializer whose data disagrees with its dims (onnx's ValueError when
    read lazily)."""
    import onnx

    import byoc

    not_text = _onnx_file(tmp_path, (b"Relu", b"R\xf7lu"))
    with pytest.raises(byoc.ByocError, match=r"model\.onnx: model\.graph\.node\[1\]\.op_type is not UTF-8 text"):
        byoc.compile(not_text, targets=targets, cache=False)
    # Copying the model (to leave out large weights) decoded the field: UnicodeDecodeError.
    not_text = _onnx_file(tmp_path, (b"fuzz-test", b"f\xbbzz-test"))
    with pytest.raises(byoc.ByocError, match=r"model\.onnx: model\.producer_name is not UTF-8 text"):
        byoc.compile(not_text, targets=targets, cache=False)
    with pytest.raises(byoc.ByocError, match=r"<onnx model>: model\.producer_name is not UTF-8 text"):
        byoc.compile(onnx.load(not_text), targets=targets, cache=False)
    model = onnx.load(Path(__file__).parent.parent / "examples" / "cnn.onnx")
    for tensor in model.graph.initializer:
        if tensor.name == "fc_w":
            tensor.raw_data = tensor.raw_data[: len(tensor.raw_data) // 2]
    onnx.save(model, tmp_path / "short.onnx")
    with pytest.raises(byoc.ByocError, match=r"short\.onnx: cannot read tensor 'fc_w': cannot reshape"):
        byoc.compile(tmp_path / "short.onnx", targets=targets, cache=False)
