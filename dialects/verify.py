"""What a whole module must satisfy beyond each op's own verifier.

xDSL verifies ops one at a time: it does not check that a value is defined
before it is used, nor that an `extern.call` matches the function it names,
and its symbol lookups scan the module (quadratic over many calls). These
checks own the rest of the IR's meaning, each linear in the module's size:

- dominance: every operand is defined before its use (in program order
  within a block, by dominating blocks across a CFG region), never by the op
  itself;
- `extern.call`: the callee exists, is an outlined function, its types match
  the call's, and no chain of calls leads back to its caller;
- `@main`: returns at least one value;
- graph ops (relay, qnn) live in functions, never at module level;
- sizes: every tensor and memref fits the address space, the 64-bit index
  type, and the ceiling on one buffer (`$BYOC_MAX_BUFFER_BYTES`);
- float tensors are f16, f32 or f64 (no bf16: neither numpy nor the host
  code computes in it).

Failures are `OpVerifyException`s carrying the op, so a caller can name its
place (frontend/parse.py `verify_module`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.extern import COMPILER_ATTR, CallOp

INDEX_LIMIT = 2**63 - 1
"""Largest element count or byte offset the 64-bit `index` type holds."""

ADDRESS_SPACE_BYTES = 2**47
"""User address space of x86-64 and AArch64 Linux (128 TiB): no buffer is larger."""

MAX_BUFFER_ENV = "BYOC_MAX_BUFFER_BYTES"
"""Environment variable lowering the ceiling on one buffer, in bytes."""


class OpVerifyException(VerifyException):
    """A verification failure about one op (`op`), worded `'<op name>': ...`."""

    def __init__(self, op: Operation, message: str):
        super().__init__(f"'{op.name}': {message}")
        self.op = op


def max_buffer_bytes() -> int:
    """The ceiling on one buffer: `$BYOC_MAX_BUFFER_BYTES`, else the address space."""
    text = os.environ.get(MAX_BUFFER_ENV, "").strip()
    if not text:
        return ADDRESS_SPACE_BYTES
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if value <= 0:
        raise VerifyException(
            f"${MAX_BUFFER_ENV}={text!r} is not a positive number of bytes"
        )
    return min(value, ADDRESS_SPACE_BYTES)


def verify_structure(
    module: ModuleOp, limit: int | None = None, sizes: bool = True
) -> None:
    """Every check of this module on `module`; `limit` overrides
    `max_buffer_bytes()`; `sizes=False` when the caller checked them already."""
    if sizes:
        verify_sizes(module, max_buffer_bytes() if limit is None else limit)
    calls = verify_dominance(module)
    verify_calls(module, calls)
    verify_main(module)
    verify_top_level(module)


def verify_top_level(module: ModuleOp) -> None:
    """No graph op at module level: no pass looks for one there, so it
    reached the LLVM lowering and failed without a place."""
    for op in module.body.block.ops:
        if op.name.startswith("relay."):
            raise OpVerifyException(
                op, "is at module level; a model's ops belong in a function"
            )


# --- Dominance ---------------------------------------------------------------------


def _where(value: SSAValue) -> str:
    owner = value.owner
    if isinstance(owner, Operation):
        loc = _location(owner)
        return f"the result of '{owner.name}'" + (f" at {loc}" if loc else "")
    return "a block argument"


def _location(op: Operation) -> str | None:
    from xdsl.dialects.builtin import FileLineColLoc

    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def _check_operands(op: Operation, visible: set[SSAValue]) -> None:
    for index, operand in enumerate(op.operands):
        if operand in visible:
            continue
        if operand.owner is op:
            raise OpVerifyException(op, f"operand {index} is the op's own result")
        owner = operand.owner
        block = owner.parent_block() if isinstance(owner, Operation) else owner
        problem = (
            "is used before its definition"
            if block is op.parent_block()
            else "is defined where it does not dominate this use"
        )
        raise OpVerifyException(op, f"operand {index} ({_where(operand)}) {problem}")


def verify_dominance(root: Operation) -> list[CallOp]:
    """Every operand of every op under `root` is defined where it dominates its
    use; returns the `extern.call`s met on the way (for `verify_calls`).

    One walk: `visible` holds the values defined so far on the path from the
    root (block arguments, earlier results, values of dominating blocks);
    values leave it when their block or region is done, so each value is
    added and removed once.
    """
    visible: set[SSAValue] = set()
    calls: list[CallOp] = []
    for region in root.regions:
        _check_region(region, visible, calls)
    return calls


def _check_region(region: Region, visible: set[SSAValue], calls: list[CallOp]) -> None:
    blocks = list(region.blocks)
    if len(blocks) <= 1:
        for block in blocks:
            _forget(visible, _check_block(block, visible, calls))
        return
    idom = _immediate_dominators(blocks)
    children: dict[Block, list[Block]] = {b: [] for b in blocks}
    for block in blocks[1:]:
        parent = idom.get(block)
        if parent is not None:
            children[parent].append(block)
    # Depth-first over the dominator tree: a block sees what its dominators define.
    stack: list[tuple[Block, list[SSAValue] | None]] = [(blocks[0], None)]
    while stack:
        block, added = stack.pop()
        if added is not None:
            _forget(visible, added)
            continue
        added = _check_block(block, visible, calls)
        stack.append((block, added))
        stack.extend((child, None) for child in reversed(children[block]))
    for block in blocks:  # unreachable: only what is above the region, and its own
        if block not in idom and block is not blocks[0]:
            _forget(visible, _check_block(block, visible, calls))


def _check_block(
    block: Block, visible: set[SSAValue], calls: list[CallOp]
) -> list[SSAValue]:
    """Checks `block`'s ops in order; returns the values it added to `visible`."""
    added: list[SSAValue] = list(block.args)
    visible.update(block.args)
    for op in block.ops:
        _check_operands(op, visible)
        if isinstance(op, CallOp):
            calls.append(op)
        for region in op.regions:
            # An op's results are not visible in its own regions.
            _check_region(region, visible, calls)
        visible.update(op.results)
        added.extend(op.results)
    return added


def _forget(visible: set[SSAValue], values: Iterable[SSAValue]) -> None:
    for value in values:
        visible.discard(value)


def _successors(block: Block) -> Sequence[Block]:
    last = block.last_op
    return last.successors if last is not None else ()


def _immediate_dominators(blocks: Sequence[Block]) -> dict[Block, Block]:
    """Immediate dominators of the blocks reachable from `blocks[0]` (Cooper,
    Harvey and Kennedy's iteration over reverse postorder); the entry maps to
    itself, unreachable blocks are absent."""
    entry = blocks[0]
    order: list[Block] = []  # postorder
    seen = {entry}
    stack: list[tuple[Block, Iterator[Block]]] = [(entry, iter(_successors(entry)))]
    while stack:
        block, successors = stack[-1]
        for succ in successors:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(_successors(succ))))
                break
        else:
            stack.pop()
            order.append(block)
    number = {b: i for i, b in enumerate(order)}
    predecessors: dict[Block, list[Block]] = {b: [] for b in order}
    for block in order:
        for succ in _successors(block):
            if succ in predecessors:
                predecessors[succ].append(block)
    idom: dict[Block, Block] = {entry: entry}
    changed = True
    while changed:
        changed = False
        for block in reversed(order):
            if block is entry:
                continue
            new: Block | None = None
            for pred in predecessors[block]:
                if pred not in idom:
                    continue
                if new is None:
                    new = pred
                    continue
                a, b = pred, new
                while a is not b:
                    while number[a] < number[b]:
                        a = idom[a]
                    while number[b] < number[a]:
                        b = idom[b]
                new = a
            if new is not None and idom.get(block) is not new:
                idom[block] = new
                changed = True
    return idom


# --- Calls -------------------------------------------------------------------------


def _types(types: Iterable[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def symbol_table(module: ModuleOp) -> dict[str, Operation]:
    """The module's functions by name (one scan); a name defined twice is an error."""
    table: dict[str, Operation] = {}
    for op in module.body.block.ops:
        sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
        name = getattr(sym, "data", None)
        if not isinstance(name, str):
            continue
        if name in table:
            raise OpVerifyException(op, f"symbol @{name} is defined twice")
        table[name] = op
    return table


def verify_calls(module: ModuleOp, calls: Sequence[CallOp] | None = None) -> None:
    """Each `extern.call` (of `calls`, else every one in `module`) names an
    outlined function of matching type, and no chain of calls recurses."""
    table = symbol_table(module)
    if calls is None:
        calls = [op for op in module.walk() if isinstance(op, CallOp)]
    graph: dict[Operation, list[tuple[CallOp, Operation]]] = {}
    for op in calls:
        callee = _check_call(op, table)
        caller: Operation | None = op
        while caller is not None and caller.parent_op() is not module:
            caller = caller.parent_op()
        if caller is not None:
            graph.setdefault(caller, []).append((op, callee))
    _check_acyclic(graph)


def _check_call(op: CallOp, table: dict[str, Operation]) -> Operation:
    name = op.callee.string_value()
    callee = table.get(name)
    if callee is None:
        raise OpVerifyException(op, f"callee @{name} is not defined in the module")
    if not isinstance(callee, func.FuncOp) or COMPILER_ATTR not in callee.attributes:
        # Outlined: defined here, or declared (the host's view of a backend's code).
        raise OpVerifyException(
            op,
            f"callee @{name} is not an outlined function (a func.func with an "
            f"{COMPILER_ATTR} attribute)",
        )
    inputs = tuple(callee.function_type.inputs)
    outputs = tuple(callee.function_type.outputs)
    operand_types = tuple(v.type for v in op.args)
    result_types = tuple(r.type for r in op.res)
    if operand_types != inputs:
        raise OpVerifyException(
            op,
            f"operand types {_types(operand_types)} do not match the inputs of "
            f"@{name} {_types(inputs)}",
        )
    if result_types != outputs:
        raise OpVerifyException(
            op,
            f"result types {_types(result_types)} do not match the results of "
            f"@{name} {_types(outputs)}",
        )
    return callee


def _check_acyclic(calls: dict[Operation, list[tuple[CallOp, Operation]]]) -> None:
    """No function reaches itself through `extern.call`s (iterative DFS)."""
    DONE, ACTIVE = 1, 2
    state: dict[Operation, int] = {}
    for start in calls:
        if start in state:
            continue
        state[start] = ACTIVE
        path: list[Operation] = [start]
        stack = [iter(calls.get(start, ()))]
        while stack:
            for call, callee in stack[-1]:
                mark = state.get(callee)
                if mark == ACTIVE:
                    cycle = path[path.index(callee):] + [callee]
                    names = " -> ".join(f"@{_name(f)}" for f in cycle)
                    raise OpVerifyException(call, f"recursive call ({names})")
                if mark is None:
                    state[callee] = ACTIVE
                    path.append(callee)
                    stack.append(iter(calls.get(callee, ())))
                    break
            else:
                stack.pop()
                state[path.pop()] = DONE


def _name(function: Operation) -> str:
    return function.sym_name.data if isinstance(function, func.FuncOp) else function.name


# --- @main -------------------------------------------------------------------------


def verify_main(module: ModuleOp, entry: str = "main") -> None:
    """`@main`, if defined with a body, returns at least one value and ends
    in `func.return` (an empty body parses, and failed in the lowering
    without a place)."""
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry and op.body.blocks:
            if not op.function_type.outputs.data:
                raise OpVerifyException(
                    op, f"@{entry} returns nothing; a model must return at least one value"
                )
            if not isinstance(op.body.blocks[-1].last_op, func.ReturnOp):
                raise OpVerifyException(op, f"@{entry} does not end in func.return")


# --- Sizes -------------------------------------------------------------------------


def _element_bytes(element: Attribute) -> int | None:
    if isinstance(element, AnyFloat):
        return (element.bitwidth + 7) // 8
    if isinstance(element, IntegerType):
        return (element.width.data + 7) // 8
    if isinstance(element, IndexType):
        return 8
    return None


def check_shape(typ: Attribute, limit: int) -> str | None:
    """Why a tensor or memref type is too large for one buffer, or None."""
    if not isinstance(typ, TensorType | MemRefType):
        return None
    shape = typ.get_shape()
    element = _element_bytes(typ.get_element_type())
    count = 1
    for dim, size in enumerate(shape):
        if size < 0:
            return None  # dynamic: op verifiers reject it where it matters
        count *= size
        if count == 0:
            return None
        if count > INDEX_LIMIT:
            return (
                f"{typ} has more elements than the 64-bit index type holds "
                f"(dimension {dim}, of size {size}, takes it past 2^63-1)"
            )
        if element is not None and count * element > limit:
            return (
                f"{typ} would need at least {count * element} bytes (dimension "
                f"{dim}, of size {size}, takes it past the limit of {limit} bytes "
                f"for one buffer; ${MAX_BUFFER_ENV} sets it)"
            )
    return None


HOST_FLOATS = ("f16", "f32", "f64")
"""Float element types a tensor may have: those numpy, the reference and the
host code all compute in (bf16, tf32, f80, f128 are none of them)."""


def check_float(typ: Attribute) -> str | None:
    """Why a tensor's float element type is not supported, or None."""
    if not isinstance(typ, TensorType):
        return None
    element = typ.get_element_type()
    if isinstance(element, AnyFloat) and str(element) not in HOST_FLOATS:
        return f"{typ}: element type {element} is not supported ({', '.join(HOST_FLOATS)} are)"
    return None


class SizeChecker:
    """Checks types against the size limit, each distinct type once."""

    def __init__(self, limit: int):
        self.limit = limit
        self._seen: set[Attribute] = set()

    def check(self, op: Operation, types: Iterable[Attribute], what: str) -> None:
        for index, typ in enumerate(types):
            if typ in self._seen:
                continue
            problem = check_shape(typ, self.limit) or check_float(typ)
            if problem is not None:
                raise OpVerifyException(op, f"{what} {index}: {problem}")
            self._seen.add(typ)

    def check_op(self, op: Operation) -> None:
        self.check(op, op.result_types, "result")
        for region in op.regions:
            for block in region.blocks:
                self.check(op, block.arg_types, "block argument")
        if isinstance(op, func.FuncOp):
            self.check(op, op.function_type.inputs, "input")
            self.check(op, op.function_type.outputs, "result")


def verify_sizes(module: ModuleOp, limit: int) -> None:
    """No tensor or memref under `module` is larger than `limit` bytes."""
    checker = SizeChecker(limit)
    for op in module.walk():
        checker.check_op(op)
