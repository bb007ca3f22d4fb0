"""Codegen that can fail safely: partition, generate, and re-partition what failed.

When a backend's codegen raises, or its C does not compile, for some of its
functions, those functions are found (by halving the failing batch) and
their ops are partitioned again with that backend excluded for them: the
remaining backends and the host take them. Each such function is reported
once, as a `Fallback` and a warning. The loop ends because every round
excludes at least one more (op, backend) pair; `fallback=False` makes the
first failure an error instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from byoc.backends import Artifact, Backend
from byoc.backends.errors import BackendError, Fallback, warn
from byoc.passes.annotate import is_graph_op


@dataclass
class Generated:
    """A partitioned model's code: the backends' artifacts and the host's object."""

    partitioned_ir: str
    """The module before renaming, as `byoc-opt --partition` prints it."""
    prefix: str
    artifacts: list[Artifact]
    placement: dict[str, int]
    host_object: Any
    layout: Any
    """Where the host's weights sit in its blob."""
    fallbacks: list[Fallback] = field(default_factory=list)

    @property
    def entry_name(self) -> str:
        return f"{self.prefix}entry"

    @property
    def weights_symbol(self) -> str:
        return f"{self.prefix}weights"


def graph_ops(module: ModuleOp) -> list[Operation]:
    """The graph ops of `module` in walk order: the same positions in a clone."""
    return [op for op in module.walk() if is_graph_op(op)]


def generate(
    module: ModuleOp,
    backends: Sequence[Backend],
    fallback: bool = True,
    key: str | None = None,
    io: Any = None,
    simplify: bool = True,
    reload: Callable[[], ModuleOp] | None = None,
) -> Generated:
    """Partition `module` (consumed) for `backends`, run their codegens and
    lower the host, re-partitioning the functions a backend fails on (see the
    module docstring). Symbols are named by `key` (the cache key), else by the
    partitioned module; `io` (`@main`'s input and output TensorSpecs) signs
    the host code (build.codegen_stage).

    `reload` gives `module` afresh (as loaded, before `prepare_graph`) for
    another round; without it a copy is kept from the start. A kept copy
    shares the weights' buffers, so it holds every weight a backend replaces
    (cblas packs them) alive beside its replacement: VGG-19's peak memory was
    2.7x its file with the copy, a reload frees them as they are packed."""
    from byoc.runtime.build import codegen_stage, partition_stage, prepare_graph

    prepare_graph(module, simplify)  # first: positions are of the rewritten graph
    pristine = module.clone() if backends and fallback and reload is None else None
    excluded: dict[int, set[str]] = {}
    failed: list[tuple[Fallback, list[int]]] = []
    while True:
        ops = graph_ops(module)
        position = {op: i for i, op in enumerate(ops)}
        exclude = {ops[i]: frozenset(names) for i, names in excluded.items()}
        # Simplified once above: ops keep their identity (and positions).
        parts = partition_stage(module, backends, key, not fallback, exclude, False)
        artifacts, failures, host_object, layout = codegen_stage(parts, io)
        if not failures:
            break
        if not fallback:
            raise failures[0][1]
        copies: dict[str, list[str]] = {}
        for removed, kept in parts.merged.items():
            copies.setdefault(kept, []).append(removed)
        progress = False
        for symbol, error, backend in failures:
            held = [op for s in (symbol, *copies.get(symbol, ())) for op in parts.held[s][1]]
            indices = [position[op] for op in held if op in position]
            for i in indices:
                progress |= backend not in excluded.setdefault(i, set())
                excluded[i].add(backend)
            name = symbol.removeprefix(parts.prefix)
            ops_held = tuple(ops[i].name for i in indices)
            failed.append((Fallback(backend, name, ops_held, error.detail), indices))
        if not progress:  # cannot happen while ops keep their identity; never loop
            raise failures[0][1]
        if pristine is not None:
            module = pristine.clone()
        else:
            assert reload is not None
            module = reload()
            prepare_graph(module, simplify)  # as above: the same graph, the same positions
    owners = {op: backend for backend, held in parts.held.values() for op in held}
    generated = Generated(
        parts.partitioned_ir, parts.prefix, artifacts, parts.placement, host_object, layout
    )
    for record, indices in failed:
        placement: dict[str, int] = {}
        for i in indices:
            # The op itself, moved where the last round put it.
            where = owners.get(ops[i], "host")
            placement[where] = placement.get(where, 0) + 1
        fallen = Fallback(
            record.backend, record.function, record.ops, record.reason, placement, tuple(indices)
        )
        generated.fallbacks.append(fallen)
        warn(str(fallen))
    return generated


def generate_functions(
    backend: Backend, functions: Sequence[func.FuncOp]
) -> tuple[list[Artifact], list[tuple[func.FuncOp, BackendError]]]:
    """Artifacts for `functions`, and the functions `backend` fails on.

    All at once first (one library); a failing batch is halved until each
    failure is one function, so k bad functions of n cost O(k log n) runs.
    """
    from byoc.runtime.build import run_codegen

    try:
        return [run_codegen(backend, ModuleOp([f.clone() for f in functions]))], []
    except BackendError as err:
        if len(functions) == 1:
            return [], [(functions[0], err)]
    half = len(functions) // 2
    made, broken = generate_functions(backend, functions[:half])
    more, worse = generate_functions(backend, functions[half:])
    return made + more, broken + worse


def partition_again(
    module: ModuleOp,
    backends: Sequence[Backend],
    fallbacks: Sequence[Fallback],
    simplify: bool = True,
) -> None:
    """Partition `module` (a fresh load of a model's source) as `generate` did,
    given the fallbacks it recorded, without running any codegen."""
    from byoc.runtime.build import partition_for, prepare_graph

    prepare_graph(module, simplify)
    ops = graph_ops(module)
    excluded: dict[Operation, set[str]] = {}
    for record in fallbacks:
        for i in record.positions:
            if i < len(ops):
                excluded.setdefault(ops[i], set()).add(record.backend)
    partition_for(
        module, backends, False, {op: frozenset(n) for op, n in excluded.items()}, False
    )
