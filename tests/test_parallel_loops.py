"""Parallel loops of the C exit: loops marked by byoc-mark-parallel-loops run on
libbyoc's pool (byoc-outline-parallel-loops) and give the reference's answers
with any thread count (uneven splits included); `$BYOC_PARALLEL=0` builds
sequential code that calls no pool."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import byoc
from byoc.passes.convert_relay_to_loops import convert_relay_to_loops
from byoc.passes.parallel_loops import PARALLEL_ATTR, mark_parallel_loops
from byoc.runtime import libbyoc
from byoc.runtime.build import load_source

# Every loop nest here is big enough to be split (MIN_WORK), with odd extents
# so that 3 threads split them unevenly.
MODEL = """\
func.func @main(%a: tensor<301x257xf32>, %b: tensor<301x257xf32>, %img: tensor<1x7x65x66xf32>, %w: tensor<129x257xf32>) -> (tensor<301x257xf32>, tensor<257xf32>, tensor<1x7x32x33xf32>, tensor<257x301xf32>, tensor<301x129xf32>, tensor<301xf32>) {
  %0 = relay.add %a, %b : (tensor<301x257xf32>, tensor<301x257xf32>) -> tensor<301x257xf32>
  %1 = relay.multiply %0, %a : (tensor<301x257xf32>, tensor<301x257xf32>) -> tensor<301x257xf32>
  %2 = relay.sum %1 {axis = array<i64: 0>} : (tensor<301x257xf32>) -> tensor<257xf32>
  %3 = relay.nn.max_pool2d %img {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x7x65x66xf32>) -> tensor<1x7x32x33xf32>
  %4 = relay.transpose %b : (tensor<301x257xf32>) -> tensor<257x301xf32>
  %5 = relay.nn.dense %a, %w : (tensor<301x257xf32>, tensor<129x257xf32>) -> tensor<301x129xf32>
  %6 = relay.max %b {axis = array<i64: 1>} : (tensor<301x257xf32>) -> tensor<301xf32>
  func.return %1, %2, %3, %4, %5, %6 : tensor<301x257xf32>, tensor<257xf32>, tensor<1x7x32x33xf32>, tensor<257x301xf32>, tensor<301x129xf32>, tensor<301xf32>
}
"""

def test_big_nests_are_marked_and_small_ones_are_not():
    module = load_source(MODEL)
    convert_relay_to_loops(module)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    # add*multiply, max_pool2d, transpose and max along rows are split; the
    # sum along axis 0 (its outer loop is the reduction) and dense (its
    # dot products share one scratch buffer) stay sequential.
    assert mark_parallel_loops(main) == 4

    small = load_source(
        "func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
        "  %0 = relay.add %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>\n"
        "  func.return %0 : tensor<4x4xf32>\n}\n"
    )
    convert_relay_to_loops(small)
    assert mark_parallel_loops(next(iter(small.ops))) == 0
    assert not any(PARALLEL_ATTR in op.attributes for op in small.walk())


def test_loops_inside_a_marked_loop_are_left_alone():
    """A loop marked by whoever built it (an int8 kernel's row blocks) is the
    outermost parallel loop of its nest: nothing inside it gets marked."""
    from xdsl.dialects import scf
    from xdsl.dialects.builtin import UnitAttr

    module = load_source(MODEL)
    convert_relay_to_loops(module)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    outer = [op for op in main.body.block.ops if isinstance(op, scf.ForOp)]
    for loop in outer:
        loop.attributes[PARALLEL_ATTR] = UnitAttr()
    assert mark_parallel_loops(main) == 0
    marked = [op for op in main.walk() if PARALLEL_ATTR in op.attributes]
    assert marked == outer


@pytest.fixture(scope="module")
def parallel_model() -> byoc.CompiledModule:
    return byoc.compile(MODEL, targets=["ccompiler"], cache=False)


def test_generated_c_runs_loops_on_the_pool_and_links_libbyoc(parallel_model):
    (artifact,) = parallel_model.artifacts
    source = artifact.sources["ccompiler.c"]
    assert source.count("byoc_rt_parallel_for(") == 4
    assert '#include "byoc_runtime.h"' in source
    assert "#pragma" not in source and "omp.h" not in source
    assert artifact.libraries[0] == libbyoc.library()
    assert artifact.vendor_libraries == [libbyoc.library()]
    assert list(libbyoc.link_flags()) == artifact.link_flags


def test_byoc_parallel_0_builds_sequential_code(monkeypatch):
    monkeypatch.setenv("BYOC_PARALLEL", "0")
    assert not libbyoc.parallel_code()
    model = byoc.compile(MODEL, targets=["ccompiler"], cache=False)
    (artifact,) = model.artifacts
    assert "byoc_rt_" not in artifact.sources["ccompiler.c"]
    assert artifact.link_flags == [] and artifact.vendor_libraries == []
    check(model)


def check(model) -> None:
    args = inputs()
    got = model(*args)
    want = byoc.run_reference(load_source(MODEL), args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    shapes = [(301, 257), (301, 257), (1, 7, 65, 66), (129, 257)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_any_thread_count_gives_the_same_answer(threads, parallel_model):
    before = libbyoc.threads()
    libbyoc.set_threads(threads)
    try:
        check(parallel_model)
    finally:
        libbyoc.set_threads(before)


def test_the_thread_count_of_the_environment_is_the_pool_s(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import byoc
        from byoc.runtime import libbyoc
        from test_parallel_loops import MODEL, check
        check(byoc.compile(MODEL, targets=["ccompiler"], cache=False))
        print(libbyoc.threads())
        """
    )
    env = {**os.environ, "BYOC_NUM_THREADS": "3", "BYOC_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"


FORK = """
import os, sys
import numpy as np
import byoc
sys.path.insert(0, {tests!r})
from test_parallel_loops import MODEL, check
model = byoc.compile(MODEL, targets={targets!r}, cache=False)
check(model)  # the parent's pool threads exist from here on
pid = os.fork()
if pid == 0:
    try:
        check(model)
    except BaseException:
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
check(model)
print("child", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("targets", [["ccompiler"], ["cblas", "ccompiler"]])
def test_a_forked_child_runs_the_model(targets, tmp_path):
    # Threads do not survive fork(): the child starts a pool of its own.
    pytest.importorskip("scipy_openblas32")
    script = FORK.format(tests=os.path.dirname(__file__), targets=targets)
    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "child 0"


def test_code_without_parallel_loops_does_not_link_libbyoc():
    small = (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}\n"
    )
    (artifact,) = byoc.compile(small, targets=["ccompiler"], cache=False).artifacts
    assert "byoc_rt_" not in artifact.sources["ccompiler.c"]
    assert artifact.libraries[0] != libbyoc.library() and artifact.link_flags == []
