"""Library upkeep: suspension, removal, pruning, refinement (Eq. 8) and clustering.

Algorithm 1 lines 32-38 and the papers' text around them:

* a skill that fails ``suspend_after_failures`` times in a row is suspended, and
  reconsidered after ``suspend_steps`` steps;
* a skill whose R_total stays below ``r_prune`` for ``prune_window`` executions is
  removed (line 33);
* every ``prune_every`` steps, while the library is larger than ``max_library``, the
  skills executed more than the library mean with the lowest UCB go;
* while the library is smaller than ``refine_below``, an under-performing skill is
  rewritten by the brain and the rewrite goes on probation (lines 35-37);
* every ``cluster_every`` steps (and whenever skills exist but no cluster does), the
  brain puts new skills into action clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgagent.actions import Operation
from kgagent.brain.base import Brain, ClusterView, Transition
from kgagent.config import Config
from kgagent.records import Cluster, Skill
from kgagent.runlog import StepRecord

from .protocols import MemoryAPI

if TYPE_CHECKING:
    from .evaluation import SkillHistory


@dataclass
class _RefineTrial:
    """A rewrite on probation (Eq. 8): kept only if its next execution beats ``baseline``."""

    name: str
    description: str
    operations: list[Operation]
    baseline: float


class LibraryKeeper:
    """Keeps the skill library in shape (see the module docstring)."""

    def __init__(self, cfg: Config, memory: MemoryAPI, brain: Brain, history: SkillHistory) -> None:
        self.cfg = cfg
        self.mem = memory
        self.brain = brain
        self.history = history
        # suspended in an earlier run: the clock starts now
        self._suspended_at: dict[str, int] = {s.id: 0 for s in memory.skills("suspended")}
        self._trials: dict[str, _RefineTrial] = {}
        self._refined: set[str] = set()

    # ------------------------------------------------------------------ suspension, removal
    def count_failure(self, skill: Skill, rec: StepRecord, step: int) -> None:
        """One more failure in a row; suspend the skill at ``suspend_after_failures``."""
        skill.failures += 1
        if (
            skill.status == "active"
            and skill.failures >= self.cfg.invocation.suspend_after_failures
        ):
            skill.status = "suspended"
            self._suspended_at[skill.id] = step
            rec.skills_suspended.append(skill.id)

    def prune(self, skill_id: str, rec: StepRecord) -> None:
        self.mem.prune_skill(skill_id)
        self._trials.pop(skill_id, None)
        self._suspended_at.pop(skill_id, None)
        rec.skills_pruned.append(skill_id)

    def upkeep(self, rec: StepRecord, step: int) -> None:
        """Suspension release, population pruning and clustering, on their cadences."""
        lib = self.cfg.library
        for sid, at in list(self._suspended_at.items()):
            if step - at >= self.cfg.invocation.suspend_steps:
                del self._suspended_at[sid]
                skill = self.mem.get_skill(sid)
                if skill is not None and skill.status == "suspended":
                    skill.status, skill.failures = "active", 0
                    self.mem.update_skill(skill)
        if lib.prune_every > 0 and step % lib.prune_every == 0:
            excess = self.mem.library_size() - lib.max_library
            if excess > 0:
                # Executions above the library mean and the lowest UCB (Eq. 6) first.
                for cand in self.mem.pruning_candidates(limit=excess):
                    self.prune(cand.skill_id, rec)
        clusters = self.mem.clusters()
        due = lib.cluster_every > 0 and step % lib.cluster_every == 0
        if due or not clusters:
            self._cluster_new_skills(clusters)

    # ------------------------------------------------------------------ clustering
    def _cluster_new_skills(self, clusters: list[Cluster]) -> None:
        """Ask the brain to put unclustered skills into clusters (new or existing)."""
        clustered = {sid for c in clusters for sid in c.skill_ids}
        new = [s for s in self.mem.skills("active") if s.id not in clustered]
        if not new:
            return
        views = [
            ClusterView(
                id=c.id,
                name=c.name,
                description=c.description,
                skill_names=[s.name for s in map(self.mem.get_skill, c.skill_ids) if s],
                state_features=None,
            )
            for c in clusters
        ]
        for c, v in zip(clusters, views, strict=True):
            v.state_features = self.history.cluster_features(c.id, list(c.skill_ids))
        by_id = {s.id: s for s in new}
        assignments = self.brain.cluster_skills(
            [self.history.view(s, sources=True) for s in new], views
        )
        known = {c.id for c in clusters}
        opened: dict[str, str] = {}
        for a in assignments:
            if a.skill_id not in by_id:
                continue
            cid = a.cluster_id
            if cid is None or cid not in known:
                key = a.new_name or by_id[a.skill_id].name
                if key not in opened:
                    opened[key] = self.mem.add_cluster(
                        key, a.new_description or by_id[a.skill_id].description
                    ).id
                cid = opened[key]
            self.mem.add_to_cluster(a.skill_id, cid)

    # ------------------------------------------------------------------ refinement (Eq. 8)
    def maybe_refine(self, skill: Skill, tr: Transition, reward: float, rec: StepRecord) -> None:
        """Ask for a rewrite of an under-performing skill while the library is small.

        The rewrite goes on probation: it replaces the skill now, and its next
        execution decides — kept if its R_total beats the skill's fitness at the time
        of the rewrite, otherwise the original is restored (:meth:`judge_trial`).
        """
        if (
            skill.id in self._refined
            or skill.id in self._trials
            or reward > self.cfg.invocation.r_good
            or skill.executions < 2
        ):
            return
        if self.mem.library_size() >= self.cfg.library.refine_below:
            return
        self._refined.add(skill.id)
        text = self.brain.refine_skill(self.history.view(skill), tr)
        if text is None:
            return
        ops = text.operations if text.operations else None
        if (
            text.name == skill.name
            and text.description == skill.description
            and (ops is None or ops == skill.operations)
        ):
            return
        self._trials[skill.id] = _RefineTrial(
            skill.name, skill.description, list(skill.operations), skill.fitness
        )
        skill.name, skill.description = text.name or skill.name, text.description
        if ops:
            skill.operations = list(ops)
            self.mem.link_skill_objects(skill.id, skill.object_ids())
        self.mem.update_skill(skill)
        rec.refined.append(skill.id)

    def on_probation(self, skill_id: str) -> bool:
        return skill_id in self._trials

    def judge_trial(self, skill: Skill, reward: float) -> None:
        """The rewrite's next execution: keep it if it beat the baseline, else restore."""
        trial = self._trials.pop(skill.id, None)
        if trial is None or reward > trial.baseline:
            return  # no trial, or the rewrite scored better: keep it
        skill.name, skill.description = trial.name, trial.description
        if skill.operations != trial.operations:
            skill.operations = trial.operations
            if skill.status != "pruned":  # pruning dropped its links
                self.mem.link_skill_objects(skill.id, skill.object_ids())

    def finish(self) -> None:
        """End of run: rewrites still on probation were never shown to be better — restore them."""
        for sid, trial in list(self._trials.items()):
            skill = self.mem.get_skill(sid)
            if skill is not None:
                skill.name, skill.description = trial.name, trial.description
                relink = skill.operations != trial.operations and skill.status != "pruned"
                skill.operations = trial.operations
                self.mem.update_skill(skill)
                if relink:
                    self.mem.link_skill_objects(skill.id, skill.object_ids())
        self._trials.clear()
