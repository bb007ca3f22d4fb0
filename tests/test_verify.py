"""The module-level verifier (dialects/verify.py): each case of issue 13 that a
tool used to accept, miscompile or crash on is one located ByocError, from the
Python API and (exit status 1) from the command lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.traits import SymbolTable

import byoc
from byoc.dialects import relay
from byoc.dialects.verify import check_shape, verify_structure
from byoc.frontend.parse import parse_text, verify_module

BIN = Path(sys.executable).parent

CYCLE = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %1, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.add %0, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""

SELF_REFERENCE = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %0, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def call_with(result: str, operands: str = "%a", operand_types: str = "tensor<4xf32>") -> str:
    return f"""\
func.func @main(%a: tensor<4xf32>) -> {result} {{
  %0 = extern.call @ccompiler_0({operands}) : ({operand_types}) -> {result}
  func.return %0 : {result}
}}
func.func private @ccompiler_0(%0: tensor<4xf32>) -> tensor<4xf32> attributes {{extern.compiler = "ccompiler"}} {{
  %1 = relay.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}}
"""


MAIN_CALLS_ITSELF = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = extern.call @main(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

NO_RESULTS = """\
func.func @main(%a: tensor<4xf32>) {
  func.return
}
"""

HUGE_SHAPE = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 2, 2305843009213693952>} : (tensor<4xf32>) -> tensor<2x2305843009213693952xf32>
  func.return %a : tensor<4xf32>
}
"""

BAD_MODELS = {
    "cycle": (CYCLE, ":2:3: error: 'relay.add': operand 0 (the result of 'relay.add' at"),
    "self reference": (SELF_REFERENCE, ":2:3: error: 'relay.add': operand 0 is the op's own result"),
    "larger result": (call_with("tensor<8xf32>"), ":2:3: error: 'extern.call': result types (tensor<8xf32>) do not match"),
    "smaller result": (call_with("tensor<2xf32>"), ":2:3: error: 'extern.call': result types (tensor<2xf32>) do not match"),
    "operand count": (
        call_with("tensor<4xf32>", "%a, %a", "tensor<4xf32>, tensor<4xf32>"),
        ":2:3: error: 'extern.call': operand types (tensor<4xf32>, tensor<4xf32>) do not match",
    ),
    "missing callee": (
        MAIN_CALLS_ITSELF.replace("@main(%a)", "@nothere(%a)"),
        ":2:3: error: 'extern.call': callee @nothere is not defined",
    ),
    "main calls itself": (MAIN_CALLS_ITSELF, ":2:3: error: 'extern.call': callee @main is not an outlined function"),
    "no results": (NO_RESULTS, ":1:1: error: 'func.func': @main returns nothing"),
    "huge shape": (HUGE_SHAPE, ":2:3: error: 'relay.reshape': result 0: tensor<2x2305843009213693952xf32> would need"),
}


@pytest.mark.parametrize("case", sorted(BAD_MODELS))
def test_bad_module_is_a_located_error(case):
    text, message = BAD_MODELS[case]
    with pytest.raises(byoc.ByocError) as err:
        byoc.compile(text, targets=["ccompiler"], cache=False)
    assert f"<string>{message}" in str(err.value)


@pytest.mark.parametrize("tool", ["byoc-opt", "byoc-run", "byoc-translate"])
@pytest.mark.parametrize("case", ["cycle", "smaller result", "main calls itself", "no results"])
def test_bad_module_fails_cleanly_from_the_command_line(tool, case, tmp_path):
    text, message = BAD_MODELS[case]
    path = tmp_path / "model.mlir"
    path.write_text(text)
    extra = ["--emit-c"] if tool == "byoc-translate" else []
    proc = subprocess.run(
        [str(BIN / tool), str(path), *extra], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{path}{message}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_use_before_definition_built_through_the_python_api():
    typ = TensorType(f32, (4,))
    block = Block(arg_types=[typ])
    first = relay.TanhOp(block.args[0])
    second = relay.AddOp(first.results[0], block.args[0])
    block.add_ops([second, first])  # `second` uses `first`'s result before it exists
    block.add_op(func.ReturnOp(second.results[0]))
    module = ModuleOp([func.FuncOp("main", FunctionType.from_lists([typ], [typ]), Region(block))])
    with pytest.raises(byoc.ByocError, match="'relay.add': operand 0 .* is used before its definition"):
        byoc.compile(module, targets=[], cache=False)


def test_a_partitioned_module_verifies_and_runs():
    """The checks accept what the partitioner makes (calls of matching type)."""
    model = byoc.compile(call_with("tensor<4xf32>"), targets=["ccompiler"], cache=False)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(model(x), x + x)


def test_calls_are_resolved_with_one_table(monkeypatch):
    """xDSL's lookup scans the module: thousands of calls must not use it."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    from partition_scaling import chain

    from byoc.backends import get_backend
    from byoc.passes.annotate import annotate
    from byoc.passes.partition import partition

    module = chain(2000)
    annotate(module, [get_backend("ccompiler")])
    partition(module)

    def linear_lookup(*args, **kwargs):
        raise AssertionError("SymbolTable.lookup_symbol is linear per call")

    monkeypatch.setattr(SymbolTable, "lookup_symbol", linear_lookup)
    verify_structure(module)
    verify_module(module)


def test_buffer_ceiling_is_configurable(monkeypatch):
    text = """\
func.func @main(%a: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = relay.tanh %a : (tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return %0 : tensor<16x64xf32>
}
"""
    parse_text(text)
    monkeypatch.setenv("BYOC_MAX_BUFFER_BYTES", "1024")
    with pytest.raises(byoc.ByocError, match=r"<input>:1:1: error: 'func.func': block argument 0: "
                       r"tensor<16x64xf32> would need at least 4096 bytes \(dimension 1, of size 64"):
        parse_text(text, "<input>")
    monkeypatch.setenv("BYOC_MAX_BUFFER_BYTES", "lots")
    with pytest.raises(byoc.ByocError, match="BYOC_MAX_BUFFER_BYTES='lots' is not a positive number"):
        parse_text(text)


def test_check_shape_limits():
    limit = 2**47
    assert check_shape(TensorType(f32, (2**20, 2**20)), limit) is None
    assert "index type" in check_shape(TensorType(f32, (2**62, 2, 2)), 2**80)
    assert "dimension 1" in check_shape(TensorType(f32, (2**22, 2**24)), limit)
    assert check_shape(TensorType(f32, (0, 2**70)), limit) is None  # empty


def test_op_annotated_for_a_backend_not_requested_is_annotated_again():
    text = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %a {extern.target = "cblas"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 {extern.target = "nosuchbackend"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    for targets in ([], ["ccompiler"]):
        model = byoc.compile(text, targets=targets, cache=False)
        np.testing.assert_allclose(model(x), np.tanh(x + x), rtol=1e-6)
        assert "cblas" not in model.partitioned_ir
        assert "nosuchbackend" not in model.partitioned_ir


def test_function_outlined_for_a_backend_not_requested_is_rejected():
    text = call_with("tensor<4xf32>").replace('"ccompiler"', '"cblas"')
    with pytest.raises(byoc.ByocError, match=r"<string>:5:1: error: @ccompiler_0 is outlined "
                       r"for backend 'cblas', which is not among the targets \(ccompiler\)"):
        byoc.compile(text, targets=["ccompiler"], cache=False)
