"""Editing relay graphs in place, in time linear in the graph: what the
simplification passes share.

The passes sweep a block once in program order. They rewire from the user's
side (`replace_value` walks the uses of one value once), insert new ops next
to the op they replace, and leave dead ops to one backward sweep at the end
(`remove_dead_ops`), never per-op PatternRewriter replacements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.dialects import relay
from byoc.passes.annotate import host_functions
from byoc.passes.dead_code import remove_dead_ops
from byoc.passes.speed import erase_op, garbage_collector_paused
from byoc.runtime.reference import numpy_dtype


def graph_blocks(module: ModuleOp) -> Iterator[Block]:
    """The bodies of the functions that hold a relay graph (not outlined ones)."""
    for function in host_functions(module):
        yield function.body.block


def constant_of(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if a `relay.constant` defines it (read-only), else None."""
    owner = value.owner
    if isinstance(owner, relay.ConstantOp):
        return owner.to_numpy()
    return None


def shape_of(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def insert_before(op: Operation, anchor: Operation) -> SSAValue:
    """Insert `op` before `anchor`, at `anchor`'s source location; its result."""
    block = anchor.parent
    assert block is not None
    location = getattr(anchor, "location", None)
    if location is not None:
        op.location = location
    block.insert_op_before(op, anchor)
    return op.results[0]


def new_constant(
    array: np.ndarray, like: SSAValue, anchor: Operation, name: str | None = None
) -> SSAValue:
    """A `relay.constant` holding `array` with `like`'s element type, inserted
    before `anchor`."""
    typ = like.type
    assert isinstance(typ, TensorType)
    data = np.asarray(array, dtype=numpy_dtype(typ.element_type))
    value = insert_before(relay.ConstantOp.from_numpy(data), anchor)
    value.name_hint = name
    return value


def replace_value(old: SSAValue, new: SSAValue) -> None:
    """Make every user of `old` read `new` (same type) instead."""
    assert old.type == new.type, f"{old.type} != {new.type}"
    name = old.name_hint
    old.replace_all_uses_with(new)
    if new.name_hint is None:
        new.name_hint = name


def erase_dead(op: Operation | None) -> None:
    """Erase `op` if nothing uses its results, then every producer of its
    operands that this leaves unused, and so on upstream (each op at most
    once). Called on the op a sweep visits, it only erases that op and ops
    before it, so the sweep's next op stays valid."""
    work = [op]
    while work:
        op = work.pop()
        if (
            op is None
            or op.parent is None
            or not op.name.startswith("relay.")
            or any(r.first_use is not None for r in op.results)
        ):
            continue
        producers = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        erase_op(op)
        work.extend(producers)


def replace_op(op: Operation, new: SSAValue) -> None:
    """Replace the one result of `op` by `new`, then erase `op` and whatever
    upstream this leaves unused. Single-use checks later in the sweep then
    see only live users."""
    replace_value(op.results[0], new)
    erase_dead(op)


def set_operand(op: Operation, index: int, value: SSAValue) -> None:
    """Make `op` read `value` as operand `index`, erasing the old operand's
    producer if that left it unused."""
    old = op.operands[index]
    op.operands[index] = value
    erase_dead(old.owner if isinstance(old.owner, Operation) else None)


def is_splat(array: np.ndarray, value: float) -> bool:
    """Whether every element of `array` equals `value`."""
    return bool(array.size) and bool(np.all(array == value))


def sweep(module: ModuleOp, rewrite: Callable[[Operation], object]) -> None:
    """Call `rewrite` on every op of every graph block in program order (ops
    it inserts are not visited), then remove the ops left dead; the garbage
    collector is paused throughout."""
    with garbage_collector_paused():
        for block in graph_blocks(module):
            op = block.first_op
            while op is not None:
                following = op.next_op
                if op.name.startswith("relay.") and op.results:
                    rewrite(op)
                op = following
        remove_dead_ops(module)


@dataclass(frozen=True)
class SweepPass(ModulePass):
    """A graph pass made of one `rewrite(op)` applied in program order."""

    name = "byoc-sweep"

    def rewrite(self, op: Operation) -> object:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sweep(op, self.rewrite)
