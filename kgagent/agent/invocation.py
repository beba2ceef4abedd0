"""Two-stage skill invocation: SA-KG sampling (Eq. 4), then cluster UCB + softmax (Eq. 6–7).

Stage 1 samples high-quality candidates from the neighbourhood of experience
in proportion to their skill-edge weights. Stage 2 scores the skills of the
cluster the brain picked with a UCB score (Eq. 6), turns the scores into a
distribution with a max-normalised, clipped, temperature softmax (Eq. 7), and
lets an "explore" arm compete with the skills: sampling it (or its mass
exceeding the exploration dominance trigger) sends the step to augmentation.

Everything here is a pure function of its inputs plus a random generator, so
each equation is testable with hand-computed numbers. The explore arm's per-state
visits come from :class:`~kgagent.agent.state_stats.StateStats`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgagent.config import InvocationConfig
from kgagent.records import HQCandidate, Skill

from .state_stats import EXPLORE


# --------------------------------------------------------------------------- stage 1: SA-KG
def hq_probabilities(weights: Sequence[float]) -> np.ndarray:
    """Eq. 4: ``P(σ_k) = w_k / Σ_l w_l``.

    Skill-edge weights are sigmoids, hence positive; a non-positive or
    non-finite weight is treated as 0, and if nothing positive is left the
    distribution is uniform (every candidate is still worth a try).
    """
    w = np.asarray(weights, dtype=float)
    if w.size == 0:
        return w
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    total = w.sum()
    if total <= 0:
        return np.full(w.size, 1.0 / w.size)
    return w / total


def sample_hq(
    candidates: Sequence[HQCandidate], m: int, rng: np.random.Generator
) -> list[HQCandidate]:
    """Up to ``m`` candidates sampled without replacement by Eq. 4.

    Sequential draws: each draw uses Eq. 4 renormalised over the candidates not
    drawn yet, which is what "sample up to M skills without replacement with
    P ∝ w" means for a weighted urn.
    """
    pool = list(candidates)
    out: list[HQCandidate] = []
    while pool and len(out) < m:
        p = hq_probabilities([c.weight for c in pool])
        i = int(rng.choice(len(pool), p=p))
        out.append(pool.pop(i))
    return out


# --------------------------------------------------------------------------- stage 2: clusters
def exploration_bonus(total_selections: int, executions: int, c1: float) -> float:
    """Eq. 6's ``C1·sqrt(ln N_i / n_k)``.

    ``N_i`` and ``n_k`` are floored at 1: ``ln 1 = 0`` gives no bonus before a
    cluster has been chosen twice, and a skill never executed (possible only
    for a skill created outside augmentation, which executes every new skill
    once) gets the bonus of a skill executed once instead of +∞, which would
    break the softmax.
    """
    n_total = max(int(total_selections), 1)
    n_k = max(int(executions), 1)
    return c1 * math.sqrt(math.log(n_total) / n_k)


def ucb_scores(
    skills: Sequence[Skill],
    total_selections: int,
    c1: float,
    missing_share: Sequence[float],
    penalty: float,
) -> np.ndarray:
    """Eq. 6: ``η_k = φ(σ_k) + C1·sqrt(ln N_i / n_k) − P(σ_k)``, ``P = penalty × missing share``."""
    return np.array(
        [
            s.fitness + exploration_bonus(total_selections, s.executions, c1) - penalty * float(ms)
            for s, ms in zip(skills, missing_share, strict=True)
        ],
        dtype=float,
    )


def can_start(skill: Skill, present: Callable[[str], bool]) -> bool:
    """Whether the skill's first operation has all its objects on screen.

    The objects of later operations may appear only after the first ones act (a
    menu item after its menu), so only the first operation's are required now.
    Without them grounding fails before any input reaches the program: the
    execution is a certain failure, whatever the other objects' share.
    """
    if not skill.operations:
        return False
    return all(present(o) for o in skill.operations[0].object_ids())


def can_act(skill: Skill, present: Callable[[str], bool]) -> bool:
    """The pre-filter both stages share: not all of the skill's objects are missing, and
    its first operation can start (:func:`can_start`)."""
    ids = skill.object_ids()
    return not (ids and not any(present(o) for o in ids)) and can_start(skill, present)


def prefilter(
    skills: Sequence[Skill],
    missing_share: Sequence[float],
    stale: Sequence[bool] | None = None,
    startable: Sequence[bool] | None = None,
) -> list[int]:
    """Indices of skills worth scoring: active, not all objects missing, startable, not stale.

    A skill with no objects at all (keys, raw points) has a missing share of 0
    and always passes. ``startable[k]`` is :func:`can_start` for skill k: the
    appendix's pre-filter "excludes actions requiring unavailable objects", and
    the objects of the first operation are required before anything can act.
    The missing share of the others stays Eq. 6's penalty. ``stale[k]`` marks a
    skill that recently failed to make progress from this state (the loop's
    anti-cycling, ``invocation.stale_steps``); it is filtered like a suspended one.
    """
    keep = []
    for i, (s, ms) in enumerate(zip(skills, missing_share, strict=True)):
        if s.status != "active":
            continue
        if stale is not None and stale[i]:
            continue
        if s.object_ids() and float(ms) >= 1.0:
            continue
        if startable is not None and not startable[i]:
            continue
        keep.append(i)
    return keep


def temperature(total_selections: int, cfg: InvocationConfig) -> float:
    """τ decays with the cluster's total selections: ``max(τ_min, τ_start / (1 + decay·N_i))``.

    Early on the softmax is flat (explore the cluster), later it sharpens onto
    the best skills (exploit), the schedule the appendix describes.
    """
    return max(cfg.tau_min, cfg.tau_start / (1.0 + cfg.tau_decay * max(total_selections, 0)))


def softmax_probabilities(scores: Sequence[float], tau: float, clip: float) -> np.ndarray:
    """Eq. 7 with the appendix's numerical safeguards.

    1. max-normalise: divide the scores by their largest magnitude, so that τ
       means the same thing whatever C1 and the reward scale are;
    2. temperature softmax ``exp(η/τ) / Σ exp(η/τ)`` (shifted by the max for
       stability; the shift cancels out);
    3. clip every probability to ``[clip, 1 − clip]`` and renormalise, so no
       arm is ever impossible nor certain.
    """
    eta = np.asarray(scores, dtype=float)
    if eta.size == 0:
        return eta
    if eta.size == 1:
        return np.ones(1)
    scale = float(np.max(np.abs(eta)))
    if scale > 0:
        eta = eta / scale
    logits = eta / max(float(tau), 1e-9)
    logits = logits - logits.max()
    p = np.exp(logits)
    p = p / p.sum()
    if clip > 0:
        p = np.clip(p, clip, 1.0 - clip)
        p = p / p.sum()
    return p


@dataclass
class ClusterChoice:
    """What stage 2 decided, with the numbers behind it (logged)."""

    skill_id: str | None  # None: explore (augmentation)
    pure_exploration: bool  # explore mass > trigger: no sampling at all
    explore_prob: float
    tau: float
    arms: list[str] = field(default_factory=list)  # skill ids ..., EXPLORE last
    scores: list[float] = field(default_factory=list)
    probabilities: list[float] = field(default_factory=list)


def choose_in_cluster(
    skills: Sequence[Skill],
    missing_share: Sequence[float],
    total_selections: int,
    explore_visits: int,
    cfg: InvocationConfig,
    rng: np.random.Generator,
    stale: Sequence[bool] | None = None,
    startable: Sequence[bool] | None = None,
) -> ClusterChoice:
    """Score the cluster's skills (Eq. 6), add the explore arm, softmax (Eq. 7), sample.

    The explore arm's utility is ``base_exploration_utility`` plus the same
    UCB bonus with ``n`` = how often exploration was chosen in *this state*
    (from its MCTS tree). Familiar states therefore explore less than states
    where augmentation has rarely been tried, while ``N_i`` keeps growing with
    the cluster's use. When the explore arm's probability exceeds
    ``exploration_trigger`` the step is pure exploration — and so it is when the
    pre-filter (suspended, all objects missing, first operation's objects missing,
    ``stale``) leaves no skill.
    """
    keep = prefilter(skills, missing_share, stale, startable)
    kept = [skills[i] for i in keep]
    tau = temperature(total_selections, cfg)
    eta = ucb_scores(
        kept,
        total_selections,
        cfg.c1,
        [missing_share[i] for i in keep],
        cfg.missing_object_penalty,
    )
    explore_eta = cfg.base_exploration_utility + exploration_bonus(
        total_selections, explore_visits, cfg.c1
    )
    scores = np.append(eta, explore_eta)
    arms = [s.id for s in kept] + [EXPLORE]
    p = softmax_probabilities(scores, tau, cfg.prob_clip)
    explore_prob = float(p[-1])
    if explore_prob > cfg.exploration_trigger or not kept:
        chosen: str | None = None
        pure = True
    else:
        i = int(rng.choice(len(arms), p=p))
        chosen = None if arms[i] == EXPLORE else arms[i]
        pure = False
    return ClusterChoice(
        skill_id=chosen,
        pure_exploration=pure,
        explore_prob=explore_prob,
        tau=tau,
        arms=arms,
        scores=[float(x) for x in scores],
        probabilities=[float(x) for x in p],
    )
