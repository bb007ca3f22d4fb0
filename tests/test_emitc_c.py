"""The C exit end to end: loop-level IR → convert-loops-to-emitc → C → gcc → cffi → numpy."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cffi import FFI
from xdsl.dialects import builtin
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from byoc.dialects import make_context
from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass
from byoc.targets.c import CTarget, c_float_literal, c_identifier, emit_c

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

GCC = ["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"]


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def to_c(text: str, symbol_prefix: str = "") -> str:
    module = parse(text)
    module.verify()
    ConvertLoopsToEmitCPass(symbol_prefix=symbol_prefix).apply(make_context(), module)
    module.verify()
    return emit_c(module)


class Library:
    """A compiled C source loaded with cffi; call its functions with numpy arrays."""

    def __init__(self, source: str, cdef: str, directory: Path):
        c_file, so_file = directory / "kernel.c", directory / "kernel.so"
        c_file.write_text(source)
        result = subprocess.run(
            [*GCC, "-o", str(so_file), str(c_file), "-lm"], capture_output=True, text=True
        )
        assert result.returncode == 0, f"gcc failed:\n{result.stderr}\n{source}"
        self.ffi = FFI()
        self.ffi.cdef(cdef)
        self.lib = self.ffi.dlopen(str(so_file))

    def __call__(self, symbol: str, *arrays: np.ndarray) -> int:
        for a in arrays:
            assert a.flags.c_contiguous
        function = getattr(self.lib, symbol)
        return function(*(self.ffi.cast("float*", self.ffi.from_buffer(a)) for a in arrays))


def build(text: str, cdef: str, tmp_path: Path, symbol_prefix: str = "") -> Library:
    return Library(to_c(text, symbol_prefix), cdef, tmp_path)


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def elementwise_broadcast(op: str) -> str:
    """out[i, j] = op(a[i, j], b[j]): the index pattern of a broadcast over rows."""
    return f"""
func.func @kernel(%a: memref<3x4xf32>, %b: memref<4xf32>, %out: memref<3x4xf32>) -> i32
    attributes {{extern.compiler = "ccompiler"}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c3 step %c1 {{
    scf.for %j = %c0 to %c4 step %c1 {{
      %x = memref.load %a[%i, %j] : memref<3x4xf32>
      %y = memref.load %b[%j] : memref<4xf32>
      {op}
      memref.store %r, %out[%i, %j] : memref<3x4xf32>
    }}
  }}
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}}
"""


KERNEL_CDEF = "int32_t kernel(float*, float*, float*);"


@pytest.mark.parametrize(
    ("body", "reference"),
    [
        ("%r = arith.addf %x, %y : f32", lambda a, b: a + b),
        ("%t = math.tanh %x : f32\n      %r = arith.mulf %t, %y : f32", lambda a, b: np.tanh(a) * b),
        ("%e = math.exp %x : f32\n      %r = arith.subf %e, %y : f32", lambda a, b: np.exp(a) - b),
        ("%r = arith.divf %x, %y : f32", lambda a, b: a / b),
        ("%r = arith.negf %x : f32", lambda a, b: -a),
    ],
    ids=["add", "tanh", "exp", "div", "neg"],
)
def test_elementwise_with_broadcast(body, reference, tmp_path):
    lib = build(elementwise_broadcast(body), KERNEL_CDEF, tmp_path)
    a, b, out = f32(3, 4), f32(4, seed=1), np.zeros((3, 4), np.float32)
    assert lib("kernel", a, b, out) == 0
    np.testing.assert_allclose(out, reference(a, b[None, :]), rtol=1e-6, atol=1e-6)


def test_add_example_from_the_brief(tmp_path):
    text = """
func.func @ccompiler_0(%arg0: memref<10x10xf32>, %arg1: memref<10x10xf32>, %arg2: memref<10x10xf32>) -> i32 attributes {extern.compiler = "ccompiler"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  scf.for %i = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c10 step %c1 {
      %a = memref.load %arg0[%i, %j] : memref<10x10xf32>
      %b = memref.load %arg1[%i, %j] : memref<10x10xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %arg2[%i, %j] : memref<10x10xf32>
    }
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    prefix = "byoc_1a2b3c4d_"
    source = to_c(text, prefix)
    assert (
        "int32_t byoc_1a2b3c4d_ccompiler_0(const float* restrict v0, "
        "const float* restrict v1, float* restrict v2)" in source
    )
    lib = Library(source, f"int32_t {prefix}ccompiler_0(float*, float*, float*);", tmp_path)
    a, b, out = f32(10, 10), f32(10, 10, seed=2), np.zeros((10, 10), np.float32)
    assert lib(f"{prefix}ccompiler_0", a, b, out) == 0
    np.testing.assert_array_equal(out, a + b)


def test_reduction_through_alloca(tmp_path):
    text = """
func.func @row_sum(%a: memref<5x7xf32>, %out: memref<5xf32>) -> i32 attributes {extern.compiler = "c"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloca() : memref<f32>
  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %zero, %acc[] : memref<f32>
    scf.for %j = %c0 to %c7 step %c1 {
      %x = memref.load %a[%i, %j] : memref<5x7xf32>
      %s = memref.load %acc[] : memref<f32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %acc[] : memref<f32>
    }
    %r = memref.load %acc[] : memref<f32>
    memref.store %r, %out[%i] : memref<5xf32>
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    lib = build(text, "int32_t row_sum(float*, float*);", tmp_path)
    a, out = f32(5, 7), np.zeros(5, np.float32)
    assert lib("row_sum", a, out) == 0
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5, atol=1e-6)


def test_if_and_select(tmp_path):
    # out = x > 0 ? x : (x < -1 ? -1 : 0.5 * x), with both scf.if and arith.select
    text = """
func.func @kernel(%a: memref<16xf32>, %out: memref<16xf32>) -> i32 attributes {extern.compiler = "c"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %m1 = arith.constant -1.0 : f32
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %pos = arith.cmpf ogt, %x, %zero : f32
    scf.if %pos {
      memref.store %x, %out[%i] : memref<16xf32>
    } else {
      %low = arith.cmpf olt, %x, %m1 : f32
      %hx = arith.mulf %half, %x : f32
      %r = arith.select %low, %m1, %hx : f32
      memref.store %r, %out[%i] : memref<16xf32>
    }
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    lib = build(text, "int32_t kernel(float*, float*);", tmp_path)
    a, out = f32(16) * 2, np.zeros(16, np.float32)
    assert lib("kernel", a, out) == 0
    expected = np.where(a > 0, a, np.where(a < -1, np.float32(-1), np.float32(0.5) * a))
    np.testing.assert_array_equal(out, expected)


def test_global_constant(tmp_path):
    weights = np.array([[1.5, -2.0, 0.1], [3.0e-8, 1.0e30, -0.0]], np.float32)
    dense = ", ".join(
        "[" + ", ".join(repr(float(v)) for v in row) + "]" for row in weights
    )
    text = f"""
"memref.global"() <{{sym_name = "weights", sym_visibility = "private", type = memref<2x3xf32>,
    initial_value = dense<[{dense}]> : tensor<2x3xf32>, constant}}> : () -> ()
func.func @scale(%a: memref<2x3xf32>, %out: memref<2x3xf32>) -> i32 attributes {{extern.compiler = "c"}} {{
  %w = memref.get_global @weights : memref<2x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c2 step %c1 {{
    scf.for %j = %c0 to %c3 step %c1 {{
      %x = memref.load %a[%i, %j] : memref<2x3xf32>
      %y = memref.load %w[%i, %j] : memref<2x3xf32>
      %r = arith.mulf %x, %y : f32
      memref.store %r, %out[%i, %j] : memref<2x3xf32>
    }}
  }}
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}}
"""
    source = to_c(text)
    assert "static const float weights[6] = {" in source
    lib = Library(source, "int32_t scale(float*, float*);", tmp_path)
    a, out = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    assert lib("scale", a, out) == 0
    np.testing.assert_array_equal(out.view(np.uint32), weights.view(np.uint32))


def test_alloc_intermediate_and_call_between_functions(tmp_path):
    text = """
func.func @exp_into(%a: memref<2x8xf32>, %out: memref<2x8xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<2x8xf32>
      %e = math.exp %x : f32
      memref.store %e, %out[%i, %j] : memref<2x8xf32>
    }
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
func.func @ccompiler_0(%a: memref<2x8xf32>, %out: memref<2x8xf32>) -> i32 attributes {extern.compiler = "ccompiler"} {
  %tmp = memref.alloc() : memref<2x8xf32>
  %status = func.call @exp_into(%a, %tmp) : (memref<2x8xf32>, memref<2x8xf32>) -> i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %tmp[%i, %j] : memref<2x8xf32>
      %r = arith.addf %x, %one : f32
      memref.store %r, %out[%i, %j] : memref<2x8xf32>
    }
  }
  memref.dealloc %tmp : memref<2x8xf32>
  func.return %status : i32
}
"""
    source = to_c(text, "m_")
    assert "static int32_t m_exp_into(" in source  # a helper: called, not outlined
    assert "malloc(" in source and "free(" in source
    assert "m_exp_into(" in source.split("int32_t m_ccompiler_0(")[1]
    lib = Library(source, "int32_t m_ccompiler_0(float*, float*);", tmp_path)
    a, out = f32(2, 8), np.zeros((2, 8), np.float32)
    assert lib("m_ccompiler_0", a, out) == 0
    np.testing.assert_allclose(out, np.exp(a) + 1, rtol=1e-6)


def test_callee_defined_after_caller_is_declared_first(tmp_path):
    text = """
func.func @outer(%a: memref<f32>, %out: memref<f32>) -> i32 attributes {extern.compiler = "c"} {
  %s = func.call @inner(%a, %out) : (memref<f32>, memref<f32>) -> i32
  func.return %s : i32
}
func.func @inner(%a: memref<f32>, %out: memref<f32>) -> i32 {
  %x = memref.load %a[] : memref<f32>
  %y = arith.addf %x, %x : f32
  memref.store %y, %out[] : memref<f32>
  %ok = arith.constant 7 : i32
  func.return %ok : i32
}
"""
    lib = build(text, "int32_t outer(float*, float*);", tmp_path)
    a, out = np.array(1.25, np.float32), np.zeros((), np.float32)
    assert lib("outer", a, out) == 7
    assert out == 2.5


def test_rank0_memrefs(tmp_path):
    text = """
func.func @kernel(%a: memref<f32>, %b: memref<f32>, %out: memref<f32>) -> i32 attributes {extern.compiler = "c"} {
  %x = memref.load %a[] : memref<f32>
  %y = memref.load %b[] : memref<f32>
  %p = math.powf %x, %y : f32
  %s = math.sqrt %p : f32
  %r = math.rsqrt %s : f32
  memref.store %r, %out[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    lib = build(text, KERNEL_CDEF, tmp_path)
    a, b, out = np.array(3.0, np.float32), np.array(4.0, np.float32), np.zeros((), np.float32)
    assert lib("kernel", a, b, out) == 0
    np.testing.assert_allclose(out, 1 / np.sqrt(np.sqrt(np.float32(81.0))), rtol=1e-6)


@pytest.mark.parametrize(
    ("op", "reference"),
    [("maximumf", np.maximum), ("minimumf", np.minimum)],
)
def test_min_max_propagate_nan(op, reference, tmp_path):
    text = f"""
func.func @kernel(%a: memref<8xf32>, %b: memref<8xf32>, %out: memref<8xf32>) -> i32 attributes {{extern.compiler = "c"}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {{
    %x = memref.load %a[%i] : memref<8xf32>
    %y = memref.load %b[%i] : memref<8xf32>
    %r = arith.{op} %x, %y : f32
    memref.store %r, %out[%i] : memref<8xf32>
  }}
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}}
"""
    nan, inf = np.float32("nan"), np.float32("inf")
    a = np.array([nan, 1, nan, -inf, 2, -0.0, 0.0, 5], np.float32)
    b = np.array([1, nan, nan, 3, -7, 0.0, -0.0, 5], np.float32)
    out = np.zeros(8, np.float32)
    lib = build(text, KERNEL_CDEF, tmp_path)
    assert lib("kernel", a, b, out) == 0
    expected = reference(a, b)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(out[3:5], expected[3:5])
    # LLVM's maximum/minimum order -0 below +0 (numpy leaves that unspecified)
    zero_sign = np.signbit(out[5:7])
    assert list(zero_sign) == ([False, False] if op == "maximumf" else [True, True])


CMPF_PREDICATES = {
    "false": lambda a, b: np.zeros_like(a, bool),
    "oeq": lambda a, b: a == b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "one": lambda a, b: (a < b) | (a > b),
    "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    "ueq": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    "ugt": lambda a, b: ~(a <= b),
    "uge": lambda a, b: ~(a < b),
    "ult": lambda a, b: ~(a >= b),
    "ule": lambda a, b: ~(a > b),
    "une": lambda a, b: a != b,
    "uno": lambda a, b: np.isnan(a) | np.isnan(b),
    "true": lambda a, b: np.ones_like(a, bool),
}


@pytest.mark.parametrize("predicate", list(CMPF_PREDICATES))
def test_cmpf_predicates_with_nan(predicate, tmp_path):
    text = f"""
func.func @kernel(%a: memref<6xf32>, %b: memref<6xf32>, %out: memref<6xf32>) -> i32 attributes {{extern.compiler = "c"}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c6 step %c1 {{
    %x = memref.load %a[%i] : memref<6xf32>
    %y = memref.load %b[%i] : memref<6xf32>
    %c = arith.cmpf {predicate}, %x, %y : f32
    %r = arith.select %c, %one, %zero : f32
    memref.store %r, %out[%i] : memref<6xf32>
  }}
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}}
"""
    nan = np.float32("nan")
    a = np.array([1, 2, 3, nan, 1, nan], np.float32)
    b = np.array([2, 2, 1, 1, nan, nan], np.float32)
    out = np.full(6, -1, np.float32)
    lib = build(text, KERNEL_CDEF, tmp_path)
    assert lib("kernel", a, b, out) == 0
    with np.errstate(invalid="ignore"):
        expected = CMPF_PREDICATES[predicate](a, b)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_integer_and_index_arithmetic(tmp_path):
    # out[i] = float(((i * 7 - 20) / 3) % 4) + float(uint(i - 9) / 4 > 3) + cmpi
    text = """
func.func @kernel(%out: memref<12xf32>, %out2: memref<12xf32>) -> i32 attributes {extern.compiler = "c"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c7 = arith.constant 7 : index
  %c20 = arith.constant 20 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : i32
  %k4 = arith.constant 4 : i32
  %k3 = arith.constant 3 : i32
  scf.for %i = %c0 to %c12 step %c1 {
    %m = arith.muli %i, %c7 : index
    %s = arith.subi %m, %c20 : index
    %d = arith.divsi %s, %c3 : index
    %r = arith.remsi %d, %c4 : index
    %ri = arith.index_cast %r : index to i32
    %f = arith.sitofp %ri : i32 to f32
    memref.store %f, %out[%i] : memref<12xf32>
    %ii = arith.index_cast %i : index to i32
    %u = arith.subi %ii, %c9 : i32
    %q = arith.divui %u, %k4 : i32
    %big = arith.cmpi ugt, %q, %k3 : i32
    %neg = arith.cmpi slt, %u, %k3 : i32
    %both = arith.xori %big, %neg : i1
    %g = arith.select %both, %f, %f : f32
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %both, %one, %zero : f32
    %w = arith.addf %v, %g : f32
    %t = arith.fptosi %w : f32 to i32
    %tf = arith.sitofp %t : i32 to f32
    memref.store %tf, %out2[%i] : memref<12xf32>
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    lib = build(text, "int32_t kernel(float*, float*);", tmp_path)
    out, out2 = np.zeros(12, np.float32), np.zeros(12, np.float32)
    assert lib("kernel", out, out2) == 0
    i = np.arange(12, dtype=np.int64)
    s = i * 7 - 20
    d = np.trunc(s / 3).astype(np.int64)  # C and arith.divsi truncate toward zero
    r = np.fmod(d, 4)
    np.testing.assert_array_equal(out, r.astype(np.float32))
    u = (i.astype(np.int32) - 9).astype(np.uint32)
    big = (u // 4) > 3
    neg = (i.astype(np.int32) - 9) < 3
    expected2 = np.trunc((big ^ neg).astype(np.float32) + r.astype(np.float32))
    np.testing.assert_array_equal(out2, expected2)


def test_float_constants_print_exactly(tmp_path):
    values = np.array(
        [0.1, 1.0e-45, 3.4028234663852886e38, -2.5, 16777216.0, 1 / 3, -0.0, np.inf, -np.inf, np.nan],
        np.float32,
    )
    n = len(values)
    stores = "\n".join(
        f"  %v{k} = arith.constant 0x{int(bits):08X} : f32\n"
        f"  %i{k} = arith.constant {k} : index\n"
        f"  memref.store %v{k}, %out[%i{k}] : memref<{n}xf32>"
        for k, bits in enumerate(values.view(np.uint32))
    )
    text = f"""
func.func @kernel(%out: memref<{n}xf32>) -> i32 attributes {{extern.compiler = "c"}} {{
{stores}
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}}
"""
    source = to_c(text)
    assert "INFINITY" in source and "NAN" in source and "#include <math.h>" in source
    lib = Library(source, "int32_t kernel(float*);", tmp_path)
    out = np.zeros(n, np.float32)
    assert lib("kernel", out) == 0
    np.testing.assert_array_equal(out[:-1].view(np.uint32), values[:-1].view(np.uint32))
    assert np.isnan(out[-1])


@pytest.mark.parametrize(
    "value", [0.1, 1e-45, 1.17549435e-38, 3.4028235e38, 16777217.0, 0.3, 123456.789, -0.0, 2.0**-149]
)
def test_float_literal_reads_back(value, tmp_path):
    x = float(np.float32(value))
    text = c_float_literal(x, builtin.f32)
    assert text.endswith("f")
    source = f"#include <string.h>\n#include <stdint.h>\nuint32_t bits(void) {{ float f = {text}; uint32_t u; memcpy(&u, &f, 4); return u; }}\n"
    lib = Library(source, "uint32_t bits(void);", tmp_path)
    assert lib.lib.bits() == int(np.float32(x).view(np.uint32))


def test_hostile_symbol_names_stay_identifiers(tmp_path):
    text = r"""
func.func @"x; system(\"rm\"); //"(%a: memref<2xf32>, %out: memref<2xf32>) -> i32 attributes {extern.compiler = "c"} {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<2xf32>
  memref.store %x, %out[%c0] : memref<2xf32>
  %s = func.call @"int"(%a, %out) : (memref<2xf32>, memref<2xf32>) -> i32
  func.return %s : i32
}
func.func @"int"(%a: memref<2xf32>, %out: memref<2xf32>) -> i32 {
  %c1 = arith.constant 1 : index
  %x = memref.load %a[%c1] : memref<2xf32>
  memref.store %x, %out[%c1] : memref<2xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    source = to_c(text)
    hostile = c_identifier('x; system("rm"); //')
    assert hostile == "x_3B_20system_28_22rm_22_29_3B_20_2F_2F"
    assert c_identifier("int") == "sym_int"
    assert "system(" not in source and "//" not in source
    lib = Library(source, f"int32_t {hostile}(float*, float*);", tmp_path)
    a, out = np.array([3, 4], np.float32), np.zeros(2, np.float32)
    assert lib(hostile, a, out) == 0
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize(
    ("name", "identifier"),
    [
        ("ccompiler_0", "ccompiler_0"),
        ("byoc_1a2b3c4d_ccompiler_0", "byoc_1a2b3c4d_ccompiler_0"),
        ("0abc", "sym_0abc"),
        ("while", "sym_while"),
        ("main", "sym_main"),
        ("tanhf", "sym_tanhf"),
        ("__constant_2xf32", "sym___constant_2xf32"),
        ("NULL", "sym_NULL"),
        ("v12", "sym_v12"),
        ("size_t", "sym_size_t"),
        ("a.b", "a_2Eb"),
        ("é", "sym__C3_A9"),
        ("", "sym_"),
    ],
)
def test_c_identifier(name, identifier):
    assert c_identifier(name) == identifier


def test_unused_parameters_and_dead_code_compile(tmp_path):
    text = """
func.func @kernel(%a: memref<4xf32>, %unused: memref<4xf32>, %n: index, %out: memref<4xf32>) -> i32 attributes {extern.compiler = "c"} {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  %dead = math.exp %x : f32
  %scratch = memref.alloca() : memref<4xf32>
  memref.store %x, %scratch[%c0] : memref<4xf32>
  memref.store %x, %out[%c0] : memref<4xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    source = to_c(text)
    assert "(void)v1;" in source and "(void)v2;" in source
    assert "expf" not in source
    Library(source, "int32_t kernel(float*, float*, int64_t, float*);", tmp_path)


def test_unsupported_op_is_named():
    text = """
func.func @kernel(%a: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    scf.yield %acc : f32
  }
  memref.store %r, %a[%c0] : memref<4xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    with pytest.raises(DiagnosticException, match="cannot lower 'scf.for' in @kernel: loops carry"):
        to_c(text)


def test_op_outside_the_contract_is_named():
    text = """
func.func @kernel(%a: memref<4xf32>, %b: memref<4xf32>) -> i32 {
  "memref.copy"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    with pytest.raises(DiagnosticException, match="memref.copy.*@kernel"):
        to_c(text)


def test_verbatim_cannot_start_a_new_line():
    text = 'emitc.verbatim "int x;\\n#include <stdio.h>"'
    module = parse(text)
    with pytest.raises(VerifyException, match="line break"):
        module.verify()


def test_symbol_collision_is_an_error():
    text = """
func.func @"a.b"() -> i32 {
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
func.func @a_2Eb() -> i32 {
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
"""
    with pytest.raises(DiagnosticException, match="both be named 'a_2Eb'"):
        to_c(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('%0 = emitc.literal "1; system(x)" : i32', "not a plain C expression"),
        ('emitc.include <"a\\"b.h">', "invalid header name"),
        ('emitc.verbatim "// ok \\\\"', "line continuation"),
        (
            'emitc.func @f() attributes {specifiers = ["static\\n#define x"]} {\n  emitc.return\n}',
            "unknown specifier",
        ),
        (
            'emitc.func @f(%p: !emitc.ptr<f32>, %i: i64) {\n'
            "  %0 = emitc.subscript %p[%i, %i] : (!emitc.ptr<f32>, i64, i64) -> !emitc.lvalue<f32>\n"
            "  emitc.return\n}",
            "exactly one index",
        ),
        ('emitc.func @f(%x: i32 {emitc.restrict}) {\n  emitc.return\n}', "only applies to pointer"),
    ],
    ids=["literal", "include", "verbatim", "specifier", "subscript", "restrict"],
)
def test_verifier_rejects(text, message):
    module = parse(text)
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_printer_rejects_multiline_opaque_type():
    text = """
emitc.func @f(%x: !emitc.opaque<"int x;\\n#include <stdio.h>\\nint">) {
  emitc.return
}
"""
    module = parse(text)
    with pytest.raises(DiagnosticException, match="not a plain C type name"):
        emit_c(module)


def test_c_target_prints_like_emit_c():
    module = parse(
        'emitc.func @f(%x: f32) -> f32 {\n  %y = emitc.mul %x, %x : (f32, f32) -> f32\n'
        "  emitc.return %y : f32\n}"
    )
    stream = io.StringIO()
    CTarget().emit(make_context(), module, stream)
    assert stream.getvalue() == emit_c(module)
    assert "float f(float v0) {\n  return v0 * v0;\n}" in stream.getvalue()
