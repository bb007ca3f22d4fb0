"""The weights blob at run time: one 64-byte aligned buffer the host code reads.

The host code reaches its weights through one pointer (passes/weights_to_blob.py);
a `Weights` is the memory that pointer is set to: a copy in anonymous memory
right after a compile without cache, or a read-only mapping (mmap) of the blob
inside a saved model or cache entry, which costs no copy and is shared by every
process that loads the same file.

The checksum (`fletcher64`) is cheap enough to verify on every load (about
5 GB/s with numpy, where SHA-256 runs at under 1 GB/s): viewing the blob as
little-endian 64-bit words w_0, w_1, ..., it is the pair

    (sum w_i, sum (i + 1) * w_i)   modulo 2**64,

printed as 32 hex digits. Any change to a single word changes the first sum;
swapped or shifted words change the second. It detects damage, not tampering.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from byoc.frontend.diagnostics import ByocError
from byoc.passes.weights_to_blob import ALIGNMENT, WeightsLayout

CHECKSUM = "fletcher64"

_MASK = (1 << 64) - 1
_CHUNK_WORDS = 1 << 18  # 2 MiB per step: the products stay in cache
_WEIGHTS = np.arange(1, _CHUNK_WORDS + 1, dtype=np.uint64)


def _words(data: memoryview) -> tuple[np.ndarray, bytes]:
    """`data` as whole 64-bit words (no copy) and its last partial word, zero-padded."""
    whole = data.nbytes // 8
    raw = np.frombuffer(data, np.uint8)
    words = raw[: whole * 8].view("<u8")
    tail = raw[whole * 8 :].tobytes()
    return words, (tail + bytes(8 - len(tail)) if tail else b"")


def checksum(entries: Iterable[tuple[int, memoryview]]) -> str:
    """The checksum of a blob given as `(offset, bytes)` pieces, each at an offset
    that is a multiple of 8, zeros in between (zeros add nothing to either sum)."""
    total = weighted = 0
    for offset, data in entries:
        assert offset % 8 == 0, offset
        words, tail = _words(data)
        first = offset // 8
        for start, array in ((first, words), (first + len(words), np.frombuffer(tail, "<u8"))):
            for at in range(0, len(array), _CHUNK_WORDS):
                chunk = array[at : at + _CHUNK_WORDS]
                s = int(chunk.sum(dtype=np.uint64))
                d = int(np.dot(chunk, _WEIGHTS[: len(chunk)]))
                total += s
                weighted += d + (start + at) * s
    return f"{CHECKSUM}:{total & _MASK:016x}{weighted & _MASK:016x}"


@dataclass(frozen=True)
class Blob:
    """A blob about to be written: its size, checksum and bytes in order."""

    size: int
    checksum: str
    pieces: tuple[tuple[int, memoryview], ...]

    def chunks(self) -> Iterator[memoryview | bytes]:
        """The bytes of the blob in order: the pieces and the zeros between them."""
        at = 0
        for offset, data in self.pieces:
            if offset > at:
                yield bytes(offset - at)
            yield data
            at = offset + data.nbytes
        if self.size > at:
            yield bytes(self.size - at)

    @staticmethod
    def of_layout(layout: WeightsLayout) -> Blob:
        pieces = tuple(layout.entries)
        return Blob(layout.size, checksum(pieces), pieces)


class Weights:
    """A weights blob in memory: 64-byte aligned, read-only to the host code.

    Keep it alive as long as code reads it (a CompiledModule holds its own).
    The bytes are held as a numpy array, never through a memoryview with an
    export on it: memoryviews take part in garbage-collected cycles (a model
    is one), and clearing one whose buffer is exported frees the mapping under
    whatever still points into it.
    """

    def __init__(self, array: np.ndarray, checksum: str, mapped: bool = False):
        assert array.dtype == np.uint8 and array.ndim == 1 and array.flags.c_contiguous
        self.array = array
        """The blob's bytes (a view of the mapping when mapped)."""
        self.checksum = checksum
        self.address: int = array.__array_interface__["data"][0]
        """Where the blob starts in this process."""
        self.mapped = mapped
        """Whether the bytes are a mapping of a file (not a copy)."""

    @property
    def size(self) -> int:
        return int(self.array.nbytes)

    @property
    def buffer(self) -> memoryview:
        """The bytes, as a (new) memoryview."""
        return memoryview(self.array)

    def blob(self) -> Blob:
        """The blob, for writing it out again."""
        return Blob(self.size, self.checksum, ((0, self.buffer),))

    @staticmethod
    def copy_of(blob: Blob) -> Weights:
        """The blob copied into fresh, aligned anonymous memory."""
        buffer = aligned_zeros(blob.size)
        for offset, data in blob.pieces:
            buffer[offset : offset + data.nbytes] = np.frombuffer(data, np.uint8)
        return Weights(buffer, blob.checksum)

    @staticmethod
    def read(stream: BinaryIO, size: int, expected: str, where: str, name: str) -> Weights:
        """A blob read from `stream` into aligned memory and checked (for blobs a
        mapping cannot reach: compressed, or not aligned in their file)."""
        buffer = aligned_zeros(size)
        got = 0
        while got < size:
            n = stream.readinto(buffer[got:])  # type: ignore[attr-defined]
            if not n:
                raise ByocError(f"{where}: truncated: {name} ends after {got} of {size} bytes")
            got += n
        weights = Weights(buffer, expected)
        weights.verify(where, name)
        return weights

    @staticmethod
    def map(
        fd: int, offset: int, size: int, expected: str, where: str, name: str, verify: bool = True
    ) -> Weights:
        """The `size` bytes at `offset` (a multiple of the page size) of the open
        file `fd`, mapped read-only and checked against `expected`.

        The file must not be overwritten in place while the mapping lives (byoc
        itself only ever replaces files by renaming a new one over them). Not
        `verify`ing is for a blob just written (its pages stay unread until a
        call reads them).
        """
        if offset % mmap.ALLOCATIONGRANULARITY:
            raise ValueError(f"offset {offset} is not page-aligned")
        if offset + size > os.fstat(fd).st_size:
            raise ByocError(f"{where}: truncated: {name} runs past the end of the file")
        mapping = mmap.mmap(fd, size, offset=offset, prot=mmap.PROT_READ)
        weights = Weights(np.frombuffer(mapping, np.uint8), expected, mapped=True)
        if verify:
            weights.verify(where, name)
        return weights

    def verify(self, where: str, name: str) -> None:
        """Raise a ByocError if the bytes do not match their checksum."""
        if checksum([(0, self.buffer)]) != self.checksum:
            raise ByocError(f"{where}: corrupted: {name} does not match its checksum")


def aligned_zeros(size: int) -> np.ndarray:
    """`size` zero bytes starting at a multiple of ALIGNMENT."""
    raw = np.zeros(size + ALIGNMENT, np.uint8)
    start = (-raw.__array_interface__["data"][0]) % ALIGNMENT
    return raw[start : start + size]
