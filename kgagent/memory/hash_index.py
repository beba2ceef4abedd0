"""Which stored 64-bit hashes may lie within a Hamming distance of a query: an exact index.

Memory finds "the same object" by perceptual hash (within ``memory.object_hash_distance``
bits) and size. A scan of every object costs O(objects) per segment, and a long run on a
textured program stores tens of thousands of objects, each screen looking up dozens of
segments (docs/benchmarks.md, "Where a step's time goes").

The index splits the 64 bits into ``distance + 1`` chunks and keeps, per chunk, the
objects by that chunk's value. Two hashes within ``distance`` bits differ in at most
``distance`` chunks, so they agree on at least one (the pigeonhole principle): the
union of the query's buckets holds every hash within the distance, and the caller's
exact test on those candidates gives what the scan would have given (multi-index
hashing, Norouzi et al., CVPR 2012). A distance of 64 or more would need chunks of
less than a bit: then every stored hash is a candidate.
"""

from __future__ import annotations

import numpy as np

BITS = 64


class HammingIndex:
    """Positions ``0, 1, …`` of added hashes, by chunk value (see the module docstring)."""

    def __init__(self, distance: int) -> None:
        self.distance = max(0, int(distance))
        self._n = 0
        self._chunks: list[tuple[int, int]] = []  # (shift, mask) per chunk
        if self.distance < BITS:
            k = self.distance + 1
            start = 0
            for j in range(k):
                width = BITS // k + (1 if j < BITS % k else 0)
                self._chunks.append((start, (1 << width) - 1))
                start += width
        self._buckets: list[dict[int, list[int]]] = [{} for _ in self._chunks]

    def __len__(self) -> int:
        return self._n

    def _keys(self, value: int) -> list[int]:
        return [(value >> shift) & mask for shift, mask in self._chunks]

    def add(self, value: int) -> int:
        """Index ``value`` (a 64-bit hash) at the next position; returns that position."""
        pos = self._n
        for bucket, key in zip(self._buckets, self._keys(int(value)), strict=True):
            bucket.setdefault(key, []).append(pos)
        self._n += 1
        return pos

    def truncate(self, keep: int, values: list[int]) -> None:
        """Forget the positions from ``keep`` on; ``values``: the hashes added there, in order."""
        for value in reversed(values):
            for bucket, key in zip(self._buckets, self._keys(int(value)), strict=True):
                pos = bucket.get(key)
                if pos is None:
                    continue  # emptied for an earlier value of the same bucket
                while pos and pos[-1] >= keep:
                    pos.pop()
                if not pos:
                    del bucket[key]
        self._n = min(self._n, keep)

    def candidates(self, value: int) -> np.ndarray:
        """Every position whose hash may be within the distance of ``value``, ascending."""
        if not self._chunks:
            return np.arange(self._n)
        found: list[int] = []
        for bucket, key in zip(self._buckets, self._keys(int(value)), strict=True):
            pos = bucket.get(key)
            if pos:
                found.extend(pos)
        if not found:
            return np.zeros(0, dtype=np.intp)
        return np.unique(np.asarray(found, dtype=np.intp))
