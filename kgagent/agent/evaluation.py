"""Evaluation of every execution (Algorithm 1, lines 10-11 and 31-37).

After a skill runs, :class:`Evaluator` merges the landing screen into ``v_j``, asks the
brain for R_progress and R_semantic, reads the state potentials for R_state (Eq. 10)
and novelty for R_novel (Eq. 11), sums them (Eq. 9), and updates what the execution
taught: the skill's fitness and counts, its skill edge (Eq. 1), the episode's stale
marks and previous execution, and the library (suspension, removal, refinement; the
:class:`~kgagent.agent.upkeep.LibraryKeeper` decides those).

:class:`SkillHistory` is the run's evidence about each skill that the graph does not
hold: the feature changes it caused (the offline brain's consistency check) and the
states it ran from (where a cluster's skills are used).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from kgagent.brain.base import Brain, Judgement, SkillView, Transition
from kgagent.config import Config
from kgagent.errors import KGAgentError
from kgagent.records import Skill, StateHit
from kgagent.runlog import ExecutionRecord, StepRecord

from .episode import Episode, PreviousExecution
from .executor import Execution
from .observation import Observer
from .protocols import MemoryAPI
from .rewards import RewardTerms, judgement_terms, novelty_reward, r_total, update_fitness
from .screen import Screen
from .upkeep import LibraryKeeper


class SkillHistory:
    """Per-skill evidence gathered in this run (see the module docstring).

    ``graph``: the states a skill ran from include its skill edges' sources in the
    SA-KG (the Bottom-Up Agent has no graph, so only this run's sources count).
    """

    def __init__(self, cfg: Config, memory: MemoryAPI, *, graph: bool) -> None:
        self.cfg = cfg
        self.mem = memory
        self.graph = graph
        self._effects: dict[str, deque[np.ndarray]] = {}
        self._sources: dict[str, set[str]] = {}

    def ran_from(self, skill_id: str, state_id: str) -> None:
        self._sources.setdefault(skill_id, set()).add(state_id)

    def effect(self, skill_id: str, change: np.ndarray) -> None:
        """A successful execution's feature change (after − before), newest last."""
        q = self._effects.setdefault(skill_id, deque(maxlen=self.cfg.rewards.past_effects))
        q.append(change)

    def view(self, skill: Skill, *, sources: bool = False) -> SkillView:
        """The skill as a brain sees it; ``sources``: with the features of states it ran from."""
        view = SkillView(
            id=skill.id,
            name=skill.name,
            description=skill.description,
            operations=list(skill.operations),
            fitness=skill.fitness,
            executions=skill.executions,
            past_effects=list(self._effects.get(skill.id, ())),
        )
        if sources:
            ids: set[str] = set(self._sources.get(skill.id, set()))
            if self.graph:
                ids |= {e.src for e in self.mem.skill_edges(skill.id)}
            view.source_features = self._features(ids)
        return view

    def cluster_features(self, cluster_id: str, skill_ids: list[str]) -> np.ndarray:
        """The memory's cluster states, plus states its skills ran from in this run."""
        base = self.mem.cluster_state_features(cluster_id)
        extra = self._features({i for sid in skill_ids for i in self._sources.get(sid, set())})
        if extra is None:
            return base
        return np.concatenate([base, extra]) if len(base) else extra

    def _features(self, state_ids: set[str]) -> np.ndarray | None:
        feats = []
        for i in sorted(state_ids):
            try:
                feats.append(self.mem.state_feature(i))
            except KGAgentError:
                continue  # a state without a vector (never expected; skip rather than fail)
        return np.stack(feats) if feats else None


class Evaluator:
    """Eq. 9-11 for one execution, and everything it updates (see the module docstring)."""

    def __init__(
        self,
        cfg: Config,
        memory: MemoryAPI,
        brain: Brain,
        observer: Observer,
        episode: Episode,
        history: SkillHistory,
        keeper: LibraryKeeper,
        *,
        skill_edges: bool,
    ) -> None:
        self.cfg = cfg
        self.mem = memory
        self.brain = brain
        self.observer = observer
        self.episode = episode
        self.history = history
        self.keeper = keeper
        self.skill_edges = skill_edges  # write skill edges (the Bottom-Up Agent has none)

    def evaluate(
        self,
        screen: Screen,
        skill: Skill,
        ex: Execution,
        path: str,
        state_id: str,
        feat: np.ndarray,
        rec: StepRecord,
        step: int,
        *,
        actions: int | None = None,
        new_skill: bool = False,
        landing: tuple[StateHit, np.ndarray] | None = None,
    ) -> ExecutionRecord:
        """Evaluate one execution of ``skill`` from ``state_id`` and learn from it.

        ``landing``: the caller already merged the final screen (and owns its novelty).
        """
        cfg = self.cfg
        out = ExecutionRecord(
            path=path,
            from_state=state_id,
            to_state=state_id,
            skill_id=skill.id,
            skill_name=skill.name,
            operations=[op.to_dict() for op in skill.operations],
            grounding=[r.to_dict() for r in ex.ops],
            change=ex.change,
            actions=ex.actions if actions is None else actions,
            error=ex.error,
        )
        self.history.ran_from(skill.id, state_id)
        if out.actions == 0 or screen.done:
            # Nothing reached the program (first operand not on screen), or the program
            # ended during or right after it: no transition to evaluate, but a failure of
            # this skill here.
            if screen.done:
                out.note = "the program ended"
            self.keeper.count_failure(skill, rec, step)
            self.mem.update_skill(skill)
            return out

        hit_j, feat_j = landing if landing is not None else self.observer.merge(screen.observe())
        out.to_state, out.new_state = hit_j.id, hit_j.created
        tr = Transition(
            before=self.observer.view(ex.before, feat, state_id, "evaluate"),
            after=self.observer.view(ex.after, feat_j, hit_j.id, "evaluate"),
            change=ex.change,
            new_in_episode=hit_j.id not in self.episode.visited,
            new_in_graph=hit_j.created,
            new_screen_in_episode=self.observer.last_screen_new,
            echo=self.observer.echoes(ex.before, ex.after, skill.operations),
        )
        out.new_screen = tr.new_screen_in_episode
        out.echo = tr.echo
        self.episode.visited.add(hit_j.id)
        judgement: Judgement | None = self.brain.evaluate(self.history.view(skill), tr)
        if judgement is not None:  # the why of R_progress and R_semantic, in the step log
            out.judgement = {
                "consistent": judgement.consistent,
                "progressive": judgement.progressive,
                "reason": " ".join(str(judgement.reason).split())[:300],
            }
        self.episode.mark_stale(state_id, skill.id, judgement, step)
        terms = self.rewards(judgement, state_id, hit_j)  # Eq. 9-11
        if tr.echo:  # only a text field showed what was typed: the program did nothing
            terms = RewardTerms(0.0, 0.0, 0.0, 0.0)
        out.r_progress, out.r_semantic = terms.progress, terms.semantic
        out.r_state, out.r_novel, out.r_total = terms.state, terms.novel, terms.total
        out.evaluated = True
        success = ex.ok and ex.change >= cfg.augment.min_change
        out.valid_transition = success
        if ex.change >= cfg.augment.min_change:
            self.episode.previous = (
                PreviousExecution(skill, ex, state_id, feat) if success else None
            )

        skill.fitness = update_fitness(skill.fitness, terms.total, cfg.rewards.fitness_decay)
        skill.executions += 1
        if success:
            skill.failures = 0
            self.history.effect(skill.id, feat_j - feat)
        else:
            self.keeper.count_failure(skill, rec, step)
        skill.low_rewards = skill.low_rewards + 1 if terms.total < cfg.rewards.r_prune else 0
        self.keeper.judge_trial(skill, terms.total)
        self.mem.update_skill(skill)
        if success and self.skill_edges:
            self.mem.upsert_skill_edge(
                state_id, hit_j.id, skill.id, ex.change, terms.total
            )  # Eq. 1

        if skill.low_rewards >= cfg.rewards.prune_window and skill.status != "pruned":
            self.keeper.prune(skill.id, rec)  # line 33: R_total stays below r_prune
        elif not new_skill and skill.status == "active":
            self.keeper.maybe_refine(skill, tr, terms.total, rec)  # lines 35-37
        return out

    def rewards(self, judgement: Judgement | None, state_id: str, hit_j: StateHit) -> RewardTerms:
        """Eq. 9 from the brain's judgement, the potentials (Eq. 10) and novelty (Eq. 11)."""
        rc = self.cfg.rewards
        progress, semantic = judgement_terms(judgement, rc)
        delta = 0.0
        if rc.use_state:
            # Eq. 10, both potentials read before this execution's edge is written.
            delta = self.mem.state_potential(hit_j.id) - self.mem.state_potential(state_id)
        novel = novelty_reward(hit_j.created, rc)  # Eq. 11
        return r_total(progress, semantic, delta, novel, rc)  # Eq. 9
