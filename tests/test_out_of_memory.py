"""Host code that fails cleanly: a failed allocation (host, C kernel, numpy's
own arrays) is a ByocError naming the size, and compile-time work does not
grow with window or shape values (a 2^40-wide pool compiles at once)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byoc.passes.lower_nn import Window

BIN = Path(sys.executable).parent

# A 2^20 x 2^20 float intermediate (4 TiB) between small inputs and outputs.
HUGE_INTERMEDIATE = """\
func.func @main(%a: tensor<1048576x1xf32>, %b: tensor<1x1048576xf32>) -> tensor<1xf32> {
  %0 = relay.add %a, %b : (tensor<1048576x1xf32>, tensor<1x1048576xf32>) -> tensor<1048576x1048576xf32>
  %1 = relay.OP %0 : (tensor<1048576x1048576xf32>) -> tensor<1048576x1048576xf32>
  %2 = relay.sum %1 {axis = array<i64: 1>} : (tensor<1048576x1048576xf32>) -> tensor<1048576xf32>
  %3 = relay.sum %2 {axis = array<i64: 0>, keepdims = true} : (tensor<1048576xf32>) -> tensor<1xf32>
  func.return %3 : tensor<1xf32>
}
"""

# The child caps its address space, so the 4 TiB malloc fails whatever the
# machine's overcommit policy.
CHILD = """\
import resource, sys
import numpy as np
import byoc
resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
model = byoc.compile(sys.argv[1], targets=sys.argv[2].split(",") if sys.argv[2] else [])
a = np.ones((1048576, 1), np.float32)
b = np.ones((1, 1048576), np.float32)
try:
    model(a, b)
except byoc.ByocError as err:
    print(err)
    try:
        model(a, b)  # the size was cleared and is recorded again
    except byoc.ByocError as again:
        print(again)
"""


@pytest.mark.parametrize(
    ("op", "targets", "where"),
    [
        ("tanh", "", "the host"),  # host lowering
        ("nn.relu", "ccompiler", "backend 'ccompiler'"),  # the C exit
    ],
)
def test_failed_allocation_is_an_error_naming_the_size(op, targets, where, tmp_path):
    model = tmp_path / "huge.mlir"
    model.write_text(HUGE_INTERMEDIATE.replace("OP", op))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), targets],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # Located at the first op whose result takes that size.
    expected = (
        f"{model}:2:3: error: out of memory: {where} could not allocate a buffer of "
        "4398046511104 bytes (4.0 TiB), the size of the result of 'relay.add'"
    )
    assert proc.stdout.splitlines() == [expected, expected]


OUTPUT_CHILD = """\
import resource, sys
import numpy as np
import byoc
resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
model = byoc.compile(sys.argv[1], targets=[])
try:
    model(np.ones((1048576, 1), np.float32), np.ones((1, 1048576), np.float32))
except byoc.ByocError as err:
    print(err)
"""


def test_output_too_large_for_numpy_is_an_error(tmp_path):
    model = tmp_path / "wide.mlir"
    model.write_text(
        "func.func @main(%a: tensor<1048576x1xf32>, %b: tensor<1x1048576xf32>) -> tensor<1048576x1048576xf32> {\n"
        "  %0 = relay.add %a, %b : (tensor<1048576x1xf32>, tensor<1x1048576xf32>) -> tensor<1048576x1048576xf32>\n"
        "  func.return %0 : tensor<1048576x1048576xf32>\n}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", OUTPUT_CHILD, str(model)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("error: out of memory: Unable to allocate 4.00 TiB")


def test_huge_pool_window_compiles_at_once(tmp_path):
    """avg_pool over 2^40 columns: one window per row, no work per column."""
    width = 2**40
    path = tmp_path / "pool.mlir"
    path.write_text(
        f"func.func @main(%a: tensor<1x1x1x{width}xf32>) -> tensor<1x1x1x1xf32> {{\n"
        f"  %0 = relay.nn.avg_pool2d %a {{pool_size = array<i64: 1, {width}>}} : "
        f"(tensor<1x1x1x{width}xf32>) -> tensor<1x1x1x1xf32>\n"
        "  func.return %0 : tensor<1x1x1x1xf32>\n}\n"
    )
    proc = subprocess.run(
        [str(BIN / "byoc-translate"), str(path), "--emit-c"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert f"< {width}" in proc.stdout or f"<{width}" in proc.stdout.replace(" ", "")


def test_onnx_average_pool_over_a_huge_input_fails_cleanly(tmp_path):
    """Compiles at once (the divisor is not worked out per output), then the
    random input cannot be made: one message, exit 1."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    width = 2**40
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[1, 3], pads=[0, 1, 0, 1])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    proc = subprocess.run([str(BIN / "byoc-run"), str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "error: out of memory making random inputs" in proc.stderr
    assert "Traceback" not in proc.stderr


windows = st.builds(
    lambda size, kernel, stride, dilation, pad, pad_after, ceil: (size, kernel, stride, dilation, pad, pad_after, ceil),
    st.integers(1, 12),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(windows, st.booleans())
def test_window_counts_in_closed_form_match_counting(params, include_pad):
    size, kernel, stride, dilation, pad, pad_after, ceil = params
    span = dilation * (kernel - 1) + 1
    if size + pad + pad_after < span:
        return
    room = size + pad + pad_after - span
    outputs = (room + (stride - 1 if ceil else 0)) // stride + 1
    window = Window(size, kernel, stride, dilation, pad, pad_after, outputs)
    low, high = (-pad, size + pad_after) if include_pad else (0, size)

    def counted(o):
        start = o * stride - pad
        return sum(low <= start + t * dilation < high for t in range(kernel))

    counts = [counted(o) for o in range(outputs)]
    assert [window.count(o, include_pad) for o in range(outputs)] == counts
    assert window._uniform_count(include_pad) == (len(set(counts)) == 1)
    # Every tap sees every output exactly when the O(1) test says so.
    every = all(window._first(t) == 0 and window._end(t) == outputs for t in range(kernel))
    assert every == (window._first(0) == 0 and window._end(kernel - 1) == outputs)
