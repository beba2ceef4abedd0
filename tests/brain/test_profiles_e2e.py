"""Full runs against each server profile: skills are learnt, nothing crashes, cost is reported.

Each run is the real :class:`Runner` on the built-in card game (pixel encoder,
OpenCV segmenter) with a VLM brain built from the config, pointing at the local
fake server of one profile (tests/brain/fake_endpoint.py).
"""

from __future__ import annotations

import socket

import pytest

from kgagent.agent.runner import Runner
from kgagent.brain import make_brain
from kgagent.brain.client import ENDPOINTS
from kgagent.config import Config
from kgagent.runlog_read import read_log

from .fake_endpoint import PROFILES, FakeEndpoint

STEPS = 50


def config(base_url: str, model: str, **brain) -> Config:
    c = Config()
    c.perception.encoder = "pixel"
    c.perception.segmenter = "opencv"
    c.run.env = "cardgame"
    c.run.seed = 3
    b = c.brain
    b.kind, b.base_url, b.model = "vlm", base_url, model
    b.api_key_env = "KGAGENT_TEST_UNSET_KEY"
    b.timeout_s, b.max_retries, b.backoff_s = 2.0, 1, 0.01
    b.retry_after_cap_s = 0.1
    b.image_max_side = 64
    for k, v in brain.items():
        setattr(b, k, v)
    return c


def run(cfg: Config, tmp_path, steps: int = STEPS):
    logs: list[str] = []
    brain = make_brain(cfg.brain, log=logs.append)
    summary = Runner(
        cfg, memory_path=tmp_path / "mem", brain=brain, progress=False, log=logs.append
    ).run(steps)
    return summary, brain, logs


#: profile → model name (a priced OpenAI model, or a local model that costs nothing)
MODELS = {
    "openai": "gpt-4o-mini",
    "vllm": "Qwen/Qwen2.5-VL-7B-Instruct",
    "ollama": "qwen2.5vl",
    "llamacpp": "local",
    "lmstudio": "qwen2-vl-7b-instruct",
    "plain": "gpt-4.1-mini",
    "garbage": "local",
    "slow": "local",
}


@pytest.mark.parametrize("name", list(MODELS))
def test_fifty_steps_against_each_server_profile(name, tmp_path):
    ep = FakeEndpoint(PROFILES[name]).start()
    try:
        extra = {"timeout_s": 0.3} if name == "slow" else {}
        cfg = config(ep.base_url, MODELS[name], **extra)
        s, brain, logs = run(cfg, tmp_path)
        mode = brain.chat.mode  # what the process remembered for this endpoint
    finally:
        ep.stop()
        ENDPOINTS.modes.pop((ep.base_url, MODELS[name]), None)
    u = brain.usage
    assert s.stopped == "steps" and s.steps == STEPS
    assert s.library_size > 0
    assert s.tokens == u.tokens and s.cost_usd == pytest.approx(u.cost_usd)
    assert u.requests > 0 and len(ep.requests) == u.requests
    if name in ("plain",):
        assert u.estimated_tokens == u.tokens > 0  # no usage: estimated, and marked
    elif name in ("garbage", "slow"):
        pass  # replies unusable or too late: few tokens, all offline answers
    else:
        assert u.tokens > 0 and u.estimated_tokens < u.tokens
    if MODELS[name].startswith("gpt-"):
        assert s.cost_usd > 0
    else:
        assert s.cost_usd == 0.0  # a local server
    # The loop takes the brain's notes into each step's record: read them from the log.
    (log,) = (tmp_path / "mem" / "runs").glob("*.jsonl")
    notes = [n for step in read_log(log)[1] for n in step.get("brain_notes") or []]
    if name in ("garbage", "slow"):
        assert u.failed_calls >= 3 and brain.breaker.trips >= 1
        assert u.offline_calls > u.failed_calls  # the pause answered calls without requests
        assert sum("role calls in a row failed" in line for line in logs) == 1
        assert any("offline answer" in n for n in notes)
    else:
        assert u.failed_calls <= u.calls // 10, notes[:5]
    if name in ("ollama", "llamacpp"):
        assert mode == "json_schema"
        assert sum("refused tools" in line for line in logs) == 1


def test_dead_endpoint_run_continues_offline_when_offline_play_is_chosen(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = config(f"http://127.0.0.1:{port}/v1", "local")
    cfg.brain.on_unreachable = "offline"
    s, brain, logs = run(cfg, tmp_path)
    assert s.stopped == "steps" and s.library_size > 0
    assert sum("WARNING: the VLM endpoint" in line for line in logs) == 1
    assert s.tokens == 0 and s.cost_usd == 0.0  # nothing was answered, nothing billed
    assert brain.breaker.trips >= 1
    assert brain.usage.requests < brain.usage.calls  # paused calls sent nothing
    assert sum("role calls in a row failed" in line for line in logs) == 1


def test_budget_stops_the_run(tmp_path):
    ep = FakeEndpoint(PROFILES["plain"]).start()  # no usage: the cap works on estimates
    try:
        cfg = config(ep.base_url, "gpt-4o", budget_usd=0.02)
        s, brain, logs = run(cfg, tmp_path, steps=200)
    finally:
        ep.stop()
    assert s.stopped == "budget" and 0 < s.steps < 200
    assert 0 < s.cost_usd <= 0.02 and brain.usage.estimated_tokens == brain.usage.tokens
    assert s.brain_unanswered_calls == brain.usage.unanswered_calls == 1  # the refused call
    assert "1 unanswered (the run stopped during it)" in s.format_table()
    assert any(line.startswith("stopping: VLM budget of $0.0200 reached") for line in logs)
