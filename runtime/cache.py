"""The compile cache: a compiled model saved under a key of everything it depends on.

The key covers the model's text, the backends asked for (and the code of the
modules defining them), byoc's own code and the host CPU, so an edit to any of
them is a miss, never a stale hit. Entries are written atomically by
`CompiledModule.save`; a corrupted entry is recompiled and replaced.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from byoc.backends import Backend


@cache
def byoc_fingerprint() -> str:
    """Hash of byoc's own Python sources: any change to the compiler is a miss."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    paths = [root / "__init__.py"]
    for folder in ("dialects", "passes", "backends", "targets", "frontend", "runtime"):
        paths += (root / folder).rglob("*.py")
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _backend_fingerprint(backend: Backend) -> str:
    module = sys.modules.get(getattr(backend.codegen, "__module__", ""), None)
    try:
        source = inspect.getsourcefile(module) if module else None
    except TypeError:
        source = None
    content = Path(source).read_bytes() if source and Path(source).exists() else b""
    return f"{backend.name}:{hashlib.sha256(content).hexdigest()}"


def cache_key(content: bytes, backends: list[Backend], host: dict[str, Any]) -> str:
    """The key of a compile of `content` for `backends` on `host`."""
    digest = hashlib.sha256()
    digest.update(content)
    digest.update(
        json.dumps(
            {
                "byoc": byoc_fingerprint(),
                "backends": [_backend_fingerprint(b) for b in backends],
                "host": host,
            },
            sort_keys=True,
        ).encode()
    )
    return digest.hexdigest()[:40]


def entry_path(key: str) -> Path:
    from byoc.runtime.toolchain import cache_dir

    return cache_dir() / "models" / f"{key}.byoc"
