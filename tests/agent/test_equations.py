"""Each equation of the loop on small hand-built inputs, with numbers worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.agent.invocation import (
    EXPLORE,
    can_start,
    choose_in_cluster,
    exploration_bonus,
    hq_probabilities,
    prefilter,
    sample_hq,
    softmax_probabilities,
    temperature,
    ucb_scores,
)
from kgagent.agent.rewards import (
    judgement_terms,
    novelty_reward,
    r_total,
    update_fitness,
)
from kgagent.agent.state_stats import StateStats
from kgagent.brain.base import Judgement
from kgagent.config import Config, InvocationConfig, RewardConfig
from kgagent.memory import HQCandidate, Skill, skill_edge_weight


def _skill(
    sid: str, fitness: float = 0.0, n: int = 1, objects: int = 0, status: str = "active"
) -> Skill:
    ops = [Operation("click", object_id=f"{sid}-o{i}") for i in range(objects)] or [
        Operation("key", key="enter")
    ]
    return Skill(sid, sid, "", ops, fitness=fitness, executions=n, status=status)


# ------------------------------------------------------------------ Eq. 1
def test_eq1_skill_edge_weight_exact() -> None:
    # sigmoid(0.7·0.5 + 0.3·5/(5+5)) = sigmoid(0.5)
    assert skill_edge_weight(0.5, 5.0, 0.7, 5.0) == pytest.approx(0.6224593312018546, abs=1e-12)
    # φ + C0 ≤ 0: the fitness term counts as 0 -> sigmoid(0.7·0.2)
    assert skill_edge_weight(0.2, -5.0, 0.7, 5.0) == pytest.approx(0.5349429451582145, abs=1e-12)


def test_eq1_through_memory(memory) -> None:
    assert memory.skill_edge_weight(0.5, 5.0) == pytest.approx(0.6224593312018546, abs=1e-12)


# ------------------------------------------------------------------ Eq. 4
def test_eq4_probabilities_proportional_to_weights() -> None:
    np.testing.assert_allclose(hq_probabilities([0.6, 0.3, 0.1]), [0.6, 0.3, 0.1])
    np.testing.assert_allclose(hq_probabilities([2.0, 2.0]), [0.5, 0.5])
    np.testing.assert_allclose(hq_probabilities([0.0, 0.0]), [0.5, 0.5])  # degenerate: uniform


def test_eq4_sampling_without_replacement_and_frequencies() -> None:
    cands = [HQCandidate(k, w, "s", "t") for k, w in (("a", 0.6), ("b", 0.3), ("c", 0.1))]
    rng = np.random.default_rng(0)
    picks = [sample_hq(cands, 3, rng) for _ in range(20000)]
    assert all(len({c.skill_id for c in p}) == 3 for p in picks)  # never twice
    first = np.array([sum(p[0].skill_id == k for p in picks) for k in "abc"]) / len(picks)
    np.testing.assert_allclose(first, [0.6, 0.3, 0.1], atol=0.015)
    # P(second = b | first = a) = 0.3 / (0.3 + 0.1) = 0.75
    after_a = [p[1].skill_id for p in picks if p[0].skill_id == "a"]
    assert np.mean([s == "b" for s in after_a]) == pytest.approx(0.75, abs=0.02)
    assert len(sample_hq(cands, 5, rng)) == 3  # up to M


# ------------------------------------------------------------------ Eq. 6
def test_eq6_ucb_exact() -> None:
    # η = 1 + 5·sqrt(ln 100 / 4) − 1.0·0.5
    s = _skill("a", fitness=1.0, n=4, objects=2)
    eta = ucb_scores([s], 100, 5.0, [0.5], 1.0)
    assert eta[0] == pytest.approx(5.864915065723368, abs=1e-12)
    # η = 2 + 5·sqrt(ln 10 / 1), no objects missing
    assert ucb_scores([_skill("b", 2.0, 1)], 10, 5.0, [0.0], 1.0)[0] == pytest.approx(
        9.587135646925733, abs=1e-12
    )
    assert exploration_bonus(1, 3, 5.0) == 0.0  # ln 1 = 0
    assert exploration_bonus(10, 0, 5.0) == exploration_bonus(10, 1, 5.0)  # n_k floored at 1


def test_eq6_prefilter_drops_suspended_and_all_missing() -> None:
    skills = [
        _skill("ok", objects=2),
        _skill("half", objects=2),
        _skill("gone", objects=2),
        _skill("susp", objects=1, status="suspended"),
        _skill("keys"),  # no objects: never "all missing"
    ]
    assert prefilter(skills, [0.0, 0.5, 1.0, 0.0, 0.0]) == [0, 1, 4]
    # anti-cycling: a stale skill is filtered like a suspended one
    stale = [False, True, False, False, False]
    assert prefilter(skills, [0.0, 0.5, 1.0, 0.0, 0.0], stale) == [0, 4]


def test_prefilter_drops_a_skill_whose_first_operation_cannot_be_grounded() -> None:
    on_screen = {"a"}
    present = on_screen.__contains__
    click_a_then_b = Skill(
        "ab", "ab", "", [Operation("click", object_id="a"), Operation("click", object_id="b")]
    )
    click_b_then_a = Skill(
        "ba", "ba", "", [Operation("click", object_id="b"), Operation("click", object_id="a")]
    )
    key_then_b = Skill(
        "kb", "kb", "", [Operation("key", key="enter"), Operation("click", object_id="b")]
    )
    drag_a_to_b = Skill("d", "d", "", [Operation("drag", object_id="a", object_id2="b")])
    # b may appear after a acts (a menu item after its menu): only the first operation counts
    assert can_start(click_a_then_b, present)
    assert not can_start(click_b_then_a, present)
    assert can_start(key_then_b, present)
    assert not can_start(drag_a_to_b, present)  # a drag needs both ends now
    skills = [click_a_then_b, click_b_then_a, key_then_b, drag_a_to_b]
    missing = [0.5, 0.5, 1.0, 0.5]
    # without the flag only "all missing" goes (key_then_b); with it, the unstartable go too
    assert prefilter(skills, missing) == [0, 1, 3]
    startable = [can_start(s, present) for s in skills]
    assert prefilter(skills, missing, None, startable) == [0]
    cfg = InvocationConfig(tau_start=0.1, tau_min=0.1)
    c = choose_in_cluster(skills, missing, 1, 0, cfg, np.random.default_rng(0), None, startable)
    assert c.arms == ["ab", EXPLORE]
    c = choose_in_cluster(
        [click_b_then_a], [0.5], 1, 0, cfg, np.random.default_rng(0), None, [False]
    )
    assert c.pure_exploration and c.skill_id is None and c.arms == [EXPLORE]


# ------------------------------------------------------------------ Eq. 7
def test_eq7_max_normalised_temperature_softmax_exact() -> None:
    # scores / max|score| = [1, .5, 0]; / τ=0.5 -> [2, 1, 0]; softmax
    p = softmax_probabilities([4.0, 2.0, 0.0], 0.5, 0.0)
    np.testing.assert_allclose(p, [0.66524096, 0.24472847, 0.09003057], atol=1e-8)
    # scale-free: multiplying every score by 10 changes nothing
    np.testing.assert_allclose(softmax_probabilities([40.0, 20.0, 0.0], 0.5, 0.0), p)


def test_eq7_clipping_keeps_every_arm_possible() -> None:
    p = softmax_probabilities([100.0, 0.0], 0.01, 0.01)
    assert p.sum() == pytest.approx(1.0)
    assert p[1] >= 0.0099


def test_eq7_temperature_decays_with_selections() -> None:
    cfg = InvocationConfig()  # τ = max(0.1, 1 / (1 + 0.05 N))
    assert temperature(0, cfg) == 1.0
    assert temperature(20, cfg) == pytest.approx(0.5)
    assert temperature(10_000, cfg) == cfg.tau_min


def test_exploration_dominance_trigger_and_explore_arm() -> None:
    cfg = InvocationConfig(tau_start=0.1, tau_min=0.1)
    rng = np.random.default_rng(0)
    bad = [_skill("a", fitness=-10.0, n=100)]
    c = choose_in_cluster(bad, [0.0], 1, 0, cfg, rng)
    assert c.explore_prob > cfg.exploration_trigger
    assert c.pure_exploration and c.skill_id is None
    assert c.arms == ["a", EXPLORE]
    good = [_skill("g", fitness=3.0, n=1)]
    c = choose_in_cluster(good, [0.0], 1, 0, cfg, rng)
    assert not c.pure_exploration and c.explore_prob < 0.01 and c.skill_id == "g"
    # nothing left after the pre-filter: explore
    c = choose_in_cluster([_skill("s", status="suspended")], [0.0], 5, 0, cfg, rng)
    assert c.pure_exploration and c.arms == [EXPLORE]


def test_stale_skills_leave_the_cluster_to_exploration() -> None:
    """The good skill wins while fresh; once stale, the only other arm is exploration."""
    cfg = InvocationConfig(tau_start=0.1, tau_min=0.1)
    good = [_skill("g", fitness=3.0, n=1)]
    c = choose_in_cluster(good, [0.0], 1, 0, cfg, np.random.default_rng(0), [False])
    assert c.skill_id == "g" and not c.pure_exploration
    c = choose_in_cluster(good, [0.0], 1, 0, cfg, np.random.default_rng(0), [True])
    assert c.skill_id is None and c.pure_exploration and c.arms == [EXPLORE]
    # with a fresh second skill, only the stale one leaves
    two = [_skill("g", fitness=3.0, n=1), _skill("h", fitness=3.0, n=1)]
    c = choose_in_cluster(two, [0.0, 0.0], 1, 0, cfg, np.random.default_rng(0), [True, False])
    assert c.arms == ["h", EXPLORE] and c.skill_id == "h"


# ------------------------------------------------------------------ Eq. 9–11
def test_eq9_sum_and_coefficients() -> None:
    rc = RewardConfig()
    t = r_total(1.0, 1.0, 0.5, 1.0, rc)
    assert (t.progress, t.semantic, t.state, t.novel, t.total) == (1.0, 1.0, 0.5, 1.0, 3.5)
    rc.state_coef, rc.novel_coef = 2.0, 0.5  # R_state : R_novel configurable
    assert r_total(1.0, 1.0, 0.5, 1.0, rc).total == pytest.approx(1 + 1 + 1.0 + 0.5)


@pytest.mark.parametrize(
    ("ablation", "expected"),
    [
        ("full", 3.5),
        ("no_novelty", 2.5),
        ("no_state_reward", 3.0),
        ("no_vlm_rewards", 1.5),
    ],
)
def test_eq9_ablation_switches(ablation: str, expected: float) -> None:
    cfg = Config()
    cfg.run.ablation = ablation
    assert r_total(1.0, 1.0, 0.5, 1.0, cfg.effective().rewards).total == pytest.approx(expected)


def test_judgements_to_terms() -> None:
    rc = RewardConfig()
    assert judgement_terms(Judgement(True, True), rc) == (1.0, 1.0)
    assert judgement_terms(Judgement(True, False), rc) == (0.0, 1.0)
    assert judgement_terms(Judgement(None, None), rc) == (0.0, 0.0)  # could not judge = no
    assert judgement_terms(None, rc) == (0.0, 0.0)


def test_eq10_through_memory(memory, encoder) -> None:
    a = memory.merge_or_create_state(np.eye(1, encoder.dim, 0, dtype=np.float32)[0])
    b = memory.merge_or_create_state(np.eye(1, encoder.dim, 1, dtype=np.float32)[0])
    k = memory.add_skill("k", "", [Operation("key", key="enter")])
    w = memory.upsert_skill_edge(a.id, b.id, k.id, 0.5, 1.0).weight
    assert w == pytest.approx(memory.skill_edge_weight(0.5, 0.0))
    assert memory.state_potential(a.id) == pytest.approx(w)  # V_S(a): its one outgoing edge
    assert memory.state_potential(b.id) == 0.0  # no outgoing edge


def test_eq11_novelty() -> None:
    rc = RewardConfig()
    assert novelty_reward(True, rc) == 1.0
    assert novelty_reward(False, rc) == 0.015


def test_fitness_is_a_bounded_decayed_mean() -> None:
    assert update_fitness(0.0, 3.0, 0.8) == pytest.approx(0.6)
    assert update_fitness(0.6, 3.0, 0.8) == pytest.approx(1.08)
    phi = 0.0
    for _ in range(1000):
        phi = update_fitness(phi, 3.0, 0.8)
    assert phi == pytest.approx(3.0) and phi <= 3.0  # a running sum would be 3000
    with pytest.raises(ValueError):
        update_fitness(0.0, 1.0, 1.0)


# ------------------------------------------------------------------ per-state statistics
def test_state_stats_round_trip_through_memory(memory, encoder) -> None:
    t = StateStats()
    t.record_explore()
    t.record_explore()
    t.mark_tried("", '{"kind": "key"}', 0.0)
    t.mark_tried("k-1", '{"kind": "click"}', 0.25)
    data = t.to_json()
    json.dumps(data)  # plain JSON, never pickle
    s = memory.merge_or_create_state(np.eye(1, encoder.dim, 0, dtype=np.float32)[0])
    memory.put_state_stats(s.id, data)
    back = StateStats(memory.state_stats(s.id))
    assert back.explores == 2
    assert back.tried("") == {'{"kind": "key"}': 0.0}
    assert back.tried("k-1") == {'{"kind": "click"}': 0.25}
    assert StateStats(None).explores == 0 and StateStats(None).tried() == {}


def test_state_stats_read_the_older_tree_format() -> None:
    """A memory written with per-skill children: the explore arm's counts survive."""
    old = {
        "version": 1,
        "visits": 7,
        "children": {
            "k-1": {"n": 4, "w": 2.0},
            EXPLORE: {"n": 3, "w": 0.5, "tried": {"": {'{"kind": "key"}': 0.0}}},
        },
    }
    t = StateStats(old)
    assert t.explores == 3 and t.tried("") == {'{"kind": "key"}': 0.0}
    assert "k-1" not in json.dumps(t.to_json())
