"""The host entry that takes numpy arrays by address (runtime/array_entry.py):
its checks in machine code accept exactly the arrays `main` can use as they
are, and the model gives the same answers whichever path an argument takes."""

from __future__ import annotations

import numpy as np
import pytest
from cffi import FFI

import byoc
from byoc.runtime.array_entry import ARGUMENTS_NEED_CONVERSION, layout_ok

ffi = FFI()

MODEL = """\
func.func @main(%a: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %0 = relay.multiply %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = relay.sum %0 {axis = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}
"""

pytestmark = pytest.mark.skipif(not layout_ok(), reason="numpy's array layout is not the one read")


@pytest.fixture(scope="module")
def model():
    return byoc.compile(MODEL, targets=[], cache=False)


def a_values() -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(2, 3)


def status(model, a, s) -> int:
    """Call the array entry itself, with fresh outputs."""
    entry = model._array_entry()
    assert entry is not None
    expected = ffi.new("intptr_t[]", [id(np.ndarray), id(model.inputs[0].dtype), id(model.inputs[1].dtype)])
    outputs = np.empty((2, 3), np.float32), np.empty(3, np.float32)
    return entry(expected, id(a), id(s), *(id(o) for o in outputs))


def test_the_entry_takes_contiguous_arrays_of_the_right_dtype_and_shape(model):
    s = np.array(2.0, np.float32)
    assert status(model, a_values(), s) == 0
    readonly = a_values()
    readonly.flags.writeable = False
    assert status(model, readonly, s) == 0


@pytest.mark.parametrize(
    "a",
    [
        pytest.param(a_values().astype(np.float64), id="float64"),
        pytest.param(a_values().astype(">f4"), id="big-endian"),
        pytest.param(np.asfortranarray(np.ones((2, 3), np.float32)), id="fortran-order"),
        pytest.param(np.ones((2, 6), np.float32)[:, ::2], id="strided"),
        pytest.param(np.ones((3, 2), np.float32), id="other-shape"),
        pytest.param(np.ones(6, np.float32), id="other-rank"),
        pytest.param(np.ones((2, 3, 1), np.float32), id="higher-rank"),
        pytest.param(np.ones((2, 3), np.float32).view(np.recarray), id="subclass"),
        pytest.param([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], id="list"),
        pytest.param(7, id="int"),
        pytest.param("text", id="str"),
    ],
)
def test_the_entry_refuses_anything_else_without_touching_it(model, a):
    assert status(model, a, np.array(2.0, np.float32)) == ARGUMENTS_NEED_CONVERSION


def test_the_entry_checks_every_input(model):
    assert status(model, a_values(), np.array([2.0], np.float32)) == ARGUMENTS_NEED_CONVERSION
    assert status(model, a_values(), 2.0) == ARGUMENTS_NEED_CONVERSION


@pytest.mark.parametrize(
    "a",
    [
        a_values(),
        a_values().astype(np.float64),
        a_values().astype(">f4"),
        np.asfortranarray(a_values()),
        np.repeat(a_values(), 2, axis=1)[:, ::2],
        a_values().tolist(),
    ],
    ids=["fast", "float64", "big-endian", "fortran", "strided", "list"],
)
def test_every_path_gives_the_same_answer(model, a):
    product, total = model(a, np.float32(2.0))
    np.testing.assert_array_equal(product, a_values() * 2)
    np.testing.assert_array_equal(total, (a_values() * 2).sum(axis=0))


def test_wrong_arguments_are_still_clear_errors(model):
    with pytest.raises(byoc.ByocError, match=r"argument 0 \(a\) has shape \(6,\); expected \(2, 3\)"):
        model(np.ones(6, np.float32), np.float32(1))
    with pytest.raises(byoc.ByocError, match="takes 2 arguments"):
        model(a_values())


def test_a_saved_model_uses_the_entry_too(model, tmp_path):
    model.save(tmp_path / "m.byoc")
    loaded = byoc.load(tmp_path / "m.byoc")
    assert loaded._array_entry() is not None
    product, _ = loaded(a_values(), np.float32(3.0))
    np.testing.assert_array_equal(product, a_values() * 3)
