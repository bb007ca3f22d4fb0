"""Saving a compiled model to one file, and loading it without compiling anything.

The file is a zip archive (docs/architecture.md, "Saved models"):

    manifest.json     format, byoc version, CPU, inputs/outputs, artifacts, the
                      weights blob (symbol, size, checksum), and the SHA-256
                      of every other member
    host.o            the host code as a relocatable object (llvmlite, PIC),
    host.<k>.o        and its other objects when it was compiled in parallel
                      (`host_objects` in the manifest lists them in order)
    lib/<n>.so        each backend's shared objects
    src/<name>        each backend's generated sources (for people)
    partitioned.mlir  the partitioned relay IR, weights elided (for people)
    weights.bin       the weights blob: stored uncompressed, its data at a
                      page-aligned offset of the file, so loading maps it (mmap)
                      instead of reading it; checked by its `fletcher64` sum

The archive's comment seals it: the SHA-256 of every byte of the file but the
blob's data (which its own checksum covers) and the comment itself. The host
object carries its own signature (runtime/signature.py), so a manifest that
was edited and sealed again still cannot lie about what the code does.

Loading checks everything before any code is mapped, in this order: only a
regular file is opened; member sizes are bounded before anything is
inflated; the seal, then each member's checksum, then the blob's; the host
object's structure (runtime/elf.py) and its signature against the manifest;
only then are libraries loaded and the object linked, after every symbol it
needs resolves. A truncated, corrupted, edited or foreign file, or one built
for another CPU or byoc version, is a ByocError.

A saved model holds native code: loading one runs it like any shared
library, so load only files you would run (the checks find damage and
inconsistency, they do not make a stranger's file safe).
Shared objects are unpacked into the compile cache by content hash, so loading
a model twice (or in several processes) reuses one copy. A blob that is not
aligned in its file (an archive rewritten by another tool, then sealed again)
is read into memory instead of mapped.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import struct
import tempfile
import zipfile
from functools import cache
from os import PathLike
from pathlib import Path
from typing import IO, Any

import numpy as np

from byoc.backends import get_backend
from byoc.backends.errors import Fallback, run_backend_code
from byoc.backends.spec import Artifact
from byoc.frontend.diagnostics import ByocError
from byoc.runtime.compiled import CompiledModule, TensorSpec
from byoc.runtime.jit import LoadedHost, host_object_name
from byoc.runtime.elf import RelocatableObject, check_shared_object
from byoc.runtime.signature import check_manifest, read_signature, signature_name
from byoc.runtime.weights import Blob, Weights

FORMAT = "byoc-compiled-model"
FORMAT_VERSION = 4

WEIGHTS_MEMBER = "weights.bin"

_PAGE = mmap.ALLOCATIONGRANULARITY
"""The blob's data starts at a multiple of this (mmap offsets must be)."""

_PADDING_FIELD = 0xD935
"""Zip extra-field id of the padding that aligns the blob (zipalign's)."""


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


def save(model: CompiledModule, path: str | PathLike[str], blob: Blob | None = None) -> None:
    """Write `model` to `path` (atomically: a reader never sees half a file).

    `blob` gives the weights when the model has not bound its own yet (a fresh
    compile writes its cache entry straight from the weights' buffers).
    """
    if blob is None and model.weights is not None:
        blob = model.weights.blob()
    objects = model.host.emit_objects()
    members: dict[str, bytes] = {host_object_name(k): obj for k, obj in enumerate(objects)}
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
        "host_objects": [host_object_name(k) for k in range(len(objects))],
        "inputs": [_spec_json(s) for s in model.inputs],
        "outputs": [_spec_json(s) for s in model.outputs],
        "artifacts": artifacts,
        "placement": model.placement,
        "weights": None
        if blob is None
        else {
            "member": WEIGHTS_MEMBER,
            "symbol": model.weights_symbol,
            "size": blob.size,
            "checksum": blob.checksum,
        },
        "fallbacks": [f.to_json() for f in model.fallbacks],
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
    }
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or Path("."), prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=1))
            for name, data in members.items():
                # Code barely compresses; deflating it costs seconds.
                binary = name.endswith((".o", ".so"))
                zf.writestr(name, data, zipfile.ZIP_STORED if binary else zipfile.ZIP_DEFLATED)
            if blob is not None:
                _write_aligned(zf, WEIGHTS_MEMBER, blob)
            zf.comment = SEAL_PREFIX + bytes(SEAL_DIGITS)
        _seal(Path(tmp))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_aligned(zf: zipfile.ZipFile, name: str, blob: Blob) -> None:
    """Store `blob` as member `name`, uncompressed, its data starting at a multiple
    of the page size: the local header's extra field is padded (as zipalign does)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = blob.size
    zip64 = blob.size * 1.05 > zipfile.ZIP64_LIMIT  # as ZipFile.open decides
    header = 30 + len(name.encode()) + (20 if zip64 else 0)
    padding = (-(zf.start_dir + header + 4)) % _PAGE
    info.extra = struct.pack("<HH", _PADDING_FIELD, padding) + bytes(padding)
    with zf.open(info, "w", force_zip64=zip64) as out:
        for chunk in blob.chunks():
            out.write(chunk)


SEAL_PREFIX = b"byoc-sha256:"
SEAL_DIGITS = 64
"""The archive comment: this prefix and the file's SHA-256 in hex."""


def _blob_range(f: IO[bytes], zf: zipfile.ZipFile) -> tuple[int, int]:
    """Where the stored weights blob's data lies in the file ((0, 0): none)."""
    try:
        info = zf.getinfo(WEIGHTS_MEMBER)
    except KeyError:
        return 0, 0
    if info.compress_type != zipfile.ZIP_STORED:
        return 0, 0
    start = _data_offset(f, info)
    return start, start + info.compress_size


def _file_digest(f: IO[bytes], end: int, skip: tuple[int, int]) -> str:
    """SHA-256 of the bytes [0, end) of `f` outside `skip`."""
    digest = hashlib.sha256()
    for start, stop in ((0, min(skip[0], end)), (max(skip[1], 0), end)) if skip[1] else ((0, end),):
        f.seek(start)
        left = stop - start
        while left > 0:
            chunk = f.read(min(left, 1 << 22))
            if not chunk:
                raise EOFError("the file ended while reading it")
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def _seal(path: Path) -> None:
    """Write the digest into the placeholder comment ending the archive at `path`."""
    with open(path, "r+b") as f, zipfile.ZipFile(f) as zf:
        end = os.fstat(f.fileno()).st_size - SEAL_DIGITS
        digest = _file_digest(f, end, _blob_range(f, zf))
        f.seek(end)
        f.write(digest.encode())


def _check_seal(f: IO[bytes], zf: zipfile.ZipFile, size: int, where: str) -> None:
    """The archive must end in its seal, and the seal match every byte before it."""
    comment = zf.comment
    if len(comment) != len(SEAL_PREFIX) + SEAL_DIGITS or not comment.startswith(SEAL_PREFIX):
        raise ByocError(f"{where}: not a sealed byoc compiled model (no or damaged seal)")
    f.seek(size - len(comment))
    if f.read(len(comment)) != comment:
        raise ByocError(f"{where}: corrupted: bytes follow the archive's seal")
    if _file_digest(f, size - SEAL_DIGITS, _blob_range(f, zf)) != comment[len(SEAL_PREFIX):].decode("ascii", "replace"):
        raise ByocError(f"{where}: corrupted: the file does not match its seal")


def _data_offset(f: IO[bytes], info: zipfile.ZipInfo) -> int:
    """Where a member's data starts in the file (after its local header)."""
    f.seek(info.header_offset)
    header = f.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length


def _weights(
    f: IO[bytes], zf: zipfile.ZipFile, manifest: dict[str, Any], where: str, verify: bool = True
) -> tuple[Weights | None, str]:
    """The blob a manifest describes, mapped (or read) and checked, and its symbol."""
    description = manifest.get("weights")
    if description is None:
        return None, ""
    member = str(description["member"])
    size, expected = int(description["size"]), str(description["checksum"])
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise ByocError(f"{where}: truncated: {member} is missing") from None
    if info.file_size != size or size <= 0:
        raise ByocError(f"{where}: corrupted: {member} has {info.file_size} bytes, not {size}")
    offset = _data_offset(f, info)
    if info.compress_type == zipfile.ZIP_STORED and offset % _PAGE == 0:
        weights = Weights.map(f.fileno(), offset, size, expected, where, member, verify)
    else:
        with zf.open(info) as stream:
            weights = Weights.read(stream, size, expected, where, member)
    return weights, str(description["symbol"])


def _read(path: Path) -> tuple[dict[str, Any], dict[str, bytes], Weights | None, str]:
    """The manifest, verified members and weights (with their symbol) of a saved
    model, or a ByocError."""
    where = f"{path}: error"
    f = _open_regular(path, where)
    with f:
        try:
            with zipfile.ZipFile(f) as zf:
                size = os.fstat(f.fileno()).st_size
                names = _check_members(zf, size, where)
                if "manifest.json" not in names:
                    raise ByocError(f"{where}: not a byoc compiled model (no manifest)")
                manifest = json.loads(zf.read("manifest.json"))
                if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                    raise ByocError(f"{where}: not a byoc compiled model")
                _check_build(manifest, where)
                weights_entry = manifest.get("weights") or {}
                blob_member = weights_entry.get("member") if isinstance(weights_entry, dict) else None
                listed = {"manifest.json", *(manifest.get("sha256") or {})}
                if blob_member is not None:
                    listed.add(str(blob_member))
                if names != listed:
                    extra = sorted(names - listed) or sorted(listed - names)
                    raise ByocError(
                        f"{where}: corrupted: the members do not match the manifest "
                        f"({', '.join(extra)})"
                    )
                members = {
                    name: zf.read(name)
                    for name in names
                    if name != "manifest.json" and name != blob_member
                }
                _check_digests(manifest, members, where)
                _check_seal(f, zf, size, where)
                weights, symbol = _weights(f, zf, manifest, where)
        except ByocError:
            raise
        except MemoryError:
            raise ByocError(f"{where}: out of memory reading the file") from None
        except Exception as err:  # noqa: BLE001 - zipfile, zlib, json: all mean damaged
            raise ByocError(
                f"{where}: not a byoc compiled model, or truncated or corrupted "
                f"({type(err).__name__}: {err})"
            ) from None
    return manifest, members, weights, symbol


MAX_MEMBERS = 4096
"""More members than any saved model has: a bigger directory is not ours."""

MAX_EXPANSION = 64
"""How much a compressed member may grow when read (text deflates 3-10x);
beyond `EXPANSION_FLOOR` bytes, a member claiming more is a zip bomb."""

EXPANSION_FLOOR = 256 << 20


def _open_regular(path: Path, where: str) -> IO[bytes]:
    """`path` opened for reading, if it is a regular file: a FIFO would block
    for ever and a device (/dev/zero) never ends, so neither is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise ByocError(f"{where}: cannot read the file: {err.strerror or err}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ByocError(f"{where}: not a regular file, so not a saved model")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_members(zf: zipfile.ZipFile, file_size: int, where: str) -> set[str]:
    """The member names, once each sizes are checked against the file: no member
    is named twice, lies past the end of the file, or expands beyond what any
    saved model's text does (before a byte of it is decompressed)."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ByocError(f"{where}: not a byoc compiled model ({len(infos)} members)")
    names: set[str] = set()
    for info in infos:
        name = info.filename
        if name in names:
            raise ByocError(f"{where}: corrupted: member {name} appears twice")
        names.add(name)
        if info.header_offset + info.compress_size > file_size:
            raise ByocError(f"{where}: truncated: member {name} ends past the end of the file")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise ByocError(f"{where}: corrupted: member {name} has inconsistent sizes")
        elif info.file_size > max(EXPANSION_FLOOR, MAX_EXPANSION * info.compress_size):
            raise ByocError(
                f"{where}: corrupted: member {name} claims {info.file_size} bytes from "
                f"{info.compress_size} compressed (a zip bomb?)"
            )
    return names


def _check_build(manifest: dict[str, Any], where: str) -> None:
    """The file must be of this format version, byoc version and CPU."""
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


def _check_digests(manifest: dict[str, Any], members: dict[str, bytes], where: str) -> None:
    digests = manifest.get("sha256") or {}
    for name, digest in digests.items():
        if name not in members:
            raise ByocError(f"{where}: truncated: {name} is missing")
        if hashlib.sha256(members[name]).hexdigest() != digest:
            raise ByocError(f"{where}: corrupted: {name} does not match its checksum")


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


def _host_object_names(manifest: dict[str, Any], where: str) -> list[str]:
    """The members holding the host's objects, in order: `host.o`, `host.1.o`, ..."""
    names = manifest.get("host_objects")
    if not isinstance(names, list) or not names or names != [host_object_name(k) for k in range(len(names))]:
        raise ByocError(f"{where}: malformed manifest: host_objects is {names!r}")
    return names


def _host_object(data: bytes, name: str, where: str) -> RelocatableObject:
    """A host object, its structure checked before LLVM's linker sees it."""
    import platform

    try:
        return RelocatableObject(data, platform.machine())
    except (ValueError, struct.error, IndexError) as err:
        raise ByocError(f"{where}: corrupted: {name} is not a valid object ({err})") from None


def _shared_object(data: bytes, name: str, where: str) -> bytes:
    """A backend's library, its segments checked before the dynamic loader maps them."""
    import platform

    try:
        check_shared_object(data, platform.machine())
    except (ValueError, struct.error) as err:
        raise ByocError(f"{where}: corrupted: {name} is not a valid shared object ({err})") from None
    return data


def load_weights(path: str | PathLike[str]) -> Weights | None:
    """The weights of a model this process has just saved at `path`, mapped
    (and not read again to check them: that would bring every page in)."""
    where = f"{path}: error"
    try:
        with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            return _weights(f, zf, manifest, where, verify=False)[0]
    except (zipfile.BadZipFile, json.JSONDecodeError, KeyError, ValueError, OSError) as err:
        raise ByocError(f"{where}: cannot map the weights just saved ({err})") from None


def load(path: str | PathLike[str]) -> CompiledModule:
    """Load a model written by `CompiledModule.save`, without a C compiler."""
    if not isinstance(path, (str, PathLike)):
        raise ByocError(f"error: byoc.load() takes a path, not a {type(path).__name__}")
    path = Path(path)
    manifest, members, weights, symbol = _read(path)
    where = f"{path}: error"
    try:
        # Nothing runs before the code's own signature agrees with the manifest:
        # loading a library runs its constructors, linking trusts the object.
        entry_name = str(manifest["entry"])
        host_objects = [_host_object(members[name], name, where) for name in _host_object_names(manifest, where)]
        try:
            signature = read_signature(host_objects[0].symbol_bytes(signature_name(entry_name)), entry_name)
        except (ValueError, UnicodeDecodeError) as err:
            raise ByocError(f"{where}: the manifest does not match the host code: {err}") from None
        check_manifest(signature, manifest, members["partitioned.mlir"], where)
        artifacts = []
        libraries: list[Path] = []
        for entry in manifest["artifacts"]:
            libs = [_unpack_library(_shared_object(members[name], name, where)) for name in entry["libraries"]]
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
                backend = get_backend(artifact.backend)
                if backend.load is None:
                    raise ByocError(
                        f"{path}: error: backend '{artifact.backend}' cannot rebuild "
                        "its runtime"
                    )
                run_backend_code(backend, "load", str(path), backend.load, artifact)
            artifacts.append(artifact)
        symbols = [s for a in artifacts for s in a.symbols]
        defined = {name for o in host_objects for name in o.defined()}
        needed = sorted({name for o in host_objects for name in o.undefined()} - defined)
        host = LoadedHost([o.data for o in host_objects], libraries, symbols, needed)
        if weights is None and host.has_variable(entry_name.removesuffix("entry") + "weights"):
            raise ByocError(
                f"{path}: error: malformed manifest: the host code reads weights "
                "the file does not describe"
            )
        return CompiledModule(
            host,
            entry_name,
            [_spec(s) for s in manifest["inputs"]],
            [_spec(s) for s in manifest["outputs"]],
            artifacts,
            members["partitioned.mlir"].decode(),
            {str(k): int(v) for k, v in manifest["placement"].items()},
            weights=weights,
            weights_symbol=symbol,
            fallbacks=[Fallback.from_json(f) for f in manifest.get("fallbacks", [])],
        )
    except ByocError:
        raise
    except MemoryError:
        raise ByocError(f"{path}: error: out of memory loading the model") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, UnicodeDecodeError) as err:
        raise ByocError(f"{path}: error: malformed manifest ({type(err).__name__}: {err})") from None
