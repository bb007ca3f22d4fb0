"""The compile cache: a compiled model saved under a key of everything it depends on.

The key covers the model's content, the backends asked for (and the code of the
modules defining them), byoc's own code and the host CPU, so an edit to any of
them is a miss, never a stale hit. Entries are saved models (runtime/saved.py),
written atomically; a corrupted entry is recompiled and replaced.

A model's content is hashed from its bytes, weights included, once: a file by
streaming it (and a file hashed before, unchanged since, by looking up its
digest: a cached compile of a 500 MB model must not read 500 MB), a module by
its text with the weights elided plus each weight's bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue

from byoc.backends import backend_fingerprint


@cache
def byoc_fingerprint() -> str:
    """Hash of byoc's own sources (Python, and libbyoc's C): any change is a miss."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    paths = [root / "__init__.py"]
    for folder in ("dialects", "passes", "backends", "targets", "frontend", "runtime"):
        paths += (root / folder).rglob("*.py")
    # libbyoc's C: compiled models embed and call it.
    paths += (root / "runtime" / "libbyoc").glob("*.[ch]")
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def module_digest(module: ModuleOp) -> str:
    """SHA-256 of a module's structure and content, weights as their bytes.

    Not of its printed text: xDSL prints about 20 µs an op, and weights would
    become hex. Each op contributes its name, where it sits, which values it
    reads (by number), its properties and attributes, its result types and the
    argument types of its blocks; each distinct attribute is rendered to text
    once, except weights (constants of more than 1024 elements, or resources),
    whose bytes are hashed as they are.
    """
    from byoc.dialects.relay.constant import ELIDE_LARGER_THAN

    digest = hashlib.sha256()
    texts: dict[Attribute, bytes] = {}

    def text(attribute: Attribute) -> bytes:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and len(attribute) > ELIDE_LARGER_THAN:
            digest.update(b"weight")
            digest.update(memoryview(attribute.data.data))
            return str(attribute.type).encode()
        if isinstance(attribute, DenseResourceAttr):
            digest.update(b"resource")
            digest.update(_resource_data(attribute))
        try:
            known = texts.get(attribute)
        except TypeError:  # unhashable
            return str(attribute).encode()
        if known is None:
            known = texts[attribute] = str(attribute).encode()
        return known

    numbers: dict[SSAValue, int] = {}
    positions: dict[Operation, int] = {module: 0}
    for position, op in enumerate(module.walk()):
        positions[op] = position
        parent = op.parent_op()
        digest.update(
            f"\n{op.name} {positions.get(parent, -1) if parent else -1} ".encode()
        )
        digest.update(" ".join(str(numbers.get(v, -1)) for v in op.operands).encode())
        for name, value in sorted((*op.properties.items(), *op.attributes.items())):
            digest.update(f" {name}=".encode())
            digest.update(text(value))
        for result in op.results:
            numbers[result] = len(numbers)
            digest.update(b" -> " + text(result.type))
        for region in op.regions:
            digest.update(b" {")
            for block in region.blocks:
                digest.update(b" ^")
                for arg in block.args:
                    numbers[arg] = len(numbers)
                    digest.update(b" " + text(arg.type))
    return digest.hexdigest()


def _resource_data(attribute: DenseResourceAttr) -> bytes:
    from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
    from xdsl.dialects.builtin import Builtin

    interface = Builtin.get_interface(OpAsmDialectInterface)
    blob = interface.lookup(attribute.resource_handle.data) if interface else None
    return (blob or "missing").encode()


_STAT_FIELDS = ("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev")

_RACY_NS = 2_000_000_000
"""A digest is trusted only for a file last changed this long before it was
taken: a change within the file system's timestamp granularity after the
digest would otherwise go unseen (git's "racy" entries)."""


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes; a file whose status (size, times, inode) is what
    it was when it was last hashed is not read again."""
    from byoc.runtime.toolchain import cache_dir

    path = Path(path)
    with open(path, "rb") as f:
        status = os.fstat(f.fileno())
        stamp = [getattr(status, name) for name in _STAT_FIELDS]
        memo = cache_dir() / "digests" / (
            hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32] + ".json"
        )
        try:
            known = json.loads(memo.read_text())
            if (
                known["stat"] == stamp
                and max(status.st_mtime_ns, status.st_ctime_ns) < known["taken_ns"] - _RACY_NS
            ):
                return str(known["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        taken = time.time_ns()
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=memo.parent, prefix=".digest-")
        with os.fdopen(fd, "w") as out:
            json.dump({"stat": stamp, "taken_ns": taken, "sha256": digest}, out)
        os.replace(tmp, memo)
    except OSError:
        pass  # a read-only cache: hash again next time
    return digest


def source_digest(source: object) -> str | None:
    """The digest of what a compile of `source` reads (None: it cannot be read,
    and the compile itself reports why)."""
    from byoc.frontend.onnx import is_onnx_source
    from byoc.runtime.build import is_path

    if isinstance(source, ModuleOp):
        return "module:" + module_digest(source)
    if is_onnx_source(source) and not isinstance(source, (str, Path)):
        serialized = source.SerializeToString()  # type: ignore[union-attr]
        return "onnx:" + hashlib.sha256(serialized).hexdigest()
    if is_path(source):
        try:
            return "file:" + file_digest(source)  # type: ignore[arg-type]
        except OSError:
            return None
    if isinstance(source, str):
        return "text:" + hashlib.sha256(source.encode()).hexdigest()
    return None


def cache_key(content: str, backends: list[str], host: dict[str, Any]) -> str:
    """The key of a compile of the source with digest `content` for the installed
    backends named `backends` on `host` (not loaded: a hit needs none of them)."""
    digest = hashlib.sha256()
    digest.update(content.encode())
    digest.update(
        json.dumps(
            {
                "byoc": byoc_fingerprint(),
                "backends": [backend_fingerprint(name) for name in backends],
                "host": host,
            },
            sort_keys=True,
        ).encode()
    )
    return digest.hexdigest()[:40]


def entry_path(key: str) -> Path:
    from byoc.runtime.toolchain import cache_dir

    return cache_dir() / "models" / f"{key}.byoc"
