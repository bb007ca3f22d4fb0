"""Integer tensors at run time: i1/i8/ui8/i16/i32/i64 relay values through the
verifiers, the reference, both exits, the calling convention (dtype checks,
saved models, AOT headers) and partitioning; `relay.take` with run-time
indices; ONNX embedding lookups with int64 and int32 token ids."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f32, i32, i64

import byoc
from byoc.backends import parse_targets
from byoc.dialects import relay
from byoc.dialects.extern import TARGET_ATTR
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import parse_text
from byoc.passes.annotate import annotate
from byoc.runtime.aot import export_library, header
from byoc.runtime.toolchain import compiler

MOVES = """
func.func @main(%a: tensor<2x3xi64>, %b: tensor<3x2xi1>, %c: tensor<2x2xui8>, %d: tensor<4xi32>, %e: tensor<2x2xi8>, %f: tensor<3xi16>)
    -> (tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<1x4xi32>, tensor<2x2xi8>, tensor<3x1xi16>) {
  %0 = relay.transpose %a : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %1 = relay.reshape %b {newshape = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
  %2 = relay.concatenate %c, %c {axis = 0 : i64} : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<4x2xui8>
  %3 = relay.expand_dims %d {axis = 0 : i64} : (tensor<4xi32>) -> tensor<1x4xi32>
  %k = relay.constant dense<[[-128, 127], [0, -1]]> : tensor<2x2xi8>
  %4 = relay.concatenate %k {axis = 1 : i64} : (tensor<2x2xi8>) -> tensor<2x2xi8>
  %5 = relay.reshape %f {newshape = array<i64: 3, 1>} : (tensor<3xi16>) -> tensor<3x1xi16>
  func.return %0, %1, %2, %3, %4, %5 : tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<1x4xi32>, tensor<2x2xi8>, tensor<3x1xi16>
}
"""

MOVE_ARGS = [
    np.arange(6, dtype=np.int64).reshape(2, 3) * 10**12 - 3,
    (np.arange(6) % 2 == 0).reshape(3, 2),
    np.array([[1, 250], [3, 4]], np.uint8),
    np.array([1, -2, 3, 2**31 - 1], np.int32),
    np.zeros((2, 2), np.int8),
    np.array([-30000, 0, 30000], np.int16),
]
MOVE_WANT = [
    MOVE_ARGS[0].T,
    MOVE_ARGS[1].reshape(6),
    np.concatenate([MOVE_ARGS[2]] * 2),
    MOVE_ARGS[3][None],
    np.array([[-128, 127], [0, -1]], np.int8),
    MOVE_ARGS[5].reshape(3, 1),
]

TAKE = """
func.func @main(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %ids32: tensor<5xi32>)
    -> (tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<10x5xf32>, tensor<2x3xi64>) {
  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %1 = relay.take %t, %ids32 {axis = 1 : i64, mode = "wrap"} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  %2 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %3 = relay.take %t, %ids32 {axis = -1 : i64} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  %k = relay.constant dense<[7, -7, 70]> : tensor<3xi64>
  %4 = relay.take %k, %ids {axis = 0 : i64, mode = "wrap"} : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %0, %1, %2, %3, %4 : tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<10x5xf32>, tensor<2x3xi64>
}
"""


def take_args() -> list[np.ndarray]:
    table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[0, 9, -1], [3, -10, 5]], np.int64)
    ids32 = np.array([0, -1, 7, -9, 3], np.int32)
    return [table, ids, ids32]


def take_want(table: np.ndarray, ids: np.ndarray, ids32: np.ndarray) -> list[np.ndarray]:
    return [
        table[ids],
        table[:, ids32 % 4],
        table.reshape(-1)[np.clip(ids, 0, 39)],
        table[:, np.clip(ids32, 0, 3)],
        np.array([7, -7, 70], np.int64)[ids % 3],
    ]


def assert_equal(got, want) -> None:
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"output {i}: {g.dtype} != {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


@pytest.fixture(scope="module", params=[[], ["ccompiler"]], ids=["host", "ccompiler"])
def moves(request):
    return byoc.compile(MOVES, targets=request.param)


@pytest.fixture(scope="module", params=[[], ["ccompiler"]], ids=["host", "ccompiler"])
def take(request):
    return byoc.compile(TAKE, targets=request.param)


# --- The dialect and the reference ---------------------------------------------------


def test_reference_moves_every_integer_type() -> None:
    assert_equal(byoc.run_reference(parse_text(MOVES), MOVE_ARGS), MOVE_WANT)


def test_reference_takes_in_every_mode() -> None:
    args = take_args()
    assert_equal(byoc.run_reference(parse_text(TAKE), args), take_want(*args))


def test_reference_fast_take_refuses_an_index_out_of_range() -> None:
    table, ids, ids32 = take_args()
    ids[1, 2] = 10
    with pytest.raises(ByocError, match="index 10 is out of range for axis 0 of size 10"):
        byoc.run_reference(parse_text(TAKE), [table, ids, ids32])


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "%0 = relay.divide %a, %a : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>",
            "'relay.divide': lhs must have a float element type, got i64",
        ),
        (
            "%0 = relay.take %a, %x {axis = 0 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3xi64>",
            "'relay.take': indices must have element type i32 or i64, got f32",
        ),
        (
            "%0 = relay.take %a, %a {mode = \"raise\"} : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>",
            "mode \"raise\" is not one of clip, wrap, fast",
        ),
        (
            "%0 = relay.concatenate %a, %x : (tensor<3xi64>, tensor<3xf32>) -> tensor<6xi64>",
            "input 1 has element type f32 but input 0 has i64",
        ),
        (
            "%0 = relay.reshape %u {newshape = array<i64: 3>} : (tensor<3xi4>) -> tensor<3xi4>",
            "data must have a float, integer or i1 element type, got i4",
        ),
    ],
    ids=["divide-int", "take-float-indices", "take-mode", "concat-mixed", "i4"],
)
def test_verifiers_name_the_element_type(text: str, needle: str) -> None:
    result = text.rsplit("-> ", 1)[1]
    source = (
        f"func.func @main(%a: tensor<3xi64>, %x: tensor<3xf32>, %u: tensor<3xi4>) -> {result} {{\n"
        f"  {text}\n  func.return %0 : {result}\n}}\n"
    )
    with pytest.raises(ByocError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        parse_text(source)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(150, dtype=np.int64) - 70,
        np.arange(150) % 3 == 0,
        (np.arange(150) + 100).astype(np.uint8),
        np.array([-(2**31), 2**31 - 1], np.int32),
        np.array([True, False]),
        np.array(-5, np.int8),
    ],
    ids=["i64-hex", "i1-hex", "ui8-hex", "i32", "i1", "i8-scalar"],
)
def test_integer_constants_round_trip_through_text(array: np.ndarray) -> None:
    op = relay.ConstantOp.from_numpy(array)
    assert relay.element_type_of_dtype(array.dtype) == op.result.type.element_type
    text = (
        f"func.func @main() -> {op.result.type} {{\n"
        f"  %0 = relay.constant {op.value}\n"
        f"  func.return %0 : {op.result.type}\n}}\n"
    )
    (back,) = byoc.run_reference(parse_text(text), [])
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)


# --- Both exits ------------------------------------------------------------------------


def test_compiled_moves_every_integer_type(moves) -> None:
    assert_equal(moves(*MOVE_ARGS), MOVE_WANT)
    assert [s.dtype for s in moves.inputs] == [a.dtype for a in MOVE_ARGS]


def test_compiled_take_in_every_mode(take) -> None:
    args = take_args()
    assert_equal(take(*args), take_want(*args))


@pytest.mark.parametrize("bad", [10, -11, 2**40])
def test_compiled_fast_take_fails_on_an_index_out_of_range(take, bad: int) -> None:
    table, ids, ids32 = take_args()
    ids[0, 1] = bad
    with pytest.raises(ByocError, match="failed"):
        take(table, ids, ids32)
    ids[0, 1] = -10  # the same call with every index in range succeeds
    take(table, ids, ids32)


def test_c_buffers_have_their_element_types() -> None:
    model = byoc.compile(MOVES, targets=["ccompiler"])
    signature = next(line for line in model.c_source.splitlines() if "_ccompiler_0(" in line)
    for c_type in ("const int64_t*", "const bool*", "const uint8_t*", "const int32_t*", "int16_t*"):
        assert c_type in signature, signature


# --- The calling convention --------------------------------------------------------------


def test_integer_inputs_accept_only_lossless_conversions(take) -> None:
    table, ids, ids32 = take_args()
    want = take_want(table, ids, ids32)
    # int32 ids for an int64 input, int64 ones that fit for an int32 input: fine.
    assert_equal(take(table, ids.astype(np.int32), ids32.astype(np.int64)), want)
    assert_equal(take(table, ids.tolist(), ids32), want)  # a nested list of ints
    with pytest.raises(ByocError, match=r"argument 1 \(ids\) has dtype float64; expected int64"):
        take(table, ids.astype(np.float64), ids32)
    with pytest.raises(ByocError, match=r"argument 2 \(ids32\) has dtype int64; expected int32 \(its values do not fit"):
        take(table, ids, ids32.astype(np.int64) + 2**40)
    with pytest.raises(ByocError, match=r"has shape \(3, 2\); expected \(2, 3\)"):
        take(table, ids.T.copy(), ids32)


def test_bool_inputs_take_only_bools(moves) -> None:
    args = list(MOVE_ARGS)
    args[1] = args[1].astype(np.int64)
    with pytest.raises(ByocError, match=r"argument 1 \(b\) has dtype int64; expected bool"):
        moves(*args)


def test_saved_model_keeps_integer_dtypes(tmp_path: Path, take) -> None:
    path = tmp_path / "take.byoc"
    take.save(path)
    loaded = byoc.load(path)
    assert [s.dtype for s in loaded.inputs] == [s.dtype for s in take.inputs]
    assert [s.dtype for s in loaded.outputs] == [s.dtype for s in take.outputs]
    args = take_args()
    assert_equal(loaded(*args), take_want(*args))


def test_aot_library_takes_typed_buffers(tmp_path: Path) -> None:
    model = byoc.compile(TAKE, targets=["ccompiler"])
    text = header(model, "emb")
    assert "int32_t emb_run(const float* t, const int64_t* ids, const int32_t* ids32, float* output0" in text
    assert "int64_t* output4" in text and "/* input 1 'ids': int64 2x3 */" in text
    library, _ = export_library(model, tmp_path / "libemb.so", "emb")
    program = tmp_path / "main.c"
    program.write_text(
        '#include <stdio.h>\n#include "emb.h"\n'
        "int main(void) {\n"
        "  float t[EMB_INPUT_0_SIZE], o0[EMB_OUTPUT_0_SIZE], o1[EMB_OUTPUT_1_SIZE], o2[EMB_OUTPUT_2_SIZE], o3[EMB_OUTPUT_3_SIZE];\n"
        "  int64_t ids[EMB_INPUT_1_SIZE] = {0, 9, -1, 3, -10, 5}, o4[EMB_OUTPUT_4_SIZE];\n"
        "  int32_t ids32[EMB_INPUT_2_SIZE] = {0, -1, 7, -9, 3};\n"
        "  for (int i = 0; i < EMB_INPUT_0_SIZE; ++i) t[i] = (float)i;\n"
        "  int32_t status = emb_run(t, ids, ids32, o0, o1, o2, o3, o4);\n"
        '  printf("%d %g %g %lld\\n", (int)status, o0[4], o0[8], (long long)o4[1]);\n'
        "  ids[2] = 10;\n"
        '  printf("%d\\n", (int)emb_run(t, ids, ids32, o0, o1, o2, o3, o4));\n'
        "  return 0;\n}\n"
    )
    exe = tmp_path / "main"
    subprocess.run(
        [*compiler().split(), "-Wall", "-Werror", str(program), "-I", str(tmp_path),
         "-L", str(tmp_path), "-lemb", f"-Wl,-rpath,{tmp_path}", "-o", str(exe)],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    # o0[4] = table[9][0] = 36, o0[8] = table[-1][0] = 36, o4[1] = k[9 % 3] = 7
    assert out == ["0", "36", "36", "7", "1"]


# --- Partitioning --------------------------------------------------------------------------


def test_backends_take_only_the_dtypes_they_handle() -> None:
    module = parse_text(TAKE)
    annotate(module, parse_targets("cblas,onnxruntime,ccompiler"))
    takes = [op for op in module.walk() if isinstance(op, relay.TakeOp)]
    assert {op.attributes[TARGET_ATTR].data for op in takes} == {"ccompiler"}
    assert parse_targets("cblas")[0].check(takes[0]) is not None
    assert parse_targets("onnxruntime")[0].check(takes[0]) is not None


def test_ccompiler_refuses_element_types_without_a_c_type() -> None:
    source = """
    func.func @main(%a: tensor<4xf16>) -> tensor<2x2xf16> {
      %0 = relay.reshape %a {newshape = array<i64: 2, 2>} : (tensor<4xf16>) -> tensor<2x2xf16>
      func.return %0 : tensor<2x2xf16>
    }
    """
    op = next(op for op in parse_text(source).walk() if isinstance(op, relay.ReshapeOp))
    assert "C has no type for f16" in (parse_targets("ccompiler")[0].check(op) or "")


def test_type_helpers() -> None:
    assert relay.is_integer_type(i64) and not relay.is_integer_type(f32)
    assert relay.index_tensor_of(TensorType(i32, [2]), "x", "y").element_type == i32
    assert relay.element_type_of_dtype(np.float16) is not None
    assert relay.element_type_of_dtype(np.complex64) is None
    assert compiler()  # the AOT test above needs one


# --- ONNX: token ids into an embedding table ------------------------------------------


def embedding_model(id_type: int, vocab: int = 50, dim: int = 8):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    table = rng.standard_normal((vocab, dim)).astype(np.float32)
    weight = rng.standard_normal((dim, 3)).astype(np.float32)
    codes = np.arange(vocab, dtype=np.int64) * 3 - 7
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0, name="embed"),
        helper.make_node("MatMul", ["emb", "w"], ["y"]),
        helper.make_node("Gather", ["codes", "ids"], ["code"], axis=0),
        helper.make_node("Gather", ["emb", "pos"], ["first"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "embedding",
        [helper.make_tensor_value_info("ids", id_type, [2, 5])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("code", TensorProto.INT64, None),
            helper.make_tensor_value_info("first", TensorProto.FLOAT, None),
        ],
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(weight, "w"),
            numpy_helper.from_array(codes, "codes"),
            numpy_helper.from_array(np.array(-5, np.int64), "pos"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("targets", [[], ["cblas", "ccompiler"]], ids=["host", "cblas,ccompiler"])
@pytest.mark.parametrize("id_dtype", [np.int64, np.int32], ids=["int64", "int32"])
def test_embedding_lookup_with_runtime_ids_matches_onnxruntime(id_dtype, targets) -> None:
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    model = embedding_model(helper.np_dtype_to_tensor_dtype(np.dtype(id_dtype)))
    ids = np.array([[0, 49, -1, 7, 7], [-50, 3, 25, 1, 0]], id_dtype)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"ids": ids})
    compiled = byoc.compile(model, targets=targets)
    assert compiled.inputs[0].dtype == np.dtype(id_dtype)
    got = compiled(ids)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    if targets:
        assert compiled.placement.get("ccompiler", 0) >= 3  # the takes
    ids[1, 2] = 50
    with pytest.raises(ByocError, match="failed"):
        compiled(ids)


def test_imported_gather_is_a_fast_take() -> None:
    pytest.importorskip("onnx")
    from onnx import TensorProto

    from byoc.frontend.onnx import from_onnx

    module = from_onnx(embedding_model(TensorProto.INT64))
    takes = [op for op in module.walk() if isinstance(op, relay.TakeOp)]
    assert len(takes) == 3
    assert {op.attrs()["mode"] for op in takes} == {"fast"}
    assert [op.attrs()["axis"] for op in takes] == [0, 0, 1]
