"""Import an archive file as a memory (layout: :mod:`kgagent.memory.archive`).

The archive is verified first (:mod:`~kgagent.memory.archive_verify`). The new
memory is built in a temporary directory next to the target: the manifest, the
schema through the normal migrations, each table bulk-loaded with ``COPY <Table>
FROM $rows`` in one transaction, the vectors, the blobs. It is then opened like
any memory and checked, and only then renamed into place; with ``force`` the old
memory is kept aside until that rename succeeded. Any refusal leaves the target
exactly as it was.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import kgagent
from kgagent.config import Config
from kgagent.errors import ArchiveError, MemoryStoreError, QueryError
from kgagent.memory import migrations, queries, staging
from kgagent.memory.archive_format import (
    ARROW,
    META,
    VECTORS_MEMBER,
    Progress,
    blob_ids,
    load_query,
    noop,
    vector_schema,
)
from kgagent.memory.archive_rows import check_rows
from kgagent.memory.archive_verify import check_compatible, extract_verified
from kgagent.memory.diskspace import DiskSpaceError, nothing_done, reserve_bytes
from kgagent.memory.engine import GraphDB, GraphWriteError, engine_name
from kgagent.memory.files import (
    MANIFEST,
    ProcessLimitError,
    memory_identity,
    merged_entries,
    read_manifest,
    write_manifest,
)
from kgagent.memory.lifecycle import BLOBS, GRAPH, VECTORS
from kgagent.memory.limits import limit_in_message, process_limit
from kgagent.memory.lock import LOCK_FILE, HeldLock, lock_memory
from kgagent.memory.store import Memory
from kgagent.memory.vectors import TABLE as VECTOR_TABLE

#: Replace a memory with one ``renameat2(RENAME_EXCHANGE)`` where the system has it
#: (Linux); else (or when False) two renames with a journal (:mod:`~kgagent.memory.staging`).
SWAP_BY_EXCHANGE = True


class NothingImported(ArchiveError):
    """An import failed for a cause outside the archive (a full disk, a limit of this
    process) and wrote nothing to its destination; ``reason`` says why, for a caller that
    words it for its own command (a merge staging an archive)."""

    def __init__(self, target: Path, reason: str) -> None:
        super().__init__(f"the import wrote nothing to {target}: {reason}")
        self.reason = reason


#: What an import refused for space did, and what to do (after the figures, see
#: :class:`~kgagent.memory.diskspace.DiskSpaceError`).
NO_SPACE = nothing_done("import", "wrote nothing")

#: A memory directory's own entries, which an import replaces; anything else in it is
#: the user's and is kept (:func:`_carry_over`).
STORE = frozenset({GRAPH, VECTORS, BLOBS, MANIFEST, LOCK_FILE})


def import_memory(
    archive: str | Path,
    target: str | Path,
    config: Config | None = None,
    *,
    force: bool = False,
    expect_encoder: str | None = None,
    progress: Progress | None = None,
    placed: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Import ``archive`` as the memory at ``target``; returns a summary. ``placed`` is
    called once the new memory is in place (the CLI then has nothing left to undo).

    Refuses an existing memory at ``target`` unless ``force``; a non-empty
    directory that is not a kgagent memory is refused even with ``force``, and
    so is a memory that a process is writing (its writer's lock is held).
    """
    say = progress or noop
    cfg = config or Config()
    archive = Path(archive).expanduser()
    target = staging.follow_link(Path(target).expanduser(), ArchiveError)
    t0 = time.time()
    if target.exists() and not target.is_dir():
        raise ArchiveError(f"{target} exists and is not a directory")
    try:
        for line in staging.recover(target):  # a killed import's leftovers, first
            say(line)
    except OSError as e:
        raise ArchiveError(f"cannot tidy up next to {target}: {e.strerror or e}") from None
    replacing = _check_target(target, force)
    if not archive.is_file():
        raise ArchiveError(f"no archive file at {archive}")
    engine = engine_name(cfg.memory.engine)
    with _TargetGuard(target, replacing):
        try:
            work, owner = staging.make(target, "import")
        except OSError as e:
            raise ArchiveError(
                f"cannot write next to {target} ({e.strerror or e}); choose a writable place"
            ) from None
        try:
            staged = work / "archive"
            staged.mkdir()
            new = work / staging.NEW
            try:
                meta, manifest = extract_verified(archive, staged, say, reserve=reserve_bytes(cfg))
                version = check_compatible(meta, manifest, expect_encoder)
                _build(staged, new, meta, manifest, version, engine, cfg, say)
                summary = _verify_built(new, meta, cfg)
            except GraphWriteError as e:
                raise NothingImported(
                    target,
                    f"the graph engine could not write the new memory's files ({e.cause}); "
                    f"{e.fix}, then run the command again",
                ) from None
            except OSError as e:
                limit = process_limit(e)
                if limit is None:
                    raise
                raise NothingImported(target, limit) from None
            except DiskSpaceError as e:  # met on the work folder: say it of the target
                raise e.reworded(target, NO_SPACE) from None
            say("moving the imported memory into place")
            kept = _place(new, target, replacing, work)
            if placed is not None:
                placed()
            if kept:  # `runs list` shows the replaced memory's runs: say why
                say(f"kept what the replaced memory's directory held beside it: {', '.join(kept)}")
        finally:
            owner.release()
            staging.remove(work)
    summary.update(
        {
            "memory": str(target),
            "archive": str(archive),
            "engine": engine,
            "source_engine": meta.get("source_engine"),
            "replaced": replacing,
            "kept": kept,
            "seconds": round(time.time() - t0, 2),
        }
    )
    return summary


def _check_target(target: Path, force: bool) -> bool:
    """True when an existing memory will be replaced."""
    if not target.exists():
        return False
    if not any(target.iterdir()):
        return False
    try:
        is_memory = read_manifest(target) is not None
    except ProcessLimitError:
        raise
    except MemoryStoreError:
        is_memory = False
    if not is_memory:
        raise ArchiveError(
            f"{target} is not empty and is not a kgagent memory; import into an empty directory"
        )
    if not force:
        raise ArchiveError(
            f"{target} already holds a memory; pass --force to replace it "
            "(the old one is kept until the import has succeeded)"
        )
    return True


class _TargetGuard:
    """While a memory is replaced: its writer's lock, and the graph engines' own lock.

    The writer's lock (:mod:`~kgagent.memory.lock`) refuses the import while
    ``kgagent play`` writes the memory, and keeps a new writer out until the swap
    is done. The exclusive POSIX lock on ``graph.db`` is the one both engines take
    when they open it: it also refuses the import while any process has the
    database open read-write (or read-only under Kùzu).
    """

    def __init__(self, target: Path, replacing: bool) -> None:
        self.target = target
        self.replacing = replacing
        self._held: HeldLock | None = None
        self._fd: int | None = None

    def __enter__(self) -> _TargetGuard:
        if not self.replacing:
            return self
        self._held = lock_memory(self.target)
        graph = self.target / GRAPH
        if graph.is_file():
            try:
                fd = os.open(graph, os.O_RDWR)
            except OSError as e:
                self.__exit__()
                raise ArchiveError(f"cannot replace {self.target}: {e.strerror or e}") from None
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                self.__exit__()
                raise MemoryStoreError(
                    f"the memory at {self.target} is in use by another process that has it "
                    "open; stop that process (or wait for it to finish) and import again"
                ) from None
            self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._held is not None:
            self._held.release()
            self._held = None


def _build(
    staged: Path,
    new: Path,
    meta: dict[str, Any],
    manifest: dict[str, Any],
    version: int,
    engine: str,
    cfg: Config,
    say: Progress,
) -> None:
    """Write the new memory in ``new``: manifest, schema, tables, blobs, vectors."""
    new.mkdir()
    now = time.time()
    encoder = manifest.get("encoder")
    write_manifest(
        new,
        {
            "schema_version": version,
            "kgagent_version": kgagent.__version__,
            "engine": engine,
            "encoder": encoder,
            "created": manifest.get("created", now),
            "updated": now,
            "imported": {"at": now, "source_engine": meta.get("source_engine")},
            # the same memory, moved: merging the copy where the original went adds nothing
            # twice (docs/memory.md, "Provenance")
            "memory_id": memory_identity(manifest),
            "merged": merged_entries(manifest),
        },
    )
    tables: dict[str, Any] = meta["tables"]
    # Every table handed to the engine stays referenced until the engine is
    # closed, so closing never frees one. kuzu 0.11.3 aborted once in CI inside
    # Connection.close() right after these COPYs, on a machine whose disk was
    # nearly full (not reproduced in 100 imports alone). A write failing for lack
    # of space is one explanation; the binding dropping the last reference to a
    # scanned table outside the interpreter lock is another, and this rules it out.
    loaded: list[pa.Table] = []
    db = GraphDB(new / GRAPH, engine)
    try:
        migrations.apply(db, migrations.available()[:version])
        have = {
            (str(r["name"]), str(r["type"]).lower())
            for r in db.execute(queries.get("catalog_tables").text)
        }
        have.discard((migrations.BOOKKEEPING, "node"))
        want = {(n, t["kind"]) for n, t in tables.items()}
        if have != want:
            odd = sorted(have ^ want)[0][0]
            raise ArchiveError(
                f"the archive's tables do not match schema version {version} (table {odd}); refusing"
            )
        with db.transaction():
            state_revs, blob_refs = _load_tables(db, staged, tables, loaded, say)
    finally:
        db.close()
        loaded.clear()
    blobs = staged / "blobs"
    missing = sorted(b for b in blob_refs if not (blobs / b[:2] / f"{b}.png").is_file())
    if missing:
        raise ArchiveError(
            f"the archive lacks blob {missing[0]} that the graph refers to; refusing"
        )
    if blobs.is_dir():
        os.replace(blobs, new / BLOBS)
    _load_vectors(staged / VECTORS_MEMBER, new, encoder, state_revs)
    say(f"vectors: {len(state_revs)} rows")


def _load_tables(
    db: GraphDB, staged: Path, tables: dict[str, Any], loaded: list[pa.Table], say: Progress
) -> tuple[dict[str, int], set[str]]:
    """Bulk-load every table (nodes first); returns the states' revisions and the blob ids named."""
    state_revs: dict[str, int] = {}
    blob_refs: set[str] = set()
    order = sorted(tables, key=lambda n: (tables[n]["kind"] != "node", n))
    for name in order:
        t = tables[name]
        tab = _read_parquet(staged / t["member"], t["member"])
        loaded.append(tab)
        _check_table(name, t, tab)
        check_rows(name, tab)
        if name == "State":
            state_revs = dict(
                zip(tab.column("id").to_pylist(), tab.column("feature_rev").to_pylist())
            )
        blob_refs |= blob_ids(name, tab)
        if tab.num_rows:
            q = load_query(name)
            if q not in queries.load_all():
                raise ArchiveError(f"no named query {q} to load table {name}")
            try:
                db.execute(queries.get(q).text, {"rows": tab})
            except QueryError as e:
                raise ArchiveError(f"table {name} does not load: {e}") from None
        say(f"graph: {name} {tab.num_rows} rows")
    return state_revs, blob_refs


def _read_parquet(path: Path, member: str) -> pa.Table:
    """A staged Parquet member, or a one-line refusal."""
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise ArchiveError(
            f"{member} is not readable Parquet ({' '.join(str(e).split())})"
        ) from None


def _check_table(name: str, t: dict[str, Any], tab: pa.Table) -> None:
    """Columns, types and row count as ``archive.json`` says; unique node keys; whole edges."""
    cols, types = t.get("columns"), t.get("types")
    if tab.column_names != cols or not isinstance(types, list) or len(types) != len(cols):
        raise ArchiveError(f"table {name} has columns {tab.column_names}, {META} says {cols}")
    if tab.num_rows != t.get("rows"):
        raise ArchiveError(f"table {name} has {tab.num_rows} rows, {META} says {t.get('rows')}")
    for c, ty in zip(cols, types):
        want = ARROW.get(ty)
        if want is None or tab.schema.field(c).type != want:
            raise ArchiveError(
                f"column {name}.{c} has type {tab.schema.field(c).type}, expected {ty}"
            )
    if t["kind"] == "node" and tab.num_rows:
        key = tab.column(cols[0])
        if key.null_count or len(set(key.to_pylist())) != tab.num_rows:
            raise ArchiveError(f"table {name} has empty or duplicate keys; refusing")
    if t["kind"] == "rel" and tab.num_rows:
        if tab.column("src").null_count or tab.column("dst").null_count:
            raise ArchiveError(f"rel table {name} has edges without an end; refusing")


def _load_vectors(path: Path, new: Path, encoder: dict | None, revs: dict[str, int]) -> None:
    """The new memory's LanceDB table: exactly one committed vector per state."""
    tab = _read_parquet(path, VECTORS_MEMBER)
    if encoder is None:
        if revs or tab.num_rows:
            raise ArchiveError("the archive has states or vectors but no encoder; refusing")
        return
    dim = int(encoder["dim"])
    if tab.schema != vector_schema(dim):
        raise ArchiveError(f"{VECTORS_MEMBER} does not hold {dim}-d vectors as the encoder says")
    ids = tab.column("id").to_pylist()
    rv = tab.column("rev").to_pylist()
    if len(set(ids)) != len(ids) or dict(zip(ids, rv)) != revs:
        raise ArchiveError(
            "the archive's vectors do not match its states (each state needs exactly its "
            "committed vector); refusing"
        )
    vecs = tab.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    if not np.all(np.isfinite(vecs)):
        raise ArchiveError("the archive's vectors hold non-finite numbers; refusing")
    import lancedb

    try:
        db = lancedb.connect(str(new / VECTORS))
        db.create_table(VECTOR_TABLE, data=tab, schema=vector_schema(dim))
    except (OSError, RuntimeError, ValueError) as e:
        why = " ".join(str(e).split())
        limit = limit_in_message(why)
        raise ArchiveError(
            f"LanceDB could not write the new memory's vectors ({limit or why[:300]}); "
            "the import wrote nothing to its destination"
        ) from None


def _verify_built(new: Path, meta: dict[str, Any], cfg: Config) -> dict[str, Any]:
    """Open the new memory the normal way (migrating an older schema) and check it."""
    c = replace(cfg, memory=replace(cfg.memory, backup_on_migrate=False))
    mem = Memory.open(new, c, read_only=False, create=False)
    try:
        bad = {k: v for k, v in mem.consistency.items() if v}
        if bad:
            raise ArchiveError(f"the imported memory is inconsistent ({bad}); refusing")
        stats = mem.stats().as_row()
        rows = {n: t["rows"] for n, t in meta["tables"].items()}
        if rows.get("State", 0) != stats["nodes"]:
            raise ArchiveError("the imported memory lost states; refusing")
        summary = {"schema_version": mem.manifest.get("schema_version")}
        summary["encoder"] = (mem.encoder or {}).get("identity")
        summary.update(stats)
        summary["vectors"] = len(mem.vectors) if mem.vectors is not None else 0
        summary["blobs"] = len(mem.blobs.all_ids())
        return summary
    finally:
        mem.close()


def _place(new: Path, target: Path, replacing: bool, work: Path) -> list[str]:
    """Move the new memory into place; a replaced one ends up in ``work`` (then deleted).
    The names carried over from the replaced memory's directory (:func:`_carry_over`)."""
    if not replacing:
        try:
            os.rename(new, target)  # onto nothing, or onto an empty directory
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise ArchiveError(
                    f"a memory appeared at {target} while importing; import again with --force "
                    "to replace it"
                ) from None
            raise ArchiveError(f"cannot move the memory to {target}: {e.strerror or e}") from None
        return []
    kept = _carry_over(target, new)
    if SWAP_BY_EXCHANGE and staging.exchange(new, target):
        return kept  # the old memory is now at ``new``, deleted with the work directory
    staging.swap(new, target, work)
    return kept


def _carry_over(old: Path, new: Path) -> list[str]:
    """What the user keeps in a memory's directory beyond the store (step logs in
    ``runs/``, migration ``backups/``, their own files) goes with the replaced memory's
    directory into the new one: linked where it can be, else copied, before the swap,
    so a kill at any moment loses nothing. The names carried, ``runs/`` for a folder."""
    kept: list[str] = []
    for entry in sorted(old.iterdir()):
        if entry.name in STORE or entry.name.startswith(GRAPH + "."):
            continue  # the store's own (a WAL of the old database is not the new one's)
        dest = new / entry.name
        if dest.exists() or dest.is_symlink():
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, dest, copy_function=staging.link_or_copy, symlinks=True)
            else:
                staging.link_or_copy(entry, dest)
        except OSError as e:
            raise ArchiveError(
                f"cannot keep {entry} in the replaced memory ({e.strerror or e}); "
                "the old memory is unchanged"
            ) from None
        is_dir = entry.is_dir() and not entry.is_symlink()
        kept.append(f"{entry.name}/" if is_dir else entry.name)
    return kept
