"""The civilization game: blocked Next turn, delayed payoff, scrolling, threats."""

from __future__ import annotations

import random

import numpy as np

from kgagent.actions import Action
from kgagent.envs.civgame import CivGame


def click(env: CivGame, box: tuple[int, int, int, int]):
    x, y, w, h = box
    return env.step(Action("click", x=x + w // 2, y=y + h // 2))


def el(env: CivGame, name: str):
    for n, box in env.clickable_elements():
        if n == name or n.startswith(name):
            return box
    return None


def dismiss(env: CivGame) -> None:
    while el(env, "popup_continue"):
        click(env, el(env, "popup_continue"))


def play(env: CivGame, builds: list[str], turns: int) -> None:
    """A scripted player: dismiss popups, build by preference, research first available."""
    for _ in range(turns * 8):
        if not env._s.alive or env._s.turn > turns:
            return
        if el(env, "popup_continue"):
            click(env, el(env, "popup_continue"))
        elif env._s.screen == "production":
            names = [
                n.split(":", 1)[1] for n, _ in env.clickable_elements() if n.startswith("build:")
            ]
            pick = next((b for b in builds if b in names), names[0])
            click(env, el(env, f"build:{pick}"))
        elif env._s.screen == "tech":
            click(env, el(env, "tech:"))
        else:
            click(env, el(env, "next_turn"))


def test_next_turn_is_blocked_until_decisions_are_made() -> None:
    env = CivGame(0)
    obs = env.observe()
    # the welcome popup blocks everything, even Next turn
    assert np.array_equal(click(env, (984, 630, 284, 76))[0], obs)
    dismiss(env)
    click(env, el(env, "next_turn"))
    assert env._s.turn == 1 and env._s.screen == "production"
    click(env, el(env, "build:Monument"))
    assert env._s.production == "Monument" and env._s.screen == "map"
    click(env, el(env, "next_turn"))
    assert env._s.turn == 1 and env._s.screen == "tech"
    click(env, el(env, "tech:Pottery"))
    assert env._s.research == "Pottery"
    before = env.observe()
    after = click(env, el(env, "next_turn"))[0]
    assert env._s.turn == 2 and env.ground_truth().progression == 1
    frac = (np.abs(after.astype(int) - before.astype(int)).max(axis=2) > 30).mean()
    assert 0 < frac < 0.1  # a valuable action with a small visual change


def test_delayed_payoff_of_a_building() -> None:
    env = CivGame(1)
    dismiss(env)
    click(env, el(env, "note_production"))
    click(env, el(env, "build:Monument"))
    click(env, el(env, "note_research"))
    click(env, el(env, "tech:Mining"))
    culture = [env.yields()["culture"]]
    for _ in range(20):
        dismiss(env)
        if env._s.screen == "tech" or env._s.research is None:
            env._s.screen = "map"
            click(env, el(env, "research"))
            click(env, el(env, "tech:"))
        if env._s.production is None:
            break
        click(env, el(env, "next_turn"))
        culture.append(env.yields()["culture"])
    assert "Monument" in env._s.built
    assert culture[0] == culture[1] == culture[2]  # nothing yet while it is being built
    assert culture[-1] > culture[0]


def test_scrolled_map_looks_different_but_works_the_same() -> None:
    env = CivGame(2)
    dismiss(env)
    obs = env.observe()
    names = {n for n, _ in env.clickable_elements()} - {"city"}
    moved = env.step(Action("key", key="right"))[0]
    assert not np.array_equal(obs, moved)
    assert names <= {n for n, _ in env.clickable_elements()}
    dragged = env.step(Action("drag", x=600, y=400, x2=500, y2=300))[0]
    assert not np.array_equal(moved, dragged)
    assert env._s.turn == 1 and env._info()["view"] != (0, 0)
    # scrolling back restores the exact frame
    env.step(Action("drag", x=500, y=300, x2=600, y2=400))
    back = env.step(Action("key", key="left"))[0]
    assert np.array_equal(back, obs)


def test_dead_end_panels_change_the_screen_but_not_the_game() -> None:
    env = CivGame(3)
    dismiss(env)
    obs = env.observe()
    info = env._info()
    panel = click(env, el(env, "diplomacy"))[0]
    assert (np.abs(panel.astype(int) - obs.astype(int)).max(axis=2) > 30).mean() > 0.3
    back = click(env, el(env, "close"))[0]
    assert np.array_equal(back, obs) and env._info()["turn"] == info["turn"]
    # a click on plain terrain does nothing
    assert np.array_equal(env.step(Action("click", x=900, y=200))[0], obs)


def test_barbarians_defeat_a_passive_player_but_not_a_defended_one() -> None:
    passive = CivGame(4)
    play(passive, ["Monument", "Shrine", "Granary", "Library", "Market"], 120)
    assert not passive._s.alive and passive._s.screen == "defeat"
    obs, _r, term, _t, info = passive.step(Action("click", x=640, y=360))
    assert term and not info["alive"] and passive.ground_truth().alive is False
    defended = CivGame(4)
    play(defended, ["Warrior", "Walls", "Archer"], passive._s.turn + 10)
    assert defended._s.alive and defended._s.turn > passive._s.turn
    assert defended.ground_truth().score >= 1


def test_same_seed_same_frames() -> None:
    a, b = CivGame(9), CivGame(9)
    rng = random.Random(3)
    for _ in range(150):
        els = a.clickable_elements()
        assert els == b.clickable_elements()
        x, y, w, h = rng.choice(els)[1]
        act = (
            Action("click", x=x + w // 2, y=y + h // 2)
            if rng.random() < 0.9
            else Action("key", key="up")
        )
        ra, rb = a.step(act), b.step(act)
        assert np.array_equal(ra[0], rb[0]) and ra[1:] == rb[1:]
    assert not np.array_equal(CivGame(9).observe(), CivGame(10).observe())
