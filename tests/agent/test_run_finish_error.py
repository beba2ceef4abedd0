"""A run whose end-of-run writes fail (a full disk refuses the probation rewrites that
`Agent.finish` restores) still writes its summary line and hands its summary to the CLI,
which prints it before the error line."""

from __future__ import annotations

import pytest

from kgagent.agent.loop import Agent
from kgagent.agent.runner import Runner
from kgagent.errors import KGAgentError
from kgagent.runlog_read import read_log


class Full(KGAgentError):
    pass


def _refuse(*_a, **_k) -> None:
    raise Full("only 1.00 MiB free on the file system of M, below the 2.00 MiB reserve")


def _run(cfg, tmp_path) -> tuple[Runner, pytest.ExceptionInfo]:
    cfg.run.env = "civgame"
    runner = Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda _: None)
    with pytest.raises(Full) as e:
        runner.run(4)
    return runner, e


def test_a_failed_end_of_run_write_keeps_the_summary(cfg, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(Agent, "finish", _refuse)
    runner, _ = _run(cfg, tmp_path)
    s = runner.last_summary
    assert s is not None and s.steps == 4 and s.stopped == "error" and "1.00 MiB" in s.error
    _, steps, summary = read_log(s.log_path)
    assert len(steps) == 4 and summary["stopped"] == "error"


def test_the_steps_error_goes_first_when_the_end_fails_too(cfg, tmp_path, monkeypatch) -> None:
    real = Agent.step
    calls = {"n": 0}

    def step(self, screen):
        calls["n"] += 1
        if calls["n"] == 3:
            raise Full("only 1.00 MiB free, in the third step")
        return real(self, screen)

    monkeypatch.setattr(Agent, "step", step)
    monkeypatch.setattr(Agent, "finish", _refuse)
    runner, e = _run(cfg, tmp_path)
    assert "third step" in str(e.value)
    s = runner.last_summary
    assert s is not None and s.steps == 2 and "third step" in s.error
    _, steps, summary = read_log(s.log_path)
    assert len(steps) == 2 and summary["stopped"] == "error"
