"""byoc-simplify and its passes, numerically: a simplified model computes what
the original did (the reference interpreter on both, and the compiled
simplified model against the reference of the original), on odd shapes,
strides, padding and groups, for the graphs real ONNX exporters write."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc.frontend.onnx import from_onnx
from byoc.passes.simplify import simplify
from byoc.runtime.build import partition_for

RNG = np.random.default_rng(0)


def weight(*shape: int, scale: float | None = None) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return (RNG.standard_normal(shape) * s).astype(np.float32)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 1.5, shape).astype(np.float32)


def model(nodes, inputs, outputs, initializers, opset=17) -> onnx.ModelProto:
    """An ONNX model: `inputs`/`outputs` are (name, shape), `initializers` name -> array."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8
    )


def ops_of(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("relay."))


def scaled_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5) -> None:
    """Close within `rtol` of the output's scale (float32 folding rounds once more)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(float(np.max(np.abs(want))), 1e-30)
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale)


def check_simplified(proto: onnx.ModelProto, feeds: list[np.ndarray]):
    """Simplify the imported model: its reference results equal the original's.
    Returns (original reference results, simplified module)."""
    original = from_onnx(proto)
    want = byoc.run_reference(original, feeds)
    simplified = original.clone()
    simplify(simplified)
    simplified.verify()
    got = byoc.run_reference(simplified, feeds)
    for g, w in zip(got, want, strict=True):
        scaled_close(g, w)
    return want, simplified


def check_compiled(proto, feeds, want, targets) -> byoc.CompiledModule:
    compiled = byoc.compile(proto, targets=targets)
    got = compiled(*feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    for g, w in zip(got, want, strict=True):
        scaled_close(g, w, 1e-4)
    return compiled


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --- Batch norm after a convolution ---------------------------------------------------


def conv_bn_model(groups: int, bias: bool, extra_user: bool) -> onnx.ModelProto:
    """conv (odd sizes, stride 2, asymmetric padding, groups) -> BN -> relu."""
    c_in, c_out = 6, 9 if groups == 3 else 5
    inits = {
        "w": weight(c_out, c_in // groups, 3, 2),
        "gamma": positive(c_out),
        "beta": normal(c_out),
        "mean": normal(c_out),
        "var": positive(c_out),
    }
    conv_inputs = ["x", "w"]
    if bias:
        inits["b"] = normal(c_out)
        conv_inputs.append("b")
    nodes = [
        helper.make_node(
            "Conv", conv_inputs, ["c"], strides=[2, 1], pads=[1, 0, 0, 1], group=groups
        ),
        helper.make_node(
            "BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], epsilon=1e-3
        ),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    outputs = ["y"]
    if extra_user:
        nodes.append(helper.make_node("Sigmoid", ["c"], ["s"]))
        outputs.append("s")
    return model(nodes, [("x", [2, c_in, 7, 9])], outputs, inits)


@pytest.mark.parametrize(
    "groups, bias, extra_user",
    [(1, False, False), (3, True, False), (1, True, True)],
    ids=["conv", "grouped_bias", "conv_used_twice"],
)
def test_batch_norm_after_conv(groups, bias, extra_user):
    proto = conv_bn_model(groups, bias, extra_user)
    feeds = [normal(2, 6, 7, 9)]
    want, simplified = check_simplified(proto, feeds)
    ops = ops_of(simplified)
    assert ops["relay.nn.batch_norm"] == 0
    if extra_user:
        # The conv's output is needed as it is: a scale and a shift instead.
        assert ops["relay.multiply"] == 1 and ops["relay.add"] == 1
    else:
        assert ops["relay.nn.bias_add"] == 1 and ops["relay.multiply"] == 0
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])


def test_densenet_style_scale_and_shift():
    """BN -> Unsqueeze -> Mul -> Add -> Relu after a conv (DenseNet, Inception v2),
    and a pre-activation BN after a concatenation."""
    c = 7
    inits = {
        "w": weight(c, 4, 3, 3),
        "gamma": positive(c),
        "beta": normal(c),
        "mean": normal(c),
        "var": positive(c),
        "one": np.ones(c, np.float32),
        "zero": np.zeros(c, np.float32),
        "s": positive(c),
        "t": normal(c),
        "axes": np.array([1, 2], np.int64),
        "gamma2": positive(c + 4),
        "beta2": normal(c + 4),
        "mean2": normal(c + 4),
        "var2": positive(c + 4),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "one", "zero", "mean", "var"], ["n"]),
        helper.make_node("Unsqueeze", ["s", "axes"], ["s3"]),
        helper.make_node("Mul", ["n", "s3"], ["m"]),
        helper.make_node("Unsqueeze", ["t", "axes"], ["t3"]),
        helper.make_node("Add", ["m", "t3"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Concat", ["r", "x"], ["cat"], axis=1),
        helper.make_node(
            "BatchNormalization", ["cat", "gamma2", "beta2", "mean2", "var2"], ["n2"]
        ),
        helper.make_node("Relu", ["n2"], ["y"]),
    ]
    proto = model(nodes, [("x", [1, 4, 5, 3])], ["y"], inits)
    feeds = [normal(1, 4, 5, 3)]
    want, simplified = check_simplified(proto, feeds)
    ops = ops_of(simplified)
    assert ops["relay.nn.batch_norm"] == 0
    assert ops["relay.reshape"] == 0
    # conv -> bias_add -> relu; the BN after the concat: one multiply, one add.
    assert ops["relay.nn.bias_add"] == 1
    assert ops["relay.multiply"] == 1 and ops["relay.add"] == 1
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])
    check_compiled(proto, feeds, want, [])


def test_gemm_and_matmul_scale_and_shift():
    """Gemm -> BN over features; MatMul + Add + Mul by constants (3-d data)."""
    inits = {
        "w": weight(11, 6),
        "b": normal(6),
        "gamma": positive(6),
        "beta": normal(6),
        "mean": normal(6),
        "var": positive(6),
        "w2": weight(11, 13),
        "b2": normal(13),
        "s2": positive(13),
        "t2": normal(1, 13),
        "d2": positive(1),
    }
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["g"]),
        helper.make_node("BatchNormalization", ["g", "gamma", "beta", "mean", "var"], ["y"]),
        helper.make_node("MatMul", ["x3", "w2"], ["mm"]),
        helper.make_node("Add", ["b2", "mm"], ["ma"]),
        helper.make_node("Sub", ["ma", "t2"], ["ms"]),
        helper.make_node("Mul", ["ms", "s2"], ["mu"]),
        helper.make_node("Div", ["mu", "d2"], ["y2"]),
    ]
    proto = model(nodes, [("x", [5, 11]), ("x3", [2, 3, 11])], ["y", "y2"], inits)
    feeds = [normal(5, 11), normal(2, 3, 11)]
    want, simplified = check_simplified(proto, feeds)
    ops = ops_of(simplified)
    assert ops["relay.nn.batch_norm"] == 0
    assert ops["relay.multiply"] == ops["relay.add"] == ops["relay.divide"] == 0
    assert ops["relay.subtract"] == 0
    assert ops["relay.nn.dense"] == 2 and ops["relay.nn.bias_add"] == 2
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])


# --- Attention: transposes into the batch matmuls --------------------------------------


def attention_model(
    seq: int, heads: int, size: int, scale_op: str = "Div", query_bias: bool = True,
    mask: tuple[int, ...] | None = None, batch: int = 1,
) -> onnx.ModelProto:
    """Self-attention as PyTorch exports it (odd sizes); the scores divided by
    sqrt(size) (or multiplied by its inverse), then (`mask`: that input's
    shape) an additive attention mask added, as transformers' exports do."""
    hidden = heads * size
    scale = np.sqrt(size) if scale_op == "Div" else 1 / np.sqrt(size)
    inits = {
        "wq": weight(hidden, hidden),
        "wk": weight(hidden, hidden),
        "wv": weight(hidden, hidden),
        "bq": normal(hidden),
        "shape": np.array([batch, seq, heads, size], np.int64),
        "back": np.array([batch, seq, hidden], np.int64),
        "scale": np.array(scale, np.float32),
    }
    if not query_bias:
        inits["bq"] = np.zeros(hidden, np.float32)
    nodes = []
    for name in "qkv":
        nodes.append(helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}_mm"]))
    nodes += [
        helper.make_node("Add", ["q_mm", "bq"], ["q_b"]),
        helper.make_node("Reshape", ["q_b", "shape"], ["q_r"]),
        helper.make_node("Reshape", ["k_mm", "shape"], ["k_r"]),
        helper.make_node("Reshape", ["v_mm", "shape"], ["v_r"]),
        helper.make_node("Transpose", ["q_r"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_r"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_r"], ["v"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node(scale_op, ["scores", "scale"], ["scaled"]),
        *([helper.make_node("Add", ["scaled", "mask"], ["masked"])] if mask else []),
        helper.make_node("Softmax", ["masked" if mask else "scaled"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "back"], ["y"]),
    ]
    inputs = [("x", [batch, seq, hidden])] + ([("mask", list(mask))] if mask else [])
    return model(nodes, inputs, ["y"], inits)


def test_attention_reads_keys_transposed():
    proto = attention_model(seq=7, heads=3, size=5)
    feeds = [normal(1, 7, 15)]
    want, simplified = check_simplified(proto, feeds)
    # The keys' (0, 2, 3, 1) permutation is now the same row-moving head
    # split as the queries' and values', the last-axes swap a flag.
    perms = [
        tuple(op.attrs()["axes"])
        for op in simplified.walk()
        if op.name == "relay.transpose"
    ]
    assert perms == [(0, 2, 1, 3)] * 4
    bmm = [op for op in simplified.walk() if op.name == "relay.nn.batch_matmul"]
    assert [op.attrs()["transpose_b"] for op in bmm] == [True, False]
    assert ops_of(simplified)["relay.nn.bias_add"] == 1
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])


@pytest.mark.parametrize("scale_op", ["Div", "Mul"])
@pytest.mark.parametrize("query_bias", [True, False])
@pytest.mark.parametrize("seq, heads, size", [(7, 3, 5), (1, 2, 9), (13, 4, 3)])
def test_attention_scale_folds_into_the_query_weights(seq, heads, size, scale_op, query_bias):
    proto = attention_model(seq, heads, size, scale_op, query_bias)
    feeds = [normal(1, seq, heads * size)]
    want, simplified = check_simplified(proto, feeds)
    # The 1/sqrt(size) moved through the scores' product and the head split
    # into the query projection: no pass over the scores is left for it.
    ops = ops_of(simplified)
    assert ops["relay.divide"] == ops["relay.multiply"] == 0
    assert ops["relay.nn.bias_add"] == (1 if query_bias else 0)
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])


def additive_mask(shape: tuple[int, ...], fill: float) -> np.ndarray:
    """0 or `fill` (-10000 or -inf, what exporters write), its last keys masked."""
    mask = np.where(RNG.uniform(size=shape) < 0.3, fill, 0.0).astype(np.float32)
    mask[..., -1] = fill
    return mask


@pytest.mark.parametrize(
    "batch, mask_shape, moved",
    [(1, (1, 1, 1, 7), True), (2, (1, 1, 1, 7), True), (1, (1, 1, 7, 7), True),
     (2, (2, 1, 1, 7), False), (2, (7,), True)],
    ids=["row", "row_batches", "square", "row_per_batch", "vector"],
)
def test_attention_mask_moves_onto_the_scores(batch, mask_shape, moved):
    proto = attention_model(7, 3, 5, mask=mask_shape, batch=batch)
    feeds = [normal(batch, 7, 15), additive_mask(mask_shape, -10000.0)]
    want, simplified = check_simplified(proto, feeds)
    # A mask the same for every batch and head is added to the batch
    # matmul's 3-d scores, the softmax reads that add: no reshape between
    # the scores and their softmax. A mask row per batch varies along the
    # axis the scores' reshape splits: the add stays on the 4-d scores.
    add = next(op for op in simplified.walk() if op.name == "relay.add")
    softmax = next(op for op in simplified.walk() if op.name == "relay.nn.softmax")
    assert softmax.operands[0] is add.results[0]
    scores = add.operands[0].owner
    assert (scores.name == "relay.nn.batch_matmul") == moved
    assert len(add.results[0].type.get_shape()) == (3 if moved else 4)
    compiled = check_compiled(proto, feeds, want, ["cblas", "ccompiler"])
    # cblas then takes the scores, the mask, the softmax and the values'
    # product as one attention call (the mask read where it is; a mask per
    # batch through the reshape of the scores, its batch's heads sharing it).
    assert "byoc_rt_attention(" in compiled.sources["cblas.c"]


@pytest.mark.parametrize("seq", [7, 33])
def test_a_constant_causal_mask_becomes_a_constant_of_the_scores_rank(seq):
    proto = attention_model(seq, 3, 5, mask=(1, 1, seq, seq))
    causal = np.triu(np.full((1, 1, seq, seq), -np.inf, np.float32), 1)
    del proto.graph.input[1]
    proto.graph.initializer.append(numpy_helper.from_array(causal, "mask"))
    feeds = [normal(1, seq, 15)]
    want, simplified = check_simplified(proto, feeds)
    add = next(op for op in simplified.walk() if op.name == "relay.add")
    assert add.operands[1].owner.name == "relay.constant"
    assert add.operands[1].type.get_shape() == (1, seq, seq)  # of [3, seq, seq] scores
    compiled = check_compiled(proto, feeds, want, ["cblas", "ccompiler"])
    assert list(compiled.sources) == ["cblas.c"]
    assert "byoc_rt_attention(" in compiled.sources["cblas.c"]


# --- Shapes, no-ops, constants ----------------------------------------------------------


def test_shape_chains_noops_and_constants():
    inits = {
        "shape1": np.array([3, 10], np.int64),
        "shape2": np.array([5, 6], np.int64),
        "shape3": np.array([2, 3, 5], np.int64),
        "one": np.ones((1, 5), np.float32),
        "zero": np.zeros(5, np.float32),
        "c": positive(5),
        "two": np.array(2.0, np.float32),
    }
    nodes = [
        helper.make_node("Reshape", ["x", "shape1"], ["r1"]),
        helper.make_node("Reshape", ["r1", "shape2"], ["r2"]),
        helper.make_node("Reshape", ["r2", "shape3"], ["r3"]),
        helper.make_node("Transpose", ["r3"], ["t1"], perm=[2, 0, 1]),
        helper.make_node("Transpose", ["t1"], ["t2"], perm=[1, 2, 0]),
        helper.make_node("Mul", ["t2", "one"], ["m"]),
        helper.make_node("Add", ["zero", "m"], ["a"]),
        helper.make_node("Sqrt", ["c"], ["sc"]),
        helper.make_node("Div", ["sc", "two"], ["k"]),
        helper.make_node("Mul", ["a", "k"], ["y"]),
    ]
    proto = model(nodes, [("x", [2, 15])], ["y"], inits)
    feeds = [normal(2, 15)]
    want, simplified = check_simplified(proto, feeds)
    assert ops_of(simplified) == Counter(
        {"relay.reshape": 1, "relay.constant": 1, "relay.multiply": 1}
    )
    check_compiled(proto, feeds, want, [])


def test_compile_option_and_pipeline_placement():
    """`simplify=False` keeps the graph as given; by default every backend sees
    the simplified one (here: no batch norm left for the host)."""
    proto = conv_bn_model(1, True, False)
    on = byoc.compile(proto, targets=["ccompiler"])
    off = byoc.compile(proto, targets=["ccompiler"], simplify=False)
    assert "relay.nn.batch_norm" not in on.partitioned_ir
    assert "relay.nn.batch_norm" in off.partitioned_ir
    assert on.placement.get("host", 0) == 0 and off.placement["host"] == 1
    feeds = [normal(2, 6, 7, 9)]
    scaled_close(on(*feeds), off(*feeds), 1e-4)
    module = from_onnx(proto)
    partition_for(module, [], simplify=True)
    assert "relay.nn.batch_norm" not in str(module)


def test_command_line_flags(tmp_path):
    """`byoc-opt --simplify`; `--no-simplify` of byoc-run and byoc-translate."""
    import subprocess
    import sys
    from pathlib import Path

    bindir = Path(sys.executable).parent
    path = tmp_path / "bn.onnx"
    onnx.save(conv_bn_model(1, True, False), path)
    mlir = tmp_path / "bn.mlir"
    subprocess.run([str(bindir / "byoc-import"), str(path), "-o", str(mlir)], check=True)

    def run(*args: str) -> str:
        proc = subprocess.run([str(bindir / args[0]), *args[1:]], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "batch_norm" in run("byoc-opt", str(mlir))
    assert "batch_norm" not in run("byoc-opt", str(mlir), "--simplify")
    partitioned = run("byoc-opt", str(mlir), "--simplify", "--annotate", "--partition")
    assert "batch_norm" not in partitioned and "bias_add" in partitioned
    # Simplified, conv -> bias_add -> relu is one C function; as given, the
    # batch norm stays on the host between two.
    assert "ccompiler_1" not in run("byoc-translate", str(mlir), "--emit-c")
    assert "ccompiler_1" in run("byoc-translate", str(mlir), "--emit-c", "--no-simplify")
    on = run("byoc-run", str(path), "--check")
    off = run("byoc-run", str(path), "--check", "--no-simplify")
    assert "host: 0 op(s)" in on and "host: 1 op(s)" in off
    assert "matches onnxruntime" in on and "matches onnxruntime" in off


# --- GELU ------------------------------------------------------------------------------


def test_erf_gelu_becomes_one_op():
    """The erf GELU of a BERT feed-forward layer, as torch.onnx writes it, and
    the (x * 0.5) * (1 + erf(x * 1/sqrt2)) order."""
    inits = {
        "w": weight(9, 13),
        "b": normal(13),
        "sqrt2": np.array(np.sqrt(2.0), np.float32),
        "rsqrt2": np.array([1 / np.sqrt(2.0)], np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["h"]),
        helper.make_node("Div", ["h", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["s"]),
        helper.make_node("Mul", ["h", "s"], ["p"]),
        helper.make_node("Mul", ["p", "half"], ["y"]),
        helper.make_node("Mul", ["rsqrt2", "x2"], ["d2"]),
        helper.make_node("Erf", ["d2"], ["e2"]),
        helper.make_node("Add", ["one", "e2"], ["s2"]),
        helper.make_node("Mul", ["x2", "half"], ["h2"]),
        helper.make_node("Mul", ["h2", "s2"], ["y2"]),
    ]
    proto = model(nodes, [("x", [1, 7, 9]), ("x2", [4, 33])], ["y", "y2"], inits)
    feeds = [normal(1, 7, 9) * 2, normal(4, 33) * 3]
    want, simplified = check_simplified(proto, feeds)
    ops = ops_of(simplified)
    assert ops["relay.nn.gelu"] == 2
    assert ops["relay.erf"] == ops["relay.multiply"] == ops["relay.divide"] == 0
    assert ops["relay.nn.dense"] == 1 and ops["relay.nn.bias_add"] == 1
    check_compiled(proto, feeds, want, ["cblas", "ccompiler"])
