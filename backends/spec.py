"""What a backend is: the ops it takes, and how it turns outlined functions into code.

A vendor writes one `Backend` object and exposes it through the `byoc.backends`
entry point group; byoc's own backends register the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from byoc.backends.kernel import Kernel, kernels_of
from byoc.frontend.diagnostics import ByocError

ALLOCATION_FAILED = 2
"""The status an external function (or the host) returns when an allocation
fails. It may first store the bytes it asked for in an exported
`int64_t <symbol>_failed_bytes` (`<symbol>` one of its artifact's symbols), so
the error can name the size; any other failure returns 1."""

Check = Callable[[Operation], "str | None"]
"""A support check: returns None when the backend takes the op, else the reason it does not."""


def always(op: Operation) -> str | None:
    """The check of an op a backend takes whatever its shapes and attributes."""
    return None


@dataclass
class Artifact:
    """What a backend's codegen produced for its outlined functions.

    `symbols` are the names of the functions the host calls; each must be
    exported by one of `libraries` with the C ABI of docs/architecture.md.
    """

    backend: str
    symbols: list[str]
    sources: dict[str, str] = field(default_factory=dict)
    """Generated source files by name (shown to users, kept for saving)."""
    libraries: list[Path] = field(default_factory=list)
    """Shared objects to load before the host is JIT-compiled."""
    keepalive: list[Any] = field(default_factory=list)
    """Python objects that must live as long as the compiled model."""
    c_flags: list[str] = field(default_factory=list)
    """Extra compiler flags for the `.c` sources (ahead-of-time export rebuilds them)."""
    link_flags: list[str] = field(default_factory=list)
    """Extra linker flags (e.g. `-L<dir> -l<vendor>`) for the `.c` sources; no
    `-rpath` into the build environment: list such libraries in `vendor_libraries`."""
    vendor_libraries: list[Path] = field(default_factory=list)
    """Shared objects outside the system's that the `.c` sources link against
    (e.g. OpenBLAS from a wheel): an exported library ships copies beside
    itself and finds them through `$ORIGIN`, so it runs on another machine."""


def no_check(ops: Sequence[Operation]) -> str | None:
    """The check of a composite taken whatever its ops' shapes and attributes."""
    return None


@dataclass(frozen=True)
class Composite:
    """A chain of ops a backend takes as one unit, e.g. conv2d → bias_add → relu.

    Each op after the first consumes the previous op's result as its first
    operand (or second, for a `commutative` one), and is that result's only
    user. Matched ops are annotated
    together, before any single-op support is asked, and carry
    `extern.composite = "<backend>.<name>"` so the codegen can fuse them.
    """

    name: str
    ops: tuple[str, ...]
    check: Callable[[Sequence[Operation]], str | None] = no_check
    """None to take the matched ops (in chain order), else why not."""
    commutative: tuple[str, ...] = ()
    """Ops of the chain whose two operands may come in either order (e.g.
    `relay.add` for a residual `add(r, conv)`): where the chain's value is the
    second operand, a match swaps them, so the codegen always finds it first."""


Codegen = Callable[[ModuleOp], Artifact]
"""Turns a module holding one backend's outlined functions (xDSL) into an Artifact."""

KernelCodegen = Callable[[list[Kernel]], Artifact]
"""Turns one backend's outlined functions, as kernels (plain Python data), into an Artifact."""


@dataclass(frozen=True)
class Backend:
    """A backend: its name, the ops it supports, and its codegen.

    `ops` maps a relay op name (e.g. "relay.add") to a check that may look at
    shapes, dtypes and attributes; an op whose name is absent is unsupported.

    A backend gives exactly one codegen: `kernel_codegen` receives the
    outlined functions as `Kernel`s (plain Python data: backends/kernel.py),
    `codegen` receives them as an xDSL `ModuleOp` of `func.func`s. The
    optional `kernel_source`/`source` show the generated code the same way.
    """

    name: str
    ops: Mapping[str, Check]
    codegen: Codegen | None = None
    """Outlined functions as an xDSL module in, Artifact out."""
    description: str = ""
    source: Callable[[ModuleOp], str] | None = None
    """The generated source of outlined functions, for showing (`--emit-c`)."""
    composites: tuple[Composite, ...] = ()
    """Patterns taken as units, tried (longest first) before single ops."""
    load: Callable[[Artifact], None] | None = None
    """Rebuilds an artifact's runtime state (`keepalive`) from its `sources`
    when a saved model is loaded; backends whose artifacts are only shared
    objects leave it None."""
    alter_op: Callable[[Operation], None] | None = None
    """Called on each op this backend took, after annotation and before
    partitioning (TVM's AlterOpLayout): it may replace the op by an equivalent
    one its kernels run faster, e.g. a conv2d by a conv2d_packed whose weight
    constant is packed at compile time. Replacements keep the op's attributes."""
    inline_constants: int = 1024
    """Constants of at most this many elements are copied into this backend's
    functions; larger ones (weights) are passed as arguments."""
    kernel_codegen: KernelCodegen | None = None
    """Outlined functions as a list of `Kernel`s in, Artifact out."""
    kernel_source: Callable[[list[Kernel]], str] | None = None
    """The generated source of a list of `Kernel`s, for showing (`--emit-c`)."""

    def __post_init__(self) -> None:
        if (self.codegen is None) == (self.kernel_codegen is None):
            raise ByocError(
                f"error: backend '{self.name}' must give exactly one of codegen "
                "(an xDSL module in) and kernel_codegen (a list of Kernels in)"
            )
        if self.source is not None and self.kernel_source is not None:
            raise ByocError(
                f"error: backend '{self.name}' gives both source and kernel_source"
            )

    def generate(self, functions: ModuleOp) -> Artifact:
        """Run this backend's codegen on a module of its outlined functions."""
        if self.kernel_codegen is not None:
            return self.kernel_codegen(kernels_of(functions))
        assert self.codegen is not None
        return self.codegen(functions)

    def show(self, functions: ModuleOp) -> str | None:
        """The generated source of `functions`, or None if the backend shows none."""
        if self.kernel_source is not None:
            return self.kernel_source(kernels_of(functions))
        if self.source is not None:
            return self.source(functions)
        return None

    def check(self, op: Operation) -> str | None:
        """None when this backend takes `op`, else why it does not."""
        check = self.ops.get(op.name)
        if check is None:
            return f"{self.name} does not support {op.name}"
        return check(op)
