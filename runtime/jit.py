"""The host JIT: llvm dialect → llvmlite → O3 for this CPU → object → MCJIT → cffi.

    module = parse(...)                                  # loop-level IR
    ConvertLoopsToLLVMPass().apply(ctx, module)
    add_entry_wrapper(module, "main", "byoc_ab12_entry")
    jit = JitModule.from_llvm_dialect(module, shared_libraries=[kernels_so])
    entry = jit.function("byoc_ab12_entry", "int32_t(*)(void**)")
    status = entry(pointer_array(x, y, out))

The host entry (docs/architecture.md, "Host entry") is added at the llvm-dialect
level, after convert-loops-to-llvm, so that pass stays a pure lowering. Code is
generated once, as a relocatable object, which MCJIT links in memory
(`LoadedHost`); the same object is what saved models and AOT libraries hold.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any
from os import PathLike

import cffi
import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, i32
from xdsl.ir import Block, Region
from xdsl.traits import SymbolTable

from byoc.frontend.diagnostics import ByocError
from byoc.passes.speed import garbage_collector_paused

ffi = cffi.FFI()
"""The one cffi instance for calling JIT-compiled code."""

_PTR = llvm_dialect.LLVMPointerType()


VECTORISER_MIN_TRIP_COUNT = 4
"""Loops of a constant trip count at least this are vectorised with a scalar
remainder (LLVM's default is 16, `-vectorizer-min-trip-count`)."""


@cache
def initialise_llvm() -> None:
    """Initialise LLVM's native target and asm printer, and the optimiser's
    options, once per process.

    Below 16 iterations LLVM's loop vectoriser allows no scalar remainder: a
    loop along a row of a 14x14 or 7x7 plane (DenseNet's and ResNet's late
    convolutions) was either left scalar, when proving its buffers apart
    needed a run-time check, or run as one masked 16-lane vector, whose masked
    store of the accumulator row the next channel's load cannot forward from:
    which one a loop got depended on how `main` was split. Vectorised with a
    remainder, host-only DenseNet-121 runs in 317 ms instead of 598-650 ms,
    ResNet-50 in 586 ms instead of 1577-1681 (1 thread), with the same bits:
    only the rows are vectorised, never a reduction."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.set_option("", f"-vectorizer-min-trip-count={VECTORISER_MIN_TRIP_COUNT}")


@cache
def host_cpu() -> tuple[str, str]:
    """This CPU's LLVM name and feature string, read once per process."""
    initialise_llvm()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def host_target_machine(*, jit: bool) -> llvm.TargetMachine:
    """An O3 target machine for this CPU: for MCJIT, or emitting PIC objects.

    Not cached: an MCJIT engine takes ownership of its target machine.
    """
    cpu, features = host_cpu()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu,
        features=features,
        opt=3,
        # Objects are linked into shared libraries or PIE executables.
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def optimise(module: llvm.ModuleRef, target_machine: llvm.TargetMachine) -> None:
    """Run LLVM's O3 pipeline, with loop and SLP vectorisation but no loop
    unrolling, on `module`."""
    passes = _pass_builder(module, target_machine)
    passes.getModulePassManager().run(module, passes)


def _pass_builder(module: llvm.ModuleRef, target_machine: llvm.TargetMachine):  # noqa: ANN202
    """`optimise`'s pipeline for `module`, whose triple and data layout it sets."""
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    # The loop nests of the host (constant trip counts everywhere) are what
    # the unroller blows up: with it, SqueezeNet's host code is 9x larger,
    # takes 3-4x longer to optimise and emit and runs 3x slower (ResNet-50:
    # compile 2x, run 1.6x slower). Vectorised loops stay interleaved.
    tuning.loop_unrolling = False
    return llvm.create_pass_builder(target_machine, tuning)


def translate_to_llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of an llvm-dialect module (through xDSL's convert_module).

    Three things convert_module drops are applied afterwards: the linkage of
    functions (internal lets LLVM drop a function it inlined everywhere),
    `noinline`, and the alignment of globals.
    """
    return str(to_llvmlite(module))


def to_llvmlite(module: ModuleOp) -> ir.Module:
    """The llvmlite module of an llvm-dialect module (see `translate_to_llvm_ir`)."""
    with garbage_collector_paused():
        # convert_module would build one llvmlite constant per element of a
        # weight (seconds for 25 MB) only for them to be replaced by bytes:
        # hide the values while converting, then set the bytes directly.
        values: dict[str, DenseIntOrFPElementsAttr] = {}
        for op in module.ops:
            if isinstance(op, llvm_dialect.GlobalOp) and isinstance(
                op.value, DenseIntOrFPElementsAttr
            ):
                values[op.sym_name.data] = op.value
                del op.properties["value"]
        try:
            llvm_module = convert_module(module, fallback_target_triple=None)
        finally:
            for op in module.ops:
                if isinstance(op, llvm_dialect.GlobalOp) and op.sym_name.data in values:
                    op.properties["value"] = values[op.sym_name.data]
        for op in module.ops:
            if isinstance(op, llvm_dialect.FuncOp) and op.body.blocks:
                function = llvm_module.get_global(op.sym_name.data)
                linkage = op.linkage.linkage.data
                if linkage != "external":
                    function.linkage = linkage
                if op.no_inline is not None:
                    function.attributes.add("noinline")
            elif isinstance(op, llvm_dialect.GlobalOp):
                variable = llvm_module.get_global(op.sym_name.data)
                _initialise_from_bytes(op, variable)
                if variable.linkage == "external" and op.value is not None:
                    # A definition: LLVM IR spells external linkage by omitting it.
                    variable.linkage = ""
        return llvm_module


def _initialise_from_bytes(op: llvm_dialect.GlobalOp, variable: ir.GlobalVariable):
    """Give a dense global its value as raw bytes, `[n x i8] c"..."`.

    Printed and parsed about 25x faster than one typed constant per element;
    accesses see the same memory through their typed GEPs (pointers are
    opaque). Only small constants get here: weights live in the blob
    (passes/weights_to_blob.py). A pointer variable without a value (the
    weights pointer) is defined as null, for the runtime to set.
    """
    if op.alignment is not None:
        variable.align = op.alignment.value.data
    if isinstance(op.value, DenseIntOrFPElementsAttr):
        data = bytearray(op.value.data.data)
        variable.value_type = ir.ArrayType(ir.IntType(8), len(data))
        variable.initializer = ir.Constant(variable.value_type, data)
    elif op.value is None and op.global_type == _PTR and op.linkage.linkage.data == "external":
        variable.initializer = ir.Constant(ir.PointerType(), None)
        variable.linkage = ""  # a definition with external linkage (no keyword)


def _parse(llvm_ir: str) -> llvm.ModuleRef:
    initialise_llvm()
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as err:
        raise ByocError(f"error: invalid LLVM IR for the host: {err}") from None
    return module


def load_libraries(paths: Sequence[str | PathLike[str]]) -> tuple[str, ...]:
    """Load shared objects into the process, so code compiled next can call them."""
    initialise_llvm()
    loaded = tuple(str(path) for path in paths)
    for path in loaded:
        try:
            llvm.load_library_permanently(path)
        except RuntimeError as err:
            raise ByocError(f"{path}: error: cannot load: {err}") from None
    return loaded


_dl = cffi.FFI()
_dl.cdef(
    """
    typedef struct { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; } Dl_info;
    void *dlopen(const char *, int);
    void *dlsym(void *, const char *);
    int dladdr(const void *, Dl_info *);
    """
)
_RTLD_NOW, _RTLD_NOLOAD = 2, 4


@cache
def _libc():  # noqa: ANN202 (a cffi library)
    return _dl.dlopen(None)


def bind_symbols(libraries: Sequence[str], names: Sequence[str]) -> None:
    """Point each of `names` that one of `libraries` itself defines at that
    definition, for the host code linked next. The libraries are loaded into
    the process's global scope, where the first one defining a name wins: two
    compiles whose functions share names (one model compiled twice with
    `cache=False` while a backend's code generation changed) would both call
    the first one's code. An explicit symbol outranks the global scope, and
    code linked before keeps the addresses it was linked with."""
    libc = _libc()
    info = _dl.new("Dl_info *")
    for path in libraries:
        handle = libc.dlopen(str(path).encode(), _RTLD_NOW | _RTLD_NOLOAD)
        if handle == _dl.NULL:
            continue
        real = os.path.realpath(path)
        for name in names:
            address = libc.dlsym(handle, name.encode())
            # dlsym also searches the library's dependencies (libc, libbyoc):
            # only the library's own definitions are bound.
            if address == _dl.NULL or not libc.dladdr(address, info) or info.dli_fname == _dl.NULL:
                continue
            if os.path.realpath(_dl.string(info.dli_fname).decode()) == real:
                llvm.add_symbol(name, int(_dl.cast("uintptr_t", address)))


class LoadedHost:
    """Host code from relocatable objects, linked in memory by an MCJIT engine
    (no compiling): what `JitModule` produces and what `byoc.load` reads back.

    Function pointers are valid while this object is alive: it owns the engine
    holding the machine code.
    """

    def __init__(
        self,
        objects: Sequence[bytes],
        libraries: Sequence[str | PathLike[str]] = (),
        symbols: Sequence[str] = (),
        needed: Sequence[str] = (),
    ):
        """Link `objects` (with each other) after loading `libraries`; every
        name in `symbols` must then resolve (MCJIT would bind a missing one to
        address 0), and so must every name in `needed` (what the objects need
        and none of them defines, libc's included) once the engine exists."""
        self.shared_libraries = load_libraries(libraries)
        bind_symbols(self.shared_libraries, [*symbols, *needed, *self._declared()])
        for symbol in symbols:
            if llvm.address_of_symbol(symbol) is None:
                raise ByocError(f"error: no loaded shared object defines '{symbol}'")
        self._objects = list(objects)
        # Creating the engine also makes the process's own symbols (libc) visible.
        self._engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), host_target_machine(jit=True)
        )
        for symbol in needed:
            if llvm.address_of_symbol(symbol) is None:
                raise ByocError(
                    f"error: the host code needs '{symbol}', which nothing loaded defines"
                )
        self._before_linking()
        try:
            for obj in self._objects:
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()
        except RuntimeError as err:
            raise ByocError(f"error: cannot load the host code: {err}") from None

    def address(self, name: str) -> int:
        """Address of the function `name`."""
        address = self._engine.get_function_address(name)
        if not address:
            raise ByocError(f"error: the host code has no function '{name}'")
        return address

    def function(self, name: str, c_signature: str):
        """The function `name` as a cffi function pointer of type `c_signature`,
        e.g. `"int32_t(*)(void**)"`."""
        return ffi.cast(c_signature, self.address(name))

    def _before_linking(self) -> None:
        """A check before the object is linked (MCJIT would bind an unresolved
        symbol to address 0, and calling it would crash the process)."""

    def _declared(self) -> list[str]:
        """Functions the code calls but does not define, where known before linking."""
        return []

    def variable_address(self, name: str) -> int:
        """Address of the global variable `name` (0 if the code has none)."""
        return self._engine.get_global_value_address(name)

    def has_variable(self, name: str) -> bool:
        """Whether the code defines the global variable `name`."""
        return bool(self._engine.get_global_value_address(name))

    def bind_pointer(self, name: str, address: int) -> None:
        """Set the host's pointer variable `name` (the weights pointer) to `address`."""
        variable = self._engine.get_global_value_address(name)
        if not variable:
            raise ByocError(f"error: the host code has no variable '{name}'")
        ffi.cast("uintptr_t*", variable)[0] = address

    def emit_objects(self) -> list[bytes]:
        """The relocatable objects this code was linked from (the first defines
        the global variables)."""
        return self._objects


def host_object_name(k: int) -> str:
    """The file name of a host's `k`-th object (saved models, exported libraries)."""
    return "host.o" if k == 0 else f"host.{k}.o"


@dataclass
class HostObject:
    """LLVM IR compiled (O3, for this CPU) into relocatable objects, not yet
    linked: one, or one per share of a module compiled in parallel (see
    `compile_in_parallel`), the first defining every global variable."""

    objects: list[bytes]
    defined: set[str]
    """The functions the objects define."""
    declared: list[str]
    """The functions they call and none of them defines."""
    _text: Callable[[], str]

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM IR, as one module (for debugging)."""
        return self._text()


def compile_llvm_ir(llvm_ir: str, companions: Sequence[str] = ()) -> HostObject:
    """Parse, optimise and emit LLVM IR text as an object, linked with
    `companions` (LLVM IR modules defining functions it declares: a
    profiler's timers). Needs no shared library, so it can run while the
    backends' C still compiles."""
    module = _parse(llvm_ir)
    for text in companions:
        module.link_in(_parse(text))
    target_machine = host_target_machine(jit=False)
    optimise(module, target_machine)
    defined = {f.name for f in module.functions if not f.is_declaration}
    declared = [f.name for f in module.functions if f.is_declaration]
    return HostObject([target_machine.emit_object(module)], defined, declared, lambda: str(module))


def compile_in_parallel(
    llvm_module: ir.Module, companions: Sequence[str] = (), shares: int | None = None
) -> HostObject:
    """`compile_llvm_ir(str(llvm_module), companions)`, LLVM running on several
    cores (`shares` threads, by default one per core when the module is large).

    LLVM optimises and generates code one function at a time, and llvmlite
    lets one thread into LLVM at a time (a process-wide lock). So the
    functions are dealt into `shares` (balanced by size), each printed as a
    module of its own, where the other shares' functions are only declared
    and every global is defined (available_externally, but in the first
    share: LLVM may still read a constant's value); threads parse, optimise
    and emit the shares as objects, in LLVM contexts of their own, outside
    llvmlite's lock. The objects are linked together when loaded: what was
    internal is hidden instead (callable from the other objects, not
    exported from a library). Functions without `noinline` (small helpers
    LLVM should inline) stay defined, available_externally, wherever they
    are not owned.
    """
    if companions:  # linked before optimising (the profiler's timers inline)
        return compile_llvm_ir(str(llvm_module), companions)
    functions = [f for f in llvm_module.functions if f.blocks]
    sizes = {f.name: sum(len(b.instructions) for b in f.blocks) for f in functions}
    count = min(shares or parallel_shares(), len(functions))
    if count < 2 or (shares is None and sum(sizes.values()) < PARALLEL_MIN_INSTRUCTIONS):
        return compile_llvm_ir(str(llvm_module), companions)
    owner = _deal(functions, sizes, count)
    texts = [_share_text(llvm_module, owner, k) for k in range(count)]
    linkages = {f.name: f.linkage for f in llvm_module.functions}
    linkages.update({g.name: g.linkage for g in llvm_module.global_values if isinstance(g, ir.GlobalVariable)})
    local = {name for name, linkage in linkages.items() if linkage in ("internal", "private")}
    initialise_llvm()
    with ThreadPoolExecutor(count - 1, thread_name_prefix="byoc-llvm") as pool:
        others = [pool.submit(_optimise_share, text) for text in texts[1:]]
        compiled = [_optimise_share(texts[0])] + [f.result() for f in others]
        for k, share in enumerate(compiled):
            # Local again where no other share names it (GlobalDCE then drops
            # what was inlined everywhere).
            borrowed = set().union(*(other.borrowed for j, other in enumerate(compiled) if j != k))
            for value in (*share.module.functions, *share.module.global_variables):
                if value.name in share.owned and value.name in local and value.name not in borrowed:
                    value.linkage = linkages[value.name]
        objects = [pool.submit(_emit_share, share, local) for share in compiled[1:]]
        objects = [_emit_share(compiled[0], local)] + [f.result() for f in objects]
    defined = set().union(*(share.owned for share in compiled)) & {f.name for f in llvm_module.functions}
    declared = sorted(set().union(*(share.declared for share in compiled)) - defined)
    bitcodes = [share.module.as_bitcode() for share in compiled]
    return HostObject(objects, defined, declared, lambda: _linked_text(bitcodes, linkages))


PARALLEL_MIN_INSTRUCTIONS = 20000
"""LLVM instructions below which a module is optimised in one piece: about
half a CPU-second of LLVM, where threads would cost more than they save."""


def parallel_shares() -> int:
    """How many threads optimise a large host module: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _deal(functions: list[ir.Function], sizes: dict[str, int], count: int) -> dict[str, int]:
    """Each function's share: the largest first, each to the lightest share."""
    owner: dict[str, int] = {}
    load = [0] * count
    for function in sorted(functions, key=lambda f: -sizes[f.name]):
        lightest = load.index(min(load))
        owner[function.name] = lightest
        load[lightest] += sizes[function.name]
    return owner


def _share_text(llvm_module: ir.Module, owner: dict[str, int], share: int) -> str:
    """LLVM IR of share `share` (see `compile_in_parallel`): `llvm_module` printed
    with its linkages and bodies changed for the time it takes."""
    saved: list[tuple[ir.GlobalValue, str, list | None]] = []
    try:
        for value in llvm_module.global_values:
            if isinstance(value, ir.Function):
                if not value.blocks:
                    continue
                saved.append((value, value.linkage, value.blocks))
                if owner[value.name] == share:
                    value.linkage = ""  # called from the other shares
                elif "noinline" in value.attributes:
                    value.blocks = []
                    value.linkage = ""
                else:
                    value.linkage = "available_externally"
            elif isinstance(value, ir.GlobalVariable) and value.initializer is not None:
                saved.append((value, value.linkage, None))
                value.linkage = "" if share == 0 else "available_externally"
        for value, _, _ in saved:
            value._clear_string_cache()  # llvmlite caches what it printed
        return str(llvm_module)
    finally:
        for value, linkage, blocks in saved:
            value.linkage = linkage
            if blocks is not None:
                value.blocks = blocks
            value._clear_string_cache()


@dataclass
class _Share:
    """One share of a module compiled in parallel, optimised in its own context
    (which the module keeps alive)."""

    module: llvm.ModuleRef
    target_machine: llvm.TargetMachine
    owned: set[str]
    """The functions and variables it defines for the objects (not available_externally)."""
    declared: set[str]
    """The functions it still calls without defining them."""
    borrowed: set[str]
    """The functions and variables it still names and another share owns."""


def _optimise_share(text: str) -> _Share:
    """Parse and optimise one share in an LLVM context of its own.

    The optimiser runs outside llvmlite's lock (its own context and target
    machine: LLVM allows that on several threads at once); everything else
    takes the lock as usual.
    """
    context = llvm.create_context()
    try:
        module = llvm.parse_assembly(text, context)
        module.verify()
    except RuntimeError as err:
        raise ByocError(f"error: invalid LLVM IR for the host: {err}") from None
    target_machine = host_target_machine(jit=False)
    passes = _pass_builder(module, target_machine)
    manager = passes.getModulePassManager()
    # llvmlite's raw library: the same functions without its process-wide lock.
    # A private attribute, so an llvmlite without it takes the locked entry
    # points (the shares then take turns in LLVM: slower, never wrong).
    unlocked = getattr(_raw_llvmlite(), "LLVMPY_RunNewModulePassManager", None)
    if unlocked is None:
        manager.run(module, passes)
    else:
        unlocked(manager, module, passes)
    owned = {
        value.name
        for value in (*module.functions, *module.global_variables)
        if not value.is_declaration and value.linkage != llvm.Linkage.available_externally
    }
    declared = {f.name for f in module.functions if f.is_declaration}
    named = {value.name for value in (*module.functions, *module.global_variables)}
    return _Share(module, target_machine, owned, declared, named - owned)


def _emit_share(share: _Share, local: set[str]) -> bytes:
    """The object of an optimised share. Its symbols that were internal or
    private in the whole module (`local`) and are still external are hidden:
    linked with the other shares' objects, not exported from a library.
    (Those no other share calls are internal again: GlobalDCE drops them
    where nothing here calls them either, i.e. inlined everywhere.)"""
    for value in (*share.module.functions, *share.module.global_variables):
        if value.name in share.owned and value.name in local and value.linkage == llvm.Linkage.external:
            value.visibility = "hidden"
    cleanup = llvm.create_new_module_pass_manager()
    cleanup.add_global_dead_code_eliminate_pass()
    cleanup.run(share.module, llvm.create_pass_builder(share.target_machine, llvm.create_pipeline_tuning_options()))
    return _emit_object(share.target_machine, share.module)


def _raw_llvmlite() -> Any:
    """llvmlite's library without its lock (None if this llvmlite has none)."""
    return getattr(llvm.ffi.lib, "_lib", None)


def _emit_object(target_machine: llvm.TargetMachine, module: llvm.ModuleRef) -> bytes:
    """`target_machine.emit_object(module)`, outside llvmlite's lock where it can."""
    emit = getattr(_raw_llvmlite(), "LLVMPY_TargetMachineEmitToMemory", None)
    if emit is None:
        return target_machine.emit_object(module)
    with llvm.ffi.OutputString() as error:
        buffer = emit(target_machine, module, 1, error)
        if not buffer:
            raise ByocError(f"error: LLVM cannot generate the host code: {error}")
    try:
        start = llvm.ffi.lib.LLVMPY_GetBufferStart(buffer)
        return ffi.buffer(ffi.cast("char *", start), llvm.ffi.lib.LLVMPY_GetBufferSize(buffer))[:]
    finally:
        llvm.ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def _linked_text(bitcodes: list[bytes], linkages: dict[str, str]) -> str:
    """The shares' optimised modules linked into one, with the linkage each
    symbol had (what `llvm_ir` shows of a module compiled in parallel)."""
    module = llvm.parse_bitcode(bitcodes[0])
    for bitcode in bitcodes[1:]:
        module.link_in(llvm.parse_bitcode(bitcode))
    for value in (*module.functions, *module.global_variables):
        linkage = linkages.get(value.name)
        if linkage in ("internal", "private") and not value.is_declaration:
            value.linkage = linkage
    return str(module)


class JitModule(LoadedHost):
    """LLVM IR compiled for this CPU (O3) into an object, linked in memory.

    Compiling to relocatable objects and linking those (rather than JIT-compiling
    the module) means the code is generated once, whether it is then only run
    or also saved: the objects are what `emit_objects` returns.
    """

    def __init__(
        self,
        code: str | HostObject,
        shared_libraries: Sequence[str | PathLike[str]] = (),
    ) -> None:
        """Compile LLVM IR text (or take it compiled), load the shared objects it
        calls, and link it."""
        compiled = code if isinstance(code, HostObject) else compile_llvm_ir(code)
        self._compiled = compiled  # its IR printed only on demand
        self._defined = compiled.defined
        super().__init__(compiled.objects, shared_libraries)

    @classmethod
    def from_llvm_dialect(
        cls, module: ModuleOp, shared_libraries: Sequence[str | PathLike[str]] = ()
    ) -> JitModule:
        """JIT-compile an llvm-dialect module (the output of convert-loops-to-llvm)."""
        return cls(translate_to_llvm_ir(module), shared_libraries)

    def _declared(self) -> list[str]:
        return [name for name in self._compiled.declared if not name.startswith("llvm.")]

    def _before_linking(self) -> None:
        for name in self._declared():
            if llvm.address_of_symbol(name) is None:
                libraries = ", ".join(self.shared_libraries) or "none"
                raise ByocError(
                    f"error: the host code calls '{name}', which no loaded shared "
                    f"object defines (shared libraries: {libraries})"
                )

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM IR, as compiled (for debugging)."""
        return self._compiled.llvm_ir

    def address(self, name: str) -> int:
        """Address of the compiled function `name`."""
        if name not in self._defined:
            raise ByocError(
                f"error: no function '{name}' in the JIT module "
                f"(it has: {', '.join(sorted(self._defined)) or 'none'})"
            )
        return super().address(name)


def emit_object(module: ModuleOp | str) -> bytes:
    """An O3 object file for this CPU from an llvm-dialect module or LLVM IR text,
    without JIT-compiling it (for ahead-of-time export)."""
    llvm_ir = module if isinstance(module, str) else translate_to_llvm_ir(module)
    parsed = _parse(llvm_ir)
    target_machine = host_target_machine(jit=False)
    optimise(parsed, target_machine)
    return target_machine.emit_object(parsed)


def add_entry_wrapper(
    module: ModuleOp, func_name: str, entry_name: str, export_callee: bool = False
) -> None:
    """Add `int32_t entry_name(void** buffers)` to an llvm-dialect module: it calls
    `func_name(buffers[0], ..., buffers[n-1])` and returns its status.

    `func_name` must take only pointers (memrefs) and return i32, as `@main`
    does in the loop-level IR. It gets internal linkage, so the entry is the
    module's one export and `main` never clashes with a C program's `main` or
    another model's functions — unless `export_callee` (for a callee whose
    name is already process-unique) keeps it callable with one pointer per
    buffer, which saves building the array on every call.
    """
    callee = SymbolTable.lookup_symbol(module, func_name)
    if not isinstance(callee, llvm_dialect.FuncOp):
        raise ByocError(
            f"error: no llvm.func @{func_name} to wrap "
            "(run convert-loops-to-llvm first)"
        )
    signature = callee.function_type
    if signature.output != i32 or any(t != _PTR for t in signature.inputs):
        raise ByocError(
            f"error: @{func_name} must take only memrefs and return i32 to get a "
            f"host entry, it is {signature}"
        )
    callee.linkage = llvm_dialect.LinkageAttr("external" if export_callee else "internal")
    block = Block(arg_types=[_PTR])
    buffers = block.args[0]
    buffers.name_hint = "buffers"
    arguments = []
    for k in range(len(signature.inputs)):
        slot = llvm_dialect.GEPOp(buffers, [k], _PTR, inbounds=True)
        load = llvm_dialect.LoadOp(slot, _PTR)
        block.add_ops([slot, load])
        arguments.append(load.dereferenced_value)
    call = llvm_dialect.CallOp(func_name, *arguments, return_type=i32)
    block.add_ops([call, llvm_dialect.ReturnOp(call.returned)])
    module.body.block.add_op(
        llvm_dialect.FuncOp(
            entry_name,
            llvm_dialect.LLVMFunctionType([_PTR], i32),
            linkage=llvm_dialect.LinkageAttr("external"),
            body=Region(block),
        )
    )


_VOID_PTR_ARRAY = ffi.typeof("void*[]")


def pointer_array(*arrays: np.ndarray):
    """The `void*[n]` of the arrays' data, the argument of a host entry.

    About 0.35 µs per array. The arrays must be C-contiguous (numpy raises
    otherwise) and stay alive during the call.
    """
    return ffi.new(_VOID_PTR_ARRAY, [ffi.from_buffer(a) for a in arrays])
