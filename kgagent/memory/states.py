"""States of the SA-KG: merge or create (Algorithm 1, line 4), similarity edges, Eq. 2, 3, 10.

A state's vector is journalled before the graph transaction that commits it, and
mirrored into the exact index only after the commit (docs/memory.md, consistency).
The caller sizes a state's thumbnail (the agent: ``perception.thumbnail_side``);
the memory stores it as given.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np

from kgagent.errors import EncoderMismatchError, MemoryStoreError
from kgagent.memory.core import MemoryCore
from kgagent.memory.vectors import normalize
from kgagent.records import HQCandidate, StateHit


class States(MemoryCore):
    """State nodes, their features and their SIMILAR edges."""

    def merge_or_create_state(
        self, feature: np.ndarray, *, thumbnail: np.ndarray | None = None, isolated: bool = False
    ) -> StateHit:
        """Algorithm 1, line 4: merge into the most similar node or create one.

        Merge when cos > θ_merge (the merged feature is the normalised mean of
        old and new); then add/update/remove SIMILAR edges for
        θ_simi < cos ≤ θ_merge. ``isolated`` (ablation no_similarity): never
        merge and never link.
        """
        vs = self._need_vectors()
        x = normalize(feature)
        if x.shape[0] != vs.dim:
            raise EncoderMismatchError(
                f"feature has {x.shape[0]} dimensions, the memory expects {vs.dim}"
            )
        now = time.time()
        best, best_cos, near = vs.search(x, self.theta_simi) if not isolated else (None, -1.0, [])
        if best is not None and best_cos > self.theta_merge:
            merged = normalize(vs.vector(best) + x)  # normalised mean of old and new
            rev = vs.rev(best) + 1
            vs.put(best, rev, merged)
            _, _, near = vs.search(merged, self.theta_simi)
            with self._db.transaction():
                visits = self._q("state_merge_visit", state=best, now=now, rev=rev)[0]["visits"]
                added, removed = self._sync_similar(best, near, fresh=False)
            vs.commit(best, rev, merged)
            return StateHit(best, False, best_cos, int(visits), added, removed)

        sid = self._next_id("s")
        thumb = self.blobs.put_image(thumbnail) if thumbnail is not None else ""
        vs.put(sid, 0, x)
        with self._db.transaction():
            self._q("state_create", state=sid, rev=0, now=now, thumbnail=thumb)
            added, _ = self._sync_similar(sid, near, fresh=True)
        vs.commit(sid, 0, x)
        return StateHit(sid, True, 1.0, 1, added, 0)

    def _sync_similar(
        self, sid: str, near: list[tuple[str, float]], *, fresh: bool
    ) -> tuple[int, int]:
        """Make ``sid``'s SIMILAR edges those of ``near`` in (θ_simi, θ_merge]; (added, removed)."""
        want = {u: c for u, c in near if u != sid and self.theta_simi < c <= self.theta_merge}
        have = (
            {} if fresh else {r["id"]: float(r["weight"]) for r in self._q("similar_of", state=sid)}
        )
        tol = self.config.memory.similar_weight_tolerance
        create = [{"id": u, "weight": float(c)} for u, c in want.items() if u not in have]
        moved = [
            {"id": u, "weight": float(c)}
            for u, c in want.items()
            if u in have and abs(have[u] - c) > tol
        ]
        gone = [u for u in have if u not in want]
        out = [r for r in create if sid < r["id"]]  # stored once per pair, smaller id first
        into = [r for r in create if r["id"] < sid]
        if out:
            self._q("similar_create_out", state=sid, rows=out)
        if into:
            self._q("similar_create_in", state=sid, rows=into)
        if moved:
            ids = [r["id"] for r in moved]
            weights = [r["weight"] for r in moved]
            self._q("similar_set_weight_out", state=sid, ids=ids, weights=weights)
            self._q("similar_set_weight_in", state=sid, ids=ids, weights=weights)
        if gone:
            self._q("similar_delete_out", state=sid, ids=gone)
            self._q("similar_delete_in", state=sid, ids=gone)
        return len(create), len(gone)

    def state_feature(self, state_id: str) -> np.ndarray:
        """The state's committed feature (unit vector)."""
        vs = self._need_vectors()
        if state_id not in vs:
            raise MemoryStoreError(f"no feature for state {state_id}")
        return vs.vector(state_id)

    def neighbourhood(self, state_id: str) -> list[tuple[str, float]]:
        """Eq. 2: N_E(v) = {v} ∪ {u : (v, u) ∈ E_sim}, with the edge weights (v itself: 1.0)."""
        rows = [(r["id"], float(r["weight"])) for r in self._q("neighbourhood", state=state_id)]
        return sorted(rows, key=lambda r: (-r[1], r[0]))

    def hq_candidates(self, state_id: str) -> list[HQCandidate]:
        """Eq. 3: active skills on outgoing skill edges of N_E(v), each at its best weight."""
        out: dict[str, HQCandidate] = {}
        rows = self._q("hq_candidates", state=state_id)
        rows.sort(key=lambda r: (-r["weight"], r["skill"], r["from_state"], r["to_state"]))
        for r in rows:
            k = r["skill"]
            skill = self._skills.get(k)
            if k in out or skill is None or skill.status != "active":
                continue
            out[k] = HQCandidate(k, float(r["weight"]), r["from_state"], r["to_state"])
        return sorted(out.values(), key=lambda c: (-c.weight, c.skill_id))

    def state_potential(self, state_id: str) -> float:
        """Eq. 10: V_S(v) = Σ weights of v's outgoing skill edges (0 for an unknown state).

        Summed with :func:`math.fsum`, exactly rounded whatever the order the engine
        gives the weights in: the same run has the same R_state on either engine."""
        rows = self._q("state_potential", state=state_id)
        weights = (rows[0]["weights"] or []) if rows else []  # Kùzu: null for no edge
        return math.fsum(float(w) for w in weights if w is not None)

    def state_stats(self, state_id: str) -> dict[str, Any] | None:
        """The state's exploration statistics (JSON; see ``kgagent.agent.state_stats``)."""
        rows = self._q("state_stats_get", state=state_id)
        if not rows or not rows[0]["mcts"]:
            return None
        return json.loads(rows[0]["mcts"])

    def put_state_stats(self, state_id: str, stats: dict[str, Any]) -> None:
        """Store the state's exploration statistics as JSON text (never pickled)."""
        self._q("state_stats_put", state=state_id, stats=json.dumps(stats, sort_keys=True))
