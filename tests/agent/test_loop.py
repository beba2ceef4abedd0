"""Algorithm 1's order (SA-KG first, clusters second, augmentation last) and library upkeep."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.agent.loop import Agent
from kgagent.brain.offline import OfflineBrain
from kgagent.envs.base import Screen

from .toy import A, B, T, ToyEnv


class StubBrain(OfflineBrain):
    """The offline brain, but the test decides which cluster fits, and calls are recorded."""

    def __init__(self, cluster: str | None = None) -> None:
        super().__init__()
        self.cluster = cluster
        self.calls: list[str] = []

    def choose_cluster(self, view, clusters):
        self.calls.append("choose_cluster")
        return self.cluster

    def describe_skill(self, operations, tr):
        self.calls.append("describe_skill")
        return super().describe_skill(operations, tr)


def _agent(cfg, memory, encoder, segmenter, brain, seed=0) -> Agent:
    return Agent(cfg, memory, encoder, segmenter, brain, np.random.default_rng(seed))


def _objects(agent: Agent, memory, env: ToyEnv) -> dict[str, str]:
    """Segment the toy's first screen through the agent, return {widget: object id}."""
    img = env.observe()
    ids = {}
    for seg in agent.segmenter.segment(img):
        obj = memory.upsert_object(seg.crop, seg.bbox, seg.phash)
        key = {A: "A", B: "B", T: "T"}[seg.bbox]
        ids[key] = obj.id
    return ids


def test_first_step_on_empty_memory_is_augmentation(cfg, memory, encoder, segmenter, toy) -> None:
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    rec = agent.step(Screen(toy))
    assert rec.path == "augment" and rec.state_created
    assert "choose_cluster" not in brain.calls  # no cluster exists yet
    assert memory.stats().nodes >= 1


def test_hq_candidates_are_invoked_first(cfg, memory, encoder, segmenter, toy) -> None:
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    there = memory.merge_or_create_state(np.eye(1, encoder.dim, 3, dtype=np.float32)[0])
    k = memory.add_skill("toggle", "opens the panel", [Operation("click", object_id=ids["A"])])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    rec = agent.step(Screen(toy))
    assert rec.state_id == here.id
    assert rec.executions[0].path == "hq" and rec.executions[0].skill_id == k.id
    assert toy.panel  # it really ran
    assert memory.get_skill(k.id).executions == 1
    assert agent._tree(here.id).n(k.id) == 1  # MCTS statistics updated


def test_failed_hq_falls_back_to_cluster_then_augmentation(
    cfg, memory, encoder, segmenter, toy
) -> None:
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    there = memory.merge_or_create_state(np.eye(1, encoder.dim, 3, dtype=np.float32)[0])
    # A skill whose object is not on screen: grounding fails, nothing happens.
    rng = np.random.default_rng(5)
    crop = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)
    from kgagent.perception.segmenters import phash

    ghost = memory.upsert_object(crop, (100, 40, 40, 30), phash(crop))
    k = memory.add_skill("ghost", "", [Operation("click", object_id=ghost.id)])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    c = memory.add_cluster("c", "")
    memory.add_to_cluster(k.id, c.id)
    brain.cluster = c.id
    rec = agent.step(Screen(toy))
    paths = [e.path for e in rec.executions]
    assert paths[0] == "hq" and rec.executions[0].error  # grounding error reported
    assert "choose_cluster" in brain.calls  # stage 2 was asked
    # the only skill of the cluster has all its objects missing: filtered out -> explore
    assert paths[-1] == "augment"
    assert ids  # the toy's widgets are known objects
    assert memory.get_skill(k.id).failures == 1


def test_cluster_invocation_picks_a_skill_when_no_hq(cfg, memory, encoder, segmenter, toy) -> None:
    cfg.invocation.tau_start = cfg.invocation.tau_min = 0.1  # sharp softmax
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    k = memory.add_skill("toggle", "", [Operation("click", object_id=ids["A"])])
    k.fitness, k.executions = 5.0, 3
    memory.update_skill(k)
    c = memory.add_cluster("panel", "")
    memory.add_to_cluster(k.id, c.id)
    brain.cluster = c.id
    rec = agent.step(Screen(toy))
    assert [e.path for e in rec.executions] == ["cluster"]
    assert rec.skill_id == k.id and rec.cluster_id == c.id and toy.panel
    assert rec.explore_prob is not None and rec.explore_prob < 0.5
    assert memory.clusters()[0].selections == 1


def test_no_fitting_cluster_means_augmentation(cfg, memory, encoder, segmenter, toy) -> None:
    brain = StubBrain(cluster=None)
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    k = memory.add_skill("toggle", "", [Operation("click", object_id=ids["A"])])
    memory.add_to_cluster(k.id, memory.add_cluster("c", "").id)
    rec = agent.step(Screen(toy))
    assert "choose_cluster" in brain.calls and rec.path == "augment"


def test_low_reward_streak_prunes_the_skill(cfg, memory, encoder, segmenter, toy) -> None:
    cfg.rewards.r_prune = 100.0  # every R_total is "low"
    cfg.rewards.prune_window = 2
    agent = _agent(cfg, memory, encoder, segmenter, StubBrain())
    ids = _objects(agent, memory, toy)
    k = memory.add_skill("toggle", "", [Operation("click", object_id=ids["A"])])
    screen = Screen(toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    rec = agent.step(screen)  # bootstrap: agent state
    for _ in range(2):
        agent._run_skill(
            screen,
            memory.get_skill(k.id),
            "hq",
            here.id,
            encoder.encode([screen.observe()])[0],
            rec,
        )
    assert memory.get_skill(k.id).status == "pruned"
    assert k.id in rec.skills_pruned


def test_population_pruning_removes_lowest_ucb_above_mean(
    cfg, memory, encoder, segmenter, toy
) -> None:
    cfg.library.max_library = 2
    cfg.library.prune_every = 1
    agent = _agent(cfg, memory, encoder, segmenter, StubBrain(cluster=None))
    made = []
    for i, (fit, n) in enumerate([(0.1, 20), (3.0, 20), (1.0, 1), (1.0, 1)]):
        s = memory.add_skill(f"s{i}", "", [Operation("key", key=f"f{i + 1}")])
        s.fitness, s.executions = fit, n
        memory.update_skill(s)
        made.append(s.id)
    rec = agent.step(Screen(toy))
    assert made[0] in rec.skills_pruned  # executed above the mean, lowest UCB
    assert made[2] not in rec.skills_pruned and made[3] not in rec.skills_pruned
    assert memory.stats().skills_pruned >= 1


def test_repeated_failures_suspend_then_release(cfg, memory, encoder, segmenter, toy) -> None:
    cfg.invocation.suspend_after_failures = 2
    cfg.invocation.suspend_steps = 1
    agent = _agent(cfg, memory, encoder, segmenter, StubBrain())
    k = memory.add_skill("dead key", "", [Operation("key", key="f9")])  # changes nothing
    screen = Screen(toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    rec = agent.step(screen)
    feat = encoder.encode([screen.observe()])[0]
    for _ in range(2):
        agent._run_skill(screen, memory.get_skill(k.id), "hq", here.id, feat, rec)
    assert memory.get_skill(k.id).status == "suspended" and k.id in rec.skills_suspended
    agent.step(screen)
    agent.step(screen)
    assert memory.get_skill(k.id).status == "active"  # reconsidered after suspend_steps
