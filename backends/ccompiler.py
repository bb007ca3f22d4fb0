"""ccompiler: the BYOC guide's C backend.

Like TVM's `ccompiler`, it takes the elementwise arithmetic ops (not the
transcendental ones such as tanh and exp, which stay on the host) and
generates C for them through the shared loop-level IR and emitc, compiled by
the system C compiler into a shared object.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from byoc.backends.spec import Artifact, Backend, always
from byoc.dialects import make_context
from byoc.runtime.toolchain import compile_shared

SUPPORTED = (
    "relay.add",
    "relay.subtract",
    "relay.multiply",
    "relay.divide",
    "relay.negative",
    "relay.nn.relu",
)


def generate_c(functions: ModuleOp) -> str:
    """C source for a module of outlined relay functions."""
    from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass
    from byoc.passes.convert_relay_to_loops import ConvertRelayToLoopsPass
    from byoc.targets.c import emit_c

    ctx = make_context()
    module = functions.clone()
    ConvertRelayToLoopsPass().apply(ctx, module)
    ConvertLoopsToEmitCPass().apply(ctx, module)
    return emit_c(module)


def codegen(functions: ModuleOp) -> Artifact:
    """Generate C for the outlined functions and compile it to a shared object."""
    source = generate_c(functions)
    symbols = [op.sym_name.data for op in functions.ops]  # type: ignore[attr-defined]
    library = compile_shared(source)
    return Artifact(
        backend="ccompiler",
        symbols=symbols,
        sources={"ccompiler.c": source},
        libraries=[library],
    )


backend = Backend(
    name="ccompiler",
    ops={name: always for name in SUPPORTED},
    codegen=codegen,
    description="C generated through emitc, compiled by the system C compiler",
    source=generate_c,
)
