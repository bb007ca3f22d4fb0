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
# libbyoc is built once per session into a private runtime folder too, which
# every test's cache (and the processes tests start) shares.
_PRIVATE = []
for _variable, _prefix in (("BYOC_CACHE_DIR", "byoc-test-cache-"), ("BYOC_RUNTIME_DIR", "byoc-test-runtime-")):
    if _variable not in os.environ:
        os.environ[_variable] = tempfile.mkdtemp(prefix=_prefix)
        _PRIVATE.append(os.environ[_variable])


def pytest_sessionfinish(session, exitstatus):
    for folder in _PRIVATE:
        shutil.rmtree(folder, ignore_errors=True)


# bench/real_models.py (the onnx wheel's real models) serves tests and benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
