"""The vector journal: a small append-only log in front of the LanceDB table.

A LanceDB append costs milliseconds (a new fragment, a new table version, work
on a background thread), which would be most of a merge (docs/benchmarks.md). So
a state's new vector revision is first written here: one ``os.write`` of a
checksummed record (tens of microseconds) *before* the graph transaction that
commits the revision. Records are moved into LanceDB in batches (``memory.vector_flush_rows``),
on close, and on the next read-write open; only then is the journal emptied.

The format is plain bytes, never pickled or executed:

* header: ``b"KGVJ1\\n"`` then the vector dimension as little-endian ``uint32``;
* record: ``uint32`` payload length, ``uint32`` CRC-32 of the payload, payload =
  ``int64`` rev, ``uint16`` id length, the UTF-8 id, ``dim`` little-endian float32.

A process killed in the middle of ``os.write`` leaves at most a torn last
record. It fails its length or checksum test and is cut off. Such a record was
never committed by the graph, because the graph commits only after the write
returns. Data written with ``os.write`` lives in the operating system's page
cache and survives the death of the process. Like LanceDB's own appends, the
journal is not fsynced on every record.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgagent.errors import MemoryStoreError

MAGIC = b"KGVJ1\n"
_HEADER = struct.Struct("<I")  # dim
_RECORD = struct.Struct("<II")  # payload length, crc32
_PAYLOAD = struct.Struct("<qH")  # rev, id length
HEADER_SIZE = len(MAGIC) + _HEADER.size


@dataclass
class JournalContents:
    ids: list[str] = field(default_factory=list)
    revs: list[int] = field(default_factory=list)
    vecs: list[np.ndarray] = field(default_factory=list)
    end: int = HEADER_SIZE  # offset just past the last valid record
    torn_bytes: int = 0  # bytes after it (a torn or damaged tail)

    def __len__(self) -> int:
        return len(self.ids)


class VectorJournal:
    """Append-only, checksummed records of (state id, revision, vector)."""

    def __init__(self, path: Path, dim: int, *, read_only: bool = False) -> None:
        self.path = path
        self.dim = dim
        self.read_only = read_only
        self._fd: int | None = None
        self._vec_bytes = 4 * dim

    # ------------------------------------------------------------------ read
    def read(self) -> JournalContents:
        """Every valid record in order; a torn or damaged tail is reported, not returned."""
        out = JournalContents()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            out.end = 0  # no file: no header yet
            return out
        if len(data) < HEADER_SIZE:  # created, header never completed: holds nothing
            out.end = 0
            out.torn_bytes = len(data)
            return out
        if data[: len(MAGIC)] != MAGIC:
            raise MemoryStoreError(
                f"{self.path} is not a kgagent vector journal (bad header); move it away "
                "to open the memory (states whose newest vectors were in it fall back to "
                "their last flushed revision, see `kgagent memory check`)"
            )
        (dim,) = _HEADER.unpack_from(data, len(MAGIC))
        if dim != self.dim:
            raise MemoryStoreError(
                f"{self.path} holds {dim}-d vectors but this memory's encoder is {self.dim}-d "
                "(as manifest.json records it): the manifest was edited or damaged, or the "
                "journal is another memory's; restore the memory from backups/ or an export"
            )
        pos = HEADER_SIZE
        n = len(data)
        while pos + _RECORD.size <= n:
            length, crc = _RECORD.unpack_from(data, pos)
            start = pos + _RECORD.size
            stop = start + length
            if length < _PAYLOAD.size + self._vec_bytes or stop > n:
                break
            payload = data[start:stop]
            if zlib.crc32(payload) != crc:
                break
            rev, idlen = _PAYLOAD.unpack_from(payload, 0)
            if _PAYLOAD.size + idlen + self._vec_bytes != length:
                break
            try:
                sid = payload[_PAYLOAD.size : _PAYLOAD.size + idlen].decode("utf-8")
            except UnicodeDecodeError:
                break
            vec = np.frombuffer(payload, dtype="<f4", offset=_PAYLOAD.size + idlen).astype(
                np.float32
            )
            out.ids.append(sid)
            out.revs.append(int(rev))
            out.vecs.append(vec)
            pos = stop
        out.end = pos
        out.torn_bytes = n - pos
        return out

    # ----------------------------------------------------------------- write
    def open_for_append(self) -> JournalContents:
        """Check the file, cut off a torn tail, and keep it open for appends."""
        if self.read_only:
            raise MemoryStoreError("the vector journal is open read-only")
        contents = self.read()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if contents.end < HEADER_SIZE:
                os.ftruncate(fd, 0)
                os.write(fd, MAGIC + _HEADER.pack(self.dim))
                os.fsync(fd)
                contents.end = HEADER_SIZE
            elif contents.torn_bytes:
                os.ftruncate(fd, contents.end)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return contents

    def append(self, state_id: str, rev: int, vec: np.ndarray) -> None:
        if self._fd is None:
            raise MemoryStoreError("the vector journal is not open for appends")
        sid = state_id.encode("utf-8")
        body = np.ascontiguousarray(vec, dtype="<f4")
        if body.size != self.dim:
            raise MemoryStoreError(f"a {body.size}-d vector cannot go into a {self.dim}-d journal")
        payload = _PAYLOAD.pack(int(rev), len(sid)) + sid + body.tobytes()
        record = _RECORD.pack(len(payload), zlib.crc32(payload)) + payload
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            written = os.write(self._fd, record)
            if written != len(record):  # a short write to a regular file: the disk is full
                raise OSError(f"wrote {written} of {len(record)} bytes")
        except OSError as e:
            os.ftruncate(self._fd, start)  # never leave a torn record before later ones
            raise MemoryStoreError(
                f"could not write the vector journal {self.path} ({e}); the step was not committed"
            ) from None

    def clear(self) -> None:
        """Forget every record (call only once they are durable in LanceDB)."""
        if self._fd is None:
            raise MemoryStoreError("the vector journal is not open for appends")
        os.ftruncate(self._fd, HEADER_SIZE)
        os.lseek(self._fd, 0, os.SEEK_END)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
