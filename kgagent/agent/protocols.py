"""What the agent needs of a memory: the methods it calls, as a protocol.

:class:`kgagent.memory.Memory` implements it over LadybugDB/Kùzu and LanceDB; a test
may pass anything with these methods. The agent never touches the engines, Cypher or
files: it talks to this interface only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from kgagent.actions import Operation
from kgagent.records import (
    Cluster,
    GraphStats,
    HQCandidate,
    PruneCandidate,
    Skill,
    SkillEdge,
    StateHit,
    UIObject,
)


class MemoryAPI(Protocol):
    """The memory calls of Algorithm 1 and library upkeep."""

    # states (Eq. 2-3, 10)
    def merge_or_create_state(
        self, feature: np.ndarray, *, thumbnail: np.ndarray | None = None, isolated: bool = False
    ) -> StateHit: ...

    def state_feature(self, state_id: str) -> np.ndarray: ...

    def hq_candidates(self, state_id: str) -> list[HQCandidate]: ...

    def state_potential(self, state_id: str) -> float: ...

    def state_stats(self, state_id: str) -> dict[str, Any] | None: ...

    def put_state_stats(self, state_id: str, stats: dict[str, Any]) -> None: ...

    # objects
    def upsert_object(
        self, crop: np.ndarray, bbox: tuple[int, int, int, int], phash: int, name: str | None = None
    ) -> UIObject: ...

    def upsert_objects(
        self, segments: Sequence[tuple[np.ndarray, tuple[int, int, int, int], int, str]]
    ) -> list[UIObject]: ...

    def get_object(self, object_id: str) -> UIObject: ...

    def object_crop(self, object_id: str) -> np.ndarray: ...

    def state_objects(self, state_id: str) -> list[UIObject]: ...

    def link_state_objects(self, state_id: str, object_ids: list[str]) -> None: ...

    # skills (Eq. 1)
    def add_skill(
        self,
        name: str,
        description: str,
        operations: list[Operation],
        *,
        parent_id: str | None = None,
    ) -> Skill: ...

    def get_skill(self, skill_id: str) -> Skill: ...

    def skills(self, status: str | None = None) -> list[Skill]: ...

    def library_size(self) -> int: ...

    def update_skill(self, skill: Skill) -> None: ...

    def link_skill_objects(self, skill_id: str, object_ids: list[str]) -> None: ...

    def upsert_skill_edge(
        self, src: str, dst: str, skill_id: str, change: float, r_total: float
    ) -> SkillEdge: ...

    def skill_edges(self, skill_id: str) -> list[SkillEdge]: ...

    def pruning_candidates(self, limit: int = 1) -> list[PruneCandidate]: ...

    def prune_skill(self, skill_id: str) -> None: ...

    # clusters (Eq. 5-7)
    def clusters(self) -> list[Cluster]: ...

    def add_cluster(self, name: str, description: str) -> Cluster: ...

    def add_to_cluster(self, skill_id: str, cluster_id: str) -> None: ...

    def record_cluster_selection(self, cluster_id: str) -> int: ...

    def cluster_state_features(self, cluster_id: str) -> np.ndarray: ...

    # program-wide input statistics (augmentation's A3 ranking)
    def input_counts(self) -> dict[str, tuple[str, int, int]]: ...

    def add_input_counts(self, counts: dict[str, tuple[str, int, int]]) -> None: ...

    # Table 2
    def stats(self) -> GraphStats: ...
