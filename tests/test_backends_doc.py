"""Every code block of docs/backends.md runs, as a new vendor would run it.

Blocks headed by a file name (`# mybackend.py`, `// model.mlir`) are written
to a fresh directory; the `sh` commands run there (`pip install .` installs
the package into a private directory on the tools' path); the other Python
blocks run in order as one script, and a `text` block after one is what it
must print; `c` blocks must compile with byoc's warning flags. A block of any
other kind fails the test, so nothing on the page goes unchecked.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from byoc.runtime.toolchain import _compiler_has_openmp as compiler_has_openmp
from byoc.runtime.toolchain import compiler

DOC = Path(__file__).resolve().parent.parent / "docs" / "backends.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
FILE_HEADER = re.compile(r"(?:#|//) ([\w./-]+\.\w+)\n")
MARKER = "----- docs/backends.md snippet {} -----"


@dataclass
class Block:
    kind: str
    text: str
    line: int

    @property
    def file(self) -> str | None:
        match = FILE_HEADER.match(self.text)
        return match.group(1) if match and self.kind in ("python", "toml", "mlir") else None


def blocks(text: str) -> list[Block]:
    return [
        Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
    ]


@dataclass
class Run:
    """What running the page produced."""

    directory: Path
    files: dict[str, str] = field(default_factory=dict)
    commands: list[tuple[str, subprocess.CompletedProcess[str]]] = field(default_factory=list)
    snippets: list[Block] = field(default_factory=list)
    expected: dict[int, Block] = field(default_factory=dict)
    """Expected output by snippet index."""
    outputs: list[str] = field(default_factory=list)
    script: subprocess.CompletedProcess[str] | None = None
    c_blocks: list[Block] = field(default_factory=list)


def run_command(
    line: str, cwd: Path, site: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(line)
    if argv[:2] == ["pip", "install"]:
        # Into a private directory: installing into the test environment
        # would leak the backend into other runs.
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps"]
        argv = [*pip, "--target", str(site), *argv[2:]]
    else:
        argv[0] = str(BIN / argv[0])
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Run:
    directory = tmp_path_factory.mktemp("vendor")
    site = tmp_path_factory.mktemp("site")
    # The page shows byoc's defaults: no tracebacks, OpenMP on when cc has it.
    env = {**os.environ, "PYTHONPATH": str(site), "BYOC_OPENMP": "1"}
    env.pop("BYOC_DEBUG", None)
    run = Run(directory)
    previous: Block | None = None
    for block in blocks(DOC.read_text()):
        if block.file:
            (directory / block.file).write_text(block.text)
            run.files[block.file] = block.text
        elif block.kind == "python":
            run.snippets.append(block)
        elif block.kind == "text":
            assert previous is not None and previous.kind == "python" and not previous.file, (
                f"docs/backends.md:{block.line}: a text block must follow a Python snippet"
            )
            run.expected[len(run.snippets) - 1] = block
        elif block.kind == "sh":
            for line in block.text.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    run.commands.append((line, run_command(line, directory, site, env)))
        elif block.kind == "c":
            run.c_blocks.append(block)
        else:
            pytest.fail(f"docs/backends.md:{block.line}: no test runs a '{block.kind}' block")
        previous = block
    script = "\n".join(
        f"print({MARKER.format(i)!r}, flush=True)\n{b.text}" for i, b in enumerate(run.snippets)
    )
    run.script = subprocess.run(
        [sys.executable, "-c", script], cwd=directory, capture_output=True, text=True, env=env
    )
    parts = re.split(r"^----- docs/backends.md snippet \d+ -----\n", run.script.stdout, flags=re.M)
    run.outputs = parts[1:]
    return run


def test_every_command_succeeds(page):
    assert [line for line, _ in page.commands][0] == "pip install ."
    for line, proc in page.commands:
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, line


def test_the_commands_show_what_the_page_says(page):
    out = {line: proc.stdout for line, proc in page.commands}
    report = out["byoc-opt model.mlir --annotate=mybackend --partition -t report"]
    assert "backend mybackend: 2 function(s), 3 op(s)" in report
    assert "mybackend does not broadcast" in report
    assert "outputs match the reference" in out[
        "byoc-run model.mlir --annotate=mybackend,ccompiler --check=functions"
    ]
    assert "matches the reference" in out["byoc-run large.mlir --annotate=mybackend --check"]
    # Large enough to be parallel: the pragma is there whenever OpenMP is.
    c = out["byoc-translate large.mlir --emit-c --annotate=mybackend"]
    assert ("#pragma omp parallel for" in c) == compiler_has_openmp(compiler())
    assert "static const float const0[6]" in subprocess.run(
        [str(BIN / "byoc-translate"), "model.mlir", "--emit-c", "--annotate=mybackend"],
        cwd=page.directory,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(page.directory), "BYOC_OPENMP": "1"},
    ).stdout


def test_every_python_snippet_runs_and_prints_what_is_shown(page):
    assert page.script is not None
    assert page.script.returncode == 0, page.script.stderr
    assert len(page.outputs) == len(page.snippets)
    assert len(page.expected) >= 5
    for index, block in page.expected.items():
        assert page.outputs[index].strip() == block.text.strip(), (
            f"docs/backends.md:{block.line}: the snippet before prints\n{page.outputs[index]}"
        )


def test_only_the_fallback_snippet_warns(page):
    """A snippet whose codegen broke would still print the right numbers (it
    falls back): its warning is what gives it away."""
    assert page.script is not None
    warnings = [line for line in page.script.stderr.splitlines() if "Warning" in line]
    assert len(warnings) == 1, page.script.stderr
    assert "backend 'flaky'" in warnings[0] and "relu is not ready" in warnings[0]


def test_the_backend_is_one_file_without_xdsl(page):
    """A new backend needs one file and an entry point, and no xDSL."""
    [backend] = [name for name in page.files if name.endswith(".py")]
    assert "xdsl" not in page.files[backend]
    assert 'mybackend = "mybackend:backend"' in page.files["pyproject.toml"]


def test_c_blocks_compile(page, tmp_path):
    assert page.c_blocks
    for block in page.c_blocks:
        source = tmp_path / "block.c"
        source.write_text(block.text)
        proc = subprocess.run(
            [*shlex.split(compiler()), "-fsyntax-only", "-Wall", "-Wextra", "-Werror", str(source)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"docs/backends.md:{block.line}: {proc.stderr}"
