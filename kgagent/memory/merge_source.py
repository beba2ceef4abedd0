"""Reading one merge source — a memory directory or an archive file — into plain rows.

A source is read whole before anything is written: every graph row through the
``archive_export_*`` named queries, every state's committed vector, and a blob
store to copy images from. What cannot be merged is refused here, in one line,
before the destination is touched:

* an archive is imported (checked the way ``kgagent memory import`` checks it) into
  the merge's work directory first, and read from there;
* a directory of an older schema is copied into the work directory and migrated
  there (the source itself is not changed); one of a newer schema is refused;
* a directory written by the other graph engine is refused with the way round it
  (export it and merge the archive);
* a directory holding tables that are not kgagent's (made by ``kgagent query --write``)
  is refused, naming them: the merged memory would lack them;
* a directory that an agent is writing right now is read through an export, which
  reads every table in one read-only transaction, so the rows agree with each other.
"""

from __future__ import annotations

import json
import shlex
import tarfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import migrations
from kgagent.memory.engine import engine_name
from kgagent.memory.files import (
    MANIFEST,
    BlobStore,
    memory_identity,
    merged_entries,
    read_manifest,
    write_manifest,
)
from kgagent.memory.lifecycle import BLOBS, GRAPH
from kgagent.memory.merge_place import DestinationGuard, MergeError, copy_memory
from kgagent.memory.store import Memory
from kgagent.memory.user_tables import user_tables
from kgagent.paths import shell_word

#: The graph rows a merge reads from a source, by the named query that reads them.
TABLES = {
    "states": "archive_export_state",
    "skills": "archive_export_skill",
    "objects": "archive_export_object",
    "clusters": "archive_export_skillcluster",
    "input_stats": "archive_export_inputstat",
    "skill_edges": "archive_export_skill_edge",
    "member_of": "archive_export_member_of",
    "has_object": "archive_export_has_object",
    "uses": "archive_export_uses",
}
#: The largest manifest read from an archive member.
MAX_MANIFEST_BYTES = 1 << 20


@dataclass
class Source:
    """Everything a merge needs of one source, read before anything is written."""

    label: str  # the path the user named
    memory_id: str  # its identity: what merged nodes record as their origin
    encoder: dict[str, Any] | None
    merged: list[str] = field(default_factory=list)  # memory ids merged into it before
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    blobs: BlobStore | None = None
    is_destination: bool = False  # the destination itself, named as a source


def merged_ids(manifest: dict[str, Any]) -> list[str]:
    """The memory ids a manifest says were merged into it (``merged``: [{memory, at}])."""
    return [m["memory"] for m in merged_entries(manifest)]


def read_source(path: Path, index: int, work: Path, dest: Path, cfg: Config, say: Any) -> Source:
    """Read the source at ``path`` (directory or archive), staging it in ``work`` if needed."""
    if path.is_file():
        return _from_archive(path, work / f"source-{index}", cfg, say)
    if not path.is_dir():
        raise MergeError(f"no memory or archive at {path}")
    manifest = read_manifest(path)
    if manifest is None:
        raise MergeError(f"{path} is not a kgagent memory (no manifest.json) nor an archive file")
    if _same_database(path, dest):
        return Source(
            str(path), memory_identity(manifest), manifest.get("encoder"), is_destination=True
        )
    engine = engine_name(cfg.memory.engine)
    if manifest.get("engine", "kuzu") != engine:
        raise MergeError(
            f"{path} was written by the {manifest.get('engine', 'kuzu')} engine and this merge runs "
            f"under {engine}; export it (`kgagent memory export`) and merge the archive instead"
        )
    version = int(manifest.get("schema_version", 0))
    latest = migrations.latest_version()
    if version > latest:
        raise MergeError(
            f"{path} has schema version {version}, newer than this kgagent knows ({latest}); "
            "upgrade kgagent to merge it"
        )
    if version < latest or not manifest.get("memory_id"):
        return _migrated_copy(path, manifest, work / f"source-{index}", cfg, say)
    guard = DestinationGuard(path)
    try:
        guard.__enter__()
    except MergeError:
        # An agent is writing it: read a consistent snapshot through an export.
        say(f"{path} is being written; reading it through an export")
        from kgagent.memory.archive import export_memory

        with Memory.open(path, cfg, read_only=True, create=False) as mem:
            refuse_user_tables(mem, str(path))

        archive = work / f"source-{index}.kgmem.tar.gz"
        export_memory(path, archive, cfg)
        return _from_archive(archive, work / f"source-{index}", cfg, say, label=str(path))
    try:  # no writer can start while the rows are read
        return _read(path, str(path), memory_identity(manifest), merged_ids(manifest), cfg)
    finally:
        guard.__exit__()


def _same_database(path: Path, dest: Path) -> bool:
    a, b = path / GRAPH, dest / GRAPH
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def _from_archive(
    archive: Path, staged: Path, cfg: Config, say: Any, *, label: str | None = None
) -> Source:
    """Import the archive into ``staged`` (every check of `memory import`), then read it."""
    from kgagent.memory.archive import import_memory

    say(f"staging archive {archive}")
    import_memory(archive, staged, _no_backup(cfg))
    manifest = _archive_manifest(archive)
    return _read(
        staged, label or str(archive), memory_identity(manifest), merged_ids(manifest), cfg
    )


def _archive_manifest(archive: Path) -> dict[str, Any]:
    """The manifest the archive carries (the source memory's own, with its id)."""
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            if m.name == MANIFEST and m.isreg() and m.size <= MAX_MANIFEST_BYTES:
                fh = tar.extractfile(m)
                data = json.loads(fh.read()) if fh is not None else None
                if isinstance(data, dict):
                    return data
    raise MergeError(f"{archive} carries no readable {MANIFEST}")


def _migrated_copy(
    path: Path, manifest: dict[str, Any], staged: Path, cfg: Config, say: Any
) -> Source:
    """An older memory migrated in a copy: the source stays as it was."""
    say(f"migrating a copy of {path} (schema version {manifest.get('schema_version', 0)})")
    with DestinationGuard(path) as guard:
        copy_memory(path, staged, guard)
    mid = memory_identity(manifest)
    copied = dict(manifest, memory_id=mid)
    copied.pop("format", None)
    write_manifest(staged, copied)
    Memory.open(staged, _no_backup(cfg), create=False).close()
    return _read(staged, str(path), mid, merged_ids(manifest), cfg)


def _no_backup(cfg: Config) -> Config:
    return replace(cfg, memory=replace(cfg.memory, backup_on_migrate=False))


def refuse_user_tables(mem: Memory, label: str) -> None:
    """Refuse a source holding tables that are not kgagent's: a merge carries kgagent's
    tables only, so theirs would be missing from the merged memory."""
    assert mem._db is not None
    theirs = user_tables(mem._db)
    if theirs:
        names = ", ".join(theirs)
        drops = "; ".join(
            f'`kgagent query --write "DROP TABLE {t}" --memory {shlex.quote(label)}`'
            for t in theirs
        )
        raise MergeError(
            f"{label} holds table(s) {names} that are not kgagent's (made by a `kgagent query "
            "--write`?); a merge carries kgagent's tables only and would leave them out: keep a "
            f"copy of {label} if they matter, drop them ({drops}) and merge again"
        )


def _read(path: Path, label: str, memory_id: str, merged: list[str], cfg: Config) -> Source:
    with Memory.open(path, cfg, read_only=True, create=False) as mem:
        refuse_user_tables(mem, label)
        missing = mem.consistency.get("missing_vectors", 0)
        if missing:
            raise MergeError(
                f"{label} has {missing} state(s) without their vector (`kgagent memory check "
                f"--memory {shell_word(label)}`): it was copied while an agent wrote it; merge "
                'the memory it was copied from (docs/reliability.md, "Backups")'
            )
        src = Source(label, memory_id, mem.encoder, merged, blobs=BlobStore(path / BLOBS))
        src.rows = {key: mem.run_named(q) for key, q in TABLES.items()}
        try:
            src.vectors = {r["id"]: mem.state_feature(r["id"]) for r in src.rows["states"]}
        except MemoryStoreError as e:  # a state committed after the rows were read
            raise MergeError(f"{label} changed while it was read ({e}); merge again") from None
    return src
