"""Concatenations written in place (passes/concat_in_place.py): producers write
their slice of the concatenation's buffer, on every configuration of backends,
and every case the plan must refuse still computes the reference's answer."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32

import byoc
from byoc.dialects import relay
from byoc.passes.concat_in_place import plan_slices, writable_in_place
from graphs import build

TARGETS = ([], ["ccompiler"], ["cblas", "ccompiler"])
"""Host only; C; cblas's packed convolutions with C for the rest."""

RNG = np.random.default_rng(7)


def weight(shape) -> relay.ConstantOp:
    fan_in = int(np.prod(shape[1:]))
    data = (RNG.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return relay.ConstantOp.from_numpy(data)


def conv(emit, x, out_channels: int, kernel: int = 1, stride: int = 1, relu: bool = True,
         groups: int = 1):
    """conv2d (+ relu) of `x` with a constant weight, padded to keep the size at stride 1."""
    channels = x.type.get_shape()[1]
    w = emit(weight((out_channels, channels // groups, kernel, kernel)))
    pad = kernel // 2
    y = emit(relay.Conv2dOp(x, w, strides=stride, padding=(pad, pad, pad, pad), groups=groups))
    return emit(relay.ReluOp(y)) if relu else y


def concat(emit, values, axis: int = 1):
    return emit(relay.ConcatenateOp(list(values), axis))


def fire(emit, x):
    """SqueezeNet's fire module: squeeze, two expands, concatenated (odd sizes)."""
    s = conv(emit, x, 5)
    return concat(emit, [conv(emit, s, 7), conv(emit, s, 9, kernel=3)])


def inception(emit, x):
    """Four branches, one through a pool, concatenated."""
    a = conv(emit, x, 6)
    b = conv(emit, conv(emit, x, 4), 5, kernel=3)
    c = conv(emit, conv(emit, conv(emit, x, 3), 5, kernel=3), 3, kernel=3)
    p = emit(relay.MaxPool2dOp(x, pool_size=(3, 3), strides=(1, 1), padding=(1, 1, 1, 1)))
    return concat(emit, [a, b, c, conv(emit, p, 2)])


def dense_block(emit, x, layers: int = 4):
    """DenseNet: each layer's input is every earlier output, concatenated; the
    concatenation is also read by the next layer's scale and shift (another user)."""
    for i in range(layers):
        channels = x.type.get_shape()[1]
        scale = emit(relay.ConstantOp.from_numpy(RNG.uniform(0.5, 1.5, (channels, 1, 1)).astype(np.float32)))
        shift = emit(relay.ConstantOp.from_numpy(RNG.standard_normal((channels, 1, 1)).astype(np.float32)))
        h = emit(relay.ReluOp(emit(relay.AddOp(emit(relay.MultiplyOp(x, scale)), shift))))
        y = conv(emit, conv(emit, h, 8), 3 + i, kernel=3)
        x = concat(emit, [x, y])
    return x


CASES = {
    "fire": ([(1, 6, 9, 7)], lambda emit, x: fire(emit, fire(emit, x))),
    "inception": ([(1, 5, 7, 11)], inception),
    "dense_block": ([(1, 4, 6, 5)], dense_block),
    # An operand also read elsewhere (and returned), one read twice, an input.
    "shared": ([(1, 3, 5, 5)], lambda emit, x: (
        lambda a, b: [emit(relay.ReluOp(concat(emit, [a, b, a, x]))), emit(relay.ReluOp(a)), b]
    )(conv(emit, x, 4), conv(emit, x, 2, kernel=3))),
    # A concatenation nested in another, and the outer one returned.
    "nested_returned": ([(1, 3, 4, 6)], lambda emit, x: concat(
        emit, [concat(emit, [conv(emit, x, 2), conv(emit, x, 3)]), conv(emit, x, 1)])),
    # Batch 2: a channel slice is not contiguous (copied).
    "batch": ([(2, 3, 5, 4)], lambda emit, x: concat(emit, [conv(emit, x, 4), conv(emit, x, 3, kernel=3)])),
    # Along the width: not contiguous (copied); along the last axis after 1s it is.
    "width": ([(1, 3, 4, 5)], lambda emit, x: concat(emit, [conv(emit, x, 2), conv(emit, x, 2, kernel=3)], axis=3)),
    "rows": ([(1, 1, 1, 7)], lambda emit, x: emit(relay.ReluOp(concat(
        emit, [emit(relay.ReluOp(x)), emit(relay.NegativeOp(x))], axis=-1)))),
    # Strided and grouped producers.
    "strided_grouped": ([(1, 4, 9, 9)], lambda emit, x: concat(
        emit, [conv(emit, x, 6, kernel=3, stride=2), conv(emit, x, 4, kernel=3, stride=2, groups=2),
               conv(emit, x, 4, kernel=3, stride=2, groups=4, relu=False)])),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    shapes, body = CASES[request.param]
    return request.param, build(shapes, body)


@pytest.mark.parametrize("targets", TARGETS, ids=lambda t: "+".join(t) or "host")
def test_matches_reference(case, targets):
    name, module = case
    model = byoc.compile(module.clone(), targets=targets)
    args = [RNG.standard_normal(a.type.get_shape()).astype(np.float32)
            for a in next(iter(module.ops)).body.block.args]
    got = model(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    for g, w in zip(got, byoc.run_reference(module, args), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    host = model.partitioned_ir.split("func.func private")[0]
    in_place = any(
        writable_in_place(op) for op in next(iter(module.ops)).body.block.ops
    )
    # A concatenation the host can write in place stays on the host; others
    # go to ccompiler as before.
    assert ("relay.concatenate" in host) == (in_place or not targets), host


def plan(module: ModuleOp):
    main = next(iter(module.ops))
    assert isinstance(main, func.FuncOp)
    ops = list(main.body.block.ops)
    returned = set(ops[-1].operands)
    return ops, plan_slices(ops[:-1], returned)


def test_plan_nested_roots_and_offsets():
    _, module = "dense_block", build(*CASES["dense_block"])
    ops, slices = plan(module)
    concats = [op for op in ops if isinstance(op, relay.ConcatenateOp)]
    last = concats[-1].result
    # The returned concatenation keeps its own buffer (the caller's): the chain
    # before it shares the buffer of the one before it.
    assert last not in slices
    root = concats[-2].result
    assert all(slices[c.result].root is root for c in concats[:-1])
    assert slices[concats[0].result].offset == 0
    # Each layer's new channels follow the ones before, 4 bytes a float.
    for c in concats[:-1]:
        x, y = c.operands
        assert slices[y].offset == slices[c.result].offset + 4 * int(np.prod(x.type.get_shape()))
    # The block's input is an argument: copied.
    assert concats[0].operands[0] not in slices


def test_plan_refuses():
    ops, slices = plan(build(*CASES["shared"]))
    cat = next(op for op in ops if isinstance(op, relay.ConcatenateOp))
    a, b, a_again, x = cat.operands
    assert a is a_again
    assert slices[a].offset == 0  # the first of its two places
    assert b not in slices  # returned: its buffer is the caller's
    assert x not in slices  # an argument
    for name in ("batch", "width"):
        assert plan(build(*CASES[name]))[1] == {}


def test_ir_views():
    """The host's lowering gives the producers views of the root's bytes and
    copies nothing for them."""
    from byoc.dialects import make_context
    from byoc.passes.convert_relay_to_loops import ConvertRelayToLoopsPass

    def body(emit, x):
        s = conv(emit, x, 5)
        expands = [conv(emit, s, 7, relu=False), conv(emit, s, 9, kernel=3, relu=False)]
        return emit(relay.ReluOp(concat(emit, expands)))

    module = build([(1, 6, 9, 7)], body)
    ConvertRelayToLoopsPass().apply(make_context(), module)
    text = str(module)
    # The two expands and the concatenation are views of one buffer of 16x9x7 floats.
    assert text.count("memref.view") == 3
    assert text.count("memref.alloc() : memref<4032xi8>") == 1
    for channels in (7, 9, 16):
        assert f"memref.alloc() : memref<1x{channels}x9x7xf32>" not in text
