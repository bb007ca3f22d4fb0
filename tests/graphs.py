"""Building relay graphs through the Python API, and checking IR invariants, for tests."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FunctionType,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Block, Operation, Region, SSAValue

import byoc
from byoc.dialects import relay

UNARY = {op.name: op for op in relay.UNARY_OPS}
BINARY = {op.name: op for op in relay.BINARY_OPS}


def build_main(
    n_inputs: int,
    ops: Sequence[tuple[str, Sequence[int]]],
    returns: Sequence[int],
    shape: Sequence[int] = (4,),
) -> ModuleOp:
    """`@main` over `n_inputs` tensors; `ops` are (op name, operand value indices).

    Values are numbered: inputs first, then each op's result in order.
    """
    typ = TensorType(f32, shape)
    block = Block(arg_types=[typ] * n_inputs)
    values: list[SSAValue] = list(block.args)
    for name, operands in ops:
        args = [values[i] for i in operands]
        op = UNARY[name](args[0]) if name in UNARY else BINARY[name](*args)
        block.add_op(op)
        values.append(op.results[0])
    block.add_op(func.ReturnOp(*[values[i] for i in returns]))
    main = func.FuncOp(
        "main",
        FunctionType.from_lists([typ] * n_inputs, [typ] * len(returns)),
        Region(block),
    )
    return ModuleOp([main])


def check_dominance(module: ModuleOp) -> None:
    """Every operand is defined before its use in the same or an enclosing block."""
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        stack: list[tuple[Block, set[SSAValue]]] = [(function.body.block, set())]
        while stack:
            block, outer = stack.pop()
            defined = set(outer) | set(block.args)
            for op in block.ops:
                for operand in op.operands:
                    assert operand in defined, f"{op.name} uses a value before its definition"
                for region in op.regions:
                    for inner in region.blocks:
                        stack.append((inner, defined))
                defined.update(op.results)


def graph_ops(module: ModuleOp) -> list[Operation]:
    """Every relay op of the module."""
    return [op for op in module.walk() if op.name.startswith("relay.")]


TANH_CHAIN = """\
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.tanh %0 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %3 = relay.subtract %2, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %3 : tensor<10x10xf32>
}
"""
"""add -> tanh -> multiply -> subtract: tanh splits it into two ccompiler functions."""


def build(
    shapes: Sequence[Sequence[int]],
    body: Callable[..., SSAValue | Sequence[SSAValue]],
    element: Float32Type | Float64Type = f32,
) -> ModuleOp:
    """`@main` over tensors of `shapes`; `body(emit, *args)` returns the results."""
    block = Block(arg_types=[TensorType(element, s) for s in shapes])

    def emit(op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    results = body(emit, *block.args)
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    block.add_op(func.ReturnOp(*results))
    main = func.FuncOp(
        "main",
        FunctionType.from_lists([a.type for a in block.args], [r.type for r in results]),
        Region(block),
    )
    module = ModuleOp([main])
    module.verify()
    return module


def weight_scaled_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    """Random inputs; operands after the first of rank >= 2 are scaled like weights."""
    rng = np.random.default_rng(seed)
    main = next(iter(module.ops))
    assert isinstance(main, func.FuncOp)
    arrays = []
    for i, typ in enumerate(main.function_type.inputs.data):
        assert isinstance(typ, TensorType)
        shape = tuple(typ.get_shape())
        dtype = np.float64 if isinstance(typ.element_type, Float64Type) else np.float32
        x = rng.standard_normal(shape)
        if i > 0 and len(shape) >= 2:
            x /= math.sqrt(math.prod(shape[1:]))  # keeps sums O(1)
        arrays.append(x.astype(dtype))
    return arrays


def check_against_reference(
    module: ModuleOp,
    targets: Sequence[str],
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    cache: bool = True,
):
    """Compile `module` for `targets`, run it on weight-scaled random inputs, and
    compare every output (shape, dtype, values) with the reference interpreter."""
    import byoc

    model = byoc.compile(module, targets=list(targets), cache=cache)
    args = weight_scaled_inputs(module, seed)
    got = model(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    want = byoc.run_reference(module, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return model


def host_ir(model) -> str:
    """The partitioned @main (everything before the outlined functions)."""
    return model.partitioned_ir.split("func.func private")[0]


def model_matches_reference(
    model: byoc.CompiledModule, module: ModuleOp, inputs: list[np.ndarray], rtol: float, atol: float
) -> None:
    """`model(*inputs)` (a CompiledModule of `module`) matches the reference."""
    got = model(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    want = byoc.run_reference(module, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
