"""Failures inside a backend's own code, attributed to it.

byoc runs a backend's code at a few points: its op checks and pattern checks
(annotate), its codegen and the C it compiles (build), its source printer
(`--emit-c`) and its loader (`byoc.load`). An exception there is the
backend's, not byoc's: it becomes one `BackendError` naming the backend, the
package it came from, what it was doing and on which op or function.
`$BYOC_DEBUG=1` (the CLIs' `--debug`) appends the backend's traceback.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from byoc.frontend.diagnostics import ByocError

if TYPE_CHECKING:
    from byoc.backends.spec import Backend

T = TypeVar("T")

_ORIGINS: dict[str, tuple[object, str]] = {}
"""Backend name -> (the registered object, the distribution that installed it)."""


def debug_enabled() -> bool:
    """Whether `$BYOC_DEBUG` asks for tracebacks of backend failures."""
    return os.environ.get("BYOC_DEBUG", "").strip().lower() not in ("", "0", "no", "off", "false")


def register_origin(backend: object, name: str, distribution: str) -> None:
    """Remember which installed distribution an entry point's backend came from."""
    _ORIGINS[name] = (backend, distribution)


def _defining_module(backend: Backend) -> str:
    code = backend.codegen or backend.kernel_codegen
    return str(getattr(code, "__module__", None) or "unknown")


def origin(backend: Backend) -> str:
    """Where `backend` comes from: `package <distribution>`, or `module <name>`
    for a Backend object passed to `byoc.compile` before it was packaged."""
    registered = _ORIGINS.get(backend.name)
    if registered is not None and registered[0] is backend:
        return f"package {registered[1]}"
    module = _defining_module(backend)
    if module.split(".")[0] == "byoc":
        return "package byoc"
    return f"module {module}"


def is_builtin(backend: Backend) -> bool:
    """Whether `backend` is one of byoc's own (its failures are byoc bugs)."""
    return origin(backend) == "package byoc"


class BackendError(ByocError):
    """An error raised by a backend's own code, or by C its codegen wrote.

    `detail` is what went wrong, without the backend and the place (a
    fallback's reason)."""

    def __init__(self, message: str, backend: str, detail: str = ""):
        super().__init__(message)
        self.backend = backend
        self.detail = detail or message


def blame(backend: Backend, stage: str, where: str, err: BaseException) -> BackendError:
    """A BackendError for `err`, raised while `backend` ran its `stage` on `where`."""
    from byoc.runtime.toolchain import CCompileError

    head = f"error: backend '{backend.name}' ({origin(backend)}): {stage}"
    if where:
        head += f" for {where}"
    builtin = is_builtin(backend)
    if isinstance(err, CCompileError):
        detail = f"its generated C does not compile{' (a byoc bug)' if builtin else ''}:\n{err.output}"
        return BackendError(f"{head}: {detail}\n$ {err.command}", backend.name, detail)
    if isinstance(err, ByocError):
        detail = str(err).strip().removeprefix("error: ")
        return BackendError(f"{head}: {detail}", backend.name, detail)
    detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    culprit = "a byoc bug" if builtin else "an error in the backend, not in byoc"
    body = f"{head} failed: {detail}\n  ({culprit}"
    if debug_enabled():
        body += "; its traceback follows)\n" + _traceback(err)
    else:
        body += "; BYOC_DEBUG=1 or --debug shows its traceback)"
    return BackendError(body.rstrip(), backend.name, detail)


def _traceback(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip()


def run_backend_code(
    backend: Backend, stage: str, where: str | Callable[[], str], fn: Callable[..., T], *args: Any
) -> T:
    """`fn(*args)`, with any failure turned into a BackendError blaming `backend`.

    `where` may be a function, called only on failure (describing an op costs
    more than checking it)."""
    try:
        return fn(*args)
    except BackendError:
        raise
    except Exception as err:
        place = where() if callable(where) else where
        raise blame(backend, stage, place, err) from err


class BackendWarning(UserWarning):
    """A backend's failure made byoc change course (e.g. its codegen fell back)."""


def warn(message: str) -> None:
    """Warn (on stderr, once per message and place) that a backend made byoc change course."""
    import warnings

    # Not attributed to a line of byoc (Python would print that line too).
    warnings.warn_explicit(message, BackendWarning, "byoc", 0)


def install_warning_format() -> None:
    """Print byoc's warnings as one `warning: ...` line, without Python's file
    and line (the CLIs call it)."""
    import warnings

    previous = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):  # noqa: ANN001
        if issubclass(category, BackendWarning):
            return f"warning: {message}\n"
        return previous(message, category, filename, lineno, line)

    warnings.formatwarning = formatwarning


@dataclass(frozen=True)
class Fallback:
    """A function a backend could not generate code for: byoc re-partitioned its
    ops among the remaining backends and the host (runtime/fallback.py)."""

    backend: str
    function: str
    """The function's name in the partitioned IR, e.g. `vendoradd_0`."""
    ops: tuple[str, ...]
    """The relay ops it held, in order."""
    reason: str
    """The backend's error."""
    placement: Mapping[str, int] = field(default_factory=dict)
    """Where those ops run now: backend (or `host`) -> how many."""
    positions: tuple[int, ...] = ()
    """The ops' positions among the model's graph ops, to partition it again."""

    def __str__(self) -> str:
        names = ", ".join(dict.fromkeys(self.ops))
        now = " and ".join(
            f"{'the host' if k == 'host' else k} ({n})" for k, n in self.placement.items()
        )
        return (
            f"backend '{self.backend}' could not generate code for @{self.function} "
            f"({len(self.ops)} op(s): {names}); they run on {now or 'the host'}: "
            f"{summary(self.reason)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "function": self.function,
            "ops": list(self.ops),
            "reason": self.reason,
            "placement": dict(self.placement),
            "positions": list(self.positions),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Fallback:
        return Fallback(
            str(data["backend"]),
            str(data["function"]),
            tuple(str(o) for o in data["ops"]),
            str(data["reason"]),
            {str(k): int(v) for k, v in dict(data.get("placement", {})).items()},
            tuple(int(i) for i in data.get("positions", [])),
        )


def summary(detail: str) -> str:
    """The gist of a backend's error in one line: its first line, and for a C
    compile failure the compiler's first error."""
    lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    errors = [line for line in lines[1:] if "error:" in line]
    return f"{lines[0]} {errors[0]}" if errors else lines[0]
