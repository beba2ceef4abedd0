"""The card battler: determinism, two-step attacks, rewards, dead ends, death."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgagent.actions import KINDS, Action
from kgagent.envs.cardgame import CardGame


def centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    x, y, w, h = box
    return x + w // 2, y + h // 2


def click(env: CardGame, box: tuple[int, int, int, int]):
    x, y = centre(box)
    return env.step(Action("click", x=x, y=y))


def element(env: CardGame, prefix: str):
    for name, box in env.clickable_elements():
        if name.startswith(prefix):
            return name, box
    return None


def enter_fight(env: CardGame) -> None:
    click(env, element(env, "node:fight")[1])
    assert env._info()["screen"] == "fight"


def test_same_seed_same_frames_and_different_seed_differs() -> None:
    a, b = CardGame(7), CardGame(7)
    rng = random.Random(0)
    assert np.array_equal(a.observe(), b.observe())
    for _ in range(120):
        els = a.clickable_elements()
        assert els == b.clickable_elements()
        if not els:
            break
        x, y = centre(rng.choice(els)[1])
        oa = a.step(Action("click", x=x, y=y))
        ob = b.step(Action("click", x=x, y=y))
        assert np.array_equal(oa[0], ob[0]) and oa[1:] == ob[1:]
    c = CardGame(8)
    enter_fight(a := CardGame(7))
    enter_fight(c)
    assert not np.array_equal(a.observe(), c.observe())


def test_attack_takes_two_clicks() -> None:
    env = CardGame(1)
    enter_fight(env)
    card = element(env, "card:Strike") or element(env, "card:Bash")
    assert card is not None
    hp0 = [e.hp for e in env._s.enemies]
    energy0 = env._s.energy
    obs0 = env.observe()
    obs1 = click(env, card[1])[0]
    assert not np.array_equal(obs0, obs1)  # the card is raised
    assert [e.hp for e in env._s.enemies] == hp0 and env._s.energy == energy0
    target = element(env, "enemy:")
    assert target is not None
    click(env, target[1])
    assert sum(e.hp for e in env._s.enemies) < sum(hp0)
    assert env._s.energy < energy0


def test_skill_is_one_click_and_blank_clicks_do_nothing() -> None:
    env = CardGame(1)
    enter_fight(env)
    obs = env.observe()
    for x, y in ((640, 80), (20, 300), (1200, 440)):
        assert np.array_equal(env.step(Action("click", x=x, y=y))[0], obs)
    samples = [
        Action("click", x=640, y=90),
        Action("double_click", x=640, y=90),
        Action("right_click", x=640, y=90),
        Action("drag", x=640, y=90, x2=650, y2=95),
        Action("scroll", x=640, y=90, scroll=1),
        Action("key", key="f5"),
        Action("hotkey", key="ctrl+s"),
        Action("type", text="zz"),
    ]
    assert {a.kind for a in samples} == set(KINDS)  # every Action kind is accepted
    for a in samples:
        assert np.array_equal(env.step(a)[0], obs)
    defend = element(env, "card:Defend")
    if defend is not None:
        click(env, defend[1])
        assert env._s.block == 5


def win_fight(env: CardGame, limit: int = 400) -> None:
    for _ in range(limit):
        if env._info()["screen"] != "fight":
            return
        if env._s.selected is not None and element(env, "enemy:"):
            click(env, element(env, "enemy:")[1])
            continue
        card = element(env, "card:")
        if card:
            click(env, card[1])
        else:
            click(env, element(env, "end_turn")[1])
    raise AssertionError("fight did not end")


def test_reward_screen_after_a_won_fight() -> None:
    env = CardGame(2)
    enter_fight(env)
    win_fight(env)
    info = env._info()
    assert info["screen"] == "reward" and info["floors_cleared"] == 1 and info["kills"] >= 1
    assert env.ground_truth().progression == 1 and env.ground_truth().score > 0
    rewards = [n for n, _ in env.clickable_elements() if n.startswith("reward:")]
    assert len(rewards) == 3
    click(env, element(env, "reward:")[1])
    assert env._info()["deck_size"] == 11 and env._info()["screen"] == "map"
    assert element(env, "node:") is not None


def test_overlay_is_a_dead_end() -> None:
    env = CardGame(3)
    enter_fight(env)
    obs = env.observe()
    over = click(env, element(env, "draw_pile")[1])[0]
    assert (np.abs(over.astype(int) - obs.astype(int)).max(axis=2) > 30).mean() > 0.3
    assert [n for n, _ in env.clickable_elements()] == ["close"]
    back = click(env, element(env, "close")[1])[0]
    assert np.array_equal(back, obs)


def test_end_turn_is_a_small_change() -> None:
    env = CardGame(4)
    enter_fight(env)
    obs = env.observe()
    new = click(env, element(env, "end_turn")[1])[0]
    assert env._s.turn == 2
    frac = (np.abs(new.astype(int) - obs.astype(int)).max(axis=2) > 30).mean()
    assert 0 < frac < 0.25


def test_death_terminates() -> None:
    env = CardGame(5)
    enter_fight(env)
    for _ in range(500):
        _obs, _r, term, trunc, info = click(env, (1048, 530, 220, 72))
        if term:
            break
    assert term and not trunc and info["screen"] == "gameover" and not info["alive"]
    assert env.ground_truth().alive is False
    frozen = env.observe()
    out = env.step(Action("click", x=640, y=360))
    assert out[2] is True and np.array_equal(out[0], frozen)
    assert env.clickable_elements() == []


@pytest.mark.parametrize("seed", [0, 11])
def test_reset_restores_the_first_screen(seed: int) -> None:
    env = CardGame(seed)
    first = env.observe()
    enter_fight(env)
    obs, info = env.reset(seed)
    assert np.array_equal(obs, first) and info["floor"] == 0
