"""The view's window on one memory: read-only snapshots that follow a writing agent.

A read-only LadybugDB connection sees the database as it was when it was opened,
so a view that kept one open would show a run that stopped growing. Instead every
read opens the memory read-only, reads, and closes it again. The whole graph
(states, edges, skills, clusters) is read as one :class:`Snapshot` and reused
until the database files change, and at most once per ``refresh_s``: a page that
asks twice in a second costs one open, and an idle memory costs none. A large memory
takes seconds to read (a Crafter memory after four rounds: about 4 s, most of it its
304,507 similarity edges); beside a run that writes every step, the view would then read
all the time, on cores the agent needs. So a snapshot is also kept for
``read_share`` (4) times as long as it took to read: the view reads at most a fifth of
the time. A read that failed (a writer's checkpoint) is tried again after ``refresh_s``.

Everything here reads: the memory is opened with ``read_only=True`` and every
query is a named query from ``queries/view.cypher`` (or a public method of
:class:`kgagent.memory.Memory`), refused by the memory if it wrote.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kgagent.config import Config
from kgagent.errors import KGAgentError, MemoryStoreError

T = TypeVar("T")

#: Files whose change means the graph may have changed.
_WATCHED = ("graph.db", "graph.db.wal", "manifest.json")
#: A reader can meet a writer mid-checkpoint; these opens are retried.
_RETRIES = 4
_RETRY_S = 0.15
#: A snapshot is kept at least this many times as long as its read took.
READ_SHARE = 4.0


@dataclass
class Snapshot:
    """The graph as one read saw it; plain dicts, so it can be cached and shared."""

    signature: tuple
    taken: float
    stats: dict[str, int]
    states: dict[str, dict[str, Any]]
    skill_edges: list[dict[str, Any]]
    similar_edges: list[dict[str, Any]]
    skills: dict[str, dict[str, Any]]
    clusters: dict[str, dict[str, Any]]
    skill_clusters: dict[str, list[str]] = field(default_factory=dict)
    theta_simi: float = 0.0  # the memory's θ_simi: similarity edges have cosine above it
    error: str | None = None  # why the latest read failed (the snapshot is then older)

    @classmethod
    def empty(cls, error: str | None = None) -> Snapshot:
        return cls((), 0.0, {}, {}, [], [], {}, {}, {}, 0.0, error)


def passing(error: str) -> bool:
    """Whether a read failed for a while only: a writer holds the memory (Kùzu's lock, a
    checkpoint's recovery). Other failures (another engine's memory, a newer schema) stay."""
    text = error.lower()
    return "recovery" in text or "lock" in text or "in use" in text


def is_blob_id(value: str) -> bool:
    """A blob id is a lowercase hex sha256; nothing else names a file the view serves."""
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


class MemorySource:
    """Reads one memory read-only, on demand, beside a writer (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        config: Config | None = None,
        *,
        refresh_s: float = 1.0,
        read_share: float = READ_SHARE,
    ):
        self.path = Path(path).expanduser().resolve()
        self.config = config or Config()
        self.refresh_s = refresh_s
        self.read_share = read_share
        self._lock = threading.Lock()
        self._snap: Snapshot | None = None
        self._read_s = 0.0  # how long the latest snapshot took to read

    # ------------------------------------------------------------ reading
    def signature(self) -> tuple:
        """(name, mtime, size) of the files a write changes."""
        sig = []
        for name in _WATCHED:
            try:
                st = (self.path / name).stat()
                sig.append((name, st.st_mtime_ns, st.st_size))
            except OSError:
                sig.append((name, 0, 0))
        return tuple(sig)

    def read(self, fn: Callable[[Any], T], *, tries: int = _RETRIES) -> T:
        """Open the memory read-only, call ``fn(memory)``, close it; up to ``tries`` opens
        in all while a writer holds the memory (a checkpoint lasts a moment)."""
        from kgagent.memory import Memory

        last: Exception | None = None
        for attempt in range(max(tries, 1)):
            if attempt:
                time.sleep(_RETRY_S * attempt)
            try:
                with self._lock, Memory.open(self.path, self.config, read_only=True) as mem:
                    return fn(mem)
            except MemoryStoreError as e:
                last = e
                if not passing(str(e)):
                    raise
        assert last is not None
        raise last

    def snapshot(self, *, force: bool = False) -> Snapshot:
        """The latest snapshot: reread when the files changed and ``refresh_s`` has passed."""
        snap = self._snap
        now = time.monotonic()
        if snap is not None and not force:
            # a failed read cost one refused open: asked again after refresh_s, not after
            # read_share read-times (the error, a writer's checkpoint, lasts a moment)
            hold = (
                self.refresh_s
                if snap.error
                else max(self.refresh_s, self.read_share * self._read_s)
            )
            if now - snap.taken < hold:
                return snap
            sig = self.signature()
            if sig == snap.signature:
                snap.taken = now
                return snap
        sig = self.signature()
        t0 = time.monotonic()
        try:
            # with a snapshot to show, one try: a memory a writer holds for the whole run
            # (Kùzu) must not cost every page callback the retries' waits
            fresh = self.read(_take, tries=1 if snap is not None else _RETRIES)
        except KGAgentError as e:
            stale = snap if snap is not None else Snapshot.empty()
            stale.error = str(e)
            stale.taken = time.monotonic()  # asked again after refresh_s, not at once
            self._snap = stale
            return stale
        fresh.signature, fresh.taken = sig, time.monotonic()
        self._read_s = fresh.taken - t0
        self._snap = fresh
        return fresh

    # ------------------------------------------------------------ details
    def state_detail(self, state_id: str) -> dict[str, Any] | None:
        """What the state panel shows: node, objects, HQ candidates (Eq. 3), V_S (Eq. 10)."""
        snap = self.snapshot()
        if state_id not in snap.states:
            return None

        def read(mem: Any) -> dict[str, Any]:
            rows = mem.run_named("view_state", {"state": state_id})
            if not rows:
                return {}
            objects = [
                {"id": o.id, "name": o.name, "bbox": list(o.bbox), "crop": o.crop_blob}
                for o in mem.state_objects(state_id)
            ]
            hq = [
                {
                    "skill": c.skill_id,
                    "weight": c.weight,
                    "from_state": c.from_state,
                    "to_state": c.to_state,
                }
                for c in mem.hq_candidates(state_id)
            ]
            return {
                **rows[0],
                "objects": objects,
                "hq": hq,
                "potential": mem.state_potential(state_id),
            }

        try:
            d = self.read(read)
        except KGAgentError as e:
            return {"id": state_id, "error": str(e)}
        if not d:
            return None
        d["out_edges"] = [e for e in snap.skill_edges if e["src"] == state_id]
        d["in_edges"] = [e for e in snap.skill_edges if e["dst"] == state_id]
        d["similar"] = sorted(
            (
                (e["dst"] if e["src"] == state_id else e["src"], float(e["weight"]))
                for e in snap.similar_edges
                if state_id in (e["src"], e["dst"])
            ),
            key=lambda t: -t[1],
        )
        for c in d["hq"]:
            c["name"] = snap.skills.get(c["skill"], {}).get("name", c["skill"])
        return d

    def blob(self, blob_id: str) -> bytes | None:
        """A thumbnail or crop PNG by its sha256 id; None for anything else, and for a
        symbolic link on the way (see :func:`read_inside`)."""
        if not is_blob_id(blob_id):
            return None
        return read_inside(self.path, "blobs", blob_id[:2], f"{blob_id}.png")


def read_inside(root: Path, *names: str) -> bytes | None:
    """The bytes of the regular file ``root/names...``, following no symbolic link below
    ``root``; None when there is none, or a link, a FIFO or a device is on the way.

    A link ``blobs/ab/abcc….png`` to a file elsewhere (a memory copied from someone else,
    a folder another user can write) would serve that file as a picture. Each folder is
    opened relative to the one before with ``O_NOFOLLOW``, so a link swapped in while this
    reads is refused too; where the system has no such opens (Windows), the resolved path
    must lie in the resolved ``root`` and the file must not be a link.
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if not nofollow or os.open not in os.supports_dir_fd:
        return _read_resolved(root, names)
    fds: list[int] = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY))
        for name in names[:-1]:
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=fds[-1]))
        # O_NONBLOCK: a FIFO would block the open until something wrote to it
        flags = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0)
        fds.append(os.open(names[-1], flags, dir_fd=fds[-1]))
        if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
            return None
        with open(fds[-1], "rb", closefd=False) as f:
            return f.read()
    except OSError:  # absent, a link (ELOOP, ENOTDIR), unreadable
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _read_resolved(root: Path, names: tuple[str, ...]) -> bytes | None:
    p = Path(root).joinpath(*names)
    try:
        inside = p.resolve(strict=True).is_relative_to(Path(root).resolve(strict=True))
        if not inside or p.is_symlink() or not p.is_file():
            return None
        return p.read_bytes()
    except (OSError, RuntimeError):
        return None


def _take(mem: Any) -> Snapshot:
    """Read the whole graph in one open (see :class:`Snapshot`)."""
    stats = mem.stats().as_row()
    states = {r["id"]: r for r in mem.run_named("view_states")}
    skill_edges = mem.run_named("view_skill_edges")
    similar = mem.run_named("view_similar_edges")
    skills = {
        k.id: {
            "id": k.id,
            "name": k.name,
            "description": k.description,
            "operations": [op.to_dict() for op in k.operations],
            "fitness": float(k.fitness),
            "executions": int(k.executions),
            "status": k.status,
            "parent_id": k.parent_id,
            "failures": int(k.failures),
            "low_rewards": int(k.low_rewards),
            "created_at": float(k.created_at or 0.0),
        }
        for k in mem.skills()
    }
    clusters = {
        c.id: {
            "id": c.id,
            "name": c.name,
            "description": c.description,
            "selections": c.selections,
            "skills": list(c.skill_ids),
        }
        for c in mem.clusters()
    }
    skill_clusters: dict[str, list[str]] = {}
    for r in mem.run_named("view_memberships"):
        skill_clusters.setdefault(r["skill"], []).append(r["cluster"])
    return Snapshot(
        (),
        0.0,
        stats,
        states,
        skill_edges,
        similar,
        skills,
        clusters,
        skill_clusters,
        float(mem.theta_simi),
    )
