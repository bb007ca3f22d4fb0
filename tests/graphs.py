"""Building relay graphs through the Python API, and checking IR invariants, for tests."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, Region, SSAValue

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
