"""Algorithm 1 of the KG-Agent: one decision step over the State-Action Knowledge Graph.

:meth:`Agent.step` is the loop body of the papers' Algorithm 1 and can be read
against it line by line (line numbers in the comments). The machinery it calls lives
in rooms named for their job:

* :mod:`~kgagent.agent.observation` — lines 3-4: screen → feature → state node, objects;
* :mod:`~kgagent.agent.invocation` — Eq. 4 (stage 1) and Eq. 6-7 (stage 2), pure functions;
* :mod:`~kgagent.agent.augmenter` — lines 18-25: skill augmentation;
* :mod:`~kgagent.agent.evaluation` — lines 10-11, 31-37: Eq. 9-11, fitness, skill edges;
* :mod:`~kgagent.agent.upkeep` — suspension, pruning, refinement (Eq. 8), clustering;
* :mod:`~kgagent.agent.episode` — the episode's short-term memory.

The agent holds a :class:`~kgagent.agent.screen.Screen` and nothing else of the
program: no reward, no info, no ground truth. It knows no game or app. The
baselines (the Bottom-Up Agent, a random agent) are in :mod:`~kgagent.agent.baselines`.
"""

from __future__ import annotations

import time

import numpy as np

from kgagent.brain.base import Brain, ClusterView, Usage
from kgagent.config import Config
from kgagent.perception.base import Segmenter, StateEncoder
from kgagent.perception.reader import TextReader
from kgagent.records import Skill
from kgagent.runlog import ExecutionRecord, StepRecord

from .augmenter import Augmenter
from .decision import cluster_decision, hq_decision
from .episode import Episode
from .evaluation import Evaluator, SkillHistory
from .executor import execute
from .inputs import Count, InputStats
from .invocation import EXPLORE, ClusterChoice, can_act, can_start, choose_in_cluster, sample_hq
from .observation import Observation, Observer
from .protocols import MemoryAPI
from .screen import Screen
from .state_stats import StateStats
from .timing import PartTimes, Timed
from .upkeep import LibraryKeeper

PATHS = ("hq", "cluster", "augment", "random", "idle")


class Agent:
    """The KG-Agent over one memory (see the module docstring).

    ``rng`` is the only source of randomness, so a run is reproducible under a seed.
    """

    #: Stage 1 (the SA-KG invocation) runs and executions write skill edges (Eq. 1).
    sakg = True

    def __init__(
        self,
        config: Config,
        memory: MemoryAPI,
        encoder: StateEncoder,
        segmenter: Segmenter,
        brain: Brain,
        rng: np.random.Generator,
        *,
        reader: TextReader | None = None,
    ) -> None:
        self.cfg = config.effective()
        self.times = PartTimes()  # where each step's time goes (StepRecord.times_ms)
        memory = Timed(memory, self.times, "memory")
        brain = Timed(brain, self.times, "brain")
        encoder = Timed(encoder, self.times, "encode")
        segmenter = Timed(segmenter, self.times, "segment")
        self.mem = memory
        self.brain = brain
        self.rng = rng
        self.step_no = 0
        self.episode = Episode(self.cfg)
        self.observer = Observer(self.cfg, memory, encoder, segmenter, self.episode, reader)
        self.observer.reader = Timed(self.observer.reader, self.times, "read")
        self.observer.times = self.times
        self.observer.brain_roles = frozenset(getattr(brain, "label_roles", ()) or ())
        self.history = SkillHistory(self.cfg, memory, graph=self.sakg)
        self.keeper = LibraryKeeper(self.cfg, memory, brain, self.history)
        self.evaluator = Evaluator(
            self.cfg,
            memory,
            brain,
            self.observer,
            self.episode,
            self.history,
            self.keeper,
            skill_edges=self.sakg,
        )
        self.inputs = InputStats(
            {k: Count(*v) for k, v in memory.input_counts().items()},
            prior=self.cfg.augment.input_prior,
        )
        self.augmenter = Augmenter(
            self.cfg, memory, brain, self.observer, self.episode, self.evaluator, rng, self.inputs
        )

    # ------------------------------------------------------------------ Algorithm 1
    def step(self, screen: Screen) -> StepRecord:
        """One iteration of Algorithm 1 (lines 3-38) on the current screen."""
        t0, usage0 = self._open(screen)
        obs = self.observer.observe(screen)  # lines 3-4: X_i, x_i, merge or create v_i
        rec = StepRecord(self.step_no, obs.state.id, "idle", state_created=obs.state.created)
        after = self.invoke_sakg(screen, obs, rec)  # lines 5-15 (None: a good skill ran)
        if after is not None and not screen.done:
            if not self.invoke_cluster(screen, after, rec):  # lines 17, 26-30
                rec.executions.append(self.augmenter.run(screen, after, rec, self.step_no))
        self.keeper.upkeep(rec, self.step_no)  # suspension, pruning, clustering
        return self._close(rec, t0, usage0, screen)

    def invoke_sakg(self, screen: Screen, obs: Observation, rec: StepRecord) -> Observation | None:
        """Stage 1 (lines 5-15): up to M skills drawn from S_HQ(v_i) by Eq. 4.

        Returns the screen stage 2 acts on, or ``None`` when an attempt was good enough
        (``R_total > r_good``, line 12) or the program ended. The draws belong to v_i:
        an attempt that changes nothing (or cannot be grounded) leaves the screen in
        v_i and the next sample is tried; an attempt that moves the screen to another
        state without being good enough ends stage 1 (the remaining samples were for
        a screen that is gone) and stage 2 runs in the state the screen is in now. An
        attempt that stays in v_i may still have changed the screen, so each later draw
        is checked against the screen as it is after the attempt.
        """
        state = obs.state
        # Eq. 2-3, minus the skills that just failed to progress from here (anti-cycling).
        found = self.mem.hq_candidates(state.id)
        candidates = [
            c for c in found if not self.episode.is_stale(state.id, c.skill_id, self.step_no)
        ]
        hq = rec.decision["hq"] = hq_decision(candidates, len(found) - len(candidates))
        # Eq. 4 over the candidates that can act on this screen: drawing the whole urn and
        # skipping those that cannot samples exactly the filtered urn, and checks presence
        # only for the skills drawn.
        attempts = 0
        for cand in sample_hq(candidates, len(candidates), self.rng):
            if attempts >= self.cfg.invocation.m_samples:
                break
            skill = self.mem.get_skill(cand.skill_id)
            if skill.status != "active" or not can_act(skill, obs.present):
                # suspended or pruned by an earlier attempt; or cannot start here
                hq["skipped"]["inactive" if skill.status != "active" else "cannot_start"] += 1
                continue
            hq["ran"].append(skill.id)
            attempts += 1
            ex = self.run_skill(screen, skill, "hq", obs, rec)  # lines 9-11
            rec.executions.append(ex)
            if ex.r_total > self.cfg.invocation.r_good or screen.done:
                return None  # lines 12-13: early stop
            moved = ex.to_state != state.id
            feature = obs.feature
            if moved:
                state, feature = self.observer.merge(screen.observe())
            obs = self.observer.look_again(screen, state, feature)
            if moved:
                break
        return obs

    def invoke_cluster(self, screen: Screen, obs: Observation, rec: StepRecord) -> bool:
        """Stage 2 (lines 17, 27-29): the brain picks a cluster, Eq. 6-7 pick a skill.

        Returns whether a skill ran; ``False`` (no cluster, none fits, or the explore arm
        won) sends the step to augmentation.
        """
        choice = self.choose_from_clusters(obs, rec)
        if choice is None or choice.skill_id is None:
            return False
        skill = self.mem.get_skill(choice.skill_id)
        rec.executions.append(self.run_skill(screen, skill, "cluster", obs, rec))
        return True

    def choose_from_clusters(self, obs: Observation, rec: StepRecord) -> ClusterChoice | None:
        """Eq. 5-7: the fitting cluster, then UCB (Eq. 6), softmax (Eq. 7) and the explore arm."""
        members_of: dict[str, list[Skill]] = {}
        views: list[ClusterView] = []
        for c in self.mem.clusters():
            members = [self.mem.get_skill(sid) for sid in c.skill_ids]
            members = [s for s in members if s is not None and s.status != "pruned"]
            if not members:
                continue
            members_of[c.id] = members
            views.append(
                ClusterView(
                    id=c.id,
                    name=c.name,
                    description=c.description,
                    skill_names=[s.name for s in members],
                    state_features=self.history.cluster_features(c.id, [s.id for s in members]),
                )
            )
        if not views:
            rec.decision["cluster"] = cluster_decision(0, None)
            return None
        state_id = obs.state.id
        view = self.observer.view(obs.image, obs.feature, state_id, "choose_cluster")
        cluster_id = self.brain.choose_cluster(view, views)
        if cluster_id is None or cluster_id not in members_of:
            rec.decision["cluster"] = cluster_decision(len(views), None)
            return None  # no cluster fits: augmentation
        rec.cluster_id = cluster_id
        n_i = self.mem.record_cluster_selection(cluster_id)
        members = members_of[cluster_id]
        missing = []
        for s in members:
            ids = s.object_ids()
            missing.append(sum(1 for o in ids if not obs.present(o)) / len(ids) if ids else 0.0)
        choice = choose_in_cluster(
            members,
            missing,
            n_i,
            StateStats(self.mem.state_stats(state_id)).explores,
            self.cfg.invocation,
            self.rng,
            [self.episode.is_stale(state_id, s.id, self.step_no) for s in members],
            [can_start(s, obs.present) for s in members],
        )
        rec.explore_prob = choice.explore_prob
        rec.decision["cluster"] = cluster_decision(len(views), cluster_id, choice, len(members))
        return choice

    def run_skill(
        self, screen: Screen, skill: Skill, path: str, obs: Observation, rec: StepRecord
    ) -> ExecutionRecord:
        """Execute a skill and evaluate it (lines 10-11, 31-37)."""
        ex = execute(skill.operations, screen, self.observer, self.cfg)
        return self.evaluator.evaluate(
            screen, skill, ex, path, obs.state.id, obs.feature, rec, self.step_no
        )

    # ------------------------------------------------------------------ run boundaries
    def _open(self, screen: Screen) -> tuple[float, Usage]:
        """A step begins: its number, its clock, the brain's usage so far; a live target's
        screen is caught up (:meth:`Screen.begin_step`)."""
        self.step_no += 1
        screen.timer = self.times
        t0, usage0 = time.perf_counter(), self.brain.usage.copy()
        screen.begin_step()
        return t0, usage0

    def _close(self, rec: StepRecord, t0: float, usage0: Usage, screen: Screen) -> StepRecord:
        rec.take_last_execution()
        rec.late_changes = screen.late_changes
        used = self.brain.usage - usage0
        rec.tokens, rec.cost_usd = used.tokens, used.cost_usd
        rec.estimated_tokens = used.estimated_tokens
        rec.reasoning_tokens = used.reasoning_tokens
        rec.brain_notes = self.brain.take_notes()
        rec.duration_s = time.perf_counter() - t0
        rec.times_ms = self.times.take(rec.duration_s)
        return rec

    def new_episode(self) -> None:
        """Forget episode-local memory (visited states, screens, stale skills); the SA-KG persists."""
        self.episode.clear()
        self.observer.forget_last()

    def finish(self) -> None:
        """End of run: rewrites still on probation are restored (Eq. 8)."""
        self.keeper.finish()


__all__ = ["EXPLORE", "PATHS", "Agent"]
