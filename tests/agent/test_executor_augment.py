"""Execution by grounding (never a blind click) and the augmentation stopping rules."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.agent.augment import augment, op_key
from kgagent.agent.executor import execute
from kgagent.agent.screen import Screen
from kgagent.agent.state_stats import StateStats
from kgagent.memory import Skill
from kgagent.perception.segmenters import phash

from .toy import TEX, A, B, FramedEnv, KnownObjects, T, ToyEnv, observation


def _objects(memory):
    objs = {}
    for key, box in (("A", A), ("B", B), ("T", T)):
        objs[key] = memory.upsert_object(TEX[key], box, phash(TEX[key]), name=f"btn{key}")
    return objs


def test_execute_grounds_object_and_clicks_its_centre(memory, cfg, toy) -> None:
    objs = _objects(memory)
    screen = Screen(toy)
    ex = execute(
        [Operation("click", object_id=objs["B"].id)], screen, KnownObjects(memory, []), cfg
    )
    assert ex.ok and toy.selected
    a = ex.ops[0].action
    assert (a.x, a.y) == (B[0] + B[2] // 2, B[1] + B[3] // 2)
    assert ex.ops[0].grounding[0].found and ex.change > 0


def test_grounding_failure_aborts_without_clicking(memory, cfg, toy) -> None:
    rng = np.random.default_rng(9)
    ghost = memory.upsert_object(
        ghost_crop := rng.integers(0, 255, (30, 40, 3), dtype=np.uint8),
        (60, 40, 40, 30),
        phash(ghost_crop),
    )
    objs = _objects(memory)
    screen = Screen(toy)
    ops = [Operation("click", object_id=ghost.id), Operation("click", object_id=objs["A"].id)]
    ex = execute(ops, screen, KnownObjects(memory, []), cfg)
    assert not ex.ok and ex.grounding_failed and "not found" in ex.error
    assert toy.steps == 0  # nothing reached the program, not even the second op
    assert ex.actions == 0 and ex.ops[0].action is None


def test_two_step_skill_and_keys(memory, cfg, toy) -> None:
    objs = _objects(memory)
    screen = Screen(toy)
    ops = [
        Operation("click", object_id=objs["B"].id),
        Operation("click", object_id=objs["T"].id),
        Operation("key", key="enter"),
    ]
    ex = execute(ops, screen, KnownObjects(memory, []), cfg)
    assert ex.ok and toy.fired == 1 and ex.actions == 3
    assert ex.ops[2].change == 0.0  # the key did nothing


class DeadEnv(ToyEnv):
    def step(self, action):
        self.steps += 1
        return self.observe(), 0.0, False, False, {}


def _run_augment(memory, cfg, env, objs, stats, library=(), seed=0):
    screen = Screen(env)
    known = KnownObjects(memory, objs.values())
    obs = observation(screen.observe(), objs.values())
    return augment(screen, obs, known, stats, list(library), cfg, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", range(6))
def test_augment_stops_at_first_effect_and_keeps_no_dead_operation(memory, cfg, seed) -> None:
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 50  # budget is not what stops it
    env = ToyEnv()
    env.reset()
    objs = _objects(memory)
    stats = StateStats()
    res = _run_augment(memory, cfg, env, objs, stats, seed=seed)
    assert res.found and res.k == 1 and res.prefix is None
    changes = [c for _, c in res.tried]
    assert changes[-1] >= cfg.augment.min_change  # the kept operation had an effect
    assert all(c < cfg.augment.min_change for c in changes[:-1])  # every earlier one did not
    assert len(res.operations) == 1  # the no-change operations were not kept
    assert env.steps == len(res.tried)  # nothing was tried after the first effect
    assert len(stats.tried("")) == len(res.tried)


def test_augment_does_not_repeat_dead_operations(memory, cfg) -> None:
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 4
    env = DeadEnv()  # nothing responds to anything
    env.reset()
    objs = _objects(memory)
    stats = StateStats()
    first = _run_augment(memory, cfg, env, objs, stats, seed=1)
    second = _run_augment(memory, cfg, env, objs, stats, seed=1)
    assert not first.found and not second.found
    assert len(first.tried) == len(second.tried) == 4
    assert not {d for d, _ in first.tried} & {d for d, _ in second.tried}
    assert len(stats.tried("")) == 8


def test_augment_grows_k_from_a_validated_prefix(memory, cfg) -> None:
    cfg.augment.rare_action_prob = 0.0
    env = ToyEnv()
    env.reset()
    objs = _objects(memory)
    select_b = Operation("click", object_id=objs["B"].id)
    prefix = Skill("k-b", "select B", "", [select_b], fitness=1.0, executions=1)
    stats = StateStats()
    # Every single action from this state has been tried already: k must grow.
    from kgagent.agent.augment import object_actions, residual_actions

    rng = np.random.default_rng(0)
    for op in object_actions(list(objs.values()), rng, 0.0) + residual_actions(
        (240, 160), list(objs.values()), cfg, rng
    ):
        stats.mark_tried("", op_key(op), 0.0)
    res = _run_augment(memory, cfg, env, objs, stats, library=[prefix], seed=3)
    assert res.k == 2 and res.prefix is prefix and res.prefix_executed
    assert res.found and res.operations[0] == select_b and len(res.operations) == 2
    assert stats.tried(prefix.id)  # extensions are remembered per prefix


def _all_singles_tried(objs, cfg, stats) -> None:
    from kgagent.agent.augment import object_actions, residual_actions

    rng = np.random.default_rng(0)
    for op in object_actions(list(objs.values()), rng, 0.0) + residual_actions(
        (240, 160), list(objs.values()), cfg, rng
    ):
        stats.mark_tried("", op_key(op), 0.0)


def test_reaction_focus_drops_where_the_agent_acted_and_whole_screens(cfg) -> None:
    from kgagent.agent.augment import reaction_focus

    env = FramedEnv()
    before = env.reset()[0]
    env.selected = True
    after = env.observe()
    b_centre = (B[0] + B[2] // 2, B[1] + B[3] // 2)
    focus = reaction_focus(before, after, [b_centre], cfg)
    t_centre = (T[0] + T[2] // 2, T[1] + T[3] // 2)
    assert focus and all(
        not (x <= b_centre[0] < x + w and y <= b_centre[1] < y + h) for x, y, w, h in focus
    )
    assert any(x <= t_centre[0] < x + w and y <= t_centre[1] < y + h for x, y, w, h in focus)
    env.panel = True  # a panel over most of the screen: no particular place
    assert reaction_focus(before, env.observe(), [b_centre], cfg) == []
    cfg.augment.focus_max_area = 0.0  # switched off
    assert reaction_focus(before, after, [b_centre], cfg) == []


def test_a_selection_marks_its_element_and_a_command_does_not(cfg) -> None:
    from kgagent.agent.augment import read_reaction

    from .toy import ArmEnv

    def marks_selection(before, after, acted, cfg):
        return read_reaction(before, after, acted, cfg)[1]

    b_centre = (B[0] + B[2] // 2, B[1] + B[3] // 2)
    a_centre = (A[0] + A[2] // 2, A[1] + A[3] // 2)
    env = FramedEnv()
    before = env.reset()[0]
    env.selected = True  # a ring around B, a frame around T
    assert marks_selection(before, env.observe(), [b_centre], cfg)
    assert not marks_selection(before, env.observe(), [a_centre], cfg)  # A did not change
    assert not marks_selection(before, env.observe(), [], cfg)  # a key press: no point
    arm = ArmEnv()
    before = arm.reset()[0]
    arm.armed = True  # T framed, A (the command) unchanged
    assert not marks_selection(before, arm.observe(), [a_centre], cfg)
    assert not marks_selection(before, before, [b_centre], cfg)  # nothing changed
    env.selected = False
    before = env.observe()
    env.selected = True
    cfg.augment.focus_max_area = 0.0  # focus switched off: no follow-up either
    assert read_reaction(before, env.observe(), [b_centre], cfg) == ([], False)


@pytest.mark.parametrize("seed", range(4))
def test_after_a_prefix_the_place_that_reacted_is_tried_first(memory, cfg, seed) -> None:
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1  # one try: it must be the target
    env = FramedEnv()
    env.reset()
    objs = _objects(memory)
    prefix = Skill("k-b", "select B", "", [Operation("click", object_id=objs["B"].id)])
    stats = StateStats()
    _all_singles_tried(objs, cfg, stats)
    res = _run_augment(memory, cfg, env, objs, stats, library=[prefix], seed=seed)
    assert res.k == 2 and res.found and env.fired == 1
    assert res.operations[1] == Operation("click", object_id=objs["T"].id, object_name="btnT")


def test_without_focus_one_try_after_the_prefix_usually_misses(memory, cfg) -> None:
    """The control for the test above: the order alone does not put the target first."""
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1
    cfg.augment.focus_max_area = 0.0
    objs = _objects(memory)
    prefix = Skill("k-b", "select B", "", [Operation("click", object_id=objs["B"].id)])
    found = []
    for seed in range(4):
        env = FramedEnv()
        env.reset()
        stats = StateStats()
        _all_singles_tried(objs, cfg, stats)
        found.append(_run_augment(memory, cfg, env, objs, stats, library=[prefix], seed=seed).found)
    assert not all(found)


def test_k1_follows_the_last_reaction_even_past_a_dead_try(memory, cfg) -> None:
    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1
    env = FramedEnv()
    env.reset()
    objs = _objects(memory)
    stats = StateStats()
    click_t = Operation("click", object_id=objs["T"].id, object_name="btnT")
    stats.mark_tried("", op_key(click_t), 0.0)  # T did nothing when nothing was selected
    screen = Screen(env)
    screen.observe()
    b = (B[0] + B[2] // 2, B[1] + B[3] // 2)
    from kgagent.actions import Action

    screen.act(Action(kind="click", x=b[0], y=b[1]))  # the agent selected B last step
    assert screen.last_reaction is not None
    known = KnownObjects(memory, objs.values())
    obs = observation(screen.observe(), objs.values())
    res = augment(screen, obs, known, stats, [], cfg, np.random.default_rng(0))
    assert res.found and res.k == 1 and res.operations == [click_t] and env.fired == 1


@pytest.mark.parametrize("ahead", [True, False])
def test_a_click_reaction_orders_the_clicks_and_the_keys_take_their_turn(
    memory, cfg, ahead
) -> None:
    """After a click the program answered, the places where it reacted come first among
    clicks. With ``focus_ahead_of_keys`` they also come before every key; off, a program
    that answers keys and not clicks gets a key first (one misread click reaction on a
    keyboard-driven program would otherwise hold every try on the pointer)."""
    from kgagent.actions import Action
    from kgagent.agent.inputs import InputStats

    cfg.augment.rare_action_prob = 0.0
    cfg.augment.candidates_per_length = 1
    cfg.augment.focus_ahead_of_keys = ahead
    env = FramedEnv()
    env.reset()
    objs = _objects(memory)
    inputs = InputStats()
    for _ in range(50):  # so far the program answered keys, never clicks
        inputs.record(Operation("key", key="w"), True)
        inputs.record(Operation("click", object_id="o-x"), False)
    screen = Screen(env)
    screen.observe()
    b = (B[0] + B[2] // 2, B[1] + B[3] // 2)
    screen.act(Action(kind="click", x=b[0], y=b[1]))  # a reaction: T framed
    known = KnownObjects(memory, objs.values())
    obs = observation(screen.observe(), objs.values())
    res = augment(
        screen, obs, known, StateStats(), [], cfg, np.random.default_rng(0), inputs=inputs
    )
    ((first, _),) = res.tried
    if ahead:
        assert first.startswith("click") and "btnT" in first
    else:
        assert first.startswith(("key", "hotkey", "type")), first


def test_screen_remembers_the_last_action_that_changed_it(toy) -> None:
    from kgagent.actions import Action

    screen = Screen(toy)
    first = screen.observe()
    assert screen.last_reaction is None
    screen.act(Action(kind="click", x=5, y=5))  # nothing there: no reaction
    assert screen.last_reaction is None
    click_a = Action(kind="click", x=A[0] + 5, y=A[1] + 5)
    screen.act(click_a)
    before, action = screen.last_reaction
    assert action == click_a and np.array_equal(before, first)
    screen.act(Action(kind="key", key="enter"))  # changes nothing: the reaction stays
    assert screen.last_reaction[1] == click_a


def test_a_screens_change_floor_keeps_small_changes_from_counting_as_a_reaction(toy) -> None:
    from kgagent.actions import Action

    screen = Screen(toy, change_floor=0.01)  # e.g. a live window's measured noise
    screen.observe()
    screen.act(Action(kind="click", x=B[0] + 5, y=B[1] + 5))  # a 0.3 % highlight
    assert screen.last_reaction is None
    screen.act(Action(kind="click", x=A[0] + 5, y=A[1] + 5))  # the panel: 50 %
    assert screen.last_reaction is not None


def test_augmentation_drags_name_both_objects() -> None:
    from kgagent.agent.augment import object_actions
    from kgagent.records import UIObject

    objects = [
        UIObject(f"o-{i}", f'"L{i}"', (10 * i, 0, 8, 8), 0, "", False, f"L{i}") for i in range(6)
    ]
    ops = object_actions(objects, np.random.default_rng(0), rare_prob=1.0)
    drags = [op for op in ops if op.kind == "drag"]
    assert drags
    names = {o.id: o.name for o in objects}
    for op in drags:
        assert op.object_name == names[op.object_id]
        assert op.object_name2 == names[op.object_id2]
