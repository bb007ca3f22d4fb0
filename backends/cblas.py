"""cblas: matrix products and convolutions as calls to OpenBLAS's `sgemm`.

A vendor-library backend in one file. It takes float32 `nn.dense`,
`nn.matmul`, `nn.batch_matmul` and `nn.conv2d` (im2col + sgemm, or sgemm
straight on the input for 1x1 stride-1 convolutions), and the composites
that end a dense or conv2d with a bias and/or relu. The generated C calls
`scipy_cblas_sgemm` from the scipy-openblas32 wheel (`pip install
byoc[cblas]`), then applies the epilogue (bias add, relu) in ONE loop over
the product's output, in place, while it is still in cache.

How the C is made. Each outlined function is planned first (which ops form
one step, which buffer each value lives in), then built as emitc IR
(`byoc.dialects.emitc`: `emitc.call_opaque` for sgemm, aligned_alloc, free,
`emitc.for`/`emitc.if` for im2col and epilogue loops, `emitc.include` for
`<cblas.h>`) and printed by `byoc.targets.c`, like every other C byoc makes.
Index arithmetic is folded at codegen time (`Affine`), so the loops read as
`out[(v5 * 1024) + v6]` with every shape a constant.

Intermediates (values used only inside the function) and im2col buffers live
in one scratch allocation sized at codegen time; buffers whose lifetimes do
not overlap share memory. A failed allocation returns 1. Small constants the
partitioner copies into a function become `static const float` arrays.

OpenBLAS threads: OpenBLAS starts as many threads as cores (or
`$OPENBLAS_NUM_THREADS`); `set_threads(n)` changes it for the process.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.backends.spec import Artifact, Backend, Composite
from byoc.dialects import relay
from byoc.dialects.emitc import (
    CONST_ATTR,
    RESTRICT_ATTR,
    EmitC_AddOp,
    EmitC_ArrayType,
    EmitC_AssignOp,
    EmitC_CallOpaqueOp,
    EmitC_CastOp,
    EmitC_CmpOp,
    EmitC_ConditionalOp,
    EmitC_ConstantOp,
    EmitC_ForOp,
    EmitC_FuncOp,
    EmitC_GetGlobalOp,
    EmitC_GlobalOp,
    EmitC_IfOp,
    EmitC_IncludeOp,
    EmitC_LiteralOp,
    EmitC_LoadOp,
    EmitC_LogicalAndOp,
    EmitC_MulOp,
    EmitC_OpaqueAttr,
    EmitC_OpaqueType,
    EmitC_PointerType,
    EmitC_ReturnOp,
    EmitC_SubOp,
    EmitC_SubscriptOp,
    EmitC_VerbatimOp,
    EmitC_YieldOp,
)
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.toolchain import DEFAULT_FLAGS, compile_shared

NAME = "cblas"
SGEMM = "scipy_cblas_sgemm"
BLAS_INT_MAX = 2**31 - 1
"""sgemm's sizes and leading dimensions are `blasint`, 32-bit in scipy-openblas32."""

ALIGNMENT = 64
"""Bytes: the scratch allocation and every buffer in it start on a cache line."""


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenBLAS:
    """Where the scipy-openblas32 wheel keeps its header and shared library."""

    include_dir: Path
    lib_dir: Path
    library: str

    @property
    def flags(self) -> tuple[str, ...]:
        return (*DEFAULT_FLAGS, f"-I{self.include_dir}")

    @property
    def libraries(self) -> tuple[str, ...]:
        return (
            f"-L{self.lib_dir}",
            f"-l{self.library}",
            f"-Wl,-rpath,{self.lib_dir}",
            "-lm",
        )


@cache
def openblas() -> OpenBLAS:
    """The installed scipy-openblas32, or a ByocError saying how to install it."""
    try:
        import scipy_openblas32 as wheel  # type: ignore[import-not-found]
    except ImportError:
        raise ByocError(
            "error: backend 'cblas' needs OpenBLAS from the scipy-openblas32 wheel: "
            "pip install 'byoc[cblas]'"
        ) from None
    return OpenBLAS(
        Path(wheel.get_include_dir()), Path(wheel.get_lib_dir()), wheel.get_library()
    )


@cache
def _openblas_handle():  # noqa: ANN202 - a cffi library object
    import cffi

    lib = openblas()
    candidates = sorted(lib.lib_dir.glob(f"lib{lib.library}.*"))
    if not candidates:
        raise ByocError(f"error: no lib{lib.library} in {lib.lib_dir}")
    ffi = cffi.FFI()
    ffi.cdef(
        f"void {lib.library}_set_num_threads(int);"
        f"int {lib.library}_get_num_threads(void);"
    )
    return ffi.dlopen(str(candidates[0])), lib.library


def set_threads(count: int) -> None:
    """Make OpenBLAS use `count` threads in this process (for every cblas model)."""
    if count < 1:
        raise ByocError(f"error: OpenBLAS needs at least one thread, got {count}")
    handle, prefix = _openblas_handle()
    getattr(handle, f"{prefix}_set_num_threads")(count)


def get_threads() -> int:
    """How many threads OpenBLAS uses in this process."""
    handle, prefix = _openblas_handle()
    return int(getattr(handle, f"{prefix}_get_num_threads")())


# ---------------------------------------------------------------------------
# Which ops it takes
# ---------------------------------------------------------------------------


def _shape(value: SSAValue) -> tuple[int, ...]:
    typ = value.type
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def _float32(op: Operation) -> str | None:
    """Why `op` is not a float32 op on non-empty tensors, or None."""
    for what, value in [
        *((f"operand {i}", v) for i, v in enumerate(op.operands)),
        ("result", op.results[0]),
    ]:
        typ = value.type
        if not isinstance(typ, TensorType) or typ.element_type != f32:
            return f"cblas computes in float32 (sgemm); {op.name} {what} is {typ}"
        if 0 in typ.get_shape():
            return f"cblas leaves empty tensors ({typ}) to the host"
    return None


def _blas_sizes(op: Operation, **sizes: int) -> str | None:
    for name, size in sizes.items():
        if size > BLAS_INT_MAX:
            return (
                f"{op.name}: {name}={size} exceeds sgemm's 32-bit sizes "
                f"(at most {BLAS_INT_MAX})"
            )
    return None


def dense_check(op: Operation) -> str | None:
    """Takes float32 dense: one sgemm `[M, K] x [N, K]^T`."""
    if reason := _float32(op):
        return reason
    data, weight = _shape(op.operands[0]), _shape(op.operands[1])
    return _blas_sizes(op, M=math.prod(data[:-1]), N=weight[0], K=weight[1])


def matmul_check(op: Operation) -> str | None:
    """Takes float32 matmul: one sgemm, or one per batch when `transpose_a`."""
    if reason := _float32(op):
        return reason
    a, b = _shape(op.operands[0]), _shape(op.operands[1])
    result = _shape(op.results[0])
    return _blas_sizes(
        op, M=math.prod(result[:-1]), N=result[-1], K=b[0] * b[1] // result[-1],
        leading=max(a[-1], b[-1]),
    )


def batch_matmul_check(op: Operation) -> str | None:
    """Takes float32 batch_matmul: one sgemm per batch (one in all when y is shared)."""
    if reason := _float32(op):
        return reason
    x, y = _shape(op.operands[0]), _shape(op.operands[1])
    batch, m, n = _shape(op.results[0])
    return _blas_sizes(op, M=batch * m, N=n, K=x[1] * x[2] // m, leading=max(x[2], y[2]))


def conv2d_check(op: Operation) -> str | None:
    """Takes float32 conv2d, grouped too, but not depthwise (one input channel per group)."""
    if reason := _float32(op):
        return reason
    assert isinstance(op, relay.Conv2dOp)
    groups = op.attrs()["groups"]
    assert isinstance(groups, int)
    _, channels, _, _ = _shape(op.operands[0])
    out_channels, per_group, kh, kw = _shape(op.operands[1])
    _, _, oh, ow = _shape(op.results[0])
    if groups > 1 and per_group == 1:
        return (
            f"depthwise conv2d (groups={groups}, one input channel per group) would be "
            f"{groups} one-row GEMMs; cblas takes grouped convs with at least 2 input "
            "channels per group"
        )
    return _blas_sizes(
        op,
        M=out_channels // groups,
        N=oh * ow,
        K=per_group * kh * kw,
    )


KERNEL_CHECKS = {
    relay.DenseOp.name: dense_check,
    relay.MatmulOp.name: matmul_check,
    relay.BatchMatmulOp.name: batch_matmul_check,
    relay.Conv2dOp.name: conv2d_check,
}
"""The ops computed by sgemm, and their checks."""

EPILOGUE_OPS = (relay.BiasAddOp.name, relay.ReluOp.name)
"""Elementwise ops applied to a product's output in the same pass (composites only)."""


def fused_check(ops: Sequence[Operation]) -> str | None:
    """A composite: its product must be taken, and its epilogue be float32."""
    head = ops[0]
    if reason := KERNEL_CHECKS[head.name](head):
        return reason
    for op in ops[1:]:
        if reason := _float32(op):
            return reason
    return None


def _composites() -> tuple[Composite, ...]:
    patterns = []
    for product in ("dense", "conv2d"):
        root = f"relay.nn.{product}"
        for suffix, tail in (
            ("bias_relu", (relay.BiasAddOp.name, relay.ReluOp.name)),
            ("bias", (relay.BiasAddOp.name,)),
            ("relu", (relay.ReluOp.name,)),
        ):
            patterns.append(Composite(f"{product}_{suffix}", (root, *tail), fused_check))
    return tuple(patterns)


COMPOSITES = _composites()
"""dense/conv2d followed by bias_add and/or relu: `dense_bias_relu`, `conv2d_bias`, ..."""


# ---------------------------------------------------------------------------
# Planning: steps and buffers of one outlined function
# ---------------------------------------------------------------------------


class CodegenError(ByocError):
    """An outlined function the cblas codegen cannot turn into C."""


@dataclass
class Epilogue:
    """Elementwise work done on a step's output in one pass: `relu(x + bias)`."""

    bias: SSAValue | None = None
    axis: int = 0
    """The axis of the output the bias is laid along."""
    relu: bool = False

    def __bool__(self) -> bool:
        return self.bias is not None or self.relu


@dataclass
class Step:
    """One op computed into a buffer, with the elementwise ops fused after it.

    A product (dense, conv2d, ...) writes `result`'s buffer, then the
    epilogue runs over it in place. A standalone bias_add or relu (one that
    could not be fused) reads `source` and writes `result`'s buffer.
    """

    op: Operation
    result: SSAValue
    epilogue: Epilogue
    source: SSAValue | None = None
    fused: list[Operation] = field(default_factory=list[Operation])

    def reads(self) -> list[SSAValue]:
        chain = {self.op.results[0], *(o.results[0] for o in self.fused)}
        return [
            v
            for o in (self.op, *self.fused)
            for v in o.operands
            if v not in chain
        ]

    def describe(self) -> str:
        names = " -> ".join(o.name.removeprefix("relay.") for o in (self.op, *self.fused))
        return f"{names} {'x'.join(map(str, _shape(self.result)))}"


@dataclass
class Scratch:
    """A buffer in the scratch allocation, live from step `start` to step `end`."""

    floats: int
    start: int
    end: int
    offset: int = 0


def _can_fuse(step: Step, op: Operation, uses: int, returned: bool, defined_before) -> bool:
    """Whether `op` (bias_add or relu of `step.result`) can run in `step`'s epilogue."""
    if uses != 1 or returned:
        return False  # someone needs the value before the epilogue
    ep = step.epilogue
    if op.name == relay.ReluOp.name:
        return not ep.relu
    bias = op.operands[1]
    return ep.bias is None and not ep.relu and defined_before(bias, step.op)


def plan_steps(function: func.FuncOp) -> list[Step]:
    """The steps of an outlined function, with bias_add and relu fused where possible."""
    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise CodegenError(f"error: @{function.sym_name.data} does not end in func.return")
    returned = set(ret.operands)
    position = {op: i for i, op in enumerate(block.ops)}

    def defined_before(value: SSAValue, op: Operation) -> bool:
        owner = value.owner
        return not isinstance(owner, Operation) or position[owner] < position[op]

    steps: list[Step] = []
    open_steps: dict[SSAValue, Step] = {}
    for op in block.ops:
        if op is ret:
            break
        if isinstance(op, relay.ConstantOp):
            continue  # a static array (FunctionEmitter.constants)
        if op.name in EPILOGUE_OPS:
            source = op.operands[0]
            step = open_steps.pop(source, None)
            if step is not None and _can_fuse(
                step, op, len(list(source.uses)), source in returned, defined_before
            ):
                _add_epilogue(step.epilogue, op)
                step.fused.append(op)
                step.result = op.results[0]
                open_steps[step.result] = step
                continue
            step = Step(op, op.results[0], _add_epilogue(Epilogue(), op), source=source)
        elif op.name in KERNEL_CHECKS:
            step = Step(op, op.results[0], Epilogue())
        else:
            raise CodegenError(
                f"error: cblas cannot generate code for '{op.name}' in "
                f"@{function.sym_name.data}; it takes "
                f"{', '.join(sorted(KERNEL_CHECKS))} and, after them, "
                f"{', '.join(EPILOGUE_OPS)}"
            )
        steps.append(step)
        open_steps[step.result] = step
    return steps


def _add_epilogue(epilogue: Epilogue, op: Operation) -> Epilogue:
    if op.name == relay.ReluOp.name:
        epilogue.relu = True
    else:
        assert isinstance(op, relay.BiasAddOp)
        axis = op.attrs()["axis"]
        assert isinstance(axis, int)
        epilogue.bias = op.operands[1]
        epilogue.axis = relay.normalize_axis(axis, len(_shape(op.results[0])), op.name)
    return epilogue


def _aligned(floats: int) -> int:
    per_line = ALIGNMENT // 4
    return -(-floats // per_line) * per_line


def pack(buffers: Sequence[Scratch]) -> int:
    """Give each buffer an offset so that buffers live at once never overlap.

    Greedy, largest first, each at the lowest offset that fits; returns the
    total size in floats.
    """
    placed: list[Scratch] = []
    for buffer in sorted(buffers, key=lambda b: -b.floats):
        size = _aligned(buffer.floats)
        live = sorted(
            (p for p in placed if p.start <= buffer.end and buffer.start <= p.end),
            key=lambda p: p.offset,
        )
        offset = 0
        for other in live:
            if offset + size <= other.offset:
                break
            offset = max(offset, other.offset + _aligned(other.floats))
        buffer.offset = offset
        placed.append(buffer)
    return max((p.offset + _aligned(p.floats) for p in placed), default=0)


def _im2col_floats(step: Step) -> int:
    """Floats of the im2col buffer of a conv2d step, 0 if it reads its input directly."""
    op = step.op
    if not isinstance(op, relay.Conv2dOp) or _direct_conv(op):
        return 0
    _, channels, _, _ = _shape(op.operands[0])
    _, _, kh, kw = _shape(op.operands[1])
    _, _, oh, ow = _shape(op.results[0])
    return channels * kh * kw * oh * ow


def _direct_conv(op: relay.Conv2dOp) -> bool:
    """A 1x1, stride-1, unpadded conv: its input already is the GEMM's B matrix."""
    attrs = op.attrs()
    _, _, kh, kw = _shape(op.operands[1])
    return (
        (kh, kw) == (1, 1)
        and attrs["strides"] == (1, 1)
        and not any(relay.normalize_padding(attrs["padding"], op.name))  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------
# Building emitc
# ---------------------------------------------------------------------------

F32_PTR = EmitC_PointerType(f32)
CONST_F32_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("const float")))
VOID_PTR = EmitC_PointerType(EmitC_OpaqueType(StringAttr("void")))


@dataclass(frozen=True)
class Affine:
    """An `int64_t` index `const + sum(coeff * var)`, folded at codegen time."""

    terms: tuple[tuple[SSAValue, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(value: SSAValue) -> Affine:
        return Affine(((value, 1),))

    def __add__(self, other: Affine | int) -> Affine:
        if isinstance(other, int):
            return Affine(self.terms, self.const + other)
        coeffs = dict(self.terms)
        for v, k in other.terms:
            coeffs[v] = coeffs.get(v, 0) + k
        return Affine(tuple((v, k) for v, k in coeffs.items() if k), self.const + other.const)

    __radd__ = __add__

    def __mul__(self, k: int) -> Affine:
        if k == 0:
            return Affine()
        return Affine(tuple((v, c * k) for v, c in self.terms), self.const * k)

    __rmul__ = __mul__

    def __sub__(self, other: Affine | int) -> Affine:
        return self + other * -1


Index = Affine | int


@dataclass(frozen=True)
class Ref:
    """A place in a buffer: a pointer parameter or the scratch base, plus an offset.

    Loops index the root pointer itself; only sgemm's arguments become pointer
    expressions, typed `const float*` when derived from an input.
    """

    root: SSAValue
    offset: Affine = Affine()
    readonly: bool = False

    def at(self, index: Index) -> Ref:
        return Ref(self.root, self.offset + index, self.readonly)


class Builder:
    """Appends emitc ops at the end of the current block."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    def i64(self, value: int) -> SSAValue:
        return self.value(EmitC_ConstantOp(IntegerAttr(value, i64)))

    def f32(self, value: float) -> SSAValue:
        return self.value(EmitC_ConstantOp(FloatAttr(value, f32)))

    def index(self, index: Index) -> SSAValue:
        """The C expression of an index: products of loop variables, then the constant."""
        if isinstance(index, int):
            return self.i64(index)
        total: SSAValue | None = None
        for var, coeff in index.terms:
            term = var if coeff == 1 else self.value(EmitC_MulOp(var, self.i64(coeff), i64))
            total = term if total is None else self.value(EmitC_AddOp(total, term, i64))
        if total is None:
            return self.i64(index.const)
        if index.const > 0:
            total = self.value(EmitC_AddOp(total, self.i64(index.const), i64))
        elif index.const < 0:
            total = self.value(EmitC_SubOp(total, self.i64(-index.const), i64))
        return total

    def lvalue(self, ref: Ref, index: Index) -> SSAValue:
        return self.value(EmitC_SubscriptOp(ref.root, [self.index(ref.offset + index)]))

    def load(self, ref: Ref, index: Index) -> SSAValue:
        return self.value(EmitC_LoadOp(self.lvalue(ref, index)))

    def store(self, ref: Ref, index: Index, value: SSAValue) -> None:
        self.add(EmitC_AssignOp(self.lvalue(ref, index), value))

    def pointer(self, ref: Ref) -> SSAValue:
        """`root + offset` as a pointer value."""
        if not ref.offset.terms and ref.offset.const == 0:
            return ref.root
        typ = CONST_F32_PTR if ref.readonly else F32_PTR
        return self.value(EmitC_AddOp(ref.root, self.index(ref.offset), typ))

    def call(
        self, callee: str, operands: Sequence[SSAValue], args: Sequence[Attribute] | None = None,
        results: Sequence[Attribute] = (),
    ) -> Operation:
        return self.add(
            EmitC_CallOpaqueOp(
                callee, operands, results, args=ArrayAttr(args) if args is not None else None
            )
        )

    def comment(self, text: str) -> None:
        self.add(EmitC_VerbatimOp(f"// {text}"))

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        outer, self.block = self.block, block
        try:
            yield
        finally:
            block.add_op(EmitC_YieldOp())
            self.block = outer

    @contextmanager
    def loop(self, stop: int, start: int = 0) -> Iterator[Index]:
        """`for (int64_t i = start; i < stop; i += 1)`; no loop for one iteration."""
        if stop - start == 1:
            yield start
            return
        body = Block(arg_types=[i64])
        bounds = self.i64(start), self.i64(stop), self.i64(1)
        self.add(EmitC_ForOp(*bounds, Region(body)))
        with self.inside(body):
            yield Affine.of(body.args[0])

    def branch(self, condition: SSAValue) -> tuple[Block, Block]:
        """`if (condition) {...} else {...}`: the two blocks to fill with `inside`."""
        then_block, else_block = Block(), Block()
        self.add(EmitC_IfOp(condition, Region(then_block), Region(else_block)))
        return then_block, else_block


def _opaque(text: str) -> EmitC_OpaqueAttr:
    return EmitC_OpaqueAttr(StringAttr(text))


def _blas_int(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _operand(index: int) -> IntegerAttr:
    """In `emitc.call_opaque` args: the call's `index`-th operand."""
    return IntegerAttr(index, IndexType())


class FunctionEmitter:
    """Builds the `emitc.func` of one outlined function from its plan."""

    def __init__(self, function: func.FuncOp):
        self.function = function
        self.steps = plan_steps(function)
        block = function.body.block
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.returns = list(ret.operands)
        constants = [op.results[0] for op in block.ops if isinstance(op, relay.ConstantOp)]
        for value in (*block.args, *self.returns, *constants):
            typ = value.type
            if not isinstance(typ, TensorType) or typ.element_type != f32:
                raise CodegenError(
                    f"error: cblas takes float32 tensors; @{function.sym_name.data} "
                    f"has a value of type {typ}"
                )
        n_in, n_out = len(block.args), len(self.returns)
        self.body = Block(arg_types=[F32_PTR] * (n_in + n_out))
        self.b = Builder(self.body)
        self.refs: dict[SSAValue, Ref] = {
            arg: Ref(param, readonly=True) for arg, param in zip(block.args, self.body.args)
        }
        self.globals: list[EmitC_GlobalOp] = []
        self.constants(block)
        self.copies: list[tuple[Ref, SSAValue]] = []
        for i, value in enumerate(self.returns):
            out = Ref(self.body.args[n_in + i])
            if value in self.refs:
                self.copies.append((out, value))  # an input, or returned twice
            else:
                self.refs[value] = out
        self.scratch, self.columns = self._layout()
        self.scratch_floats = pack([*self.scratch.values(), *self.columns.values()])

    def constants(self, block: Block) -> None:
        """Each `relay.constant` of the function (small ones the partitioner copied
        in) becomes a `static const float` array, read through a pointer."""
        for op in block.ops:
            if not isinstance(op, relay.ConstantOp):
                continue
            values = op.to_numpy().astype("<f4").ravel()
            array = EmitC_ArrayType([max(values.size, 1)], f32)
            name = f"{self.function.sym_name.data}_constant_{len(self.globals)}"
            initial = DenseIntOrFPElementsAttr(
                TensorType(f32, array.get_shape()), BytesAttr(values.tobytes())
            )
            self.globals.append(EmitC_GlobalOp(name, array, initial, static=True, const=True))
            pointer = self.b.value(
                EmitC_CastOp(self.b.value(EmitC_GetGlobalOp(name, array)), F32_PTR)
            )
            self.refs[op.result] = Ref(pointer, readonly=True)

    def _layout(self) -> tuple[dict[SSAValue, Scratch], dict[int, Scratch]]:
        """Scratch buffers of the intermediates and of im2col, with their lifetimes."""
        produced_at = {step.result: t for t, step in enumerate(self.steps)}
        values: dict[SSAValue, Scratch] = {}
        for value, t in produced_at.items():
            if value not in self.refs:
                values[value] = Scratch(math.prod(_shape(value)), t, t)
        for t, step in enumerate(self.steps):
            for value in step.reads():
                if value in values:
                    values[value].end = max(values[value].end, t)
        im2col = {
            t: Scratch(floats, t, t)
            for t, step in enumerate(self.steps)
            if (floats := _im2col_floats(step))
        }
        return values, im2col

    def emit(self) -> EmitC_FuncOp:
        b = self.b
        base: SSAValue | None = None
        if self.scratch_floats:
            nbytes = self.scratch_floats * 4
            raw = b.call(
                "aligned_alloc", [], [IntegerAttr(ALIGNMENT, i64), IntegerAttr(nbytes, i64)],
                [VOID_PTR],
            ).results[0]
            base = b.value(EmitC_CastOp(raw, F32_PTR))
            null = b.value(EmitC_LiteralOp("NULL", F32_PTR))
            failed = b.value(EmitC_CmpOp("eq", base, null))
            b.add(EmitC_VerbatimOp("if ({}) return 1;", [failed]))
            for value, buffer in self.scratch.items():
                self.refs[value] = Ref(base, Affine(const=buffer.offset))
        for t, step in enumerate(self.steps):
            b.comment(step.describe())
            col = self.columns.get(t)
            col_ref = Ref(base, Affine(const=col.offset)) if col is not None and base is not None else None
            self._step(step, col_ref)
        for out, value in self.copies:
            size = math.prod(_shape(value)) * 4
            b.call(
                "memcpy",
                [out.root, b.pointer(self.refs[value])],
                [_operand(0), _operand(1), IntegerAttr(size, i64)],
            )
        if base is not None:
            b.call("free", [base])
        b.add(EmitC_ReturnOp(b.value(EmitC_ConstantOp(IntegerAttr(0, i32)))))
        n_in = len(self.function.body.block.args)
        arg_attrs = [
            DictionaryAttr(
                {CONST_ATTR: UnitAttr(), RESTRICT_ATTR: UnitAttr()}
                if i < n_in
                else {RESTRICT_ATTR: UnitAttr()}
            )
            for i in range(len(self.body.args))
        ]
        return EmitC_FuncOp(
            self.function.sym_name.data,
            FunctionType.from_lists([F32_PTR] * len(self.body.args), [i32]),
            Region(self.body),
            arg_attrs=ArrayAttr(arg_attrs),
        )

    # -- steps ----------------------------------------------------------------

    def _step(self, step: Step, col: Ref | None) -> None:
        op = step.op
        out = self.refs[step.result]
        if isinstance(op, relay.DenseOp):
            self._dense(op, out)
        elif isinstance(op, relay.MatmulOp):
            self._matmul(op, out)
        elif isinstance(op, relay.BatchMatmulOp):
            self._batch_matmul(op, out)
        elif isinstance(op, relay.Conv2dOp):
            self._conv2d(op, out, col, step.epilogue)
            return  # applies its epilogue image by image
        else:
            assert step.source is not None
            self.epilogue(self.refs[step.source], out, _shape(step.result), step.epilogue)
            return
        self.epilogue(out, out, _shape(step.result), step.epilogue)

    def gemm(
        self,
        a: Ref,
        b: Ref,
        c: Ref,
        trans_a: bool,
        trans_b: bool,
        m: int,
        n: int,
        k: int,
        lda: int,
        ldb: int,
        ldc: int,
        batch: int = 1,
        strides: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        """`C = op(A) op(B)` row-major, `batch` times with the given element strides."""
        builder = self.b
        with builder.loop(batch) as i:
            operands = [
                builder.pointer(ref.at(i * stride))
                for ref, stride in zip((a, b, c), strides)
            ]
            trans = lambda t: _opaque("CblasTrans" if t else "CblasNoTrans")  # noqa: E731
            builder.call(
                SGEMM,
                operands,
                [
                    _opaque("CblasRowMajor"), trans(trans_a), trans(trans_b),
                    _blas_int(m), _blas_int(n), _blas_int(k),
                    FloatAttr(1.0, f32), _operand(0), _blas_int(lda),
                    _operand(1), _blas_int(ldb),
                    FloatAttr(0.0, f32), _operand(2), _blas_int(ldc),
                ],
            )

    def _dense(self, op: relay.DenseOp, out: Ref) -> None:
        data, weight = op.operands
        (n, k), m = _shape(weight), math.prod(_shape(data)[:-1])
        self.gemm(self.refs[data], self.refs[weight], out, False, True, m, n, k, k, k, n)

    def _matmul(self, op: relay.MatmulOp, out: Ref) -> None:
        a, b = op.operands
        attrs = op.attrs()
        ta, tb = bool(attrs["transpose_a"]), bool(attrs["transpose_b"])
        a_shape, b_shape = _shape(a), _shape(b)
        n = b_shape[0] if tb else b_shape[1]
        ldb = b_shape[1]
        if not ta:  # every leading dimension of a is a row of one GEMM
            k = a_shape[-1]
            m = math.prod(a_shape[:-1])
            self.gemm(self.refs[a], self.refs[b], out, False, tb, m, n, k, k, ldb, n)
            return
        k, m = a_shape[-2:]
        batch = math.prod(a_shape[:-2])
        self.gemm(
            self.refs[a], self.refs[b], out, True, tb, m, n, k, m, ldb, n,
            batch=batch, strides=(k * m, 0, m * n),
        )

    def _batch_matmul(self, op: relay.BatchMatmulOp, out: Ref) -> None:
        x, y = op.operands
        attrs = op.attrs()
        ta, tb = bool(attrs["transpose_a"]), bool(attrs["transpose_b"])
        x_shape, y_shape = _shape(x), _shape(y)
        batch, m, n = _shape(op.results[0])
        k = x_shape[1] if ta else x_shape[2]
        lda, ldb = x_shape[2], y_shape[2]
        if y_shape[0] == 1 and not ta:  # one y for every batch: stack x's rows
            self.gemm(self.refs[x], self.refs[y], out, False, tb, x_shape[0] * m, n, k, lda, ldb, n)
            return
        self.gemm(
            self.refs[x], self.refs[y], out, ta, tb, m, n, k, lda, ldb, n,
            batch=batch,
            strides=(m * k if x_shape[0] > 1 else 0, n * k if y_shape[0] > 1 else 0, m * n),
        )

    def _conv2d(self, op: relay.Conv2dOp, out: Ref, col: Ref | None, epilogue: Epilogue) -> None:
        """Per image: im2col (unless 1x1 direct), one sgemm per group, the epilogue."""
        data, weight = op.operands
        attrs = op.attrs()
        groups = attrs["groups"]
        assert isinstance(groups, int)
        n_images, channels, h, w = _shape(data)
        out_channels, per_group, kh, kw = _shape(weight)
        _, _, oh, ow = _shape(op.results[0])
        og, kg, ohw = out_channels // groups, per_group * kh * kw, oh * ow
        x = self.refs[data]
        per_image = epilogue.bias is None or epilogue.axis >= 1
        with self.b.loop(n_images) as n:
            image = x.at(n * (channels * h * w))
            if col is None:  # 1x1 direct: B is the image, [C, H*W]
                source, group_stride = image, per_group * h * w
            else:
                self.im2col(image, col, op, (channels, h, w), (kh, kw), (oh, ow))
                source, group_stride = col, kg * ohw
            result = out.at(n * (out_channels * ohw))
            self.gemm(
                self.refs[weight], source, result, False, False, og, ohw, kg, kg, ohw, ohw,
                batch=groups, strides=(og * kg, group_stride, og * ohw),
            )
            if per_image and epilogue:
                image_epilogue = Epilogue(epilogue.bias, max(epilogue.axis - 1, 0), epilogue.relu)
                self.epilogue(result, result, (out_channels, oh, ow), image_epilogue)
        if not per_image:
            self.epilogue(out, out, _shape(op.results[0]), epilogue)

    def im2col(
        self,
        image: Ref,
        col: Ref,
        op: relay.Conv2dOp,
        chw: tuple[int, int, int],
        kernel: tuple[int, int],
        out_hw: tuple[int, int],
    ) -> None:
        """`col[(c, i, j), (y, x)] = image[c, y*sh + i*dh - top, x*sw + j*dw - left]`, 0 outside.

        The columns x where a kernel column j reads inside the image are
        known at codegen time, so j is unrolled and each row is a zero
        prefix, a copy and a zero suffix; the rows y outside the image are a
        runtime test, only when there is vertical padding.
        """
        b = self.b
        attrs = op.attrs()
        sh, sw = attrs["strides"]  # type: ignore[misc]
        dh, dw = attrs["dilation"]  # type: ignore[misc]
        top, left, _, _ = relay.normalize_padding(attrs["padding"], op.name)  # type: ignore[arg-type]
        channels, h, w = chw
        kh, kw = kernel
        oh, ow = out_hw
        # Rows y*sh + i*dh - top can fall outside [0, h) only with vertical padding.
        above = top > 0
        below = (oh - 1) * sh + (kh - 1) * dh - top >= h
        with b.loop(channels) as c, b.loop(kh) as i:
            for j in range(kw):
                shift = j * dw - left
                # Columns x reading inside the image: 0 <= x*sw + shift < w.
                first = max(0, -(shift // sw))
                last = max(first, min(ow, (w - 1 - shift) // sw + 1))
                with b.loop(oh) as y:
                    row = col.at((((c * kh + i) * kw + j) * oh + y) * ow)
                    iy = y * sh + i * dh - top
                    source = image.at(((c * h) + iy) * w + shift)
                    if not (above or below):
                        self._copy_row(row, source, sw, first, last, ow)
                        continue
                    at = b.index(iy)
                    checks = []
                    if above:
                        checks.append(b.value(EmitC_CmpOp("ge", at, b.i64(0))))
                    if below:
                        checks.append(b.value(EmitC_CmpOp("lt", at, b.i64(h))))
                    inside = checks[0]
                    for check in checks[1:]:
                        inside = b.value(EmitC_LogicalAndOp(inside, check))
                    then_block, else_block = b.branch(inside)
                    with b.inside(then_block):
                        self._copy_row(row, source, sw, first, last, ow)
                    with b.inside(else_block):
                        self._fill(row, 0, ow)

    def _copy_row(self, row: Ref, source: Ref, stride: int, first: int, last: int, width: int) -> None:
        self._fill(row, 0, first)
        if last > first:
            with self.b.loop(last, first) as x:
                self.b.store(row, x, self.b.load(source, x * stride))
        self._fill(row, last, width)

    def _fill(self, ref: Ref, start: int, stop: int) -> None:
        if stop > start:
            zero = self.b.f32(0.0)
            with self.b.loop(stop, start) as x:
                self.b.store(ref, x, zero)

    def epilogue(self, src: Ref, dst: Ref, shape: Sequence[int], epilogue: Epilogue) -> None:
        """One pass over `shape`: `dst = relu(src + bias)` (bias and relu as planned)."""
        if not epilogue:
            assert src == dst
            return
        b = self.b
        if epilogue.bias is not None:
            axis = epilogue.axis
            outer, channels = math.prod(shape[:axis]), shape[axis]
            inner = math.prod(shape[axis + 1 :])
            bias = self.refs[epilogue.bias]
        else:
            outer, channels, inner = 1, 1, math.prod(shape)
            bias = None
        with b.loop(outer) as o, b.loop(channels) as c:
            add = b.load(bias, c) if bias is not None else None
            with b.loop(inner) as i:
                at = (o * channels + c) * inner + i
                value = b.load(src, at)
                if add is not None:
                    value = b.value(EmitC_AddOp(value, add, f32))
                if epilogue.relu:
                    # `x < 0 ? 0 : x` keeps NaN, as relay's max(x, 0) does.
                    zero = b.f32(0.0)
                    negative = b.value(EmitC_CmpOp("lt", value, zero))
                    value = b.value(EmitC_ConditionalOp(negative, zero, value))
                b.store(dst, at, value)


# ---------------------------------------------------------------------------
# Codegen
# ---------------------------------------------------------------------------


def emitc_module(functions: ModuleOp) -> ModuleOp:
    """The emitc module of a module of outlined functions (verified)."""
    ops: list[Operation] = [EmitC_IncludeOp("cblas.h")]
    for function in functions.ops:
        if isinstance(function, func.FuncOp):
            emitter = FunctionEmitter(function)
            kernel = emitter.emit()
            ops += [*emitter.globals, kernel]
    module = ModuleOp(ops)
    module.verify()
    return module


def generate_c(functions: ModuleOp) -> str:
    """C source for a module of outlined relay functions."""
    from byoc.targets.c import emit_c

    return emit_c(emitc_module(functions))


def codegen(functions: ModuleOp) -> Artifact:
    """Generate C calling sgemm and compile it against the wheel's OpenBLAS."""
    library = openblas()
    source = generate_c(functions)
    symbols = [op.sym_name.data for op in functions.ops if isinstance(op, func.FuncOp)]
    return Artifact(
        backend=NAME,
        symbols=symbols,
        sources={"cblas.c": source},
        libraries=[compile_shared(source, library.flags, library.libraries)],
        c_flags=[f"-I{library.include_dir}"],
        link_flags=list(library.libraries),
    )


backend = Backend(
    name=NAME,
    ops=KERNEL_CHECKS,
    codegen=codegen,
    description="dense, matmul, batch_matmul and conv2d as OpenBLAS sgemm calls",
    source=generate_c,
    composites=COMPOSITES,
)
