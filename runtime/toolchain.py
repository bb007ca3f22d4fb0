"""The system C compiler: generated C in, shared object out, cached by content.

The cache key is the source text, the flags, the compiler's version and the
host CPU, so a second compile of the same model is a file lookup.

OpenMP: backends that split loops across cores emit `#pragma omp` and compile
with `openmp_flags()`; it is empty (and they emit no pragma) when
`$BYOC_OPENMP=0` or when the compiler cannot build OpenMP code. The number of
threads is OpenMP's own setting, `$OMP_NUM_THREADS` (default: every core). Objects are
written to a temporary name and renamed into place, so concurrent compiles
from several processes never see a half-written file. The cache lives in
`$BYOC_CACHE_DIR` (default `~/.cache/byoc`).

A library of several translation units (`LibraryBuild`) compiles them
concurrently, one compiler process per core at most across the process, each
object cached by content, then links them.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path

from byoc.frontend.diagnostics import ByocError

WARNINGS = ("-Wall", "-Wextra", "-Werror")
"""Generated C must be warning-free: a warning is a bug in a code generator."""

OPTIMISATION = ("-O3", "-march=native")
"""Optimised for the host by default; `$BYOC_CFLAGS` replaces these."""


def optimisation_flags() -> tuple[str, ...]:
    """`$BYOC_CFLAGS` (e.g. `-O2 -mavx2`), else -O3 for the host CPU."""
    env = os.environ.get("BYOC_CFLAGS")
    return tuple(shlex.split(env)) if env is not None else OPTIMISATION


DEFAULT_FLAGS = ("-std=c11", *OPTIMISATION, "-fPIC", *WARNINGS)
"""The flags of generated C (the optimisation part comes from `optimisation_flags`)."""


OPENMP = ("-fopenmp",)
"""Compile and link flags of OpenMP code (GCC and Clang spell it the same)."""

_OPENMP_PROBE = """#include <omp.h>
int byoc_openmp_probe(float* x, int n) {
  #pragma omp parallel for
  for (int i = 0; i < n; i++) x[i] += 1.0f;
  return omp_get_max_threads();
}
"""


def openmp_flags() -> tuple[str, ...]:
    """`("-fopenmp",)` when generated C may use OpenMP, else `()`.

    Off when `$BYOC_OPENMP` is `0`, or when the C compiler cannot compile
    and link the probe (e.g. Clang without libomp): code stays sequential.
    """
    if os.environ.get("BYOC_OPENMP", "1").strip() in ("0", "off", "no", "false"):
        return ()
    return OPENMP if _compiler_has_openmp(compiler()) else ()


@cache
def _compiler_has_openmp(cc: str) -> bool:
    try:
        compile_shared(_OPENMP_PROBE, (*DEFAULT_FLAGS, *OPENMP), (*OPENMP,))
    except ByocError:
        return False
    return True


class CCompileError(ByocError):
    """The C compiler rejected a source: `command` and the compiler's `output`.

    Raised inside a backend's codegen, it is blamed on that backend
    (backends/errors.py)."""

    def __init__(self, command: str, output: str):
        super().__init__(f"error: the C compiler rejected generated code:\n$ {command}\n{output}")
        self.command = command
        self.output = output


def with_openmp(
    source: str, flags: tuple[str, ...], libraries: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`flags` and `libraries` plus `openmp_flags()` when `source` has an OpenMP
    pragma and they lack it: C from `generate_c` compiles as given."""
    if "#pragma omp" not in source or any(f in flags for f in OPENMP):
        return flags, libraries
    openmp = openmp_flags()
    return (*flags, *openmp), (*openmp, *libraries)


def with_libbyoc(
    source: str, flags: tuple[str, ...], libraries: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`flags` and `libraries` plus libbyoc's when `source` includes its header
    and they lack it: C from `generate_c` compiles as given, and the library
    names libbyoc (found through its run-time path), so it loads by itself.
    Backends that ship their C (AOT) list libbyoc in their artifact instead."""
    from byoc.runtime import libbyoc

    if f'"{libbyoc.HEADER}"' not in source or any(f.startswith("-DBYOC_RT_BUILD") for f in flags):
        return flags, libraries
    directory = libbyoc.library().parent
    return (*flags, *libbyoc.compile_flags()), (
        *libraries, *libbyoc.link_flags(), f"-Wl,-rpath,{directory}"
    )


def compiler() -> str:
    """The C compiler: `$CC`, else `cc`."""
    return os.environ.get("CC", "cc")


@cache
def compiler_version(cc: str) -> str:
    """First line of `cc --version`, or a ByocError if there is no compiler."""
    try:
        out = subprocess.run(
            [*shlex.split(cc), "--version"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as err:
        raise ByocError(
            f"error: cannot run the C compiler '{cc}' ({err}); install gcc or "
            "set CC"
        ) from None
    return out.stdout.splitlines()[0] if out.stdout else cc


def cache_dir() -> Path:
    """Where compiled objects are kept: `$BYOC_CACHE_DIR` or `~/.cache/byoc`."""
    env = os.environ.get("BYOC_CACHE_DIR")
    base = Path(env) if env else Path.home() / ".cache" / "byoc"
    return base


def _cpu_name() -> str:
    from byoc.runtime.jit import host_cpu

    return host_cpu()[0]


def compile_shared(
    source: str,
    flags: tuple[str, ...] = DEFAULT_FLAGS,
    libraries: tuple[str, ...] = ("-lm",),
) -> Path:
    """Compile C `source` into a shared object and return its path (cached).

    The default optimisation flags in `flags` are replaced by
    `$BYOC_CFLAGS` when it is set; the warning flags always stay. A source
    with `#pragma omp` is compiled and linked with `openmp_flags()`, one that
    includes `byoc_runtime.h` (parallel loops of byoc's lowering) with libbyoc.
    """
    cc = compiler()
    flags, libraries = with_openmp(source, flags, libraries)
    flags, libraries = with_libbyoc(source, flags, libraries)
    flags = _effective_flags(flags)
    key = hashlib.sha256(
        "\0".join(
            [source, cc, compiler_version(cc), _cpu_name(), *flags, *libraries]
        ).encode()
    ).hexdigest()[:32]
    directory = cache_dir()
    target = directory / f"{key}.so"
    if target.exists():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ByocError(f"error: cannot create the cache directory {directory}: {err}") from None
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        src = Path(tmp) / "kernels.c"
        src.write_text(source)
        out = Path(tmp) / "kernels.so"
        _run_compiler([*shlex.split(cc), *flags, "-shared", str(src), "-o", str(out), *libraries])
        os.replace(out, target)
    return target


def have_compiler() -> bool:
    """Whether a C compiler can be run."""
    return shutil.which(shlex.split(compiler())[0]) is not None


# --- Libraries of several translation units, compiled concurrently -------------

COMPILER_SLOTS = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))
"""C compiler processes running at once, across every compile in this process
(libbyoc's build takes them too)."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _effective_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """`flags` with the default optimisation replaced by `$BYOC_CFLAGS`, if set."""
    custom = optimisation_flags()
    if custom != OPTIMISATION:
        return tuple(f for f in flags if f not in OPTIMISATION) + custom
    return flags


def _run_compiler(cmd: list[str]) -> None:
    """Run the C compiler (waiting for a free core); inside a backend's codegen
    its errors are the backend's (backends/errors.py)."""
    from byoc.runtime.progress import stage

    with COMPILER_SLOTS, stage("C compile"):
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CCompileError(" ".join(cmd), proc.stderr.strip())


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ByocError(f"error: cannot create the cache directory {directory}: {err}") from None


def _compile_object(source: str, flags: tuple[str, ...], key: str) -> Path:
    """`source` compiled to an object file in the cache (`objects/<key>.o`)."""
    directory = cache_dir() / "objects"
    target = directory / f"{key}.o"
    if target.exists():
        return target
    _make_directory(directory)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
        src = Path(tmp) / "unit.c"
        src.write_text(source)
        out = Path(tmp) / "unit.o"
        _run_compiler([*shlex.split(compiler()), *flags, "-c", str(src), "-o", str(out)])
        os.replace(out, target)
    return target


class LibraryBuild:
    """A shared object built from several C translation units.

    Each unit starts compiling (`cc -c`, in a thread of this build, at most
    one compiler per core across the process) as soon as it is added, so a
    backend's Python keeps generating the next unit meanwhile; `link` waits
    for them and links. Objects and the library are cached by content, like
    `compile_shared`.

        build = LibraryBuild()
        for source in units:
            build.add(source, flags)
        library = build.link(("-fopenmp", "-lm"))
    """

    def __init__(self) -> None:
        from byoc.runtime.progress import in_this_context

        cc = compiler()
        self._identity = (cc, compiler_version(cc), _cpu_name())
        self._keys: list[str] = []
        self._objects: list[Future[Path]] = []
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="byoc-cc"
        )
        self._compile = in_this_context(_compile_object)

    def add(self, source: str, flags: tuple[str, ...] = DEFAULT_FLAGS) -> None:
        """Start compiling one translation unit."""
        flags = _effective_flags(flags)
        key = _digest(source, *self._identity, *flags, "object")
        self._keys.append(key)
        self._objects.append(self._pool.submit(self._compile, source, flags, key))

    def link(self, libraries: tuple[str, ...] = ("-lm",)) -> Path:
        """The shared object of every unit added, linked with `libraries`
        (waits for the units' compiles)."""
        try:
            objects = [future.result() for future in self._objects]
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        directory = cache_dir()
        key = _digest(*self._keys, *self._identity, *libraries, "library")
        target = directory / f"{key}.so"
        if target.exists():
            return target
        _make_directory(directory)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".link-") as tmp:
            out = Path(tmp) / "library.so"
            _run_compiler(
                [*shlex.split(compiler()), "-shared", *map(str, objects), "-o", str(out), *libraries]
            )
            os.replace(out, target)
        return target
