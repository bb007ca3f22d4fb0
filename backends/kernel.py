"""The kernel view: an outlined function as plain Python data, for backend authors.

A backend's codegen can emit code from this view without knowing xDSL: each
`Kernel` lists its inputs, its constants (as numpy arrays), its ops in program
order with their attributes as Python values, and which values it returns.
Every value has a shape, a dtype and a name that is a valid C identifier
(`in0`, `const0`, `t0`), so emitting C is a walk over `ops`:

    for op in kernel.ops:
        args = ", ".join(v.name for v in op.operands)
        ...

The xDSL function stays available as `Kernel.function`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any, Literal

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from byoc.dialects.extern import COMPOSITE_ATTR
from byoc.frontend.diagnostics import ByocError

ValueKind = Literal["input", "constant", "result"]
_PREFIX = {"input": "in", "constant": "const", "result": "t"}


@dataclass(frozen=True)
class Value:
    """A tensor of a kernel: an input, a constant, or the result of one of its ops.

    `index` is the position among the kernel's inputs, its constants, or its
    ops (for a result), so two values are equal exactly when they are the same.
    """

    kind: ValueKind
    index: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def name(self) -> str:
        """A C identifier unique within the kernel: `in0`, `const0`, `t0`."""
        return f"{_PREFIX[self.kind]}{self.index}"

    @property
    def size(self) -> int:
        """The number of elements (1 for a scalar)."""
        return prod(self.shape)

    def __str__(self) -> str:
        return f"{self.name}: {'x'.join(map(str, self.shape)) or 'scalar'} {self.dtype}"


@dataclass(frozen=True)
class Constant:
    """A constant of a kernel (a small weight byoc copied into the function)."""

    value: Value
    data: np.ndarray
    """Read-only, of `value`'s shape and dtype, C-contiguous."""


@dataclass(frozen=True)
class KernelOp:
    """One relay op of a kernel."""

    name: str
    """The relay op name, e.g. `relay.nn.conv2d` (docs/ops.md lists them)."""
    operands: tuple[Value, ...]
    result: Value
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """Every attribute as a Python value (int, float, bool, str, tuple of
    ints, or None), defaults filled in."""
    composite: str | None = None
    """`<backend>.<pattern>` when one of the backend's composites took this op."""

    def __str__(self) -> str:
        args = ", ".join(v.name for v in self.operands)
        attrs = "".join(f" {k}={v!r}" for k, v in self.attrs.items())
        return f"{self.result.name} = {self.name}({args}){attrs}"


@dataclass(frozen=True)
class Kernel:
    """One outlined function, exported as `int32_t <symbol>(inputs..., outputs...)`."""

    symbol: str
    """The exported C name (already process-unique)."""
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    """The returned values, in order: usually op results, but an input, a
    constant, or one value returned twice are possible too."""
    ops: tuple[KernelOp, ...]
    constants: tuple[Constant, ...]
    function: func.FuncOp = field(repr=False, compare=False)
    """The xDSL function this view was made from."""

    def __str__(self) -> str:
        lines = [f"kernel {self.symbol}({', '.join(map(str, self.inputs))})"]
        lines += [f"  {c.value} = constant" for c in self.constants]
        lines += [f"  {op}" for op in self.ops]
        lines.append(f"  return {', '.join(v.name for v in self.outputs)}")
        return "\n".join(lines)


def _tensor(value: SSAValue, kind: ValueKind, index: int, where: str) -> Value:
    from byoc.runtime.reference import numpy_dtype

    typ = value.type
    if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
        raise ByocError(f"error: {where} has type {typ}; expected a static-shape tensor")
    return Value(kind, index, tuple(typ.get_shape()), numpy_dtype(typ.element_type))


def kernel_of(function: func.FuncOp) -> Kernel:
    """The kernel view of one outlined function."""
    from byoc.dialects import relay

    symbol = function.sym_name.data
    block = function.body.block
    values: dict[SSAValue, Value] = {
        arg: _tensor(arg, "input", i, f"argument {i} of @{symbol}")
        for i, arg in enumerate(block.args)
    }
    ops: list[KernelOp] = []
    constants: list[Constant] = []
    outputs: tuple[Value, ...] = ()
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            outputs = tuple(values[v] for v in op.operands)
            break
        where = f"'{op.name}' in @{symbol}"
        if isinstance(op, relay.ConstantOp):
            value = _tensor(op.result, "constant", len(constants), where)
            data = np.ascontiguousarray(op.to_numpy(), dtype=value.dtype)
            data.flags.writeable = False
            constants.append(Constant(value, data))
            values[op.result] = value
            continue
        if len(op.results) != 1:
            raise ByocError(f"error: {where} has {len(op.results)} results; kernels take one")
        result = _tensor(op.results[0], "result", len(ops), where)
        composite = op.attributes.get(COMPOSITE_ATTR)
        ops.append(
            KernelOp(
                op.name,
                tuple(values[v] for v in op.operands),
                result,
                _attrs(op),
                composite.data if isinstance(composite, StringAttr) else None,
            )
        )
        values[op.results[0]] = result
    return Kernel(
        symbol,
        tuple(values[a] for a in block.args),
        outputs,
        tuple(ops),
        tuple(constants),
        function,
    )


def op_view(op: Operation) -> KernelOp:
    """One op as plain data, for a support check: operands are `in0`, `in1`, ...
    (`.shape`, `.dtype`), attributes Python values, e.g.
    `op_view(op).operands[0].shape` or `op_view(op).attrs["axis"]`."""
    where = f"'{op.name}'"
    operands = tuple(
        _tensor(v, "input", i, f"operand {i} of {where}") for i, v in enumerate(op.operands)
    )
    if len(op.results) != 1:
        raise ByocError(f"error: {where} has {len(op.results)} results; kernels take one")
    composite = op.attributes.get(COMPOSITE_ATTR)
    return KernelOp(
        op.name,
        operands,
        _tensor(op.results[0], "result", 0, f"the result of {where}"),
        _attrs(op),
        composite.data if isinstance(composite, StringAttr) else None,
    )


def _attrs(op: Operation) -> dict[str, Any]:
    attrs = getattr(op, "attrs", None)
    return dict(attrs()) if callable(attrs) else {}


def kernels_of(functions: ModuleOp | Sequence[func.FuncOp]) -> list[Kernel]:
    """The kernel view of every function of `functions` (what a codegen receives)."""
    ops = functions.ops if isinstance(functions, ModuleOp) else functions
    return [kernel_of(f) for f in ops if isinstance(f, func.FuncOp) and f.body.blocks]


def kernels_for(source: Any, targets: Any) -> dict[str, list[Kernel]]:
    """The kernels each backend of `targets` would receive when `source` (a
    model as `byoc.compile` takes it) is partitioned for `targets`, by backend
    name, without compiling anything: what a backend author looks at first.

    `byoc.compile` then prefixes each symbol with `byoc_<hash>_` and may merge
    identical functions, or split a very long one, before calling codegen."""
    from byoc.backends import parse_targets
    from byoc.runtime.build import functions_of, load_source, partition_for

    backends = parse_targets(targets)
    module = load_source(source)
    partition_for(module, backends)
    return {b.name: kernels_of(functions_of(module, b.name)) for b in backends}
