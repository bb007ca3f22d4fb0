"""What a model's host code says about itself, so a saved model cannot lie.

At compile time the host object gets a constant `byoc_<hash>_signature`: JSON
naming the entry, `@main`'s inputs and outputs (names, shapes, dtypes), the
functions it calls in each backend, the weights blob it reads (symbol and
size), the placement and the SHA-256 of the partitioned IR. `byoc.load` reads
it from the object's symbol table (runtime/elf.py), before any library or
code is loaded, and refuses a file whose manifest says anything else: a
manifest claiming a larger output, another dtype, fewer backends or another
entry would have the host write past the caller's buffers or call nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr, i8

from byoc.dialects.extern import COMPILER_ATTR
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.compiled import TensorSpec


def signature_name(entry: str) -> str:
    """The symbol of the signature beside the host entry `entry`."""
    return entry.removesuffix("entry") + "signature"


def spec_json(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.str}


def spec_of(data: Any) -> TensorSpec:
    """A TensorSpec from its JSON form (a ValueError or TypeError if malformed)."""
    if not isinstance(data, dict):
        raise TypeError(f"tensor description {data!r} is not an object")
    shape = data["shape"]
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"shape {shape!r} is not a list of sizes")
    return TensorSpec(str(data["name"]), tuple(shape), np.dtype(str(data["dtype"])))


def backend_calls(host: ModuleOp) -> dict[str, list[str]]:
    """The outlined functions a host module calls, by backend (its declarations)."""
    calls: dict[str, list[str]] = {}
    for op in host.ops:
        compiler = op.attributes.get(COMPILER_ATTR)
        if isinstance(op, func.FuncOp) and isinstance(compiler, StringAttr):
            calls.setdefault(compiler.data, []).append(op.sym_name.data)
    return {backend: sorted(names) for backend, names in sorted(calls.items())}


def host_signature(
    entry: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    calls: Mapping[str, Sequence[str]],
    placement: Mapping[str, int],
    partitioned_ir: str,
) -> dict[str, Any]:
    """The signature of a model's host code (its weights are added by `lower_host`)."""
    return {
        "entry": entry,
        "inputs": [spec_json(s) for s in inputs],
        "outputs": [spec_json(s) for s in outputs],
        "calls": {b: sorted(names) for b, names in sorted(calls.items())},
        "placement": dict(sorted(placement.items())),
        "partitioned_ir": hashlib.sha256(partitioned_ir.encode()).hexdigest(),
        "weights": None,
    }


def embed_signature(module: ModuleOp, name: str, signature: Mapping[str, Any]) -> None:
    """Add the signature to an llvm-dialect module as the constant `name`."""
    text = json.dumps(signature, sort_keys=True, separators=(",", ":"))
    module.body.block.add_op(
        llvm.GlobalOp(
            llvm.LLVMArrayType(len(text), i8),
            name,
            "external",
            constant=True,
            value=StringAttr(text),
        )
    )


def read_signature(data: bytes | None, entry: str) -> dict[str, Any]:
    """The signature's JSON from the bytes of its symbol, or a ValueError."""
    if data is None:
        raise ValueError(f"the host code has no signature for entry '{entry}'")
    signature = json.loads(data.decode("ascii"))
    if not isinstance(signature, dict):
        raise ValueError("the host code's signature is not an object")
    return signature


def check_manifest(
    signature: Mapping[str, Any],
    manifest: Mapping[str, Any],
    partitioned_ir: bytes,
    where: str,
) -> None:
    """Refuse a manifest that says anything the host code's signature does not."""

    def lie(what: str, claimed: object, actual: object) -> ByocError:
        return ByocError(
            f"{where}: the manifest does not match the host code: {what}: "
            f"{claimed} in the manifest, {actual} in the code"
        )

    if manifest.get("entry") != signature.get("entry"):
        raise lie("the entry", manifest.get("entry"), signature.get("entry"))
    for key in ("inputs", "outputs"):
        claimed = [spec_of(s) for s in manifest[key]]
        actual = [spec_of(s) for s in signature[key]]
        if claimed != actual:
            raise lie(f"the {key}", _specs(claimed), _specs(actual))
    calls: Mapping[str, list[str]] = signature["calls"]
    artifacts = manifest["artifacts"]
    backends = [str(a["backend"]) for a in artifacts]
    if sorted(backends) != sorted(calls) or len(set(backends)) != len(backends):
        raise lie("the backends", backends, sorted(calls))
    for artifact in artifacts:
        symbols = set(map(str, artifact["symbols"]))
        missing = [s for s in calls[str(artifact["backend"])] if s not in symbols]
        if missing:
            raise lie(
                f"the functions of backend '{artifact['backend']}'",
                sorted(symbols),
                f"calls of {', '.join(missing)}",
            )
    described = manifest.get("weights")
    weights = signature.get("weights")
    claimed = None if described is None else (described["symbol"], described["size"])
    actual = None if weights is None else (weights["symbol"], weights["size"])
    if claimed != actual:
        raise lie("the weights blob (symbol, bytes)", claimed, actual)
    if dict(manifest.get("placement") or {}) != dict(signature.get("placement") or {}):
        raise lie("the placement", manifest.get("placement"), signature.get("placement"))
    if hashlib.sha256(partitioned_ir).hexdigest() != signature.get("partitioned_ir"):
        raise lie("partitioned.mlir", "other text", "the IR it was compiled from")


def _specs(specs: Sequence[TensorSpec]) -> str:
    return "(" + ", ".join(str(s) for s in specs) + ")"
