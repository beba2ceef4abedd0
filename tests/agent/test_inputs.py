"""The keyboard as part of the action space, and the program-wide input statistics."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.agent.augment import rank_candidates
from kgagent.agent.inputs import HOTKEYS, KEY_GROUPS, Count, InputStats, input_levels, keyboard
from kgagent.agent.runner import Runner
from kgagent.brain.offline import OfflineBrain
from kgagent.envs.keyguard import closing_reason
from kgagent.errors import ActionRefused
from kgagent.memory import Memory
from kgagent.perception.encoders import PixelEncoder
from kgagent.runlog_read import read_log

from .toy import KeysEnv, ToyEnv, ToySegmenter


def test_the_vocabulary_is_a_keyboard_and_closes_nothing() -> None:
    ops = keyboard(KEY_GROUPS, True, ("hello",))
    keys = {op.key for op in ops if op.kind == "key"}
    assert set("abcxyz0189") <= keys and {"up", "f5", "enter", "pagedown", "/"} <= keys
    assert len(ops) == len({(op.kind, op.key, op.text) for op in ops})  # no duplicates
    assert Operation("type", text="hello") in ops
    for op in ops:
        if op.kind == "key":
            assert closing_reason((op.key or "").split("+")) is None, op
    # copy is the one combination a desktop refuses (it quits xcalc, interrupts a terminal)
    assert [h for h in HOTKEYS if closing_reason(h.split("+"))] == ["ctrl+c"]


def test_levels_pool_inputs_by_group_and_device() -> None:
    assert [k for k, _ in input_levels(Operation("key", key="q"))] == [
        "key:q",
        "group:letters",
        "keyboard",
    ]
    click = Operation("click", object_id="o-1")
    assert [k for k, _ in input_levels(click)] == ["object:o-1:click", "objects:click", "pointer"]
    up = Operation("scroll", object_id="o-1", scroll=3)
    assert input_levels(up)[0][0] == "object:o-1:scroll+"
    assert [k for k, _ in input_levels(Operation("click", point=(5, 5)))] == [
        "background:click",
        "pointer",
    ]


def test_dead_letters_make_untried_letters_unlikely_but_not_arrows() -> None:
    stats = InputStats()
    for k in "abcdefghijklmnopqrst":
        for _ in range(3):
            stats.record(Operation("key", key=k), False)
    stats.record(Operation("key", key="up"), True)
    untried_letter = stats.response(Operation("key", key="z"))
    untried_arrow = stats.response(Operation("key", key="down"))
    assert untried_letter < 0.05 < untried_arrow
    assert stats.response(Operation("key", key="up")) > untried_arrow


def test_an_input_that_quits_the_program_is_not_ranked_again() -> None:
    stats, rng = InputStats(), np.random.default_rng(0)
    esc, move = Operation("key", key="escape"), Operation("key", key="w")
    stats.record_end(esc)  # ended the program the one time it was tried
    for _ in range(9):
        stats.record(move, True)
    stats.record_end(move)  # ended it once in ten: it only happened to precede an end
    assert stats.ends_program(esc) and not stats.ends_program(move)
    assert rank_candidates([], [esc, move], {}, stats, rng) == [move]


def test_a_key_the_environment_refuses_is_tried_once_a_run(cfg, tmp_path) -> None:
    """A closing key refused by the desktop is not drawn again every step for nothing."""

    class Guarded(KeysEnv):
        refusals = 0

        def step(self, action):
            if action.kind == "hotkey" and action.key == "ctrl+c":
                Guarded.refusals += 1
                raise ActionRefused("hotkey 'ctrl+c' is refused")
            return super().step(action)

    _play(cfg, tmp_path / "m", Guarded(), 60)
    assert Guarded.refusals == 1


def test_ranking_puts_the_answering_device_first_and_keeps_focus_first_within_it() -> None:
    stats = InputStats()
    for _ in range(50):
        stats.record(Operation("click", object_id="o-1"), False)
        stats.record(Operation("key", key="w"), True)
    near = [Operation("click", object_id="o-2")]
    rest = [Operation("click", object_id="o-3"), Operation("key", key="w")]
    order = rank_candidates(near, rest, {}, stats, np.random.default_rng(1))
    assert order[0] == Operation("key", key="w")  # the keyboard answers, the pointer does not
    assert order[1:] == [near[0], rest[0]]  # among clicks, where the program reacted first


def test_counts_persist_in_memory(tmp_path, cfg, encoder) -> None:
    from kgagent.memory import EncoderSpec

    with Memory.open(tmp_path / "m", cfg, encoder=EncoderSpec.of(encoder)) as m:
        stats = InputStats()
        stats.record(Operation("key", key="k"), True)
        m.add_input_counts(
            {k: (c.kind, c.tried, c.changed) for k, c in stats.take_changes().items()}
        )
    with Memory.open(tmp_path / "m", cfg, encoder=EncoderSpec.of(encoder)) as m:
        again = InputStats({k: Count(*v) for k, v in m.input_counts().items()})
    assert again.counts["key:k"].changed == 1 and again.counts["keyboard"].tried == 1


def _play(cfg, path, env, steps, ablation="full", seed=0):
    cfg.run.ablation, cfg.run.seed = ablation, seed
    return Runner(
        cfg,
        memory_path=path,
        env=env,
        encoder=PixelEncoder(),
        segmenter=ToySegmenter(),
        brain=OfflineBrain(),
        progress=False,
        log=lambda m: None,
    ).run(steps)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_keyboard_only_program_its_keys_are_found_and_the_fire_is_reached_by_stored_skills(
    cfg, tmp_path, seed
) -> None:
    env = KeysEnv()
    s = _play(cfg, tmp_path / "m", env, 150, seed=seed)
    with Memory.open(tmp_path / "m", cfg, read_only=True) as m:
        counts = m.input_counts()
        skills = m.skills()
    answered = {k for k, (_kind, _t, changed) in counts.items() if k.startswith("key:") and changed}
    assert answered == {"key:j", "key:k", "key:l"}  # exactly the keys that do something
    keys = [[op.key for op in k.operations] for k in skills if k.status != "pruned"]
    # arm, then fire, with stored skills: in one skill ("k" then "l"), or across two (one
    # ends armed, the next starts by firing). "k" alone is often suspended: it fails when
    # already armed, so the pair comes with a lamp toggle around it.
    within = any("l" in ks[ks.index("k") + 1 :] for ks in keys if "k" in ks)
    across = any(ks[-1] == "k" for ks in keys) and any(ks[0] == "l" for ks in keys)
    assert within or across, keys
    assert s.progression >= 20  # and it is used (seeds 0-3: 42-52 fires in 150 steps)


def test_on_a_mouse_only_program_keys_do_not_starve_clicks(cfg, tmp_path) -> None:
    """The toy with buttons: the full keyboard is there, yet clicks carry the run."""
    s = _play(cfg, tmp_path / "m", ToyEnv(), 80)
    _, steps, _ = read_log(s.log_path)
    tried = [e["note"] for r in steps for e in r["executions"] if e["path"] == "augment"]
    keys = sum(n.count("key ") + n.count("hotkey ") + n.count("type ") for n in tried)
    clicks = sum(n.count("click ") for n in tried)
    assert clicks > keys
    assert s.progression >= 10  # it still learns to fire (select B, then T)
