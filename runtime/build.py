"""`byoc.compile`: from a relay model to a CompiledModule.

The steps are the data flow of docs/architecture.md: parse and verify,
annotate for the backends in priority order, merge and outline, run each
backend's codegen on its functions, JIT-compile the host with the backends'
code linked in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr, TensorType
from xdsl.ir import Attribute

from byoc.backends import Artifact, Backend, parse_targets
from byoc.dialects.extern import COMPILER_ATTR, CallOp
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import location_of, names_file, parse_file, parse_text, verify_module
from byoc.passes.annotate import annotate, is_graph_op
from byoc.passes.dead_code import remove_dead_ops
from byoc.passes.dedup_functions import dedup_functions
from byoc.passes.fake_quantization_to_integer import fake_quantization_to_integer
from byoc.passes.partition import partition
from byoc.passes.speed import garbage_collector_paused
from byoc.runtime.compiled import CompiledModule, TensorSpec
from byoc.runtime.progress import compile_stages, in_this_context, stage
from byoc.runtime.reference import numpy_dtype
from byoc.runtime.weights import Blob, Weights

Source = str | Path | ModuleOp
InputShapes = Mapping[str, Sequence[int]]


def is_path(source: object) -> bool:
    """Whether `source` names a file: a Path, a string naming an existing file
    (whatever characters the name holds), or one that cannot be relay text
    (relay text always has braces or newlines)."""
    if isinstance(source, Path):
        return True
    if not isinstance(source, str):
        return False
    return ("\n" not in source and "{" not in source) or names_file(source)


def placement_of(module: ModuleOp) -> dict[str, int]:
    """How many graph ops each backend (and `host`) runs in a partitioned module."""
    counts: dict[str, int] = {}
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        compiler = function.attributes.get(COMPILER_ATTR)
        key = compiler.data if isinstance(compiler, StringAttr) else "host"
        n = sum(1 for op in function.body.block.ops if is_graph_op(op))
        counts[key] = counts.get(key, 0) + n
    return counts


def load_source(source: Source, input_shapes: InputShapes | None = None) -> ModuleOp:
    """A fresh, verified module from a path, relay text, or a module (copied).

    A `.onnx` path or an `onnx.ModelProto` goes through the ONNX importer, with
    `input_shapes` pinning its graph inputs (relay IR has static shapes).
    """
    from byoc.frontend.onnx import from_onnx, is_onnx_source

    if is_onnx_source(source):
        return from_onnx(source, input_shapes)  # type: ignore[arg-type]
    if input_shapes:
        raise ByocError(
            "error: input shapes pin the inputs of ONNX models; relay IR has static "
            "shapes already"
        )
    if isinstance(source, ModuleOp):
        module = source.clone()
        verify_module(module)
        return module
    if is_path(source):
        return parse_file(source)
    if isinstance(source, str):
        return parse_text(source, "<string>")
    raise ByocError(
        f"error: cannot compile a {type(source).__name__}; pass a path, relay text "
        "or a ModuleOp"
    )


def main_function(module: ModuleOp, entry: str = "main") -> func.FuncOp:
    """The `@main` function, checked to take and return static float tensors."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            if not op.body.blocks:
                raise ByocError(f"error: @{entry} has no body")
            return op
    raise ByocError(f"error: the module has no function @{entry}")


def tensor_specs(
    types: Sequence[Attribute], prefix: str, names: Sequence[str | None] = ()
) -> list[TensorSpec]:
    """Shapes and dtypes of `@main`'s inputs or outputs (named by their SSA names)."""
    specs: list[TensorSpec] = []
    names = list(names) + [None] * (len(types) - len(names))
    for i, typ in enumerate(types):
        if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
            raise ByocError(
                f"error: {prefix} {i} of @main has type {typ}; expected a "
                "static-shape tensor"
            )
        specs.append(
            TensorSpec(
                names[i] or f"{prefix}{i}",
                tuple(typ.get_shape()),
                numpy_dtype(typ.element_type),
            )
        )
    return specs


def rename_symbols(module: ModuleOp, prefix: str, main: str) -> dict[str, str]:
    """Give outlined functions and `main` process-unique names; returns old → new."""
    renamed: dict[str, str] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and (
            COMPILER_ATTR in op.attributes or op.sym_name.data == main
        ):
            new = prefix + op.sym_name.data
            renamed[op.sym_name.data] = new
            op.sym_name = StringAttr(new)
    for op in module.walk():
        if isinstance(op, (CallOp, func.CallOp)):
            callee = op.callee.root_reference.data
            if callee in renamed:
                op.callee = SymbolRefAttr(renamed[callee])
    return renamed


def functions_of(module: ModuleOp, backend: str) -> ModuleOp:
    """A new module holding copies of the functions outlined for `backend`."""
    ops = [
        op.clone()
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and op.attributes.get(COMPILER_ATTR) == StringAttr(backend)
    ]
    return ModuleOp(ops)


def run_codegen(backend: Backend, functions: ModuleOp) -> Artifact:
    """Run a backend's codegen, turning its failures into ByocErrors."""
    try:
        artifact = backend.codegen(functions)
    except ByocError:
        raise
    except Exception as err:
        raise ByocError(
            f"error: backend '{backend.name}' failed to generate code: "
            f"{type(err).__name__}: {err}"
        ) from err
    wanted = {op.sym_name.data for op in functions.ops if isinstance(op, func.FuncOp)}
    missing = wanted - set(artifact.symbols)
    if missing:
        raise ByocError(
            f"error: backend '{backend.name}' did not produce "
            f"{', '.join(sorted(missing))}"
        )
    return artifact


def partition_for(module: ModuleOp, backends: Sequence[Backend]) -> None:
    """Quantize QDQ units, then annotate, merge and outline `module` in place
    for `backends`."""
    check_outlined_for(module, backends)
    # Before anything else rewrites the graph: the units are DQ -> op -> Q as
    # the importer (or the user) wrote them.
    fake_quantization_to_integer(module)
    remove_dead_ops(module)
    annotate(module, backends)  # also drops marks for backends not asked for
    if backends:
        partition(module)


def check_outlined_for(module: ModuleOp, backends: Sequence[Backend]) -> None:
    """Functions already outlined (the input was partitioned) must be for one
    of `backends`: no other codegen runs, so their code would be missing."""
    names = {b.name for b in backends}
    for op in module.ops:
        compiler = op.attributes.get(COMPILER_ATTR)
        if compiler is None:
            continue
        backend = compiler.data if isinstance(compiler, StringAttr) else str(compiler)
        if backend not in names:
            name = op.sym_name.data if isinstance(op, func.FuncOp) else op.name
            raise ByocError(
                f"{location_of(op) or '<input>'}: error: @{name} is outlined for backend "
                f"'{backend}', which is not among the targets "
                f"({', '.join(sorted(names)) or 'none: host only'}); add it to "
                "the targets or compile the unpartitioned model"
            )


def compile(  # noqa: A001 - the public name, as in `byoc.compile`
    source: Source,
    targets: Sequence[str] | str | None = ("ccompiler",),
    cache: bool = True,
    quiet: bool = False,
    input_shapes: InputShapes | None = None,
    **unknown: object,
) -> CompiledModule:
    """Compile a relay model for `targets` (priority order; `[]`: host only).

    `input_shapes` pins the inputs of an ONNX model with symbolic dimensions
    (`{"x": [1, 3, 224, 224]}`), as `byoc.from_onnx` does.

    With `cache`, a model compiled before (same content, backends, byoc code and
    CPU) is loaded from the compile cache in `$BYOC_CACHE_DIR` instead. A
    compile that takes over a second shows its stages on stderr when that is
    a terminal, unless `quiet`; `CompiledModule.timings` has their seconds.
    A misspelt keyword (`target=`) is a ByocError, like every other bad input.
    """
    if unknown:
        raise ByocError(
            f"error: byoc.compile() has no argument {', '.join(repr(k) for k in unknown)}; "
            "it takes source, targets, cache, quiet and input_shapes"
        )
    if cache not in (True, False):
        raise ByocError(f"error: cache must be True or False, not {cache!r}")
    from byoc.runtime.cache import cache_key, entry_path, source_digest
    from byoc.runtime.saved import host_cpu, load
    from byoc.runtime.toolchain import compiler, openmp_flags, optimisation_flags

    with compile_stages(quiet) as stages, garbage_collector_paused():
        backends = parse_targets(targets)
        with stage("cache"):
            build_host = {
                **host_cpu(),
                "cc": compiler(),
                "cflags": " ".join((*optimisation_flags(), *openmp_flags())),
            }
            digest = source_digest(source)
            if digest and input_shapes:
                pinned = {str(k): [int(d) for d in v] for k, v in input_shapes.items()}
                digest += ":input-shapes:" + json.dumps(pinned, sort_keys=True)
            key = cache_key(digest, backends, build_host) if digest else None
            entry = entry_path(key) if cache and key else None
            model = None
            if entry is not None and entry.exists():
                try:
                    model = load(entry)
                except ByocError:
                    pass  # a damaged entry: compile again and replace it
        if model is None:
            model = compile_uncached(source, backends, key, entry, input_shapes)
    model.timings = {**stages.seconds, "total": stages.elapsed}
    return model


def compile_uncached(
    source: Source,
    backends: Sequence[Backend],
    key: str | None = None,
    entry: Path | None = None,
    input_shapes: InputShapes | None = None,
) -> CompiledModule:
    """The whole pipeline, from source to a JIT-compiled CompiledModule.

    `key` (the cache key) names the symbols; `entry`, if given, is the cache
    entry to write, whose weights blob the model then maps. Each backend's
    codegen and the host's lowering run in threads of their own: the Python
    of one overlaps the C compiler and LLVM of the others.
    """
    from byoc.backends.host import host_module
    from byoc.dialects.relay.constant import print_eliding_weights
    from byoc.runtime.cache import module_digest
    from byoc.runtime.jit import JitModule

    with stage("import"):
        module = load_source(source, input_shapes)
        main = main_function(module)
        inputs = tensor_specs(
            main.function_type.inputs.data,
            "input",
            [a.name_hint for a in main.body.block.args],
        )
        outputs = tensor_specs(main.function_type.outputs.data, "output")

    with stage("partition"):
        partition_for(module, backends)
        placement = placement_of(module)
        partitioned_ir = print_eliding_weights(module)
        # Symbols are named by the content (two models in one process never
        # clash, the same model always gets the same names: its C is a hit).
        digest = key or module_digest(module)
        prefix = f"byoc_{digest[:12]}_"
        rename_symbols(module, prefix, "main")
        # A model of repeated blocks has repeated regions: each compiles once.
        dedup_functions(module)
        jobs = [(b, functions_of(module, b.name)) for b in backends]
        jobs = [(b, functions) for b, functions in jobs if functions.ops.first is not None]
        host = host_module(module)
    del module, main

    entry_name = f"{prefix}entry"
    weights_symbol = f"{prefix}weights"
    with ThreadPoolExecutor(len(jobs) + 1, thread_name_prefix="byoc-codegen") as pool:
        host_code = pool.submit(
            in_this_context(_host_code), host, f"{prefix}main", entry_name, weights_symbol
        )
        codegens = [pool.submit(in_this_context(_codegen), b, f) for b, f in jobs]
        artifacts = [future.result() for future in codegens]
        host_object, layout = host_code.result()

    libraries = [lib for a in artifacts for lib in a.libraries]
    with stage("host JIT"):
        jit = JitModule(host_object, libraries)
    model = CompiledModule(
        jit,
        entry_name,
        inputs,
        outputs,
        artifacts,
        partitioned_ir,
        placement,
        weights_symbol=weights_symbol,
    )
    blob = Blob.of_layout(layout) if layout.entries else None
    weights = None
    if entry is not None:
        with stage("cache"):
            weights = cache_model(model, entry, blob)
    if blob is not None:
        model.bind_weights(weights or Weights.copy_of(blob))
    return model


def _codegen(backend: Backend, functions: ModuleOp) -> Artifact:
    with stage(f"codegen {backend.name}"):
        return run_codegen(backend, functions)


def _host_code(host: ModuleOp, main: str, entry: str, weights_symbol: str):  # noqa: ANN202
    from byoc.backends.host import lower_host

    with stage("codegen host"):
        return lower_host(host, main, entry, weights_symbol)


def cache_model(model: CompiledModule, entry: Path, blob: Blob | None) -> Weights | None:
    """Save a fresh model as cache entry `entry`, writing its weights straight
    from `blob`; returns the entry's weights, mapped (None: not cached)."""
    from byoc.runtime.saved import load_weights, save

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        save(model, entry, blob)
        return load_weights(entry) if blob is not None else None
    except (ByocError, OSError):
        return None  # a model that cannot be saved, or a read-only cache
