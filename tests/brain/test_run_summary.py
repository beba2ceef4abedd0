"""What the run summary says about the brain, and a run whose endpoint is set up wrong.

The summary (table and JSON, `kgagent runs show`) names the brain (kind, model,
endpoint) and its role calls, requests, failed calls and calls answered offline, and
marks a cost computed from estimated tokens. Logs written before these figures read
as before. A refused key or a wrong base URL on the first calls stops the run in one
line.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
from command_lines import play_command

from kgagent.agent.runner import Runner
from kgagent.brain import EndpointUnusable, make_brain
from kgagent.brain.offline import OfflineBrain
from kgagent.config import Config
from kgagent.runlog import RunSummary, summarise
from kgagent.runlog_read import read_log

from .fake_endpoint import PROFILES, FakeEndpoint, Reply
from .test_profiles_e2e import config, run


def the_log(tmp_path: Path) -> Path:
    (log,) = (tmp_path / "mem" / "runs").glob("*.jsonl")
    return log


def test_summary_names_the_brain_and_its_calls_and_marks_an_estimated_cost(tmp_path):
    ep = FakeEndpoint(PROFILES["plain"]).start()  # no usage: tokens and cost are estimated
    try:
        cfg = config(ep.base_url, "gpt-4.1-mini")
        s, brain, _ = run(cfg, tmp_path, steps=30)
    finally:
        ep.stop()
    u = brain.usage
    assert (s.brain, s.brain_model, s.brain_endpoint) == ("vlm", "gpt-4.1-mini", ep.base_url)
    assert s.brain_calls == u.calls > 0 and s.brain_requests == u.requests == len(ep.requests)
    assert s.brain_failed_calls == u.failed_calls and s.brain_offline_calls == u.offline_calls
    assert s.cost_estimated and s.cost_usd > 0
    table = s.format_table()
    assert f"vlm: model gpt-4.1-mini at {ep.base_url}" in table
    assert f"{u.calls}: {u.requests} requests (" in table and f", {u.failed_calls} failed," in table
    assert s.brain_retries == u.retries and s.brain_rate_limited == u.rate_limited > 0
    assert "after HTTP 429" in table  # the bare proxy rate-limits every 7th request
    assert "100 steps, estimated: replies without token counts)" in table
    line = read_log(the_log(tmp_path))[2]
    assert line["brain_requests"] == u.requests and line["cost_estimated"] is True
    assert line["brain_endpoint"] == ep.base_url


def test_the_step_log_and_the_summary_keep_the_tokens_spent_thinking(tmp_path):
    thinking = dataclasses.replace(PROFILES["openai"], thinking_share=0.5, refuse_every=0)
    ep = FakeEndpoint(thinking).start()
    try:
        s, brain, _ = run(config(ep.base_url, "gpt-4o-mini"), tmp_path, steps=12)
    finally:
        ep.stop()
    _, steps, summary = read_log(the_log(tmp_path))
    thought = brain.usage.reasoning_tokens
    assert 0 < thought < brain.usage.completion_tokens
    assert sum(ln["reasoning_tokens"] for ln in steps) == thought == s.reasoning_tokens
    assert f"({thought} thinking)" in s.format_table()
    assert summary is not None and summary["reasoning_tokens"] == thought


def test_an_offline_run_says_so(tmp_path):
    cfg = Config()
    cfg.perception.encoder, cfg.perception.segmenter = "pixel", "opencv"
    cfg.run.env = "cardgame"
    brain = OfflineBrain(cfg.brain)
    s = Runner(cfg, memory_path=tmp_path / "mem", brain=brain, progress=False, log=print).run(5)
    assert (s.brain, s.brain_model, s.brain_endpoint, s.brain_requests) == (
        "offline",
        None,
        None,
        0,
    )
    assert s.brain_offline_calls == s.brain_calls == brain.usage.calls
    assert not s.cost_estimated and "estimated" not in s.format_table()
    assert "(answered offline, no requests)" in s.format_table()


def test_old_and_rebuilt_summaries_read_without_the_brain_figures():
    old = {  # a summary line written before the brain figures existed
        "env": "cardgame",
        "seed": 0,
        "ablation": "full",
        "steps": 3,
        "progression": 0,
        "score": 0,
        "alive": True,
        "err": 0.5,
        "executions": 2,
        "valid_executions": 1,
        "actions": 2,
        "tokens": 10,
        "cost_usd": 0.001,
        "cost_per_100_steps": 0.03,
        "library_size": 1,
        "skills_augmented": 1,
        "skills_pruned": 0,
        "nodes": 2,
        "skill_edges": 1,
        "similarity_edges": 0,
        "estimated_tokens": 4,
    }
    s = RunSummary(**old)
    table = s.format_table()
    assert s.brain is None and "role calls" not in table and "\nbrain " not in table
    assert "estimated: replies without token counts" in table  # from estimated_tokens
    rebuilt = summarise(
        [{"tokens": 5, "estimated_tokens": 0, "cost_usd": 0.0}],
        env="x",
        seed=0,
        ablation="full",
        stats=None,
        truth={},
        stopped="incomplete",
        duration_s=0.0,
    )
    assert rebuilt.brain is None and rebuilt.brain_requests is None
    assert "role calls" not in rebuilt.format_table()
    vlm = RunSummary(**{**old, "brain": "vlm", "brain_model": "m"})  # figures missing: "-"
    assert "role calls        -: - requests, - failed, - answered offline" in vlm.format_table()


def brain_row(**figures) -> str:
    """The summary table's ``role calls`` row for these brain figures."""
    brain = {"kind": "vlm", "model": "m", "endpoint": "http://h/v1", **figures}
    s = summarise(
        [], env="x", seed=0, ablation="full", stats=None, truth={}, stopped="steps",
        duration_s=0.0, brain=brain,
    )  # fmt: skip
    (row,) = [line for line in s.format_table().splitlines() if line.startswith("role calls")]
    return row.removeprefix("role calls").strip()


def test_role_calls_count_retries_rate_limits_and_calls_left_unanswered():
    none = dict(failed_calls=0, offline_calls=0)
    assert brain_row(calls=1, requests=1, **none) == "1: 1 request, 0 failed, 0 answered offline"
    limited = dict(retries=4, rate_limited=4, rate_limit_wait_s=4.0)
    assert brain_row(calls=4, requests=8, **limited, **none).startswith(
        "4: 8 requests (4 retried after HTTP 429, 4.0 s waited), 0 failed"
    )
    mixed = dict(retries=5, rate_limited=4, rate_limit_wait_s=4.0)
    assert "9 requests (5 retried, 4 of them after HTTP 429, 4.0 s waited)" in brain_row(
        calls=4, requests=9, **mixed, **none
    )
    assert "3 requests (1 retried)," in brain_row(calls=2, requests=3, retries=1, **none)
    # the call the budget refused: calls = answered by the model + offline + unanswered
    stopped = brain_row(calls=10, requests=7, failed_calls=0, offline_calls=2, unanswered_calls=1)
    assert stopped == (
        "10: 7 requests, 0 failed, 2 answered offline, 1 unanswered (the run stopped during it)"
    )


def test_a_refused_key_stops_the_run_in_one_line(tmp_path):
    ep = FakeEndpoint().start()
    ep.default = Reply(status=401, message="Incorrect API key provided")
    try:
        cfg = config(ep.base_url, "local")
        brain = make_brain(cfg.brain, log=lambda m: None)
        runner = Runner(
            cfg, memory_path=tmp_path / "mem", brain=brain, progress=False, log=lambda m: None
        )
        with pytest.raises(EndpointUnusable, match="refused the API key"):
            runner.run(200)
    finally:
        ep.stop()
    assert len(ep.requests) == 1
    _, steps, summary = read_log(the_log(tmp_path))
    assert summary["stopped"] == "endpoint" and summary["steps"] == len(steps) < 200
    assert summary["brain_unanswered_calls"] == 1  # the call the run stopped during


def test_on_failure_stop_ends_the_run_at_the_first_failed_call(tmp_path):
    """`brain.on_failure = "stop"`: a benchmark whose answers must all come from the model
    ends at the first role call the endpoint cannot answer, in one line; the default
    answers it offline and goes on."""
    ep = FakeEndpoint().start()  # its default reply: text that is no answer
    try:
        cfg = config(ep.base_url, "local", on_failure="stop")
        brain = make_brain(cfg.brain, log=lambda m: None)
        runner = Runner(
            cfg, memory_path=tmp_path / "mem", brain=brain, progress=False, log=lambda m: None
        )
        with pytest.raises(EndpointUnusable) as e:
            runner.run(50)
        assert str(e.value).startswith("the run stopped: ")
        assert str(e.value).endswith("(brain.on_failure=stop)") and "\n" not in str(e.value)
        _, steps, summary = read_log(the_log(tmp_path))
        assert summary["stopped"] == "endpoint" and summary["steps"] == len(steps) < 50
        assert summary["brain_offline_calls"] == 0 and summary["brain_failed_calls"] == 1
        more = summary["steps"] + 3  # past the step whose call stopped the other run
        goes_on, _, _ = run(config(ep.base_url, "local"), tmp_path / "default", steps=more)
        assert goes_on.stopped == "steps" and goes_on.brain_offline_calls > 0
    finally:
        ep.stop()


def test_a_killed_vlm_runs_rebuilt_summary_names_its_brain() -> None:
    """A run killed before its summary line: the header says which model and URL; the
    counts were never written, and the table shows them as unknown."""
    from kgagent.runlog_read import brain_of_header

    header = {"brain": "vlm", "config": {"brain": {"model": "qwen", "base_url": "http://h/v1"}}}
    brain = brain_of_header(header)
    assert brain == {"kind": "vlm", "model": "qwen", "endpoint": "http://h/v1"}
    s = summarise(
        [], env="x", seed=0, ablation="full", stats=None, truth={}, stopped="incomplete",
        duration_s=0.0, brain=brain,
    )  # fmt: skip
    table = s.format_table()
    assert re.search(r"^brain +vlm: model qwen at http://h/v1$", table, re.M)
    assert re.search(r"^role calls +-: - requests, - failed, - answered offline$", table, re.M)
    assert brain_of_header({"brain": "?"}) is None
    assert brain_of_header({"brain": "offline", "config": {}}) == {"kind": "offline"}
    assert brain_of_header({"brain": "vlm", "config": ["edited"]}) == {"kind": "vlm"}


def play(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = play_command(tmp_path / "mem", "--format", "json", *args, steps=100, env="cardgame")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_cli_base_url_without_v1_exits_with_the_hint(tmp_path):
    ep = FakeEndpoint().start()
    url = ep.base_url.removesuffix("/v1")
    try:
        p = play(tmp_path, "--brain-url", url, "--set", "brain.api_key_env=KGAGENT_UNSET_KEY")
    finally:
        ep.stop()
    assert p.returncode == 1, p.stderr
    (error,) = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert f"did you mean {url}/v1?" in error and "Traceback" not in p.stderr
    assert len(ep.requests) == 1


def test_cli_endpoint_never_reached_exits_with_one_line(tmp_path):
    """Nothing listens on the port: the run stops at the first role call, exit 1, one line
    that names the URL and what to check; the summary says why it stopped."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    p = play(tmp_path, "--brain-url", url, "--set", "brain.api_key_env=KGAGENT_UNSET_KEY",
             "--set", "brain.backoff_s=0")  # fmt: skip
    assert p.returncode == 1, p.stderr[-2000:]
    (error,) = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(f"error: the run stopped: the VLM endpoint {url} could not be ")
    assert "Connection refused" in error and "is the server running" in error
    assert "Traceback" not in p.stderr
    _, steps, summary = read_log(the_log(tmp_path))
    assert summary["stopped"] == "endpoint" and summary["steps"] == len(steps) < 100
    assert summary["brain_failed_calls"] == 0 and summary["brain_unanswered_calls"] == 1
    (printed,) = json.loads(p.stdout)  # what the run did is printed before the error line
    assert printed["stopped"] == "endpoint" and printed["steps"] == summary["steps"]
    # brain.on_unreachable=offline: the run plays on offline, and says so once
    p = play(tmp_path / "offline", "--brain-url", url, "--set", "brain.api_key_env=KGAGENT_UNSET_KEY",
             "--set", "brain.backoff_s=0", "--set", "brain.on_unreachable=offline")  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stderr.count("brain: WARNING: the VLM endpoint") == 1, p.stderr[-2000:]
    _, steps, summary = read_log(the_log(tmp_path / "offline"))
    assert summary["steps"] == 100 and summary["brain_offline_calls"] > 0


def test_cli_refuses_a_key_given_as_the_variable_name_without_showing_it(tmp_path):
    p = play(tmp_path, "--set", "brain.api_key_env=sk-abc123secret")
    assert p.returncode == 1
    assert "sk-abc123secret" not in p.stderr + p.stdout and "looks like a key" in p.stderr
    assert not (tmp_path / "mem" / "runs").exists()  # nothing was written


def test_cli_json_summary_has_the_brain(tmp_path):
    p = play(tmp_path, "--steps", "3", "--set", "brain.kind=offline")
    assert p.returncode == 0, p.stderr
    (d,) = json.loads(p.stdout)
    assert d["brain"] == "offline" and d["brain_calls"] is not None
    assert d["cost_estimated"] is False
