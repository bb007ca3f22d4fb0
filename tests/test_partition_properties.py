"""Property tests of annotate + merge + partition on random DAGs.

For every random graph and backend mix: the partitioned program computes what
the original computes, values are defined before use (so regions form no
cycle), every op lands in exactly one place, each op runs on the first backend
that takes it, and no two functions of one backend could be merged without a
cycle.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

from byoc.backends.spec import Backend, always
from byoc.dialects.extern import COMPILER_ATTR, CallOp
from byoc.passes.annotate import annotate
from byoc.passes.merge_regions import merge_regions
from byoc.passes.partition import outline_regions, partition
from byoc.runtime.reference import run_reference
from graphs import BINARY, UNARY, build_main, check_dominance, graph_ops

OP_NAMES = sorted(UNARY) + sorted(BINARY)


def fake_backend(name: str, ops: frozenset[str]) -> Backend:
    return Backend(name, {op: always for op in ops}, codegen=lambda m: None)  # type: ignore[arg-type]


@st.composite
def graphs(draw: st.DrawFn):
    n_inputs = draw(st.integers(1, 3))
    n_ops = draw(st.integers(1, 25))
    ops = []
    for i in range(n_ops):
        name = draw(st.sampled_from(OP_NAMES))
        arity = 1 if name in UNARY else 2
        operands = [draw(st.integers(0, n_inputs + i - 1)) for _ in range(arity)]
        ops.append((name, operands))
    n_values = n_inputs + n_ops
    returns = draw(
        st.lists(st.integers(0, n_values - 1), min_size=0, max_size=3)
    ) + [n_values - 1]
    return n_inputs, ops, returns


@st.composite
def backend_mixes(draw: st.DrawFn) -> list[Backend]:
    n = draw(st.integers(1, 3))
    return [
        fake_backend(
            f"b{i}", frozenset(draw(st.sets(st.sampled_from(OP_NAMES), max_size=10)))
        )
        for i in range(n)
    ]


def reachable(block_ops: list, start) -> set:
    """Ops reachable from `start` along def-use edges within the block."""
    seen = set()
    stack = [start]
    while stack:
        op = stack.pop()
        for result in op.results:
            for use in result.uses:
                user = use.operation
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
    return seen


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    graph=graphs(),
    backends=backend_mixes(),
    seed=st.integers(0, 2**32 - 1),
    through_regions=st.booleans(),
)
def test_partition_preserves_meaning_and_is_maximal(graph, backends, seed, through_regions):
    n_inputs, ops, returns = graph
    module = build_main(n_inputs, ops, returns)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(4).astype(np.float32) for _ in range(n_inputs)]
    expected = run_reference(module, args)
    before = set(graph_ops(module))
    # The backend each op must go to: the first, in priority order, taking it.
    wanted = {
        op: next((b.name for b in backends if op.name in b.ops), None) for op in before
    }

    annotate(module, backends)
    if through_regions:  # byoc-merge-regions then byoc-outline-regions
        merge_regions(module)
        outline_regions(module)
    else:  # byoc-partition: straight from the assignment to functions
        partition(module)
    module.verify()
    check_dominance(module)

    # Same results (the same numpy operations run, so exactly equal).
    got = run_reference(module, args)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_array_equal(e, g)

    # Every op in exactly one place, on the backend it belongs to.
    after = graph_ops(module)
    assert len(after) == len(before) and set(after) == before
    functions = {
        f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)
    }
    for op in after:
        function = op.parent_op()
        assert isinstance(function, func.FuncOp)
        compiler = function.attributes.get(COMPILER_ATTR)
        assert (compiler.data if compiler else None) == wanted[op]

    # Maximality: two calls of one backend always have a path between them
    # through another op, so merging them would create a cycle.
    main_ops = list(functions["main"].body.block.ops)
    calls = [op for op in main_ops if isinstance(op, CallOp)]
    backend_of = {
        c: functions[c.callee.root_reference.data].attributes[COMPILER_ATTR] for c in calls
    }
    for i, first in enumerate(calls):
        reach = reachable(main_ops, first)
        for second in calls[i + 1 :]:
            if backend_of[first] != backend_of[second]:
                continue
            # A path first -> x -> second with x outside both.
            through = any(
                second in reachable(main_ops, x) for x in reach if x is not second
            )
            assert through, (
                f"{first.callee} and {second.callee} could be merged without a cycle"
            )


def test_deep_chain_has_no_recursion_limit():
    """A 100,000-op chain alternating backend and host ops partitions iteratively."""
    n = 100_000
    ops = [("relay.add" if i % 2 == 0 else "relay.tanh", [i] * (2 if i % 2 == 0 else 1)) for i in range(n)]
    module = build_main(1, ops, [n])
    backends = [fake_backend("b", frozenset({"relay.add"}))]
    annotate(module, backends)
    outlined = partition(module)
    assert len(outlined) == n // 2
