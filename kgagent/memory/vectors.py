"""State feature vectors: persisted in LanceDB, searched exactly in process.

LanceDB holds the vectors (one table, ``states``: id, rev, vector). Every write
is an append of a new row *revision*; the graph's ``State.feature_rev`` names
the revision it committed, so a crash between the vector write and the graph
commit is repaired on open (see :meth:`VectorStore.reconcile`). New revisions
go through the vector journal (:mod:`kgagent.memory.journal`) first.

Look-ups (merge and similarity-edge maintenance) need *every* neighbour above
θ_simi, not an approximate top-k, so they are answered exactly from an
in-process mirror of the table (:class:`~kgagent.memory.exact_index.ExactIndex`).

Every LanceDB write makes a new table *version*, and the files of old versions stay
until they are cleaned up (LanceDB's default: a week), so a memory played often grew
about ten times faster than its vectors. The writer drops them whenever it compacts
(every ``memory.compact_every`` appends, and on close, which also compacts a memory
that has old versions piled up): every version *superseded* more than
:data:`KEEP_SUPERSEDED_S` ago. Superseded, not made: a version made an hour ago may
have been the latest until a second ago, and a reader in another process (``kgagent
view``, ``memory info|check|export``) may just have opened it. A reader reads the table
in one call right after opening it (seconds at most), and one whose version went
meanwhile (a process stopped past that time) reads again at the latest version, which
is never dropped (:meth:`VectorStore._read_table`). Files no version names (an append
cut short by a kill) go too: the writer's lock (:mod:`~kgagent.memory.lock`) means no
other process is writing. See docs/reliability.md ("The vectors do not pile up").
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from kgagent.config import MemoryConfig
from kgagent.errors import MemoryStoreError
from kgagent.memory.exact_index import ExactIndex
from kgagent.memory.journal import VectorJournal
from kgagent.memory.limits import limit_in_message
from kgagent.paths import permission_fix

_T = TypeVar("_T")

TABLE = "states"
JOURNAL = "journal.kgv"
#: Stale rows deleted per LanceDB delete: keeps each filter expression short.
DELETE_BATCH = 200
#: Seconds a LanceDB version is kept after a newer one replaced it: a reader that opened
#: it reads it within this time (one ``to_arrow`` right after the open: milliseconds for
#: a thousand vectors, a second or two for a hundred thousand), or reads again.
KEEP_SUPERSEDED_S = 60.0
#: Reads of the table by a reader, in all, when the version it opened is dropped meanwhile.
READ_TRIES = 3
#: A version made within this many seconds before the newest droppable one is kept with
#: it: LanceDB measures ``cleanup_older_than`` from its own clock, a moment after ours.
_CLOCK_MARGIN_S = 1.0
#: ``cleanup_older_than`` that drops no version.
_KEEP_ALL = timedelta(days=36500)


#: where in LanceDB's Rust sources an error was raised (", /root/.cargo/…/structural.rs:191:9")
_RUST_PLACE = re.compile(r",?\s*\S+\.rs:\d+:\d+")


def _rust_panic(e: BaseException) -> bool:
    """Whether ``e`` is a Rust library's panic as pyo3 raises it (``PanicException``, a
    ``BaseException`` that no module exports): LanceDB panics where it cannot get a file
    descriptor (a socket for its runtime under a low ``ulimit -n``)."""
    return type(e).__name__ == "PanicException"


@contextmanager
def _lance(what: str, directory: Path) -> Iterator[None]:
    """LanceDB's errors (a full disk, a damaged table, a process limit reached, a panic) as
    one line, with what to do where the cause is a limit of this process or the disk."""
    try:
        yield
    except BaseException as e:
        if not isinstance(e, (RuntimeError, OSError, ValueError)) and not _rust_panic(e):
            raise
        denied = _denied_line(e, what, directory)
        if denied is not None:
            raise MemoryStoreError(denied) from None
        msg = _RUST_PLACE.sub("", " ".join(str(e).split()))[:300] or e.__class__.__name__
        hint = limit_in_message(msg)
        if hint is None and "no space left" in msg.lower():
            hint = "free some space on that disk and run again"
        if hint is not None:
            msg += f"; {hint}"
        raise MemoryStoreError(f"LanceDB could not {what} at {directory}: {msg}") from None


#: LanceDB's words for EACCES, whichever layer reports it: Rust's ``kind: PermissionDenied``,
#: or its ``Permission denied (os error 13)``; a Python ``PermissionError`` has its errno.
_DENIED = re.compile(r"permission ?denied", re.IGNORECASE)


def _denied_line(e: BaseException, what: str, directory: Path) -> str | None:
    """One line for LanceDB failing because this user may not read (or write) the vectors
    folder; None for any other error. LanceDB nests the OS error in several hundred
    characters of Rust error structures, so its words are not the message: the folder
    is, and the file or folder in it that was refused (:func:`_refused`). A reader
    changes nothing, so its line says so; a refused write is the writer's to recover."""
    if not isinstance(e, PermissionError) and not _DENIED.search(str(e)):
        return None
    place = _refused(directory)
    reads = what.startswith(("open", "read", "list")) and place is not None
    verb = "read" if reads else "written"  # all of it readable: a write was refused
    on = f": {place} is refused" if place is not None and place != directory else ""
    fix = permission_fix(directory, recursive=True, write=verb != "read")
    line = f"the vectors folder {directory} cannot be {verb} (permission denied{on}); {fix}"
    return line + "; nothing was changed" if verb == "read" else line


def _refused(directory: Path) -> Path | None:
    """The first folder under ``directory`` (itself included) this process may not list,
    else the first file it may not read; None when it finds none (the refusal was of a
    write, or the permissions changed since). From the file system, not LanceDB's text."""
    if not os.access(directory, os.R_OK | os.X_OK):
        return directory
    unreadable_file: Path | None = None
    for folder, dirs, files in os.walk(directory):
        for name in dirs:
            if not os.access(os.path.join(folder, name), os.R_OK | os.X_OK):
                return Path(folder, name)
        for name in files:
            if unreadable_file is None and not os.access(os.path.join(folder, name), os.R_OK):
                unreadable_file = Path(folder, name)
    return unreadable_file


def normalize(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    n = float(np.linalg.norm(v))
    if not math.isfinite(n) or n == 0.0:
        raise ValueError("feature vector is zero or not finite")
    return v / n


class VectorStore:
    """The LanceDB table of state features plus its exact in-process index."""

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        read_only: bool = False,
        flush_rows: int = MemoryConfig.vector_flush_rows,
        compact_every: int = MemoryConfig.compact_every,
        keep_superseded_s: float | None = None,
    ) -> None:
        self.dim = dim
        self.read_only = read_only
        self.directory = directory
        self._connected = False
        self._connecting = threading.Lock()
        self._tab: Any = None
        if not read_only:
            self._connect()
        self.index = ExactIndex(dim)
        self._row_of: dict[str, int] = {}
        self._id_of: list[str] = []
        self._rev_of: dict[str, int] = {}
        self.journal = VectorJournal(directory / JOURNAL, dim, read_only=read_only)
        self.flush_rows = max(1, int(flush_rows))
        self.compact_every = int(compact_every)
        self._pending: list[tuple[str, int, np.ndarray]] = []
        self._journal_open = False
        self.appends = 0  # LanceDB appends (flushes) since open
        self.removed = 0  # rows deleted by reconcile since open
        #: seconds a superseded version is kept (:data:`KEEP_SUPERSEDED_S` unless given)
        self.keep_superseded_s = (
            KEEP_SUPERSEDED_S if keep_superseded_s is None else float(keep_superseded_s)
        )

    def _connect(self) -> None:
        """Open the LanceDB table. A reader does it when it first reads a vector: importing
        lancedb takes seconds, and a reader such as ``kgagent query`` may never need it."""
        with self._connecting:
            if self._connected:
                return
            import lancedb
            import pyarrow as pa

            self._pa = pa
            with _lance("open the vectors", self.directory):
                self._again(lambda: self._open(lancedb, self.directory, self.dim))
            self._connected = True

    @property
    def _table(self) -> Any:
        if not self._connected:
            self._connect()
        return self._tab

    @_table.setter
    def _table(self, table: Any) -> None:
        self._tab = table

    def _open(self, lancedb: Any, directory: Path, dim: int) -> None:
        pa = self._pa
        self._db = lancedb.connect(str(directory))
        self._schema = pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("rev", pa.int64()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
            ]
        )
        names = self._table_names()
        if TABLE in names:
            self._table = self._db.open_table(TABLE)
        elif self.read_only:
            self._table = None
        else:
            self._table = self._db.create_table(TABLE, schema=self._schema)

    def _table_names(self) -> list[str]:
        try:
            res = self._db.list_tables()
            names = getattr(res, "tables", res)
        except AttributeError:  # older lancedb
            names = self._db.table_names()
        return list(names)

    # ------------------------------------------------------------ loading
    def rows(self) -> tuple[list[str], np.ndarray, np.ndarray, int]:
        """Every stored row: LanceDB's, then the journal's (not yet flushed).

        Returns ids, revs, vectors (n × dim float32) and the byte count of a
        torn journal tail (0 normally).
        """
        # The journal first: a writer that flushes in between has put those rows
        # into LanceDB before emptying the journal, so nothing is missed (a row
        # seen twice is the same revision twice).
        j = self.journal.read()
        if self._table is not None:
            with _lance("read the vectors", self.directory):
                tab = self._read_table()
            ids = tab.column("id").to_pylist()
            revs = tab.column("rev").to_numpy().astype(np.int64)
            flat = tab.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            vecs = np.asarray(flat, dtype=np.float32).reshape(-1, self.dim)
        else:
            ids, revs, vecs = [], np.zeros(0, np.int64), np.zeros((0, self.dim), np.float32)
        if len(j):
            ids = ids + j.ids
            revs = np.concatenate([revs, np.asarray(j.revs, dtype=np.int64)])
            vecs = np.concatenate([vecs, np.stack(j.vecs)])
        return ids, revs, vecs, j.torn_bytes

    def load(self, committed: dict[str, int]) -> dict[str, int]:
        """Load the newest committed revision of every state in ``committed``.

        ``committed`` maps state id → the revision the graph committed. Rows of
        unknown ids or of newer revisions are crash leftovers: they are ignored
        here and deleted by :meth:`reconcile` (read-write opens only). A
        read-write open first moves the journal's records into LanceDB. Returns
        counts of what was found inconsistent.
        """
        report = {
            "orphan_rows": 0,
            "uncommitted_revisions": 0,
            "missing_vectors": 0,
            "journal_torn_bytes": 0,
        }
        if not self.read_only:
            report["journal_torn_bytes"] = self._replay_journal()
        if self._table is None and not self.journal.path.exists():
            report["missing_vectors"] = len(committed)
            return report
        ids, revs, vecs, torn = self.rows()
        if self.read_only:
            report["journal_torn_bytes"] = torn
        chosen: dict[str, int] = {}
        for i, (sid, rev) in enumerate(zip(ids, revs)):
            want = committed.get(sid)
            if want is None:
                report["orphan_rows"] += 1
                continue
            if rev > want:
                report["uncommitted_revisions"] += 1
                continue
            if rev == want:
                chosen[sid] = i
        report["missing_vectors"] = len(set(committed) - set(chosen))
        order = sorted(chosen)
        if order:
            rows = self.index.add_many(vecs[[chosen[s] for s in order]])
            for sid, row in zip(order, rows):
                self._row_of[sid] = int(row)
                self._rev_of[sid] = committed[sid]
            self._id_of = [""] * (int(rows.max()) + 1)
            for sid, row in zip(order, rows):
                self._id_of[int(row)] = sid
        return report

    def _replay_journal(self) -> int:
        """Move the journal's records into LanceDB (those not there yet); then empty it."""
        contents = self.journal.open_for_append()
        self._journal_open = True
        if len(contents):
            have: set[tuple[str, int]] = set()
            if self._table is not None:
                with _lance("read the vectors", self.directory):
                    tab = self._table.to_arrow()
                have = set(zip(tab.column("id").to_pylist(), tab.column("rev").to_pylist()))
            todo = [
                (sid, rev, vec)
                for sid, rev, vec in zip(contents.ids, contents.revs, contents.vecs)
                if (sid, rev) not in have
            ]
            if todo:
                # on failure the journal keeps the records: the next open moves them
                with _lance("take the vector journal's records", self.directory):
                    self._append(todo)
            self.journal.clear()
        return contents.torn_bytes

    def reconcile(self, committed: dict[str, int]) -> int:
        """Delete rows the graph never committed, and superseded revisions."""
        if self._table is None or self.read_only:
            return 0
        with _lance("read the vectors", self.directory):
            tab = self._table.to_arrow()
        ids = tab.column("id").to_pylist()
        revs = tab.column("rev").to_pylist()
        stale = [
            (sid, rev)
            for sid, rev in zip(ids, revs)
            if sid not in committed or rev != committed[sid]
        ]
        if not stale:
            return 0
        by_id: dict[str, list[int]] = {}
        for sid, rev in stale:
            by_id.setdefault(sid, []).append(int(rev))
        clauses = []
        for sid, rs in by_id.items():
            esc = sid.replace("'", "''")
            clauses.append(f"(id = '{esc}' AND rev IN ({', '.join(str(r) for r in rs)}))")
        with _lance("remove crash leftovers from the vectors", self.directory):
            for i in range(0, len(clauses), DELETE_BATCH):
                self._table.delete(" OR ".join(clauses[i : i + DELETE_BATCH]))
        self.removed += len(stale)
        return len(stale)

    # -------------------------------------------------------------- writes
    def put(self, state_id: str, rev: int, vec: np.ndarray) -> None:
        """Record one revision durably (journal) before the graph commits it.

        The journal is moved into LanceDB every ``flush_rows`` records.
        """
        if not self._journal_open:
            self.journal.open_for_append()
            self._journal_open = True
        vec = np.asarray(vec, dtype=np.float32).reshape(-1)
        self.journal.append(state_id, rev, vec)
        self._pending.append((state_id, int(rev), vec))
        if len(self._pending) >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        """Append the journal's records to LanceDB in one write, then empty the journal."""
        if not self._pending:
            return
        # On failure the journal keeps the records: the next open moves them.
        with _lance("take the vector journal's records", self.directory):
            self._append(self._pending)
        self.journal.clear()
        self._pending = []
        if self.compact_every > 0 and self.appends % self.compact_every == 0:
            self._optimize()

    def _read_table(self) -> Any:
        """The whole table (Arrow), read again at the latest version when a reader's
        version was dropped meanwhile (see :meth:`_again`)."""
        return self._again(lambda: self._table.to_arrow())

    def _again(self, read: Callable[[], _T]) -> _T:
        """``read()``; for a reader, again at the latest version (:data:`READ_TRIES` in all)
        when it fails: the version it opened was dropped meanwhile, as the writer does
        once a version has been superseded for :data:`KEEP_SUPERSEDED_S` (a reader stopped
        that long). The latest version is never dropped."""
        tries = 1
        while True:
            try:
                return read()
            except (RuntimeError, OSError, ValueError):
                if not self.read_only or tries >= READ_TRIES:
                    raise
                tries += 1
                if self._tab is not None:
                    self._tab.checkout_latest()

    def _cleanup_age(self) -> tuple[timedelta, int]:
        """LanceDB's ``cleanup_older_than`` that drops the versions superseded more than
        ``keep_superseded_s`` ago, and how many versions that is.

        LanceDB drops versions *made* before a time; a version superseded long ago is one
        whose successor was made long ago. So the cut is the newest version made before
        ``now - keep``: every version before it was superseded by then (by it, or earlier),
        while it, made long ago, may have been the latest until now, and stays.
        """
        versions = sorted(self._table.list_versions(), key=lambda v: int(v["version"]))
        made = [v["timestamp"].timestamp() for v in versions]  # naive local time, as LanceDB gives
        now = time.time()
        old = [i for i, t in enumerate(made) if t < now - self.keep_superseded_s]
        cut = made[old[-1]] if old else (made[0] if made else now)
        dropped = sum(t < cut - _CLOCK_MARGIN_S for t in made)
        return timedelta(seconds=max(now - cut + _CLOCK_MARGIN_S, 0.0)), dropped

    def _optimize(self) -> None:
        """Merge small fragments, then drop the versions superseded more than
        ``keep_superseded_s`` ago and the files no version names (see the module's doc)."""
        with _lance("compact the vectors", self.directory):
            # Compaction first, dropping nothing: LanceDB takes the time it measures
            # ``cleanup_older_than`` from after it has compacted, which can take seconds.
            self._table.optimize(cleanup_older_than=_KEEP_ALL)
            older_than, _ = self._cleanup_age()
            # Then the versions (this compaction has nothing left to do). delete_unverified:
            # files no version names are a killed append's, not another writer's in
            # progress: this process holds the memory's writer lock.
            self._table.optimize(cleanup_older_than=older_than, delete_unverified=True)

    def old_versions(self) -> int:
        """LanceDB versions the next compaction drops (superseded long enough ago)."""
        if self._table is None:
            return 0
        with _lance("list the vector table's versions", self.directory):
            return self._cleanup_age()[1]

    def _append(self, rows: list[tuple[str, int, np.ndarray]]) -> None:
        pa = self._pa
        if self._table is None:
            self._table = self._db.create_table(TABLE, schema=self._schema)
        batch = pa.table(
            {
                "id": pa.array([r[0] for r in rows], pa.string()),
                "rev": pa.array([r[1] for r in rows], pa.int64()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.concatenate([r[2] for r in rows]).astype(np.float32)), self.dim
                ),
            },
            schema=self._schema,
        )
        self._table.add(batch)
        self.appends += 1

    def commit(self, state_id: str, rev: int, vec: np.ndarray) -> None:
        """Mirror a revision the graph has committed into the in-process index."""
        row = self._row_of.get(state_id)
        if row is None:
            row = self.index.add(vec)
            self._row_of[state_id] = row
            if row >= len(self._id_of):
                self._id_of.extend([""] * (row + 1 - len(self._id_of)))
            self._id_of[row] = state_id
        else:
            self.index.update(row, vec)
        self._rev_of[state_id] = rev

    def compact(self) -> None:
        """Flush the journal, merge small fragments and drop old LanceDB versions."""
        if self.read_only:
            return
        self.flush()
        if self._table is not None:
            self._optimize()

    def close(self) -> None:
        """Flush the journal; compact when anything was written since open, or when old
        versions wait to be dropped (a memory written before they were)."""
        try:
            if not self.read_only:
                if self._pending or self.appends or self.removed or self.old_versions():
                    self.compact()
        finally:
            self.journal.close()
            self._journal_open = False

    # -------------------------------------------------------------- reads
    def __contains__(self, state_id: str) -> bool:
        return state_id in self._row_of

    def __len__(self) -> int:
        return len(self._row_of)

    def rev(self, state_id: str) -> int:
        return self._rev_of[state_id]

    def vector(self, state_id: str) -> np.ndarray:
        return self.index.vector(self._row_of[state_id])

    def search(
        self, q: np.ndarray, low: float
    ) -> tuple[str | None, float, list[tuple[str, float]]]:
        res = self.index.search(q, low)
        best = self._id_of[res.best_row] if res.best_row >= 0 else None
        pairs = [(self._id_of[int(r)], float(c)) for r, c in zip(res.rows, res.cos)]
        return best, res.best_cos, pairs

    def row_count(self) -> int:
        """Rows in LanceDB plus records still in the journal."""
        n = 0 if self._table is None else self._table.count_rows()
        return n + len(self.journal.read())
