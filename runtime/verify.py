"""Running a compiled model one external function at a time, to find the one that fails.

`FunctionRunner` walks the partitioned IR with the reference interpreter, but
calls each external function's compiled code (through its exported C symbol)
instead of interpreting it. That is the bisection a backend author needs:

- `verify` compares every external function's outputs with the reference
  interpreter's on the very inputs the function received, and names the first
  function that disagrees, its backend and its ops;
- a non-zero status from a compiled model is traced to the function (and
  backend) that returned it.

Host ops between external functions are computed by the reference
interpreter here, so each function's inputs are those of a correct host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from cffi import FFI

from byoc.dialects.extern import COMPILER_ATTR
from byoc.frontend.diagnostics import ByocError
from byoc.passes.annotate import is_graph_op
from byoc.runtime.reference import ReferenceInterpreter

if TYPE_CHECKING:
    from byoc.runtime.compiled import CompiledModule

_ffi = FFI()


class KernelFailed(ByocError):
    """An external function returned a non-zero status (`status`)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class FunctionCheck:
    """How one external function's outputs compared with the reference."""

    function: str
    """Its name in the partitioned IR, e.g. `ccompiler_0`."""
    backend: str
    ops: tuple[str, ...]
    max_error: float
    """The largest absolute difference over its outputs."""
    ok: bool

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "MISMATCH"
        return (
            f"@{self.function} ({self.backend}; {', '.join(dict.fromkeys(self.ops))}): "
            f"{verdict}, max abs error {self.max_error:g}"
        )


class FunctionRunner(ReferenceInterpreter):
    """The partitioned model, host ops in numpy, external functions compiled.

    `on_call(name, inputs, outputs)` sees every external function's call.
    """

    def __init__(
        self,
        model: CompiledModule,
        on_call: Callable[[str, Sequence[np.ndarray], list[np.ndarray]], None] | None = None,
    ):
        super().__init__(model.partitioned_module())
        self.model = model
        self.prefix = model.entry_name.removesuffix("entry")
        self.on_call = on_call
        self._twins: dict[object, list[str]] | None = None

    def external(self, name: str) -> bool:
        function = self.functions.get(name)
        return function is not None and COMPILER_ATTR in function.attributes

    def ops_of(self, name: str) -> tuple[str, ...]:
        return tuple(op.name for op in self.functions[name].body.block.ops if is_graph_op(op))

    def backend(self, name: str) -> str:
        compiler = self.functions[name].attributes.get(COMPILER_ATTR)
        return getattr(compiler, "data", "?")

    def address(self, name: str) -> int | None:
        """Where `name`'s compiled code is: its own symbol, or that of an
        identical function it was merged with (byoc-dedup-functions)."""
        import llvmlite.binding as llvm

        from byoc.passes.dedup_functions import function_key

        address = llvm.address_of_symbol(self.prefix + name)
        if address is not None:
            return address
        if self._twins is None:
            self._twins = {}
            for other, function in self.functions.items():
                if self.external(other):
                    key = (self.backend(other), function_key(function))
                    self._twins.setdefault(key, []).append(other)
        key = (self.backend(name), function_key(self.functions[name]))
        for twin in self._twins.get(key, []):
            address = llvm.address_of_symbol(self.prefix + twin)
            if address is not None:
                return address
        return None

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        if not self.external(name):
            return super().call(name, args)
        outputs = self.run_compiled(name, args)
        if self.on_call is not None:
            self.on_call(name, args, outputs)
        return outputs

    def run_compiled(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs of external function `name`'s compiled code on `args`."""
        from byoc.backends import origin_of
        from byoc.runtime.reference import numpy_dtype

        symbol = self.prefix + name
        address = self.address(name)
        if address is None:
            raise ByocError(f"error: no loaded code defines '{symbol}' (@{name})")
        function = self.functions[name]
        inputs = [np.ascontiguousarray(a) for a in args]
        outputs = [
            np.empty(tuple(t.get_shape()), numpy_dtype(t.element_type))  # type: ignore[attr-defined]
            for t in function.function_type.outputs
        ]
        n = len(inputs) + len(outputs)
        signature = f"int32_t(*)({', '.join(['void*'] * n) or 'void'})"
        kernel = _ffi.cast(signature, address)
        status = kernel(*(_ffi.from_buffer(a) for a in (*inputs, *outputs)))
        if status != 0:
            backend = self.backend(name)
            raise KernelFailed(
                status,
                f"error: external function @{name} (backend '{backend}', "
                f"{origin_of(backend)}) failed with status {status} (its ops: "
                f"{', '.join(dict.fromkeys(self.ops_of(name)))}; C symbol {symbol})"
            )
        return outputs


def verify(
    model: CompiledModule, inputs: Sequence[Any], rtol: float = 1e-4, atol: float = 1e-5
) -> list[FunctionCheck]:
    """Check each external function against the reference on its own inputs.

    Raises ByocError naming the first function whose outputs differ (its
    backend and ops); if every function agrees but the model's outputs do not
    match the reference, it names the host. Returns one `FunctionCheck` per call.
    """
    from byoc.backends import origin_of

    arrays = [model._argument(i, a) for i, a in enumerate(inputs)]
    checks: list[FunctionCheck] = []

    def compare(name: str, args: Sequence[np.ndarray], outputs: list[np.ndarray]) -> None:
        expected = reference.call(name, args)
        worst, ok, first_bad = 0.0, True, -1
        for k, (got, want) in enumerate(zip(outputs, expected, strict=True)):
            err = _max_error(got, want)
            worst = max(worst, err)
            if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
                ok = False
                first_bad = k if first_bad < 0 else first_bad
        check = FunctionCheck(name, runner.backend(name), runner.ops_of(name), worst, ok)
        checks.append(check)
        if not ok:
            backend = check.backend
            raise ByocError(
                f"error: verify: external function @{name} (backend '{backend}', "
                f"{origin_of(backend)}) disagrees with the reference interpreter on "
                f"output {first_bad} (max abs error {worst:g}; rtol {rtol:g}, atol "
                f"{atol:g}); its ops: {', '.join(check.ops)}"
            )

    reference = ReferenceInterpreter(model.partitioned_module())
    runner = FunctionRunner(model, compare)
    with np.errstate(all="ignore"):
        runner.call("main", arrays)
    got = model(*arrays)
    results = list(got) if isinstance(got, tuple) else [got]
    expected = reference.call("main", arrays)
    for k, (spec, value, want) in enumerate(zip(model.outputs, results, expected, strict=True)):
        if not np.allclose(value, want, rtol=rtol, atol=atol, equal_nan=True):
            raise ByocError(
                f"error: verify: every external function agrees with the reference, "
                f"but output {k} ({spec.name}) of the model does not (max abs error "
                f"{_max_error(value, want):g}): the host code disagrees"
            )
    return checks


def failing_function(model: CompiledModule, inputs: Sequence[Any]) -> KernelFailed | None:
    """The failure of the external function that returns a non-zero status on
    `inputs`, or None if none does (run function by function)."""
    try:
        arrays = [model._argument(i, a) for i, a in enumerate(inputs)]
        with np.errstate(all="ignore"):
            FunctionRunner(model).call("main", arrays)
    except KernelFailed as failure:
        return failure
    except Exception:  # the diagnosis must not hide the failure it explains
        return None
    return None


def _max_error(got: np.ndarray, want: np.ndarray) -> float:
    if not got.size:
        return 0.0
    a, b = got.astype(np.float64), np.asarray(want, np.float64)
    diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))

