"""The data-movement ops and constants (passes/lower_shapes.py) end to end.

Each op is compiled for the host (`byoc.compile(..., targets=[])`, the llvm
exit) and compared with the reference interpreter: moving elements must give
exactly the same bits. The lowered IR is also run on xDSL's interpreter with
checked memrefs (test_relay_to_loops), so an out-of-bounds store, which the JIT
would not notice, fails here. Transpose, concatenate, reshape and constants
also go through the C exit (emitc, gcc, cffi).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from test_emitc_c import Library
from test_relay_to_loops import run
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser

import byoc
from byoc.dialects import make_context, relay
from byoc.dialects.extern import COMPILER_ATTR
from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass
from byoc.passes.convert_relay_to_loops import LOWERINGS, ConvertRelayToLoopsPass
from byoc.targets.c import emit_c

Shape = tuple[int, ...]
Body = Callable[[Block, Sequence[SSAValue]], Sequence[SSAValue]]

# --- Building, lowering and running models ------------------------------------------


def model(inputs: Sequence[Shape], body: Body, name: str = "main") -> ModuleOp:
    """A module with one function `@name` over f32 tensors of the `inputs` shapes."""
    block = Block(arg_types=[TensorType(f32, s) for s in inputs])
    results = list(body(block, block.args))
    block.add_op(func.ReturnOp(*results))
    ftype = FunctionType.from_lists(list(block.arg_types), [r.type for r in results])
    module = ModuleOp([func.FuncOp(name, ftype, Region(block))])
    module.verify()
    return module


def add(block: Block, op: Operation) -> SSAValue:
    block.add_op(op)
    return op.results[0]


def unary(make: Callable[[SSAValue], Operation]) -> Body:
    """The body `make(x)` of a one-input model."""
    return lambda block, args: [add(block, make(args[0]))]


def constant(block: Block, array: np.ndarray) -> SSAValue:
    return add(block, relay.ConstantOp.from_numpy(np.asarray(array, np.float32)))


def random(shape: Shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def lower(module: ModuleOp) -> ModuleOp:
    """A lowered copy of `module`, checked to keep to the loop-level contract."""
    lowered = module.clone()
    ConvertRelayToLoopsPass().apply(make_context(), lowered)
    lowered.verify()
    check_contract(lowered)
    return lowered


CONTRACT_OPS = {
    "func.func", "func.call", "func.return",
    "arith.constant", "arith.addf", "arith.mulf", "arith.negf",
    "arith.addi", "arith.muli",
    "arith.divui", "arith.remui",
    "scf.for", "scf.yield",
    "memref.alloc", "memref.dealloc", "memref.load", "memref.store",
    "memref.global", "memref.get_global", "memref.view",
}  # fmt: skip
"""The ops of docs/architecture.md these lowerings (and the tests' models) produce."""


def check_contract(module: ModuleOp) -> None:
    """Contract ops only; a constant's buffer is never written or freed."""
    for op in module.walk():
        if op is module:
            continue
        assert op.name in CONTRACT_OPS, f"{op.name} is not loop-level IR"
        if isinstance(op, memref.GlobalOp):
            assert op.sym_visibility.data == "private" and op.constant is not None
            assert isinstance(op.initial_value, DenseIntOrFPElementsAttr)
            assert len(op.initial_value) == op.type.element_count()
            assert op.parent_op() is module
        if isinstance(op, memref.StoreOp | memref.DeallocOp):
            assert not isinstance(op.memref.owner, memref.GetGlobalOp), op.name


@register_impls
class IndexDivision(InterpreterFunctions):
    """`arith.divui`/`remui`, which xDSL 0.74's interpreter lacks."""

    @impl(arith.DivUIOp)
    def run_divui(self, interp: Interpreter, op: arith.DivUIOp, args: PythonValues):
        return (args[0] // args[1],)

    @impl(arith.RemUIOp)
    def run_remui(self, interp: Interpreter, op: arith.RemUIOp, args: PythonValues):
        return (args[0] % args[1],)


def check(module: ModuleOp, *inputs: np.ndarray, interpret: bool = True) -> None:
    """The host JIT and the checked interpreter give exactly the reference's results."""
    want = byoc.run_reference(module, inputs)
    got = byoc.compile(module, targets=[])(*inputs)
    got = list(got) if isinstance(got, list | tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    if interpret:
        lowered = lower(module)
        _, outs = run(lowered, "main", inputs, [w.shape for w in want], IndexDivision())
        for g, w in zip(outs, want):
            # xDSL's interpreter computes f32 arithmetic in Python floats, so a
            # fused chain (no f32 buffer in between) is not rounded per op.
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)


def test_every_shape_op_has_a_lowering():
    assert set(relay.SHAPE_OPS) <= set(LOWERINGS)


# --- Reshape and its kin ----------------------------------------------------------

RESHAPES = [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (0, -1)),
    ((2, 3, 4), (0, 0, -1)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (0, -2)),  # the same shape
    ((2, 3, 4), (-3, 0)),
    ((6, 4), (-4, 2, -1, 0)),
    ((6, 4), (3, 8)),  # split differently on both sides: division
    ((6, 4), (3, 1, 8)),
    ((4, 6, 5), (2, 2, 30)),  # an unflatten group, then a flatten group
    ((2, 3, 4, 5), (5, 4, 3, 2)),  # one group of four dims on each side
    ((2, 1, 3), (3, 1, 2)),
    ((5,), (1, 5, 1)),
    ((), (1, 1)),
    ((1, 1, 1), ()),
    ((1,), (-1,)),
    ((0, 3), (3, -1)),  # no elements
]


@pytest.mark.parametrize(("shape", "newshape"), RESHAPES, ids=str)
def test_reshape(shape, newshape):
    check(model([shape], unary(lambda x: relay.ReshapeOp(x, newshape))), random(shape))


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (1, 1), (2, 1, 3, 1, 4), (3, 4)], ids=str)
def test_batch_flatten(shape):
    check(model([shape], unary(relay.BatchFlattenOp)), random(shape))


SQUEEZES = [
    ((1, 3, 1, 4), None),
    ((1, 3, 1, 4), [0]),
    ((1, 3, 1, 4), [-2]),
    ((1, 3, 1, 4), [0, 2]),
    ((1, 3, 1, 4), []),
    ((1,), None),
    ((1, 1, 1, 1), None),
    ((2, 1), [-1]),
    ((3,), None),
]


@pytest.mark.parametrize(("shape", "axis"), SQUEEZES, ids=str)
def test_squeeze(shape, axis):
    check(model([shape], unary(lambda x: relay.SqueezeOp(x, axis))), random(shape))


EXPAND_DIMS = [
    ((3, 4), 0, 1),
    ((3, 4), 1, 1),
    ((3, 4), 2, 1),
    ((3, 4), -1, 1),
    ((3, 4), -3, 2),
    ((3, 4), 1, 0),
    ((), 0, 1),
    ((), -1, 3),
    ((2, 1, 3, 1), 4, 1),
]


@pytest.mark.parametrize(("shape", "axis", "num_newaxis"), EXPAND_DIMS, ids=str)
def test_expand_dims(shape, axis, num_newaxis):
    module = model([shape], unary(lambda x: relay.ExpandDimsOp(x, axis, num_newaxis)))
    check(module, random(shape))


def test_reshape_groups_need_no_division_when_one_side_is_one_dim():
    """Flattening reads with plain indices, unflattening writes with them: one
    loop per dimension of the side with more (size-1 dimensions get none)."""
    cases = [((2, 3, 4), (6, 4), 3), ((4, 6, 5), (2, 2, 30), 4), ((1, 3, 1, 4), (3, 4), 2)]
    for shape, newshape, loops in cases:
        lowered = lower(model([shape], unary(lambda x: relay.ReshapeOp(x, newshape))))
        names = [op.name for op in lowered.walk()]
        assert "arith.divui" not in names and "arith.remui" not in names
        assert names.count("scf.for") == loops


# --- Transpose and concatenate -------------------------------------------------------

TRANSPOSES = [
    ((), None),
    ((5,), None),
    ((1, 5), None),
    ((3, 4), [1, 0]),
    ((3, 4), [0, 1]),
    *(((2, 3, 4), list(p)) for p in itertools.permutations(range(3))),
    ((2, 3, 4), [-1, 0, -2]),
    ((1, 1, 4), [2, 0, 1]),
    ((2, 3, 4, 5), None),
    ((2, 3, 4, 5), [0, 2, -1, 1]),
    ((2, 1, 3, 4), [3, 1, 0, 2]),
    ((0, 3), None),
]


@pytest.mark.parametrize(("shape", "axes"), TRANSPOSES, ids=str)
def test_transpose(shape, axes):
    check(model([shape], unary(lambda x: relay.TransposeOp(x, axes))), random(shape))


CONCATENATES = [
    ([(2, 3)], 0),
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 5), (2, 1)], 1),
    ([(2, 3), (2, 5)], -1),
    ([(3,), (1,), (2,)], 0),
    ([(3,), (2,)], -1),
    ([(2, 3, 4), (2, 1, 4), (2, 2, 4)], 1),
    ([(2, 3, 4), (2, 3, 4)], -3),
    ([(2, 3, 4), (2, 3, 1)], 2),
    ([(1, 2, 3, 4), (1, 2, 3, 1)], 3),
    ([(1, 2, 3, 4), (2, 2, 3, 4)], -4),
    ([(1, 2, 3, 4), (1, 2, 2, 4), (1, 2, 1, 4)], -2),
    ([(1, 1), (1, 1)], 1),
    ([(2, 0), (2, 3)], 1),
]


@pytest.mark.parametrize(("shapes", "axis"), CONCATENATES, ids=str)
def test_concatenate(shapes, axis):
    module = model(shapes, lambda block, args: [add(block, relay.ConcatenateOp(args, axis))])
    check(module, *(random(s, seed) for seed, s in enumerate(shapes)))


def test_concatenate_one_value_with_itself():
    module = model([(2, 3)], lambda b, args: [add(b, relay.ConcatenateOp([args[0]] * 3, 1))])
    check(module, random((2, 3)))


def test_data_movement_chain_with_computation():
    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        x, y = args
        t = add(b, relay.TransposeOp(x, [1, 0, 2]))  # 3x2x4
        r = add(b, relay.ReshapeOp(t, [0, -1]))  # 3x8
        s = add(b, relay.AddOp(r, y))  # 3x8
        c = add(b, relay.ConcatenateOp([s, r], 0))  # 6x8
        e = add(b, relay.ExpandDimsOp(c, 0))  # 1x6x8
        return [add(b, relay.BatchFlattenOp(e)), t]

    check(model([(2, 3, 4), (8,)], body), random((2, 3, 4)), random((8,), 1))


# --- Constants ----------------------------------------------------------------------


def globals_of(module: ModuleOp) -> list[memref.GlobalOp]:
    return [op for op in module.ops if isinstance(op, memref.GlobalOp)]


@pytest.mark.parametrize("targets", [[], ["ccompiler"]])
def test_constant_with_computation(targets):
    weight, bias = random((3, 4), 1), random((4,), 2)

    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        product = add(b, relay.MultiplyOp(args[0], constant(b, weight)))
        return [add(b, relay.AddOp(product, constant(b, bias)))]

    module = model([(2, 3, 4)], body)
    x = random((2, 3, 4))
    # With ccompiler the constants stay on the host and are passed to the kernel.
    got = byoc.compile(module, targets=targets)(x)
    np.testing.assert_array_equal(got, byoc.run_reference(module, [x])[0])
    np.testing.assert_array_equal(got, x * weight + bias)
    lowered = lower(module)
    assert [g.sym_name.data for g in globals_of(lowered)] == [
        "__constant_3x4xf32",
        "__constant_4xf32",
    ]
    # No buffer is allocated: none for the constants, and the product is fused
    # into the add.
    assert sum(isinstance(op, memref.AllocOp) for op in lowered.walk()) == 0


def test_constant_returned_directly():
    values = random((2, 3), 3)

    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        c = constant(b, values)
        return [c, add(b, relay.AddOp(args[0], c)), c, constant(b, np.float32(7.5))]

    module = model([(2, 3)], body)
    check(module, random((2, 3)))
    lowered = lower(module)
    # Copied into each output that returns it: the global is never an output.
    assert sum(isinstance(op, memref.StoreOp) for op in lowered.walk()) == 4


def test_one_constant_used_twice_is_one_read_only_buffer():
    values = random((4, 3), 4)

    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        c = constant(b, values)
        s = add(b, relay.AddOp(args[0], c))
        t = add(b, relay.TransposeOp(c))
        return [add(b, relay.MultiplyOp(s, c)), t]

    module = model([(4, 3)], body)
    check(module, random((4, 3)))
    lowered = lower(module)
    assert len(globals_of(lowered)) == 1
    assert sum(isinstance(op, memref.GetGlobalOp) for op in lowered.walk()) == 1


def test_equal_constants_share_a_global_and_names_stay_unique():
    a, b = random((2, 2), 5), random((2, 2), 6)

    def body(blk: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        x = add(blk, relay.AddOp(args[0], constant(blk, a)))
        y = add(blk, relay.AddOp(x, constant(blk, a)))
        return [add(blk, relay.AddOp(y, constant(blk, b)))]

    module = model([(2, 2)], body)
    # A symbol of the module already has the name a global would take.
    taken = func.FuncOp.external("__constant_2x2xf32", [], [])
    module.body.block.add_op(taken)
    check(module, random((2, 2)), interpret=False)
    names = [g.sym_name.data for g in globals_of(lower(module))]
    assert names == ["__constant_2x2xf32_0", "__constant_2x2xf32_1"]


def test_unused_constant_makes_no_global():
    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        constant(b, random((100,)))
        return [add(b, relay.NegativeOp(args[0]))]

    module = model([(3,)], body)
    assert not globals_of(lower(module))
    check(module, random((3,)))


def test_splat_and_rank0_constants_have_every_element():
    splat = DenseIntOrFPElementsAttr(
        TensorType(f32, (3, 4)), BytesAttr(np.float32(2.5).tobytes())
    )

    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        s = add(b, relay.ConstantOp(splat))
        r = constant(b, np.float32(-1.0))
        return [add(b, relay.MultiplyOp(add(b, relay.AddOp(args[0], s)), r))]

    module = model([(3, 4)], body)
    x = random((3, 4))
    check(module, x)
    lowered = globals_of(lower(module))
    assert [len(g.initial_value) for g in lowered] == [12, 1]  # type: ignore[arg-type]


def test_dense_resource_constant():
    text = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = relay.constant dense_resource<lower_shapes_blob> : tensor<2xf32>
      %1 = relay.add %x, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      func.return %1 : tensor<2xf32>
    }
    {-#
      dialect_resources: {
        builtin: {
          lower_shapes_blob: "0x040000000000803F00000040"
        }
      }
    #-}
    """
    module = Parser(make_context(), text).parse_module()
    module.verify()
    (weights,) = globals_of(lower(module))
    assert isinstance(weights.initial_value, DenseIntOrFPElementsAttr)
    check(module, np.array([10.0, 20.0], np.float32))


# --- The C exit ------------------------------------------------------------------------

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def run_c(module: ModuleOp, inputs: Sequence[np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    """Lower `module`'s one function as an outlined kernel through emitc to C,
    compile it with gcc -Wall -Wextra -Werror and call it with numpy arrays."""
    want = byoc.run_reference(module, inputs, entry="kernel")
    kernel = module.clone()
    function = kernel.ops.first
    assert isinstance(function, func.FuncOp)
    function.attributes[COMPILER_ATTR] = StringAttr("ccompiler")
    ctx = make_context()
    ConvertRelayToLoopsPass().apply(ctx, kernel)
    check_contract(kernel)
    ConvertLoopsToEmitCPass().apply(ctx, kernel)
    kernel.verify()
    source = emit_c(kernel)
    n = len(inputs) + len(want)
    lib = Library(source, f"int32_t kernel({', '.join(['float*'] * n)});", tmp_path)
    outs = [np.full(w.shape, np.nan, np.float32) for w in want]
    assert lib("kernel", *(np.ascontiguousarray(x) for x in inputs), *outs) == 0
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got, w)
    return outs


@needs_gcc
def test_c_exit_transpose_and_concatenate(tmp_path):
    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        x, y = args
        t = add(b, relay.TransposeOp(x, [2, 0, -2]))  # 4x2x3
        return [t, add(b, relay.ConcatenateOp([x, y, x], -1))]

    module = model([(2, 3, 4), (2, 3, 1)], body, "kernel")
    run_c(module, [random((2, 3, 4)), random((2, 3, 1), 1)], tmp_path)


@needs_gcc
def test_c_exit_reshapes(tmp_path):
    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        (x,) = args
        return [
            add(b, relay.ReshapeOp(x, [3, 8])),  # divisions
            add(b, relay.BatchFlattenOp(x)),
            add(b, relay.ExpandDimsOp(add(b, relay.SqueezeOp(x, [])), 1, 2)),
        ]

    run_c(model([(6, 4)], body, "kernel"), [random((6, 4))], tmp_path)


@needs_gcc
def test_c_exit_constants(tmp_path):
    weight = random((3, 4), 7)

    def body(b: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        c = constant(b, weight)
        s = add(b, relay.AddOp(args[0], c))
        return [s, c, add(b, relay.TransposeOp(c))]

    run_c(model([(2, 3, 4)], body, "kernel"), [random((2, 3, 4))], tmp_path)
