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
