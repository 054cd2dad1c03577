"""A session file's bytes, read in bounded blocks. Pure (no Django).

An import never holds the whole file in memory. An upload's temporary file or a file the CLI
names is mapped (mmap), and the pipeline reads it a block at a time: each block is copied out of
the mapping and parsed, and every RELEASE_EVERY bytes the process lets go of the pages it touched
(madvise MADV_DONTNEED: the kernel keeps them in its page cache, but they no longer count in the
process's memory, and a later read of them faults them back in). A small file may come as bytes.

What stays in memory is then bounded by the block, the batches of rows on their way to the
database and what the import keeps per entry (its id, place and chain hash: ~0.7 KB, at most
PIWEB_IMPORT_MAX_ENTRIES entries).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
from pathlib import Path
from typing import IO, Any

BLOCK = 8 * 1024 * 1024  # bytes of whole lines parsed at a time (a longer line: its own size)
COUNT_PIECE = 1024 * 1024  # bytes copied out at a time to count a byte in them
RELEASE_EVERY = 64 * 1024 * 1024  # bytes read between two releases of the mapped pages
_CAN_RELEASE = hasattr(mmap, "MADV_DONTNEED")


class Source:
    """The bytes of one file: a read-only mapping of it, or bytes already in memory."""

    __slots__ = ("_mapped", "_since_release", "buffer", "size")

    def __init__(self, buffer: bytes | mmap.mmap) -> None:
        self.buffer = buffer
        self.size = len(buffer)
        self._mapped = isinstance(buffer, mmap.mmap)
        self._since_release = 0

    @classmethod
    def open(cls, file: str | Path | IO[bytes]) -> Source:
        """Map a file (a path, or an open file with a descriptor); the mapping outlives the file,
        so an upload's temporary file may be removed once this returns."""
        if isinstance(file, str | Path):
            with Path(file).open("rb") as handle:
                return cls._map(handle.fileno())
        return cls._map(file.fileno())

    @classmethod
    def _map(cls, fd: int) -> Source:
        if os.fstat(fd).st_size == 0:
            return cls(b"")
        return cls(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))

    def __len__(self) -> int:
        return self.size

    def find(self, sub: bytes, start: int, end: int | None = None) -> int:
        return self.buffer.find(sub, start, self.size if end is None else end)

    def block(self, start: int, end: int) -> bytes:
        """A copy of [start:end] (bytes of a bytes source are sliced: also a copy)."""
        return self.buffer[start:end]

    def window(self, start: int, end: int) -> tuple[bytes, int, int, int]:
        """[start:end] to read lines in: (bytes, where [start:end] begins and ends in them, the file
        offset of their first byte). Bytes in memory are read where they are; a mapping's are
        copied out (a block at a time: see read())."""
        if isinstance(self.buffer, bytes):
            return self.buffer, start, end, 0
        return self.buffer[start:end], 0, end - start, start

    def view(self) -> memoryview:
        return memoryview(self.buffer)

    def read(self, read: int) -> None:
        """Note that `read` more bytes were touched; past RELEASE_EVERY, release the pages."""
        self._since_release += read
        if self._since_release >= RELEASE_EVERY:
            self.release()

    def release(self) -> None:
        """Let go of the mapped pages this process touched (nothing to do for bytes)."""
        self._since_release = 0
        if self._mapped and _CAN_RELEASE:
            assert isinstance(self.buffer, mmap.mmap)
            with contextlib.suppress(ValueError, OSError):  # closed meanwhile
                self.buffer.madvise(mmap.MADV_DONTNEED)

    def count(self, sub: bytes, start: int, end: int) -> int:
        """One byte's occurrences in [start:end] (mmap has no count()), copied out a piece at a
        time: small pieces, as it runs beside the import's own block (pipeline.py)."""
        assert len(sub) == 1  # (a longer one could straddle two pieces)
        total = 0
        for at in range(start, end, COUNT_PIECE):
            total += self.buffer[at : min(end, at + COUNT_PIECE)].count(sub)
            self.read(min(end, at + COUNT_PIECE) - at)
        return total

    def sha256(self, start: int = 0, end: int | None = None) -> Any:
        """The SHA-256 object of [start:end], hashed a block at a time."""
        digest = hashlib.sha256()
        view = memoryview(self.buffer)
        stop = self.size if end is None else end
        for at in range(start, stop, BLOCK):
            digest.update(view[at : min(stop, at + BLOCK)])
            self.read(min(stop, at + BLOCK) - at)
        view.release()
        return digest

    def close(self) -> None:
        if self._mapped:
            assert isinstance(self.buffer, mmap.mmap)
            with contextlib.suppress(BufferError):  # a view still open: the mapping goes with it
                self.buffer.close()


def as_source(data: bytes | Source) -> Source:
    return data if isinstance(data, Source) else Source(data)
