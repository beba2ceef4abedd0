"""Whole runs on the toy program: learning against random, a resized window, recorded screens."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from kgagent.agent.runner import Runner
from kgagent.errors import EnvironmentError_
from kgagent.runlog_read import read_log

from .toy import ToyEnv, toy_runner


def _runner(cfg, path: Path, env, log=lambda m: None) -> Runner:
    return toy_runner(cfg, path, env, log)


def _run(cfg, path: Path, env, steps: int, ablation: str = "full", seed: int = 0):
    cfg.run.ablation, cfg.run.seed = ablation, seed
    return _runner(cfg, path, env).run(steps)


def test_the_agent_learns_the_rewarding_control_random_does_not(cfg, tmp_path) -> None:
    """ "Fire" (select B, then T) is the toy's progress; nothing tells the agent so.

    The offline brain sees only that firing keeps making new screens. Over 80 steps
    under one seed the full agent fires far more often than the random agent on the
    same action space (seeds 0-5 gave 27-55 fires against 0-1 when this was written).
    """
    full = _run(cfg, tmp_path / "full", ToyEnv(), 80)
    rnd = _run(cfg, tmp_path / "random", ToyEnv(), 80, "random")
    assert full.progression >= 10 * max(rnd.progression, 1)
    fire = [
        e
        for r in read_log(full.log_path)[1]
        for e in r["executions"]
        if e["path"] in ("hq", "cluster") and len(e["operations"]) == 2
    ]
    assert fire, "the two-step skill is invoked from memory, not only rediscovered"


class ResizingEnv(ToyEnv):
    """The toy, whose window grows by 40 px after 10 actions (a program resizing itself)."""

    def observe(self) -> np.ndarray:
        img = super().observe()
        if self.steps >= 10:
            img = np.concatenate([img, np.full((img.shape[0], 40, 3), 90, np.uint8)], axis=1)
        return img


def test_a_window_resized_mid_run_does_not_end_the_run(cfg, tmp_path) -> None:
    env = ResizingEnv()
    s = _run(cfg, tmp_path / "m", env, 30)
    assert env.steps > 10  # the resize happened during the run
    assert s.steps == 30 and s.stopped == "steps"
    _, steps, _ = read_log(s.log_path)
    changes = [e["change"] for r in steps for e in r["executions"]]
    assert 1.0 in changes  # the execution across the resize changed the whole screen


class EventfulEnv(ToyEnv):
    """The toy, saying what it did on its own at its 3rd action (a window put back)."""

    def __init__(self) -> None:
        super().__init__()
        self._events: list[str] = []

    def step(self, action):
        out = super().step(action)
        if self.steps == 3:
            self._events.append("put the target back")
        return out

    def events(self) -> list[str]:
        out, self._events = self._events, []
        return out


def test_what_the_environment_did_on_its_own_is_in_that_steps_line(cfg, tmp_path) -> None:
    s = _run(cfg, tmp_path / "m", EventfulEnv(), 6)
    _, steps, _ = read_log(s.log_path)
    marked = [r for r in steps if "env_events" in r]
    assert len(marked) == 1 and marked[0]["env_events"] == ["put the target back"]
    acted = 0
    for r in steps:  # the step whose actions include the 3rd one
        if acted < 3 <= acted + r["actions"]:
            assert r is marked[0]
        acted += r["actions"]


def test_record_saves_the_screen_after_every_step(cfg, tmp_path) -> None:
    cfg.run.record = str(tmp_path / "shots")
    s = _run(cfg, tmp_path / "m", ToyEnv(), 4)
    shots = sorted((tmp_path / "shots").glob("*.png"))
    assert [p.name for p in shots] == [f"step-{i:05d}.png" for i in range(1, 5)]
    assert all(Image.open(p).size == (240, 160) for p in shots)
    assert s.steps == 4


def test_a_run_that_cannot_start_makes_no_record_folder(cfg, tmp_path) -> None:
    """A memory path holding other files is refused; its --record folder was made before."""
    from kgagent.errors import ConfigError, MemoryStoreError

    busy = tmp_path / "m"
    busy.mkdir()
    (busy / "notes.txt").write_text("not a memory")
    cfg.run.record = str(busy / "shots")
    with pytest.raises((ConfigError, MemoryStoreError)):
        _run(cfg, busy, ToyEnv(), 2)
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]


class FlashingEnv(ToyEnv):
    """A live program whose whole screen flashes on its own, on every other screenshot."""

    live = True
    looks = 0

    def observe(self) -> np.ndarray:
        self.looks += 1
        img = super().observe()
        return 255 - img if self.looks % 2 else img


def _brighter(img: np.ndarray, levels: int) -> np.ndarray:
    return np.clip(img.astype(np.int16) + levels, 0, 255).astype(np.uint8)


class NightEnv(ToyEnv):
    """A live program that holds still until its ``dark_from``-th input, then flashes on its own
    (a game's night), so that its inputs stop settling as a desktop window's would.
    ``faint``: the flashes move every pixel by 10 grey levels only (below the threshold)."""

    live = True

    def __init__(self, faint: bool = False, dark_from: int = 3) -> None:
        super().__init__()
        self.inputs = self.looks = 0
        self.faint = faint
        self.dark_from = dark_from
        self.tolerances: list = []
        self.most_unsettled = 0  # the longest row of unsettled inputs the agent sent

    def step(self, action):
        self.inputs += 1
        out = super().step(action)
        if self.inputs >= self.dark_from:
            self.unsettled += 1  # the settle wait timed out
            self.most_unsettled = max(self.most_unsettled, self.unsettled)
        return out

    def observe(self) -> np.ndarray:
        img = super().observe()
        if self.inputs < self.dark_from:
            return img
        self.looks += 1
        if self.looks % 2 == 0:
            return img
        return _brighter(img, 10) if self.faint else 255 - img

    def tolerate_motion(self, still) -> None:
        self.tolerances.append(still)


@pytest.mark.parametrize(("after", "faint"), [(2, False), (2, True), (0, False)])
def test_noise_that_begins_later_is_watched_again(cfg, tmp_path, after, faint) -> None:
    cfg.desktop.noise_probe_s = 0.05
    cfg.desktop.noise_reprobe_after = after
    logs: list[str] = []
    env = NightEnv(faint)
    runner = _runner(cfg, tmp_path / "m", env, logs.append)
    runner.run(4)
    again = [m for m in logs if "watched the target again" in m]
    assert env.tolerances[0] is None  # still at the start: nothing to tolerate
    if after == 0:
        assert not again and runner.reprobes == 0 and env.tolerances == [None]
        return
    assert again and runner.reprobes == len(again) and env.unsettled < after
    assert "inputs in a row" in again[0] and "the change floors stay" in again[0]
    still = env.tolerances[-1]
    img = env.observe()
    assert still is not None and still(img, _brighter(img, 10))  # faint flashes settle
    assert ("changes 0.000%" in again[0]) is faint
    assert still(img, 255 - img) is (not faint)  # strong ones when they were measured
    assert runner.idle_change == 0.0  # the start's measure (the floors') is kept


def test_noise_is_watched_again_within_a_step(cfg, tmp_path) -> None:
    """The re-watch follows the input that completes the row, not the step's end: a step
    that tries many inputs waits out the settle timeout no more than that many times."""
    cfg.desktop.noise_probe_s = 0.05
    cfg.desktop.noise_reprobe_after = 2
    env = NightEnv(faint=True, dark_from=1)
    runner = _runner(cfg, tmp_path / "m", env, lambda _m: None)
    s = runner.run(6)
    _, steps, _ = read_log(s.log_path)
    inputs = [sum(e["actions"] for e in r["executions"]) for r in steps]
    assert max(inputs) > 3  # some step sent more inputs than the row (the test's power)
    assert env.most_unsettled == 2 and runner.reprobes >= 2
    watched = [r["times_ms"].get("noise", 0.0) for r in steps]
    assert sum(1 for ms in watched if ms > 0) >= 1  # counted as the step's own part


def test_a_floor_above_any_possible_change_is_reported(cfg, tmp_path) -> None:
    """Idle motion over most of the screen lifts the floors past 100 %: the run says that
    no action can count as a change, and how to get out of it."""
    cfg.desktop.noise_probe_s = 0.05
    logs: list[str] = []
    runner = _runner(cfg, tmp_path / "m", FlashingEnv(), logs.append)
    runner.run(0)
    assert runner.idle_change > 0.5
    warning = [m for m in logs if m.startswith("noise: warning")]
    assert len(warning) == 1 and "--region" in warning[0], logs
    # a still live program raises nothing and warns of nothing
    logs.clear()
    still = ToyEnv()
    still.live = True
    runner = _runner(cfg, tmp_path / "m2", still, logs.append)
    runner.run(0)
    assert runner.idle_change == 0.0 and not any(m.startswith("noise") for m in logs)


def test_an_environment_name_with_a_slash_gets_a_step_log_in_the_log_folder(
    cfg, tmp_path, monkeypatch
) -> None:
    """Gymnasium ids such as ``ALE/Breakout-v5`` hold a path separator."""
    monkeypatch.setattr("kgagent.agent.runner.time.strftime", lambda fmt: "20260101-000000")
    env = ToyEnv()
    env.name = "gym:ALE/Breakout-v5"
    runner = _runner(cfg, tmp_path / "mem", env)
    path = runner.log_file()
    assert path.parent == runner.log_dir() and path.parent.is_dir()
    assert path.name == "20260101-000000-gym:ALE_Breakout-v5-0.jsonl"
    path.touch()
    assert runner.log_file().name == "20260101-000000-gym:ALE_Breakout-v5-0-1.jsonl"


class ClosingEnv(ToyEnv):
    """The toy, whose window goes away after 3 steps (a target closed or minimised)."""

    def step(self, action):
        if self.steps >= 3:
            raise EnvironmentError_("the target window 'toy' (id 0x1) was closed or is hidden")
        return super().step(action)


def test_a_run_that_ends_in_an_error_says_so_in_its_summary(cfg, tmp_path) -> None:
    """The error propagates (the CLI prints it, exit 1), and the summary line written
    before that says how the run ended: not "steps", which reads as a finished run."""
    from click.testing import CliRunner
    from kgagent.cli.main import cli

    mem = tmp_path / "mem"
    runner = _runner(cfg, mem, ClosingEnv())
    with pytest.raises(EnvironmentError_, match="was closed or is hidden"):
        runner.run(10)
    (log,) = (mem / "runs").glob("*.jsonl")
    summary = read_log(log)[2]
    assert summary["stopped"] == "error" and summary["steps"] < 10
    assert summary["error"] == "the target window 'toy' (id 0x1) was closed or is hidden"

    cli_args = ["--memory", str(mem), "--format", "json"]
    listed = CliRunner().invoke(cli, ["runs", "list", *cli_args])
    assert listed.exit_code == 0, listed.output
    assert [r["stopped"] for r in json.loads(listed.stdout)] == ["error"]
    shown = CliRunner().invoke(cli, ["runs", "show", str(log), "--memory", str(mem)])
    assert shown.exit_code == 0, shown.output
    assert re.search(r"^steps\s+\d+ \(error\)$", shown.stdout, re.M)
    assert re.search(r"^error\s+the target window 'toy' .* is hidden$", shown.stdout, re.M)


class NamedTargetEnv(ToyEnv):
    """A toy program that says what it is bound to, as the desktop env does."""

    def describe_target(self) -> str:
        return "window 'toy' (id 0x1, pid 7) 200x150+10+20"


def test_a_run_says_what_it_acts_on_first_and_keeps_it_in_its_header(cfg, tmp_path) -> None:
    lines: list[str] = []
    mem = tmp_path / "mem"
    s = _runner(cfg, mem, NamedTargetEnv(), log=lines.append).run(2)
    assert lines[0] == "toy: acting on window 'toy' (id 0x1, pid 7) 200x150+10+20"
    (log,) = (mem / "runs").glob("*.jsonl")
    assert read_log(log)[0]["target"] == "window 'toy' (id 0x1, pid 7) 200x150+10+20"
    assert s.target == read_log(log)[2]["target"] == read_log(log)[0]["target"]
    table = s.format_table().splitlines()  # the summary says it too, under the environment
    assert table[1].split(None, 1) == ["target", "window 'toy' (id 0x1, pid 7) 200x150+10+20"]
    _runner(cfg, tmp_path / "other", ToyEnv()).run(1)  # an env that does not say: no line
    (plain,) = (tmp_path / "other" / "runs").glob("*.jsonl")
    assert read_log(plain)[0]["target"] is None


class RestartedEnv(NamedTargetEnv):
    """A program started again at each episode: a new process, a new window."""

    starts = 0

    def reset(self, seed=None):
        self.starts += 1
        return super().reset(seed)

    def describe_target(self) -> str:
        return f"window 'toy' (id 0x{self.starts}, pid {100 + self.starts}) 200x150+10+20"


def test_the_summary_names_the_window_of_the_last_start(cfg, tmp_path) -> None:
    """The header keeps what the run acted on first; after restarts the summary names the
    window it acted on last (it kept the first program's pid)."""
    cfg.run.episode_limit, cfg.run.restart = 2, True
    mem = tmp_path / "mem"
    s = _runner(cfg, mem, RestartedEnv()).run(5)
    header, _, summary = read_log(next((mem / "runs").glob("*.jsonl")))
    assert s.episodes == 3 and "pid 101" in header["target"]
    assert "pid 103" in summary["target"] and s.target == summary["target"]


class SignalledEnv(ToyEnv):
    """The toy, which sends its own process SIGINT ``times`` times in its third step (a
    person pressing Ctrl-C in the terminal of a script that drives a Runner)."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def step(self, action):
        import os
        import signal

        if self.steps == 2:
            for _ in range(self.times):
                os.kill(os.getpid(), signal.SIGINT)
        return super().step(action)


def test_a_library_caller_gets_a_second_ctrl_c_as_keyboard_interrupt(cfg, tmp_path) -> None:
    """One Ctrl-C: the run finishes its step and returns, ``stop_signal`` says why. Two: the
    run is written and its memory closed, then ``KeyboardInterrupt`` reaches the caller
    (a loop over seeds stops), with the summary in ``last_summary``."""
    import signal

    from kgagent.config import Config
    from kgagent.memory import Memory

    runner = _runner(cfg, tmp_path / "one", SignalledEnv(1))
    s = runner.run(50)
    assert s.stopped == "interrupted" and s.steps < 50 and runner.stop_signal == signal.SIGINT
    runner = _runner(cfg, tmp_path / "two", SignalledEnv(2))
    with pytest.raises(KeyboardInterrupt):
        runner.run(50)
    s = runner.last_summary
    assert s is not None and s.stopped == "interrupted" and s.steps < 50
    assert read_log(s.log_path)[2]["stopped"] == "interrupted"  # the summary line is written
    assert runner.stop_signal == signal.SIGINT
    with Memory.open(tmp_path / "two", Config()) as m:  # closed: a new writer may open it
        assert m.stats().nodes >= 1


def test_an_env_passed_in_names_the_run(cfg, tmp_path) -> None:
    """A user's own env given to ``Runner(env=...)`` is what the log and summary name, not
    ``run.env``'s default."""
    s = _runner(cfg, tmp_path / "m", ToyEnv()).run(2)
    header = read_log(s.log_path)[0]
    assert s.env == header["env"] == header["config"]["run"]["env"] == "toy"
    assert Path(s.log_path).name.endswith("-toy-0.jsonl")


def test_a_runner_refuses_an_unknown_env_or_step_count_before_making_a_memory(
    cfg, tmp_path
) -> None:
    from kgagent.errors import ConfigError

    cfg.run.env = "cardgam"
    with pytest.raises(ConfigError, match="unknown environment 'cardgam'"):
        Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda m: None).run(2)
    assert not (tmp_path / "m").exists()
    with pytest.raises(ConfigError, match="steps must be a whole number >= 0, not '5'"):
        _runner(cfg, tmp_path / "n", ToyEnv()).run("5")  # type: ignore[arg-type]
    assert _runner(cfg, tmp_path / "n", ToyEnv()).run(np.int64(2)).steps == 2


class GreyEnv(ToyEnv):
    """An environment of one's own that gives float frames, then grey ones."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def observe(self):
        img = super().observe()
        return img.astype(np.float32) / 255 if self.kind == "float" else img[:, :, 0]


@pytest.mark.parametrize(
    "kind, what", [("float", "float32 (160, 240, 3)"), ("grey", "uint8 (160, 240)")]
)
def test_a_screen_that_is_no_rgb_uint8_array_is_said_in_one_line(cfg, tmp_path, kind, what) -> None:
    with pytest.raises(EnvironmentError_) as e:
        _runner(cfg, tmp_path / kind, GreyEnv(kind)).run(3)
    assert str(e.value) == (
        f"environment 'toy' gave a screen of {what}: a screen is an RGB array of uint8, "
        "(height, width, 3)"
    )


def test_the_program_log_and_the_step_log_share_the_runs_start(cfg, tmp_path, monkeypatch) -> None:
    """A launched program's log and the step log are named by one time, the run's start
    (a desktop start-up takes seconds: they were a second or more apart)."""
    import itertools

    import kgagent.envs.registry as registry

    ticks = itertools.count()
    monkeypatch.setattr(
        "kgagent.agent.runner.time.strftime", lambda fmt: f"20260101-00000{next(ticks)}"
    )
    seen = {}

    def make_env(name, config, *, run_dir=None, stamp=None):
        seen["stamp"] = stamp
        return ToyEnv()

    monkeypatch.setattr(registry, "make_env", make_env)
    s = toy_runner(cfg, tmp_path / "m").run(1)
    assert Path(s.log_path).name == f"{seen['stamp']}-cardgame-0.jsonl"


class NoWindowEnv(ToyEnv):
    """A program whose window cannot be found: the run cannot start."""

    def __init__(self, leaves_log: Path | None = None) -> None:
        super().__init__()
        self.leaves_log = leaves_log

    def reset(self, seed=None):
        if self.leaves_log is not None:  # a launched program's log, to read
            self.leaves_log.parent.mkdir(parents=True, exist_ok=True)
            self.leaves_log.write_text("cannot open display\n")
        raise EnvironmentError_("no window matches 'Calculater'")


def test_a_run_that_cannot_start_leaves_no_new_memory(cfg, tmp_path) -> None:
    """A mistyped window, no display: the memory the run made holds nothing learned and
    would fix its encoder; it goes. A memory that existed stays, and so does one holding
    a launched program's log."""
    new = tmp_path / "new"
    with pytest.raises(EnvironmentError_, match="Calculater"):
        _runner(cfg, new, NoWindowEnv()).run(5)
    assert not new.exists()
    old = tmp_path / "old"
    _runner(cfg, old, ToyEnv()).run(2)
    with pytest.raises(EnvironmentError_):
        _runner(cfg, old, NoWindowEnv()).run(5)
    assert len(list((old / "runs").glob("*.jsonl"))) == 1  # as it was
    kept = tmp_path / "kept"
    with pytest.raises(EnvironmentError_):
        _runner(cfg, kept, NoWindowEnv(kept / "runs" / "x.program.log")).run(5)
    assert (kept / "runs" / "x.program.log").read_text() == "cannot open display\n"


def test_template_matching_is_its_own_part_of_a_step(cfg, tmp_path) -> None:
    """Grounding a skill's objects (to execute it, and to ask whether a candidate skill
    can start: every object of every candidate) is timed as ``ground``, not left in
    ``other``: it is the part that grows with the library."""
    s = _run(cfg, tmp_path / "m", ToyEnv(), 40)
    steps = read_log(s.log_path)[1]
    ground = [r["times_ms"].get("ground", 0.0) for r in steps]
    assert sum(1 for ms in ground if ms > 0) >= 10
    assert all(set(r["times_ms"]) >= {"other"} for r in steps)
