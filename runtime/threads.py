"""How many threads compiled models run on in this process: `byoc.set_threads`.

Two things hold threads: libbyoc's pool, which every parallel loop of
generated C runs on (ccompiler's loops, cblas's split products and libbyoc's
kernels), and OpenBLAS, which cblas's C calls. While backends generate
parallel C (`libbyoc.parallel_code()`, the default) the pool splits each
product and OpenBLAS must stay single-threaded inside each chunk, or its own
threads would spin against the pool's workers; with `$BYOC_PARALLEL=0` the C
is sequential and OpenBLAS threads each product itself.

The pool reads `$BYOC_NUM_THREADS` (else `$OMP_NUM_THREADS`) once, at its first
loop: changing the environment afterwards changes nothing, so a program that
varies its threads calls `set_threads`.
"""

from __future__ import annotations

from byoc.frontend.diagnostics import ByocError
from byoc.runtime import libbyoc


def set_threads(count: int) -> None:
    """Run compiled models on `count` threads (the caller's included) from now on."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ByocError(f"error: byoc needs at least one thread, got {count!r}")
    libbyoc.set_threads(count)
    try:
        from byoc.backends import cblas

        cblas.set_threads(1 if libbyoc.parallel_code() else count)
    except ByocError:
        pass  # no OpenBLAS wheel: no cblas model can run either


def threads() -> int:
    """How many threads compiled models run on in this process."""
    return libbyoc.threads()
