"""SIGTERM to `kgagent bench` (what `kill`, `timeout` and job schedulers send) stops it as
Ctrl-C does, and so does SIGHUP (the terminal closed): locally the running cells finish their step and are recorded as
interrupted, on Ray the tasks are cancelled; the results folder is written and the
workers are gone. A second SIGTERM ends cells whose step never ends."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

GRID = """
name = "stop"
envs = ["cardgame"]
steps = 100000
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]

[[experiment]]
name = "m"
methods = ["full", "no_graph"]
seeds = [0]
"""


def _steps(log: Path) -> int:
    n = 0
    for line in log.read_text().splitlines():
        try:
            n += json.loads(line).get("type") == "step"
        except json.JSONDecodeError:  # the writer may be mid-line
            break
    return n


def _workers(pid: int) -> list[int]:
    """The pool's worker processes of ``pid`` (not multiprocessing's resource tracker)."""
    out = subprocess.run(
        ["ps", "-ww", "--ppid", str(pid), "-o", "pid=,args="], capture_output=True, text=True
    )
    rows = [line.split(None, 1) for line in out.stdout.splitlines() if line.strip()]
    return [int(r[0]) for r in rows if len(r) == 2 and "spawn_main" in r[1]]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def _two_logs_with_steps(out: Path) -> bool:
    logs = list(out.glob("cells/*/runs/*.jsonl"))
    return len(logs) == 2 and min(_steps(p) for p in logs) >= 2


def _two_ray_tasks(out: Path) -> bool:
    """Ray runs a cell in a temporary folder on its node: its processes show it started."""
    ps = subprocess.run(["ps", "-ww", "-eo", "args="], capture_output=True, text=True)
    return sum(line.startswith("ray::cell_task") for line in ps.stdout.splitlines()) >= 2


def _stop_when(
    started: Callable[[Path], bool],
    out: Path,
    *args: str,
    grid: str = GRID,
    env: dict[str, str] | None = None,
    again_after: float | None = None,
    sig: int = signal.SIGTERM,
) -> tuple[subprocess.Popen[str], list[int], str]:
    """Start `kgagent bench` on ``grid``, send it ``sig`` once ``started(out)``; with
    ``again_after``, again that many seconds later (it must still be running)."""
    spec = out.parent / "grid.toml"
    spec.write_text(grid)
    cmd = [sys.executable, "-m", "kgagent.cli.main", "bench", str(spec), "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if started(out):
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        workers = _workers(proc.pid)
        proc.send_signal(sig)
        if again_after is not None:
            time.sleep(again_after)
            assert proc.poll() is None, "the first signal ended steps that never end"
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, workers, err


def _cells(out: Path) -> list[dict[str, str]]:
    with (out / "cells.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_the_progress_bar_counts_an_interrupted_cell_as_not_done(capsys) -> None:  # noqa: ANN001
    """3 cells done and 1 interrupted of 4: the bar stands at 3/4, not 4/4 (100 %)."""
    from kgagent.bench.progress import GridProgress

    progress = GridProgress(4, label="bench t")
    progress.start("", 4)
    for status in ("done", "done", "done", "interrupted"):
        progress.finish({"key": "k", "status": status})
    progress.close()
    last = capsys.readouterr().err.strip().splitlines()[-1]  # plain lines: not a terminal
    assert last == "bench t: 3/4 cells | done 3, running 0, failed 0, interrupted 1", last


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_stops_the_grid_and_writes_its_results(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "results"
    proc, workers, err = _stop_when(_two_logs_with_steps, out, "--jobs", "2", sig=sig)
    assert proc.returncode == 128 + sig, err  # the shell's code for the signal, as `play`'s
    assert "stopping: 2 running cell(s) finish their current step" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: interrupted: 0 cell(s) finished in this run, 2 interrupted"), err
    rows = _cells(out)
    assert [r["status"] for r in rows] == ["interrupted", "interrupted"]
    assert all(r["error"].startswith("interrupted: round 0 stopped after ") for r in rows), rows
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()
    assert not (out / "bench.lock").exists()  # the folder takes the next command's cells
    bars = [line for line in err.splitlines() if "interrupted 2" in line]
    assert bars and all(": 0/2 cells | " in line for line in bars), bars  # none is done
    assert len(workers) == 2 and not any(_alive(p) for p in workers)  # the pool waited
    for log in out.glob("cells/*/runs/*.jsonl"):  # each run wrote its summary
        last = json.loads(log.read_text().splitlines()[-1])
        assert last["type"] == "summary" and last["stopped"] == "interrupted"


@pytest.mark.slow
def test_sigterm_on_ray_cancels_the_tasks_and_writes_the_results(tmp_path: Path) -> None:
    """`--ray auto` with no cluster starts one in the command, whose own SIGTERM handler
    would end the command at once, without the results."""
    pytest.importorskip("ray")
    out = tmp_path / "results"
    proc, _, err = _stop_when(_two_ray_tasks, out, "--ray", "auto")
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted: 0 cell(s) finished"), err
    assert [r["status"] for r in _cells(out)] == ["not run", "not run"]
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()


#: Games whose steps never end once they have begun hanging (after 2 frames): Sleep-v0
#: sleeps (Ctrl-C ends it), Stuck-v0 takes no Ctrl-C either (as native code would not).
#: Each says it hangs with a file in $HANG_DIR.
HANG_GAMES = """
import os, time
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Hang(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode="rgb_array", stuck=False):
        self.render_mode, self.stuck, self.calls = render_mode, stuck, 0
        self.action_space = spaces.Discrete(4)
        self.observation_space = spaces.Box(0, 255, (64, 64, 3), np.uint8)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self.render(), {}

    def render(self):
        self.calls += 1
        if self.calls > 2:
            self.hang()
        img = np.full((64, 64, 3), 30, np.uint8)
        img[4:20, 2:14] = (240, 220, 40)
        return img

    def step(self, action):
        self.hang()

    def hang(self):
        mark = os.path.join(os.environ["HANG_DIR"], f"{os.getpid()}.hangs")
        if not os.path.exists(mark):  # the time it began hanging
            open(mark, "w").close()
        while True:
            try:
                time.sleep(3600)
            except KeyboardInterrupt:
                if not self.stuck:
                    raise


gym.register("Sleep-v0", entry_point=Hang)
gym.register("Stuck-v0", entry_point=Hang, kwargs={"stuck": True})
"""


def test_a_second_sigterm_ends_steps_that_never_end(tmp_path: Path) -> None:
    """The cells are recorded as interrupted (the stuck one: killed), the command exits in
    seconds with the results written, and no worker is left."""
    pytest.importorskip("gymnasium")
    (tmp_path / "hanggames.py").write_text(HANG_GAMES)
    hangs = tmp_path / "hangs"
    hangs.mkdir()
    grid = GRID.replace(
        'envs = ["cardgame"]', 'envs = ["gym:hanggames:Sleep-v0", "gym:hanggames:Stuck-v0"]'
    )
    grid = grid.replace('methods = ["full", "no_graph"]', 'methods = ["full"]')
    env = {"HANG_DIR": str(hangs), "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = tmp_path / "results"
    proc, workers, err = _stop_when(
        lambda _: len(list(hangs.iterdir())) >= 2,
        out,
        "--jobs",
        "2",
        grid=grid,
        env=env,
        again_after=2.0,
    )
    hung = max(p.stat().st_mtime for p in hangs.iterdir())
    ended_in = time.time() - hung - 2.0  # seconds from the second SIGTERM to the exit
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "ending 2 running cell(s) now" in err
    assert err.strip().splitlines()[-1].startswith("error: interrupted: 0 cell(s) finished"), err
    rows = {r["env"]: r for r in _cells(out)}
    assert [r["status"] for r in rows.values()] == ["interrupted", "interrupted"]
    assert (
        rows["gym:hanggames:Sleep-v0"]["error"]
        == "interrupted: stopped by Ctrl-C, SIGTERM or SIGHUP"
    )
    assert rows["gym:hanggames:Stuck-v0"]["error"].startswith(
        "interrupted: killed after a second stop signal"
    )
    assert (out / "report.md").is_file()
    assert len(workers) == 2 and not any(_alive(p) for p in workers)
    assert ended_in < 30, ended_in  # 5 s for the cells to abandon their steps, then killed
