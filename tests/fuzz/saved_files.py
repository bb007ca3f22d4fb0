"""Damaged and doctored saved models: the mutations the load checks must refuse.

Three families, each a `(description, bytes of a whole file)`:

- `byte_flips`: one byte changed, checksums and seal as they were;
- `truncated_members`: one member cut short, the manifest as it was;
- `doctored`: the manifest (or a member and its checksum) edited so that the
  file is consistent again (every checksum recomputed, the archive resealed),
  as a tool that knows the format would: only the host code's signature and
  structure checks stand between such a file and a wrong answer or a crash.

`load_outcome` loads one file and classifies what happened.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Members = dict[str, bytes]


def read_members(data: bytes) -> tuple[dict[str, Any], Members]:
    """The manifest and the other members of a saved model's bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    manifest = json.loads(members.pop("manifest.json"))
    return manifest, members


def write_sealed(manifest: dict[str, Any], members: Members, rehash: bool = True) -> bytes:
    """A saved model of these members, checksums recomputed (`rehash`) and sealed."""
    from byoc.runtime.saved import SEAL_DIGITS, SEAL_PREFIX, _seal

    manifest = json.loads(json.dumps(manifest))
    if rehash:
        blob = (manifest.get("weights") or {}).get("member")
        manifest["sha256"] = {
            name: hashlib.sha256(data).hexdigest() for name, data in members.items() if name != blob
        }
    with tempfile.TemporaryDirectory(prefix="byoc-fuzz-") as tmp:
        path = Path(tmp) / "sealed.byoc"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=1))
            for name, data in members.items():
                zf.writestr(name, data, zipfile.ZIP_STORED if not name.endswith((".mlir", ".c")) else zipfile.ZIP_DEFLATED)
            zf.comment = SEAL_PREFIX + bytes(SEAL_DIGITS)
        _seal(path)
        return path.read_bytes()


def byte_flips(data: bytes, positions: range | list[int] | None = None, xor: int = 0xFF) -> Iterator[tuple[str, bytes]]:
    """Each byte (of `positions`) changed once."""
    for at in positions if positions is not None else range(len(data)):
        changed = bytearray(data)
        changed[at] ^= xor
        yield f"byte {at} ^ {xor:#x}", bytes(changed)


def truncated_members(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Each member cut to nothing, to half and to one byte short; manifest and
    checksums as they were (the archive is rewritten around the cut member)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        contents = {info.filename: zf.read(info) for info in infos}
        comment = zf.comment
    for victim in contents:
        size = len(contents[victim])
        for length in sorted({0, size // 2, max(size - 1, 0)}):
            if length >= size:
                continue
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as zf:
                for info in infos:
                    body = contents[info.filename]
                    zf.writestr(info, body[:length] if info.filename == victim else body)
                zf.comment = comment
            yield f"{victim} cut to {length} of {size} bytes", out.getvalue()


def _output_shape(delta: int) -> Callable[[dict, Members], None]:
    def edit(manifest: dict, members: Members) -> None:
        shape = manifest["outputs"][0]["shape"]
        shape[-1] = max(shape[-1] + delta, 1) if shape else 1

    return edit


def _drop_artifact(manifest: dict, members: Members) -> None:
    artifact = manifest["artifacts"].pop()
    for name in artifact["libraries"] + [s["member"] for s in artifact["sources"]]:
        members.pop(name, None)


def _truncate_member(name: str, keep: float) -> Callable[[dict, Members], None]:
    def edit(manifest: dict, members: Members) -> None:
        members[name] = members[name][: int(len(members[name]) * keep)]

    return edit


def _zero_member(name: str, start: float, stop: float) -> Callable[[dict, Members], None]:
    def edit(manifest: dict, members: Members) -> None:
        data = bytearray(members[name])
        data[int(len(data) * start) : int(len(data) * stop)] = bytes(int(len(data) * stop) - int(len(data) * start))
        members[name] = bytes(data)

    return edit


DOCTORINGS: dict[str, Callable[[dict, Members], None]] = {
    "output shape larger": _output_shape(+8),
    "output shape smaller": _output_shape(-1),
    "extra output": lambda m, _: m["outputs"].append(dict(m["outputs"][0], name="extra")),
    "output dropped": lambda m, _: m["outputs"].pop(),
    "input dtype float64": lambda m, _: m["inputs"][0].update(dtype="<f8"),
    "input shape changed": lambda m, _: m["inputs"][0].update(shape=m["inputs"][0]["shape"] + [1]),
    "input renamed": lambda m, _: m["inputs"][0].update(name="renamed"),
    "entry renamed": lambda m, _: m.update(entry=m["entry"].replace("entry", "main")),
    "artifact dropped": _drop_artifact,
    "artifact symbols emptied": lambda m, _: [a.update(symbols=[]) for a in m["artifacts"]],
    "backend renamed": lambda m, _: [a.update(backend="cblas" if a["backend"] != "cblas" else "ccompiler") for a in m["artifacts"]],
    "placement changed": lambda m, _: m["placement"].update(host=m["placement"].get("host", 0) + 1),
    "weights size changed": lambda m, _: m["weights"] and m["weights"].update(size=m["weights"]["size"] // 2),
    "weights dropped": lambda m, members: m["weights"] and members.pop(m.pop("weights")["member"]),
    "partitioned IR replaced": lambda m, members: members.update({"partitioned.mlir": b"// nothing\n"}),
    "host objects renamed": lambda m, _: m.update(host_objects=["lib/0_0.so"]),
    "host object listed twice": lambda m, _: m.update(host_objects=["host.o", "host.o"]),
    "host object missing": lambda m, _: m["host_objects"].append("host.1.o"),
    "host.o truncated": _truncate_member("host.o", 0.5),
    "host.o header only": _truncate_member("host.o", 64 / 2**30),
    "host.o zeroed": _zero_member("host.o", 0.0, 1.0),
    "host.o tail zeroed": _zero_member("host.o", 0.5, 1.0),
    "host.o section table zeroed": _zero_member("host.o", 0.9, 1.0),
    "library truncated": lambda m, members: [
        members.update({n: members[n][: len(members[n]) // 2]}) for a in m["artifacts"] for n in a["libraries"]
    ],
    "library zeroed": lambda m, members: [
        members.update({n: bytes(len(members[n]))}) for a in m["artifacts"] for n in a["libraries"]
    ],
}
"""Edits that leave a consistent, sealed file saying something its code does not."""


def doctored(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Each of `DOCTORINGS` that applies to this model, resealed."""
    manifest, members = read_members(data)
    for name, edit in DOCTORINGS.items():
        m, ms = json.loads(json.dumps(manifest)), dict(members)
        try:
            edit(m, ms)
        except (IndexError, KeyError, TypeError):
            continue
        if m == manifest and ms == members:
            continue  # nothing to change in this model (no weights, no artifacts)
        yield name, write_sealed(m, ms)


def load_outcome(path: str | os.PathLike[str]) -> tuple[str, str]:
    """Load `path`: ("clean error", message), ("success", ""), or ("traceback", what)."""
    import byoc

    try:
        byoc.load(path)
    except byoc.ByocError as err:
        return "clean error", str(err).splitlines()[0]
    except Exception as err:  # noqa: BLE001 - what the checks must never let through
        return "traceback", f"{type(err).__name__}: {err}"
    return "success", ""


def sweep(paths_and_kinds: list[tuple[str, str]], scratch: str, log: str | None = None) -> dict[str, Any]:
    """Every mutation of each saved model, loaded one after the other in this
    process; returns the outcome counts and every mutation that was not a
    clean error. Run it in a child process: a crash stops it, and the last
    line of `log` names the mutation that caused it."""
    counts: dict[str, int] = {}
    escaped: list[str] = []
    for path, kinds in paths_and_kinds:
        data = Path(path).read_bytes()
        families = {
            "flips": lambda: byte_flips(data),
            "sampled-flips": lambda: byte_flips(data, range(0, len(data), 7)),
            "truncations": lambda: truncated_members(data),
            "doctored": lambda: doctored(data),
        }
        for kind in kinds.split(","):
            for description, mutant in families[kind]():
                Path(scratch).write_bytes(mutant)
                if log is not None:
                    with open(log, "a") as f:
                        f.write(f"{path}: {description}\n")
                outcome, detail = load_outcome(scratch)
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome != "clean error":
                    escaped.append(f"{Path(path).name}: {description}: {outcome} {detail}")
    return {"counts": counts, "escaped": escaped}
