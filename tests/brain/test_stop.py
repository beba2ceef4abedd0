"""The first Ctrl-C stops the requests: the one in flight is abandoned within seconds, no
request, retry or backoff wait follows, the step's remaining role calls are answered
offline (noted), and the summary is written."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from command_lines import play_command

from kgagent.agent.runner import Runner
from kgagent.brain import make_brain
from kgagent.runlog_read import read_log

from .fake_endpoint import PROFILES, FakeEndpoint, Reply
from .helpers import brain_for, skill, transition
from .test_profiles_e2e import config

#: the slow profile, as slow as the user test's server: 30 s a reply
SLOW = dataclasses.replace(PROFILES["slow"], delay_s=30.0)


def interrupt_when(ready, sent: list[float], after_s: float = 0.3) -> threading.Thread:
    """Send this process SIGINT once ``ready()`` holds (the runner's handler takes it)."""

    def go() -> None:
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(after_s)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def run_and_interrupt(ep: FakeEndpoint, tmp_path: Path, **brain):
    cfg = config(ep.base_url, "local", **brain)
    logs: list[str] = []
    b = make_brain(cfg.brain, log=logs.append)
    sent: list[float] = []
    at_signal: list[int] = []

    def ready() -> bool:
        if ep.requests:
            at_signal.append(len(ep.requests))
            return True
        return False

    t = interrupt_when(ready, sent)
    runner = Runner(cfg, memory_path=tmp_path / "mem", brain=b, progress=False, log=logs.append)
    summary = runner.run(50)
    took = time.monotonic() - sent[0]
    t.join()
    return summary, b, logs, took


@pytest.mark.parametrize(
    "case",
    ["slow reply", "retry-after wait"],
)
def test_first_ctrl_c_abandons_the_request_and_asks_nothing_more(tmp_path, case):
    ep = FakeEndpoint(SLOW if case == "slow reply" else None).start()
    if case == "retry-after wait":
        ep.default = Reply(status=429, headers={"Retry-After": "30"})
    try:
        s, b, logs, took = run_and_interrupt(
            ep, tmp_path, timeout_s=60.0, retry_after_cap_s=30.0, max_retries=3
        )
        sent = len(ep.requests)
        time.sleep(0.5)
        assert len(ep.requests) == sent  # nothing went out after the run
    finally:
        ep.stop()
    assert took < 5.0, took  # not the 30 s reply or wait, let alone three of them
    assert sent == 1  # no new request, no retry after the Ctrl-C
    assert s.stopped == "interrupted" and s.steps >= 1
    assert any(line.startswith("interrupted: finishing the current step") for line in logs)
    (log,) = (tmp_path / "mem" / "runs").glob("*.jsonl")
    _, steps, summary = read_log(log)
    assert summary is not None and summary["stopped"] == "interrupted"
    notes = [n for step in steps for n in step.get("brain_notes") or []]
    cut = "the request in flight" if case == "slow reply" else "the wait before a retry"
    assert any(f"the run is stopping: {cut} was abandoned" in n for n in notes), notes
    assert b.usage.failed_calls == 0 and not b.breaker.is_open  # not the endpoint's fault
    assert summary["brain_requests"] == 1


def test_calls_after_the_stop_are_answered_offline_without_a_request(endpoint):
    b = brain_for(endpoint)
    b.interrupt()  # outside a request: nothing to abandon, nothing raised
    tr = transition()
    assert b.evaluate(skill(), tr) == b.offline.evaluate(skill(), tr)
    assert not endpoint.requests and b.usage.offline_calls == 1 and b.usage.failed_calls == 0
    assert b.take_notes() == ["evaluate: offline answer (the run is stopping: no new request)"]


def test_ctrl_c_in_the_cli_during_a_slow_reply(tmp_path):
    """`kgagent play` against a 30 s server: one Ctrl-C, and it stops within seconds."""
    ep = FakeEndpoint(SLOW).start()
    logs = tmp_path / "logs"
    cmd = play_command(
        tmp_path / "mem",
        "--log-dir", str(logs), "--brain-url", ep.base_url, "--brain-model", "local",
        "--set", "brain.api_key_env=KGAGENT_TEST_UNSET_KEY",
        steps=50, env="cardgame",
    )  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ep.requests and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert ep.requests, proc.communicate(timeout=10)[1] if proc.poll() is not None else ""
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
        ep.stop()
    assert proc.returncode == 128 + signal.SIGINT, err  # stopped cleanly, by Ctrl-C
    assert took < 10.0, (took, err)
    assert len(ep.requests) == 1
    assert "interrupted: finishing the current step" in err
    (log,) = logs.glob("*.jsonl")
    assert read_log(log)[2]["stopped"] == "interrupted"
