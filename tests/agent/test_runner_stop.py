"""`Runner.stop()`: a run in a thread of its own (a notebook's, a GUI's), which no signal
reaches, stops after its current step as the first Ctrl-C stops one in the main thread."""

from __future__ import annotations

import threading
import time

from kgagent.agent.runner import Runner
from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.runlog_read import read_log


def _steps_logged(memory) -> int:
    logs = sorted((memory / "runs").glob("*.jsonl")) if (memory / "runs").is_dir() else []
    return sum('"type": "step"' in line for p in logs for line in p.read_text().splitlines())


def test_stop_from_another_thread_ends_a_run_in_a_thread_after_its_step(cfg, tmp_path) -> None:
    cfg.run.env = "civgame"
    said: list[str] = []
    runner = Runner(cfg, memory_path=tmp_path / "m", progress=False, log=said.append)
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(summary=runner.run(100000)))
    worker.start()
    deadline = time.monotonic() + 120
    while _steps_logged(tmp_path / "m") < 2 and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.is_alive(), "the run ended on its own"
    runner.stop()
    worker.join(60)
    assert not worker.is_alive(), "stop() did not end the run"
    s = out["summary"]
    assert s.stopped == "interrupted" and 2 <= s.steps < 100000
    assert runner.stop_signal is None  # no signal stopped it
    assert "stop asked: finishing the current step, then stopping" in said
    header, steps, summary = read_log(s.log_path)
    assert len(steps) == s.steps and summary["stopped"] == "interrupted"
    with Memory.open(tmp_path / "m", Config(), read_only=True) as m:  # closed: it opens
        assert m.stats().nodes >= 1
    # a later run on the same runner is not stopped by the stop of the one before
    again = runner.run(3)
    assert (again.steps, again.stopped) == (3, "steps")


def test_stop_before_run_stops_the_next_run_before_its_first_step(cfg, tmp_path) -> None:
    cfg.run.env = "cardgame"
    runner = Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda m: None)
    runner.stop()
    s = runner.run(50)
    assert (s.steps, s.stopped) == (0, "interrupted") and runner.stop_signal is None
