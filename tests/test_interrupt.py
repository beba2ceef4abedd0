"""Ctrl-C or SIGTERM during `kgagent play` stops after the current step: the summary is
written and the memory is consistent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.memory import Memory


def _lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # the writer may be mid-line
            break
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_stops_cleanly_after_the_current_step(tmp_path: Path, sig: int) -> None:
    mem, logs = tmp_path / "mem", tmp_path / "logs"
    cmd = [
        sys.executable,
        "-m",
        "kgagent.cli.main",
        "play",
        "--env",
        "civgame",
        "--steps",
        "100000",
        "--memory",
        str(mem),
        "--log-dir",
        str(logs),
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        log = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = sorted(logs.glob("*.jsonl")) if logs.exists() else []
            if found and sum(r.get("type") == "step" for r in _lines(found[0])) >= 3:
                log = found[0]
                break
            time.sleep(0.1)
        assert log is not None, proc.stderr.read() if proc.poll() is not None else "no steps logged"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = _lines(log)
    summary = rows[-1]
    assert summary["type"] == "summary" and summary["stopped"] == "interrupted", err
    steps = [r for r in rows if r.get("type") == "step"]
    assert summary["steps"] == len(steps) >= 3
    assert "interrupted" in (out + err)
    said = "interrupted: finishing" if sig == signal.SIGINT else "SIGTERM: finishing"
    # stopped cleanly; the exit code says by which signal (130, 143), as a shell's would
    assert said in err and proc.returncode == 128 + sig, err
    # The memory is consistent: graph and vectors agree, every logged state is there.
    with Memory.open(mem, Config()) as m:
        assert not any(m.consistency.get(k) for k in ("orphan_rows", "missing_vectors"))
        for r in steps:
            assert m.run_named("state_get", {"state": r["state_id"]})  # the state was committed
        assert m.stats().nodes >= 1


SLOW_START = '''
import os, time
import gymnasium as gym
import numpy as np


class SlowStart(gym.Env):
    """A game whose reset takes long: the run has not started its steps yet."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode="rgb_array"):
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        open(os.environ["SLOW_MARK"], "w").close()
        time.sleep(120)
        return np.zeros((64, 64, 3), np.uint8), {}

    def step(self, action):
        return np.zeros((64, 64, 3), np.uint8), 0.0, False, False, {}

    def render(self):
        return np.zeros((64, 64, 3), np.uint8)


gym.register("slowstart/SlowStart-v0", entry_point=SlowStart)
'''


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_stop_signal_before_the_first_step_closes_and_removes_the_new_memory(
    tmp_path: Path, sig: int
) -> None:
    """SIGTERM while `play` was still starting (opening the memory, starting the program)
    ended the process at once: no cleanup, exit -15, a half-started memory left behind."""
    pytest.importorskip("gymnasium")
    (tmp_path / "slowstart.py").write_text(SLOW_START)
    mark, mem = tmp_path / "in-reset", tmp_path / "mem"
    cmd = [sys.executable, "-m", "kgagent.cli.main", "play", "--quiet", "--steps", "5"]
    cmd += ["--env", "gym:slowstart:slowstart/SlowStart-v0", "--memory", str(mem)]
    env = {**os.environ, "SLOW_MARK": str(mark), "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not mark.exists():
            time.sleep(0.1)
        assert mark.exists(), proc.communicate()[1] if proc.poll() is not None else "no reset"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1].startswith(f"stopped by {name}"), err
    assert "Traceback" not in err
    assert not mem.exists()  # created by this run, which never started: removed
