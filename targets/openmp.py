"""OpenMP in the C byoc generates: the pragma it prints, and the fork guard.

GNU OpenMP's thread pool does not survive `fork()`: a child process that runs
a parallel loop of its parent's pool waits forever for threads it does not
have (Python's `multiprocessing` forks by default on Linux). So every library
with OpenMP loops holds a flag, cleared in the child by a `pthread_atfork`
handler registered when the library is loaded, and every parallel loop is
`if(byoc_openmp_usable)`: after a fork, the child runs them on one thread.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from byoc.dialects.emitc import EmitC_FuncOp, EmitC_IncludeOp, EmitC_VerbatimOp

USABLE = "byoc_openmp_usable"
PARALLEL_FOR = f"#pragma omp parallel for schedule(static) if({USABLE})"
"""The pragma before a `for` whose iterations are split across threads."""

FORK_GUARD = (
    f"static int {USABLE} = 1;",
    f"static void byoc_openmp_forked(void) {{ {USABLE} = 0; }}",
    "__attribute__((constructor)) static void byoc_openmp_guard_forks(void) "
    "{ pthread_atfork(NULL, NULL, byoc_openmp_forked); }",
)
"""Top-level C of a library that uses `PARALLEL_FOR` (needs <pthread.h>)."""


def uses_openmp(module: ModuleOp) -> bool:
    """Whether an emitc module prints an OpenMP pragma."""
    return any(
        isinstance(op, EmitC_VerbatimOp) and op.value.data.startswith("#pragma omp")
        for op in module.walk()
    )


def add_fork_guard(module: ModuleOp) -> None:
    """Add `FORK_GUARD` (and its header) before the first function of `module`
    when its C uses OpenMP."""
    if not uses_openmp(module):
        return
    block = module.body.block
    first = next((o for o in block.ops if isinstance(o, EmitC_FuncOp)), None)
    guard: list[Operation] = [EmitC_IncludeOp("pthread.h")]
    guard += [EmitC_VerbatimOp(line) for line in FORK_GUARD]
    if first is None:
        block.add_ops(guard)
    else:
        block.insert_ops_before(guard, first)
