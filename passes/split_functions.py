"""byoc-split-functions: a function of more than `max-ops` ops becomes a chain of
calls to parts of at most `max-ops` ops each.

LLVM and the C compiler optimise a function in time that grows faster than its
size (a 100k-op `main` crashes GCC, an 8k-op one spends minutes in LLVM). Cut
into parts of bounded size, each optimised on its own, a model compiles in time
linear in its size:

    func.func @main(%x) {                       func.func @main(%x) {
      %0 = relay.add %x, %x                       %0 = func.call @main_part0(%x)
      ... (n ops)                      ==>        %1 = func.call @main_part1(%0)
      func.return %n                              func.return %1
    }                                           }
                                                func.func private @main_part0(%x) attributes {no_inline} {...}

Ops are cut in program order. A part takes the values it reads that are
defined before it, and returns those of its values that later parts or the
return read. Constants are not counted: a part gets its own copy of each
constant it reads (so weights stay constants, never arguments). Parts are
`no_inline`: the exits keep them apart (docs/architecture.md). Identical parts
(a chain of repeated blocks) are merged by `byoc-dedup-functions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolOpInterface

from byoc.dialects import relay
from byoc.passes.speed import garbage_collector_paused


NO_INLINE = "no_inline"
"""Unit attribute (MLIR's name) of a `func.func` the exits must not inline."""

MAX_OPS = 200
"""Ops per function the exits see at most (host `main`, a backend's C)."""


def counted(op: Operation) -> bool:
    """Whether `op` counts towards a function's size (constants do not)."""
    return not isinstance(op, (relay.ConstantOp, func.ReturnOp))


def split_functions(
    module: ModuleOp,
    max_ops: int = MAX_OPS,
    select: Callable[[func.FuncOp], bool] = lambda _: True,
) -> list[func.FuncOp]:
    """Split every selected function of `module` larger than `max_ops`; returns
    the new parts."""
    if max_ops < 1:
        raise ValueError("max_ops must be at least 1")
    symbols = {
        name.data
        for op in module.ops
        if (interface := op.get_trait(SymbolOpInterface)) is not None
        and (name := interface.get_sym_attr_name(op)) is not None
    }
    parts: list[func.FuncOp] = []
    with garbage_collector_paused():
        for function in list(module.ops):
            if isinstance(function, func.FuncOp) and function.body.blocks and select(function):
                parts += split_function(function, max_ops, symbols)
    return parts


def _fresh(base: str, symbols: set[str]) -> str:
    name, k = base, 0
    while name in symbols:
        k += 1
        name = f"{base}_{k}"
    symbols.add(name)
    return name


def split_function(function: func.FuncOp, max_ops: int, symbols: set[str]) -> list[func.FuncOp]:
    """Split one function (see the module docstring); its parts follow it in the module."""
    block = function.body.block
    work = [op for op in block.ops if counted(op)]
    if len(work) <= max_ops or any(op.regions for op in work):
        return []
    segment_of: dict[Operation, int] = {}
    for index, op in enumerate(work):
        segment_of[op] = index // max_ops
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    # The value in `function` of each original value that crossed a cut.
    outer: dict[SSAValue, SSAValue] = {}
    parts: list[func.FuncOp] = []
    module_block = function.parent_block()
    assert module_block is not None
    anchor: Operation = function
    base = function.sym_name.data + "_part"
    for start in range(0, len(work), max_ops):
        segment = work[start : start + max_ops]
        number = start // max_ops
        inputs: dict[SSAValue, int] = {}
        constants: dict[SSAValue, relay.ConstantOp] = {}
        for op in segment:
            for value in op.operands:
                owner = value.owner
                if isinstance(owner, Operation) and segment_of.get(owner) == number:
                    continue
                if isinstance(owner, relay.ConstantOp):
                    constants.setdefault(value, owner)
                elif value not in inputs:
                    inputs[value] = len(inputs)
        outputs = [
            value
            for op in segment
            for value in op.results
            if any(segment_of.get(use.operation) != number for use in value.uses)
        ]
        body = Block(arg_types=[value.type for value in inputs])
        local: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
        for value, arg in local.items():
            arg.name_hint = value.name_hint
        for value, constant in constants.items():
            copy = relay.ConstantOp(constant.value)
            copy.result.name_hint = value.name_hint
            body.add_op(copy)
            local[value] = copy.result
        for op in segment:
            op.detach()
            body.add_op(op)
            for i, value in enumerate(op.operands):
                new = local.get(value)
                if new is not None:
                    op.operands[i] = new
        body.add_op(func.ReturnOp(*outputs))
        name = _fresh(f"{base}{number}", symbols)
        part = func.FuncOp(
            name,
            FunctionType.from_lists(list(body.arg_types), [v.type for v in outputs]),
            Region(body),
            visibility="private",
        )
        part.attributes[NO_INLINE] = UnitAttr()
        module_block.insert_op_after(part, anchor)
        anchor = part
        parts.append(part)
        call = func.CallOp(
            name, [outer.get(value, value) for value in inputs], [v.type for v in outputs]
        )
        block.insert_op_before(call, ret)
        for value, result in zip(outputs, call.res):
            result.name_hint = value.name_hint
            outer[value] = result
    for i, value in enumerate(ret.operands):
        if value in outer:
            ret.operands[i] = outer[value]
    for op in list(block.ops):  # constants only the parts read now
        if isinstance(op, relay.ConstantOp) and op.result.first_use is None:
            op.detach()
            op.erase()
    return parts


def translation_units(
    module: ModuleOp,
    max_ops: int,
    kind: Callable[[func.FuncOp], object] = lambda _: None,
) -> list[ModuleOp]:
    """The functions of `module` (taken out of it) grouped in order into modules
    of at most `max_ops` ops (a larger function alone), each declaring the
    functions it calls that another module defines: C translation units a
    compiler process each, none larger than the budget. Functions of different
    `kind`s never share a unit (so units of each kind can get their own flags)."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    signatures = {f.sym_name.data: f.function_type for f in functions}
    by_kind: dict[object, list[func.FuncOp]] = {}
    for function in functions:
        by_kind.setdefault(kind(function), []).append(function)
    groups: list[list[func.FuncOp]] = []
    for same in by_kind.values():
        size = max_ops + 1  # the first of each kind starts a unit
        for function in same:
            n = sum(1 for op in function.walk() if counted(op))
            if size + n <= max_ops:
                groups[-1].append(function)
                size += n
            else:
                groups.append([function])
                size = n
    units: list[ModuleOp] = []
    for group in groups:
        defined = {f.sym_name.data for f in group}
        declared: dict[str, FunctionType] = {}
        for function in group:
            for op in function.walk():
                if isinstance(op, func.CallOp):
                    name = op.callee.root_reference.data
                    if name not in defined and name in signatures:
                        declared.setdefault(name, signatures[name])
        ops: list[Operation] = [
            func.FuncOp.external(name, list(typ.inputs), list(typ.outputs))
            for name, typ in declared.items()
        ]
        for function in group:
            function.detach()
            ops.append(function)
        units.append(ModuleOp(ops))
    return units


@dataclass(frozen=True)
class SplitFunctionsPass(ModulePass):
    """Cuts functions of more than `max_ops` ops into `no_inline` parts called in order."""

    name = "byoc-split-functions"

    max_ops: int = MAX_OPS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        split_functions(op, self.max_ops)
