"""The gym:ID adapter: Crafter and the ALE as pixel programs driven by their own key maps."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgagent.actions import Action
from kgagent.errors import ActionRefused, EnvironmentError_

crafter = pytest.importorskip("crafter", reason="the games extra is not installed")


def _gui_keymap() -> dict[str, str]:
    """The key map in crafter's own run_gui.py, read from its source."""
    src = (Path(crafter.__file__).parent / "run_gui.py").read_text()
    block = src[src.index("keymap = {") : src.index("}", src.index("keymap = {"))]
    return {k.lower(): a for k, a in re.findall(r"pygame\.K_(\w+): '(\w+)'", block)}


@pytest.fixture(scope="module")
def env():
    from kgagent.envs.gym import GymEnv

    e = GymEnv("crafter", seed=3)
    yield e
    e.close()


def test_crafter_keys_are_its_own_windows_keys(env) -> None:
    gui = _gui_keymap()
    assert len(gui) == 16
    km = env.key_map
    assert km.pop("escape").startswith("quit")
    assert km == gui
    assert env.size == (600, 600) and env.observe().shape == (600, 600, 3)


def test_each_key_steps_crafter_with_its_action(env) -> None:
    env.reset(seed=3)
    sent: list[int] = []
    inner = env._backend.env
    real = inner.step
    inner.step = lambda i: sent.append(i) or real(i)
    try:
        for key, _name in _gui_keymap().items():
            env.step(Action("key", key=key))
    finally:
        inner.step = real
    assert [env.action_names[i] for i in sent] == list(_gui_keymap().values())


def test_clicks_and_unmapped_keys_do_not_step(env) -> None:
    env.reset(seed=3)
    before = env.observe().copy()
    for a in (
        Action("click", x=300, y=300),
        Action("key", key="enter"),
        Action("hotkey", key="ctrl+w"),
    ):
        obs, reward, term, trunc, info = env.step(a)
        assert info["stepped"] is False and (reward, term, trunc) == (0.0, False, False)
        assert np.array_equal(obs, before)
    assert env.ground_truth().extra["env_steps"] == 0
    with pytest.raises(ActionRefused):
        env.step(Action("click", x=600, y=10))
    # typing presses the characters in turn: w, a and d are mapped, x is not
    env.step(Action("type", text="wxad"))
    assert env.ground_truth().extra["env_steps"] == 3


def test_escape_ends_the_episode_like_the_gui(env) -> None:
    env.reset(seed=3)
    env.step(Action("key", key="w"))
    *_, term, trunc, _info = env.step(Action("key", key="esc"))
    assert (term, trunc) == (False, True)
    assert env.end_info()["ended_by"] == "quit key"


def _play(seed: int, keys: list[str], size=None) -> tuple[list[np.ndarray], dict]:
    from kgagent.envs.gym import GymEnv, GymOptions

    e = GymEnv("crafter", seed=seed, options=GymOptions(size=size))
    frames = [e.observe().copy()]
    for k in keys:
        frames.append(e.step(Action("key", key=k))[0].copy())
    gt = e.ground_truth()
    e.close()
    return frames, {"score": gt.score, "extra": gt.extra, "alive": gt.alive}


def test_crafter_is_deterministic_under_a_seed() -> None:
    rng = np.random.default_rng(0)
    keys = [str(k) for k in rng.choice(list(_gui_keymap()), size=20)]
    a, truth_a = _play(5, keys)
    b, truth_b = _play(5, keys)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and truth_a == truth_b
    c, _ = _play(6, keys)
    assert not np.array_equal(a[0], c[0])  # another seed, another world


def test_crafter_repeats_itself_after_creatures_come_and_go() -> None:
    # Long enough for Crafter to despawn creatures: its own sets iterate by address, and
    # two runs of one seed parted within these steps in most seeds.
    keys = [str(k) for k in np.random.default_rng(1).choice(list(_gui_keymap()), size=300)]
    for seed in (0, 2, 4):
        a, truth_a = _play(seed, keys, size=(64, 64))
        held = [object() for _ in range(2000)]  # other addresses for the second run
        b, truth_b = _play(seed, keys, size=(64, 64))
        assert held and truth_a == truth_b
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), seed


def test_crafter_chunks_list_creatures_in_the_order_they_came(env) -> None:
    world = env._backend.env._world
    joined = {id(o): i for i, o in enumerate(world._objects) if o}
    crowded = [list(objs) for objs in world.chunks.values() if len(objs) > 1]
    assert crowded  # a new world has chunks with several creatures
    for objs in crowded:
        order = [joined[id(o)] for o in objs]
        assert order == sorted(order)


def test_ground_truth_reads_crafter_achievements(env) -> None:
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    keys = list(_gui_keymap())
    total = 0.0
    for _ in range(100):
        _obs, r, term, trunc, _info = env.step(Action("key", key=str(rng.choice(keys))))
        total += r
        if term or trunc:
            break
    gt = env.ground_truth()
    player = env._backend.env._player
    unlocked = sorted(k for k, v in player.achievements.items() if v > 0)
    assert unlocked and gt.extra["achievements"] == unlocked and gt.progression == len(unlocked)
    assert gt.score == pytest.approx(total) and gt.alive == (player.health > 0)
    assert env.end_info()["achievements"] == unlocked


def test_ale_uses_its_get_keys_to_action() -> None:
    pytest.importorskip("ale_py")
    from kgagent.envs.gym import GymEnv

    e = GymEnv("ALE/Breakout-v5", seed=0)
    try:
        assert e.key_map == {"e": "NOOP", "space": "FIRE", "d": "RIGHT", "a": "LEFT"}
        w, h = e.size
        assert (w, h) == (480, 630)  # 160x210 scaled x3, nearest neighbour
        frame = e.observe()
        assert np.array_equal(frame[::3, ::3], frame[1::3, 1::3])
        assert e.step(Action("key", key="space"))[4]["stepped"] is True
        assert e.step(Action("key", key="w"))[4]["stepped"] is False
    finally:
        e.close()


def test_a_key_map_in_pygame_1_key_codes_gets_the_arrows() -> None:
    """Gymnasium's MountainCar maps SDL 1.2's codes 275/276 (right/left), which pygame 2
    does not name; the keys are the arrows, not one key without a name."""
    pytest.importorskip("pygame")
    from kgagent.envs.gym import GymEnv

    e = GymEnv("MountainCar-v0", seed=0)
    try:
        assert e.key_map == {"left": "0", "right": "2", "left+right": "1"}
        assert e.step(Action("key", key="left"))[4]["stepped"] is True
        assert e.step(Action("key", key="1"))[4]["stepped"] is False
    finally:
        e.close()


def test_a_key_map_whose_keys_have_no_name_falls_back_to_digits(monkeypatch) -> None:
    from kgagent.envs import gym_keys

    class Unnamed:
        def get_keys_to_action(self):
            return {(70000,): 0, (70001,): 1, (): 0}

    monkeypatch.setattr(gym_keys, "key_name", lambda k: "")
    assert gym_keys.keys_to_actions("X-v0", Unnamed(), 2) == {
        frozenset(["0"]): 0,
        frozenset(["1"]): 1,
    }


def test_an_env_without_a_key_map_gets_digits() -> None:
    from kgagent.envs.gym import GymEnv

    e = GymEnv("CartPole-v1", seed=0)
    try:
        assert e.key_map == {"0": "0", "1": "1"}
        assert e.step(Action("key", key="1"))[4]["stepped"] is True
        assert e.step(Action("key", key="2"))[4]["stepped"] is False
    finally:
        e.close()


def test_registry_builds_gym_envs_and_names_unknown_ones() -> None:
    from kgagent.config import Config
    from kgagent.envs.registry import is_env_name, make_env

    cfg = Config()
    cfg.run.seed = 2
    e = make_env("gym:crafter", cfg)
    assert e.restarts and e.name == "gym:crafter" and e.size == (600, 600)
    e.close()
    assert is_env_name("gym:crafter") and not is_env_name("gym:") and not is_env_name("nosuch")
    with pytest.raises(EnvironmentError_, match="unknown Gymnasium environment"):
        make_env("gym:NoSuchGame-v9", cfg)


def test_a_module_id_whose_module_does_not_import_is_one_line() -> None:
    from kgagent.config import Config
    from kgagent.envs.registry import make_env

    for name, message in [
        ("gym:nosuchmod:Foo-v0", "cannot make gym:nosuchmod:Foo-v0: No module named 'nosuchmod'"),
        ("gym:a:b:Foo-v0", "use gym:ID or gym:MODULE:ID"),
    ]:
        with pytest.raises(EnvironmentError_, match=re.escape(message)) as e:
            make_env(name, Config())
        assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "name, message",
    [
        ("gym:nosuchmod:Foo-v0", "No module named 'nosuchmod'"),
        ("gym:NoSuch-v0", "unknown Gymnasium environment 'NoSuch-v0'"),
        ("gym:gymnasium.envs.classic_control:NoSuch-v0", "unknown Gymnasium environment"),
        ("gym:a:b:Foo-v0", "one ':'"),
        ("nosuch", "unknown environment 'nosuch'"),
        ("gym:crafter", None),
        ("gym:CartPole", None),  # the latest version, as gymnasium.make takes it
        ("gym:gymnasium.envs.classic_control:CartPole-v1", None),
        ("cardgame", None),
    ],
)
def test_check_env_refuses_what_cannot_be_built_before_building_it(name, message) -> None:
    """`kgagent play` opens the memory before it builds the environment: the id is
    checked first, without building it."""
    from kgagent.envs.registry import check_env
    from kgagent.errors import ConfigError

    if message is None:
        check_env(name)
        return
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        check_env(name)
    assert "\n" not in str(e.value)


def test_a_pygame_drawn_env_without_a_display_prints_no_false_error() -> None:
    """SDL without a display tries Wayland first and prints "error: XDG_RUNTIME_DIR ...";
    the adapter asks for the offscreen driver at once and leaves no variable behind."""
    pytest.importorskip("pygame")
    code = (
        "import os\n"
        "from kgagent.envs.gym import GymEnv\n"
        "e = GymEnv('CartPole-v1', seed=0)\n"
        "assert e.observe().std() > 0\n"
        "print('SDL_VIDEODRIVER' in os.environ)\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert "XDG_RUNTIME_DIR" not in out.stderr and "error" not in out.stderr.lower()
