"""The stages of a compile: timed, shown on a terminal while a slow compile runs.

A compile is a sequence of named stages (import, simplify, partition, codegen
per backend, C compile, host JIT, cache...). Code anywhere in the pipeline
marks its stage with

    from byoc.runtime.progress import stage

    with stage("simplify"):
        ...

which costs nothing outside a compile. `byoc.compile` collects the seconds of
each stage (`CompiledModule.timings`, `byoc-run --timings`); stages running at
once in several threads (backends' codegen, the C compiler, LLVM) each count
their own time. A compile that has run for a second shows, on stderr when it
is a terminal, one line naming the stages under way, rewritten in place and
cleared at the end; `quiet` (`--quiet`) hides it.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, TypeVar

T = TypeVar("T")

SHOW_AFTER = 1.0
"""Seconds a compile runs before its progress line appears."""

_REFRESH = 0.1


class Stages:
    """The stages of one compile: their seconds, and the ones under way."""

    def __init__(self, stream: IO[str] | None = None):
        self.seconds: dict[str, float] = {}
        """Seconds spent in each stage, in the order the stages first began."""
        self._running: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._stream = stream
        self._stop = threading.Event()
        self._shown = False
        self._ticker: threading.Thread | None = None
        if stream is not None:
            self._ticker = threading.Thread(target=self._tick, name="byoc-progress", daemon=True)
            self._ticker.start()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        token = object()
        start = time.perf_counter()
        with self._lock:
            self.seconds.setdefault(name, 0.0)
            self._running[id(token)] = (name, start)
        try:
            yield
        finally:
            with self._lock:
                del self._running[id(token)]
                self.seconds[name] += time.perf_counter() - start

    @property
    def elapsed(self) -> float:
        """Seconds since the compile began."""
        return time.perf_counter() - self._start

    def close(self) -> None:
        """Stop showing progress, and clear the line if one was shown."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._shown and self._stream is not None:
            self._stream.write("\r\x1b[K")
            self._stream.flush()

    def _tick(self) -> None:
        # First wake exactly when the line is due, then every _REFRESH.
        delay = max(0.0, SHOW_AFTER - self.elapsed)
        while not self._stop.wait(delay):
            delay = _REFRESH
            elapsed = time.perf_counter() - self._start
            if elapsed < SHOW_AFTER:
                continue
            with self._lock:
                names = list(dict.fromkeys(name for name, _ in self._running.values()))
            line = f"byoc: {elapsed:5.1f} s  {', '.join(names) or '...'}"
            assert self._stream is not None
            self._stream.write("\r\x1b[K" + line[:160])
            self._stream.flush()
            self._shown = True


_current: contextvars.ContextVar[Stages | None] = contextvars.ContextVar(
    "byoc_compile_stages", default=None
)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the enclosed code as stage `name` of the compile under way (if any)."""
    stages = _current.get()
    if stages is None:
        yield
        return
    with stages.stage(name):
        yield


@contextmanager
def compile_stages(quiet: bool = False) -> Iterator[Stages]:
    """Collect the stages of the compile run inside; show them on stderr when it
    is a terminal, unless `quiet`."""
    stream = None
    if not quiet and hasattr(sys.stderr, "isatty") and sys.stderr.isatty():
        stream = sys.stderr
    stages = Stages(stream)
    token = _current.set(stages)
    try:
        yield stages
    finally:
        _current.reset(token)
        stages.close()


def in_this_context(function: Callable[..., T]) -> Callable[..., T]:
    """`function`, to run in another thread within the current compile's stages."""
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return context.copy().run(function, *args, **kwargs)

    return run
