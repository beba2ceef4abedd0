"""Exact cosine search over unit vectors, fast on large memories.

Merging a screen into a state and keeping its similarity edges need *every*
neighbour above θ_simi, not an approximate top-k. This in-process index answers
exactly: it scans one matrix while small, and above :data:`PARTITION_MIN` rows
prunes partitions only when a provable bound says they cannot hold a neighbour.
Figures (flat LanceDB search, a full numpy scan, this index, at 100k × 512) are
in docs/benchmarks.md.

The constants below shape the index (how rows are grouped) and guard its
arithmetic; none changes a search result, so none is a user's tuning knob
(those live in :class:`kgagent.config.Config`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Below this many rows one matrix scan is fastest; at it, partitions are built.
PARTITION_MIN = 4096
#: Rows less similar than this to their leaf's leader start a leaf of their own.
LEAF_MIN_COS = 0.80
#: At most one leaf per this many rows of a coarse partition (leaves stay a few rows wide).
ROWS_PER_LEAF = 4
#: The fewest coarse partitions (k-means centroids); above it, about sqrt(rows).
MIN_COARSE = 8
#: Spherical k-means rounds and training sample of a rebuild: layout only, not results.
KMEANS_ITERATIONS = 4
KMEANS_SAMPLE = 16384
#: The k-means training sample holds at least this many rows per centroid.
SAMPLE_PER_CENTROID = 4
#: Scan every row when the candidate partitions hold more than 1/this of them (cheaper).
FULL_SCAN_DIVISOR = 2
#: Rows per matrix product when assigning rows to centroids (bounds temporary memory).
SCAN_CHUNK = 16384
#: Rows allocated at first; the matrix doubles when full.
INITIAL_ROWS = 1024
#: Partitions are rebuilt when the index has grown by this factor since the last build.
REBUILD_GROWTH = 2
#: The cosine given to removed rows: below any real cosine, so never a match.
DEAD_COS = -2.0
#: float32 rounding allowance when comparing a found cosine with a partition's bound.
BOUND_SLACK = 1e-6
#: Guard against dividing by a zero-length centroid sum.
NORM_FLOOR = 1e-12


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
        self._m = np.zeros((INITIAL_ROWS, dim), dtype=np.float32)
        self._n = 0  # rows used (dead rows included)
        self._alive = np.zeros(INITIAL_ROWS, dtype=bool)
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
            if self._n >= REBUILD_GROWTH * self._built_at:
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
            sims[~self._alive[: self._n]] = DEAD_COS
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
        if sum(len(self._members[p]) for p in candidates) > self._n // FULL_SCAN_DIVISOR:
            rows = np.arange(self._n)
            sims = self._m[: self._n] @ q
            sims[~self._alive[: self._n]] = DEAD_COS
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
        if len(sims) and low < float(sims.max()) + BOUND_SLACK < best_bound:
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
    def rebuild(self, iterations: int = KMEANS_ITERATIONS, sample: int = KMEANS_SAMPLE) -> None:
        """Coarse spherical k-means, then leader leaves inside each coarse partition.

        ~sqrt(n) coarse centroids are trained on a sample; inside each coarse
        partition, leader clustering makes leaves whose rows are within
        ``LEAF_MIN_COS`` of their leader (at most one leaf per ``ROWS_PER_LEAF`` rows; rows left
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
        k1 = max(MIN_COARSE, int(math.sqrt(n)))
        train = data[
            rng.choice(n, size=min(n, max(sample, SAMPLE_PER_CENTROID * k1)), replace=False)
        ]
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
            cap = max(1, len(idx) // ROWS_PER_LEAF)
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
        cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), NORM_FLOOR)
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
    def _nearest(data: np.ndarray, cent: np.ndarray, chunk: int = SCAN_CHUNK) -> np.ndarray:
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
