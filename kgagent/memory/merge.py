"""`kgagent memory merge SRC... --into DEST`: many agents' experience in one memory.

Agents on different machines (or parallel agents on one) each build a memory;
a merge folds them into one. The rules (docs/memory.md, "Merging memories";
:mod:`~kgagent.memory.merge_rules`) are the memory's own: a source state becomes
the destination state within θ_merge of it exactly as an observation does,
objects are matched the way they are registered, and so on. Every merged node
records where it came from in ``origin``.

A merge is all or nothing. The sources are read and checked first (encoder,
schema, engine; :mod:`~kgagent.memory.merge_source`); then the destination is
copied into a work directory beside it, the sources are folded into the copy,
the copy is checked (``Memory.check``), and only then does it take the
destination's place (:mod:`~kgagent.memory.merge_place`). A refusal, an error
or ``kill -9`` at any point before that leaves the destination as it was.
A merge that would change nothing (every source already merged) leaves the
destination untouched, byte for byte.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import migrations, staging
from kgagent.memory.archive_import import NothingImported
from kgagent.memory.core import EncoderSpec
from kgagent.memory.diskspace import (
    NO_ROOM,
    DiskSpaceError,
    nothing_done,
    require,
    reserve_bytes,
)
from kgagent.memory.engine import GraphWriteError, engine_name
from kgagent.memory.files import ProcessLimitError, read_manifest
from kgagent.memory.limits import process_limit
from kgagent.memory.lock import lock_memory
from kgagent.memory.manifest_checks import NO_ENCODER_THRESHOLDS
from kgagent.memory.merge_place import (
    BUILT,
    DestinationGuard,
    MergeError,
    copy_memory,
    copy_size,
    make_parent,
    merge_lock,
    place,
    recover,
    work_prefix,
)
from kgagent.memory.merge_rules import Folder
from kgagent.memory.merge_source import Source, read_source
from kgagent.memory.store import Memory

__all__ = ["MergeError", "merge_memories"]

Progress = Callable[[str], None]

#: What a merge reports it did, per kind of node (zero when it did none).
COUNTS = tuple(
    f"{kind}_{what}"
    for kind in ("states", "objects", "skills", "clusters")
    for what in ("created", "merged", "already_merged")
) + (
    "skill_edges_created",
    "skill_edges_merged",
    "state_object_links",
    "input_stats",
    "memories_recorded",
)


#: What a merge refused for space did, and what to do (after the figures, see
#: :class:`~kgagent.memory.diskspace.DiskSpaceError`).
NO_SPACE = nothing_done("merge", "changed nothing")


def _noop(_msg: str) -> None:
    pass


def merge_memories(
    sources: list[str | Path],
    dest: str | Path,
    config: Config | None = None,
    *,
    progress: Progress | None = None,
    placed: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Merge the memories (directories or archive files) ``sources`` into ``dest``.
    ``placed`` is called once the merged memory is in place, or found unchanged (the CLI
    then has nothing left to undo).

    ``dest`` may be absent or empty (a new memory is made). Returns a summary: what
    was created, merged and skipped as already merged, the statistics after, and
    ``changed`` (False when nothing was new, and ``dest`` was left untouched).
    """
    say = progress or _noop
    cfg = config or Config()
    dest = staging.follow_link(Path(dest).expanduser().absolute(), MergeError)
    paths = [Path(s).expanduser().absolute() for s in sources]
    if not paths:
        raise MergeError("name at least one memory directory or archive to merge")
    t0 = time.time()
    make_parent(dest)
    with merge_lock(dest):
        recover(dest, say)
        manifest = _check_destination(dest, cfg)
        replacing = manifest is not None
        # The lock every writer takes (kgagent/memory/lock.py): no play or import meanwhile.
        writer = lock_memory(dest) if replacing else None
        with contextlib.ExitStack() as held, DestinationGuard(dest) as guard:
            if writer is not None:
                held.callback(writer.release)
            # The copy of the destination and the reserve, before anything is written.
            require(
                dest,
                reserve_bytes(cfg),
                NO_SPACE,
                at=dest.parent,
                extra=copy_size(dest) if replacing else 0,
                extra_for="to copy the memory",
            )
            work = Path(tempfile.mkdtemp(prefix=work_prefix(dest), dir=dest.parent))
            try:
                try:
                    srcs = [read_source(p, i, work, dest, cfg, say) for i, p in enumerate(paths)]
                    spec = _common_encoder(srcs, manifest, dest)
                    built = work / BUILT
                    if replacing:
                        say(f"copying {dest}")
                        copy_memory(dest, built, guard)
                except NothingImported as e:  # an archive source, staged beside dest
                    raise MergeError(f"the merge changed nothing at {dest}: {e.reason}") from None
                except OSError as e:
                    if e.errno not in NO_ROOM:
                        raise
                    raise MergeError(
                        f"the merge changed nothing at {dest}: writing its work copy in "
                        f"{dest.parent} failed ({e.strerror or e}). Free some space (or merge "
                        "into a folder on a larger disk) and run again"
                    ) from None
                try:
                    summary = _build(built, srcs, spec, cfg, say)
                    if not (replacing and not summary["changed"]):
                        _check_built(built, cfg)
                except GraphWriteError as e:
                    raise MergeError(
                        f"the merge changed nothing at {dest}: the graph engine could not "
                        f"write the merged copy beside it ({e.cause}); {e.fix}, then run the "
                        "command again"
                    ) from None
                except OSError as e:
                    limit = process_limit(e)
                    if limit is None:
                        raise
                    raise MergeError(f"the merge changed nothing at {dest}: {limit}") from None
                if replacing and not summary["changed"]:
                    say(f"nothing new to merge; {dest} is unchanged")
                else:
                    say(f"putting the merged memory in place at {dest}")
                    place(built, dest, replacing, work)
                if placed is not None:
                    placed()
            except DiskSpaceError as e:  # met on a work folder: say it of the destination
                raise e.reworded(dest, NO_SPACE) from None
            finally:
                staging.remove(work)
    summary.update(
        {
            "memory": str(dest),
            "sources": [s.label for s in srcs],
            "seconds": round(time.time() - t0, 2),
        }
    )
    return summary


def _check_destination(dest: Path, cfg: Config) -> dict[str, Any] | None:
    """The destination's manifest (None: absent or empty); refuses what cannot take a merge."""
    if not dest.exists():
        return None
    if not dest.is_dir():
        raise MergeError(f"{dest} exists and is not a directory")
    if not any(dest.iterdir()):
        return None
    try:
        manifest = read_manifest(dest)
    except ProcessLimitError:
        raise
    except MemoryStoreError:
        manifest = None
    if manifest is None:
        raise MergeError(
            f"{dest} is not empty and is not a kgagent memory; merge into a memory or an empty directory"
        )
    engine = engine_name(cfg.memory.engine)
    if manifest.get("engine", "kuzu") != engine:
        raise MergeError(
            f"{dest} was written by the {manifest.get('engine', 'kuzu')} engine, not {engine}; "
            f"set memory.engine={manifest.get('engine', 'kuzu')} to merge into it"
        )
    latest = migrations.latest_version()
    if int(manifest.get("schema_version", 0)) > latest:
        raise MergeError(
            f"{dest} has schema version {manifest.get('schema_version')}, newer than this kgagent "
            f"knows ({latest}); upgrade kgagent to merge into it"
        )
    return manifest


def _common_encoder(
    srcs: list[Source], manifest: dict[str, Any] | None, dest: Path
) -> EncoderSpec | None:
    """The one encoder of the destination and every source; a second one is refused."""
    named: list[tuple[str, dict[str, Any]]] = []
    if manifest and manifest.get("encoder"):
        named.append((str(dest), manifest["encoder"]))
    named += [(s.label, s.encoder) for s in srcs if s.encoder and not s.is_destination]
    if not named:
        return None
    first_label, first = named[0]
    for label, enc in named[1:]:
        if enc["identity"] != first["identity"] or int(enc["dim"]) != int(first["dim"]):
            raise MergeError(
                f"cannot merge {label} (encoder {enc['identity']}, {enc['dim']}-d) with "
                f"{first_label} (encoder {first['identity']}, {first['dim']}-d): only memories "
                "of one encoder merge"
            )
    thresholds = tuple(first.get("thresholds") or NO_ENCODER_THRESHOLDS)
    return EncoderSpec(first["identity"], int(first["dim"]), thresholds)


def _build(
    built: Path, srcs: list[Source], spec: EncoderSpec | None, cfg: Config, say: Progress
) -> dict[str, Any]:
    """Fold every source into the memory at ``built``; returns the summary."""
    c = replace(cfg, memory=replace(cfg.memory, backup_on_migrate=False))
    mem = Memory.open(built, c, encoder=spec)
    try:
        blobs_before = set(mem.blobs.all_ids())
        folder = Folder(mem, say)
        for src in srcs:
            if src.is_destination:
                say(f"{src.label} is the destination itself; nothing to merge from it")
                continue
            folder.fold(src)
        _drop_stray_blobs(mem, blobs_before)
        summary: dict[str, Any] = {
            "memory_id": mem.manifest.get("memory_id"),
            "encoder": spec.identity if spec else None,
            "theta_merge": mem.theta_merge,
            "theta_simi": mem.theta_simi,
        }
        summary.update({k: folder.counts.get(k, 0) for k in COUNTS})
        summary.update(sorted(folder.counts.items()))
        changes = {k: v for k, v in folder.counts.items() if "already" not in k}
        summary["changed"] = any(changes.values())
        summary.update(mem.stats().as_row())
    finally:
        mem.close()
    return summary


def _drop_stray_blobs(mem: Memory, before: set[str]) -> None:
    """Remove blobs the merge wrote that nothing refers to (an object crop re-encoded on
    registration, replaced by the source's own bytes)."""
    refs = {r["blob"] for r in mem.run_named("check_blob_refs")}
    for b in set(mem.blobs.all_ids()) - before - refs:
        mem.blobs.path(b).unlink(missing_ok=True)


def _check_built(built: Path, cfg: Config) -> None:
    """The merged memory, reopened read-only, passes every check of `kgagent memory check`
    (blobs no row names aside: the destination's own, which its repair removes)."""
    with Memory.open(built, cfg, read_only=True, create=False) as mem:
        bad = [r for r in mem.check() if r["status"] != "ok" and r["check"] != "unreferenced_blobs"]
    if bad:
        first = bad[0]
        raise MergeError(
            f"the merged memory failed its check ({first['check']}: {first['count']}); "
            "the destination was left as it was"
        )
