"""Refinement on probation (Eq. 8): a rewrite is kept only if its next execution scores better."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.agent.loop import Agent
from kgagent.brain.base import SkillText, Transition, View
from kgagent.brain.offline import OfflineBrain
from kgagent.runlog import StepRecord


class Rewriter(OfflineBrain):
    """Rewrites every skill it is asked about: name and description."""

    def refine_skill(self, skill, tr):
        self.usage.calls += 1
        return SkillText(f"better {skill.name}", "rewritten")


def _transition() -> Transition:
    img, f = np.zeros((8, 8, 3), np.uint8), np.zeros(4, np.float32)
    return Transition(View(img, f, "s-a"), View(img, f, "s-b"), 0.1, True, False)


def _skill(memory, name: str):
    k = memory.add_skill(name, f"{name} does something", [Operation("key", key="f1")])
    k.fitness, k.executions = 1.0, 3
    memory.update_skill(k)
    return memory.get_skill(k.id)


def test_rewrite_on_probation_kept_when_better_restored_when_not(
    cfg, memory, encoder, segmenter
) -> None:
    agent = Agent(cfg, memory, encoder, segmenter, Rewriter(), np.random.default_rng(0))
    keeper, rec = agent.keeper, StepRecord(1, "s-a", "idle")
    good, bad, open_ = (_skill(memory, n) for n in ("good", "bad", "open"))
    for k, name in ((good, "good"), (bad, "bad"), (open_, "open")):
        keeper.maybe_refine(k, _transition(), 0.5, rec)  # 0.5 <= r_good: worth a rewrite
        assert memory.get_skill(k.id).name == f"better {name}" and keeper.on_probation(k.id)
    assert rec.refined == [good.id, bad.id, open_.id]

    for k, reward in ((good, 1.5), (bad, 0.2)):  # the rewrite's next execution; baseline 1.0
        s = memory.get_skill(k.id)
        keeper.judge_trial(s, reward)
        memory.update_skill(s)
        assert not keeper.on_probation(k.id)
    assert memory.get_skill(good.id).name == "better good"  # beat its old fitness: kept
    assert memory.get_skill(bad.id).name == "bad"  # did not: the original is back
    assert memory.get_skill(bad.id).description == "bad does something"

    agent.finish()  # still on probation at the end of the run: never shown better
    assert memory.get_skill(open_.id).name == "open" and not keeper.on_probation(open_.id)


def test_refinement_asks_once_per_skill_and_only_while_the_library_is_small(
    cfg, memory, encoder, segmenter
) -> None:
    brain = Rewriter()
    cfg.library.refine_below = 2
    agent = Agent(cfg, memory, encoder, segmenter, brain, np.random.default_rng(0))
    rec = StepRecord(1, "s-a", "idle")
    a = _skill(memory, "a")
    agent.keeper.maybe_refine(a, _transition(), 0.5, rec)
    agent.keeper.judge_trial(memory.get_skill(a.id), 5.0)
    agent.keeper.maybe_refine(memory.get_skill(a.id), _transition(), 0.5, rec)
    assert brain.usage.calls == 1  # a skill is refined once per run
    b, _c = _skill(memory, "b"), _skill(memory, "c")  # library of 3 >= refine_below
    agent.keeper.maybe_refine(b, _transition(), 0.5, rec)
    agent.keeper.maybe_refine(b, _transition(), 9.0, rec)
    assert brain.usage.calls == 1 and rec.refined == [a.id]


class Retargeter(OfflineBrain):
    """Rewrites a skill's steps to click another object."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def refine_skill(self, skill, tr):
        self.usage.calls += 1
        return SkillText(
            f"better {skill.name}", "rewritten", [Operation("click", object_id=self.target)]
        )


def _uses(memory, skill_id: str) -> list[str]:
    rows = memory.cypher(
        "MATCH (k:Skill {id: $k})-[u:USES]->(o:Object) RETURN o.id AS oid ORDER BY oid",
        {"k": skill_id},
    )
    return [r["oid"] for r in rows]


def test_a_rewrite_and_its_undoing_keep_uses_to_the_objects_the_steps_name(
    cfg, memory, encoder, segmenter
) -> None:
    """USES follows the operations: a rewrite that clicks another object moves the link,
    and undoing the rewrite (a worse next execution, or the end of the run) moves it back."""
    crop = np.zeros((8, 8, 3), np.uint8)
    a = memory.upsert_object(crop, (0, 0, 8, 8), 1, "A").id
    b = memory.upsert_object(crop + 255, (40, 0, 8, 8), 2**40 - 1, "B").id
    assert a != b
    agent = Agent(cfg, memory, encoder, segmenter, Retargeter(b), np.random.default_rng(0))
    keeper = agent.keeper
    ks = []
    for name in ("judged", "open"):
        k = memory.add_skill(name, "clicks A", [Operation("click", object_id=a)])
        k.fitness, k.executions = 1.0, 3
        memory.update_skill(k)
        memory.link_skill_objects(k.id, k.object_ids())
        ks.append(memory.get_skill(k.id))
    for k in ks:
        keeper.maybe_refine(k, _transition(), 0.5, StepRecord(1, "s-a", "idle"))
        assert _uses(memory, k.id) == [b]  # the rewrite clicks B only
    judged = memory.get_skill(ks[0].id)
    keeper.judge_trial(judged, 0.2)  # worse than its baseline: undone
    memory.update_skill(judged)
    assert _uses(memory, judged.id) == [a]
    agent.finish()  # still on probation at the end: undone
    assert _uses(memory, ks[1].id) == [a]
