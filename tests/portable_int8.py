"""Runs a model in a process of its own on libbyoc's portable int8 loop
($BYOC_RT_INT8_PORTABLE forces it on a CPU with VNNI; libbyoc reads it once
per process), for the tests of the int8 kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SCRIPT = """
import sys
import numpy as np
import byoc
from byoc.runtime import libbyoc

text = open(sys.argv[1]).read()
inputs = list(np.load(sys.argv[2]).values())
outputs = byoc.compile(text, targets=["ccompiler"])(*inputs)
np.savez(sys.argv[3], *outputs)
print("vnni", libbyoc.int8_uses_vnni())
"""


def run_portably(text: str, inputs: Sequence[np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    """The outputs of relay `text` compiled for ccompiler on `inputs`,
    computed without VNNI (checked)."""
    (tmp_path / "model.mlir").write_text(text)
    np.savez(tmp_path / "inputs.npz", *inputs)
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {**os.environ, "BYOC_RT_INT8_PORTABLE": "1"}
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path / "model.mlir"),
         str(tmp_path / "inputs.npz"), str(tmp_path / "out.npz")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "vnni False" in proc.stdout
    return list(np.load(tmp_path / "out.npz").values())
