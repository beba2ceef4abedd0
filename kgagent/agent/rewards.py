"""The implicit reward of the papers' Eq. 9–11 and the bounded fitness update.

No reward comes from the program being operated. Every term is computed by the
agent from what it saw: the brain's two judgements (``R_progress``,
``R_semantic``), the SA-KG's state potentials (``R_state``, Eq. 10) and whether
the landing state is new (``R_novel``, Eq. 11). Each term has an ablation
switch in :class:`kgagent.config.RewardConfig`; a switched-off term is reported
as 0 so that logs of different ablations line up column by column.

These are pure functions: the unit tests check them with exact numbers, and the
loop (:mod:`kgagent.agent.loop`) only wires memory values into them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kgagent.brain.base import Judgement
from kgagent.config import RewardConfig


@dataclass(frozen=True)
class RewardTerms:
    """The four terms of Eq. 9 as they entered the sum (already switched and scaled)."""

    progress: float
    semantic: float
    state: float
    novel: float

    @property
    def total(self) -> float:
        # Eq. 9: R_total = R_progress + R_semantic + R_state + R_novel
        return self.progress + self.semantic + self.state + self.novel

    def to_dict(self) -> dict[str, float]:
        d = asdict(self)
        d["total"] = self.total
        return d


def novelty_reward(created: bool, cfg: RewardConfig) -> float:
    """Eq. 11: ``novel_new`` (1.0) if the landing state was not in the graph before, else 0.015.

    The small positive value for a known state keeps a harmless, repeatable
    skill slightly above zero, so that ``r_prune`` (default 0) removes only
    skills that actively lower the state potential.
    """
    return cfg.novel_new if created else cfg.novel_known


def judgement_terms(j: Judgement | None, cfg: RewardConfig) -> tuple[float, float]:
    """(R_progress, R_semantic) from the brain's booleans; ``None`` (could not judge) counts as no."""
    if j is None:
        return 0.0, 0.0
    progress = cfg.progress_reward if j.progressive else 0.0
    semantic = cfg.semantic_reward if j.consistent else 0.0
    return progress, semantic


def r_total(
    progress: float,
    semantic: float,
    state_value_delta: float,
    novel: float,
    cfg: RewardConfig,
) -> RewardTerms:
    """Eq. 9 with the ablation switches and the configurable ``R_state : R_novel`` coefficients.

    ``state_value_delta`` is Eq. 10's raw difference and ``novel`` Eq. 11's raw
    value; ``cfg.state_coef`` and ``cfg.novel_coef`` weight them (1 : 1 by
    default, the papers' choice).
    """
    return RewardTerms(
        progress=float(progress) if cfg.use_progress else 0.0,
        semantic=float(semantic) if cfg.use_semantic else 0.0,
        state=cfg.state_coef * float(state_value_delta) if cfg.use_state else 0.0,
        novel=cfg.novel_coef * float(novel) if cfg.use_novelty else 0.0,
    )


def update_fitness(fitness: float, reward: float, decay: float) -> float:
    """φ ← d·φ + (1 − d)·R_total: an exponentially decayed mean of the skill's rewards.

    Why not the published code's running sum (φ ← φ + R)? A sum grows without
    bound with the execution count, so an old, mediocre skill executed often
    outranks a new, excellent one in Eq. 6, and Eq. 1's ``φ/(φ + C0)`` saturates
    at 1 for every frequently used skill, erasing the difference between good
    and bad skills in the edge weights. The decayed mean stays within the range
    of R_total, follows recent evidence (the environment changes), and starts
    from the papers' φ = 0.
    """
    if not 0.0 <= decay < 1.0:
        raise ValueError(f"fitness decay must be in [0, 1), got {decay}")
    return decay * float(fitness) + (1.0 - decay) * float(reward)
