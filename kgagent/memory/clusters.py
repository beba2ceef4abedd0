"""Skill clusters (Eq. 5-7): named groups of skills, how often each was selected."""

from __future__ import annotations

import numpy as np

from kgagent.errors import MemoryStoreError
from kgagent.memory.core import MemoryCore
from kgagent.records import Cluster


class Clusters(MemoryCore):
    """SkillCluster nodes and MEMBER_OF links."""

    def add_cluster(self, name: str, description: str) -> Cluster:
        cid = self._next_id("c")
        self._q("cluster_create", cluster=cid, name=name, description=description)
        return Cluster(cid, name, description)

    def clusters(self) -> list[Cluster]:
        """Every cluster with its member skills, by id."""
        return [
            Cluster(
                r["id"],
                r["name"],
                r["description"],
                int(r["selections"]),
                [k for k in r["skills"] or [] if k],
            )
            for r in self._q("clusters_all")
        ]

    def add_to_cluster(self, skill_id: str, cluster_id: str) -> None:
        self._q("cluster_add_member", skill=skill_id, cluster=cluster_id)

    def cluster_of(self, skill_id: str) -> str | None:
        rows = self._q("cluster_of", skill=skill_id)
        return rows[0]["id"] if rows else None

    def record_cluster_selection(self, cluster_id: str) -> int:
        """Count one more selection of the cluster; returns the new count."""
        rows = self._q("cluster_select", cluster=cluster_id)
        if not rows:
            raise MemoryStoreError(f"no cluster {cluster_id}")
        return int(rows[0]["selections"])

    def cluster_state_features(self, cluster_id: str) -> np.ndarray:
        """Features of the states the cluster's skills were executed from (n × dim)."""
        vs = self._need_vectors()
        ids = [r["id"] for r in self._q("cluster_states", cluster=cluster_id) if r["id"] in vs]
        if not ids:
            return np.zeros((0, vs.dim), dtype=np.float32)
        return np.stack([vs.vector(i) for i in ids])
