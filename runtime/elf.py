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


# --- Relocatable objects (the host code of a saved model) ------------------------

ET_REL = 1
MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183}
SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 3, 4, 8, 9
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2


class RelocatableObject:
    """A 64-bit little-endian ELF relocatable object, checked before a linker sees it.

    LLVM's RuntimeDyld trusts its input: a truncated or zeroed object, or a
    relocation pointing past its section, crashes the process (SIGSEGV, or an
    abort). Everything it will follow is bounds-checked here first: the section
    table, each section's bytes, the symbol table and its names, and every
    relocation's place and symbol. Raises ValueError saying what is wrong.
    """

    def __init__(self, data: bytes, machine: str):
        self.data = data
        if len(data) < 64 or data[:4] != b"\x7fELF":
            raise ValueError("not an ELF object")
        if data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF object")
        e_type, e_machine = struct.unpack_from("<HH", data, 16)
        if e_type != ET_REL:
            raise ValueError(f"ELF type {e_type} is not a relocatable object")
        if MACHINES.get(machine) not in (None, e_machine):
            raise ValueError(f"ELF machine {e_machine} is not this CPU's ({machine})")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if shentsize != 64 or not 0 < shnum < 65280 or shoff + shnum * 64 > len(data):
            raise ValueError("section table out of the file")
        self.sections = [
            struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)
        ]  # name, type, flags, addr, offset, size, link, info, addralign, entsize
        for i, (_, kind, _, _, offset, size, link, _, _, _) in enumerate(self.sections):
            if kind != SHT_NOBITS and offset + size > len(data):
                raise ValueError(f"section {i} runs past the end of the file")
            if kind in (SHT_SYMTAB, SHT_RELA, SHT_REL) and link >= shnum:
                raise ValueError(f"section {i} links to a section that does not exist")
        if shstrndx >= shnum:
            raise ValueError("no section name table")
        symtabs = [i for i, s in enumerate(self.sections) if s[1] == SHT_SYMTAB]
        if len(symtabs) != 1:
            raise ValueError(f"{len(symtabs)} symbol tables")
        self._read_symbols(symtabs[0])
        for i, section in enumerate(self.sections):
            if section[1] in (SHT_RELA, SHT_REL):
                self._check_relocations(i, section, symtabs[0])

    def _bytes(self, index: int) -> bytes:
        _, kind, _, _, offset, size, *_ = self.sections[index]
        return b"" if kind == SHT_NOBITS else self.data[offset : offset + size]

    def _read_symbols(self, index: int) -> None:
        _, _, _, _, _, size, link, _, _, entsize = self.sections[index]
        if entsize != 24 or size % 24:
            raise ValueError("malformed symbol table")
        if self.sections[link][1] != SHT_STRTAB:
            raise ValueError("the symbol table's names are not a string table")
        names = self._bytes(link)
        self.symbols: list[tuple[str, int, int, int, int]] = []  # name, info, shndx, value, size
        for st_name, info, _, shndx, value, sym_size in struct.iter_unpack(
            "<IBBHQQ", self._bytes(index)
        ):
            end = names.find(b"\0", st_name)
            if st_name >= len(names) or end < 0:
                raise ValueError("a symbol name lies outside the string table")
            name = names[st_name:end].decode("utf-8", "replace")
            if SHN_UNDEF < shndx < SHN_LORESERVE:
                if shndx >= len(self.sections):
                    raise ValueError(f"symbol '{name}' is in a section that does not exist")
                section = self.sections[shndx]
                if section[1] != SHT_NOBITS and value + sym_size > section[5]:
                    raise ValueError(f"symbol '{name}' lies outside its section")
            elif shndx not in (SHN_UNDEF, SHN_ABS, SHN_COMMON):
                raise ValueError(f"symbol '{name}' has section index {shndx:#x}")
            self.symbols.append((name, info, shndx, value, sym_size))

    def _check_relocations(self, index: int, section: tuple, symtab: int) -> None:
        import numpy as np

        _, kind, _, _, _, size, link, target, _, entsize = section
        width = 24 if kind == SHT_RELA else 16
        if entsize != width or size % width or link != symtab or not 0 < target < len(self.sections):
            raise ValueError(f"malformed relocation section {index}")
        entries = np.frombuffer(self._bytes(index), dtype="<u8").reshape(-1, width // 8)
        if not len(entries):
            return
        if int(entries[:, 0].max()) >= max(self.sections[target][5], 1):
            raise ValueError(f"a relocation of section {target} lies outside it")
        if int((entries[:, 1] >> np.uint64(32)).max()) >= len(self.symbols):
            raise ValueError(f"a relocation of section {target} names no symbol")

    def undefined(self) -> list[str]:
        """The names of the global symbols the object needs from elsewhere."""
        return [name for name, info, shndx, _, _ in self.symbols if shndx == SHN_UNDEF and name and info >> 4]

    def defined(self) -> list[str]:
        """The names of the global symbols the object defines."""
        return [name for name, info, shndx, _, _ in self.symbols if shndx != SHN_UNDEF and name and info >> 4]

    def symbol_bytes(self, name: str) -> bytes | None:
        """The bytes a defined data symbol covers, or None if there is none."""
        for symbol, _, shndx, value, size in self.symbols:
            if symbol == name and SHN_UNDEF < shndx < SHN_LORESERVE:
                if self.sections[shndx][1] == SHT_NOBITS:
                    return None
                return self._bytes(shndx)[value : value + size]
        return None


ET_DYN = 3
PT_INTERP, PT_PHDR = 3, 6


def check_shared_object(data: bytes, machine: str) -> None:
    """Raise ValueError unless `data` is a 64-bit little-endian ELF shared
    object for `machine` whose program headers, and every segment they ask the
    dynamic loader to map, lie inside it: mapping a segment past the end of
    the file faults (SIGBUS) as soon as the loader touches it."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ValueError("not an ELF object")
    if data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF object")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_type != ET_DYN:
        raise ValueError(f"ELF type {e_type} is not a shared object")
    if MACHINES.get(machine) not in (None, e_machine):
        raise ValueError(f"ELF machine {e_machine} is not this CPU's ({machine})")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    if phentsize != 56 or not 0 < phnum < 4096 or phoff + phnum * 56 > len(data):
        raise ValueError("program headers out of the file")
    loads = 0
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * 56)
        if kind in (PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_PHDR) and offset + filesz > len(data):
            raise ValueError(f"segment {i} runs past the end of the file")
        if kind == PT_LOAD:
            loads += 1
            if memsz < filesz:
                raise ValueError(f"segment {i} is smaller in memory than in the file")
    if not loads:
        raise ValueError("no loadable segment")
