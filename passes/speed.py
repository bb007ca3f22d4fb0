"""Making whole-graph passes fast on large models."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def garbage_collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a pass builds many IR objects.

    xDSL IR is full of reference cycles, so each collection walks the whole
    module; during a pass that creates objects per op this makes the pass
    quadratic. Collection resumes (and catches up) afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
