"""The files a contributor looks for: LICENSE and CONTRIBUTING.md say true things."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_license_is_apache_2_and_the_package_says_so():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a pointer
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}


def test_every_path_contributing_names_exists():
    """A guide pointing at moved files is a trap: every `path` it names must be there."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    paths = {
        p
        for p in re.findall(r"`([\w./-]+)`", text)
        if "/" in p or re.search(r"\.(py|md|mlir|toml)$", p)
    }
    paths = {p for p in paths if not p.startswith(".") or p == ".ci/run"}  # `.mlir`
    assert len(paths) > 20

    def exists(path: str) -> bool:
        if (ROOT / path).exists():
            return True
        # A bare name (`nn.py`) sits in a folder the text named just before.
        name = path.rstrip("/")
        folders = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith(".")]
        return "/" not in name and any(any(d.glob(f"**/{name}")) for d in folders)

    missing = [p for p in sorted(paths) if not exists(p)]
    assert not missing, f"CONTRIBUTING.md names files that do not exist: {missing}"


def test_contributing_covers_tests_lit_layout_ops_and_backends():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for heading in (
        "## Setting up and running the tests",
        "## Layout",
        "## Adding a relay op, end to end",
        "## Adding a backend",
    ):
        assert heading in text
    assert "python -m pytest" in text and "lit -v tests/filecheck" in text
