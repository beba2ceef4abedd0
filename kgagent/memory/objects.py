"""UI objects: memory-wide, deduplicated by look, told apart by text; linked to states and skills.

Two crops are the same object when they look the same (perceptual hashes within
``memory.object_hash_distance`` bits, sizes within ``memory.object_size_tolerance``) and
their labels do not name two different controls. Labels are compared by their letters
(:func:`~kgagent.records.control_key`): digits are values a control shows ("Open (3)"),
not its name; a label with fewer than two letters names nothing and decides nothing.

Why text separates but does not join: two buttons of one style with short words look
alike to a 64-bit hash, and their text is what tells them apart. Two crops that look
different but show the same text are often one control in two states (highlighted and
plain, playable and greyed); the look is what tells those states apart, and the skills
learned on one do not work on the other. Joining them by text cost the card game its
progression (docs/perception.md, "Reading"), so they stay two objects, with the same
name, and execution finds either by its text when its look is gone
(:meth:`kgagent.agent.observation.Observer.ground_text`).

The hashes, sizes and label keys of every object are kept in process as arrays, and the
hashes in an exact index (:class:`~kgagent.memory.hash_index.HammingIndex`), so finding
"the same object" is one vectorised test over the few objects that can match, not a
query.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kgagent.errors import MemoryStoreError
from kgagent.memory.core import MemoryCore
from kgagent.memory.hash_index import HammingIndex
from kgagent.records import UIObject, control_key, names_control

#: pHashes are 64-bit; the graph stores them as 16 hex digits.
PHASH_MASK = 0xFFFFFFFFFFFFFFFF
#: A distance larger than any 64-bit Hamming distance: marks rows that do not match.
_NO_MATCH = 1 << 30
#: Looks whose answers are remembered (then forgotten all at once): a screen has at most
#: ``perception.max_objects`` segments, so this holds the looks of many screens.
_LOOKS_KEPT = 8192


class Objects(MemoryCore):
    """Object nodes and their HAS_OBJECT (state) and USES (skill) links."""

    _hashes: np.ndarray  # uint64 pHash per cached object (the first len(_object_ids) rows)
    _sizes: np.ndarray  # (w, h) per cached object (likewise)
    _keys: list[str]  # label key per object ("" when it names no control)
    _object_ids: list[str]  # ids in the order of the arrays
    # (pHash, w, h, label key) -> (objects tested, index of the answer or -1, its distance)
    _looks: dict[tuple[int, int, int, str], tuple[int, int, int]]

    def _load_object_cache(self) -> None:
        self._objects = {}
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._sizes = np.zeros((0, 2), dtype=np.float64)
        self._keys = []
        self._object_ids = []
        self._looks = {}
        self._hash_index = HammingIndex(self.config.memory.object_hash_distance)
        for r in self._q("objects_all"):
            self._cache_object(self._object_from_row(r))

    @staticmethod
    def _object_from_row(r: dict[str, Any]) -> UIObject:
        return UIObject(
            r["id"],
            r["name"],
            (int(r["x"]), int(r["y"]), int(r["w"]), int(r["h"])),
            int(r["phash"], 16),
            r["crop"],
            label=r.get("label") or "",
        )

    def _cache_object(self, obj: UIObject) -> None:
        n = len(self._object_ids)
        if n == len(self._hashes):  # grown by doubling: a long run adds tens of thousands
            cap = max(64, 2 * n)
            self._hashes = np.resize(self._hashes, cap)
            self._sizes = np.resize(self._sizes, (cap, 2))
        self._objects[obj.id] = obj
        self._object_ids.append(obj.id)
        _, _, w, h = obj.bbox
        self._hashes[n] = np.uint64(obj.phash)
        self._sizes[n] = (w, h)
        self._keys.append(control_key(obj.label) if names_control(obj.label) else "")
        self._hash_index.add(obj.phash)

    def _uncache_objects(self, keep: int) -> None:
        """Forget the cached objects after the first ``keep`` (their write failed)."""
        gone = [int(h) for h in self._hashes[keep : len(self._object_ids)]]
        self._hash_index.truncate(keep, gone)
        self._looks.clear()  # an answer may be one of the forgotten objects
        for oid in self._object_ids[keep:]:
            self._objects.pop(oid, None)
        del self._object_ids[keep:], self._keys[keep:]

    def find_object(self, phash: int, size: tuple[int, int], label: str = "") -> UIObject | None:
        """The stored object with this perceptual hash (within tolerance) and size, whose
        label does not name another control than ``label`` ("" contradicts nothing).
        Among several, the nearest hash, then the first stored. Only the objects that the
        hash index (:mod:`kgagent.memory.hash_index`) names can match; they are tested
        (for a look asked before, only those stored since: see the module text)."""
        phash = int(phash)
        w, h = max(int(size[0]), 1), max(int(size[1]), 1)
        key = control_key(label) if names_control(label) else ""
        look = (phash, w, h, key)
        n = len(self._object_ids)
        seen, best, best_dist = self._looks.get(look, (0, -1, _NO_MATCH))
        if seen < n:
            cand = self._hash_index.candidates(phash)
            if seen:
                cand = cand[cand >= seen]
            idx, dist = self._nearest(cand, phash, w, h, key)
            if dist < best_dist:
                best, best_dist = idx, dist
            if len(self._looks) >= _LOOKS_KEPT:
                self._looks.clear()
            self._looks[look] = (n, best, best_dist)
        return None if best < 0 else self._objects[self._object_ids[best]]

    def _nearest(self, cand: np.ndarray, phash: int, w: int, h: int, key: str) -> tuple[int, int]:
        """(index, distance) of the first nearest matching object among ``cand`` (ascending
        indices); (-1, _NO_MATCH) when none matches."""
        if not len(cand):
            return -1, _NO_MATCH
        m = self.config.memory
        dist = np.bitwise_count(np.bitwise_xor(self._hashes[cand], np.uint64(phash))).astype(int)
        sizes = self._sizes[cand]
        rel = np.abs(sizes - [w, h]) / np.maximum(sizes, [w, h])
        ok = (dist <= m.object_hash_distance) & (rel.max(axis=1) <= m.object_size_tolerance)
        if key and ok.any():
            ok &= np.fromiter((self._keys[i] in ("", key) for i in cand), bool, len(cand))
        if not ok.any():
            return -1, _NO_MATCH
        at = int(np.argmin(np.where(ok, dist, _NO_MATCH)))
        return int(cand[at]), int(dist[at])

    def upsert_object(
        self,
        crop: np.ndarray,
        bbox: tuple[int, int, int, int],
        phash: int,
        name: str | None = None,
        label: str = "",
    ) -> UIObject:
        """The memory-wide object for this crop: an existing one (same look, no other text)
        or a new one. ``label``: the text read from ``crop`` ("" when none)."""
        return self.upsert_objects([(crop, bbox, phash, label)], names=[name])[0]

    def upsert_objects(
        self,
        segments: Sequence[tuple[np.ndarray | None, tuple[int, int, int, int], int, str]],
        names: Sequence[str | None] | None = None,
        *,
        blob_of: Callable[[int], str] | None = None,
    ) -> list[UIObject]:
        """:meth:`upsert_object` for each ``(crop, bbox, phash, label)`` of a screen, in order;
        the new objects are written in one statement. A segment that looks like one earlier
        in the list is that object. If the write fails, no object of the list is kept.
        ``blob_of(i)``: the blob id of segment ``i``'s crop, stored already (a merge copies
        its source's bytes), asked only for the segments that become new objects; without
        it the crop is stored."""
        out: list[UIObject] = []
        rows: list[dict[str, Any]] = []
        cached = len(self._object_ids)
        seq = self._seq.get("o", 0)
        now = time.time()
        for i, (crop, bbox, phash, label) in enumerate(segments):
            bbox = tuple(int(v) for v in bbox)
            label = " ".join(str(label or "").split())
            hit = self.find_object(int(phash), (bbox[2], bbox[3]), label)
            if hit is not None:
                out.append(
                    UIObject(hit.id, hit.name, hit.bbox, hit.phash, hit.crop_blob, False, hit.label)
                )
                continue
            oid = self._next_id("o")
            blob = blob_of(i) if blob_of is not None else self.blobs.put_image(crop)
            name = (names[i] if names else None) or (
                f'"{label}"' if label else f"object_{len(self._object_ids) + 1}"
            )
            code = int(phash) & PHASH_MASK
            rows.append(
                {
                    "id": oid,
                    "name": name,
                    "crop": blob,
                    "x": bbox[0],
                    "y": bbox[1],
                    "w": bbox[2],
                    "h": bbox[3],
                    "phash": f"{code:016x}",
                    "label": label,
                }
            )
            obj = UIObject(oid, name, bbox, code, blob, created=True, label=label)
            self._cache_object(obj)  # later segments of this screen find it
            out.append(obj)
        if rows:
            try:
                self._q("object_create", rows=rows, now=now)
            except BaseException:
                self._uncache_objects(cached)
                self._seq["o"] = seq
                raise
        return out

    def get_object(self, object_id: str) -> UIObject:
        obj = self._objects.get(object_id)
        if obj is None:
            raise MemoryStoreError(f"no object {object_id}")
        return obj

    def object_crop(self, object_id: str) -> np.ndarray:
        """The object's reference crop (RGB)."""
        return self.blobs.get_image(self.get_object(object_id).crop_blob)

    def link_state_objects(self, state_id: str, object_ids: list[str]) -> None:
        """The state shows these objects (links that exist stay; one statement)."""
        ids = list(dict.fromkeys(str(o) for o in object_ids))
        if ids:
            self._q("state_object_link", state=state_id, objects=ids)

    def state_objects(self, state_id: str) -> list[UIObject]:
        """The objects seen on a state, top to bottom, left to right."""
        return [self._object_from_row(r) for r in self._q("state_objects", state=state_id)]

    def link_skill_objects(self, skill_id: str, object_ids: list[str]) -> None:
        """The skill uses these objects, in the order of its operations' references: its
        links are replaced (a rewrite, or its undoing, names other objects), in one
        transaction: a refused write (a full disk) leaves the old links, not none."""
        db = self._db
        assert db is not None
        if db.in_transaction:  # a caller's (a merge): part of it
            self._relink_skill(skill_id, object_ids)
        else:
            with db.transaction():
                self._relink_skill(skill_id, object_ids)

    def _relink_skill(self, skill_id: str, object_ids: list[str]) -> None:
        self._q("skill_drop_uses", skill=skill_id)
        for pos, oid in enumerate(object_ids):
            self._q("skill_object_link", skill=skill_id, object=oid, position=pos)
