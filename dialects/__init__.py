"""The dialects byoc defines (relay, extern, an extended emitc) and the context loading them."""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _relay() -> Dialect:
    from byoc.dialects.relay import Relay

    return Relay


def _extern() -> Dialect:
    from byoc.dialects.extern import Extern

    return Extern


def _arith() -> Dialect:
    from byoc.dialects.arith import Arith

    return Arith


def _emitc() -> Dialect:
    from byoc.dialects.emitc import EmitC

    return EmitC


BYOC_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "relay": _relay,
    "extern": _extern,
    "emitc": _emitc,
    "arith": _arith,
}
"""byoc's own dialects by name; `emitc` and `arith` replace xDSL's ones (arith
adds `arith.remf`)."""

UPSTREAM_DIALECTS = ("builtin", "func", "math", "scf", "memref", "cf", "llvm")
"""xDSL dialects the pipeline uses."""


def make_context() -> Context:
    """A context with every dialect the byoc pipeline reads or writes."""
    from xdsl.universe import Universe

    ctx = Context()
    upstream = Universe.get_multiverse().all_dialects
    for name in UPSTREAM_DIALECTS:
        ctx.register_dialect(name, upstream[name])
    for name, factory in BYOC_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
