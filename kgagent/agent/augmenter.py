"""Skill augmentation as a step of Algorithm 1 (lines 18-25): search, name, store, evaluate.

:func:`~kgagent.agent.augment.augment` searches for an operation sequence with a
recognisable effect. :class:`Augmenter` does what the loop does with the result: a
follow-up of the previous skill becomes one skill with it; a sequence that is already
a skill is an execution of that skill; anything new is named by the brain (or declared
meaningless and dropped), stored, and evaluated like every execution. Each attempt
counts as one visit of the state's explore arm.
"""

from __future__ import annotations

import numpy as np

from kgagent.brain.base import Brain, Transition
from kgagent.config import Config
from kgagent.runlog import ExecutionRecord, StepRecord

from .augment import augment, combine, ops_key
from .episode import Episode
from .evaluation import Evaluator
from .inputs import InputStats
from .observation import Observation, Observer
from .protocols import MemoryAPI
from .screen import Screen
from .state_stats import StateStats


class Augmenter:
    """Runs one augmentation attempt and learns from it (see the module docstring)."""

    def __init__(
        self,
        cfg: Config,
        memory: MemoryAPI,
        brain: Brain,
        observer: Observer,
        episode: Episode,
        evaluator: Evaluator,
        rng: np.random.Generator,
        inputs: InputStats | None = None,
    ) -> None:
        self.cfg = cfg
        self.mem = memory
        self.brain = brain
        self.observer = observer
        self.episode = episode
        self.evaluator = evaluator
        self.rng = rng
        self.inputs = inputs  # the program's answers to inputs (A3 ranking), None: unranked

    def stats(self, state_id: str) -> StateStats:
        return StateStats(self.mem.state_stats(state_id))

    def _explored(self, state_id: str, stats: StateStats | None = None) -> None:
        """One more visit of the explore arm from ``state_id``."""
        stats = stats or self.stats(state_id)
        stats.record_explore()
        self.mem.put_state_stats(state_id, stats.to_json())

    def _save_inputs(self) -> None:
        """Write the input counts that changed to memory."""
        changed = self.inputs.take_changes() if self.inputs is not None else {}
        if changed:
            self.mem.add_input_counts({k: (c.kind, c.tried, c.changed) for k, c in changed.items()})

    def run(self, screen: Screen, obs: Observation, rec: StepRecord, step: int) -> ExecutionRecord:
        state_id, feat = obs.state.id, obs.feature
        stats = self.stats(state_id)
        prev = self.episode.previous
        if prev is not None and (
            self.mem.get_skill(prev.skill.id).status != "active"
            or not np.array_equal(prev.execution.after, obs.image)
        ):
            prev = None  # the skill was removed, or the screen is no longer what it made
        res = augment(
            screen,
            obs,
            self.observer,
            stats,
            self.mem.skills("active"),
            self.cfg,
            self.rng,
            previous=prev.skill if prev is not None else None,
            inputs=self.inputs,
        )
        self.mem.put_state_stats(state_id, stats.to_json())  # the operations tried
        self._save_inputs()
        if res.found and res.prefix_ran_before and prev is not None:
            # A follow-up of the previous skill: the new skill is both, run from where
            # the previous one started.
            state_id, feat = prev.state_id, prev.feature
            stats = self.stats(state_id)
            res.execution = combine(
                prev.execution.before,
                res.execution.after,
                [*prev.execution.ops, *res.execution.ops],
                None,
                self.cfg,
            )
        note = f"k={res.k}; tried " + ", ".join(f"{d} Δ={c:.4f}" for d, c in res.tried)

        if not res.found:
            if res.prefix is not None and res.prefix_executed:
                # The prefix ran and had an effect: that is an execution of the prefix.
                out = self.evaluator.evaluate(
                    screen, res.prefix, res.execution, "augment", state_id, feat, rec, step,
                    actions=res.actions,
                )  # fmt: skip
                self._explored(state_id, stats)
                out.note = "nothing found after the prefix; " + note
                return out
            self._explored(state_id, stats)
            hit_j, _ = self.observer.merge(screen.observe())
            self.episode.visited.add(hit_j.id)
            return ExecutionRecord(
                path="augment",
                from_state=state_id,
                to_state=hit_j.id,
                grounding=[r.to_dict() for r in res.execution.ops],
                change=res.execution.change,
                new_state=hit_j.created,
                actions=res.actions,
                error=res.execution.error,
                note="nothing with an effect; " + note,
            )

        existing = {ops_key(s.operations): s for s in self.mem.skills()}
        dup = existing.get(ops_key(res.operations))
        if dup is not None and self.inputs is not None:
            self.inputs.record_known(res.operations[-1])
            self._save_inputs()
        if dup is not None and dup.status != "pruned":
            out = self.evaluator.evaluate(
                screen, dup, res.execution, "augment", state_id, feat, rec, step,
                actions=res.actions,
            )  # fmt: skip
            out.note = "rediscovered an existing skill; " + note
            self._explored(state_id)
            return out

        hit_j, feat_j = self.observer.merge(screen.observe())
        tr = Transition(
            before=self.observer.view(res.execution.before, feat, state_id, "describe_skill"),
            after=self.observer.view(res.execution.after, feat_j, hit_j.id, "describe_skill"),
            change=res.execution.change,
            new_in_episode=hit_j.id not in self.episode.visited,
            new_in_graph=hit_j.created,
            new_screen_in_episode=self.observer.last_screen_new,
            echo=self.observer.echoes(res.execution.before, res.execution.after, res.operations),
        )
        text = None if dup is not None else self.brain.describe_skill(res.operations, tr)
        if text is None:
            # Meaningless (or a pruned skill found again): dropped, never stored.
            self.episode.visited.add(hit_j.id)
            self._explored(state_id)
            return ExecutionRecord(
                path="augment",
                from_state=state_id,
                to_state=hit_j.id,
                operations=[op.to_dict() for op in res.operations],
                grounding=[r.to_dict() for r in res.execution.ops],
                change=res.execution.change,
                new_state=hit_j.created,
                valid_transition=res.execution.change >= self.cfg.augment.min_change,
                actions=res.actions,
                note=("a pruned skill found again; " if dup else "judged meaningless; ") + note,
            )
        skill = self.mem.add_skill(
            text.name,
            text.description,
            res.operations,
            parent_id=res.prefix.id if res.prefix is not None else None,
        )
        if skill.object_ids():
            self.mem.link_skill_objects(skill.id, skill.object_ids())
        rec.skills_added.append(skill.id)
        out = self.evaluator.evaluate(
            screen, skill, res.execution, "augment", state_id, feat, rec, step,
            actions=res.actions, new_skill=True, landing=(hit_j, feat_j),
        )  # fmt: skip
        out.note = "new skill; " + note
        self._explored(state_id)
        return out
