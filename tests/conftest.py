"""Shared pytest setup: a private compile cache for the whole test session."""

from __future__ import annotations

import os
import tempfile

# Tests must not read or fill the user's cache; set before byoc compiles anything.
os.environ.setdefault("BYOC_CACHE_DIR", tempfile.mkdtemp(prefix="byoc-test-cache-"))
