"""Comparisons, logic and integer arithmetic at run time: relay.equal ...
greater_equal (i1 results on float, integer and i1 operands), relay.logical_*
on i1, and relay.add/subtract/multiply on integers (wrapping as numpy's),
against numpy on both exits, and the ONNX operators that import to them
against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import byoc
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import parse_text

COMPARISONS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
ARITHMETIC = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}
LOGIC = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}

ELEMENTS = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.bool_): "i1",
}
SHAPE = (3, 8)


def operands(dtype: np.dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two [3, 8] arrays of `dtype` with equal pairs, the type's extremes (which
    overflow any of + - *), and for floats NaN, infinities and -0 against 0."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        a = rng.integers(0, 2, SHAPE).astype(bool)
        return a, rng.integers(0, 2, SHAPE).astype(bool)
    if dtype.kind == "f":
        a = rng.integers(-3, 4, SHAPE).astype(dtype)
        b = rng.integers(-3, 4, SHAPE).astype(dtype)
        a[0, :6] = [np.nan, 1.0, np.inf, -0.0, np.nan, -np.inf]
        b[0, :6] = [1.0, np.nan, np.inf, 0.0, np.nan, 5.0]
        return a, b
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
    a[0, :5] = [info.max, info.min, info.max, info.min, 7]
    b[0, :5] = [info.max, info.min, 1, info.max, 7]
    b[1] = a[1]
    return a, b


def program() -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """`@main` applying every comparison to each element type's operands (one
    of them broadcast from a row), every arithmetic op to each integer type and
    every logical op to the i1 operands; its inputs and numpy's results."""
    args: list[str] = []
    body: list[str] = []
    results: list[tuple[str, str]] = []
    inputs: list[np.ndarray] = []
    want: list[np.ndarray] = []

    def arg(array: np.ndarray) -> str:
        name = f"%a{len(inputs)}"
        inputs.append(array)
        args.append(f"{name}: {tensor(array)}")
        return name

    def tensor(array: np.ndarray) -> str:
        dims = "".join(f"{d}x" for d in array.shape)
        return f"tensor<{dims}{ELEMENTS[array.dtype]}>"

    def apply(op: str, x: str, y: str | None, arrays: list[np.ndarray], out: np.ndarray) -> None:
        name = f"%v{len(body)}"
        operand_types = ", ".join(tensor(a) for a in arrays)
        operand_names = x if y is None else f"{x}, {y}"
        body.append(
            f"  {name} = relay.{op} {operand_names} : ({operand_types}) -> {tensor(out)}"
        )
        results.append((name, tensor(out)))
        want.append(out)

    for index, dtype in enumerate(ELEMENTS):
        a, b = operands(dtype, seed=index)
        x, y, row = arg(a), arg(b), arg(b[2])
        for op, fn in COMPARISONS.items():
            apply(op, x, y, [a, b], fn(a, b))
            apply(op, row, x, [b[2], a], fn(b[2], a))
        if dtype.kind in "iu":
            for op, fn in ARITHMETIC.items():
                apply(op, x, y, [a, b], fn(a, b))
        if dtype == np.bool_:
            for op, fn in LOGIC.items():
                apply(op, x, y, [a, b], fn(a, b))
                apply(op, row, x, [b[2], a], fn(b[2], a))
            apply("logical_not", x, None, [a], np.logical_not(a))
    scalar = arg(np.array(2.5, np.float32))
    apply("less", scalar, scalar, [inputs[-1], inputs[-1]], np.array(False))
    text = (
        f"func.func @main({', '.join(args)}) -> ({', '.join(t for _, t in results)}) {{\n"
        + "\n".join(body)
        + f"\n  func.return {', '.join(n for n, _ in results)} : "
        + f"{', '.join(t for _, t in results)}\n}}\n"
    )
    return text, inputs, want


TEXT, INPUTS, WANT = program()


def assert_same(got, want) -> None:
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"result {i}: {g.dtype} != {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"result {i}")


def test_reference_matches_numpy() -> None:
    assert_same(byoc.run_reference(parse_text(TEXT), INPUTS), WANT)


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_compiled_matches_numpy(targets) -> None:
    model = byoc.compile(TEXT, targets=targets)
    assert_same(model(*INPUTS), WANT)


def test_ccompiler_takes_comparisons_and_logic() -> None:
    from byoc.backends import get_backend

    ccompiler = get_backend("ccompiler")
    for op in (*COMPARISONS, *LOGIC, "logical_not"):
        assert f"relay.{op}" in ccompiler.ops


# --- ONNX ------------------------------------------------------------------------

BOOL, FLOAT, INT32 = TensorProto.BOOL, TensorProto.FLOAT, TensorProto.INT32


def onnx_model() -> onnx.ModelProto:
    """Every comparison and logical operator, Where on a run-time condition
    and integer Add/Sub/Mul, as an exporter writes them."""
    inputs = [
        helper.make_tensor_value_info("x", FLOAT, [3, 4]),
        helper.make_tensor_value_info("y", FLOAT, [4]),
        helper.make_tensor_value_info("i", INT32, [3, 4]),
        helper.make_tensor_value_info("j", INT32, [3, 4]),
    ]
    nodes = [
        helper.make_node("Equal", ["x", "y"], ["eq"], name="eq"),
        helper.make_node("Less", ["x", "y"], ["lt"]),
        helper.make_node("LessOrEqual", ["i", "j"], ["le"]),
        helper.make_node("Greater", ["x", "y"], ["gt"]),
        helper.make_node("GreaterOrEqual", ["i", "j"], ["ge"]),
        helper.make_node("Not", ["eq"], ["ne"]),
        helper.make_node("And", ["lt", "ne"], ["and"]),
        helper.make_node("Or", ["gt", "eq"], ["or"]),
        helper.make_node("Xor", ["le", "ge"], ["xor"]),
        helper.make_node("Where", ["lt", "x", "y"], ["where"]),
        helper.make_node("Add", ["i", "j"], ["sum"]),
        helper.make_node("Sub", ["i", "j"], ["difference"]),
        helper.make_node("Mul", ["i", "j"], ["product"]),
    ]
    outputs = [
        helper.make_tensor_value_info(name, typ, [3, 4])
        for name, typ in [
            ("and", BOOL),
            ("or", BOOL),
            ("xor", BOOL),
            ("where", FLOAT),
            ("sum", INT32),
            ("difference", INT32),
            ("product", INT32),
        ]
    ]
    graph = helper.make_graph(nodes, "compare", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def onnx_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.integers(-2, 3, (3, 4)).astype(np.float32)
    x[0, 0] = np.nan
    y = rng.integers(-2, 3, (4,)).astype(np.float32)
    i = rng.integers(-(2**31), 2**31, (3, 4), dtype=np.int64).astype(np.int32)
    j = rng.integers(-(2**31), 2**31, (3, 4), dtype=np.int64).astype(np.int32)
    j[1] = i[1]
    return [x, y, i, j]


@pytest.mark.parametrize("targets", [[], ["ccompiler"]], ids=["host", "ccompiler"])
def test_onnx_comparisons_and_logic_match_onnxruntime(targets) -> None:
    ort = pytest.importorskip("onnxruntime")
    ort.set_default_logger_severity(3)
    model = onnx_model()
    args = onnx_inputs()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, dict(zip("xyij", args)))
    assert_same(byoc.compile(model, targets=targets)(*args), want)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_onnx_unsigned_inputs_run(dtype) -> None:
    """ONNX's unsigned integer inputs of every width reach run time; Add wraps
    at the type's width (against numpy: onnxruntime has no uint16 Max or Add)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = [helper.make_tensor_value_info(n, elem, [5]) for n in "ab"]
    nodes = [
        helper.make_node("Max", ["a", "b"], ["m"]),
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Greater", ["a", "b"], ["g"]),
    ]
    outputs = [
        helper.make_tensor_value_info("m", elem, [5]),
        helper.make_tensor_value_info("s", elem, [5]),
        helper.make_tensor_value_info("g", BOOL, [5]),
    ]
    graph = helper.make_graph(nodes, "unsigned", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    top = np.iinfo(dtype).max
    a = np.array([0, 1, top, top, 7], dtype)
    b = np.array([0, top, top, 1, 3], dtype)
    want = [np.maximum(a, b), a + b, a > b]
    for targets in ([], ["ccompiler"]):
        assert_same(byoc.compile(model, targets=targets)(a, b), want)


def _one_node(op_type: str, types: tuple[int, int], out: int) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(n, t, [2]) for n, t in zip("ab", types)]
    node = helper.make_node(op_type, ["a", "b"], ["c"], name="the_node")
    output = helper.make_tensor_value_info("c", out, [2])
    graph = helper.make_graph([node], "g", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "op_type, types, out, needle",
    [
        ("Div", (INT32, INT32), INT32, "Div of i32 tensors is not supported"),
        # onnx's shape inference refuses these first, naming the node.
        ("Equal", (FLOAT, INT32), BOOL, r"inconsistent type tensor\(int32\)"),
        ("And", (BOOL, FLOAT), BOOL, r"tensor\(float\)"),
    ],
)
def test_onnx_refusals_name_the_node(op_type, types, out, needle) -> None:
    with pytest.raises(ByocError, match=needle) as error:
        byoc.compile(_one_node(op_type, types, out), targets=[])
    assert "the_node" in str(error.value)
