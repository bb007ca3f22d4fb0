"""Elementwise fusion in convert-relay-to-loops, checked numerically on both
exits (host JIT, `targets=[]`, and the C backend, `targets=["ccompiler"]`)
against the numpy reference, plus the shape of the fused IR."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import memref, scf

import byoc
from byoc.passes.convert_relay_to_loops import MAX_FUSED_OPS, convert_relay_to_loops
from byoc.runtime.build import load_source

TARGETS = [pytest.param([], id="host"), pytest.param(["ccompiler"], id="ccompiler")]


def check(text: str, targets: list[str], seed: int = 0) -> None:
    module = load_source(text)
    main = next(op for op in module.body.block.ops if op.sym_name.data == "main")
    rng = np.random.default_rng(seed)
    args = [
        rng.uniform(0.5, 1.5, t.get_shape()).astype(np.float32)
        for t in main.function_type.inputs.data
    ]
    got = byoc.compile(text, targets=targets)(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    want = byoc.run_reference(module, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def lowered(text: str):
    module = load_source(text)
    convert_relay_to_loops(module)
    return module


def count(module, op_type) -> int:
    return sum(isinstance(op, op_type) for op in module.walk())


def outer_loops(module) -> int:
    """Loop nests at function level (one per lowered, unfused op)."""
    return sum(
        isinstance(op, scf.ForOp) and not isinstance(op.parent_op(), scf.ForOp)
        for op in module.walk()
    )


T = "tensor<16x32xf32>"
CHAIN = f"""
func.func @main(%a: {T}, %b: {T}, %c: {T}, %d: {T}) -> {T} {{
  %0 = relay.add %a, %b : ({T}, {T}) -> {T}
  %1 = relay.multiply %0, %c : ({T}, {T}) -> {T}
  %2 = relay.subtract %1, %d : ({T}, {T}) -> {T}
  func.return %2 : {T}
}}
"""

DIAMOND = f"""
func.func @main(%x: {T}, %y: {T}) -> {T} {{
  %0 = relay.add %x, %y : ({T}, {T}) -> {T}
  %1 = relay.exp %0 : ({T}) -> {T}
  %2 = relay.tanh %0 : ({T}) -> {T}
  %3 = relay.multiply %1, %2 : ({T}, {T}) -> {T}
  %4 = relay.subtract %3, %0 : ({T}, {T}) -> {T}
  func.return %4 : {T}
}}
"""

RETURNED = f"""
func.func @main(%x: {T}, %y: {T}) -> ({T}, {T}, {T}) {{
  %0 = relay.add %x, %y : ({T}, {T}) -> {T}
  %1 = relay.sqrt %0 : ({T}) -> {T}
  %2 = relay.negative %1 : ({T}) -> {T}
  %3 = relay.clip %2 {{a_min = -1.2 : f64, a_max = 0.0 : f64}} : ({T}) -> {T}
  func.return %1, %3, %1 : {T}, {T}, {T}
}}
"""

BROADCAST = f"""
func.func @main(%r: tensor<32xf32>, %s: tensor<32xf32>, %c: tensor<16x1xf32>, %x: {T}) -> {T} {{
  %0 = relay.add %r, %s : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %1 = relay.exp %c : (tensor<16x1xf32>) -> tensor<16x1xf32>
  %2 = relay.multiply %0, %1 : (tensor<32xf32>, tensor<16x1xf32>) -> {T}
  %3 = relay.add %2, %x : ({T}, {T}) -> {T}
  %4 = relay.nn.relu %3 : ({T}) -> {T}
  func.return %4 : {T}
}}
"""


def long_chain(n: int) -> str:
    lines = [f"func.func @main(%x: {T}, %y: {T}) -> {T} {{", f"  %v0 = relay.add %x, %y : ({T}, {T}) -> {T}"]
    ops = ["relay.sigmoid", "relay.negative", "relay.abs", "relay.tanh"]
    for i in range(1, n):
        if i % 5 == 0:
            lines.append(f"  %v{i} = relay.add %v{i - 1}, %x : ({T}, {T}) -> {T}")
        else:
            lines.append(f"  %v{i} = {ops[i % 4]} %v{i - 1} : ({T}) -> {T}")
    lines += [f"  func.return %v{n - 1} : {T}", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("targets", TARGETS)
@pytest.mark.parametrize(
    "text",
    [CHAIN, DIAMOND, RETURNED, BROADCAST, long_chain(MAX_FUSED_OPS + 6)],
    ids=["chain", "diamond", "returned", "broadcast", "long_chain"],
)
def test_fused_numerics(text: str, targets: list[str]) -> None:
    check(text, targets)


def test_chain_is_one_nest_without_buffers() -> None:
    module = lowered(CHAIN)
    assert outer_loops(module) == 1
    assert count(module, memref.AllocOp) == 0
    assert count(module, memref.DeallocOp) == 0


def test_diamond_keeps_the_shared_value() -> None:
    module = lowered(DIAMOND)
    # %0 (used three times) has a buffer; exp, tanh, multiply fuse into subtract.
    assert outer_loops(module) == 2
    assert count(module, memref.AllocOp) == count(module, memref.DeallocOp) == 1


def test_returned_intermediate_is_not_fused() -> None:
    module = lowered(RETURNED)
    # add fuses into sqrt (returned: computed into out0); negative into clip;
    # the second return of %1 is a copy.
    assert outer_loops(module) == 3
    assert count(module, memref.AllocOp) == 0


def test_broadcast_producers_keep_their_buffers() -> None:
    module = lowered(BROADCAST)
    # add (32) and exp (16x1) are broadcast into multiply: both keep buffers;
    # multiply, add and relu are one nest.
    assert outer_loops(module) == 3
    assert count(module, memref.AllocOp) == count(module, memref.DeallocOp) == 2


def test_fused_nests_are_capped() -> None:
    n = 3 * MAX_FUSED_OPS + 5
    module = lowered(long_chain(n))
    nests = outer_loops(module)
    assert nests == -(-n // MAX_FUSED_OPS)
    # The buffers between nests are planned statically: two, used in turn.
    assert count(module, memref.AllocOp) == count(module, memref.DeallocOp) == 2

# A 100,000-op chain (no recursion, linear time): test_relay_to_loops.py.
