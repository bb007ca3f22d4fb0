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
    # A splat constant of 2^63-1 elements: xDSL materialised it (MemoryError).
    "huge splat": (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %b = relay.constant dense<0.0> : tensor<9223372036854775807xf32>\n"
        "  func.return %x : tensor<4xf32>\n}\n",
        r"model\.mlir:2:28: error: a splat of 9223372036854775807 elements is \d+ bytes, "
        r"more than the ceiling on one buffer",
    ),
    # bf16: "element type bf16 is not supported", naming no place.
    "bf16 tensor": (
        "func.func @main(%x: tensor<4xbf16>) -> tensor<4xbf16> {\n  func.return %x : tensor<4xbf16>\n}\n",
        r"model\.mlir:1:1: error: 'func\.func': block argument 0: tensor<4xbf16>: element type bf16 "
        r"is not supported \(f16, f32, f64 are\)",
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


# --- Findings of the 10-minute .mlir run of seed 501 ----------------------------------

SPLAT_2_31 = (
    "func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {\n"
    "  %b = relay.constant dense<0> : tensor<2147483648xi32>\n"
    "  func.return %x : tensor<4xi32>\n}\n"
)


def test_huge_splat_stays_one_element():
    """A splat of 2^31 elements hung: xDSL repeated a Python list of one value
    2^31 times. A relay.constant keeps the one element (and broadcasts it)."""
    from byoc.dialects import relay
    from byoc.frontend.parse import parse_text

    module = parse_text(SPLAT_2_31)
    (constant,) = [op for op in module.walk() if isinstance(op, relay.ConstantOp)]
    assert len(constant.value) == 1
    assert constant.to_numpy().shape == (2147483648,)
    assert "dense<0> : tensor<2147483648xi32>" in str(module)


def test_splat_beyond_the_buffer_ceiling_is_a_located_error(tmp_path, monkeypatch):
    import byoc

    monkeypatch.setenv("BYOC_MAX_BUFFER_BYTES", "1000000")
    path = tmp_path / "model.mlir"
    path.write_text(SPLAT_2_31)
    message = (
        r"model\.mlir:2:28: error: a splat of 2147483648 elements is 8589934592 bytes, "
        r"more than the ceiling on one buffer \(1000000 bytes; \$BYOC_MAX_BUFFER_BYTES sets it\)"
    )
    with pytest.raises(byoc.ByocError, match=message):
        byoc.compile(path, targets=[], cache=False)
    # The same from a CLI: one message, exit status 1.
    import subprocess
    import sys

    proc = subprocess.run(
        [str(Path(sys.executable).parent / "byoc-opt"), str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "a splat of 2147483648 elements is 8589934592 bytes" in proc.stderr


def test_splats_outside_relay_constant_have_every_element():
    """Other ops read a dense value's bytes as they are: their splats are
    repeated (in C, not element by element), in both spellings."""
    from xdsl.dialects import memref

    from byoc.frontend.parse import SourceParser, make_context

    text = (
        '"memref.global"() <{sym_name = "a", type = memref<3xf32>, initial_value = dense<1.5> : tensor<3xf32>, '
        'sym_visibility = "private", constant}> : () -> ()\n'
        '"memref.global"() <{sym_name = "b", type = memref<2xi32>, initial_value = dense<"0x07000000"> : tensor<2xi32>, '
        'sym_visibility = "private", constant}> : () -> ()\n'
    )
    module = SourceParser(make_context(), text, "globals.mlir").parse_module()
    values = {op.sym_name.data: op.initial_value for op in module.walk() if isinstance(op, memref.GlobalOp)}
    assert list(values["a"].get_values()) == [1.5, 1.5, 1.5]
    assert list(values["b"].get_values()) == [7, 7]


LARGE_SPLAT = (
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %b = relay.constant dense<7.0> : tensor<300000xf32>\n"
    "  %c = relay.strided_slice %b {begin = array<i64: 0>, end = array<i64: 4>} : (tensor<300000xf32>) -> tensor<4xf32>\n"
    "  %d = relay.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
    "  func.return %d : tensor<4xf32>\n}\n"
)


def test_large_splat_is_filled_at_run_time():
    """A used splat of more than a megabyte is no global of its bytes (a
    splat of 2^31 elements expanded to 8 GiB at compile time): the code
    fills a buffer with it."""
    from xdsl.dialects import memref

    from byoc.frontend.parse import parse_text
    from byoc.passes.convert_relay_to_loops import convert_relay_to_loops

    module = parse_text(LARGE_SPLAT)
    convert_relay_to_loops(module)
    assert not [op for op in module.walk() if isinstance(op, memref.GlobalOp)]
    assert [op for op in module.walk() if isinstance(op, memref.AllocOp)]


@pytest.mark.parametrize("targets", [[], ["ccompiler"]])
def test_large_splat_computes(tmp_path, targets):
    import numpy as np

    import byoc

    path = tmp_path / "model.mlir"
    path.write_text(LARGE_SPLAT)
    model = byoc.compile(path, targets=targets, cache=False)
    assert model(np.arange(4, dtype=np.float32)).tolist() == [7.0, 8.0, 9.0, 10.0]


TAKE_FAST = (
    "func.func @main(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {\n"
    '  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : '
    "(tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>\n"
    "  func.return %0 : tensor<2x3x4xf32>\n}\n"
)


@pytest.mark.parametrize("targets", [[], ["ccompiler"]])
def test_take_fast_out_of_range_names_the_op(tmp_path, targets):
    """An index out of range for mode "fast" was "the compiled model failed
    (status 1)": the failure names the op, its place and the index."""
    import numpy as np

    import byoc

    path = tmp_path / "model.mlir"
    path.write_text(TAKE_FAST)
    model = byoc.compile(path, targets=targets, cache=False)
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    ids = np.array([[0, 1, 2], [3, 40, -10]])
    message = (
        r"model\.mlir:2:3: error: 'relay\.take': index 40 is out of range for axis 0 of size 10 "
        r"\(the compiled model failed: "
    )
    with pytest.raises(byoc.ByocError, match=message):
        model(table, ids)
    ids[1, 1] = -1  # [-n, n) is in range
    assert model(table, ids).tolist() == table[ids].tolist()


@pytest.mark.parametrize("op", ["tanh", "erf", "nn.gelu"])
def test_f16_libm_ops_run_on_the_host(tmp_path, op):
    """f16 tanh reached convert-loops-to-llvm, which named no place: libm
    has no half-precision tanh/erf, so the host computes them in f32."""
    import numpy as np

    import byoc
    from byoc.frontend.parse import parse_file
    from byoc.runtime.reference import run_reference

    path = tmp_path / "model.mlir"
    path.write_text(
        "func.func @main(%x: tensor<8xf16>) -> tensor<8xf16> {\n"
        f"  %0 = relay.{op} %x : (tensor<8xf16>) -> tensor<8xf16>\n"
        "  func.return %0 : tensor<8xf16>\n}\n"
    )
    x = np.linspace(-3, 3, 8).astype(np.float16)
    got = byoc.compile(path, targets=[], cache=False)(x)
    (expected,) = run_reference(parse_file(path), [x])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_bf16_is_a_located_error(tmp_path):
    """bf16 was "element type bf16 is not supported" with no place; here in
    an intermediate value of a function that is not @main."""
    import byoc

    path = tmp_path / "model.mlir"
    path.write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}\n"
        "func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = relay.reshape %x {newshape = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xbf16>\n"
        "  func.return %x : tensor<4xf32>\n}\n"
    )
    with pytest.raises(byoc.ByocError, match=r"model\.mlir:\d+:\d+: error: .*element type bf16 is not supported"):
        byoc.compile(path, targets=[], cache=False)


# --- Findings of the 10-minute ONNX run of seed 602 -----------------------------------


def test_onnx_element_type_onnx_does_not_define(tmp_path):
    """An input of elem_type 99 that is also an output (so ONNX's shape
    inference passes it): describing it raised protobuf's ValueError."""
    import onnx
    from onnx import TensorProto, helper

    import byoc

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "z"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.graph.input[1].type.tensor_type.elem_type = 99
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    with pytest.raises(byoc.ByocError, match=r"model\.onnx: input 'z' is data type 99 \(not an ONNX type\)"):
        byoc.compile(path, targets=[], cache=False)


def test_fuzz_worker_lets_onnxruntime_decide_a_float32_overflow(tmp_path):
    """BatchNormalization with a mean of FLT_MAX, then GlobalAveragePool: the
    pool's float32 sum overflows (inf, as onnxruntime gives) where byoc's
    reference sums in float64 (1.56e38). The harness counted a wrong answer."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from fuzz.worker import run_case

    weights = {
        "g": np.array([-0.6, -1.6], np.float32),
        "b": np.array([0.7, 0.8], np.float32),
        "mu": np.array([np.finfo(np.float32).max, 0.2], np.float32),
        "var": np.array([1.8, 0.97], np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("BatchNormalization", ["x", "g", "b", "mu", "var"], ["n"]),
            helper.make_node("GlobalAveragePool", ["n"], ["p"]),
            helper.make_node("Flatten", ["p"], ["y"]),
        ],
        "norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(array, name) for name, array in weights.items()],
    )
    path = tmp_path / "norm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    outcome, detail = run_case("onnx", str(path), ["ccompiler"])
    assert outcome == "success", detail
