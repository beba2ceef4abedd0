"""Small durable files of a memory: the manifest and the content-addressed blobs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from kgagent.errors import MemoryStoreError

MANIFEST = "manifest.json"
FORMAT = "kgagent-memory"


def atomic_write(path: Path, data: bytes) -> None:
    """Write-then-rename with fsync: a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_manifest(directory: Path) -> dict[str, Any] | None:
    p = directory / MANIFEST
    if not p.exists():
        return None
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise MemoryStoreError(
            f"the manifest {p} is unreadable ({e}); restore it from a backup"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise MemoryStoreError(f"{directory} is not a kgagent memory (manifest format mismatch)")
    return data


def write_manifest(directory: Path, data: dict[str, Any]) -> None:
    data = dict(data, format=FORMAT)
    atomic_write(directory / MANIFEST, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def png_bytes(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


class BlobStore:
    """Content-addressed PNGs: ``blobs/ab/<sha256>.png``; writing twice is free."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, blob_id: str) -> Path:
        if len(blob_id) != 64 or any(c not in "0123456789abcdef" for c in blob_id):
            raise MemoryStoreError(f"not a blob id: {blob_id!r}")
        return self.directory / blob_id[:2] / f"{blob_id}.png"

    def put_bytes(self, data: bytes) -> str:
        blob_id = hashlib.sha256(data).hexdigest()
        p = self.path(blob_id)
        if not p.exists():
            atomic_write(p, data)
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

    def all_ids(self) -> list[str]:
        if not self.directory.exists():
            return []
        return sorted(p.stem for p in self.directory.glob("??/*.png"))
