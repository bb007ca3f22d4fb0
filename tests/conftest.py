"""Shared pytest setup: a private compile cache for the whole test session."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

# Tests must not read or fill the user's cache; set before byoc compiles anything.
os.environ.setdefault("BYOC_CACHE_DIR", tempfile.mkdtemp(prefix="byoc-test-cache-"))

# bench/real_models.py (the onnx wheel's real models) serves tests and benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
