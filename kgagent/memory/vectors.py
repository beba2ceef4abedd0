"""State feature vectors: persisted in LanceDB, searched exactly in process.

LanceDB holds the vectors (one table, ``states``: id, rev, vector). Every write
is an append of a new row *revision*; the graph's ``State.feature_rev`` names
the revision it committed, so a crash between the vector write and the graph
commit is repaired on open (see :meth:`VectorStore.reconcile`).

Look-ups (merge and similarity-edge maintenance) need *every* neighbour above
θ_simi, not an approximate top-k, so they are answered exactly from an
in-process mirror of the table (:class:`ExactIndex`). Measured on this 2-core
machine at 100k × 512 (docs/benchmarks.md): LanceDB flat search ≈ 280 ms, a
full numpy scan ≈ 8 ms, the partitioned scan below ≈ 1–3 ms on clustered
features, with no recall loss because partitions are pruned only when a
provable bound says they cannot hold a neighbour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgagent.memory.journal import VectorJournal

TABLE = "states"
JOURNAL = "journal.kgv"
#: Below this many vectors a single matrix scan is fastest; above it, partitions.
PARTITION_MIN = 4096
ROWS_PER_PARTITION = 48
#: Rows less similar than this to their leaf centroid start a leaf of their own.
LEAF_MIN_COS = 0.80


def normalize(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    n = float(np.linalg.norm(v))
    if not math.isfinite(n) or n == 0.0:
        raise ValueError("feature vector is zero or not finite")
    return v / n


@dataclass
class SearchResult:
    best_row: int  # -1 when the index is empty
    best_cos: float
    rows: np.ndarray  # rows with cos > low (excluding nothing), int64
    cos: np.ndarray  # their cosines, float32


class ExactIndex:
    """Exact cosine search over unit vectors with bound-pruned partitions.

    Partitions come from a few rounds of spherical k-means. For a partition with
    centroid ``c`` and angular radius ``r`` (every member within angle r of c),
    a query ``q`` at angle ``a`` from ``c`` has no member with cosine above
    ``cos(max(0, a − r))``; such partitions are skipped. Inserts join the
    nearest partition and widen its radius; moves widen it too; so the bound
    stays valid between rebuilds, which happen when the size doubles.
    """

    def __init__(self, dim: int, seed: int = 0) -> None:
        self.dim = dim
        self._m = np.zeros((1024, dim), dtype=np.float32)
        self._n = 0  # rows used (dead rows included)
        self._alive = np.zeros(1024, dtype=bool)
        self._seed = seed
        self._centroids: np.ndarray | None = None
        self._radius_cos: np.ndarray | None = None  # min cos(centroid, member)
        self._members: list[list[int]] = []
        self._member_arrays: list[np.ndarray | None] = []
        self._partition_of: dict[int, int] = {}
        self._built_at = 0

    # ---------------------------------------------------------------- rows
    def __len__(self) -> int:
        return int(self._alive[: self._n].sum())

    def vector(self, row: int) -> np.ndarray:
        return self._m[row].copy()

    def add(self, vec: np.ndarray) -> int:
        if self._n == len(self._m):
            grow = len(self._m) * 2
            m = np.zeros((grow, self.dim), dtype=np.float32)
            m[: self._n] = self._m[: self._n]
            alive = np.zeros(grow, dtype=bool)
            alive[: self._n] = self._alive[: self._n]
            self._m, self._alive = m, alive
        row = self._n
        self._m[row] = vec
        self._alive[row] = True
        self._n += 1
        if self._centroids is not None:
            if self._n >= 2 * self._built_at:
                self.rebuild()
            else:
                self._assign(row)
        elif self._n >= PARTITION_MIN:
            self.rebuild()
        return row

    def add_many(self, vecs: np.ndarray) -> np.ndarray:
        """Bulk load (open, import): one copy, one partition build."""
        vecs = np.asarray(vecs, dtype=np.float32)
        need = self._n + len(vecs)
        if need > len(self._m):
            cap = max(need, 2 * len(self._m))
            m = np.zeros((cap, self.dim), dtype=np.float32)
            m[: self._n] = self._m[: self._n]
            alive = np.zeros(cap, dtype=bool)
            alive[: self._n] = self._alive[: self._n]
            self._m, self._alive = m, alive
        rows = np.arange(self._n, need)
        self._m[rows] = vecs
        self._alive[rows] = True
        self._n = need
        if self._n >= PARTITION_MIN:
            self.rebuild()
        return rows

    def update(self, row: int, vec: np.ndarray) -> None:
        self._m[row] = vec
        if self._centroids is not None:
            p = self._partition_of.get(row)
            if p is not None:
                c = float(self._centroids[p] @ vec)
                if c < self._radius_cos[p]:
                    self._radius_cos[p] = c

    def remove(self, row: int) -> None:
        self._alive[row] = False

    # -------------------------------------------------------------- search
    def search(self, q: np.ndarray, low: float) -> SearchResult:
        """Every row with cosine > ``low`` (exact), and the best match (exact when above ``low``)."""
        if self._n == 0:
            return SearchResult(-1, -1.0, np.zeros(0, np.int64), np.zeros(0, np.float32))
        if self._centroids is None:
            rows = np.arange(self._n)
            sims = self._m[: self._n] @ q
            sims[~self._alive[: self._n]] = -2.0
        else:
            rows, sims = self._partitioned(q, low)
        if len(rows) == 0:
            return SearchResult(-1, -1.0, np.zeros(0, np.int64), np.zeros(0, np.float32))
        b = int(np.argmax(sims))
        keep = sims > low
        return SearchResult(int(rows[b]), float(sims[b]), rows[keep].astype(np.int64), sims[keep])

    def _partitioned(self, q: np.ndarray, low: float) -> tuple[np.ndarray, np.ndarray]:
        cc = np.clip(self._centroids @ q, -1.0, 1.0)
        a = np.arccos(cc)
        r = np.arccos(np.clip(self._radius_cos, -1.0, 1.0))
        bound = np.cos(np.maximum(0.0, a - r))
        # The best match must be searched too: always include the nearest partition.
        candidates = np.nonzero(bound > low)[0]
        nearest = int(np.argmax(cc))
        if nearest not in candidates:
            candidates = np.append(candidates, nearest)
        if sum(len(self._members[p]) for p in candidates) > self._n // 2:
            rows = np.arange(self._n)
            sims = self._m[: self._n] @ q
            sims[~self._alive[: self._n]] = -2.0
            return rows, sims
        parts = [self._rows_of(p) for p in candidates]
        rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        if len(rows) == 0:
            return rows, np.zeros(0, np.float32)
        sims = self._m[rows] @ q
        alive = self._alive[rows]
        if not alive.all():
            rows, sims = rows[alive], sims[alive]
        best_bound = float(bound.max())
        if len(sims) and low < float(sims.max()) + 1e-6 < best_bound:
            # Some unvisited partition could still hold a better best match:
            # visit every partition whose bound beats the best found. (When
            # nothing visited is above ``low`` the best is only a lower bound:
            # callers use the best match only above low, and completing it would
            # scan almost every partition for a screen unlike any stored.)
            more = np.nonzero(bound > float(sims.max()))[0]
            seen = set(candidates.tolist())
            extra = [p for p in more if p not in seen]
            if extra:
                xr = np.concatenate([self._rows_of(p) for p in extra])
                xs = self._m[xr] @ q
                al = self._alive[xr]
                rows = np.concatenate([rows, xr[al]])
                sims = np.concatenate([sims, xs[al]])
        return rows, sims

    def _rows_of(self, p: int) -> np.ndarray:
        arr = self._member_arrays[p]
        if arr is None:
            arr = np.asarray(self._members[p], dtype=np.int64)
            self._member_arrays[p] = arr
        return arr

    # ---------------------------------------------------------- partitions
    def rebuild(self, iterations: int = 4, sample: int = 16384) -> None:
        """Coarse spherical k-means, then leader leaves inside each coarse partition.

        ~sqrt(n) coarse centroids are trained on a sample; inside each coarse
        partition, leader clustering makes leaves whose rows are within
        ``LEAF_MIN_COS`` of their leader (at most one leaf per 4 rows; rows left
        over join their nearest leader). Search prunes leaves, and a leaf with a
        wide radius is visited by almost every query: a single-level k-means with
        random init leaves many screen types without a centroid of their own
        (measured at 100k states in 2000 types: p5 radius cos 0.48, tens of
        thousands of rows gathered per search), whereas leader leaves keep radius
        cos ≥ ~0.9 on clustered features. Pruning is only an optimisation: the
        bound uses each leaf's true radius, so results stay exact on any data.
        """
        rows = np.nonzero(self._alive[: self._n])[0]
        n = len(rows)
        if n < PARTITION_MIN:
            self._centroids = None
            return
        rng = np.random.default_rng(self._seed)
        data = self._m[rows]
        k1 = max(8, int(math.sqrt(n)))
        train = data[rng.choice(n, size=min(n, max(sample, 4 * k1)), replace=False)]
        coarse = self._nearest(data, _kmeans(train, k1, iterations, rng))
        order = np.argsort(coarse, kind="stable")
        starts = np.searchsorted(coarse[order], np.arange(k1 + 1))
        assign = np.empty(n, dtype=np.int64)
        leaves = 0
        for c in range(k1):
            idx = order[starts[c] : starts[c + 1]]
            if len(idx) == 0:
                continue
            sub = data[idx]
            label = np.empty(len(idx), dtype=np.int64)
            leaders: list[int] = []
            rest = np.arange(len(idx))
            cap = max(1, len(idx) // 4)
            while len(rest) and len(leaders) < cap:
                close = sub[rest] @ sub[rest[0]] >= LEAF_MIN_COS
                close[0] = True
                label[rest[close]] = len(leaders)
                leaders.append(int(rest[0]))
                rest = rest[~close]
            if len(rest):
                label[rest] = np.argmax(sub[rest] @ sub[leaders].T, axis=1)
            assign[idx] = label + leaves
            leaves += len(leaders)
        k = leaves
        order = np.argsort(assign, kind="stable")
        starts = np.searchsorted(assign[order], np.arange(k + 1))
        cent = np.add.reduceat(data[order], starts[:-1], axis=0)
        cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), 1e-12)
        cent = cent.astype(np.float32)
        member_cos = np.einsum("ij,ij->i", data, cent[assign])
        radius = np.ones(k, dtype=np.float32)
        np.minimum.at(radius, assign, member_cos.astype(np.float32))
        self._centroids = cent
        self._radius_cos = radius
        self._members = [rows[order[starts[p] : starts[p + 1]]].tolist() for p in range(k)]
        self._partition_of = dict(zip(rows.tolist(), assign.tolist()))
        self._member_arrays = [None] * k
        self._built_at = self._n

    @staticmethod
    def _nearest(data: np.ndarray, cent: np.ndarray, chunk: int = 16384) -> np.ndarray:
        out = np.empty(len(data), dtype=np.int64)
        for i in range(0, len(data), chunk):
            out[i : i + chunk] = np.argmax(data[i : i + chunk] @ cent.T, axis=1)
        return out

    def _assign(self, row: int) -> None:
        vec = self._m[row]
        cc = self._centroids @ vec
        p = int(np.argmax(cc))
        self._members[p].append(row)
        self._member_arrays[p] = None
        self._partition_of[row] = p
        if cc[p] < self._radius_cos[p]:
            self._radius_cos[p] = float(cc[p])


class VectorStore:
    """The LanceDB table of state features plus its exact in-process index."""

    def __init__(
        self,
        directory: Path,
        dim: int,
        *,
        read_only: bool = False,
        flush_rows: int = 64,
        compact_every: int = 50,
    ) -> None:
        import lancedb
        import pyarrow as pa

        self._pa = pa
        self.dim = dim
        self.read_only = read_only
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
        elif read_only:
            self._table = None
        else:
            self._table = self._db.create_table(TABLE, schema=self._schema)
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
            tab = self._table.to_arrow()
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
                tab = self._table.to_arrow()
                have = set(zip(tab.column("id").to_pylist(), tab.column("rev").to_pylist()))
            todo = [
                (sid, rev, vec)
                for sid, rev, vec in zip(contents.ids, contents.revs, contents.vecs)
                if (sid, rev) not in have
            ]
            if todo:
                self._append(todo)
            self.journal.clear()
        return contents.torn_bytes

    def reconcile(self, committed: dict[str, int]) -> int:
        """Delete rows the graph never committed, and superseded revisions."""
        if self._table is None or self.read_only:
            return 0
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
        for i in range(0, len(clauses), 200):
            self._table.delete(" OR ".join(clauses[i : i + 200]))
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
        self._append(self._pending)
        self.journal.clear()
        self._pending = []
        if self.compact_every > 0 and self.appends % self.compact_every == 0:
            self._table.optimize()

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

    def put_many(self, ids: list[str], vecs: np.ndarray) -> None:
        """Bulk load revision 0 of many states straight into LanceDB."""
        self.flush()
        pa = self._pa
        vecs = np.asarray(vecs, dtype=np.float32)
        batch = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "rev": pa.array(np.zeros(len(ids), dtype=np.int64)),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), self.dim),
            }
        )
        self._table.add(batch)
        self.appends += 1

    def compact(self) -> None:
        """Flush the journal, merge small fragments and drop old LanceDB versions."""
        if self.read_only:
            return
        self.flush()
        if self._table is not None:
            self._table.optimize()

    def close(self) -> None:
        """Flush the journal (and compact when anything was appended since open)."""
        try:
            if not self.read_only:
                if self._pending or self.appends:
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


def _kmeans(data: np.ndarray, k: int, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Spherical k-means centroids (random init from the data)."""
    k = min(k, len(data))
    cent = data[rng.choice(len(data), size=k, replace=False)].copy()
    for _ in range(iterations):
        assign = ExactIndex._nearest(data, cent)
        order = np.argsort(assign, kind="stable")
        starts = np.searchsorted(assign[order], np.arange(k + 1))
        full = np.nonzero(np.diff(starts) > 0)[0]
        sums = np.add.reduceat(data[order], starts[full], axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        ok = norms[:, 0] > 0
        cent[full[ok]] = (sums[ok] / norms[ok]).astype(np.float32)
    return cent
