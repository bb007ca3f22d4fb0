"""Saving a compiled model to one file, and loading it without compiling anything.

The file is a zip archive:

    manifest.json     format, byoc version, CPU, inputs/outputs, artifacts,
                      and the SHA-256 of every other member
    host.o            the host code as a relocatable object (llvmlite, PIC)
    lib/<n>.so        each backend's shared objects
    src/<name>        each backend's generated sources (for people)
    partitioned.mlir  the partitioned relay IR (for people)

Loading checks everything before any code is mapped: a truncated, corrupted
or foreign file, or one built for another CPU or byoc version, is a ByocError.
Shared objects are unpacked into the compile cache by content hash, so loading
a model twice (or in several processes) reuses one copy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from functools import cache
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from byoc.backends import get_backend
from byoc.backends.spec import Artifact
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.compiled import CompiledModule, TensorSpec

FORMAT = "byoc-compiled-model"
FORMAT_VERSION = 1


def byoc_version() -> str:
    from byoc import __version__

    return __version__


@cache
def host_cpu() -> dict[str, str]:
    """What the host code was optimised for: loading on another CPU is refused.

    Read once per process (callers must not change the dict)."""
    import platform

    from byoc.runtime import jit

    cpu, features = jit.host_cpu()
    return {"machine": platform.machine(), "cpu": cpu, "features": features}


def _spec_json(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.str}


def _spec(data: dict[str, Any]) -> TensorSpec:
    return TensorSpec(str(data["name"]), tuple(int(d) for d in data["shape"]), np.dtype(data["dtype"]))


def save(model: CompiledModule, path: str | PathLike[str]) -> None:
    """Write `model` to `path` (atomically: a reader never sees half a file)."""
    members: dict[str, bytes] = {"host.o": model.host.emit_object()}
    artifacts = []
    for i, artifact in enumerate(model.artifacts):
        runtime = bool(artifact.keepalive)
        if runtime and get_backend(artifact.backend).load is None:
            raise ByocError(
                f"error: backend '{artifact.backend}' keeps runtime state it cannot "
                "rebuild on load, so the model cannot be saved"
            )
        libraries = []
        for j, library in enumerate(artifact.libraries):
            name = f"lib/{i}_{j}.so"
            members[name] = Path(library).read_bytes()
            libraries.append(name)
        sources = []
        for name, text in artifact.sources.items():
            member = f"src/{i}_{name}"
            members[member] = text.encode()
            sources.append({"name": name, "member": member})
        artifacts.append(
            {
                "backend": artifact.backend,
                "symbols": artifact.symbols,
                "libraries": libraries,
                "sources": sources,
                "runtime": runtime,
                # What `--emit-library` needs to rebuild the C from a cache hit.
                "c_flags": artifact.c_flags,
                "link_flags": artifact.link_flags,
                "vendor_libraries": [str(p) for p in artifact.vendor_libraries],
            }
        )
    members["partitioned.mlir"] = model.partitioned_ir.encode()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "byoc_version": byoc_version(),
        "host": host_cpu(),
        "entry": model.entry_name,
        "inputs": [_spec_json(s) for s in model.inputs],
        "outputs": [_spec_json(s) for s in model.outputs],
        "artifacts": artifacts,
        "placement": model.placement,
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
    }
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or Path("."), prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=1))
            for name, data in members.items():
                # Code and weights barely compress; deflating them costs seconds.
                binary = name == "host.o" or name.endswith(".so")
                zf.writestr(name, data, zipfile.ZIP_STORED if binary else zipfile.ZIP_DEFLATED)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and verified members of a saved model, or a ByocError."""
    where = f"{path}: error"
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ByocError(f"{where}: cannot read the file: {err.strerror or err}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "manifest.json" not in names:
                raise ByocError(f"{where}: not a byoc compiled model (no manifest)")
            manifest = json.loads(zf.read("manifest.json"))
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise ByocError(f"{where}: not a byoc compiled model")
            members = {name: zf.read(name) for name in names if name != "manifest.json"}
    except ByocError:
        raise
    except (zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError, EOFError, ValueError, KeyError) as err:
        raise ByocError(
            f"{where}: not a byoc compiled model, or truncated or corrupted ({err})"
        ) from None
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ByocError(
            f"{where}: saved in format version {manifest.get('format_version')}; this "
            f"byoc reads version {FORMAT_VERSION}"
        )
    if manifest.get("byoc_version") != byoc_version():
        raise ByocError(
            f"{where}: built by byoc {manifest.get('byoc_version')}; this is byoc "
            f"{byoc_version()}: compile the model again"
        )
    if manifest.get("host") != host_cpu():
        built = manifest.get("host") or {}
        raise ByocError(
            f"{where}: built for another CPU ({built.get('machine')}/"
            f"{built.get('cpu')}); this one is {host_cpu()['machine']}/"
            f"{host_cpu()['cpu']}: compile the model again"
        )
    digests = manifest.get("sha256") or {}
    for name, digest in digests.items():
        if name not in members:
            raise ByocError(f"{where}: truncated: {name} is missing")
        if hashlib.sha256(members[name]).hexdigest() != digest:
            raise ByocError(f"{where}: corrupted: {name} does not match its checksum")
    return manifest, members


def _unpack_library(data: bytes) -> Path:
    """A shared object in the cache, by content; written atomically once."""
    from byoc.runtime.toolchain import cache_dir

    directory = cache_dir() / "loaded"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{hashlib.sha256(data).hexdigest()[:32]}.so"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".load-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    return target


class LoadedHost:
    """Host code loaded from an object file into an MCJIT engine (no compiling)."""

    def __init__(self, obj: bytes, libraries: list[Path], symbols: list[str]):
        import llvmlite.binding as llvm

        from byoc.runtime.jit import host_target_machine, initialise_llvm

        initialise_llvm()
        for library in libraries:
            try:
                llvm.load_library_permanently(str(library))
            except RuntimeError as err:
                raise ByocError(f"{library}: error: cannot load: {err}") from None
        for symbol in symbols:
            # MCJIT would bind a missing symbol to address 0: refuse instead.
            if llvm.address_of_symbol(symbol) is None:
                raise ByocError(f"error: no loaded shared object defines '{symbol}'")
        self._object = obj
        self._engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), host_target_machine(jit=True)
        )
        try:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()
        except RuntimeError as err:
            raise ByocError(f"error: cannot load the host code: {err}") from None

    def function(self, name: str, c_signature: str) -> Any:
        from byoc.runtime.jit import ffi

        address = self._engine.get_function_address(name)
        if not address:
            raise ByocError(f"error: the host code has no function '{name}'")
        return ffi.cast(c_signature, address)

    def emit_object(self) -> bytes:
        return self._object


def load(path: str | PathLike[str]) -> CompiledModule:
    """Load a model written by `CompiledModule.save`, without a C compiler."""
    path = Path(path)
    manifest, members = _read(path)
    try:
        artifacts = []
        libraries: list[Path] = []
        for entry in manifest["artifacts"]:
            libs = [_unpack_library(members[name]) for name in entry["libraries"]]
            libraries += libs
            artifact = Artifact(
                backend=str(entry["backend"]),
                symbols=[str(s) for s in entry["symbols"]],
                sources={s["name"]: members[s["member"]].decode() for s in entry["sources"]},
                libraries=libs,
                c_flags=[str(f) for f in entry.get("c_flags", [])],
                link_flags=[str(f) for f in entry.get("link_flags", [])],
                vendor_libraries=[Path(p) for p in entry.get("vendor_libraries", [])],
            )
            if entry.get("runtime"):
                # The backend's runtime (e.g. a session) is rebuilt from its
                # sources; only such models need the backend installed.
                loader = get_backend(artifact.backend).load
                if loader is None:
                    raise ByocError(
                        f"{path}: error: backend '{artifact.backend}' cannot rebuild "
                        "its runtime"
                    )
                loader(artifact)
            artifacts.append(artifact)
        symbols = [s for a in artifacts for s in a.symbols]
        host = LoadedHost(members["host.o"], libraries, symbols)
        return CompiledModule(
            host,
            str(manifest["entry"]),
            [_spec(s) for s in manifest["inputs"]],
            [_spec(s) for s in manifest["outputs"]],
            artifacts,
            members["partitioned.mlir"].decode(),
            {str(k): int(v) for k, v in manifest["placement"].items()},
        )
    except ByocError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ByocError(f"{path}: error: malformed manifest ({type(err).__name__}: {err})") from None
