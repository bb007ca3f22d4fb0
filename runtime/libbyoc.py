"""libbyoc, the C runtime library generated code links against: its one pool
of threads and the hand-written kernels (runtime/libbyoc/*.c, byoc_runtime.h).

It is runtime code, not a model's: it is built once per machine, C compiler,
flags and CPU into a folder of its own that every compile cache shares
(`runtime_dir()`: `$BYOC_RUNTIME_DIR`, default `~/.cache/byoc/runtime`), as
`libbyoc-<key>/libbyoc_runtime_<key>.so` (its soname the file name), the key
a hash of its sources, the compiler and its version, the flags and the CPU.
Its translation units compile on every core at once; processes that build it
at the same time take turns on a lock, so one builds and the others find it.
It is loaded into the process with global symbols before any library that
calls it, so every model of a process shares one pool. Generated C includes
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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from byoc.frontend.diagnostics import ByocError

SOURCE_DIR = Path(__file__).resolve().parent / "libbyoc"
HEADER = "byoc_runtime.h"
SOURCES = (
    "conv2d_columns32.c",
    "conv2d_columns16.c",
    "conv2d_winograd.c",
    "dense.c",
    "int8.c",
    "int8_direct.c",
    "quantize.c",
    "conv2d_rows.c",
    "threads.c",
    "depthwise.c",
    "pool2d.c",
    "softmax.c",
    "attention.c",
    "layer_norm.c",
    "conv2d.c",
    "scratch.c",
)
"""Its translation units, the longest to compile first (the COLUMNS tiles are
most of the build), so the cores finish together."""

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


def runtime_dir() -> Path:
    """Where libbyoc's builds are kept: `$BYOC_RUNTIME_DIR`, else
    `~/.cache/byoc/runtime`, whatever `$BYOC_CACHE_DIR` says (a model's cache
    entries are compiled against it; it is no model's)."""
    env = os.environ.get("BYOC_RUNTIME_DIR")
    return Path(env) if env else Path.home() / ".cache" / "byoc" / "runtime"


@cache
def _source_text() -> str:
    """Every C source and header of libbyoc, each under its name."""
    paths = sorted(SOURCE_DIR.glob("*.[ch]"))
    return "".join(f"{path.name}\0{path.read_text()}" for path in paths)


def _flags() -> tuple[str, ...]:
    from byoc.runtime.toolchain import optimisation_flags

    return (*optimisation_flags(), *FLAGS)


@contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Hold `lock` against other processes (an flock; none where there is no fcntl)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: concurrent builds each rename a whole file into place
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _compile(cmd: list[str]) -> None:
    from byoc.runtime.toolchain import COMPILER_SLOTS

    with COMPILER_SLOTS:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ByocError(
            "error: the C compiler rejected libbyoc (a byoc bug):\n"
            f"$ {' '.join(cmd)}\n{proc.stderr.strip()}"
        )


def _compile_and_link(tmp: Path, name: str, flags: tuple[str, ...]) -> Path:
    """libbyoc compiled and linked in the folder `tmp`: each source a compiler
    process of its own, as many at once as there are cores."""
    from byoc.runtime.toolchain import compiler

    cc = shlex.split(compiler())
    objects = [tmp / f"{Path(source).stem}.o" for source in SOURCES]
    commands = [
        [*cc, *flags, f"-I{SOURCE_DIR}", "-c", str(SOURCE_DIR / source), "-o", str(obj)]
        for source, obj in zip(SOURCES, objects)
    ]
    workers = max(1, min(len(commands), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="byoc-libbyoc") as pool:
        for future in [pool.submit(_compile, cmd) for cmd in commands]:
            future.result()
    out = tmp / name
    _compile([*cc, *flags, "-shared", *map(str, objects), "-o", str(out), f"-Wl,-soname,{name}", "-lm"])
    return out


@cache
def _build(directory: Path, key: str, flags: tuple[str, ...]) -> Path:
    import shutil

    from byoc.runtime.progress import stage

    name = f"libbyoc_runtime_{key[:16]}.so"
    folder = directory / f"libbyoc-{key[:16]}"
    target = folder / name
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ByocError(f"error: cannot create {folder}: {err} (set BYOC_RUNTIME_DIR)") from None
    with _exclusive(folder / ".lock"):
        if target.exists():  # another process built it while this one waited
            return target
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".build-"))
        try:
            with stage("libbyoc"):
                os.replace(_compile_and_link(tmp, name, flags), target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def build_key() -> str:
    """What a build of libbyoc depends on: its sources, the compiler, flags and CPU."""
    from byoc.runtime.jit import host_cpu
    from byoc.runtime.toolchain import compiler, compiler_version

    cc = compiler()
    parts = [_source_text(), *SOURCES, cc, compiler_version(cc), *host_cpu(), *_flags()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_BUILDING = threading.Lock()
"""Backends' codegens run in threads and each asks for libbyoc: one builds it,
the others wait for it (`functools.cache` does not lock; cblas and ccompiler
both built it, 2 CPU-s each)."""


def library() -> Path:
    """libbyoc's shared object for this compiler, flags and CPU (built if needed)."""
    with _BUILDING:
        return _build(runtime_dir(), build_key(), _flags())


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
    "caller_away",
    "moves",
    "wake_ns",
    "breaks",
    "steers",
    "claims",
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
    up, `backed_off` loops the caller then ran alone, `caller_away` loops a
    worker ran every chunk of (their caller was not running), `moves` times a
    worker found itself on its caller's core and moved off it, `wake_ns` from
    a wake-up to the first woken worker leaving its sleep, `breaks` times a
    worker gave its core away between two chunks, `steers` times a caller took
    its core from a sleeping worker's before waking it, `claims` runs of
    chunks a thread took at once (byoc_runtime.h)."""
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
