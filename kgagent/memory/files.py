"""Small durable files of a memory: the manifest and the content-addressed blobs."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from kgagent.errors import MemoryStoreError
from kgagent.memory.limits import ProcessLimitError, process_limit

MANIFEST = "manifest.json"
FORMAT = "kgagent-memory"
#: A manifest is a few hundred bytes; anything far larger is not one.
MAX_MANIFEST_BYTES = 1 << 20
#: The largest encoder dimension a manifest may name.
MAX_DIM = 1 << 16
#: Bytes read at a time when hashing a blob.
HASH_CHUNK = 1 << 20
#: a memory id: what merged nodes record as their origin (uuid hex; at most 128 plain
#: characters from a hand edit or an archive)
_MEMORY_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.:-]{0,127}")


#: Bytes of a name kept in the names of the temporaries and staging folders made beside
#: it: the longest suffix added (``.`` before, ``.import~`` and 12 hex digits after: 21
#: bytes) keeps them within the 255 bytes a file name may have; ``mkstemp``'s (14) and a
#: merge's (``.merge-`` and 8 letters: 16) are shorter.
SIDE_NAME_MAX = 255 - 21


def side_name(name: str) -> str:
    """``name`` as the files made beside it spell it: itself (every name that fits, so the
    leftovers of any run are found by it), or for a longer one its first bytes, cut at a
    character's boundary, and a digest of the whole, so that two long names still have
    their own temporaries."""
    raw = os.fsencode(name)
    if len(raw) <= SIDE_NAME_MAX:
        return name
    cut = SIDE_NAME_MAX - 13
    while cut > 0 and raw[cut] & 0xC0 == 0x80:  # not inside a UTF-8 character
        cut -= 1
    digest = hashlib.sha256(raw).hexdigest()[:12]
    return f"{os.fsdecode(raw[:cut])}~{digest}"


def umask() -> int:
    """This process's umask, read without changing it (``/proc/self/status``, Linux 4.7
    and later); else by setting it and back, which another thread could see between."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_file(path: Path, mode: int | None = None) -> tuple[int, str]:
    """A temporary file beside ``path`` (descriptor, name), to be renamed onto it, with
    the permissions a file created there would have (``0o666`` less the umask), as the
    graph engine's, the step logs' and the journal's have: ``mkstemp`` makes it 0600, so
    a memory's manifest and blobs and an export were private while the rest followed
    the umask. ``mode``: other permissions, set before a byte is written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{side_name(path.name)}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask() if mode is None else mode)
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write-then-rename: a reader sees the old file or the new one, never half.

    ``sync`` (fsync before the rename) makes the file survive a power cut too; without
    it the file survives the death of the process (the page cache keeps it), as the
    vector journal and LanceDB's own appends do.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The memory's manifest, checked field by field; None when there is none."""
    p = directory / MANIFEST
    if not p.exists():
        return None
    try:
        if p.stat().st_size > MAX_MANIFEST_BYTES:
            raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
        data = json.loads(p.read_bytes().decode("utf-8"))
    except OSError as e:
        limit = process_limit(e)
        if limit is not None:
            raise ProcessLimitError(f"cannot read the manifest {p}: {limit}") from None
        raise MemoryStoreError(
            f"the manifest {p} cannot be read ({e.strerror or e}); check its permissions and "
            "the disk, or restore it from backups/ or an export"
        ) from None
    except (ValueError, RecursionError) as e:
        raise MemoryStoreError(
            f"the manifest {p} is unreadable ({' '.join(str(e).split())}); restore it from a backup"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise MemoryStoreError(f"{directory} is not a kgagent memory (manifest format mismatch)")
    problem = manifest_problem(data)
    if problem:
        raise MemoryStoreError(
            f"the manifest {p} is damaged: {problem}; restore it from backups/ or an export"
        )
    return data


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def encoder_problem(enc: Any) -> str | None:
    """What is wrong with a manifest's ``encoder`` (None, or identity, dim, thresholds)."""
    if enc is None:
        return None
    if not isinstance(enc, dict):
        return f"encoder is {enc!r}, not an object"
    identity, dim, th = enc.get("identity"), enc.get("dim"), enc.get("thresholds")
    if not isinstance(identity, str) or not identity:
        return f"encoder.identity is {identity!r}, not a name"
    if not _count(dim) or not 0 < dim <= MAX_DIM:
        return f"encoder.dim is {dim!r}, not a whole number in 1..{MAX_DIM}"
    if (
        not isinstance(th, (list, tuple))
        or len(th) != 2
        or not all(_number(t) and -1.0 <= t <= 1.0 for t in th)
    ):
        return f"encoder.thresholds is {th!r}, not two cosines [θ_merge, θ_simi] in [-1, 1]"
    return None


def manifest_problem(data: dict[str, Any]) -> str | None:
    """The first field of a manifest that a hand edit or a bad archive got wrong, or None."""
    version = data.get("schema_version", 0)
    if not _count(version) or version < 0:
        return f"schema_version is {version!r}, not a whole number >= 0"
    engine = data.get("engine", "kuzu")
    if engine not in ("ladybug", "kuzu"):
        return f"engine is {engine!r}, not ladybug or kuzu"
    for key in ("created", "updated"):
        if key in data and not (_number(data[key]) and data[key] >= 0):
            return f"{key} is {data[key]!r}, not a time (seconds since 1970)"
    mid = data.get("memory_id")
    if "memory_id" in data and not (isinstance(mid, str) and _MEMORY_ID.fullmatch(mid)):
        return f"memory_id is {str(mid)[:80]!r}, not an id"
    return encoder_problem(data.get("encoder"))


def memory_identity(manifest: dict[str, Any]) -> str:
    """The manifest's memory id; for a memory from before ids, one derived from its manifest.

    The derived id depends only on when the memory was created and its encoder, so
    the same old memory (or an archive of it) is recognised again by a later merge.
    """
    mid = manifest.get("memory_id")
    if mid:
        return str(mid)
    basis = json.dumps(
        {"created": manifest.get("created"), "encoder": manifest.get("encoder")}, sort_keys=True
    )
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kgagent-memory:{basis}").hex


def merged_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's ``merged`` list (``[{memory, at}]``: the memories merged into it),
    its entries that name a memory id."""
    out = []
    for m in manifest.get("merged") or []:
        if isinstance(m, dict) and isinstance(m.get("memory"), str):
            if _MEMORY_ID.fullmatch(m["memory"]):
                at = m.get("at")
                out.append({"memory": m["memory"], "at": at if _number(at) else 0.0})
    return out


def write_manifest(directory: Path, data: dict[str, Any]) -> None:
    data = dict(data, format=FORMAT)
    atomic_write(directory / MANIFEST, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def png_bytes(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


class BlobStore:
    """Content-addressed PNGs: ``blobs/ab/<sha256>.png``; writing twice is free."""

    def __init__(self, directory: Path, space: Any = None) -> None:
        self.directory = directory
        self.space = space  # a SpaceGuard: refuse a new blob once the disk is nearly full

    def path(self, blob_id: str) -> Path:
        if len(blob_id) != 64 or any(c not in "0123456789abcdef" for c in blob_id):
            raise MemoryStoreError(f"not a blob id: {blob_id!r}")
        return self.directory / blob_id[:2] / f"{blob_id}.png"

    def put_bytes(self, data: bytes) -> str:
        blob_id = hashlib.sha256(data).hexdigest()
        p = self.path(blob_id)
        if not p.exists():
            if self.space is not None:
                self.space.check()
            # Not fsynced: a blob is written once, many per step (object crops), and a
            # killed process keeps it; a power cut can lose it like the step's vectors
            # (`memory check` reports a missing blob).
            atomic_write(p, data, sync=False)
        return blob_id

    def put_image(self, image: np.ndarray) -> str:
        return self.put_bytes(png_bytes(image))

    def get_bytes(self, blob_id: str) -> bytes:
        try:
            return self.path(blob_id).read_bytes()
        except FileNotFoundError:
            raise MemoryStoreError(f"blob {blob_id} is missing from {self.directory}") from None

    def get_image(self, blob_id: str) -> np.ndarray:
        with Image.open(io.BytesIO(self.get_bytes(blob_id))) as im:
            return np.asarray(im.convert("RGB"))

    def sha256(self, blob_id: str) -> str:
        """The hash of a blob's content, read in chunks (a blob may be large)."""
        h = hashlib.sha256()
        try:
            with self.path(blob_id).open("rb") as f:
                for chunk in iter(lambda: f.read(HASH_CHUNK), b""):
                    h.update(chunk)
        except FileNotFoundError:
            raise MemoryStoreError(f"blob {blob_id} is missing from {self.directory}") from None
        return h.hexdigest()

    def all_ids(self) -> list[str]:
        if not self.directory.exists():
            return []
        return sorted(p.stem for p in self.directory.glob("??/*.png"))
