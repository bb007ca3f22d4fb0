"""byoc-models: the onnx wheel's real models, listed and located by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from byoc.frontend.diagnostics import ByocError
from byoc.frontend.onnx import shipped
from byoc.tools import byoc_models

pytest.importorskip("onnx")


def test_lists_the_light_models_with_their_files(capsys):
    assert byoc_models.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(shipped.LIGHT_MODELS)
    assert all(Path(line.split()[1]).is_file() for line in lines)


def test_all_lists_every_suite_model_by_a_name_it_locates(capsys):
    assert byoc_models.main(["--all"]) == 0
    names = capsys.readouterr().out.splitlines()[len(shipped.LIGHT_MODELS) :]
    assert len(names) > 100  # 140 folders in onnx 1.16+
    assert {n.split("/")[0] for n in names} == set(shipped.SUITES[1:])
    for name in names[:: len(names) // 5]:
        assert shipped.locate(name).name == "model.onnx"


@pytest.mark.parametrize("name", ["squeezenet", "light_squeezenet", "light/squeezenet"])
def test_prints_the_path_of_one(name, capsys):
    assert byoc_models.main([name]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == shipped.light_model_path("squeezenet") and path.is_file()


@pytest.mark.parametrize(
    "name", ["squeezenet2", "simple/..", "simple/../light", "light/resnet", "nosuite/test_add", "simple/"]
)
def test_an_unknown_name_is_one_error(name, capsys):
    with pytest.raises(ByocError, match="no shipped model named"):
        shipped.locate(name)
    assert byoc_models.main([name]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no shipped model named") and "Traceback" not in err
