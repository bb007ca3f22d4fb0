"""A compiled model: call it with numpy arrays, get numpy arrays back."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from cffi import FFI

from byoc.backends.spec import Artifact
from byoc.frontend.diagnostics import ByocError

_ffi = FFI()
ENTRY_SIGNATURE = "int32_t(*)(void**)"


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one input or output of a compiled model."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"{self.name}: {dims + 'x' if dims else ''}{self.dtype}"


class HostCode(Protocol):
    """Machine code of the host part: JIT-compiled now, or loaded from a file."""

    def function(self, name: str, c_signature: str) -> Any:
        """A cffi function pointer to `name`."""
        ...

    def emit_object(self) -> bytes:
        """The code as a relocatable object file."""
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
        self._n = len(self.inputs) + len(self.outputs)

    def save(self, path: str | PathLike[str]) -> None:
        """Write the compiled model to one file that `byoc.load` reads back."""
        from byoc.runtime.saved import save

        save(self, path)

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
            if array.dtype.kind not in "biuf":
                raise ByocError(
                    f"error: argument {index} ({spec.name}) has dtype "
                    f"{array.dtype}; expected {spec.dtype}"
                )
            array = array.astype(spec.dtype)
        if array.shape != spec.shape:
            raise ByocError(
                f"error: argument {index} ({spec.name}) has shape {array.shape}; "
                f"expected {spec.shape}"
            )
        return np.ascontiguousarray(array)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        if len(args) != len(self.inputs):
            expected = ", ".join(str(s) for s in self.inputs)
            raise ByocError(
                f"error: the model takes {len(self.inputs)} arguments ({expected}); "
                f"got {len(args)}"
            )
        arrays = [self._argument(i, a) for i, a in enumerate(args)]
        results = [np.empty(s.shape, s.dtype) for s in self.outputs]
        buffers = _ffi.new("void*[]", self._n)
        for i, array in enumerate(arrays + results):
            buffers[i] = _ffi.from_buffer(array)
        status = self._entry(buffers)
        if status != 0:
            raise ByocError(f"error: the compiled model failed (status {status})")
        return results[0] if len(results) == 1 else tuple(results)

    def __repr__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs)
        outs = ", ".join(str(s) for s in self.outputs)
        backends = sorted({a.backend for a in self.artifacts}) or ["host only"]
        return f"<CompiledModule ({ins}) -> ({outs}) on {', '.join(backends)}>"
