"""What a memory holds and whether it is sound: Table 2's statistics, ``info``, ``check``."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from kgagent.errors import MemoryStoreError
from kgagent.memory.core import MemoryCore
from kgagent.memory.engine import engine_version
from kgagent.memory.files import memory_identity
from kgagent.memory.lock import writer_holder
from kgagent.memory.unreferenced import BLOB_ID, blob_bytes
from kgagent.paths import read_refused
from kgagent.records import GraphStats

#: Status of a failed check: ``problem`` needs a person; ``repairable`` goes away with
#: ``kgagent memory check --repair`` (most on any read-write open already; unreferenced
#: blobs only with the repair).
PROBLEM = "problem"
REPAIRABLE = "repairable"
#: A ``repairable`` count while a live process writes the memory: that process's own
#: writes that its graph has not committed yet (or a reader does not see yet), not a
#: crash's leftovers. Its read-write open removed those.
IN_FLIGHT = "in flight"
#: ``disk_mib`` and ``apparent_mib`` of ``info``: mebibytes, as ``du -m`` and ``du -h`` count
MIB = 1 << 20


def _row(check: str, count: int, bad: str, detail: str) -> dict[str, Any]:
    return {"check": check, "status": "ok" if count == 0 else bad, "count": count, "detail": detail}


def _live_writer(rows: list[dict[str, Any]], holder: str) -> list[dict[str, Any]]:
    """``rows`` with their repairable counts marked as the live writer's own."""
    return [
        {
            **r,
            "status": IN_FLIGHT,
            "detail": f"writes in flight of the process{holder} writing this memory now",
        }
        if r["status"] == REPAIRABLE
        else r
        for r in rows
    ]


class Report(MemoryCore):
    """Read-only summaries of the whole memory."""

    def stats(self) -> GraphStats:
        """The columns of the papers' Table 2 (library size, skills, nodes, edges, ...)."""
        r = self._q("graph_stats")[0]
        return GraphStats(**{k: int(v or 0) for k, v in r.items()})

    def info(self) -> dict[str, Any]:
        """What `kgagent memory info` shows."""
        out: dict[str, Any] = {
            "path": str(self.path),
            # a memory from before ids: the id a merge, an import and the next writer give it
            "memory_id": (
                memory_identity(self.manifest)
                if "memory_id" in self.manifest or "created" in self.manifest
                else None
            ),
            "engine": f"{self.engine} {engine_version(self.engine)}",
            "schema_version": self.manifest.get("schema_version"),
            "kgagent_version": self.manifest.get("kgagent_version"),
            "encoder": (self.encoder or {}).get("identity"),
            "dim": (self.encoder or {}).get("dim"),
            "theta_merge": self.theta_merge,
            "theta_simi": self.theta_simi,
            "created": _iso(self.manifest.get("created")),
            "updated": _iso(self.manifest.get("updated")),
        }
        out.update(self.stats().as_row())
        out["vector_rows"] = self.vectors.row_count() if self.vectors is not None else 0
        out["blobs"] = len(self.blobs.all_ids())
        disk, apparent = folder_size(self.path)
        out["disk_mib"] = round(disk / MIB, 2)
        out["apparent_mib"] = round(apparent / MIB, 2)
        for k, v in self.consistency.items():
            out[f"repair_{k}"] = v
        holder = writer_holder(self.path) if self.read_only else None
        # who writes it now: the repair_* counts are then that process's writes in flight
        out["writer"] = None if holder is None else (holder.strip(" ()") or "a live process")
        return out

    def check(self) -> list[dict[str, Any]]:
        """The rows of `kgagent memory check`: {check, status, count, detail} per check.

        ``status`` is ``ok``, ``repairable`` or ``problem``. Meant for a memory opened
        read-only, which repairs nothing: a read-write open has already removed what
        its repairable rows count (they then say what that open found). While another
        process writes the memory (a ``kgagent play`` beside this check), what would be
        repairable is that process's writes in flight: ``in flight``.
        """
        c = self.consistency
        n_states = self.stats().nodes
        rows = [
            _row(
                "states_without_vector",
                int(c.get("missing_vectors", 0)) if self.vectors is not None else n_states,
                PROBLEM,
                "State nodes whose committed feature revision has no vector row",
            ),
            _row(
                "orphan_vector_rows",
                int(c.get("orphan_rows", 0)),
                REPAIRABLE,
                "vector rows of states the graph never committed (removed on the next read-write open)",
            ),
            _row(
                "uncommitted_revisions",
                int(c.get("uncommitted_revisions", 0)),
                REPAIRABLE,
                "vector revisions newer than the graph committed (removed on the next read-write open)",
            ),
            _row(
                "torn_journal_tail",
                int(c.get("journal_torn_bytes", 0)),
                REPAIRABLE,
                "bytes of a half-written vector journal record (a crash mid-write; never committed; "
                "cut off on the next read-write open)",
            ),
            _row(
                "dangling_skill_edges",
                len(self._q("check_dangling_skill_edges")),
                PROBLEM,
                "skill edges of a missing or pruned skill",
            ),
        ]
        require_readable_blobs(self.blobs.directory)
        refs = {r["blob"] for r in self._q("check_blob_refs")}
        have = set(self.blobs.all_ids())
        rows.append(
            _row(
                "missing_blobs",
                len(refs - have),
                PROBLEM,
                "thumbnails/crops the graph names but blobs/ lacks",
            )
        )
        damaged = sum(self._blob_hash(b) != b for b in sorted(have))
        rows.append(
            _row(
                "damaged_blobs",
                damaged,
                PROBLEM,
                "blobs whose content does not hash to their name",
            )
        )
        loose = sorted(b for b in have - refs if BLOB_ID.fullmatch(b))
        rows.append(
            _row(
                "unreferenced_blobs",
                len(loose),
                REPAIRABLE,
                "blobs no graph row names"
                + (f" ({blob_bytes(self, loose)} bytes)" if loose else "")
                + ": crops and thumbnails of deleted rows, or of a write that never committed "
                "(removed by `kgagent memory check --repair`; left out of an export)",
            )
        )
        holder = writer_holder(self.path) if self.read_only else None
        return rows if holder is None else _live_writer(rows, holder)

    def _blob_hash(self, blob_id: str) -> str:
        """A blob's hash; a blob this user may not read is one line naming it and the fix,
        not a bare ``Permission denied: PATH`` (nor a damaged blob: its content is unknown)."""
        try:
            return self.blobs.sha256(blob_id)
        except OSError as e:
            path = self.blobs.path(blob_id)
            raise MemoryStoreError(_unreadable_blobs(self.blobs.directory, path, e)) from None


def require_readable_blobs(blobs: Path) -> None:
    """A one-line error when ``blobs/`` or one of its two-digit folders cannot be listed.

    The blob listing (a glob) passes over such a folder without a word, so every blob in
    it would be counted missing, and what missing blobs call for (restoring them from a
    backup) is not the fix: the blobs are there, this user may not read them."""
    try:
        with os.scandir(blobs) as entries:
            folders = sorted(e.path for e in entries if e.is_dir())
    except FileNotFoundError:
        return  # a memory without blobs yet
    except OSError as e:
        raise MemoryStoreError(_unreadable_blobs(blobs, blobs, e)) from None
    for folder in folders:
        try:
            with os.scandir(folder):
                pass
        except OSError as e:
            raise MemoryStoreError(_unreadable_blobs(blobs, Path(folder), e)) from None


def _unreadable_blobs(blobs: Path, place: Path, e: OSError) -> str:
    """The line for blobs that cannot be read: ``place`` (``blobs/``, a folder of it or
    one blob), why, and the fix for that cause; never a repair, which has nothing to do."""
    why, fix = read_refused(e, blobs, recursive=True)
    what = "the blob" if place.suffix == ".png" else "the blobs folder"
    return (
        f"{what} {place} cannot be read ({why}), so whether blobs are missing or damaged "
        f"cannot be checked; {fix}; nothing was changed"
    )


def folder_size(path: Path) -> tuple[int, int]:
    """(bytes on disk, apparent bytes) of everything under ``path``, ``path`` included.

    Both as ``du -s`` counts them: on disk, the blocks the file system allocated
    (``st_blocks``, 512 bytes each); apparent (``du -s --apparent-size``), the lengths;
    of files, folders and links alike, a file with several hard links once, links not
    followed. A memory's thousands of small blobs each take at least a whole block (4 KiB
    on most file systems), so on disk is well above apparent. A file removed while it is
    counted (a writer runs) counts nothing.
    """
    seen: set[tuple[int, int]] = set()
    disk = apparent = 0

    def count(st: os.stat_result) -> None:
        nonlocal disk, apparent
        if (st.st_dev, st.st_ino) in seen:
            return
        seen.add((st.st_dev, st.st_ino))
        disk += st.st_blocks * 512
        apparent += st.st_size

    try:
        count(path.stat())  # the memory itself may be a link to its folder
    except OSError:
        return 0, 0
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                count(os.lstat(os.path.join(folder, name)))
            except OSError:
                continue
    return disk, apparent


def _iso(t: float | None) -> str | None:
    """``t`` in this machine's time zone with its offset (ISO 8601): comparable between
    machines, as the step logs' ``started``."""
    if not t:
        return None
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")
