"""The host: everything no backend took, plus the glue that calls the backends.

`@main` is lowered through the shared loop-level IR to the llvm dialect and
JIT-compiled with llvmlite; outlined functions appear in it only as
declarations, resolved from the backends' shared objects at JIT time. Its
weights leave the code for a blob the runtime provides (weights_to_blob.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.traits import SymbolTable

from byoc.dialects import make_context
from byoc.dialects.extern import COMPILER_ATTR
from byoc.runtime.array_entry import add_array_entry
from byoc.passes.dedup_functions import dedup_functions
from byoc.passes.speed import garbage_collector_paused
from byoc.passes.split_functions import split_functions
from byoc.passes.weights_to_blob import WeightsLayout, move_weights_to_blob
from byoc.runtime.jit import (
    HostObject,
    JitModule,
    add_entry_wrapper,
    compile_in_parallel,
    to_llvmlite,
)
from byoc.runtime.progress import stage

if TYPE_CHECKING:
    from byoc.passes.convert_relay_to_loops import ProfileMarks

MAX_OPS = 50
"""Ops per part of the host's `main` (split_functions). LLVM's optimiser grows
faster than a function's size: parts of 50 ops cost host-only DenseNet-121
7.7 CPU-s against 10.7 for parts of 200, ResNet-50 3.7 against 5.0, and run
as fast (faster: the loops of a part read its arguments, which LLVM knows
apart without run-time checks)."""


def host_module(partitioned: ModuleOp) -> ModuleOp:
    """A copy of `partitioned` where outlined functions are only declared."""
    return take_host_module(partitioned.clone())


def take_host_module(partitioned: ModuleOp) -> ModuleOp:
    """The host's part of `partitioned`, moved out of it (not copied: a copy of
    a 16k-op `main` costs a CPU-second): a new module of its ops but the
    outlined functions, which stay in `partitioned` and are only declared."""
    ops: list[Operation] = []
    for op in list(partitioned.ops):
        if isinstance(op, func.FuncOp) and COMPILER_ATTR in op.attributes:
            declaration = func.FuncOp.external(
                op.sym_name.data,
                list(op.function_type.inputs),
                list(op.function_type.outputs),
            )
            declaration.attributes[COMPILER_ATTR] = op.attributes[COMPILER_ATTR]
            ops.append(declaration)
        else:
            op.detach()
            ops.append(op)
    module = ModuleOp(ops)
    module.attributes.update(partitioned.attributes)
    module.properties.update(partitioned.properties)
    return module


def lower_to_llvm(
    module: ModuleOp, main: str, entry: str, marks: ProfileMarks | None = None
) -> ModuleOp:
    """Lower a host module to the llvm dialect, adding the `entry` wrapper of `main`
    and the entry taking numpy arrays (`array_entry_name(entry)`); `marks`
    time its op groups (profiling builds, runtime/profile.py)."""
    from byoc.passes.convert_loops_to_llvm import ConvertLoopsToLLVMPass
    from byoc.passes.convert_relay_to_loops import convert_relay_to_loops

    signature = SymbolTable.lookup_symbol(module, main)
    assert isinstance(signature, func.FuncOp)
    input_shapes = [tuple(t.get_shape()) for t in signature.function_type.inputs]  # type: ignore[attr-defined]
    n_outputs = len(signature.function_type.outputs)
    ctx = make_context()
    with garbage_collector_paused():
        convert_relay_to_loops(module, marks)
    ConvertLoopsToLLVMPass().apply(ctx, module)
    # `main` is already process-unique (byoc_<hash>_main): keep it callable.
    add_entry_wrapper(module, main, entry, export_callee=True)
    add_array_entry(module, main, array_entry_name(entry), input_shapes, n_outputs)
    add_failed_bytes_getter(module, failed_bytes_name(entry))
    return module


def failed_bytes_name(entry: str) -> str:
    """`int64_t <prefix>failed_bytes(void)` beside `entry`: the size of the
    allocation that made the host return `ALLOCATION_FAILED` (0: none)."""
    return entry.removesuffix("entry") + "failed_bytes"


def add_failed_bytes_getter(module: ModuleOp, name: str) -> None:
    """Export `name`, reading (and clearing) the host's `FAILED_BYTES` global."""
    from xdsl.dialects import llvm
    from xdsl.dialects.builtin import IntegerAttr, i64
    from xdsl.ir import Block, Region

    from byoc.passes.convert_memref_to_llvm import FAILED_BYTES

    block = Block()
    zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
    block.add_op(zero)
    if any(isinstance(op, llvm.GlobalOp) and op.sym_name.data == FAILED_BYTES for op in module.ops):
        address = llvm.AddressOfOp(FAILED_BYTES, llvm.LLVMPointerType())
        value = llvm.LoadOp(address.result, i64)
        block.add_ops([address, value, llvm.StoreOp(zero.result, address.result)])
        block.add_op(llvm.ReturnOp(value.dereferenced_value))
    else:
        block.add_op(llvm.ReturnOp(zero.result))
    module.body.block.add_op(
        llvm.FuncOp(
            name,
            llvm.LLVMFunctionType([], i64),
            linkage=llvm.LinkageAttr("external"),
            body=Region(block),
        )
    )


def array_entry_name(entry: str) -> str:
    """The name of the entry taking numpy arrays (runtime/array_entry.py) beside `entry`."""
    return entry.removesuffix("entry") + "array_entry"


def lower_host(
    module: ModuleOp,
    main: str,
    entry: str,
    weights_symbol: str,
    signature: dict[str, Any] | None = None,
    marks: ProfileMarks | None = None,
    companions: Sequence[str] = (),
) -> tuple[HostObject, WeightsLayout]:
    """Compile a host module (from `host_module`, changed in place) to an object,
    not yet linked; its large constants go to a weights blob (the layout) read
    through the pointer `weights_symbol`. A `signature` (runtime/signature.py),
    completed with the blob, is embedded for `byoc.load` to check files against.
    A profiling build passes `marks` and the LLVM IR defining them
    (`companions`)."""
    # `main` grows with the model: cut it into bounded parts, each compiled once
    # however often a model repeats it (docs/architecture.md, "Compile time").
    split_functions(module, MAX_OPS, select=lambda f: f.sym_name.data == main)
    dedup_functions(module)
    llvm_module = lower_to_llvm(module, main, entry, marks)
    layout = move_weights_to_blob(llvm_module, weights_symbol)
    if signature is not None:
        from byoc.runtime.signature import embed_signature, signature_name

        weights = {"symbol": weights_symbol, "size": layout.size} if layout.entries else None
        embed_signature(llvm_module, signature_name(entry), {**signature, "weights": weights})
    translated = to_llvmlite(llvm_module)
    with stage("host JIT"):
        return compile_in_parallel(translated, companions), layout


def compile_host(
    partitioned: ModuleOp,
    main: str,
    entry: str,
    libraries: Sequence[Path],
    weights_symbol: str,
) -> tuple[JitModule, WeightsLayout]:
    """JIT-compile the host part of a partitioned module. Its large constants
    go to a weights blob (returned as a layout) read through the pointer
    `weights_symbol`, which the caller binds before the first call."""
    host, layout = lower_host(host_module(partitioned), main, entry, weights_symbol)
    return JitModule(host, shared_libraries=list(libraries)), layout
