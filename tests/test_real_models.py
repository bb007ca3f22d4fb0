"""Real models nobody here wrote (bench/real_models.py): the nine light models
against their shipped outputs on the onnx runner's inputs, and with their
weights re-drawn at random against onnxruntime (logits); every float32 model
of pytorch-converted and pytorch-operator against its test_data_set_0
outputs, in both configurations.

Compiles dominate the time (the host's LLVM compile of a light model takes
tens of seconds, a loaded machine minutes), so CI compiles each light model
twice, for cblas,ccompiler (the configuration a vendor ships): its shipped
weights and random ones. The host-only cells of the light models' matrix run
in `python bench/onnx_suites.py --suite light` (shipped outputs) and
`--suite light --random-weights` (against onnxruntime); the small pytorch
models cover the host in CI.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import real_models  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.diagnostics import ByocError  # noqa: E402

ort.set_default_logger_severity(3)

CONFIGS = {"cblas,ccompiler": ["cblas", "ccompiler"], "host": []}
RTOL, ATOL = 1e-3, 1e-7
"""The onnx backend runner's tolerances (the light models' shipped outputs
are probabilities around 1e-3: 1e-7 is a tight absolute bound)."""


# --- The light models -----------------------------------------------------------


@pytest.fixture(scope="module", params=real_models.LIGHT_MODELS)
def light(request) -> tuple[str, onnx.ModelProto]:
    name = request.param
    return name, onnx.load(str(real_models.light_model_path(name)))


def test_light_model_matches_its_shipped_output(light) -> None:
    name, model = light
    compiled = byoc.compile(model, targets=CONFIGS["cblas,ccompiler"])
    got = compiled(*real_models.runner_inputs(model))
    want = real_models.light_model_output(name)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)


def test_light_model_with_random_weights_matches_onnxruntime(light) -> None:
    """The shipped weights are all 0.02, which hides wrong indexing; with
    random ones, the logits (before the final softmax, which saturates)
    must match onnxruntime's on the same file."""
    name, model = light
    randomized = real_models.without_final_softmax(real_models.with_random_weights(model, seed=1))
    inputs = real_models.runner_inputs(randomized)
    session = ort.InferenceSession(randomized.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    (want,) = session.run(None, feed)
    scale = float(np.abs(want).max())
    assert scale > 1e-3, f"{name}: the random weights give vanishing logits"
    got = byoc.compile(randomized, targets=CONFIGS["cblas,ccompiler"])(*inputs)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale, err_msg=name)


# --- pytorch-converted and pytorch-operator -------------------------------------------

AWAITING_OPS = {
    "test_AvgPool3d",
    "test_AvgPool3d_stride",
    "test_AvgPool3d_stride1_pad0_gpu_input",
    "test_Conv3d",
    "test_Conv3d_dilated",
    "test_Conv3d_dilated_strided",
    "test_Conv3d_groups",
    "test_Conv3d_no_bias",
    "test_Conv3d_stride",
    "test_Conv3d_stride_padding",
    "test_ConvTranspose2d",
    "test_ConvTranspose2d_no_bias",
    "test_MaxPool3d",
    "test_MaxPool3d_stride",
    "test_MaxPool3d_stride_padding",
    "test_operator_convtranspose",
}
"""Models whose operators (3-d convolution and pooling, ConvTranspose) the
op-set work adds: refused now with a message naming them, matching their
outputs once it lands (test_models_awaiting_operators takes either)."""

INTEGER_ARITHMETIC = {"test_operator_non_float_params"}
"""Adds int64 tensors: byoc's arithmetic is on floats (its inputs are not float32)."""


def _arrays(folder: Path, kind: str) -> list[np.ndarray]:
    files = sorted(folder.glob(f"test_data_set_0/{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]


def _suite_models() -> list[Path]:
    return [
        folder
        for suite in ("pytorch-converted", "pytorch-operator")
        for folder in real_models.model_dirs(suite)
        if folder.name not in AWAITING_OPS | INTEGER_ARITHMETIC
    ]


SUITE_MODELS = _suite_models()


@pytest.mark.parametrize("folder", SUITE_MODELS, ids=[f"{f.parent.name}/{f.name}" for f in SUITE_MODELS])
def test_pytorch_suite_model_matches_its_outputs(folder: Path) -> None:
    """Each model on its own: one big merged model compiles slower than its
    parts (LLVM's optimiser is superlinear in a function's size)."""
    model = onnx.load(str(folder / "model.onnx"))
    inputs, expected = _arrays(folder, "input"), _arrays(folder, "output")
    for config, targets in CONFIGS.items():
        got = byoc.compile(model, targets=targets)(*inputs)
        got = list(got) if isinstance(got, tuple) else [got]
        assert len(got) == len(expected)
        for i, (g, w) in enumerate(zip(got, expected)):
            assert g.shape == w.shape and g.dtype == w.dtype, f"{config} output {i}"
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"{config} output {i}")


def test_every_suite_model_is_tested() -> None:
    """Every model of the two suites is tested, awaited or integer arithmetic."""
    total = sum(1 for s in ("pytorch-converted", "pytorch-operator") for _ in real_models.model_dirs(s))
    assert len(SUITE_MODELS) == total - len(AWAITING_OPS) - len(INTEGER_ARITHMETIC) > 90


AWAITED_REFUSAL = re.compile(
    r"only 1-d and 2-d (Conv|MaxPool|AveragePool) is supported|unsupported ONNX nodes?: .*\(ConvTranspose\)"
)
"""How byoc refuses those models until the op-set work lands."""


@pytest.mark.parametrize("name", sorted(AWAITING_OPS))
def test_models_awaiting_operators(name: str) -> None:
    """Each is refused with the message naming what is missing, or, once the
    op-set work has landed, matches its outputs (then it belongs in
    SUITE_MODELS): never a crash or a wrong answer."""
    folder = next(
        f for s in ("pytorch-converted", "pytorch-operator") for f in real_models.model_dirs(s) if f.name == name
    )
    model = onnx.load(str(folder / "model.onnx"))
    for config, targets in CONFIGS.items():
        try:
            compiled = byoc.compile(model, targets=targets)
        except ByocError as err:
            assert AWAITED_REFUSAL.search(str(err)), str(err)
            continue
        got = compiled(*_arrays(folder, "input"))
        got = list(got) if isinstance(got, tuple) else [got]
        for g, w in zip(got, _arrays(folder, "output")):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=config)
