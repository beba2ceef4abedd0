"""SIGHUP (the terminal closed) during `kgagent play` stops it as SIGTERM does: the current
step finishes, the step log gets its summary line, and the exit code is 129. Writing to a
closed terminal, or to a pipe whose reader went with it, fails: that costs neither the
summary line nor a traceback."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # the writer may be mid-line
            break
    return out


def _play(mem: Path, logs: Path, *, quiet: bool = True) -> list[str]:
    return [
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
        *(["--quiet"] if quiet else []),
    ]


def _wait_for_steps(proc: subprocess.Popen, logs: Path, n: int, drain: int | None = None) -> Path:
    """The step log, once it holds ``n`` steps (``drain``: a terminal's side to read meanwhile,
    so that the run never waits on a full terminal)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if drain is not None:
            while select.select([drain], [], [], 0)[0]:
                try:
                    os.read(drain, 1 << 16)
                except OSError:
                    break
        found = sorted(logs.glob("*.jsonl")) if logs.exists() else []
        if found and sum(r.get("type") == "step" for r in _lines(found[0])) >= n:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no {n} steps logged (exit code {proc.poll()})")


def _summarised(log: Path) -> None:
    rows = _lines(log)
    assert rows[-1]["type"] == "summary" and rows[-1]["stopped"] == "interrupted", rows[-1]
    steps = [r for r in rows if r.get("type") == "step"]
    assert rows[-1]["steps"] == len(steps) >= 3


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _second_hup_once_summarised(proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if _lines(log)[-1]["type"] == "summary":
            proc.send_signal(signal.SIGHUP)
            return
        time.sleep(0.005)


@pytest.mark.parametrize("second", ["in_the_step", "as_the_run_ends"])
def test_sighup_finishes_the_step_and_writes_the_summary(tmp_path: Path, second: str) -> None:
    """A second SIGHUP changes nothing, whether it comes while the step finishes or once
    the run has written its summary and is putting itself away (a shell that hangs up its
    jobs as the terminal goes): the summary table is printed and the exit code is the
    first signal's, not death by SIGHUP."""
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        _play(tmp_path / "mem", logs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        log = _wait_for_steps(proc, logs, 3)
        proc.send_signal(signal.SIGHUP)
        if second == "in_the_step":
            time.sleep(0.05)
            proc.send_signal(signal.SIGHUP)
        else:
            _second_hup_once_summarised(proc, log)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    _summarised(log)
    assert "SIGHUP: finishing the current step, then stopping" in err
    assert "Traceback" not in err and "(interrupted)" in out, err  # the summary table
    assert proc.returncode == 128 + signal.SIGHUP, err


def test_sighup_after_the_output_pipes_lost_their_reader(tmp_path: Path) -> None:
    """``kgagent play 2>&1 | tee``, the terminal closed: the pipes' reader goes first."""
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        _play(tmp_path / "mem", logs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        log = _wait_for_steps(proc, logs, 3)
        proc.stdout.close()
        proc.stderr.close()
        proc.send_signal(signal.SIGHUP)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    _summarised(log)
    assert proc.returncode == 128 + signal.SIGHUP


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "progress-bar"])
def test_sighup_after_the_terminal_hung_up(tmp_path: Path, quiet: bool) -> None:
    """A real terminal (a pty) closed before the signal: writes to it fail with EIO."""
    logs = tmp_path / "logs"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        _play(tmp_path / "mem", logs, quiet=quiet),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(),
        start_new_session=True,
    )
    os.close(slave)
    try:
        log = _wait_for_steps(proc, logs, 3, drain=master)
        os.close(master)  # the terminal's window closed: the pty hangs up
        master = -1
        proc.send_signal(signal.SIGHUP)
        proc.wait(timeout=120)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
    _summarised(log)
    assert proc.returncode == 128 + signal.SIGHUP


def test_a_sighup_ignored_by_nohup_stays_ignored(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        _play(tmp_path / "mem", logs),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    try:
        log = _wait_for_steps(proc, logs, 2)
        proc.send_signal(signal.SIGHUP)
        n = sum(r.get("type") == "step" for r in _lines(log))
        _wait_for_steps(proc, logs, n + 2)  # it plays on
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    _summarised(log)
    assert "SIGHUP" not in err and proc.returncode == 128 + signal.SIGTERM, err
