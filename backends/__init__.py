"""The backend registry: every backend comes from the `byoc.backends` entry point group."""

from __future__ import annotations

import re
from functools import cache
from importlib.metadata import entry_points

from byoc.backends.spec import Artifact, Backend, Check, Composite, always
from byoc.frontend.diagnostics import ByocError

__all__ = [
    "Artifact",
    "Backend",
    "Check",
    "Composite",
    "always",
    "available_backends",
    "get_backend",
    "parse_targets",
]

ENTRY_POINT_GROUP = "byoc.backends"
DEFAULT_BACKEND = "ccompiler"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@cache
def _entry_points() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_backends() -> list[str]:
    """Names of every installed backend."""
    return sorted(_entry_points())


@cache
def get_backend(name: str) -> Backend:
    """The installed backend called `name`, or a ByocError listing the valid names."""
    ep = _entry_points().get(name)
    if ep is None:
        raise ByocError(
            f"error: unknown backend '{name}' (available: "
            f"{', '.join(available_backends()) or 'none'})"
        )
    try:
        backend = ep.load()  # type: ignore[attr-defined]
    except Exception as err:  # a broken plugin must not crash byoc
        raise ByocError(f"error: cannot load backend '{name}': {err}") from None
    if not isinstance(backend, Backend) or backend.name != name:
        raise ByocError(
            f"error: entry point '{name}' of group {ENTRY_POINT_GROUP} is not a "
            f"byoc Backend named '{name}'"
        )
    if not _NAME.match(name):
        raise ByocError(
            f"error: backend name '{name}' must match [A-Za-z][A-Za-z0-9_]*"
        )
    return backend


def parse_targets(targets: str | list[str] | tuple[str, ...] | None) -> list[Backend]:
    """Backends in priority order from `"a,b"` or `["a", "b"]`; checks each name."""
    if targets is None:
        return []
    if isinstance(targets, str):
        names = targets.split(",")
    elif isinstance(targets, (list, tuple)):
        names = list(targets)
    else:
        raise ByocError(
            f"error: targets must be backend names in priority order (a list, or a "
            f"comma-separated string), not a {type(targets).__name__}"
        )
    for name in names:
        if not isinstance(name, str):
            raise ByocError(
                f"error: targets must be backend names (strings); got {name!r} "
                f"({type(name).__name__})"
            )
    names = [n.strip() for n in names if n.strip()]
    seen: set[str] = set()
    backends: list[Backend] = []
    for name in names:
        if name in seen:
            raise ByocError(f"error: backend '{name}' is listed twice")
        seen.add(name)
        backends.append(get_backend(name))
    return backends
