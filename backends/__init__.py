"""The backend registry: every backend comes from the `byoc.backends` entry point group."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from importlib.metadata import entry_points

from byoc.backends.errors import BackendError, origin, register_origin
from byoc.backends.kernel import (
    Constant,
    Kernel,
    KernelOp,
    Value,
    kernel_of,
    kernels_for,
    kernels_of,
    op_view,
)
from byoc.backends.spec import Artifact, Backend, Check, Composite, always
from byoc.frontend.diagnostics import ByocError

__all__ = [
    "Artifact",
    "Backend",
    "BackendError",
    "Check",
    "Composite",
    "Constant",
    "Kernel",
    "KernelOp",
    "Value",
    "always",
    "available_backends",
    "get_backend",
    "kernel_of",
    "kernels_for",
    "kernels_of",
    "op_view",
    "origin_of",
    "backend_fingerprint",
    "parse_targets",
    "resolve_targets",
    "target_items",
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


def _unknown_backend(name: str) -> ByocError:
    return ByocError(
        f"error: unknown backend '{name}' (available: "
        f"{', '.join(available_backends()) or 'none'})"
    )


@cache
def get_backend(name: str) -> Backend:
    """The installed backend called `name`, or a ByocError listing the valid names."""
    ep = _entry_points().get(name)
    if ep is None:
        raise _unknown_backend(name)
    try:
        backend = ep.load()  # type: ignore[attr-defined]
    except Exception as err:  # a broken plugin must not crash byoc
        raise ByocError(f"error: cannot load backend '{name}': {err}") from None
    if not isinstance(backend, Backend) or backend.name != name:
        raise ByocError(
            f"error: entry point '{name}' of group {ENTRY_POINT_GROUP} is not a "
            f"byoc Backend named '{name}'"
        )
    distribution = getattr(getattr(ep, "dist", None), "name", None)
    register_origin(backend, name, distribution or ep.value.split(":")[0])
    check_backend(backend)
    return backend


def origin_of(name: str) -> str:
    """Where the backend called `name` comes from, as `origin` says, without
    loading it: the last Backend object of that name checked in this process,
    else the distribution of its entry point."""
    seen = _SEEN.get(name)
    if seen is not None:
        return origin(seen)
    ep = _entry_points().get(name)
    distribution = getattr(getattr(ep, "dist", None), "name", None)
    return f"package {distribution}" if distribution else "origin unknown"


_SEEN: dict[str, Backend] = {}


def is_registered(backend: Backend) -> bool:
    """Whether `backend` is the installed backend of its name (not an object
    being tried before it is packaged)."""
    if backend.name not in _entry_points():
        return False
    try:
        return get_backend(backend.name) is backend
    except ByocError:
        return False


@cache
def relay_op_names() -> frozenset[str]:
    """Every relay op a backend may name in its ops map or composites."""
    from byoc.dialects import relay

    return frozenset(op.name for op in relay.RELAY_OPS)


def nearest_op(name: str) -> str | None:
    """The relay op name a typo'd `name` most likely meant (`relay.relu` -> `relay.nn.relu`)."""
    known = sorted(relay_op_names())
    leaf = name.rsplit(".", 1)[-1]
    same_leaf = [k for k in known if k.rsplit(".", 1)[-1] == leaf]
    if len(same_leaf) == 1:
        return same_leaf[0]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def check_backend(backend: Backend) -> None:
    """A ByocError, blamed on `backend`, if its name is not a C identifier or its
    ops map or composites name an op that does not exist."""
    if not _NAME.match(backend.name):
        raise ByocError(
            f"error: backend name '{backend.name}' must match [A-Za-z][A-Za-z0-9_]*"
        )
    _SEEN[backend.name] = backend
    known = relay_op_names()
    named = [(n, "ops") for n in backend.ops] + [
        (n, f"composite {c.name}") for c in backend.composites for n in c.ops
    ]
    for op_name, place in named:
        if op_name in known:
            continue
        guess = nearest_op(op_name)
        hint = f"; did you mean {guess}?" if guess else " (docs/ops.md lists the relay ops)"
        raise BackendError(
            f"error: backend '{backend.name}' ({origin(backend)}): its {place} name "
            f"'{op_name}', which is not a relay op{hint}",
            backend.name,
        )


def parse_targets(
    targets: str | Backend | Sequence[str | Backend] | None,
) -> list[Backend]:
    """Backends in priority order from `"a,b"`, or a list of names and `Backend`
    objects (a backend tried before it is packaged); checks each one."""
    return resolve_targets(target_items(targets))


def target_items(
    targets: str | Backend | Sequence[str | Backend] | None,
) -> list[str | Backend]:
    """The targets in priority order: installed backends by name, checked
    against the entry points without loading them (a cached compile never
    needs their code), and `Backend` objects, checked."""
    if targets is None:
        return []
    if isinstance(targets, Backend):
        targets = [targets]
    if isinstance(targets, str):
        items: list[object] = targets.split(",")
    elif isinstance(targets, (list, tuple)):
        items = list(targets)
    else:
        raise ByocError(
            f"error: targets must be backend names in priority order (a list, or a "
            f"comma-separated string; a list may hold byoc.backends.Backend objects "
            f"too), not a {type(targets).__name__}"
        )
    seen: set[str] = set()
    result: list[str | Backend] = []
    for item in items:
        if isinstance(item, Backend):
            check_backend(item)
            name = item.name
        elif isinstance(item, str):
            name = item.strip()
            if not name:
                continue
            if name not in _entry_points():
                raise _unknown_backend(name)
        else:
            raise ByocError(
                f"error: targets must be backend names (strings); got {item!r} "
                f"({type(item).__name__}); a target may also be a byoc.backends.Backend"
            )
        if name in seen:
            raise ByocError(f"error: backend '{name}' is listed twice")
        seen.add(name)
        result.append(item if isinstance(item, Backend) else name)
    return result


def resolve_targets(items: Sequence[str | Backend]) -> list[Backend]:
    """The Backend objects of `target_items`' result, loading the named ones."""
    return [get_backend(item) if isinstance(item, str) else item for item in items]


@cache
def backend_fingerprint(name: str) -> str:
    """What identifies the code of installed backend `name`, read without
    importing it: its entry point and the bytes of the module it names (byoc's
    own backends are in byoc's fingerprint as well)."""
    from importlib.util import find_spec

    value = str(getattr(_entry_points()[name], "value", ""))
    digest = hashlib.sha256(f"{name}\0{value}\0".encode())
    try:
        spec = find_spec(value.split(":")[0])
        origin = spec.origin if spec is not None else None
        if origin:
            digest.update(Path(origin).read_bytes())
    except (ImportError, OSError, ValueError):
        pass  # loading it reports the problem
    return f"{name}:{digest.hexdigest()}"
