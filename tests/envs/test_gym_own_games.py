"""A Gymnasium game of one's own through gym:ID: its random numbers are not the player's,
a rendering the agent cannot see is refused before the run, and its own failures are one
line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgagent.actions import Action
from kgagent.errors import EnvironmentError_

gym = pytest.importorskip("gymnasium")


class LitButton(gym.Env):
    """Four buttons, one lit at random from the world's own numbers (``np_random``);
    pressing the lit one scores. ``frame``: how the game renders (uint8, int64, float)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str = "rgb_array", frame: str = "uint8", fail_at: int = 0):
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.spaces.Box(0, 255, (32, 64, 3), np.uint8)
        self.frame, self.fail_at = frame, fail_at
        self.lit, self.steps = 0, 0

    def _image(self) -> np.ndarray:
        img = np.full((32, 64, 3), 30, np.uint8)
        img[8:24, 16 * self.lit + 2 : 16 * self.lit + 14] = 240
        return img

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.lit, self.steps = int(self.np_random.integers(4)), 0
        return self._image(), {}

    def step(self, action):
        self.steps += 1
        if self.steps == self.fail_at:
            raise RuntimeError("the game broke")
        hit = float(int(action) == self.lit)
        self.lit = int(self.np_random.integers(4))
        return self._image(), hit, False, False, {}

    def render(self):
        img = self._image()
        if self.frame == "none":
            return None
        if self.frame == "grey":
            return img[..., 0]
        if self.frame == "int64":
            return img.astype(np.int64)
        if self.frame == "float":
            return img / 255.0
        return img


for _name, _kw in {
    "LitButton-v0": {},
    "LitButtonInt-v0": {"frame": "int64"},
    "LitButtonFloat-v0": {"frame": "float"},
    "LitButtonNone-v0": {"frame": "none"},
    "LitButtonGrey-v0": {"frame": "grey"},
    "LitButtonFails-v0": {"fail_at": 2},
}.items():
    if _name not in gym.registry:
        gym.register(_name, entry_point=LitButton, kwargs=_kw, disable_env_checker=True)
if "LitButtonShort-v0" not in gym.registry:
    gym.register(
        "LitButtonShort-v0", entry_point=LitButton, max_episode_steps=5, disable_env_checker=True
    )


def test_a_player_does_not_draw_the_worlds_numbers() -> None:
    from gymnasium.utils.seeding import np_random

    from kgagent.seeding import player_rng

    for seed in range(5):
        world, _ = np_random(seed)
        assert player_rng(seed).integers(4, size=16).tolist() != world.integers(4, size=16).tolist()
        assert player_rng(seed).random() == player_rng(seed).random()  # the seed alone


def test_the_random_keys_baseline_is_not_told_the_lit_button(tmp_path: Path) -> None:
    """Seeded like the world, Hafner's random agent pressed the lit button every time."""
    from kgagent.bench.baselines import run_random_keys
    from kgagent.config import Config

    cfg = Config()
    cfg.run.env, cfg.run.seed = "gym:LitButton-v0", 3
    summary = run_random_keys(cfg, 200, tmp_path)
    lines = [json.loads(s) for s in Path(summary.log_path).read_text().splitlines()]
    steps = [x for x in lines if x["type"] == "step"]
    presses = [int(x["action"]) for x in steps]
    assert len(presses) == 200
    hits = _replay_hits(3, presses)
    assert 20 <= hits <= 90, hits  # about a quarter by chance; 200 when it shares the stream


def _replay_hits(seed: int, presses: list[int]) -> int:
    env = gym.make("LitButton-v0")
    env.reset(seed=seed)
    hits = 0
    for a in presses:
        hits += int(env.step(a)[1])
    return hits


def test_integer_pixels_are_taken_and_float_ones_refused() -> None:
    from kgagent.envs.gym import GymEnv

    env = GymEnv("LitButtonInt-v0")
    assert env.observe().dtype == np.uint8 and env.observe().max() == 240
    env.close()
    with pytest.raises(EnvironmentError_, match=r"rendered float64 \(32, 64, 3\).*0–255") as e:
        GymEnv("LitButtonFloat-v0")
    assert "\n" not in str(e.value)


def test_a_render_of_none_says_so_before_the_run(tmp_path: Path) -> None:
    from kgagent.agent.runner import Runner
    from kgagent.config import Config

    cfg = Config()
    cfg.run.env = "gym:LitButtonNone-v0"
    cfg.perception.encoder, cfg.perception.segmenter = "pixel", "opencv"
    with pytest.raises(EnvironmentError_) as e:
        Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda m: None).run(3)
    assert str(e.value) == (
        'gym:LitButtonNone-v0 render() returned None, made with render_mode="rgb_array": in '
        "that mode render() returns the screen, a uint8 array (height, width, 3) (does the "
        "game's __init__ keep its render_mode?)"
    )
    assert not (tmp_path / "m").exists()  # refused before the run began


def test_a_grey_render_is_refused_in_the_games_own_shape() -> None:
    from kgagent.envs.gym import GymEnv

    with pytest.raises(EnvironmentError_) as e:
        GymEnv("LitButtonGrey-v0")
    assert str(e.value) == (
        "gym:LitButtonGrey-v0 rendered uint8 (32, 64): a screen is an RGB array, "
        "(height, width, 3) (a grey picture: np.stack([frame] * 3, axis=-1))"
    )


def test_the_games_own_failure_is_one_line_naming_it() -> None:
    from kgagent.envs.gym import GymEnv

    env = GymEnv("LitButtonFails-v0")
    env.step(Action("key", key="1"))
    with pytest.raises(EnvironmentError_) as e:
        env.step(Action("key", key="2"))
    assert str(e.value) == "gym:LitButtonFails-v0 failed in step(): RuntimeError: the game broke"
    assert isinstance(e.value.__cause__, RuntimeError)  # --debug shows where
    env.close()


def test_random_keys_counts_the_episodes_it_played(tmp_path: Path) -> None:
    """Ten steps of five-step episodes are two episodes, not three (the runner's count)."""
    from kgagent.bench.baselines import run_random_keys
    from kgagent.config import Config

    cfg = Config()
    cfg.run.env = "gym:LitButtonShort-v0"
    summary = run_random_keys(cfg, 10, tmp_path)
    lines = [json.loads(s) for s in Path(summary.log_path).read_text().splitlines()]
    assert [x["episode"] for x in lines if x["type"] == "episode"] == [1, 2]
    assert summary.episodes == 2


def test_a_random_keys_log_says_when_it_started_with_its_offset(tmp_path: Path) -> None:
    """Its header's ``started`` carries the UTC offset, as the agent's does, so that its
    runs are ordered among others made in other time zones (``kgagent.rounds.log_order``)."""
    from datetime import datetime

    from kgagent.bench.baselines import run_random_keys
    from kgagent.config import Config

    cfg = Config()
    cfg.run.env = "gym:LitButtonShort-v0"
    summary = run_random_keys(cfg, 2, tmp_path)
    header = json.loads(Path(summary.log_path).read_text().splitlines()[0])
    assert datetime.fromisoformat(header["started"]).utcoffset() is not None
