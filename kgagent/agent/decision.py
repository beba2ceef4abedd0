"""What a step's choices were made from, for its step log line (``decision``).

A person reading a run asks why a step took its path: which skills stage 1 could draw
and with what probability (Eq. 4), which draws were skipped and why, which cluster the
brain chose and how Eq. 6-7 weighed its skills against exploring. The loop makes those
choices (:mod:`kgagent.agent.loop`); this module only writes them down, in lists
bounded by :data:`TOP`, so that a large library does not make every line long.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgagent.records import HQCandidate

from .invocation import ClusterChoice, hq_probabilities

#: Entries kept of each list (the most probable first); the counts say how many there were.
TOP = 10


def _r(x: float) -> float:
    return round(float(x), 4)


def hq_decision(candidates: Sequence[HQCandidate], stale: int) -> dict[str, Any]:
    """Stage 1 before its draws: the candidates of S_HQ(v_i) (Eq. 3) with their edge
    weight and Eq. 4 probability, the most probable first; ``stale``: those left out
    because they just failed to progress from this state."""
    p = hq_probabilities([c.weight for c in candidates])
    ranked = sorted(zip(candidates, p, strict=True), key=lambda cp: -cp[1])
    return {
        "candidates": len(candidates),
        "stale": stale,
        "top": [[c.skill_id, _r(c.weight), _r(q)] for c, q in ranked[:TOP]],
        "ran": [],
        "skipped": {"inactive": 0, "cannot_start": 0},
    }


def cluster_decision(
    offered: int, chosen: str | None, choice: ClusterChoice | None = None, members: int = 0
) -> dict[str, Any]:
    """Stage 2: how many clusters were offered, the one the brain chose (None: none
    fits), and, when one was, its ``members`` (not pruned), Eq. 6's scores and Eq. 7's
    probabilities of the arms (the members that passed the pre-filter: active, not
    stale, able to start; then ``explore``, last), τ, whether exploring was decided
    without a draw (``pure_exploration``: the explore arm's mass above the trigger, or no
    member left) and what was picked (a skill id, or ``explore``)."""
    out: dict[str, Any] = {"offered": offered, "chosen": chosen}
    if choice is None:
        return out
    arms = list(zip(choice.arms, choice.scores, choice.probabilities, strict=True))
    skills = sorted(arms[:-1], key=lambda a: -a[2])
    out.update(
        members=members,
        arms=len(arms),
        top=[[a, _r(s), _r(q)] for a, s, q in [*skills[:TOP], arms[-1]]],
        tau=_r(choice.tau),
        pure_exploration=choice.pure_exploration,
        picked=choice.skill_id or "explore",
    )
    return out
