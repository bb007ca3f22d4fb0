"""A compile holds each weight once: a weight cblas packs (or simplify folds)
is freed as its replacement is made, not at the end of the compile, and the
packed copy is made straight into the bytes its constant keeps."""

from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

import byoc
from byoc.backends import cblas
from byoc.dialects import relay
from byoc.dialects.relay.constant import _own_bytes
from byoc.frontend.onnx import loader, weights
from byoc.passes.speed import garbage_collector_paused
from byoc.runtime import build
from byoc.runtime.build import partition_for

UNITS, DEPTH = 1024, 1024
WEIGHT_BYTES = UNITS * DEPTH * 4


def test_packed_weights_are_the_bytes_their_constant_keeps():
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((70, 33)).astype(np.float32)
    conv = rng.standard_normal((20, 6, 3, 3)).astype(np.float32)
    for packed, unpacked in (
        (relay.pack_dense_weight(dense), lambda p: relay.unpack_dense_weight(p, 70)),
        (relay.pack_conv2d_weight(conv, 2, "OIHW8o"), lambda p: relay.unpack_conv2d_weight(p, 2, 20)),
    ):
        data = _own_bytes(packed)
        assert data is not None  # no `tobytes` copy when it becomes a constant
        assert relay.ConstantOp.from_numpy(packed).value.data.data is data
        assert np.array_equal(unpacked(packed), dense if packed.ndim == 3 else conv)


def dense_module(weight: np.ndarray) -> ModuleOp:
    x = TensorType(f32, [4, weight.shape[1]])
    block = Block(arg_types=[x])
    w = relay.ConstantOp.from_numpy(weight)
    op = relay.DenseOp(block.args[0], w.result)
    block.add_ops([w, op, func.ReturnOp(op.results[0])])
    main = func.FuncOp("main", FunctionType.from_lists([x], [op.results[0].type]), Region(block))
    return ModuleOp([main])


def test_packing_frees_the_weight_it_replaces():
    """With the collector paused (as in a compile), the replaced constant must
    not keep its bytes: nothing but this test holds them afterwards."""
    weight = np.random.default_rng(1).standard_normal((96, 64)).astype(np.float32)
    module = dense_module(weight)
    data = next(op for op in module.walk() if isinstance(op, relay.ConstantOp)).value.data.data
    held_by_ir = sys.getrefcount(data)
    with garbage_collector_paused():
        partition_for(module, [cblas.backend])
        assert any(isinstance(op, relay.DensePackedOp) for op in module.walk())
        assert sys.getrefcount(data) == held_by_ir - 1


@pytest.fixture
def dense_file(tmp_path, monkeypatch):
    """An ONNX Gemm of a 4 MB weight, read the way large files are (each weight
    `pread` into the bytes its constant keeps)."""
    monkeypatch.setattr(loader, "LEAN_FILE_BYTES", 0)
    monkeypatch.setattr(weights, "STRIP_BYTES", 64)
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(2)
    g = rng.standard_normal((UNITS, DEPTH)).astype(np.float32) * 0.03
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "g"], ["y"], transB=1)],
        "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, DEPTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, UNITS])],
        [numpy_helper.from_array(g, "g")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "dense.onnx"
    onnx.save(model, path)
    return path, g


def test_compile_holds_one_copy_of_a_packed_weight(dense_file, monkeypatch):
    """Traced memory (numpy's and Python's): while cblas packs, the weight and
    its packed copy (2x); from codegen on, the packed copy alone. A copy kept
    for falling back, an erased constant kept by the paused collector, or a
    packed array copied again into bytes would each add one weight."""
    path, g = dense_file
    at_codegen: list[int] = []
    codegen_stage = build.codegen_stage

    def measured(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        at_codegen.append(tracemalloc.get_traced_memory()[0])
        return codegen_stage(*args, **kwargs)

    # First without the cache (written by neither): everything the compile
    # imports is imported, so what is traced below is the compile's own.
    byoc.compile(path, targets=["cblas"], quiet=True, cache=False)
    monkeypatch.setattr(build, "codegen_stage", measured)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        model = byoc.compile(path, targets=["cblas"], quiet=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert at_codegen, "the compile did not run codegen (a cache hit?)"
    assert at_codegen[0] - start < 1.4 * WEIGHT_BYTES
    assert peak - start < 2.4 * WEIGHT_BYTES
    x = np.random.default_rng(3).standard_normal((2, DEPTH)).astype(np.float32)
    np.testing.assert_allclose(model(x), x @ g.T, rtol=1e-4, atol=1e-4)
