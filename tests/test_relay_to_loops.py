"""convert-relay-to-loops: the lowered IR verifies, keeps to the loop-level
contract of docs/architecture.md, and computes what numpy computes.

Numerics run on xDSL's interpreter, with a memref implementation that checks
bounds, use after free, double free and leaks, so a wrong liveness or a wrong
broadcast index fails here rather than in a backend.
"""

from __future__ import annotations

import gc
import math as pymath
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    f64,
    i8,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    impl_external,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import RawPtr, TypedPtr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def

from byoc.dialects import extern, make_context, relay
from byoc.frontend.diagnostics import ByocError
from byoc.passes.convert_relay_to_loops import (
    MAX_FUSED_OPS,
    LOWERINGS,
    SCALAR_BUILDERS,
    ConvertRelayToLoopsPass,
)

# --- Interpreter -------------------------------------------------------------


@register_impls
class MissingScalarFunctions(InterpreterFunctions):
    """Scalar ops the lowering emits that xDSL 0.74's interpreter lacks."""

    @impl(arith.DivfOp)
    def run_divf(self, interp: Interpreter, op: arith.DivfOp, args: PythonValues):
        lhs, rhs = args
        if rhs == 0:
            return (pymath.copysign(pymath.inf, lhs) * pymath.copysign(1, rhs),)
        return (lhs / rhs,)

    @impl(arith.NegfOp)
    def run_negf(self, interp: Interpreter, op: arith.NegfOp, args: PythonValues):
        return (-args[0],)

    @impl(math.TanhOp)
    def run_tanh(self, interp: Interpreter, op: math.TanhOp, args: PythonValues):
        return (pymath.tanh(args[0]),)

    @impl(math.FloorOp)
    def run_floor(self, interp: Interpreter, op: math.FloorOp, args: PythonValues):
        return (float(pymath.floor(args[0])),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interp: Interpreter, op: arith.FPToSIOp, args: PythonValues):
        return (int(args[0]),)

    @impl(arith.BitcastOp)
    def run_bitcast(self, interp: Interpreter, op: arith.BitcastOp, args: PythonValues):
        assert str(op.input.type) == "i32" and str(op.result.type) == "f32"
        return (struct.unpack("<f", struct.pack("<i", args[0]))[0],)


@register_impls
class CheckedMemRefFunctions(MemRefFunctions):
    """memref ops that fail on out-of-bounds access, use after free, double free;
    live buffers are counted so leaks show."""

    def __init__(self) -> None:
        self.live: set[int] = set()
        self.freed: set[int] = set()
        self.views: dict[int, tuple[ShapedArray[Any], ShapedArray[Any]]] = {}
        """id of a memref.view -> (the view, the buffer it views)."""

    def check(self, buffer: ShapedArray[Any], indices: Sequence[int], what: str):
        found = self.views.get(id(buffer))
        owner = buffer if found is None else found[1]
        assert id(owner) not in self.freed, f"{what} of a freed buffer"
        assert len(indices) == len(buffer.shape), f"{what}: wrong index count"
        for i, extent in zip(indices, buffer.shape):
            assert 0 <= i < extent, f"{what}: index {list(indices)} out of {buffer.shape}"

    @impl(memref.AllocOp)
    def run_alloc(self, interp: Interpreter, op: memref.AllocOp, args: PythonValues):
        typ = op.memref.type
        if typ.element_type == i8:  # bytes for views: all ones, a NaN as floats
            (size,) = typ.get_shape()
            buffer = ShapedArray(TypedPtr(RawPtr(bytearray(b"\xff" * size)), xtype=i8), [size])
        else:
            # NaN-filled, so a read before any write shows in the results.
            buffer = to_buffer(np.full(typ.get_shape(), np.nan, dtype=DTYPES[typ.element_type]))
        self.live.add(id(buffer))
        return (buffer,)

    @impl(memref.ViewOp)
    def run_view(self, interp: Interpreter, op: memref.ViewOp, args: PythonValues):
        source, shift = args[0], args[1]
        assert id(source) in self.live, "view of a buffer not allocated (or freed)"
        typ = op.result.type
        size = typ.element_type.compile_time_size
        assert 0 <= shift and shift + pymath.prod(typ.get_shape()) * size <= source.size
        view = ShapedArray(
            TypedPtr(source.data_ptr.raw + shift, xtype=typ.element_type), list(typ.get_shape())
        )
        self.views[id(view)] = (view, source)
        return (view,)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interp: Interpreter, op: memref.DeallocOp, args: PythonValues):
        (buffer,) = args
        assert id(buffer) in self.live, "dealloc of a buffer not allocated (or freed twice)"
        self.live.remove(id(buffer))
        self.freed.add(id(buffer))
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interp: Interpreter, op: memref.LoadOp, args: PythonValues):
        buffer, *indices = args
        self.check(buffer, indices, "load")
        return (buffer.load(tuple(indices)),)

    @impl(memref.StoreOp)
    def run_store(self, interp: Interpreter, op: memref.StoreOp, args: PythonValues):
        value, buffer, *indices = args
        self.check(buffer, indices, "store")
        buffer.store(tuple(indices), value)
        return ()


DTYPES: dict[Attribute, Any] = {f32: np.float32, f64: np.float64}


def to_buffer(array: np.ndarray) -> ShapedArray[float]:
    ptr = (
        TypedPtr.new_float64 if array.dtype == np.float64 else TypedPtr.new_float32
    )(array.ravel().tolist())
    return ShapedArray(ptr, list(array.shape))


def from_buffer(buffer: ShapedArray[float], dtype: Any) -> np.ndarray:
    return np.array(buffer.data, dtype=dtype).reshape(buffer.shape)


def run(
    module: ModuleOp,
    name: str,
    inputs: Sequence[np.ndarray],
    out_shapes: Sequence[Sequence[int]],
    externals: InterpreterFunctions | None = None,
) -> tuple[int, list[np.ndarray]]:
    """Call lowered `@name` on `inputs` with fresh (NaN-filled) output buffers."""
    interp = Interpreter(module)
    memrefs = CheckedMemRefFunctions()
    for functions in (
        ArithFunctions(),
        MathFunctions(),
        ScfFunctions(),
        FuncFunctions(),
        MissingScalarFunctions(),
    ):
        interp.register_implementations(functions)
    interp.register_implementations(memrefs)
    if externals is not None:
        interp.register_implementations(externals)
    dtype = inputs[0].dtype if inputs else np.float32
    outputs = [to_buffer(np.full(shape, np.nan, dtype=dtype)) for shape in out_shapes]
    ins = [to_buffer(np.asarray(x)) for x in inputs]
    (status,) = interp.call_op(name, (*ins, *outputs))
    assert not memrefs.live, f"{len(memrefs.live)} buffers leaked"
    for before, x in zip(ins, inputs):
        np.testing.assert_array_equal(from_buffer(before, x.dtype), x)  # inputs untouched
    return status, [from_buffer(b, dtype) for b in outputs]


# --- Building relay functions through the Python API -------------------------


def tensor(shape: Sequence[int], element: Attribute = f32) -> TensorType:
    return TensorType(element, shape)


def function(
    name: str,
    inputs: Sequence[TensorType],
    body: Callable[[Block, Sequence[SSAValue]], Sequence[SSAValue]],
    private: bool = False,
) -> func.FuncOp:
    """`func.func @name` whose body `body(block, args)` fills, returning results."""
    block = Block(arg_types=inputs)
    results = body(block, block.args)
    block.add_op(func.ReturnOp(*results))
    return func.FuncOp(
        name,
        (list(inputs), [r.type for r in results]),
        Region(block),
        visibility="private" if private else None,
    )


def add(block: Block, op: Operation) -> SSAValue:
    block.add_op(op)
    return op.results[0]


def lower(*functions: func.FuncOp) -> ModuleOp:
    module = ModuleOp(list(functions))
    module.verify()
    ConvertRelayToLoopsPass().apply(make_context(), module)
    module.verify()
    check_contract(module)
    return module


ALLOWED_OPS = {
    "func.func", "func.call", "func.return",
    "arith.constant", "arith.addf", "arith.subf", "arith.mulf", "arith.divf",
    "arith.negf", "arith.maximumf", "arith.minimumf", "arith.ori",
    "math.tanh", "math.exp",
    # exp of f32 as vectorisable arithmetic (passes/vector_math.py)
    "math.floor", "arith.fptosi", "arith.addi", "arith.subi", "arith.muli",
    "arith.divsi", "arith.bitcast", "arith.cmpf", "arith.select",
    "scf.for", "scf.yield",
    "memref.alloc", "memref.dealloc", "memref.load", "memref.store",
}  # fmt: skip
"""The part of the loop-level IR contract this pass may produce today."""


def check_contract(module: ModuleOp) -> None:
    """Every function is `(memref...) -> i32` and its body only contract ops."""
    for op in module.body.block.ops:
        assert isinstance(op, func.FuncOp)
        ftype = op.function_type
        assert [str(t) for t in ftype.outputs] == ["i32"], op.sym_name
        assert all(isinstance(t, MemRefType) for t in ftype.inputs), op.sym_name
        constants: set[tuple[str, str]] = set()
        for inner in op.walk():
            assert inner.name in ALLOWED_OPS, f"{inner.name} is not loop-level IR"
            assert not any(isinstance(r.type, TensorType) for r in inner.results)
            if isinstance(inner, arith.ConstantOp):
                # One constant per distinct value, all at the entry.
                key = (str(inner.value), str(inner.result.type))
                assert key not in constants, f"constant {key} built twice"
                constants.add(key)
                assert inner.parent_op() is op
            if isinstance(inner, scf.ForOp):
                assert not inner.iter_args
                assert str(inner.step.owner.value) == "1 : index"  # type: ignore


# --- Numerics of every op ----------------------------------------------------

BINARY_NUMPY: dict[type[relay.ElementwiseBinaryOp], Callable[..., np.ndarray]] = {
    relay.AddOp: np.add,
    relay.SubtractOp: np.subtract,
    relay.MultiplyOp: np.multiply,
    relay.DivideOp: np.divide,
}
UNARY_NUMPY: dict[type[relay.ElementwiseUnaryOp], Callable[..., np.ndarray]] = {
    relay.ReluOp: lambda x: np.maximum(x, 0),
    relay.NegativeOp: np.negative,
    relay.TanhOp: np.tanh,
    relay.ExpOp: np.exp,
}

BROADCAST_SHAPES = [
    ((), ()),
    ((3,), ()),
    ((), (2, 3)),
    ((1,), (5,)),
    ((7,), (7,)),
    ((10, 10), (10,)),
    ((1, 10), (10, 1)),
    ((5, 3), (1, 3)),
    ((2, 1, 3), (4, 1)),
    ((3, 1, 5), (2, 3, 4, 5)),
    ((1, 1, 1, 1), (2, 1, 3, 1)),
    ((2, 3, 5, 7), (2, 3, 5, 7)),
]
UNARY_SHAPES = [(), (1,), (7,), (3, 5), (2, 1, 3), (2, 3, 1, 5)]


def random(shape: Sequence[int], seed: int, dtype: Any = np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)


def test_every_relay_op_has_a_lowering_and_a_reference():
    from byoc.runtime.reference import REFERENCE

    ops = {*relay.BINARY_OPS, *relay.UNARY_OPS}
    assert ops <= set(LOWERINGS)
    assert ops <= set(SCALAR_BUILDERS)
    assert {op.name for op in relay.RELAY_OPS} <= set(REFERENCE)
    lowered = {op.name for op in LOWERINGS} | {"relay.constant"}  # a global, not a loop
    assert {op.name for op in relay.RELAY_OPS} <= lowered
    # The interpreter-based tests below cover the ops xDSL's interpreter can
    # run; test_compile.py covers every elementwise op on both exits.
    assert {*BINARY_NUMPY, *UNARY_NUMPY} <= ops


@pytest.mark.parametrize("lhs_shape,rhs_shape", BROADCAST_SHAPES)
@pytest.mark.parametrize("op_type", list(BINARY_NUMPY), ids=lambda t: t.name)
def test_binary(op_type, lhs_shape, rhs_shape):
    a, b = random(lhs_shape, 1), random(rhs_shape, 2)
    if op_type is relay.DivideOp:
        b = np.where(np.abs(b) < 0.25, np.float32(0.5), b).astype(np.float32)
    expected = BINARY_NUMPY[op_type](a, b)
    fn = function(
        "main",
        [tensor(lhs_shape), tensor(rhs_shape)],
        lambda blk, args: [add(blk, op_type(args[0], args[1]))],
    )
    module = lower(fn)
    status, (out,) = run(module, "main", [a, b], [expected.shape])
    assert status == 0
    # +-*/ round once to f32 in both; the interpreter is exact here.
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("shape", UNARY_SHAPES)
@pytest.mark.parametrize("op_type", list(UNARY_NUMPY), ids=lambda t: t.name)
def test_unary(op_type, shape):
    x = random(shape, 3)
    expected = UNARY_NUMPY[op_type](x)
    fn = function("main", [tensor(shape)], lambda blk, args: [add(blk, op_type(args[0]))])
    status, (out,) = run(lower(fn), "main", [x], [shape])
    assert status == 0
    np.testing.assert_allclose(out, expected, rtol=2e-7, atol=0)


@pytest.mark.parametrize("element,dtype", [(f32, np.float32), (f64, np.float64)])
def test_chain_with_broadcast_and_element_types(element: AnyFloat, dtype: Any):
    """relu(a * b - c) / exp(-tanh(a)), mixing ranks, on f32 and f64."""
    a, b, c = random((2, 3, 4), 4, dtype), random((3, 1), 5, dtype), random((), 6, dtype)

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        x, y, z = args
        m = add(blk, relay.MultiplyOp(x, y))
        s = add(blk, relay.SubtractOp(m, z))
        r = add(blk, relay.ReluOp(s))
        t = add(blk, relay.TanhOp(x))
        n = add(blk, relay.NegativeOp(t))
        e = add(blk, relay.ExpOp(n))
        return [add(blk, relay.DivideOp(r, e))]

    types = [tensor(v.shape, element) for v in (a, b, c)]
    module = lower(function("main", types, body))
    status, (out,) = run(module, "main", [a, b, c], [(2, 3, 4)])
    assert status == 0
    expected = np.maximum(a * b - c, 0) / np.exp(-np.tanh(a))
    np.testing.assert_allclose(out, expected, rtol=1e-6 if dtype == np.float32 else 1e-14)


# --- Buffers: destinations, copies, liveness ---------------------------------


def test_returned_argument_and_value_returned_twice():
    x = random((2, 3), 7)

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        e = add(blk, relay.ExpOp(args[0]))
        return [args[0], e, e, args[0]]

    module = lower(function("main", [tensor((2, 3))], body))
    status, outs = run(module, "main", [x], [(2, 3)] * 4)
    assert status == 0
    for out, expected in zip(outs, [x, np.exp(x), np.exp(x), x]):
        np.testing.assert_allclose(out, expected, rtol=2e-7)
    fn = module.body.block.first_op
    assert isinstance(fn, func.FuncOp)
    # Nothing is allocated: each value lives in an output buffer or an input.
    assert not [op for op in fn.walk() if isinstance(op, memref.AllocOp)]


def test_value_used_by_two_ops_and_dead_value():
    x = random((4, 5), 8)

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        r = add(blk, relay.ReluOp(args[0]))
        add(blk, relay.ExpOp(r))  # dead: computed, then freed at once
        t = add(blk, relay.TanhOp(r))
        return [add(blk, relay.AddOp(t, r))]

    module = lower(function("main", [tensor((4, 5))], body))
    status, (out,) = run(module, "main", [x], [(4, 5)])
    assert status == 0
    r = np.maximum(x, 0)
    np.testing.assert_allclose(out, np.tanh(r) + r, rtol=2e-7)
    fn = module.body.block.first_op
    assert isinstance(fn, func.FuncOp)
    top = [op.name for op in fn.body.block.ops if op.name != "arith.constant"]
    assert top == [
        "memref.alloc", "scf.for",                      # relu
        "memref.alloc", "scf.for",                      # dead exp; its buffer is pooled
        "scf.for",                                      # tanh fused into add
        "memref.dealloc", "memref.dealloc",             # the pool, freed at the end
        "func.return",
    ]  # fmt: skip


def test_no_buffer_is_read_after_free_in_a_long_graph():
    """A diamond-rich graph: each value feeds the next three ops."""
    x = random((3, 2), 9)

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        window = [args[0], add(blk, relay.TanhOp(args[0])), add(blk, relay.ReluOp(args[0]))]
        for i in range(20):
            op = (relay.AddOp, relay.SubtractOp, relay.MultiplyOp)[i % 3]
            window = [*window[1:], add(blk, op(window[0], window[2]))]
        return [window[-1], window[-2]]

    module = lower(function("main", [tensor((3, 2))], body))
    status, outs = run(module, "main", [x], [(3, 2), (3, 2)])
    assert status == 0
    window = [x, np.tanh(x), np.maximum(x, 0)]
    for i in range(20):
        fn = (np.add, np.subtract, np.multiply)[i % 3]
        window = [*window[1:], fn(window[0], window[2]).astype(np.float32)]
    np.testing.assert_allclose(outs[0], window[-1], rtol=1e-5)
    np.testing.assert_allclose(outs[1], window[-2], rtol=1e-5)


# --- extern.call -------------------------------------------------------------


@register_impls
class Kernels(InterpreterFunctions):
    """Stand-ins for outlined kernels: destination-passing, returning a status."""

    def __init__(self, status: int = 0, failing_call: int = 0) -> None:
        self.status = status
        self.failing_call = failing_call
        self.calls = 0

    @impl_external("twice_and_negate")
    def twice_and_negate(self, interp: Interpreter, op: Operation, args: PythonValues):
        x, doubled, negated = args
        for i in range(x.size):
            doubled.data_ptr[i] = 2 * x.data_ptr[i]
            negated.data_ptr[i] = -x.data_ptr[i]
        self.calls += 1
        return (self.status if self.calls == self.failing_call else 0,)


def kernel_declaration() -> func.FuncOp:
    t = tensor((2, 2))
    decl = func.FuncOp("twice_and_negate", ([t], [t, t]), Region(), "private")
    decl.attributes["extern.compiler"] = StringAttr("ccompiler")
    return decl


def calls_function() -> func.FuncOp:
    t = tensor((2, 2))

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        first = extern.CallOp("twice_and_negate", [args[0]], [t, t])
        blk.add_op(first)
        r = add(blk, relay.ReluOp(first.res[1]))
        second = extern.CallOp("twice_and_negate", [r], [t, t])
        blk.add_op(second)
        # A call result returned (straight into the output), returned twice, and
        # an unused one.
        return [second.res[0], first.res[0], second.res[0]]

    return function("main", [t], body)


def test_extern_call_results_are_written_into_outputs():
    module = lower(kernel_declaration(), calls_function())
    decl, main = module.body.block.ops
    assert isinstance(decl, func.FuncOp) and isinstance(main, func.FuncOp)
    assert decl.attributes["extern.compiler"] == StringAttr("ccompiler")
    assert decl.sym_visibility == StringAttr("private") and not decl.body.blocks
    assert [str(t) for t in decl.function_type.inputs] == ["memref<2x2xf32>"] * 3
    calls = [op for op in main.walk() if isinstance(op, func.CallOp)]
    outs = main.body.block.args[1:]
    assert calls[0].arguments[1] is outs[1]  # first.res[0] -> out1
    assert calls[1].arguments[1] is outs[0]  # second.res[0] -> out0, copied to out2

    x = random((2, 2), 10)
    status, (o0, o1, o2) = run(module, "main", [x], [(2, 2)] * 3, Kernels())
    assert status == 0
    np.testing.assert_array_equal(o0, 2 * np.maximum(-x, 0))
    np.testing.assert_array_equal(o1, 2 * x)
    np.testing.assert_array_equal(o2, o0)


@pytest.mark.parametrize("failing_call", [1, 2])
def test_a_failing_kernel_is_never_silent(failing_call: int):
    module = lower(kernel_declaration(), calls_function())
    kernels = Kernels(status=7, failing_call=failing_call)
    status, _ = run(module, "main", [random((2, 2), 11)], [(2, 2)] * 3, kernels)
    assert kernels.calls == 2
    assert status != 0


def test_already_lowered_functions_are_left_alone():
    module = lower(kernel_declaration(), calls_function())
    before = str(module)
    ConvertRelayToLoopsPass().apply(make_context(), module)
    assert str(module) == before


# --- Errors ------------------------------------------------------------------


@irdl_op_definition
class SoftmaxOp(IRDLOperation):
    """An op without a lowering (yet)."""

    name = "relay.nn.softmax_test_only"
    data = operand_def(TensorType)
    result = result_def(TensorType)


def test_op_without_lowering_is_named():
    t = tensor((3,))
    fn = function(
        "main",
        [t],
        lambda blk, args: [add(blk, SoftmaxOp.create(operands=[args[0]], result_types=[t]))],
    )
    module = ModuleOp([fn])
    with pytest.raises(ByocError, match=r"no lowering for 'relay.nn.softmax_test_only' in @main"):
        ConvertRelayToLoopsPass().apply(make_context(), module)


def test_dynamic_shape_is_rejected():
    t = TensorType(f32, [-1])
    decl = func.FuncOp("k", ([t], [t]), Region(), "private")
    with pytest.raises(ByocError, match=r"argument 0 of @k .*static-shape tensor"):
        ConvertRelayToLoopsPass().apply(make_context(), ModuleOp([decl]))


# --- Scale -------------------------------------------------------------------


def test_100k_op_chain_is_linear_and_not_recursive():
    n = 100_000
    t = tensor(())
    unary = (relay.ReluOp, relay.TanhOp, relay.ExpOp, relay.NegativeOp)
    enabled = gc.isenabled()
    gc.disable()
    try:
        block = Block(arg_types=[t])
        value: SSAValue = block.args[0]
        for i in range(n):
            op = unary[i % 4](value, t)
            block.add_op(op)
            value = op.result
        block.add_op(func.ReturnOp(value))
        module = ModuleOp([func.FuncOp("main", ([t], [t]), Region(block))])
        ConvertRelayToLoopsPass().apply(make_context(), module)
    finally:
        if enabled:
            gc.enable()
    fn = module.body.block.first_op
    assert isinstance(fn, func.FuncOp)
    counts: dict[str, int] = {}
    for op in fn.body.block.ops:
        counts[op.name] = counts.get(op.name, 0) + 1
    # Fused into nests of at most MAX_FUSED_OPS ops; the buffers between two
    # nests are planned statically: two of them, used in turn.
    nests = -(-n // MAX_FUSED_OPS)
    assert counts["memref.alloc"] == 2
    assert counts["memref.dealloc"] == 2
    assert counts["memref.store"] == nests
    assert fn.body.block.last_op is not None
    assert fn.body.block.last_op.name == "func.return"
    assert [str(t) for t in fn.function_type.inputs] == ["memref<f32>", "memref<f32>"]
