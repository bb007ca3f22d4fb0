"""The dynamic section of an ELF shared object: what it needs and where it looks.

The AOT exporter reads it to prove that a library it wrote holds no path into
the build environment (a RUNPATH into a virtualenv breaks on another machine).
Only the program headers are read, as the dynamic loader does.
"""

from __future__ import annotations

import struct
from pathlib import Path

from byoc.frontend.diagnostics import ByocError

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NAMES = {1: "NEEDED", 14: "SONAME", 15: "RPATH", 29: "RUNPATH"}
DT_NULL, DT_STRTAB = 0, 5


def dynamic_entries(path: str | Path) -> dict[str, list[str]]:
    """NEEDED, SONAME, RPATH and RUNPATH strings of an ELF file (each a list)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ByocError(f"{path}: error: not an ELF file")
    wide = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
        header = order + "IIQQQQQQ"  # type, flags, offset, vaddr, paddr, filesz, memsz, align
        dyn = order + "qQ"

        def segment(fields):  # -> type, offset, vaddr, filesz
            return fields[0], fields[2], fields[3], fields[5]
    else:
        phoff, = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
        header = order + "IIIIIIII"  # type, offset, vaddr, paddr, filesz, memsz, flags, align
        dyn = order + "iI"

        def segment(fields):
            return fields[0], fields[1], fields[2], fields[4]

    segments = [
        segment(struct.unpack_from(header, data, phoff + i * phentsize))
        for i in range(phnum)
    ]
    loads = [s for s in segments if s[0] == PT_LOAD]
    dynamic = next((s for s in segments if s[0] == PT_DYNAMIC), None)
    out: dict[str, list[str]] = {name: [] for name in DT_NAMES.values()}
    if dynamic is None:
        return out  # statically linked

    def file_offset(vaddr: int) -> int:
        for _, offset, start, size in loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        raise ByocError(f"{path}: error: malformed ELF dynamic section")

    entries: list[tuple[int, int]] = []
    size = struct.calcsize(dyn)
    for at in range(dynamic[1], dynamic[1] + dynamic[3], size):
        tag, value = struct.unpack_from(dyn, data, at)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    if strtab is None:
        return out
    strings = file_offset(strtab)
    for tag, value in entries:
        if tag in DT_NAMES:
            start = strings + value
            end = data.index(b"\0", start)
            out[DT_NAMES[tag]].append(data[start:end].decode("utf-8", "replace"))
    return out


def search_paths(path: str | Path) -> list[str]:
    """Every directory an ELF file's RPATH and RUNPATH name, in order."""
    entries = dynamic_entries(path)
    return [d for value in entries["RPATH"] + entries["RUNPATH"] for d in value.split(":") if d]
