"""libbyoc, the C runtime library generated code links against: its one pool
of threads and the hand-written kernels (runtime/libbyoc/*.c, byoc_runtime.h).

It is compiled once per C compiler, flags and CPU into the compile cache
(`<cache>/libbyoc-<key>/libbyoc_runtime_<key>.so`, its soname the file name)
and loaded into the process with global symbols before any library that calls
it, so every model of a process shares one pool. Generated C includes
`byoc_runtime.h` (`compile_flags()`) and leaves libbyoc's symbols undefined; a
backend lists `library()` first in its `Artifact.libraries` (saved models
carry it and load it first) and in `Artifact.vendor_libraries` with
`link_flags()` (an exported library links it and ships a copy beside itself).

Threads: `set_threads(n)` for the process (default `$BYOC_NUM_THREADS`, else
`$OMP_NUM_THREADS`, else every core the process may use). Backends split work
across the pool unless `$BYOC_PARALLEL` is `0` (`parallel_code()`): then their
C is sequential and calls no pool.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

from byoc.frontend.diagnostics import ByocError

SOURCE_DIR = Path(__file__).resolve().parent / "libbyoc"
HEADER = "byoc_runtime.h"
SOURCES = ("threads.c", "scratch.c", "conv2d.c", "depthwise.c", "dense.c", "int8.c")

FLAGS = ("-std=c11", "-fPIC", "-Wall", "-Wextra", "-Werror", "-Wno-psabi", "-pthread", "-ffp-contract=fast")
"""Besides `optimisation_flags()`. The kernels' `a += w * x` must become fused
multiply-adds (C11 mode forbids contracting them by default). Their vectors
are 64 bytes on every target: without AVX-512 GCC warns that returning one
changes the ABI, which matters only across objects (they are static inline)."""


def parallel_code() -> bool:
    """Whether backends generate C that splits loops across libbyoc's pool
    (`$BYOC_PARALLEL`, default on)."""
    return os.environ.get("BYOC_PARALLEL", "1").strip().lower() not in ("0", "off", "no", "false")


def include_dir() -> Path:
    """The folder holding `byoc_runtime.h`."""
    return SOURCE_DIR


def _source_text() -> str:
    return "".join((SOURCE_DIR / name).read_text() for name in (HEADER, "kernels.h", *SOURCES))


def _flags() -> tuple[str, ...]:
    from byoc.runtime.toolchain import optimisation_flags

    return (*optimisation_flags(), *FLAGS)


@cache
def _build(key: str, flags: tuple[str, ...]) -> Path:
    from byoc.runtime.toolchain import cache_dir, compiler

    name = f"libbyoc_runtime_{key[:16]}.so"
    directory = cache_dir() / f"libbyoc-{key[:16]}"
    target = directory / name
    if target.exists():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ByocError(f"error: cannot create {directory}: {err}") from None
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        out = Path(tmp) / name
        cmd = [
            *shlex.split(compiler()),
            *flags,
            f"-I{SOURCE_DIR}",
            "-shared",
            *(str(SOURCE_DIR / s) for s in SOURCES),
            "-o",
            str(out),
            f"-Wl,-soname,{name}",
            "-lm",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ByocError(
                "error: the C compiler rejected libbyoc (a byoc bug):\n"
                f"$ {' '.join(cmd)}\n{proc.stderr.strip()}"
            )
        os.replace(out, target)
    return target


def build_key() -> str:
    """What a build of libbyoc depends on: its sources, the compiler, flags and CPU."""
    from byoc.runtime.jit import host_cpu
    from byoc.runtime.toolchain import compiler, compiler_version

    cc = compiler()
    parts = [_source_text(), cc, compiler_version(cc), host_cpu()[0], *_flags()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_BUILDING = threading.Lock()
"""Backends' codegens run in threads and each asks for libbyoc: one builds it,
the others wait for it (`functools.cache` does not lock; cblas and ccompiler
both built it, 2 CPU-s each)."""


def library() -> Path:
    """libbyoc's shared object for this compiler, flags and CPU (built if needed)."""
    with _BUILDING:
        return _build(build_key(), _flags())


def compile_flags() -> tuple[str, ...]:
    """Flags of C that includes `byoc_runtime.h`. The define names the build, so
    such C is compiled again (its cache key changes) whenever libbyoc does."""
    return (f"-I{SOURCE_DIR}", f"-DBYOC_RT_BUILD={build_key()[:16]}")


def link_flags() -> tuple[str, ...]:
    """Flags linking against libbyoc (no run-time path: the library is shipped
    beside what links it, see `Artifact.vendor_libraries`)."""
    path = library()
    return (f"-L{path.parent}", f"-l:{path.name}")


_loaded: list[Path] = []


def load() -> None:
    """Load libbyoc into the process with global symbols (once)."""
    if _loaded:
        return
    import llvmlite.binding as llvm

    path = library()
    try:
        llvm.load_library_permanently(str(path))
    except RuntimeError as err:
        raise ByocError(f"{path}: error: cannot load: {err}") from None
    _loaded.append(path)


@cache
def _ffi():  # noqa: ANN202 - a cffi FFI
    import cffi

    return cffi.FFI()


@cache
def _process():  # noqa: ANN202 - a cffi library
    """libbyoc's functions as the process resolves them: the first libbyoc
    loaded is the one every model's code calls."""
    ffi = _ffi()
    ffi.cdef(
        "int32_t byoc_rt_num_threads(void); void byoc_rt_set_num_threads(int32_t);"
        "void byoc_rt_pool_stats(int64_t *, int32_t);"
        "int32_t byoc_rt_int8_uses_vnni(void);"
    )
    process = ffi.dlopen(None)
    try:
        process.byoc_rt_num_threads  # noqa: B018 - a lookup that may fail
    except AttributeError:
        load()
    return process


def set_threads(count: int) -> None:
    """Run generated code on `count` threads (the caller's included) in this process."""
    if count < 1:
        raise ByocError(f"error: byoc needs at least one thread, got {count}")
    _process().byoc_rt_set_num_threads(count)


def threads() -> int:
    """How many threads generated code runs on in this process."""
    return int(_process().byoc_rt_num_threads())


POOL_STATS = (
    "loops",
    "alone",
    "chunks",
    "worker_chunks",
    "wakes",
    "sleeps",
    "missed",
    "loop_ns",
    "wait_ns",
    "late_ns",
    "preempted",
    "late",
    "backed_off",
)
"""The pool's counters, in byoc_runtime.h's order (BYOC_RT_STAT_*)."""


def pool_stats() -> dict[str, int]:
    """The pool's counters since the process started (cumulative: subtract two
    readings). `loops` ran on the pool and `alone` on their caller only;
    `chunks` of the pool's loops, `worker_chunks` of them on workers; `wakes`
    woke sleeping workers, `sleeps` times a worker fell asleep; `missed` loops
    no worker joined; `loop_ns` in the pool's loops, `wait_ns` the caller
    waiting for chunks other threads held, `late_ns` from a loop's start to a
    worker's first chunk; `preempted` spinning workers that found they had
    been preempted, `late` loops whose workers came late or held the caller
    up, `backed_off` loops the caller then ran alone (byoc_runtime.h)."""
    out = _ffi().new("int64_t[]", len(POOL_STATS))
    try:
        stats = _process().byoc_rt_pool_stats
    except AttributeError:
        raise ByocError("error: the libbyoc this process loaded first counts nothing (an older build)") from None
    stats(out, len(POOL_STATS))  # an older build fills fewer: the rest stay 0
    return dict(zip(POOL_STATS, (int(v) for v in out), strict=True))


def int8_uses_vnni() -> bool:
    """Whether libbyoc's int8 products run on AVX-512 VNNI in this process
    (else its portable loop: no VNNI, or `$BYOC_RT_INT8_PORTABLE` set)."""
    return bool(_process().byoc_rt_int8_uses_vnni())
