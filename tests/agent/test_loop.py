"""Algorithm 1's order (SA-KG first, clusters second, augmentation last) and library upkeep."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.agent.episode import Episode
from kgagent.agent.loop import Agent
from kgagent.agent.screen import Screen
from kgagent.brain.base import Judgement
from kgagent.brain.offline import OfflineBrain
from kgagent.runlog import StepRecord

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
    for seg in agent.observer.segmenter.segment(img):
        obj = memory.upsert_object(seg.crop, seg.bbox, seg.phash)
        key = {A: "A", B: "B", T: "T"}[seg.bbox]
        ids[key] = obj.id
    return ids


def _two_states(cfg, memory, encoder, segmenter, toy):
    """An agent, the toy's objects, the toy's state (``here``) and another state (``there``)."""
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    there = memory.merge_or_create_state(np.eye(1, encoder.dim, 3, dtype=np.float32)[0])
    return brain, agent, ids, here, there


def _ghost(memory):
    """A known object that is not on the toy's screen (random noise never grounds there)."""
    from kgagent.perception.segmenters import phash

    crop = np.random.default_rng(5).integers(0, 255, (30, 40, 3), dtype=np.uint8)
    return memory.upsert_object(crop, (100, 40, 40, 30), phash(crop))


def _toggle_in_a_cluster(cfg, memory, encoder, segmenter, toy):
    """An agent whose brain picks a cluster holding one proven skill (click A)."""
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    k = memory.add_skill("toggle", "", [Operation("click", object_id=ids["A"])])
    k.fitness, k.executions = 5.0, 3
    memory.update_skill(k)
    c = memory.add_cluster("panel", "")
    memory.add_to_cluster(k.id, c.id)
    brain.cluster = c.id
    return brain, agent, k


def test_first_step_on_empty_memory_is_augmentation(cfg, memory, encoder, segmenter, toy) -> None:
    brain = StubBrain()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    rec = agent.step(Screen(toy))
    assert rec.path == "augment" and rec.state_created
    assert "choose_cluster" not in brain.calls  # no cluster exists yet
    assert memory.stats().nodes >= 1


def test_hq_candidates_are_invoked_first(cfg, memory, encoder, segmenter, toy) -> None:
    brain, agent, ids, here, there = _two_states(cfg, memory, encoder, segmenter, toy)
    k = memory.add_skill("toggle", "opens the panel", [Operation("click", object_id=ids["A"])])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    rec = agent.step(Screen(toy))
    assert rec.state_id == here.id
    assert rec.executions[0].path == "hq" and rec.executions[0].skill_id == k.id
    assert toy.panel  # it really ran
    assert memory.get_skill(k.id).executions == 1
    # the execution wrote its own skill edge from here, beside the one the test made
    landed = rec.executions[0].to_state
    assert {(e.src, e.dst) for e in memory.skill_edges(k.id)} == {
        (here.id, there.id),
        (here.id, landed),
    }


def test_hq_skill_with_every_object_missing_is_skipped_then_cluster_then_augmentation(
    cfg, memory, encoder, segmenter, toy
) -> None:
    brain, agent, ids, here, there = _two_states(cfg, memory, encoder, segmenter, toy)
    # A skill whose object is not on screen: it cannot be grounded.
    ghost = _ghost(memory)
    k = memory.add_skill("ghost", "", [Operation("click", object_id=ghost.id)])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    c = memory.add_cluster("c", "")
    memory.add_to_cluster(k.id, c.id)
    brain.cluster = c.id
    assert [c.skill_id for c in memory.hq_candidates(here.id)] == [k.id]
    rec = agent.step(Screen(toy))
    paths = [e.path for e in rec.executions]
    # Stage 1 pre-filters like stage 2: the skill cannot be grounded, so it is not tried.
    assert "hq" not in paths
    assert "choose_cluster" in brain.calls  # stage 2 was asked
    # the only skill of the cluster has all its objects missing: filtered out -> explore
    assert paths[-1] == "augment"
    assert memory.get_skill(k.id).executions == 0 and memory.get_skill(k.id).failures == 0


def test_a_skill_whose_first_object_is_missing_is_tried_in_neither_stage(
    cfg, memory, encoder, segmenter, toy
) -> None:
    """Half its objects are on screen, but the first operation's is not: it cannot start."""
    brain, agent, ids, here, there = _two_states(cfg, memory, encoder, segmenter, toy)
    ghost = _ghost(memory)
    ops = [Operation("click", object_id=ghost.id), Operation("click", object_id=ids["A"])]
    k = memory.add_skill("ghost then A", "", ops)
    k.fitness, k.executions = 5.0, 3  # a proven skill: Eq. 6 would favour it
    memory.update_skill(k)
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    c = memory.add_cluster("c", "")
    memory.add_to_cluster(k.id, c.id)
    brain.cluster = c.id
    rec = agent.step(Screen(toy))
    paths = [e.path for e in rec.executions]
    assert "hq" not in paths and "choose_cluster" in brain.calls
    assert paths[-1] == "augment" and rec.explore_prob is not None
    assert memory.get_skill(k.id).executions == 3 and memory.get_skill(k.id).failures == 0
    # The same skill reversed (A first) can start, and stage 1 runs it.
    ab = memory.add_skill("A then ghost", "", list(reversed(ops)))
    memory.upsert_skill_edge(here.id, there.id, ab.id, 0.5, 1.0)
    toy.reset()  # back to the first screen (the augmentation above may have opened the panel)
    rec = agent.step(Screen(toy))
    assert [e.skill_id for e in rec.executions if e.path == "hq"][:1] == [ab.id]


def test_hq_attempt_that_changes_nothing_falls_back_to_stage_2(
    cfg, memory, encoder, segmenter, toy
) -> None:
    brain, agent, ids, here, there = _two_states(cfg, memory, encoder, segmenter, toy)
    # No object to miss, and the key press does nothing in the toy.
    k = memory.add_skill("inert", "", [Operation("key", key="enter")])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    rec = agent.step(Screen(toy))
    paths = [e.path for e in rec.executions]
    assert paths[0] == "hq" and paths[-1] in ("cluster", "augment") and len(paths) >= 2
    assert memory.get_skill(k.id).executions == 1


def test_stage_1_checks_each_draw_against_the_screen_as_it_is_now(tmp_path, cfg, encoder) -> None:
    """An attempt that removes an object but stays in the state: later draws see it gone.

    "delete" removes the chip (a few pixels: same state). A skill that starts on
    the chip, drawn after it, must be skipped, not run on the screen that is gone.
    Eq. 4 draws the order at random; each seed plays one step on a fresh memory.
    """
    from kgagent.memory import EncoderSpec, Memory

    from .toy import CHIP, ChipEnv, ChipSegmenter

    cfg.invocation.r_good = 1e9  # no early stop: every draw of the urn is tried
    seg = ChipSegmenter()
    firsts = set()
    for seed in range(8):
        env = ChipEnv()
        img = env.reset()[0]
        with Memory.open(tmp_path / f"m{seed}", cfg, encoder=EncoderSpec.of(encoder)) as memory:
            chip = next(
                memory.upsert_object(s.crop, s.bbox, s.phash)
                for s in seg.segment(img)
                if s.bbox == CHIP
            )
            here = memory.merge_or_create_state(encoder.encode([img])[0])
            env.chip = False
            # The premise: the chip's removal leaves the screen in its state.
            assert memory.merge_or_create_state(encoder.encode([env.observe()])[0]).id == here.id
            env.chip = True
            there = memory.merge_or_create_state(np.eye(1, encoder.dim, 3, dtype=np.float32)[0])
            delete = memory.add_skill("delete", "", [Operation("key", key="delete")])
            on_chip = memory.add_skill("chip", "", [Operation("click", object_id=chip.id)])
            for k in (delete, on_chip):
                memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
            rec = _agent(cfg, memory, encoder, seg, StubBrain(), seed).step(Screen(env))
        hq = [e.skill_id for e in rec.executions if e.path == "hq"]
        firsts.add({delete.id: "delete", on_chip.id: "chip"}[hq[0]])
        assert not env.chip and delete.id in hq
        if hq[0] == delete.id:
            assert on_chip.id not in hq  # the chip is gone: its skill cannot start
        else:
            assert hq == [on_chip.id, delete.id]  # each ran on a screen that had its object
        assert all(e.actions > 0 for e in rec.executions if e.path == "hq")
    assert firsts == {"delete", "chip"}  # both orders were seen


def test_cluster_invocation_picks_a_skill_when_no_hq(cfg, memory, encoder, segmenter, toy) -> None:
    cfg.invocation.tau_start = cfg.invocation.tau_min = 0.1  # sharp softmax
    brain, agent, k = _toggle_in_a_cluster(cfg, memory, encoder, segmenter, toy)
    rec = agent.step(Screen(toy))
    assert [e.path for e in rec.executions] == ["cluster"]
    assert rec.skill_id == k.id and rec.cluster_id == brain.cluster and toy.panel
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
    rec = StepRecord(step=1, state_id="", path="idle")
    for _ in range(2):
        agent.run_skill(screen, memory.get_skill(k.id), "hq", agent.observer.observe(screen), rec)
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
    rec = agent.step(screen)
    for _ in range(2):
        agent.run_skill(screen, memory.get_skill(k.id), "hq", agent.observer.observe(screen), rec)
    assert memory.get_skill(k.id).status == "suspended" and k.id in rec.skills_suspended
    agent.step(screen)
    agent.step(screen)
    assert memory.get_skill(k.id).status == "active"  # reconsidered after suspend_steps


# ------------------------------------------------------------------ screen novelty
def test_screen_novelty_per_state_and_episode(cfg) -> None:
    """Quarter-resolution grey screens; new iff Δ > screen_novelty_change against every one kept."""
    cfg.rewards.screen_novelty_cap = 2
    ep = Episode(cfg)
    register = ep.screens.register
    base = np.zeros((80, 80, 3), np.uint8)
    assert register("s", base) is True  # first screen of the state
    assert register("s", base.copy()) is False  # the same configuration
    cursor = base.copy()
    cursor[40, 40] = 255  # one pixel: area-averaged to 255/16 < 30 grey levels, Δ = 0
    assert register("s", cursor) is False
    digit = base.copy()
    digit[0:8, 0:8] = 255  # 2×2 of 20×20 reduced pixels: Δ = 0.01 > 0.001
    assert register("s", digit) is True
    assert register("other", base) is True  # per state
    third = base.copy()
    third[40:48, 40:48] = 255
    assert register("s", third) is True  # cap 2: `base` is dropped (FIFO) ...
    assert ep.screens.kept("s") == 2
    assert register("s", digit) is False  # ... `digit` is still known
    assert register("s", base) is True  # ... `base` was forgotten; now `digit` goes
    # the cap over all states: the oldest screen kept, of any state, goes first
    cfg.rewards.screen_novelty_total_cap = 3
    assert register("third-state", base) is True  # 4 kept > 3: `other`'s screen is dropped
    assert ep.screens.total == 3 and ep.screens.kept("other") == 0
    assert register("s", third) is False and register("s", base) is False  # both still kept
    ep.clear()
    assert ep.screens.total == 0 and register("s", base) is True


def test_screen_novelty_threshold_is_config(cfg) -> None:
    cfg.rewards.screen_novelty_change = 0.02  # Δ = 0.01 is now too small
    ep = Episode(cfg)
    base = np.zeros((80, 80, 3), np.uint8)
    digit = base.copy()
    digit[0:8, 0:8] = 255
    assert ep.screens.register("s", base) is True
    assert ep.screens.register("s", digit) is False


def test_transition_carries_screen_novelty(cfg, memory, encoder, segmenter, toy) -> None:
    """A skill that changes a few pixels inside one state: new screen the first time only."""

    class Spy(StubBrain):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[bool, bool]] = []

        def evaluate(self, skill, tr):
            self.seen.append((tr.new_in_episode, tr.new_screen_in_episode))
            return super().evaluate(skill, tr)

    brain = Spy()
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, toy)
    select = memory.add_skill("select", "", [Operation("click", object_id=ids["B"])])
    screen = Screen(toy)
    agent.step(screen)  # registers the first screen(s)
    toy.reset()
    screen.refresh()
    obs = agent.observer.observe(screen)
    brain.seen.clear()
    rec = StepRecord(step=0, state_id=obs.state.id, path="idle")
    agent.run_skill(screen, memory.get_skill(select.id), "hq", obs, rec)
    agent.run_skill(screen, memory.get_skill(select.id), "hq", obs, rec)
    assert brain.seen[0][1] is True  # the highlight: a screen not seen in this episode
    assert brain.seen[1][1] is False  # clicking again changes nothing: the same screen


# ------------------------------------------------------------------ anti-cycling
def test_mark_stale_exact(cfg) -> None:
    cfg.invocation.stale_steps = 3
    ep = Episode(cfg)
    ep.mark_stale("v", "k", Judgement(True, False), 10)
    assert ep.is_stale("v", "k", 10) and not ep.is_stale("w", "k", 10)
    assert not ep.is_stale("v", "other", 10)
    assert ep.is_stale("v", "k", 12)
    assert not ep.is_stale("v", "k", 13)  # 13 − 10 = 3 steps: expired
    ep.mark_stale("v", "k", None, 13)  # could not judge: counts as "no"
    assert ep.is_stale("v", "k", 14)
    ep.mark_stale("v", "k", Judgement(False, True), 14)  # progressive: cleared
    assert not ep.is_stale("v", "k", 14)
    cfg.rewards.use_progress = False  # R_progress off: the judgement drives nothing
    ep.mark_stale("v", "k", Judgement(True, False), 15)
    assert not ep.is_stale("v", "k", 15)
    cfg.rewards.use_progress, cfg.invocation.stale_steps = True, 0  # switched off
    ep.mark_stale("v", "k", Judgement(True, False), 16)
    assert not ep.is_stale("v", "k", 16)


def test_stale_cluster_skill_gives_way_to_exploration(cfg, memory, encoder, segmenter, toy) -> None:
    """The same set-up as test_cluster_invocation_picks_a_skill_when_no_hq, but the skill is stale."""
    cfg.invocation.tau_start = cfg.invocation.tau_min = 0.1
    brain, agent, k = _toggle_in_a_cluster(cfg, memory, encoder, segmenter, toy)
    here = memory.merge_or_create_state(encoder.encode([toy.observe()])[0])
    agent.episode.mark_stale(here.id, k.id, Judgement(True, False), 0)  # not progressive at step 0
    rec = agent.step(Screen(toy))  # step 1: 1 − 0 < stale_steps
    assert rec.state_id == here.id
    assert [e.path for e in rec.executions] == ["augment"]
    assert rec.explore_prob is not None and rec.explore_prob == 1.0


def test_stale_hq_candidate_is_not_sampled(cfg, memory, encoder, segmenter, toy) -> None:
    brain, agent, ids, here, there = _two_states(cfg, memory, encoder, segmenter, toy)
    k = memory.add_skill("toggle", "opens the panel", [Operation("click", object_id=ids["A"])])
    memory.upsert_skill_edge(here.id, there.id, k.id, 0.5, 1.0)
    agent.episode.mark_stale(here.id, k.id, Judgement(True, False), 0)
    rec = agent.step(Screen(toy))
    assert "hq" not in [e.path for e in rec.executions]
    assert rec.path == "augment"  # no candidates, no cluster: augmentation


def _first_skill_after(cfg, memory, encoder, segmenter, env, widget):
    """A proven skill clicks ``widget`` in stage 1; three steps on; the first new skill kept.

    Returns the toy's object ids, the start state and that skill's execution record.
    Only one augmentation candidate is tried a step, so it is the one looked at first.
    """
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1  # only the first candidate is tried
    env.reset()
    brain = StubBrain()  # no cluster fits: stage 2 always falls through to augmentation
    agent = _agent(cfg, memory, encoder, segmenter, brain)
    ids = _objects(agent, memory, env)
    here = memory.merge_or_create_state(encoder.encode([env.observe()])[0])
    there = memory.merge_or_create_state(np.eye(1, encoder.dim, 3, dtype=np.float32)[0])
    first = memory.add_skill(widget, "", [Operation("click", object_id=ids[widget])])
    memory.upsert_skill_edge(here.id, there.id, first.id, 0.5, 1.0)
    screen = Screen(env)
    recs = [agent.step(screen) for _ in range(3)]
    ex = [e for r in recs for e in r.executions]
    assert ex[0].path == "hq" and ex[0].skill_id == first.id  # the proven skill ran first
    kept = [e for e in ex if "new skill" in e.note]
    assert kept and env.fired >= 1  # (the new skill may run again in a later step)
    return ids, here, kept[0]


def test_a_follow_up_where_the_last_skill_made_the_program_react_extends_that_skill(
    cfg, memory, encoder, segmenter
) -> None:
    """Select B (a proven skill), then T, framed by the selection, is tried and kept as B + T."""
    from .toy import FramedEnv

    ids, here, first = _first_skill_after(cfg, memory, encoder, segmenter, FramedEnv(), "B")
    assert "k=2" in first.note
    assert [op["object_id"] for op in first.operations] == [ids["B"], ids["T"]]
    assert first.from_state == here.id  # the follow-up runs from where the selection started
    assert len(memory.get_skill(first.skill_id).operations) == 2


def test_a_follow_up_of_a_command_is_a_skill_of_its_own(cfg, memory, encoder, segmenter) -> None:
    """A frames T but does not change itself (a command, not a selection): T is kept alone.

    The same screens as the follow-up test above, except for where the program
    reacted: away from the element the skill acted on. Re-running "A, then T"
    would repeat the command each time (as "End turn, then a card" would).
    """
    from .toy import ArmEnv

    ids, _here, first = _first_skill_after(cfg, memory, encoder, segmenter, ArmEnv(), "A")
    assert "k=1" in first.note  # looked at first (it is where the program reacted) ...
    assert [op["object_id"] for op in first.operations] == [ids["T"]]  # ... but not glued to A


def test_without_a_previous_skill_the_framed_target_alone_is_kept(
    cfg, memory, encoder, segmenter
) -> None:
    """The control: the same screens, but B was selected by no skill, so T is a k = 1 skill."""
    from kgagent.actions import Action

    from .toy import FramedEnv

    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1
    env = FramedEnv()
    env.reset()
    agent = _agent(cfg, memory, encoder, segmenter, StubBrain())
    ids = _objects(agent, memory, env)
    screen = Screen(env)
    screen.observe()
    screen.act(Action(kind="click", x=B[0] + 5, y=B[1] + 5))  # not the agent's skill
    rec = agent.step(screen)
    assert rec.path == "augment" and env.fired == 1
    assert [op["object_id"] for op in rec.operations] == [ids["T"]]


class _BarSegmenter:
    """The toy's widgets, plus the "fired" bar once it shows; counts its calls."""

    identity = "toy-bar"

    def __init__(self) -> None:
        self.calls = 0

    def segment(self, image):
        from kgagent.perception.base import Segment
        from kgagent.perception.segmenters import phash

        from .toy import ToySegmenter

        self.calls += 1
        out = ToySegmenter().segment(image)
        if image[15, 15, 0] == 220:  # the bar's first 20 px are red
            crop = image[10:30, 10:30].copy()
            out.append(Segment((10, 10, 20, 20), crop, phash(crop)))
        return out


def test_a_changed_screen_of_a_known_state_is_segmented_again(cfg, memory, encoder, toy) -> None:
    seg = _BarSegmenter()
    agent = _agent(cfg, memory, encoder, seg, StubBrain())
    s = memory.merge_or_create_state(encoder.encode([toy.observe()])[0]).id
    first = agent.observer.objects_for(s, toy.observe(), True)
    assert seg.calls == 1 and len(first) == 3
    assert agent.observer.objects_for(s, toy.observe(), False) == first  # the same screen again
    assert seg.calls == 1
    toy.fired = 1  # the bar appears: Δ = 400 px / 38,400 = 1 % > augment.min_change
    now = agent.observer.objects_for(s, toy.observe(), False)
    assert seg.calls == 2 and len(now) == 4
    assert {o.id for o in first} < {o.id for o in now}  # the same widgets are the same objects
    assert {o.id for o in memory.state_objects(s)} == {o.id for o in now}  # linked to the state


def test_without_resegment_a_state_keeps_its_first_objects(cfg, memory, encoder, toy) -> None:
    cfg.perception.resegment = False
    seg = _BarSegmenter()
    agent = _agent(cfg, memory, encoder, seg, StubBrain())
    s = memory.merge_or_create_state(encoder.encode([toy.observe()])[0]).id
    first = agent.observer.objects_for(s, toy.observe(), True)
    toy.fired = 1
    assert agent.observer.objects_for(s, toy.observe(), False) == first and seg.calls == 1
    # a new agent (a new run) loads the state's objects from memory instead of segmenting
    again = _agent(cfg, memory, encoder, seg, StubBrain())
    assert {o.id for o in again.observer.objects_for(s, toy.observe(), False)} == {
        o.id for o in first
    }
    assert seg.calls == 1
