"""The real models shipped inside the onnx wheel, by name.

`onnx/backend/test/data/` holds the nine "light" CNN architectures (ResNet-50,
DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet,
ZFNet-512) as `light/light_<name>.onnx`, and three suites of exported models
(`pytorch-converted`, `pytorch-operator`, `simple`), one folder per model with
its `model.onnx` and `test_data_set_*/`. Every machine with byoc's `[test]`
extra has them, so the tour, the tests and the benchmarks run on models nobody
here wrote without downloading anything. `byoc-models` lists and locates them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from byoc.frontend.diagnostics import ByocError

LIGHT_MODELS = (
    "resnet50",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "bvlc_alexnet",
    "zfnet512",
)
"""The light architectures, by the name in `light_<name>.onnx`."""

SUITES = ("light", "pytorch-converted", "pytorch-operator", "simple")
"""The model suites of onnx's shipped test data."""


def test_data_dir() -> Path:
    """`onnx/backend/test/data` of the installed onnx package."""
    try:
        import onnx
    except ImportError as e:
        raise ByocError(
            "error: the shipped models come with the onnx package; "
            'install it (pip install -e ".[test]")'
        ) from e
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def light_model_path(name: str) -> Path:
    """The `.onnx` file of light architecture `name` (one of LIGHT_MODELS)."""
    if name not in LIGHT_MODELS:
        raise ValueError(f"unknown light model {name!r}; one of {', '.join(LIGHT_MODELS)}")
    return test_data_dir() / "light" / f"light_{name}.onnx"


def model_dirs(suite: str) -> Iterator[Path]:
    """The test folders of a suite (`model.onnx` plus `test_data_set_*/`), sorted.

    The light suite has no folders (its files are `light_<name>.onnx`)."""
    root = test_data_dir() / suite
    for path in sorted(root.iterdir()):
        if (path / "model.onnx").exists():
            yield path


def locate(name: str) -> Path:
    """The `.onnx` file a shipped model's name denotes: a light model
    (`squeezenet`, or `light_squeezenet`) or `<suite>/<folder>` (e.g.
    `pytorch-converted/test_ConvTranspose2d`)."""
    light = name.removeprefix("light/").removeprefix("light_")
    if light in LIGHT_MODELS:
        return light_model_path(light)
    suite, _, folder = name.partition("/")
    if suite in SUITES[1:] and folder and "/" not in folder and folder not in (".", ".."):
        path = test_data_dir() / suite / folder / "model.onnx"
        if path.is_file():
            return path
    raise ByocError(
        f"error: no shipped model named {name!r}; light models: {', '.join(LIGHT_MODELS)}; "
        f"or <suite>/<test> with suite one of {', '.join(s for s in SUITES if s != 'light')} "
        "(byoc-models --all lists them)"
    )
