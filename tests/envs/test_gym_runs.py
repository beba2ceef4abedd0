"""A gym:ID run of several episodes: its summary adds up the episodes, its episode lines
say whether an episode was terminated or truncated, and gym.kwargs reaches the game."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from command_lines import play_args
from kgagent.cli.main import cli

from kgagent.errors import ConfigError, EnvironmentError_

gym = pytest.importorskip("gymnasium")

#: every key a player may press steps the game (clicks do not)
KEYS = (
    *"abcdefghijklmnopqrstuvwxyz0123456789",
    *("space", "enter", "tab", "escape", "backspace", "up", "down", "left", "right"),
)


class Tally(gym.Env):
    """Scores ``reward`` at every step and is over (terminated) after ``length`` steps;
    every key a player may try steps it."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str = "rgb_array", reward: float = 1.0, length: int = 3):
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0, 255, (32, 32, 3), np.uint8)
        self.reward, self.length, self.steps = reward, length, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self.render(), {}

    def step(self, action):
        self.steps += 1
        return self.render(), self.reward, self.steps >= self.length, False, {}

    def render(self):
        img = np.zeros((32, 32, 3), np.uint8)
        img[:, : 8 * self.steps] = 200
        return img

    def get_keys_to_action(self):
        return {(k,): i % 2 for i, k in enumerate(KEYS)}


if "Tally-v0" not in gym.registry:
    gym.register("Tally-v0", entry_point=Tally, disable_env_checker=True)


def _play(mem: Path, *extra: str, steps: int = 12) -> tuple[list[dict], str]:
    """The step log's lines and the printed table of a run on gym:Tally-v0."""
    args = play_args(mem, *extra, steps=steps, env="gym:Tally-v0")
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    log = next((mem / "runs").glob("*.jsonl"))
    return [json.loads(s) for s in log.read_text().splitlines()], res.stdout


def _row(table: str, name: str) -> str:
    """The value of the table's row ``name``."""
    return next(r for r in table.splitlines() if r.startswith(name + " "))[len(name) :].strip()


def test_the_summary_adds_up_the_episodes_and_labels_the_last(tmp_path: Path) -> None:
    lines, table = _play(tmp_path / "mem", steps=13)
    ends = [x for x in lines if x["type"] == "episode"]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["episodes"] > 2
    assert [e["truth"]["score"] for e in ends] == [3.0] * len(ends)  # three steps of 1
    last = [x for x in lines if x["type"] == "step"][-1]["truth"]["score"]
    assert summary["score"] == last  # the key keeps its meaning: the last episode's
    assert summary["episode_scores"] == [3.0] * len(ends) + [last]
    assert summary["score_total"] == 3.0 * len(ends) + last
    done = summary["episodes_finished"]
    assert done == len(ends) + (summary["stopped"] == "terminated")
    assert _row(table, "score") == f"{last:g} (the last episode's)"
    assert _row(table, "progression").endswith("(the last episode's)")
    assert _row(table, "alive").endswith("(the last episode's)")
    total = f"score {summary['score_total']:g} in {summary['episodes']} episodes; "
    assert done == summary["episodes"] - 1  # the last one had not ended
    assert _row(table, "all episodes") == (
        total + f"{done} finished (mean score 3), the last one unfinished"
    )

    # `runs show` prints the same, from the summary line and rebuilt from the step lines
    log = Path(summary["log_path"])
    shown = CliRunner().invoke(cli, ["runs", "show", str(log)])
    assert _row(shown.stdout, "all episodes") == _row(table, "all episodes")
    cut = tmp_path / "killed.jsonl"
    cut.write_text("".join(s + "\n" for s in log.read_text().splitlines()[:-1]))
    rebuilt = CliRunner().invoke(cli, ["runs", "show", str(cut), "--format", "json"])
    r = json.loads(rebuilt.stdout)[0]
    assert (r["episodes"], r["score_total"]) == (summary["episodes"], summary["score_total"])


def test_a_one_episode_summary_reads_as_before() -> None:
    from kgagent.runlog import summarise

    truth = {"progression": 4.0, "score": 2.0, "alive": True}
    common = {"env": "e", "seed": 0, "ablation": "full", "stats": None, "truth": truth}
    s = summarise([], **common, stopped="steps", duration_s=0.0)  # no episode lines known
    s2 = summarise([], **common, stopped="steps", duration_s=0.0, ends=[])
    for table in (s.format_table(), s2.format_table()):
        assert _row(table, "score") == "2" and _row(table, "progression") == "4"
        assert _row(table, "alive") == "yes" and "all episodes" not in table
    assert (s2.score_total, s2.episodes_finished, s2.episode_scores) == (2.0, 0, [2.0])


def test_an_episode_cut_by_the_time_limit_reads_truncated(tmp_path: Path) -> None:
    lines, _ = _play(tmp_path / "mem", "--set", "gym.max_episode_steps=2", steps=8)
    ends = [x for x in lines if x["type"] == "episode"]
    assert ends and all(e["reason"] == "truncated" for e in ends)
    assert all(e["ended_by"] == "time limit" and e["alive"] is True for e in ends)
    assert all("truncated" not in e for e in ends)  # said once, by the reason


def test_an_episode_the_game_ended_reads_terminated(tmp_path: Path) -> None:
    lines, _ = _play(tmp_path / "mem", "--set", "run.restart=false", steps=8)
    ends = [x for x in lines if x["type"] == "episode"]
    assert len(ends) == 1 and ends[0]["reason"] == "terminated"
    assert ends[0]["ended_by"] == "terminated" and ends[0]["alive"] is False
    assert lines[-1]["stopped"] == "terminated"
    lines, _ = _play(
        tmp_path / "mem2", "--set", "run.restart=false", "--set", "gym.max_episode_steps=2"
    )
    assert lines[-1]["stopped"] == "truncated"


def test_gym_kwargs_reach_the_game_and_the_step_log(tmp_path: Path) -> None:
    lines, _ = _play(tmp_path / "mem", "--set", "gym.kwargs=reward=2", steps=6)
    assert lines[0]["config"]["gym"]["kwargs"] == "reward=2"
    ends = [x for x in lines if x["type"] == "episode"]
    assert ends and ends[0]["reward_sum"] == 6.0


@pytest.mark.parametrize(
    "text",
    ["{reward = 2}", '{"reward": 2}', "reward=2", "reward = 2"],
)
def test_gym_kwargs_is_a_toml_or_json_table(text: str) -> None:
    from kgagent.config import Config
    from kgagent.envs.gym import GymOptions

    cfg = Config()
    cfg.set_dotted(f"gym.kwargs={text}")
    cfg.validate()
    assert GymOptions.of(cfg.gym).kwargs == {"reward": 2}


@pytest.mark.parametrize(
    "text, message",
    [
        ("reward", "gym.kwargs = 'reward': must be a table of gymnasium.make's keywords"),
        ('render_mode="human"', "gym.kwargs sets render_mode: the adapter renders"),
        ("max_episode_steps=3", "gym.kwargs sets max_episode_steps: set gym.max_episode_steps"),
    ],
)
def test_a_bad_gym_kwargs_is_one_line(text: str, message: str) -> None:
    from kgagent.config import Config

    with pytest.raises(ConfigError) as e:
        Config().set_dotted(f"gym.kwargs={text}")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_keyword_the_game_does_not_take_is_named() -> None:
    from kgagent.envs.gym import GymEnv, GymOptions

    with pytest.raises(EnvironmentError_) as e:
        GymEnv("Tally-v0", options=GymOptions(kwargs={"rewrd": 2}))
    assert str(e.value) == (
        "gym.kwargs: gym:Tally-v0 takes no keyword 'rewrd'; did you mean reward? "
        "(it takes reward, length)"
    )


def test_ale_options_and_older_ids(tmp_path: Path) -> None:
    """In a fresh interpreter, where nothing has registered ale-py's games yet."""
    pytest.importorskip("ale_py")
    import subprocess
    import sys

    code = """
import warnings
from kgagent.envs.gym import GymEnv, GymOptions
from kgagent.envs.gym_ids import unknown_reason
assert unknown_reason("BreakoutNoFrameskip-v4") is None
print(unknown_reason("Breakout-v5"))
with warnings.catch_warnings():
    warnings.simplefilter("error")
    e = GymEnv("ALE/Breakout", options=GymOptions(kwargs={"frameskip": 1}))
print(e._backend.env.unwrapped._frameskip, e.notes())
e.close()
GymEnv("BreakoutNoFrameskip-v4").close()
try:
    GymEnv("ALE/Breakout-v5", options=GymOptions(kwargs={"frameskipp": 1}))
except Exception as x:
    print(x)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    said = out.stdout.splitlines()
    assert said[0].endswith("; did you mean gym:ALE/Breakout-v5?")
    assert said[1] == (
        "1 ['gym: gym:ALE/Breakout names no version; this run played ALE/Breakout-v5, its "
        "latest (gym:ALE/Breakout-v5 names it)']"
    )
    assert said[2].startswith(
        "gym.kwargs: gym:ALE/Breakout-v5 takes no keyword 'frameskipp'; did you mean frameskip?"
    )
    assert "\x1b[" not in out.stderr and "WARN" not in out.stderr
