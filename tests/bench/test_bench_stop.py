"""SIGTERM to `kgagent bench` (what `kill`, `timeout` and job schedulers send) stops it as
Ctrl-C does: locally the running cells finish their step and are recorded as
interrupted, on Ray the tasks are cancelled; the results folder is written and the
workers are gone."""

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
    started: Callable[[Path], bool], out: Path, *args: str
) -> tuple[subprocess.Popen[str], list[int], str]:
    """Start `kgagent bench` on GRID, SIGTERM it once ``started(out)``."""
    spec = out.parent / "grid.toml"
    spec.write_text(GRID)
    cmd = [sys.executable, "-m", "kgagent.cli.main", "bench", str(spec), "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if started(out):
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        workers = _workers(proc.pid)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, workers, err


def _cells(out: Path) -> list[dict[str, str]]:
    with (out / "cells.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_sigterm_stops_the_grid_and_writes_its_results(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc, workers, err = _stop_when(_two_logs_with_steps, out, "--jobs", "2")
    assert proc.returncode != 0
    assert "stopping: 2 running cell(s) finish their current step" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: interrupted: 0 cell(s) finished in this run, 2 interrupted"), err
    rows = _cells(out)
    assert [r["status"] for r in rows] == ["interrupted", "interrupted"]
    assert all(r["error"].startswith("interrupted: round 0 stopped after ") for r in rows), rows
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()
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
    assert proc.returncode != 0
    assert err.strip().splitlines()[-1].startswith("error: interrupted: 0 cell(s) finished"), err
    assert [r["status"] for r in _cells(out)] == ["not run", "not run"]
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()
