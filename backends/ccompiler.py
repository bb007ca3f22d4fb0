"""ccompiler: the BYOC guide's C backend.

It generates C through the shared loop-level IR and emitc, compiled by the
system C compiler into a shared object, for every relay op whose C needs no
libm: elementwise arithmetic, linear algebra, convolution, pooling,
reductions and data movement. Like TVM's `ccompiler` in the BYOC guide,
transcendental functions (tanh, exp, erf, ...) and the ops built on them
(softmax, the norms) stay on the host. The C exit itself handles them all
(tests/test_lower_nn.py compiles every op through it).

Quantized conv2d and dense run on int8 kernels with their bias, requantize,
fused relu and adds in the same pass, their constant weights packed (and
dense's weight sums folded into its bias) at compile time
(backends/ccompiler_int8.py).

Loops worth it run across cores: `byoc-mark-parallel-loops` marks the
outermost independent loops with enough work and `byoc-outline-parallel-loops`
runs them on libbyoc's pool of threads, the one every kernel of the process
shares (threads: `byoc.runtime.libbyoc.set_threads`, `$BYOC_NUM_THREADS`;
`$BYOC_PARALLEL=0` keeps everything sequential). Not OpenMP: its loops end in
a barrier that waits for threads a busy machine has not scheduled, and its
idle threads spin against the pool's (docs/architecture.md, "The C runtime").

Compile time stays linear in the model: functions of more than `MAX_OPS` ops
are split into `noinline` parts (identical parts merged), and the functions
are printed as several translation units of bounded size, each compiled by
its own C compiler process as soon as it is printed. Functions holding a
convolution, a pooling or a product (`HOT_OPS`) get -O3; the rest
(elementwise, data movement: memory bound) -O2, in units of their own.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType, f32, f64
from xdsl.ir import Attribute, Operation

from byoc.backends.ccompiler_int8 import outline_int8_kernels, pack_int8_weights
from byoc.backends.spec import Artifact, Backend, Composite
from byoc.dialects import make_context, relay
from byoc.dialects.emitc import EmitC_IncludeOp
from byoc.passes.concat_in_place import writable_in_place
from byoc.passes.dedup_functions import dedup_functions
from byoc.passes.split_functions import (
    MAX_OPS,
    NO_INLINE,
    counted,
    split_functions,
    translation_units,
)
from byoc.passes.outline_parallel_loops import RUNTIME_HEADER, outline_parallel_loops
from byoc.runtime import libbyoc
from byoc.runtime.toolchain import DEFAULT_FLAGS, LibraryBuild
from byoc.targets.c import emit_c

TRANSCENDENTAL = frozenset(
    {
        "relay.tanh",
        "relay.exp",
        "relay.log",
        "relay.sqrt",
        "relay.rsqrt",
        "relay.erf",
        "relay.sin",
        "relay.cos",
        "relay.tan",
        "relay.asin",
        "relay.acos",
        "relay.atan",
        "relay.sinh",
        "relay.cosh",
        "relay.asinh",
        "relay.acosh",
        "relay.atanh",
        "relay.sigmoid",
        "relay.power",
        "relay.nn.softmax",
        "relay.nn.log_softmax",
        "relay.nn.batch_norm",
        "relay.nn.layer_norm",
        "relay.nn.lrn",
        "relay.nn.instance_norm",
        "relay.nn.elu",
        "relay.nn.selu",
        "relay.nn.softplus",
        "relay.nn.gelu",
    }
)
"""Ops that stay on the host: their C would call libm."""

SUPPORTED = tuple(
    sorted(
        op.name
        for op in relay.RELAY_OPS
        if op.name not in TRANSCENDENTAL and op.name != "relay.constant"
    )
)

def has_c_type(element: Attribute) -> bool:
    """Whether `element` has a C type: `float`, `double`, `bool` (i1) or an
    `intN_t`/`uintN_t` (f16, for one, has none)."""
    return element in (f32, f64) or relay.is_integer_type(element)


def c_types(op: Operation) -> str | None:
    """Why `op`'s tensors cannot be C buffers, or None: every element type must
    have a C type (f16 has none)."""
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, value in enumerate(values):
            typ = value.type
            if isinstance(typ, TensorType) and not has_c_type(typ.element_type):
                return f"{kind} {i} is {typ}; C has no type for {typ.element_type}"
    return None


def concatenate_check(op: Operation) -> str | None:
    """Takes a concatenation the host cannot write in place: one along an axis
    after a dimension above 1, or of arguments and constants only."""
    if writable_in_place(op):
        return (
            "the host writes this concatenation in place: its producers write their "
            "slices of its buffer (passes/concat_in_place.py)"
        )
    return c_types(op)


def conv2d_packed_check(op: Operation) -> str | None:
    """Declines Winograd-packed weights, which only libbyoc computes."""
    layout = op.attrs()["kernel_layout"]  # type: ignore[attr-defined]
    if layout in relay.WINOGRAD_LAYOUTS:
        return f'kernel_layout "{layout}" is computed by libbyoc (cblas) only'
    return c_types(op)


COMPOSITES = (
    Composite("conv2d_bias_relu", ("relay.nn.conv2d", "relay.nn.bias_add", "relay.nn.relu")),
    Composite("dense_bias_relu", ("relay.nn.dense", "relay.nn.bias_add", "relay.nn.relu")),
)
"""Tagged so the report and the generated functions show the fused units."""


INLINE_CONSTANTS = 16
"""Constants of at most this many elements (scalars, tiny vectors the C compiler
folds) are copied into the C; larger ones, per-channel scales and biases
included, arrive as arguments from the weights blob. Printed as C literals they
were most of the source (1.9 of DenseNet-121's 2.1 MB, seconds to format and
parse), and functions differing only in them could not be merged."""


UNIT_OPS = 4 * MAX_OPS
"""Ops of relay functions per C translation unit (one compiler process each)."""

PARALLEL_UNITS = 4
"""A model's C is cut into about this many translation units even when it fits
one (down to `MIN_UNIT_OPS` ops each): compiled one per core at once, not one
C compiler for all (DenseNet-121's one unit was 5 CPU-s on one core)."""

MIN_UNIT_OPS = 25
"""Below this, a unit's compiler start-up and headers outweigh what it saves;
a model of fewer than twice this many ops stays one unit (`ccompiler.c`)."""


HOT_OPS = frozenset(
    {
        "relay.nn.conv2d",
        "relay.nn.conv2d_packed",
        "relay.nn.conv2d_transpose",
        "relay.nn.conv3d",
        "relay.nn.conv3d_transpose",
        "relay.nn.max_pool2d",
        "relay.nn.max_pool3d",
        "relay.nn.avg_pool2d",
        "relay.nn.avg_pool3d",
        "relay.nn.dense",
        "relay.nn.matmul",
        "relay.nn.batch_matmul",
        "relay.qnn.conv2d",
        "relay.qnn.dense",
        "relay.qnn.batch_matmul",
    }
)
"""Ops whose loops do many multiply-adds (or compares) per element moved: the
units holding one are compiled with -O3 (unrolling, vectorising every loop pays
there; the pooling lowerings are tuned for it)."""

LIGHT_FLAGS = tuple("-O2" if f == "-O3" else f for f in DEFAULT_FLAGS)
"""The flags of the other units (elementwise, data movement: memory bound). GCC's -O2 still vectorises the loops that need no epilogue, takes under
half the time of -O3 on them (DenseNet-121's: 2.3 against 5.9 CPU-s), and the
models run as fast (ResNet-50 and DenseNet-121 with cblas,ccompiler, one
thread: the same CPU time per call within the noise). `$BYOC_CFLAGS` replaces
both."""


def is_hot(function: Operation) -> bool:
    """Whether `function` (relay, before lowering) holds an op of `HOT_OPS`."""
    return any(op.name in HOT_OPS for op in function.walk())


def split_units(module: ModuleOp) -> list[ModuleOp]:
    """`module`'s functions as translation units: one for a small model, else
    about `PARALLEL_UNITS` of at least `MIN_UNIT_OPS` ops, none over
    `UNIT_OPS`, functions holding `HOT_OPS` apart from the others.
    Machine-independent, so the sources (and their objects' cache keys) are too."""
    total = sum(1 for op in module.walk() if counted(op))
    if total < 2 * MIN_UNIT_OPS:
        return translation_units(module, UNIT_OPS)
    budget = min(UNIT_OPS, max(MIN_UNIT_OPS, -(-total // PARALLEL_UNITS)))
    return translation_units(module, budget, is_hot)


def bounded(functions: ModuleOp) -> ModuleOp:
    """A copy of `functions` whose functions are at most MAX_OPS ops: larger ones
    call `noinline` parts, identical parts merged (the outlined functions
    themselves keep their symbols)."""
    module = functions.clone()
    split_functions(module, MAX_OPS)
    dedup_functions(module, lambda f: NO_INLINE in f.attributes)
    return module


def emitc_module(functions: ModuleOp, copy: bool = True) -> ModuleOp:
    """The emitc module of a module of relay functions (lowered in place unless `copy`)."""
    from byoc.passes.convert_loops_to_emitc import ConvertLoopsToEmitCPass
    from byoc.passes.convert_relay_to_loops import ConvertRelayToLoopsPass
    from byoc.passes.parallel_loops import MarkParallelLoopsPass

    ctx = make_context()
    module = functions.clone() if copy else functions
    int8_kernels = outline_int8_kernels(module)
    ConvertRelayToLoopsPass().apply(ctx, module)
    if libbyoc.parallel_code():
        MarkParallelLoopsPass().apply(ctx, module)
    ConvertLoopsToEmitCPass().apply(ctx, module)
    outline_parallel_loops(module)
    if int8_kernels and not _uses_libbyoc(module):
        # The int8 kernels call libbyoc's products (declared in its header).
        module.body.block.insert_op_before(
            EmitC_IncludeOp(RUNTIME_HEADER, is_standard_include=False),
            module.body.block.first_op,
        )
    return module


def _uses_libbyoc(module: ModuleOp) -> bool:
    return any(
        isinstance(op, EmitC_IncludeOp) and op.include.data == RUNTIME_HEADER
        for op in module.ops
    )


def generate_c(functions: ModuleOp) -> str:
    """C source for a module of outlined relay functions (one translation unit)."""
    return emit_c(emitc_module(bounded(functions), copy=False))


def codegen(functions: ModuleOp) -> Artifact:
    """Generate C for the outlined functions and compile it to a shared object
    (linked with libbyoc when some loop of it is parallel), one translation unit
    compiling while the next is generated."""
    symbols = [op.sym_name.data for op in functions.ops]  # type: ignore[attr-defined]
    units = split_units(bounded(functions))
    build = LibraryBuild()
    sources: dict[str, str] = {}
    runtime = False
    for index, unit in enumerate(units):
        flags = DEFAULT_FLAGS if is_hot(unit) else LIGHT_FLAGS  # before lowering it
        module = emitc_module(unit, copy=False)
        source = emit_c(module)
        uses = _uses_libbyoc(module)
        runtime = runtime or uses
        build.add(source, (*flags, *(libbyoc.compile_flags() if uses else ())))
        sources["ccompiler.c" if len(units) == 1 else f"ccompiler_{index}.c"] = source
    # libbyoc's symbols stay undefined: the JIT and byoc.load load libbyoc
    # (listed first) with global symbols before the code calling it.
    library = build.link(("-lm",))
    if not runtime:
        return Artifact(backend="ccompiler", symbols=symbols, sources=sources, libraries=[library])
    return Artifact(
        backend="ccompiler",
        symbols=symbols,
        sources=sources,
        libraries=[libbyoc.library(), library],
        c_flags=list(libbyoc.compile_flags()),
        link_flags=list(libbyoc.link_flags()),
        vendor_libraries=[libbyoc.library()],
    )


backend = Backend(
    name="ccompiler",
    ops={name: c_types for name in SUPPORTED}
    | {relay.ConcatenateOp.name: concatenate_check, relay.Conv2dPackedOp.name: conv2d_packed_check},
    codegen=codegen,
    description="C generated through emitc, compiled by the system C compiler",
    source=generate_c,
    composites=COMPOSITES,
    inline_constants=INLINE_CONSTANTS,
    alter_op=pack_int8_weights,
)
