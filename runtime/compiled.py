"""A compiled model: call it with numpy arrays, get numpy arrays back."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from cffi import FFI

from byoc.backends.errors import Fallback
from byoc.backends.spec import ALLOCATION_FAILED, Artifact
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.array_entry import ARGUMENTS_NEED_CONVERSION
from byoc.runtime.weights import Weights

_ffi = FFI()
_from_buffer = _ffi.from_buffer

ENTRY_SIGNATURE = "int32_t(*)(void**)"

_MISSING = object()
"""The default of the generated caller's parameters: an argument not given."""


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one input or output of a compiled model."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"{self.name}: {dims + 'x' if dims else ''}{self.dtype}"


def _converts(array: np.ndarray, dtype: np.dtype) -> bool:
    """Whether `array` may be converted to `dtype` for a call: any number to a
    float input; to an integer input only integers whose values all fit (an
    index or a token id is never rounded or wrapped); to a bool input only bools."""
    kind = array.dtype.kind
    if dtype.kind == "f":
        return kind in "biuf"
    if dtype.kind == "b":
        return kind == "b"
    if kind == "b" or np.can_cast(array.dtype, dtype, "safe"):
        return True
    if kind not in "iu":
        return False
    info = np.iinfo(dtype)
    return array.size == 0 or (int(array.min()) >= info.min and int(array.max()) <= info.max)


def _conversion_hint(array: np.ndarray, dtype: np.dtype) -> str:
    if dtype.kind in "iu" and array.dtype.kind in "iu":
        return f" (its values do not fit {dtype})"
    if dtype.kind in "iub":
        return f" (convert it yourself, e.g. array.astype(np.{dtype}))"
    return ""


class HostCode(Protocol):
    """Machine code of the host part: JIT-compiled now, or loaded from a file."""

    def function(self, name: str, c_signature: str) -> Any:
        """A cffi function pointer to `name`."""
        ...

    def emit_objects(self) -> list[bytes]:
        """The code as relocatable object files (the first defines the globals)."""
        ...

    def bind_pointer(self, name: str, address: int) -> None:
        """Set the code's pointer variable `name` to `address`."""
        ...


class CompiledModule:
    """A model compiled for a set of backends and the host.

    Call it with one array per input of `main`, in order; it returns one array,
    or a tuple for several results.
    """

    def __init__(
        self,
        host: HostCode,
        entry_name: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        artifacts: Sequence[Artifact],
        partitioned_ir: str,
        placement: dict[str, int] | None = None,
        weights: Weights | None = None,
        weights_symbol: str = "",
        fallbacks: Sequence[Fallback] = (),
    ):
        self.host = host
        """The host's machine code (it owns the memory the entry points into)."""
        self.entry_name = entry_name
        """The exported `int32_t entry(void** buffers)` of the host code."""
        self._entry = host.function(entry_name, ENTRY_SIGNATURE)
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.artifacts = tuple(artifacts)
        self.partitioned_ir = partitioned_ir
        """The partitioned relay IR, as `byoc-opt --partition` prints it."""
        self.placement = dict(placement or {})
        """How many graph ops each backend, and `host`, runs."""
        self.weights: Weights | None = None
        """The blob the host code reads its weights from (None: it has none)."""
        self.weights_symbol = weights_symbol
        """The host's pointer to the blob (`byoc_<hash>_weights`)."""
        self.timings: dict[str, float] = {}
        """Seconds of each stage of the compile that made this model (`byoc.compile`)."""
        if weights is not None:
            self.bind_weights(weights)
        self.fallbacks = tuple(fallbacks)
        """Functions a backend failed to generate, whose ops went elsewhere."""
        self._partitioned: Any = None
        self.origin: tuple[Any, tuple[Any, ...], Any, bool] | None = None
        """(source, backends, input_shapes, simplify) when `byoc.compile` made this model: `verify`
        partitions the source again for the weights `partitioned_ir` elides."""
        self._n = len(self.inputs) + len(self.outputs)
        # Python looks `__call__` up on the type: a subclass of one model
        # makes the generated caller the call itself, with no wrapper frame.
        self.__class__ = type(
            "CompiledModule", (CompiledModule,), {"__call__": self._make_call()}
        )

    def bind_weights(self, weights: Weights) -> None:
        """Point the host code at `weights` (before the first call: code that
        reads weights must not run unbound)."""
        self.host.bind_pointer(self.weights_symbol, weights.address)
        self.weights = weights

    def save(self, path: str | PathLike[str]) -> None:
        """Write the compiled model to one file that `byoc.load` reads back."""
        from byoc.runtime.saved import save

        save(self, path)

    def profile(self, *inputs: Any, runs: int | None = None, show: bool = True):
        """Where a call on `inputs` spends its time: per external function and
        per host op group, largest first, with its share of the total and the
        ops inside (runtime/profile.py). Prints the table unless `show` is
        false; returns it as a `Profile`. The first call builds an instrumented
        copy of the host code; the model itself is never slowed down."""
        from byoc.runtime.profile import profile

        if len(inputs) != len(self.inputs):
            self._arity(inputs)
        result = profile(self, inputs, runs)
        if show:
            print(result)
        return result

    @property
    def sources(self) -> dict[str, str]:
        """Generated source files of every backend, by file name."""
        out: dict[str, str] = {}
        for artifact in self.artifacts:
            out.update(artifact.sources)
        return out

    @property
    def c_source(self) -> str:
        """The generated C of every C-emitting backend."""
        return "\n".join(
            text for name, text in self.sources.items() if name.endswith(".c")
        )

    def _argument(self, index: int, value: Any) -> np.ndarray:
        spec = self.inputs[index]
        try:
            array = np.asarray(value)
        except Exception as err:
            raise ByocError(
                f"error: argument {index} ({spec.name}) is not an array: {err}"
            ) from None
        if array.dtype != spec.dtype:
            if not _converts(array, spec.dtype):
                raise ByocError(
                    f"error: argument {index} ({spec.name}) has dtype "
                    f"{array.dtype}; expected {spec.dtype}"
                    + _conversion_hint(array, spec.dtype)
                )
            array = array.astype(spec.dtype)
        if array.dtype is not spec.dtype:  # equal but not the same object (byte order)
            array = array.astype(spec.dtype)
        if array.shape != spec.shape:
            raise ByocError(
                f"error: argument {index} ({spec.name}) has shape {array.shape}; "
                f"expected {spec.shape}"
            )
        return np.ascontiguousarray(array)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Run the model on one array per input (replaced per model, see __init__)."""
        raise NotImplementedError  # pragma: no cover - every instance has its own

    def _arity(self, args: tuple[Any, ...]) -> None:
        given = sum(a is not _MISSING for a in args)
        expected = ", ".join(str(s) for s in self.inputs)
        raise ByocError(
            f"error: the model takes {len(self.inputs)} arguments ({expected}); got {given}"
        )

    def _rebind(self, given: tuple[Any, ...], rest: tuple[Any, ...], named: dict[str, Any]) -> Any:
        """Call with keyword arguments (input names) or a wrong count: put each
        argument in its place, or raise a ByocError saying what is wrong."""
        if rest or not named:
            self._arity(given + rest)
        args = list(given)
        index = {spec.name: i for i, spec in enumerate(self.inputs)}
        for name, value in named.items():
            i = index.get(name)
            if i is None:
                expected = ", ".join(str(s) for s in self.inputs) or "none"
                raise ByocError(f"error: the model has no input '{name}' (its inputs: {expected})")
            if args[i] is not _MISSING:
                raise ByocError(f"error: input '{name}' is given twice (by position and by name)")
            args[i] = value
        missing = [self.inputs[i].name for i, a in enumerate(args) if a is _MISSING]
        if missing:
            expected = ", ".join(str(s) for s in self.inputs)
            raise ByocError(
                f"error: the model takes {len(self.inputs)} arguments ({expected}); "
                f"missing {', '.join(missing)}"
            )
        return self(*args)

    def _fail(self, status: int, args: tuple[Any, ...] = ()) -> None:
        """A ByocError for a non-zero status: run function by function to name
        the external function (and backend) that returned it."""
        from byoc.runtime.verify import failing_function

        complete = len(args) == len(self.inputs)
        found = failing_function(self, args) if complete else None
        if (found is None or found.status == ALLOCATION_FAILED) and status > 0 and status & ALLOCATION_FAILED:
            raise ByocError(self._allocation_failure())
        cause = self._reference_failure(args) if complete else None
        if cause is not None:
            # The op that refused the values (relay.take's index out of
            # range), at its place, as the reference interpreter saw it.
            detail = str(found).removeprefix("error: ") if found else f"status {status}"
            raise ByocError(f"{cause} (the compiled model failed: {detail})")
        raise found or ByocError(f"error: the compiled model failed (status {status})")

    def _reference_failure(self, args: tuple[Any, ...]) -> str | None:
        """The reference interpreter's refusal of `args`, naming the op and its
        place, or None if it computes them (or cannot run)."""
        from byoc.runtime.reference import run_reference

        try:
            arrays = [self._argument(i, a) for i, a in enumerate(args)]
            module = self._source_module()
        except Exception:  # noqa: BLE001 - the diagnosis must not hide the failure
            return None
        try:
            with np.errstate(all="ignore"):
                run_reference(module, arrays)
        except ByocError as err:
            return str(err).strip()
        except Exception:  # noqa: BLE001
            return None
        return None

    def _out_of_memory(self, err: MemoryError) -> None:
        raise ByocError(f"error: out of memory: {err or 'cannot allocate an array'}") from None

    def _allocation_failure(self) -> str:
        """The out-of-memory message, with the size the failing code recorded
        (the host's getter, or a backend's `<symbol>_failed_bytes`)."""
        from byoc.backends.host import failed_bytes_name

        sizes: list[tuple[int, str]] = []
        if self.entry_name.endswith("entry"):
            getter = self._host_function(failed_bytes_name(self.entry_name), "int64_t(*)(void)")
            if getter is not None and (size := int(getter())):
                sizes.append((size, "the host"))
        import llvmlite.binding as llvm

        for artifact in self.artifacts:
            for symbol in artifact.symbols:
                address = llvm.address_of_symbol(f"{symbol}_failed_bytes")
                if address:
                    cell = _ffi.cast("int64_t*", address)
                    if cell[0]:
                        sizes.append((int(cell[0]), f"backend '{artifact.backend}'"))
                        cell[0] = 0
        if not sizes:
            return f"error: out of memory: the compiled model could not allocate a buffer (status {ALLOCATION_FAILED})"
        size, where = sizes[0]
        message = (
            f"error: out of memory: {where} could not allocate a buffer of {size} bytes "
            f"({_human(size)})"
        )
        owner = self._op_of_size(size)
        # The first op whose result has that size: the buffer's likely owner.
        return f"{owner[0]}: {message}, the size of the result of '{owner[1]}'" if owner else message

    def _source_module(self) -> Any:
        """The model's relay IR with its ops' places: its source when compiled
        by `byoc.compile`, else the partitioned IR."""
        if self.origin is not None:
            from byoc.runtime.build import load_source

            source, _, input_shapes, _ = self.origin
            return load_source(source, input_shapes)
        return self.partitioned_module()

    def _op_of_size(self, size: int) -> tuple[str, str] | None:
        """The place and name of the first op whose result takes `size` bytes
        (the buffer that could not be allocated), or None."""
        import math

        from xdsl.dialects.builtin import TensorType

        from byoc.dialects.relay.constant import numpy_dtype_of
        from byoc.frontend.parse import location_of

        try:
            module = self._source_module()
        except Exception:  # noqa: BLE001 - the diagnosis must not hide the failure
            return None
        for op in module.walk():
            for result in op.results:
                typ = result.type
                if not isinstance(typ, TensorType):
                    continue
                dtype = numpy_dtype_of(typ.element_type)
                if dtype is not None and math.prod(typ.get_shape()) * dtype.itemsize == size:
                    where = location_of(op)
                    return (where, op.name) if where else None
        return None

    def partitioned_module(self) -> Any:
        """The partitioned relay IR as a module, with its weights (built once).

        `partitioned_ir` elides large weights; a model from `byoc.compile` gets
        them by partitioning its source again (checked to give the same IR)."""
        if self._partitioned is None:
            from byoc.dialects.relay.constant import ELIDED, print_eliding_weights
            from byoc.frontend.parse import parse_text

            if ELIDED not in self.partitioned_ir:
                self._partitioned = parse_text(self.partitioned_ir, "<partitioned>")
            elif self.origin is None:
                raise ByocError(
                    "error: this model's partitioned IR elides its weights and it was "
                    "loaded from a file: compile it with byoc.compile to verify it"
                )
            else:
                from byoc.runtime.build import load_source
                from byoc.runtime.fallback import partition_again

                from byoc.backends import resolve_targets

                source, targets, input_shapes, simplify = self.origin
                module = load_source(source, input_shapes)
                partition_again(module, resolve_targets(targets), self.fallbacks, simplify)
                if print_eliding_weights(module) != self.partitioned_ir:
                    raise ByocError(
                        "error: the model's source no longer partitions as it did when "
                        "it was compiled: compile it again to verify it"
                    )
                self._partitioned = module
        return self._partitioned

    def verify(self, *inputs: Any, rtol: float = 1e-4, atol: float = 1e-5) -> list[Any]:
        """Run the model on `inputs` and check each external function's outputs
        against the reference interpreter on the inputs it received.

        Raises ByocError naming the first function that disagrees (its backend
        and its ops); returns a `FunctionCheck` per call otherwise."""
        from byoc.runtime.verify import verify

        if len(inputs) != len(self.inputs):
            self._arity(inputs)
        return verify(self, inputs, rtol, atol)

    def _host_function(self, name: str, signature: str) -> Any | None:
        """The host's function `name` as `signature`, or None if it has none (a
        model saved before that entry existed)."""
        try:
            return self.host.function(name, signature)
        except ByocError:
            return None

    def _direct_entry(self) -> Any | None:
        """`main` itself, taking one pointer per buffer, if the host exports it."""
        if not self.entry_name.endswith("entry"):
            return None
        n = len(self.inputs) + len(self.outputs)
        signature = f"int32_t(*)({', '.join(['void*'] * n) or 'void'})"
        return self._host_function(self.entry_name.removesuffix("entry") + "main", signature)

    def _array_entry(self) -> Any | None:
        """The host's entry taking numpy arrays by address (runtime/array_entry.py),
        if it has one and numpy's array layout is the one it reads."""
        from byoc.backends.host import array_entry_name
        from byoc.runtime.array_entry import layout_ok

        if not self.entry_name.endswith("entry") or not layout_ok():
            return None
        n = len(self.inputs) + len(self.outputs)
        signature = f"int32_t(*)({', '.join(['intptr_t*'] + ['intptr_t'] * n)})"
        return self._host_function(array_entry_name(self.entry_name), signature)

    def _make_call(self) -> Any:
        """A Python function specialised to this model's arity and layouts.

        Calling a compiled model should cost about what calling a C function
        does: the arrays go by address (`id`) to the host's array entry, which
        checks their type, dtype, shape and layout in machine code and calls
        `main` (runtime/array_entry.py). Anything else (lists, other dtypes,
        strided views) takes the slow path: one straight-line function that
        converts what it must and passes buffers from `from_buffer` to `main`
        (or to the `void**` entry). The text holds only positional names,
        never input text.
        """
        n_in, n_out = len(self.inputs), len(self.outputs)
        args = ", ".join(f"a{i}" for i in range(n_in))
        results = ", ".join(f"r{j}" for j in range(n_out))
        returned = results if n_out == 1 else "(" + results + ",)"
        env: dict[str, Any] = {"M": _MISSING, "empty": np.empty, "fail": self._fail}
        for j, spec in enumerate(self.outputs):
            env[f"os{j}"], env[f"od{j}"] = spec.shape, spec.dtype
        exec(self._slow_call_text(env, returned), env)  # noqa: S102 - generated from positions only
        # Defaults, *rest and **named catch keyword arguments (input names) and
        # a wrong number of arguments at the cost of one identity test, for a
        # ByocError rather than Python's TypeError. The parameters are
        # positional-only, so any keyword is an input's name.
        params = "".join(f", a{i}=M" for i in range(n_in))
        missing = f" or a{n_in - 1} is M" if n_in else ""
        given = f"({args}{',' if n_in else ''})"
        lines = [
            f"def call(self{params}, /, *rest, **named):",
            f"    if rest or named{missing}:",
            f"        return self._rebind({given}, rest, named)",
        ]
        fast = self._array_entry()
        if fast is not None:
            env["fast"] = fast
            env["expected"] = _ffi.new(
                "intptr_t[]", [id(np.ndarray), *(id(spec.dtype) for spec in self.inputs)]
            )
            lines += [f"    r{j} = empty(os{j}, od{j})" for j in range(n_out)]
            addresses = ", ".join(["expected", *(f"id(a{i})" for i in range(n_in)), *(f"id(r{j})" for j in range(n_out))])
            lines += [
                f"    status = fast({addresses})",
                "    if status:",
                f"        if status != {ARGUMENTS_NEED_CONVERSION}:",
                f"            fail(status, {given})",
                f"        return slow({args})",
                f"    return {returned}",
            ]
        else:
            lines.append(f"    return slow({args})")
        # numpy's MemoryError (outputs, converted arguments) is a ByocError too;
        # a try costs nothing until something raises.
        env["out_of_memory"] = self._out_of_memory
        lines = [
            lines[0],
            "    try:",
            *("    " + line for line in lines[1:]),
            "    except MemoryError as err:",
            "        out_of_memory(err)",
        ]
        exec("\n".join(lines), env)  # noqa: S102 - generated from positions only
        return env["call"]

    def _slow_call_text(self, env: dict[str, Any], returned: str) -> str:
        """`slow(a0, ...)`: converts the arguments as needed, calls through `from_buffer`."""
        n_in, n_out = len(self.inputs), len(self.outputs)
        direct = self._direct_entry()
        lines = [f"def slow({', '.join(f'a{i}' for i in range(n_in))}):"]
        if direct is None:
            lines.append(f"    b = new('void*[{n_in + n_out}]')")
        env.update(
            new=_ffi.new,
            fb=_from_buffer,
            ndarray=np.ndarray,
            entry=self._entry if direct is None else direct,
            convert=self._argument,
        )
        pointers = [f"p{k}" for k in range(n_in + n_out)]
        for i, spec in enumerate(self.inputs):
            env[f"s{i}"], env[f"d{i}"] = spec.shape, spec.dtype
            lines += [
                f"    if a{i}.__class__ is not ndarray or a{i}.dtype is not d{i} "
                f"or a{i}.shape != s{i}:",
                f"        a{i} = convert({i}, a{i})",
                "    try:",
                f"        p{i} = fb(a{i})",
                "    except ValueError:  # not C-contiguous",
                f"        a{i} = convert({i}, a{i})",
                f"        p{i} = fb(a{i})",
            ]
        for j in range(n_out):
            lines += [f"    r{j} = empty(os{j}, od{j})", f"    p{n_in + j} = fb(r{j})"]
        if direct is None:
            lines += [f"    b[{k}] = {p}" for k, p in enumerate(pointers)]
            lines.append("    status = entry(b)")
        else:
            lines.append(f"    status = entry({', '.join(pointers)})")
        given = "".join(f"a{i}, " for i in range(n_in))
        lines += ["    if status:", f"        fail(status, ({given}))", f"    return {returned}"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs)
        outs = ", ".join(str(s) for s in self.outputs)
        backends = sorted({a.backend for a in self.artifacts}) or ["host only"]
        return f"<CompiledModule ({ins}) -> ({outs}) on {', '.join(backends)}>"


def _human(size: int) -> str:
    """`4.0 TiB`, `512.0 MiB`, ... for a byte count."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if unit != "bytes" else f"{size} bytes"
        value /= 1024
    return f"{size} bytes"  # pragma: no cover
