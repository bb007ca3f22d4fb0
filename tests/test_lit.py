"""Runs the lit + FileCheck suite under tests/filecheck as one pytest test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def test_filecheck_suite():
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        [str(bindir / "lit"), "-v", str(FILECHECK_DIR)],
        capture_output=True,
        text=True,
        env=env,
    )
    failed = [line for line in proc.stdout.splitlines() if line.startswith(("FAIL", "UNRESOLVED"))]
    assert proc.returncode == 0, "\n".join(failed) + "\n" + proc.stdout[-20000:] + proc.stderr[-5000:]
    assert "Passed" in proc.stdout
