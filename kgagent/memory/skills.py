"""The skill library: skills, their edges between states (Eq. 1), pruning (Eq. 6's UCB).

Every skill is cached in process (the agent reads them every step); the graph is
written first, then the cache, and callers get copies, never the cached object.
"""

from __future__ import annotations

import math
import time
from typing import Any

from kgagent.actions import Operation
from kgagent.errors import MemoryStoreError
from kgagent.memory.core import MemoryCore
from kgagent.records import PruneCandidate, Skill, SkillEdge


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def fitness_term(fitness: float, alpha: float, c0: float) -> float:
    """Eq. 1's second term, (1 − α)·φ/(φ + C0); 0 when φ + C0 ≤ 0."""
    denom = fitness + c0
    return (1.0 - alpha) * (fitness / denom if denom > 0 else 0.0)


def skill_edge_weight(change: float, fitness: float, alpha: float, c0: float) -> float:
    """Eq. 1 as a pure function (see :meth:`Skills.skill_edge_weight`)."""
    return sigmoid(alpha * change + fitness_term(fitness, alpha, c0))


def _copy(skill: Skill) -> Skill:
    return Skill(**{**skill.__dict__, "operations": list(skill.operations)})


def _edge(src: str, dst: str, skill_id: str, r: dict[str, Any]) -> SkillEdge:
    return SkillEdge(
        src,
        dst,
        skill_id,
        float(r["weight"]),
        float(r["change"]),
        int(r["count"]),
        float(r["r_total"]),
    )


class Skills(MemoryCore):
    """Skill nodes and SKILL_EDGE relationships."""

    def _load_skill_cache(self) -> None:
        self._skills = {s.id: s for s in self._load_skills()}

    def _load_skills(self) -> list[Skill]:
        return [self._skill_from_row(r) for r in self._q("skills_all")]

    @staticmethod
    def _skill_from_row(r: dict[str, Any]) -> Skill:
        return Skill(
            id=r["id"],
            name=r["name"],
            description=r["description"],
            operations=Skill.parse_operations(r["operations"]),
            fitness=float(r["fitness"]),
            executions=int(r["executions"]),
            status=r["status"],
            parent_id=r["parent_id"] or None,
            failures=int(r["failures"]),
            low_rewards=int(r["low_rewards"]),
            created_at=float(r["created_at"]),
        )

    def add_skill(
        self,
        name: str,
        description: str,
        operations: list[Operation],
        *,
        parent_id: str | None = None,
    ) -> Skill:
        """A new active skill (fitness 0, never executed); ``parent_id``: the skill it refines."""
        if not operations:
            raise ValueError("a skill needs at least one operation")
        skill = Skill(
            self._next_id("k"),
            name,
            description,
            list(operations),
            parent_id=parent_id,
            created_at=time.time(),
        )
        self._q(
            "skill_create",
            skill=skill.id,
            name=name,
            description=description,
            operations=skill.operations_json(),
            parent_id=parent_id or "",
            now=skill.created_at,
        )
        self._skills[skill.id] = skill
        return _copy(skill)

    def get_skill(self, skill_id: str) -> Skill:
        s = self._skills.get(skill_id)
        if s is None:
            raise MemoryStoreError(f"no skill {skill_id}")
        return _copy(s)

    def skills(self, status: str | None = None) -> list[Skill]:
        """Every skill in creation order, or those with ``status``."""
        return [
            self.get_skill(k)
            for k, s in self._skills.items()
            if status is None or s.status == status
        ]

    def library_size(self) -> int:
        """The skills not pruned: ``stats().library_size`` without counting the graph."""
        return sum(1 for s in self._skills.values() if s.status != "pruned")

    def update_skill(self, skill: Skill) -> None:
        """Write every mutable field of ``skill`` (name to low-reward count)."""
        if skill.id not in self._skills:
            raise MemoryStoreError(f"no skill {skill.id}")
        self._q(
            "skill_update",
            skill=skill.id,
            name=skill.name,
            description=skill.description,
            operations=skill.operations_json(),
            fitness=float(skill.fitness),
            executions=int(skill.executions),
            status=skill.status,
            failures=int(skill.failures),
            low_rewards=int(skill.low_rewards),
        )
        self._skills[skill.id] = _copy(skill)

    def skill_edge_weight(self, change: float, fitness: float) -> float:
        """Eq. 1: w = sigmoid(α·Δ + (1 − α)·φ/(φ + C0)); the fitness term is 0 when φ + C0 ≤ 0."""
        m = self.config.memory
        return skill_edge_weight(change, fitness, m.alpha, m.c0)

    def upsert_skill_edge(
        self, src: str, dst: str, skill_id: str, change: float, r_total: float
    ) -> SkillEdge:
        """Record a successful execution of a skill from ``src`` landing in ``dst``.

        The edge keeps the mean Δ over its executions, the count and the last
        R_total; its weight is Eq. 1 at the skill's current fitness and the mean Δ.
        """
        skill = self._skills.get(skill_id)
        if skill is None:
            raise MemoryStoreError(f"no skill {skill_id}")
        m = self.config.memory
        fit_term = fitness_term(skill.fitness, m.alpha, m.c0)
        params = {
            "src": src,
            "dst": dst,
            "skill": skill_id,
            "alpha": float(m.alpha),
            "fit_term": float(fit_term),
            "change": float(change),
            "r_total": float(r_total),
            "now": time.time(),
        }
        rows = self._q("skill_edge_bump", **params) or self._q("skill_edge_create", **params)
        if not rows:
            raise MemoryStoreError(
                f"cannot write a skill edge between unknown states {src} → {dst}"
            )
        return _edge(src, dst, skill_id, rows[0])

    def skill_edges(self, skill_id: str) -> list[SkillEdge]:
        """Every edge the skill labels, heaviest first."""
        return [
            _edge(r["src"], r["dst"], skill_id, r)
            for r in self._q("skill_edges_of", skill=skill_id)
        ]

    def pruning_candidates(self, limit: int = 1) -> list[PruneCandidate]:
        """Skills executed more often than the library mean, lowest UCB score (Eq. 6) first.

        The UCB's exploration constant is ``library.prune_c`` (the appendix's C = 0.5):
        among skills that were tried more than most, the one with the lowest fitness goes.
        """
        c = float(self.config.library.prune_c)
        rows = self._q("pruning_candidates", c=c, limit=int(limit))
        return [
            PruneCandidate(
                r["skill"], r["name"], int(r["executions"]), float(r["fitness"]), float(r["ucb"])
            )
            for r in rows
        ]

    def prune_skill(self, skill_id: str) -> None:
        """Mark a skill pruned and remove every edge that names it (no dangling edges)."""
        if skill_id not in self._skills:
            raise MemoryStoreError(f"no skill {skill_id}")
        with self._db.transaction():
            self._q("skill_drop_edges", skill=skill_id)
            self._q("skill_drop_memberships", skill=skill_id)
            self._q("skill_drop_uses", skill=skill_id)
            self._q("skill_prune", skill=skill_id)
        self._skills[skill_id].status = "pruned"
