"""Shared pytest setup: a private compile cache for the whole test session."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

# Tests must not read or fill the user's cache; set before byoc compiles anything.
# A full run fills the private cache with about 2.5 GB of compiled models, so it
# goes when the session ends (a cache the caller chose is left alone).
_PRIVATE_CACHE = None
if "BYOC_CACHE_DIR" not in os.environ:
    _PRIVATE_CACHE = tempfile.mkdtemp(prefix="byoc-test-cache-")
    os.environ["BYOC_CACHE_DIR"] = _PRIVATE_CACHE


def pytest_sessionfinish(session, exitstatus):
    if _PRIVATE_CACHE is not None:
        shutil.rmtree(_PRIVATE_CACHE, ignore_errors=True)


# bench/real_models.py (the onnx wheel's real models) serves tests and benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
