"""Dead graph ops: ops whose results nobody uses are removed before partitioning.

An unused op would otherwise be offloaded and computed for nothing (and a
backend would be handed code whose only effect is a dead store). One sweep
from the end of each block, so a chain of dead ops goes in linear time.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from byoc.passes.annotate import host_functions
from byoc.passes.speed import erase_op


def remove_dead_ops(module: ModuleOp) -> int:
    """Erase relay ops with no used results; returns how many went."""
    removed = 0
    for function in host_functions(module):
        op = function.body.block.last_op
        while op is not None:
            previous = op.prev_op
            if op.name.startswith("relay.") and not any(r.uses for r in op.results):
                erase_op(op)
                removed += 1
            op = previous
    return removed
