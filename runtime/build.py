"""`byoc.compile`: from a relay model to a CompiledModule.

The steps are the data flow of docs/architecture.md: parse and verify,
annotate for the backends in priority order, merge and outline, run each
backend's codegen on its functions, JIT-compile the host with the backends'
code linked in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr, TensorType
from xdsl.ir import Attribute, Operation

from byoc.backends import Artifact, Backend
from byoc.backends.errors import BackendError, blame, run_backend_code
from byoc.dialects.extern import COMPILER_ATTR, CallOp
from byoc.frontend.diagnostics import ByocError
from byoc.frontend.parse import location_of, names_file, parse_file, parse_text, verify_module
from byoc.passes.annotate import Exclusions, annotate, is_graph_op
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


def source_name(source: object) -> str | None:
    """The file a source is read from, to name in messages (None for text)."""
    if isinstance(source, Path | str) and is_path(source):
        return str(source)
    return None


def main_function(module: ModuleOp, entry: str = "main", where: str | None = None) -> func.FuncOp:
    """The `@main` function, checked to take and return static float tensors;
    `where` (the source file) prefixes a message about a missing one."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            if not op.body.blocks:
                place = location_of(op) or where
                raise ByocError(f"{place + ': ' if place else ''}error: @{entry} has no body")
            return op
    raise ByocError(f"{where + ': ' if where else ''}error: the module has no function @{entry}")


def tensor_specs(
    types: Sequence[Attribute],
    prefix: str,
    names: Sequence[str | None] = (),
    where: str | None = None,
) -> list[TensorSpec]:
    """Shapes and dtypes of `@main`'s inputs or outputs (named by their SSA
    names); `where` (`@main`'s location) prefixes a message."""
    specs: list[TensorSpec] = []
    names = list(names) + [None] * (len(types) - len(names))
    for i, typ in enumerate(types):
        if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
            raise ByocError(
                f"{where + ': ' if where else ''}error: {prefix} {i} of @main has type "
                f"{typ}; expected a static-shape tensor"
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
    return ModuleOp([op.clone() for op in outlined_for(module, backend)])


def outlined_for(module: ModuleOp, backend: str) -> list[func.FuncOp]:
    """The functions of `module` outlined for `backend` (not copies)."""
    compiler = StringAttr(backend)
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.attributes.get(COMPILER_ATTR) == compiler
    ]


def run_codegen(backend: Backend, functions: ModuleOp) -> Artifact:
    """Run a backend's codegen; its failures are BackendErrors blaming it (and
    naming the functions and their ops)."""
    symbols = [op.sym_name.data for op in functions.ops if isinstance(op, func.FuncOp)]
    where = lambda: describe_functions(functions)  # noqa: E731 - only on failure
    artifact = run_backend_code(backend, "codegen", where, backend.generate, functions)
    if not isinstance(artifact, Artifact):
        raise blame(
            backend,
            "codegen",
            where(),
            TypeError(f"returned {type(artifact).__name__}, not a byoc.backends.Artifact"),
        )
    missing = set(symbols) - set(artifact.symbols)
    if missing:
        raise blame(
            backend,
            "codegen",
            where(),
            ValueError(f"its Artifact does not export {', '.join(sorted(missing))}"),
        )
    return artifact


def describe_functions(functions: ModuleOp) -> str:
    """`@f (relay.add, relay.nn.relu), @g (...)`: what a codegen was given."""
    parts = []
    for function in functions.ops:
        if isinstance(function, func.FuncOp) and function.body.blocks:
            names = dict.fromkeys(op.name for op in function.body.block.ops if is_graph_op(op))
            parts.append(f"@{function.sym_name.data} ({', '.join(names)})")
    return ", ".join(parts)


def partition_for(
    module: ModuleOp,
    backends: Sequence[Backend],
    strict: bool = False,
    exclude: Exclusions | None = None,
    simplify: bool = True,
) -> None:
    """Quantize QDQ units, simplify (unless told not to), then annotate, merge
    and outline `module` in place for `backends` (`strict`: an op no backend
    takes is an error; `exclude`: backends an op must avoid)."""
    check_outlined_for(module, backends)
    prepare_graph(module, simplify)
    # also drops marks for backends not asked for
    annotate(module, backends, strict, exclude)
    if backends:
        partition(module)


def prepare_graph(module: ModuleOp, simplify: bool = True) -> None:
    """The rewrites before partitioning (each a no-op the second time): QDQ
    units become quantized ops, the graph is simplified (byoc-simplify), dead
    ops go."""
    # Before anything else rewrites the graph: the units are DQ -> op -> Q as
    # the importer (or the user) wrote them.
    fake_quantization_to_integer(module)
    if simplify:
        from byoc.passes.simplify import simplify as simplify_graph

        with stage("simplify"):
            simplify_graph(module)
    remove_dead_ops(module)


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
    targets: Sequence[str | Backend] | str | Backend | None = ("ccompiler",),
    cache: bool = True,
    quiet: bool = False,
    input_shapes: InputShapes | None = None,
    fallback: bool = True,
    simplify: bool = True,
    **unknown: object,
) -> CompiledModule:
    """Compile a relay model for `targets` (priority order; `[]`: host only).

    A target is a backend's name or a `byoc.backends.Backend` object (a
    backend tried before it is packaged; such compiles are never cached).
    When a backend's codegen fails on some functions, their ops go to the
    remaining backends and the host, with a warning; with `fallback=False`
    that, and an op no backend takes, is an error instead.

    `input_shapes` pins the inputs of an ONNX model with symbolic dimensions
    (`{"x": [1, 3, 224, 224]}`), as `byoc.from_onnx` does.

    With `simplify`, the graph is simplified first (byoc-simplify: constants
    folded, batch norms folded into convolutions, no-ops removed, ...), so
    every backend sees the simplified graph.

    With `cache`, a model compiled before (same content, options, backends,
    byoc code and CPU) is loaded from the compile cache in `$BYOC_CACHE_DIR` instead. A
    compile that takes over a second shows its stages on stderr when that is
    a terminal, unless `quiet`; `CompiledModule.timings` has their seconds.
    A misspelt keyword (`target=`) is a ByocError, like every other bad input.
    """
    if unknown:
        raise ByocError(
            f"error: byoc.compile() has no argument {', '.join(repr(k) for k in unknown)}; "
            "it takes source, targets, cache, quiet, input_shapes, fallback and simplify"
        )
    if cache not in (True, False):
        raise ByocError(f"error: cache must be True or False, not {cache!r}")
    if fallback not in (True, False):
        raise ByocError(f"error: fallback must be True or False, not {fallback!r}")
    if simplify not in (True, False):
        raise ByocError(f"error: simplify must be True or False, not {simplify!r}")
    from byoc.backends import is_registered, resolve_targets, target_items
    from byoc.backends.errors import warn
    from byoc.runtime.cache import cache_key, entry_path, source_digest
    from byoc.runtime.saved import host_cpu, load
    from byoc.runtime.libbyoc import parallel_code
    from byoc.runtime.toolchain import compiler, openmp_flags, optimisation_flags

    with compile_stages(quiet) as stages, garbage_collector_paused():
        # Named backends load on a miss only: importing them costs more than a hit.
        items = target_items(targets)
        installed = all(isinstance(i, str) or is_registered(i) for i in items)
        names = [i if isinstance(i, str) else i.name for i in items]
        with stage("cache"):
            build_host = {
                **host_cpu(),
                "cc": compiler(),
                "cflags": " ".join((*optimisation_flags(), *openmp_flags())),
                "fallback": fallback,
                "simplify": simplify,
                "parallel": str(parallel_code()),
            }
            digest = source_digest(source)
            if digest and input_shapes:
                pinned = {str(k): [int(d) for d in v] for k, v in input_shapes.items()}
                digest += ":input-shapes:" + json.dumps(pinned, sort_keys=True)
            key = cache_key(digest, names, build_host) if digest and installed else None
            if not installed:
                # A backend being developed may change its code under the same
                # name: its symbols must never be an earlier compile's.
                key = uuid.uuid4().hex
            entry = entry_path(key) if cache and installed and key else None
            model = None
            if entry is not None and entry.exists():
                try:
                    model = load(entry)
                except ByocError:
                    pass  # a damaged entry: compile again and replace it
                else:
                    for record in model.fallbacks:
                        warn(str(record))  # as the first compile did
        if model is None:
            backends = resolve_targets(items)
            model = compile_uncached(
                source, backends, key, entry, input_shapes, fallback, simplify
            )
    model.timings = {**stages.seconds, "total": stages.elapsed}
    model.origin = (source, tuple(items), input_shapes, simplify)
    return model


def compile_uncached(
    source: Source,
    backends: Sequence[Backend],
    key: str | None = None,
    entry: Path | None = None,
    input_shapes: InputShapes | None = None,
    fallback: bool = True,
    simplify: bool = True,
) -> CompiledModule:
    """The whole pipeline, from source to a JIT-compiled CompiledModule.

    `key` (the cache key) names the symbols; `entry`, if given, is the cache
    entry to write, whose weights blob the model then maps. Partitioning and
    codegen repeat for the functions a backend fails on (runtime/fallback.py).
    """
    from byoc.runtime.fallback import generate
    from byoc.runtime.jit import JitModule

    with stage("import"):
        module = load_source(source, input_shapes)
        main = main_function(module, where=source_name(source))
        where = location_of(main) or source_name(source)
        inputs = tensor_specs(
            main.function_type.inputs.data,
            "input",
            [a.name_hint for a in main.body.block.args],
            where,
        )
        outputs = tensor_specs(main.function_type.outputs.data, "output", where=where)
    del main

    built = generate(
        module,
        backends,
        fallback,
        key,
        (inputs, outputs),
        simplify,
        reload=lambda: load_source(source, input_shapes),
    )
    del module
    libraries = [lib for a in built.artifacts for lib in a.libraries]
    with stage("host JIT"):
        jit = JitModule(built.host_object, libraries)
    model = CompiledModule(
        jit,
        built.entry_name,
        inputs,
        outputs,
        built.artifacts,
        built.partitioned_ir,
        built.placement,
        weights_symbol=built.weights_symbol,
        fallbacks=built.fallbacks,
    )
    layout = built.layout
    blob = Blob.of_layout(layout) if layout.entries else None
    weights = None
    if entry is not None:
        with stage("cache"):
            weights = cache_model(model, entry, blob)
    if blob is not None:
        model.bind_weights(weights or Weights.copy_of(blob))
    return model


def partition_stage(
    module: ModuleOp,
    backends: Sequence[Backend],
    key: str | None,
    strict: bool = False,
    exclude: Exclusions | None = None,
    simplify: bool = True,
) -> Partitioned:
    """Partition `module` in place (simplified first if `simplify`), name its
    symbols, merge repeated functions, and split it into the backends' jobs
    and the host module."""
    from byoc.backends.host import take_host_module
    from byoc.dialects.relay.constant import print_eliding_weights
    from byoc.runtime.cache import module_digest

    with stage("partition"):
        partition_for(module, backends, strict, exclude, simplify)
        placement = placement_of(module)
        partitioned_ir = print_eliding_weights(module)
        # Symbols are named by the content (two models in one process never
        # clash, the same model always gets the same names: its C is a hit).
        digest = key or module_digest(module)
        prefix = f"byoc_{digest[:12]}_"
        rename_symbols(module, prefix, "main")
        held = {
            op.sym_name.data: (compiler.data, list(op.body.block.ops))
            for op in module.ops
            if isinstance(op, func.FuncOp)
            and isinstance(compiler := op.attributes.get(COMPILER_ATTR), StringAttr)
        }
        # A model of repeated blocks has repeated regions: each compiles once.
        merged = dedup_functions(module)
        # Neither copied: codegen copies the functions it is given
        # (generate_functions), and `module` keeps only the outlined ones.
        jobs = [(b, outlined_for(module, b.name)) for b in backends]
        jobs = [(b, functions) for b, functions in jobs if functions]
        host = take_host_module(module)
    return Partitioned(placement, partitioned_ir, prefix, held, merged, jobs, host)


@dataclass
class Partitioned:
    """What `partition_stage` made of a module."""

    placement: dict[str, int]
    partitioned_ir: str
    prefix: str
    held: dict[str, tuple[str, list[Operation]]]
    """Each outlined function's backend and ops, by symbol, before merging."""
    merged: dict[str, str]
    """Functions merged into an identical one: removed symbol -> kept symbol."""
    jobs: list[tuple[Backend, list[func.FuncOp]]]
    """Each backend's outlined functions (in the partitioned module: not to be changed)."""
    host: ModuleOp


def codegen_stage(
    parts: Partitioned,
    io: tuple[Sequence[TensorSpec], Sequence[TensorSpec]] | None = None,
) -> tuple[list[Artifact], list[tuple[str, BackendError, str]], Any, Any]:
    """Each backend's codegen and the host's lowering, in threads of their own
    (the Python of one overlaps the C compiler and LLVM of the others). With
    `io` (`@main`'s inputs and outputs), the host object carries its signature
    (runtime/signature.py), which `byoc.load` checks a manifest against.

    Returns the artifacts, the functions whose codegen failed (symbol, error,
    backend), and the host's object code and weights layout."""
    from byoc.runtime.fallback import generate_functions
    from byoc.runtime.signature import backend_calls, host_signature

    prefix = parts.prefix
    signature = None
    if io is not None:
        signature = host_signature(
            f"{prefix}entry", *io, backend_calls(parts.host), parts.placement, parts.partitioned_ir
        )
    with ThreadPoolExecutor(len(parts.jobs) + 1, thread_name_prefix="byoc-codegen") as pool:
        host_code = pool.submit(
            in_this_context(_host_code),
            parts.host,
            f"{prefix}main",
            f"{prefix}entry",
            f"{prefix}weights",
            signature,
        )
        codegens = [
            pool.submit(in_this_context(_codegen), b, f, generate_functions) for b, f in parts.jobs
        ]
        artifacts: list[Artifact] = []
        failures: list[tuple[str, BackendError, str]] = []
        for (backend, _), future in zip(parts.jobs, codegens):
            made, broken = future.result()
            artifacts += made
            failures += [(f.sym_name.data, err, backend.name) for f, err in broken]
        host_object, layout = host_code.result()
    return artifacts, failures, host_object, layout


def _codegen(backend: Backend, functions: list[func.FuncOp], generate_functions: Any) -> Any:
    with stage(f"codegen {backend.name}"):
        return generate_functions(backend, functions)


def _host_code(host: ModuleOp, main: str, entry: str, weights_symbol: str, signature: Any):  # noqa: ANN202
    from byoc.backends.host import lower_host

    with stage("codegen host"):
        return lower_host(host, main, entry, weights_symbol, signature)


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
