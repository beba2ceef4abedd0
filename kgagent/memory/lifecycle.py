"""Opening and closing a memory: the manifest, the engine, migrations, the encoder.

Every refusal happens before anything on disk is written: the manifest (engine,
schema version, encoder, thresholds; :mod:`~kgagent.memory.manifest_checks`) is
checked before the writer's lock is taken and the database opened, and a failed open
closes the database without rewriting the manifest. A read-write open holds the writer's lock (:mod:`~kgagent.memory.lock`)
until ``close``; it first finishes an import that a killed process left half
swapped (:mod:`~kgagent.memory.staging`). A new memory is created whole, in a
staging directory renamed into place. See docs/memory.md (schema migrations, engines).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypeVar

import kgagent
from kgagent.config import Config
from kgagent.errors import EncoderMismatchError, MemoryStoreError, SchemaVersionError
from kgagent.memory import migrations, staging
from kgagent.memory.core import EncoderSpec, MemoryCore
from kgagent.memory.diskspace import commit_timeout, reserve_bytes
from kgagent.memory.engine import GraphDB, engine_name, log_crash
from kgagent.memory.files import (
    MANIFEST,
    BlobStore,
    memory_identity,
    read_manifest,
    write_manifest,
)
from kgagent.memory.limits import ensure_open_files, process_limit
from kgagent.memory.lock import LOCK_FILE, HeldLock, lock_memory, writer_holder
from kgagent.memory.manifest_checks import (
    built_from,
    encoder_dict,
    encoder_fix,
    engine_mismatch,
    newer_writer,
    same_encoder,
    theta_clash,
    thetas,
)
from kgagent.memory.vectors import VectorStore
from kgagent.paths import shell_word

GRAPH = "graph.db"
VECTORS = "vectors"
BLOBS = "blobs"

_M = TypeVar("_M", bound="Lifecycle")


#: Files a creator puts in a memory's directory before its manifest is in place (the
#: writer's lock, the manifest on its way): a directory holding only these is no one
#: else's.
_CREATORS = re.compile(rf"{re.escape(LOCK_FILE)}|\.{re.escape(MANIFEST)}\..*\.tmp")


def _foreign(path: Path) -> bool:
    """The directory ``path`` holds files that are not a creator's, and no manifest.

    List first, then look for the manifest: a creator writes its manifest before
    anything else, so files listed before a manifest is found were there without one.
    The other order races a creator that writes both between the two looks, and calls
    its new memory foreign."""
    other = _other_files(path)
    return read_manifest(path) is None and other


def _other_files(path: Path) -> bool:
    """The directory ``path`` holds a file that no memory's creator writes."""
    return any(not _CREATORS.fullmatch(p.name) for p in path.iterdir())


def no_memory(path: Path) -> str:
    """Why there is no memory to read at ``path`` (which has no manifest), and what to do:
    ``kgagent play`` creates one at a missing path or an empty directory, and refuses a
    directory of other files, so only those get told to run it there."""
    try:
        other = path.is_dir() and _other_files(path)
    except OSError:  # cannot be listed: play would tell why
        other = False
    if other:
        return (
            f"{path} holds other files and is not a kgagent memory; give the folder of a "
            "memory (`kgagent play --memory NEW_FOLDER` creates one)"
        )
    return (
        f"no kgagent memory at {path}; run `kgagent play --memory {shell_word(path)}` to create one"
    )


def _create_by_rename(path: Path, manifest: dict[str, Any]) -> HeldLock | None:
    """Build the memory in a staging directory and rename it to ``path``; None when
    another process created ``path`` first."""
    try:
        work, owner = staging.make(path, "create")
    except OSError as e:
        fix = process_limit(e) or "choose a writable directory"
        raise MemoryStoreError(
            f"cannot create a memory at {path}: {e.strerror or e}; {fix}"
        ) from None
    try:
        held = lock_memory(work)
        write_manifest(work, manifest)
        try:
            os.rename(work, path)  # onto nothing (or an empty directory made meanwhile)
        except OSError as e:
            held.release()
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY):
                return None
            raise MemoryStoreError(f"cannot create a memory at {path}: {e.strerror or e}") from None
        (path / staging.OWNER).unlink(missing_ok=True)
        return held
    finally:
        owner.release()
        shutil.rmtree(work, ignore_errors=True)


def _probe_writable(path: Path) -> None:
    """Refuse a read-write open of a memory whose directories cannot take new files
    (a read-only mount, ``chattr +i``), before a step half-writes into it: the memory's
    folder, ``vectors/``, ``blobs/`` and each of its two-digit folders (a step writes a
    new thumbnail or crop into one of them)."""
    try:
        blob_folders = sorted(d for d in (path / BLOBS).glob("??") if d.is_dir())
    except OSError:  # blobs/ unreadable: a read-write open says so when it lists them
        blob_folders = []
    for d in (path, path / VECTORS, path / BLOBS, *blob_folders):
        if not d.is_dir():
            continue
        try:
            fd, probe = tempfile.mkstemp(dir=d, prefix=".probe-", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            limit = process_limit(e)  # not the directory's fault: say which limit
            fix = limit or "make it writable, or open it read-only"
            raise MemoryStoreError(
                f"the memory at {path} cannot be written ({d}: {e.strerror or e}); {fix}"
            ) from None


def _remove_stale_temp_files(path: Path) -> None:
    """Half-written manifest and blob files of a killed writer (we hold the writer's lock)."""
    for pattern in (f".{MANIFEST}.*.tmp", f"{BLOBS}/??/.*.tmp", ".probe-*.tmp"):
        for p in path.glob(pattern):
            p.unlink(missing_ok=True)


class Lifecycle(MemoryCore):
    """``Memory.open`` / ``close``: everything between a path and a usable memory."""

    def __init__(self) -> None:  # use Memory.open
        raise TypeError("use Memory.open(path, config, encoder=...)")

    @classmethod
    def open(
        cls: type[_M],
        path: str | Path,
        config: Config | None = None,
        *,
        encoder: EncoderSpec | None = None,
        read_only: bool = False,
        create: bool = True,
    ) -> _M:
        """Open (or create) the memory at ``path``; a :class:`kgagent.memory.Memory`."""
        self = object.__new__(cls)
        self._init(Path(path).expanduser(), config or Config(), encoder, read_only, create)
        return self

    def _init(
        self, path: Path, config: Config, encoder: EncoderSpec | None, read_only: bool, create: bool
    ) -> None:
        self.path = path
        self.config = config
        self.read_only = read_only
        self._db = None
        self._lock = None
        #: what this open did or found that the user should know, a line each (a migration
        #: and the backup it kept; a memory last written by a newer kgagent)
        self.notes: list[str] = []
        self._migrated: str | None = None
        ensure_open_files(writing=not read_only)  # before anything is opened or written
        if path.exists() and not path.is_dir():
            raise MemoryStoreError(
                f"{path} is a file, not a memory directory; give a directory with --memory"
            )
        if read_only:
            if staging.interrupted_swap(path) is not None:
                raise MemoryStoreError(
                    f"an import into {path} was interrupted; finish it with "
                    f"`kgagent memory check --repair --memory {shell_word(path)}` (or any command that writes)"
                )
        else:
            staging.recover(path)
        manifest = read_manifest(path) if path.is_dir() else None
        if manifest is None:
            staging.follow_link(path, MemoryStoreError)  # a link to nothing: say so
            if read_only or not create:
                raise MemoryStoreError(no_memory(path))
            clash = theta_clash(config, encoder_dict(encoder))  # before anything is created
            if clash:
                raise MemoryStoreError(clash)
            self._lock = self._create(path, config)
            manifest = read_manifest(path)
            if manifest is None:
                self._release_lock()
                raise MemoryStoreError(f"{path} lost its manifest while it was being created")
        try:
            self._open_checked(manifest, encoder)
        except BaseException:
            # A failed open must leave the memory as it was: close the database
            # without close()'s manifest update, and let the next writer in.
            db, self._db = self._db, None
            if db is not None:
                db.close()
            self._release_lock()
            raise

    def _create(self, path: Path, config: Config) -> HeldLock:
        """A new, empty memory at ``path``, whole, with the writer's lock held by us.

        A path that does not exist gets a memory built in a staging directory and
        renamed into place; an existing empty directory (perhaps a mount point) gets
        its manifest in place, under the lock. Either way, of two processes racing
        to create one memory, the loser finds it locked by the winner ("in use"),
        never a half-made directory.
        """
        if staging.swap_in_progress(path):
            raise MemoryStoreError(f"an import into {path} is replacing it; try again when it ends")
        now = time.time()
        manifest = {
            "schema_version": 0,
            "memory_id": uuid.uuid4().hex,
            "kgagent_version": kgagent.__version__,
            "engine": engine_name(config.memory.engine),
            "encoder": None,
            "created": now,
            "updated": now,
        }
        if not path.exists():
            held = _create_by_rename(path, manifest)
            if held is not None:
                return held
        if not path.is_dir():
            raise MemoryStoreError(f"{path} is a file, not a memory directory")

        if _foreign(path):
            raise MemoryStoreError(
                f"{path} exists and is not a kgagent memory; choose an empty directory"
            )
        held = lock_memory(path)  # another creator holds it: "in use"
        try:
            if _foreign(path):
                raise MemoryStoreError(
                    f"{path} exists and is not a kgagent memory; choose an empty directory"
                )
            if read_manifest(path) is None:
                write_manifest(path, manifest)
        except BaseException:
            held.release()
            raise
        return held

    def _open_checked(self, manifest: dict[str, Any], encoder: EncoderSpec | None) -> None:
        """Every check that needs only the manifest, then the lock, then the database."""
        path, config, read_only = self.path, self.config, self.read_only
        self._check_manifest(manifest, encoder)
        if not read_only and self._lock is None:
            self._lock = lock_memory(path)
            # Another writer may have changed the manifest before we held the lock.
            manifest = read_manifest(path) or manifest
            self._check_manifest(manifest, encoder)
            _remove_stale_temp_files(path)
            _probe_writable(path)
        latest = migrations.latest_version()
        recorded = int(manifest.get("schema_version", 0))
        if read_only and not recorded and not (path / GRAPH).exists():
            raise MemoryStoreError(
                f"the memory at {path} has no graph database yet (its creation did not finish); "
                f"open it once to write (`kgagent memory info --migrate --memory {shell_word(path)}`) or "
                "delete it"
            )
        backup = None
        if recorded and recorded < latest and not read_only and config.memory.backup_on_migrate:
            backup = self._backup(f"schema-v{recorded}")
        # a log left by a writer that did not close: a damaged one may crash the engine
        crash = None  # (beside a live writer the log is its own, in use)
        wal = path / f"{GRAPH}.wal"
        left = wal.is_file() and wal.stat().st_size > 0  # no log: no lock probe either
        if left and (not read_only or writer_holder(path) is None):
            crash = log_crash(path / GRAPH, self.engine)
        if crash is not None:
            raise MemoryStoreError(
                f"the {self.engine} engine crashes ({crash}) reading the write-ahead log "
                f"{path / GRAPH}.wal, left by a writer that did not close: `kgagent memory "
                f"check --repair --memory {shell_word(path)}` keeps a copy of it and recovers what it can"
            )
        self._db = GraphDB(
            path / GRAPH,
            self.engine,
            read_only=read_only,
            threads=config.memory.query_threads,
            reserve=reserve_bytes(config),
            commit_timeout=commit_timeout(config),
        )
        self._finish_open(encoder, latest)
        if self._migrated is not None:
            kept = f"; the memory as it was is kept in {backup}" if backup else ""
            self.notes.append(f"{self._migrated}{kept}")
        newer = newer_writer(manifest.get("kgagent_version"))
        if newer and not read_only:
            self.notes.append(
                f"{path} was last written by kgagent {newer}, newer than this one "
                f"({kgagent.__version__}); it has the schema this one knows, and its manifest "
                f"will name {kgagent.__version__} as its last writer"
            )

    def _check_manifest(self, manifest: dict[str, Any], encoder: EncoderSpec | None) -> None:
        """Engine, schema version, encoder and thresholds: refused before anything is written."""
        self.manifest = manifest
        self.engine = manifest.get("engine", "kuzu")
        wanted = engine_name(self.config.memory.engine)
        if wanted != self.engine:
            raise MemoryStoreError(engine_mismatch(self.path, self.engine, wanted))
        latest = migrations.latest_version()
        recorded = int(manifest.get("schema_version", 0))
        if recorded > latest:
            raise SchemaVersionError(
                f"this memory has schema version {recorded}, newer than this kgagent knows ({latest}); "
                "upgrade kgagent to open it"
            )
        self._encoder_refusal(encoder)
        self.encoder = manifest.get("encoder") or encoder_dict(encoder)
        self._set_thresholds()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _finish_open(self, encoder: EncoderSpec | None, latest: int) -> None:
        todo = migrations.pending(self._db)
        if todo:
            if self.read_only:
                raise SchemaVersionError(
                    f"this memory needs schema migration to version {latest}; open it once "
                    "read-write (e.g. `kgagent memory info --migrate`) first"
                )
            migrations.apply(self._db, todo)
            old = int(self.manifest.get("schema_version", 0))
            if old:  # not a memory being made (version 0: its tables are new)
                self._migrated = f"migrated {self.path} from schema version {old} to {latest}"
        if not self.read_only and (
            self.manifest.get("schema_version") != latest or "memory_id" not in self.manifest
        ):
            self.manifest["schema_version"] = latest
            # The memory's identity: merged nodes record it as their origin (docs/memory.md).
            # A memory from before ids gets the one a merge or an import already knows it by
            # (derived from its creation time: a manifest without one gets a new id).
            if "memory_id" not in self.manifest:
                created = "created" in self.manifest
                mid = memory_identity(self.manifest) if created else uuid.uuid4().hex
                self.manifest["memory_id"] = mid
            write_manifest(self.path, self.manifest)
        self.encoder = self._check_encoder(encoder)
        self._set_thresholds()

        self.blobs = BlobStore(self.path / BLOBS, space=self._db.space)
        self._consistency = {}
        self._vectors_loaded = False
        self.vectors = None
        if self.encoder is not None:
            self.vectors = VectorStore(
                self.path / VECTORS,
                int(self.encoder["dim"]),
                read_only=self.read_only,
                flush_rows=self.config.memory.vector_flush_rows,
                compact_every=self.config.memory.compact_every,
            )
            if not self.read_only:  # repair crash leftovers now; readers load on first use
                self._load_vectors()
                lost = int(self._consistency.get("missing_vectors", 0))
                if lost:
                    self.notes.append(lost_vectors(self.path, lost))
        # The parts' caches (skills.py, objects.py), then the id sequences from the counts.
        try:
            self._load_skill_cache()
            self._load_object_cache()
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
            raise MemoryStoreError(
                f"the memory at {self.path} holds a row this kgagent cannot read "
                f"({type(e).__name__}: {' '.join(str(e).split())[:200]}); was it edited with "
                "`kgagent query --write`? Restore it from backups/ or an export"
            ) from None
        counts = self.stats() if not self.read_only else None
        self._seq = (
            {
                "s": counts.nodes,
                "k": counts.skills_augmented,
                "o": counts.objects,
                "c": counts.clusters,
            }
            if counts
            else {}
        )
        self._db.watching = True  # from here on, every engine call of a writer is watched

    def _encoder_refusal(self, encoder: EncoderSpec | None) -> None:
        """Refuse features of another encoder (or any, read-only, before one is recorded)."""
        recorded = self.manifest.get("encoder")
        if encoder is None:
            return
        if recorded is None:
            if self.read_only:
                raise MemoryStoreError(
                    "this memory has no encoder yet; it cannot take features read-only"
                )
        elif not same_encoder(recorded, encoder):
            clip_model = self.config.perception.clip_model
            raise EncoderMismatchError(
                f"this memory was built with encoder {recorded['identity']} ({recorded['dim']}-d)"
                f"{built_from(recorded)}; features from {encoder.identity} ({encoder.dim}-d) "
                f"cannot join it: {encoder_fix(recorded, encoder, clip_model)}, or start a new memory with "
                "--memory"
            )

    def _check_encoder(self, encoder: EncoderSpec | None) -> dict[str, Any] | None:
        """The manifest's encoder; the first one offered is recorded, another is refused."""
        self._encoder_refusal(encoder)
        recorded = self.manifest.get("encoder")
        if encoder is None:
            return recorded
        if recorded is None:
            recorded = encoder_dict(encoder)
            self.manifest["encoder"] = recorded
            write_manifest(self.path, self.manifest)
        return recorded

    def _set_thresholds(self) -> None:
        """θ_merge and θ_simi: the config's, else the encoder's defaults. A reader merges no
        state, so only a writer is refused a θ_simi that is not below θ_merge."""
        self.theta_merge, self.theta_simi = thetas(self.config, self.encoder)
        clash = None if self.read_only else theta_clash(self.config, self.encoder)
        if clash:
            raise MemoryStoreError(clash)

    def _backup(self, label: str) -> Path:
        dest = self.path / "backups" / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
        dest.mkdir(parents=True, exist_ok=True)
        for name in (GRAPH, GRAPH + ".wal", "manifest.json"):
            src = self.path / name
            if src.is_dir():
                shutil.copytree(src, dest / name)
            elif src.exists():
                shutil.copy2(src, dest / name)
        return dest

    def close(self) -> None:
        """Flush the vectors and stamp the manifest (read-write), then close the database."""
        if self._db is None:
            return
        try:
            if not self.read_only:
                if self.vectors is not None:
                    self.vectors.close()
                self.manifest["updated"] = time.time()
                self.manifest["kgagent_version"] = kgagent.__version__
                write_manifest(self.path, self.manifest)
        finally:
            try:
                self._db.close()
            finally:
                self._db = None
                self._release_lock()

    def __enter__(self: _M) -> _M:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lost_vectors(path: Path, count: int) -> str:
    """What states without their vector mean, and what restores them (no repair can: the
    feature was never stored where the graph says)."""
    return (
        f"{count} state(s) of {path} have no vector: the memory was copied while an agent "
        "wrote it, or its vectors/ comes from another moment. Screens are never matched to "
        "them (the agent learns those screens again); an export, or a copy taken while no "
        'agent ran, keeps every vector (docs/reliability.md, "Backups")'
    )
