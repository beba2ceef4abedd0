"""Algorithm 1: one decision step of the KG-Agent over the SA-KG.

Per step: observe → merge-or-create the state → neighbourhood of experience and
HQ candidates (Eq. 2–3) → up to M weighted samples (Eq. 4), stopping early once
``R_total > r_good`` → otherwise the brain picks an action cluster and a skill
is drawn by UCB + softmax (Eq. 6–7), or the explore arm wins → otherwise skill
augmentation. Every execution is evaluated with Eq. 9–11, and updates the
skill's fitness and counts, the skill edge (Eq. 1) and the state's MCTS
statistics. Library upkeep (removal, suspension, population pruning,
refinement, clustering) follows.

The agent holds a :class:`~kgagent.envs.base.Screen` and nothing else of the
program: no reward, no info, no ground truth. It knows no game or app.
See ``docs/agent.md`` for the choices made where the papers are vague.
"""

from __future__ import annotations

import copy
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import cv2
import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import (
    Brain,
    ClusterView,
    Judgement,
    SkillView,
    Transition,
    Usage,
    View,
)
from kgagent.config import Config
from kgagent.envs.base import Screen
from kgagent.errors import KGAgentError
from kgagent.memory.models import Skill, StateHit, UIObject
from kgagent.perception.base import Segmenter, StateEncoder
from kgagent.perception.change import to_gray, visual_change

from .augment import (
    AugmentResult,
    augment,
    combine,
    object_actions,
    op_key,
    ops_key,
    read_reaction,
    residual_actions,
)
from .executor import Execution, execute, object_present
from .invocation import (
    EXPLORE,
    ClusterChoice,
    MctsStats,
    can_start,
    choose_in_cluster,
    sample_hq,
)
from .rewards import RewardTerms, judgement_terms, novelty_reward, r_total, update_fitness

PATHS = ("hq", "cluster", "augment", "random", "idle")
_PAST_EFFECTS = 8  # feature changes remembered per skill for the brain's consistency check
_CROP_CACHE = 4096
_SEGMENTED_SCREENS = 64  # grey screens kept to tell whether a state's screen changed (~1 MB each)


@dataclass
class ExecutionRecord:
    """One executed skill (or augmentation attempt, or random action) within a step."""

    path: str
    from_state: str
    to_state: str
    skill_id: str | None = None
    skill_name: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    grounding: list[dict[str, Any]] = field(default_factory=list)  # per executed op
    change: float = 0.0
    new_state: bool = False
    new_screen: bool = False  # the after-screen was a configuration new in this episode
    r_progress: float = 0.0
    r_semantic: float = 0.0
    r_state: float = 0.0
    r_novel: float = 0.0
    r_total: float = 0.0
    evaluated: bool = False
    valid_transition: bool = False
    actions: int = 0
    error: str | None = None
    note: str = ""


@dataclass
class StepRecord:
    """What one step did; the top-level fields mirror the step's last execution."""

    step: int
    state_id: str
    path: str
    skill_id: str | None = None
    skill_name: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    grounding: list[dict[str, Any]] = field(default_factory=list)
    change: float = 0.0
    r_progress: float = 0.0
    r_semantic: float = 0.0
    r_state: float = 0.0
    r_novel: float = 0.0
    r_total: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    valid_transition: bool = False
    new_state: bool = False
    state_created: bool = False  # the observed state v_i was created this step
    executions: list[ExecutionRecord] = field(default_factory=list)
    actions: int = 0  # concrete actions sent to the program this step
    cluster_id: str | None = None
    explore_prob: float | None = None
    skills_added: list[str] = field(default_factory=list)
    skills_pruned: list[str] = field(default_factory=list)
    skills_suspended: list[str] = field(default_factory=list)
    refined: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _RefineTrial:
    """A rewrite on probation (Eq. 8): kept only if its next execution beats ``baseline``."""

    name: str
    description: str
    operations: list[Operation]
    baseline: float


class Agent:
    """The KG-Agent loop over one :class:`Memory` (see the module docstring).

    ``memory`` is an open :class:`kgagent.memory.Memory`; ``rng`` is the only
    source of randomness, so a run is reproducible under a seed.
    """

    def __init__(
        self,
        config: Config,
        memory: Any,
        encoder: StateEncoder,
        segmenter: Segmenter,
        brain: Brain,
        rng: np.random.Generator,
    ) -> None:
        self.cfg = copy.deepcopy(config)
        self.cfg.apply_ablation()  # idempotent: reward switches of no_novelty/...
        self.ablation = self.cfg.run.ablation
        # no_graph is the Bottom-Up Agent: no SA-KG invocation, no skill edges, and
        # therefore none of the graph-derived rewards (R_state, R_novel).
        self.use_graph = self.ablation != "no_graph"
        if not self.use_graph:
            self.cfg.rewards.use_state = False
            self.cfg.rewards.use_novelty = False
        self.isolated = self.ablation == "no_similarity"
        self.mem = memory
        self.encoder = encoder
        self.segmenter = segmenter
        self.brain = brain
        self.rng = rng
        self.step_no = 0
        self._visited: set[str] = set()  # states seen in this episode
        self._state_objects: dict[str, list[UIObject]] = {}
        # state id -> the grey screen its objects were last segmented from (newest last)
        self._segmented_screens: OrderedDict[str, np.ndarray] = OrderedDict()
        self._crops: OrderedDict[str, np.ndarray] = OrderedDict()
        # (last merged screen, its state, its feature, whether it was a new screen config)
        self._last: tuple[np.ndarray, StateHit, np.ndarray, bool] | None = None
        # Episode-local: reduced grey screens seen per state (screen novelty), and the
        # step at which a (state, skill) execution was judged not progressive (stale).
        self._screens: dict[str, deque[tuple[int, np.ndarray]]] = {}
        self._screen_order: deque[tuple[int, str]] = deque()  # (seq, state) oldest first
        self._screen_seq = 0
        self._screen_count = 0  # screens kept over all states
        self._stale: dict[tuple[str, str], int] = {}
        # The last screen-changing execution, if a validated skill made it: (skill,
        # execution, from state, its feature). Its follow-ups extend it (augment).
        self._prev: tuple[Skill, Execution, str, np.ndarray] | None = None
        # (skill, state) pairs whose open selection was searched for a completion (once each).
        self._completion_sought: set[tuple[str, str]] = set()
        self._effects: dict[str, deque[np.ndarray]] = {}
        # States each skill was executed from in this run (the graph keeps only
        # successful ones as skill edges; no_graph keeps none).
        self._sources: dict[str, set[str]] = {}
        self._suspended_at: dict[str, int] = {
            s.id: 0 for s in self.mem.skills("suspended")
        }  # suspended in an earlier run: the clock starts now
        self._trials: dict[str, _RefineTrial] = {}
        self._refined: set[str] = set()
        self._present_cache: tuple[np.ndarray | None, dict[str, bool]] = (None, {})
        self._cur_state_objects: set[str] = set()

    # ------------------------------------------------------------------ perception
    def _encode(self, image: np.ndarray) -> np.ndarray:
        return np.asarray(self.encoder.encode([image])[0], dtype=np.float32)

    def _merge(self, image: np.ndarray) -> tuple[StateHit, np.ndarray]:
        """Merge-or-create the state of ``image``; reuse the last result for an identical screen.

        Re-merging the very same screenshot (the screen after the previous
        step's last execution) would count a visit twice and nudge the node's
        mean feature towards itself.
        """
        if self._last is not None:
            img, hit, feat, _ = self._last
            if img is image or (img.shape == image.shape and np.array_equal(img, image)):
                self._last = (img, hit, feat, False)  # the very same screen: not new
                return StateHit(hit.id, False, hit.cosine, hit.visits), feat
        feat = self._encode(image)
        hit = self.mem.merge_or_create_state(
            feat, thumbnail=_thumbnail(image), isolated=self.isolated
        )
        self._last = (image, hit, feat, self._register_screen(hit.id, image))
        return hit, feat

    def _last_screen_new(self) -> bool:
        """Whether the screen merged last was a configuration new in this episode."""
        return bool(self._last[3]) if self._last is not None else False

    def _register_screen(self, state_id: str, image: np.ndarray) -> bool:
        """Screen novelty: is ``image`` a configuration of ``state_id`` not seen in this episode?

        The screen is reduced (grey, ``1/screen_novelty_scale`` resolution, area
        averaging) and compared with Δ to every screen of the same state kept
        for this episode; it is new when every Δ exceeds
        ``rewards.screen_novelty_change``. A new screen is remembered: at most
        ``screen_novelty_cap`` per state and ``screen_novelty_total_cap`` over all
        states, oldest dropped first.
        """
        rc = self.cfg.rewards
        g = to_gray(image)
        f = max(int(rc.screen_novelty_scale), 1)
        if f > 1:
            h, w = g.shape[:2]
            g = cv2.resize(g, (max(1, w // f), max(1, h // f)), interpolation=cv2.INTER_AREA)
        thr = self.cfg.perception.change_threshold
        seen = self._screens.setdefault(state_id, deque())
        for _, old in seen:
            if old.shape == g.shape and visual_change(old, g, thr) <= rc.screen_novelty_change:
                return False
        self._screen_seq += 1
        seen.append((self._screen_seq, g))
        self._screen_order.append((self._screen_seq, state_id))
        self._screen_count += 1
        if len(seen) > max(int(rc.screen_novelty_cap), 1):
            seen.popleft()  # FIFO per state (its order entry is skipped when reached)
            self._screen_count -= 1
        while self._screen_count > max(int(rc.screen_novelty_total_cap), 1):
            seq, sid = self._screen_order.popleft()  # FIFO over all states
            q = self._screens.get(sid)
            if q and q[0][0] == seq:
                q.popleft()
                self._screen_count -= 1
        return True

    # ------------------------------------------------------------------ anti-cycling
    def _is_stale(self, state_id: str, skill_id: str) -> bool:
        """The skill was judged not progressive from this state within ``stale_steps`` steps."""
        at = self._stale.get((state_id, skill_id))
        return at is not None and self.step_no - at < self.cfg.invocation.stale_steps

    def _mark_stale(self, state_id: str, skill_id: str, judgement: Judgement | None) -> None:
        """Remember a non-progressive execution from a state; a progressive one clears it.

        Off when ``stale_steps`` is 0 or R_progress is switched off (then the
        progress judgement drives nothing, as the ablation intends).
        """
        if self.cfg.invocation.stale_steps <= 0 or not self.cfg.rewards.use_progress:
            return
        key = (state_id, skill_id)
        if judgement is not None and judgement.progressive:
            self._stale.pop(key, None)
        else:
            self._stale[key] = self.step_no

    def _objects_for(self, state_id: str, image: np.ndarray, created: bool) -> list[UIObject]:
        """The UI objects on this screen of ``state_id``, linked to the state in memory.

        Segmented when the state is first seen in this run. With
        ``perception.resegment`` a later screen of the same state that differs from
        the one segmented (Δ above ``augment.min_change``) is segmented again, so the
        objects are the ones on screen now; without it a state's objects are
        segmented once and then reused (or loaded from memory).
        """
        resegment = self.cfg.perception.resegment
        gray = to_gray(image) if resegment else None
        objs = self._state_objects.get(state_id)
        if objs is not None:
            seen = self._segmented_screens.get(state_id)
            if gray is None or (
                seen is not None
                and seen.shape == gray.shape
                and visual_change(seen, gray, self.cfg.perception.change_threshold)
                <= self.cfg.augment.min_change
            ):
                return objs
        elif not (created or resegment):
            objs = list(self.mem.state_objects(state_id))
            if objs:
                self._state_objects[state_id] = objs
                return objs
        objs = self._segment(image)
        if objs:
            self.mem.link_state_objects(state_id, [o.id for o in objs])
        self._state_objects[state_id] = objs
        if gray is not None:
            self._segmented_screens[state_id] = gray
            self._segmented_screens.move_to_end(state_id)
            if len(self._segmented_screens) > _SEGMENTED_SCREENS:
                self._segmented_screens.popitem(last=False)
        return objs

    def _segment(self, image: np.ndarray) -> list[UIObject]:
        out: list[UIObject] = []
        seen: set[str] = set()
        for seg in self.segmenter.segment(image):
            obj = self.mem.upsert_object(seg.crop, seg.bbox, seg.phash)
            if obj.id not in seen:
                seen.add(obj.id)
                out.append(obj)
        return out

    def _crop(self, object_id: str) -> np.ndarray:
        crop = self._crops.get(object_id)
        if crop is None:
            crop = self.mem.object_crop(object_id)
            self._crops[object_id] = crop
            if len(self._crops) > _CROP_CACHE:
                self._crops.popitem(last=False)
        else:
            self._crops.move_to_end(object_id)
        return crop

    def _hint(self, object_id: str) -> tuple[int, int, int, int] | None:
        """Where the object was first seen: grounding looks there first."""
        try:
            return self.mem.get_object(object_id).bbox
        except KGAgentError:
            return None

    def _present_fn(self, image: np.ndarray) -> Callable[[str], bool]:
        """Whether an object is on ``image``: segmented on it, else template-matched (cached)."""
        if self._present_cache[0] is not image:
            # Keyed by the array itself (held, so its id cannot be reused by another screen).
            self._present_cache = (image, {})
        cache = self._present_cache[1]
        known = self._cur_state_objects

        def present(object_id: str) -> bool:
            if object_id in known:
                return True
            if object_id not in cache:
                cache[object_id] = object_present(
                    object_id, image, self._crop, self.cfg, self._hint
                )
            return cache[object_id]

        return present

    # ------------------------------------------------------------------ the step
    def step(self, screen: Screen) -> StepRecord:
        """One iteration of Algorithm 1 on the current screen."""
        t0 = time.perf_counter()
        usage0 = copy.copy(self.brain.usage)
        self.step_no += 1
        image = screen.observe()
        hit, feat = self._merge(image)  # Alg. 1 line 4
        rec = StepRecord(step=self.step_no, state_id=hit.id, path="idle", state_created=hit.created)
        self._visited.add(hit.id)
        objects = self._objects_for(hit.id, image, hit.created)
        self._cur_state_objects = {o.id for o in objects}

        if self.ablation == "random":
            rec.executions.append(self._random_action(screen, hit, objects))
        else:
            self._decide(screen, hit, feat, objects, rec)
            self._upkeep(rec)

        if rec.executions:
            last = rec.executions[-1]
            rec.path = last.path
            for name in (
                "skill_id",
                "skill_name",
                "operations",
                "grounding",
                "change",
                "r_progress",
                "r_semantic",
                "r_state",
                "r_novel",
                "r_total",
                "valid_transition",
                "new_state",
            ):
                setattr(rec, name, getattr(last, name))
            rec.actions = sum(e.actions for e in rec.executions)
        du = _usage_delta(usage0, self.brain.usage)
        rec.tokens, rec.cost_usd = du.tokens, du.cost_usd
        rec.duration_s = time.perf_counter() - t0
        return rec

    def _decide(
        self,
        screen: Screen,
        hit: StateHit,
        feat: np.ndarray,
        objects: list[UIObject],
        rec: StepRecord,
    ) -> None:
        """Stage 1 (SA-KG), stage 2 (clusters), augmentation — in that order.

        Stage 1 draws up to M skills without replacement from S_HQ(v_i) by
        Eq. 4 and stops early at the first ``R_total > r_good``. The draws
        belong to v_i: an attempt that changes nothing (or cannot be grounded)
        leaves the screen in v_i and the next sample is tried; an attempt that
        moves the screen to another state without being good enough ends
        stage 1 — the remaining samples were for a screen that is gone — and
        stage 2 runs in the state the screen is in now. So a chain of mediocre
        skills never runs unchecked: every step that did not find a good
        skill in the graph reaches VLM-guided invocation and its explore arm.
        An attempt that stays in v_i may still have changed the screen (an
        object gone, a menu open): each later draw is checked against the
        screen as it is after the attempt, not as it was when the step began.
        """
        state_id = hit.id
        if self._open_selection(screen, state_id):
            rec.executions.append(self._augment(screen, state_id, feat, objects, rec, True))
            return
        if self.use_graph:
            candidates = self.mem.hq_candidates(state_id)  # Eq. 2–3
            # Anti-cycling: skills that just failed to progress from here are not candidates.
            candidates = [c for c in candidates if not self._is_stale(state_id, c.skill_id)]
            # Eq. 4 over the candidates that can act on this screen: the same pre-filter as
            # stage 2 (not all objects missing; the first operation's objects present). Drawing
            # the whole urn and skipping absent skills samples exactly the filtered urn, and
            # checks presence only for the skills drawn. (Drawing the whole urn up front
            # costs 0.3 / 2 / 7.6 ms for 20 / 100 / 300 candidates; a lazy draw would use
            # the generator differently and change the recorded, seed-reproducible runs.)
            present = self._present_fn(screen.observe())
            attempts = 0
            for cand in sample_hq(candidates, len(candidates), self.rng):
                if attempts >= self.cfg.invocation.m_samples:
                    break
                skill = self.mem.get_skill(cand.skill_id)
                if skill.status != "active":
                    continue  # suspended or pruned by an earlier attempt of this step
                ids = skill.object_ids()
                if (ids and not any(present(o) for o in ids)) or not can_start(skill, present):
                    continue
                attempts += 1
                ex = self._run_skill(screen, skill, "hq", state_id, feat, rec)
                rec.executions.append(ex)
                if ex.r_total > self.cfg.invocation.r_good or screen.done:
                    return  # early stop (Alg. 1 line 12)
                moved = ex.to_state != state_id
                if moved:
                    landing, feat = self._merge(screen.observe())
                    state_id = landing.id
                # The next draws, stage 2 and augmentation act on the screen as it is now:
                # an attempt that stays in v_i can still have removed (or shown) objects.
                objects = self._objects_for(state_id, screen.observe(), False)
                self._cur_state_objects = {o.id for o in objects}
                present = self._present_fn(screen.observe())
                if self._open_selection(screen, state_id):
                    # Complete it before another draw (or stage 2) undoes it.
                    rec.executions.append(self._augment(screen, state_id, feat, objects, rec, True))
                    return
                if moved:
                    break
        if screen.done:
            return
        image = screen.observe()
        choice, _cluster_id = self._cluster_invocation(image, state_id, feat, rec)
        if choice is not None and choice.skill_id is not None:
            skill = self.mem.get_skill(choice.skill_id)
            rec.executions.append(self._run_skill(screen, skill, "cluster", state_id, feat, rec))
            return
        rec.executions.append(self._augment(screen, state_id, feat, objects, rec))

    def _open_selection(self, screen: Screen, state_id: str) -> bool:
        """Whether the screen is a selection that waits for an input no known skill gives.

        The last screen-changing execution was a validated skill (``_prev``), the
        screen is still what it made, and its last action made the program react
        both at the element acted on (a selection: a card raised, a menu title lit)
        and elsewhere (where it expects the completing input: highlighted targets, a
        menu's items; see :func:`~kgagent.agent.augment.read_reaction`). If no
        active skill extends that skill by one operation whose objects are on this
        screen, the completion is unknown, and anything else the agent does first
        (another skill, a command) may undo the selection: the next decision is a
        follow-up search. Once per skill and state (the state the selection made),
        so a reaction that only looked like a selection (an element that vanished
        when used) costs one search, not one per execution. Only after a
        single-action skill: completing an interaction changes its element too (a
        target's frame goes when the card is played), and a longer skill is far
        more often a completed interaction than an opened one.
        """
        prev = self._prev
        if not self.cfg.augment.complete_selections or prev is None:
            return False
        skill, ex = prev[0], prev[1]
        if (
            len(skill.operations) != 1
            or self.cfg.augment.k_max < 2
            or (skill.id, state_id) in self._completion_sought
        ):
            return False
        image = screen.observe()
        reaction = screen.last_reaction
        if (
            reaction is None
            or reaction[0].shape != image.shape
            or not np.array_equal(ex.after, image)
        ):
            return False
        focus, marked = read_reaction(reaction[0], image, reaction[1].points(), self.cfg)
        if not (focus and marked):
            return False
        current = self.mem.get_skill(skill.id)
        if current is None or current.status != "active":
            return False
        present = self._present_fn(image)
        head = op_key(skill.operations[0])
        for s in self.mem.skills("active"):
            if (
                len(s.operations) == 2
                and op_key(s.operations[0]) == head
                and all(present(o) for o in s.operations[1].object_ids())
            ):
                return False  # a known completion can act here
        self._completion_sought.add((skill.id, state_id))
        return True

    # ------------------------------------------------------------------ stage 2
    def _cluster_invocation(
        self, image: np.ndarray, state_id: str, feat: np.ndarray, rec: StepRecord
    ) -> tuple[ClusterChoice | None, str | None]:
        """VLM-guided invocation (Eq. 5–7): pick a cluster, then a skill or exploration."""
        clusters = [c for c in self.mem.clusters() if c.skill_ids]
        if not clusters:
            return None, None
        skills_by_cluster: dict[str, list[Skill]] = {}
        views: list[ClusterView] = []
        for c in clusters:
            members = [self.mem.get_skill(sid) for sid in c.skill_ids]
            members = [s for s in members if s is not None and s.status != "pruned"]
            if not members:
                continue
            skills_by_cluster[c.id] = members
            views.append(
                ClusterView(
                    id=c.id,
                    name=c.name,
                    description=c.description,
                    skill_names=[s.name for s in members],
                    state_features=self._cluster_features(c.id, [s.id for s in members]),
                )
            )
        if not views:
            return None, None
        cluster_id = self.brain.choose_cluster(View(image, feat, state_id), views)
        if cluster_id is None or cluster_id not in skills_by_cluster:
            return None, None  # no cluster fits: augmentation
        rec.cluster_id = cluster_id
        n_i = self.mem.record_cluster_selection(cluster_id)
        members = skills_by_cluster[cluster_id]
        present = self._present_fn(image)
        missing = []
        for s in members:
            ids = s.object_ids()
            missing.append(sum(1 for o in ids if not present(o)) / len(ids) if ids else 0.0)
        tree = self._tree(state_id)
        stale = [self._is_stale(state_id, s.id) for s in members]
        startable = [can_start(s, present) for s in members]
        choice = choose_in_cluster(
            members, missing, n_i, tree.n(EXPLORE), self.cfg.invocation, self.rng, stale, startable
        )
        rec.explore_prob = choice.explore_prob
        return choice, cluster_id

    def _cluster_features(self, cluster_id: str, skill_ids: list[str]) -> np.ndarray:
        """The memory's cluster states, plus states its skills ran from in this run."""
        base = self.mem.cluster_state_features(cluster_id)
        extra = self._source_features_run(skill_ids)
        if extra is None:
            return base
        return np.concatenate([base, extra]) if len(base) else extra

    def _source_features_run(self, skill_ids: list[str]) -> np.ndarray | None:
        ids = sorted({i for sid in skill_ids for i in self._sources.get(sid, set())})
        feats = []
        for i in ids:
            try:
                feats.append(self.mem.state_feature(i))
            except KGAgentError:
                continue
        return np.stack(feats) if feats else None

    # ------------------------------------------------------------------ execution + evaluation
    def _run_skill(
        self,
        screen: Screen,
        skill: Skill,
        path: str,
        state_id: str,
        feat: np.ndarray,
        rec: StepRecord,
    ) -> ExecutionRecord:
        ex = execute(skill.operations, screen, self._crop, self.cfg, self._hint)
        return self._evaluate(screen, skill, ex, path, state_id, feat, rec)

    def _evaluate(
        self,
        screen: Screen,
        skill: Skill,
        ex: Execution,
        path: str,
        state_id: str,
        feat: np.ndarray,
        rec: StepRecord,
        *,
        actions: int | None = None,
        new_skill: bool = False,
        landing: tuple[StateHit, np.ndarray] | None = None,
    ) -> ExecutionRecord:
        """Eq. 9–11, then fitness, counts, skill edge (Eq. 1), MCTS, removal/suspension."""
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
        tree = self._tree(state_id)
        self._sources.setdefault(skill.id, set()).add(state_id)
        if out.actions == 0:
            # Nothing reached the program (first operand not on screen): no transition
            # to evaluate, but it is a failure of this skill here.
            tree.record(skill.id, 0.0)
            self.mem.put_mcts(state_id, tree.to_json())
            self._count_failure(skill, rec)
            self.mem.update_skill(skill)
            return out

        # ``landing``: the caller already merged the final screen (and owns its novelty).
        hit_j, feat_j = landing if landing is not None else self._merge(screen.observe())
        out.to_state = hit_j.id
        out.new_state = hit_j.created
        tr = Transition(
            before=View(ex.before, feat, state_id),
            after=View(ex.after, feat_j, hit_j.id),
            change=ex.change,
            new_in_episode=hit_j.id not in self._visited,
            new_in_graph=hit_j.created,
            new_screen_in_episode=self._last_screen_new(),
        )
        out.new_screen = tr.new_screen_in_episode
        self._visited.add(hit_j.id)
        judgement: Judgement | None = self.brain.evaluate(self._skill_view(skill), tr)
        self._mark_stale(state_id, skill.id, judgement)
        terms = self._rewards(judgement, state_id, hit_j)
        out.r_progress, out.r_semantic = terms.progress, terms.semantic
        out.r_state, out.r_novel, out.r_total = terms.state, terms.novel, terms.total
        out.evaluated = True
        success = ex.ok and ex.change >= self.cfg.augment.min_change
        out.valid_transition = success
        if ex.change >= self.cfg.augment.min_change:
            self._prev = (skill, ex, state_id, feat) if success else None

        skill.fitness = update_fitness(skill.fitness, terms.total, self.cfg.rewards.fitness_decay)
        skill.executions += 1
        if success:
            skill.failures = 0
            self._effects.setdefault(skill.id, deque(maxlen=_PAST_EFFECTS)).append(feat_j - feat)
        else:
            self._count_failure(skill, rec)
        skill.low_rewards = skill.low_rewards + 1 if terms.total < self.cfg.rewards.r_prune else 0
        self._judge_trial(skill, terms.total, rec)
        self.mem.update_skill(skill)
        if success and self.use_graph:
            self.mem.upsert_skill_edge(state_id, hit_j.id, skill.id, ex.change, terms.total)
        tree.record(skill.id, terms.total)
        self.mem.put_mcts(state_id, tree.to_json())

        if skill.low_rewards >= self.cfg.rewards.prune_window and skill.status != "pruned":
            self._prune(skill.id, rec)  # Alg. 1 line 33: R_total stays below r_prune
        elif not new_skill and skill.status == "active":
            self._maybe_refine(skill, tr, terms.total, rec)
        return out

    def _rewards(self, judgement: Judgement | None, state_id: str, hit_j: StateHit) -> RewardTerms:
        rc = self.cfg.rewards
        progress, semantic = judgement_terms(judgement, rc)
        delta = 0.0
        if rc.use_state:
            # Eq. 10, both potentials read before this execution's edge is written.
            delta = self.mem.state_potential(hit_j.id) - self.mem.state_potential(state_id)
        novel = novelty_reward(hit_j.created, rc)  # Eq. 11
        return r_total(progress, semantic, delta, novel, rc)  # Eq. 9

    def _count_failure(self, skill: Skill, rec: StepRecord) -> None:
        skill.failures += 1
        if (
            skill.status == "active"
            and skill.failures >= self.cfg.invocation.suspend_after_failures
        ):
            skill.status = "suspended"
            self._suspended_at[skill.id] = self.step_no
            rec.skills_suspended.append(skill.id)

    def _skill_view(self, skill: Skill, *, sources: bool = False) -> SkillView:
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
            view.source_features = self._source_features([skill.id])
        return view

    def _source_features(self, skill_ids: list[str]) -> np.ndarray | None:
        """Features of the states these skills ran from: skill edges, plus this run's sources."""
        ids: set[str] = set()
        for sid in skill_ids:
            ids |= self._sources.get(sid, set())
            if self.use_graph:
                ids |= {e.src for e in self.mem.skill_edges(sid)}
        feats = []
        for i in sorted(ids):
            try:
                feats.append(self.mem.state_feature(i))
            except KGAgentError:
                continue  # a state without a vector (never expected; skip rather than fail)
        return np.stack(feats) if feats else None

    def _tree(self, state_id: str) -> MctsStats:
        return MctsStats.from_json(self.mem.get_mcts(state_id))

    # ------------------------------------------------------------------ augmentation
    def _augment(
        self,
        screen: Screen,
        state_id: str,
        feat: np.ndarray,
        objects: list[UIObject],
        rec: StepRecord,
        follow_up: bool = False,
    ) -> ExecutionRecord:
        """Skill augmentation (Alg. 1 lines 18–24): grow, name, store, evaluate.

        ``follow_up``: an open selection's completion is searched (k = 1, where
        the program reacted first; see :meth:`_open_selection`); the note says so.
        """
        library = self.mem.skills("active")
        tree = self._tree(state_id)
        image = screen.observe()
        prev = self._prev
        if prev is not None and (
            self.mem.get_skill(prev[0].id).status != "active"
            or not np.array_equal(prev[1].after, image)
        ):
            prev = None  # the skill was removed, or the screen is no longer what it made
        res: AugmentResult = augment(
            screen,
            objects=objects,
            objects_on=self._segment,
            tree=tree,
            library=library,
            crop_of=self._crop,
            present=self._present_fn(image),
            cfg=self.cfg,
            rng=self.rng,
            hint_of=self._hint,
            previous=prev[0] if prev is not None else None,
            follow_up=follow_up and prev is not None,
        )
        if res.found and res.prefix_ran_before and prev is not None:
            # A follow-up of the previous skill: the new skill is both, run from where
            # the previous one started.
            self.mem.put_mcts(state_id, tree.to_json())
            _skill, prev_ex, state_id, feat = prev
            tree = self._tree(state_id)
            res.execution = combine(
                prev_ex.before,
                res.execution.after,
                [*prev_ex.ops, *res.execution.ops],
                None,
                self.cfg,
            )
        note = (
            ("open selection; " if follow_up else "")
            + f"k={res.k}; tried "
            + ", ".join(f"{d} Δ={c:.4f}" for d, c in res.tried)
        )
        if not res.found:
            if res.prefix is not None and res.prefix_executed:
                # The prefix ran and had an effect: that is an execution of the prefix.
                self.mem.put_mcts(state_id, tree.to_json())
                out = self._evaluate(
                    screen,
                    res.prefix,
                    res.execution,
                    "augment",
                    state_id,
                    feat,
                    rec,
                    actions=res.actions,
                )
                tree = self._tree(state_id)
                tree.record(EXPLORE, 0.0)
                self.mem.put_mcts(state_id, tree.to_json())
                out.note = "nothing found after the prefix; " + note
                return out
            tree.record(EXPLORE, 0.0)
            self.mem.put_mcts(state_id, tree.to_json())
            hit_j, _ = self._merge(screen.observe())
            self._visited.add(hit_j.id)
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

        self.mem.put_mcts(state_id, tree.to_json())  # the tried operations
        existing = {ops_key(s.operations): s for s in self.mem.skills()}
        dup = existing.get(ops_key(res.operations))
        if dup is not None and dup.status != "pruned":
            out = self._evaluate(
                screen, dup, res.execution, "augment", state_id, feat, rec, actions=res.actions
            )
            out.note = "rediscovered an existing skill; " + note
            self._record_explore(state_id, out.r_total)
            return out

        hit_j, feat_j = self._merge(screen.observe())
        tr = Transition(
            before=View(res.execution.before, feat, state_id),
            after=View(res.execution.after, feat_j, hit_j.id),
            change=res.execution.change,
            new_in_episode=hit_j.id not in self._visited,
            new_in_graph=hit_j.created,
            new_screen_in_episode=self._last_screen_new(),
        )
        text = None if dup is not None else self.brain.describe_skill(res.operations, tr)
        if text is None:
            # Meaningless (or a pruned skill found again): dropped, never stored.
            self._visited.add(hit_j.id)
            self._record_explore(state_id, 0.0)
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
        obj_ids = skill.object_ids()
        if obj_ids:
            self.mem.link_skill_objects(skill.id, obj_ids)
        rec.skills_added.append(skill.id)
        out = self._evaluate(
            screen,
            skill,
            res.execution,
            "augment",
            state_id,
            feat,
            rec,
            actions=res.actions,
            new_skill=True,
            landing=(hit_j, feat_j),
        )
        out.note = "new skill; " + note
        self._record_explore(state_id, out.r_total)
        return out

    def _record_explore(self, state_id: str, value: float) -> None:
        tree = self._tree(state_id)
        tree.record(EXPLORE, value)
        self.mem.put_mcts(state_id, tree.to_json())

    # ------------------------------------------------------------------ random ablation
    def _random_action(
        self, screen: Screen, hit: StateHit, objects: list[UIObject]
    ) -> ExecutionRecord:
        """Ablation ``random``: one random atomic action on a segment or a point, no learning."""
        image = screen.observe()
        size = (image.shape[1], image.shape[0])
        ops = object_actions(objects, self.rng, self.cfg.augment.rare_action_prob)
        ops += residual_actions(size, objects, self.cfg, self.rng)
        op: Operation = ops[int(self.rng.integers(len(ops)))]
        ex = execute([op], screen, self._crop, self.cfg, self._hint)
        hit_j, _ = self._merge(screen.observe())
        self._visited.add(hit_j.id)
        return ExecutionRecord(
            path="random",
            from_state=hit.id,
            to_state=hit_j.id,
            operations=[op.to_dict()],
            grounding=[r.to_dict() for r in ex.ops],
            change=ex.change,
            new_state=hit_j.created,
            valid_transition=ex.ok and ex.change >= self.cfg.augment.min_change,
            actions=ex.actions,
            error=ex.error,
        )

    # ------------------------------------------------------------------ library upkeep
    def _prune(self, skill_id: str, rec: StepRecord) -> None:
        self.mem.prune_skill(skill_id)
        self._trials.pop(skill_id, None)
        self._suspended_at.pop(skill_id, None)
        rec.skills_pruned.append(skill_id)

    def _upkeep(self, rec: StepRecord) -> None:
        """Suspension release, population pruning and clustering, on their cadences."""
        lib = self.cfg.library
        for sid, at in list(self._suspended_at.items()):
            if self.step_no - at >= self.cfg.invocation.suspend_steps:
                del self._suspended_at[sid]
                skill = self.mem.get_skill(sid)
                if skill is not None and skill.status == "suspended":
                    skill.status, skill.failures = "active", 0
                    self.mem.update_skill(skill)
        if lib.prune_every > 0 and self.step_no % lib.prune_every == 0:
            size = self.mem.stats().library_size
            excess = size - lib.max_library
            if excess > 0:
                # Executions above the library mean and the lowest UCB (Eq. 6) first.
                for cand in self.mem.pruning_candidates(limit=excess):
                    self._prune(cand.skill_id, rec)
        clusters = self.mem.clusters()
        due = lib.cluster_every > 0 and self.step_no % lib.cluster_every == 0
        if due or not clusters:
            self._cluster_new_skills(clusters)

    def _cluster_new_skills(self, clusters: list[Any]) -> None:
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
                skill_names=[],
                state_features=None,
            )
            for c in clusters
        ]
        by_id = {s.id: s for s in new}
        for c, v in zip(clusters, views, strict=True):
            v.skill_names = [
                s.name for s in (self.mem.get_skill(i) for i in c.skill_ids) if s is not None
            ]
        for c, v in zip(clusters, views, strict=True):
            v.state_features = self._cluster_features(c.id, list(c.skill_ids))
        assignments = self.brain.cluster_skills(
            [self._skill_view(s, sources=True) for s in new], views
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
    def _maybe_refine(self, skill: Skill, tr: Transition, reward: float, rec: StepRecord) -> None:
        """Ask for a rewrite of an under-performing skill while the library is small.

        The rewrite goes on probation: it replaces the skill now, and its next
        execution decides — kept if its R_total beats the skill's fitness at
        the time of the rewrite, otherwise the original is restored.
        """
        if (
            skill.id in self._refined
            or skill.id in self._trials
            or reward > self.cfg.invocation.r_good
            or skill.executions < 2
        ):
            return
        if self.mem.stats().library_size >= self.cfg.library.refine_below:
            return
        self._refined.add(skill.id)
        text = self.brain.refine_skill(self._skill_view(skill), tr)
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
            ids = skill.object_ids()
            if ids:
                self.mem.link_skill_objects(skill.id, ids)
        self.mem.update_skill(skill)
        rec.refined.append(skill.id)

    def _judge_trial(self, skill: Skill, reward: float, rec: StepRecord) -> None:
        trial = self._trials.pop(skill.id, None)
        if trial is None or reward > trial.baseline:
            return  # no trial, or the rewrite scored better: keep it
        skill.name, skill.description = trial.name, trial.description
        skill.operations = trial.operations

    def finish(self) -> None:
        """End of run: rewrites still on probation were never shown to be better — restore them."""
        for sid, trial in list(self._trials.items()):
            skill = self.mem.get_skill(sid)
            if skill is not None:
                skill.name, skill.description = trial.name, trial.description
                skill.operations = trial.operations
                self.mem.update_skill(skill)
        self._trials.clear()

    def new_episode(self) -> None:
        """Forget episode-local memory (visited states, screens, stale skills); the SA-KG persists."""
        self._visited.clear()
        self._screens.clear()
        self._screen_order.clear()
        self._screen_count = 0
        self._stale.clear()
        self._prev = None
        self._last = None


def _thumbnail(image: np.ndarray, max_side: int = 96) -> np.ndarray:
    h, w = image.shape[:2]
    s = max_side / max(h, w)
    if s >= 1:
        return image
    return cv2.resize(image, (max(1, int(w * s)), max(1, int(h * s))), interpolation=cv2.INTER_AREA)


def _usage_delta(a: Usage, b: Usage) -> Usage:
    return Usage(
        calls=b.calls - a.calls,
        failed_calls=b.failed_calls - a.failed_calls,
        prompt_tokens=b.prompt_tokens - a.prompt_tokens,
        completion_tokens=b.completion_tokens - a.completion_tokens,
        cost_usd=b.cost_usd - a.cost_usd,
    )
