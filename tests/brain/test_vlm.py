"""VLMBrain driven through the real openai SDK against a local fake endpoint."""

from __future__ import annotations

import base64
import io
import re
import socket
import time

import numpy as np
import pytest
from PIL import Image

from kgagent.actions import Operation
from kgagent.brain import make_brain, prompts
from kgagent.brain.base import Judgement, SkillText
from kgagent.brain.client import EndpointMemory
from kgagent.brain.offline import OfflineBrain
from kgagent.brain.vlm import VLMBrain, image_data_url, validate
from kgagent.config import BrainConfig
from kgagent.errors import BudgetExceeded, ConfigError

from .fake_endpoint import Reply, tool_reply
from .game_words import GAME_WORDS
from .helpers import (
    EVAL_OK,
    PRICE_IN,
    PRICE_OUT,
    brain_for,
    clusters,
    make_cfg,
    offline_of,
    skill,
    transition,
)


# ----------------------------------------------------------------- parsed replies
def test_describe_skill_parses_and_sends_images_and_forced_tool(endpoint):
    b = brain_for(endpoint)
    endpoint.push(
        tool_reply(
            "describe_skill",
            {"meaningful": True, "name": " open panel ", "description": "Opens the panel."},
        )
    )
    out = b.describe_skill([Operation("click", object_id="obj-3")], transition())
    assert out == SkillText("open panel", "Opens the panel.")

    (req,) = endpoint.requests
    body = req["body"]
    assert req["path"] == "/v1/chat/completions"
    assert body["model"] == "test-model"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "describe_skill"}}
    assert [t["function"]["name"] for t in body["tools"]] == ["describe_skill"]
    assert body["tools"][0]["function"]["parameters"] == prompts.SCHEMAS["describe_skill"]
    assert body["messages"][0]["role"] == "system"
    parts = body["messages"][1]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(urls) == 2
    for url in urls:
        assert url.startswith("data:image/png;base64,")
        img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert img.size == (64, 43)  # longest side downscaled to image_max_side
    text = " ".join(p["text"] for p in parts if p["type"] == "text")
    assert "click obj-3" in text and "25.00%" in text
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["authorization"] == "Bearer none"
    assert b.usage.calls == 1 and b.usage.failed_calls == 0 and b.usage.requests == 1


def test_describe_skill_not_meaningful_is_none_without_failure(endpoint):
    b = brain_for(endpoint)
    endpoint.push(
        tool_reply("describe_skill", {"meaningful": False, "name": "", "description": ""})
    )
    assert b.describe_skill([Operation("key", key="enter")], transition()) is None
    assert b.usage.failed_calls == 0 and len(endpoint.requests) == 1


def test_evaluate_parses_judgement(endpoint):
    b = brain_for(endpoint)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), transition()) == Judgement(True, False, "panel opened")
    text = endpoint.requests[0]["body"]["messages"][1]["content"][0]["text"]
    assert "opens the side panel" in text


def test_jpeg_and_detail_options(endpoint):
    b = brain_for(endpoint, image_format="jpeg", image_detail="low")
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    parts = endpoint.requests[0]["body"]["messages"][1]["content"]
    imgs = [p["image_url"] for p in parts if p["type"] == "image_url"]
    assert all(i["url"].startswith("data:image/jpeg;base64,") for i in imgs)
    assert all(i["detail"] == "low" for i in imgs)


# --------------------------------------------------------------------- retries
def test_garbage_json_is_retried_then_parsed(endpoint):
    b = brain_for(endpoint)
    endpoint.push(tool_reply("evaluate", '{"is_consistent": tru', usage=(50, 5)))
    endpoint.push(tool_reply("evaluate", EVAL_OK, usage=(70, 7)))
    assert b.evaluate(skill(), transition()).consistent is True
    assert len(endpoint.requests) == 2
    assert b.usage.failed_calls == 0 and b.usage.calls == 1 and b.usage.requests == 2
    assert b.usage.prompt_tokens == 120 and b.usage.completion_tokens == 12  # both billed


def test_missing_tool_call_steps_down_then_degrades_to_offline(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.default = Reply(content="The panel opened, looks fine.")
    tr = transition()
    out = b.evaluate(skill(), tr)
    assert out == offline_of(b).evaluate(skill(), tr)  # the offline rule, not "no"
    # tools (no tool call: the server may ignore tools) -> json_schema, 4 counted tries
    assert len(endpoint.requests) == 5
    assert "tools" in endpoint.requests[0]["body"]
    assert all("response_format" in r["body"] for r in endpoint.requests[1:])
    assert b.usage.failed_calls == 1 and b.usage.calls == 1 and b.usage.offline_calls == 1
    assert b.last_call is not None and not b.last_call.ok and b.last_call.attempts == 4
    notes = b.take_notes()
    assert any(n.startswith("evaluate: offline answer (no JSON object") for n in notes)
    assert b.take_notes() == []  # taken once
    assert any("evaluate failed after 5 request(s)" in line for line in b.test_logs)


def test_wrong_types_are_retried(endpoint):
    b = brain_for(endpoint, max_retries=1)
    endpoint.push(tool_reply("evaluate", {"is_consistent": "yes", "is_progressive": True}))
    endpoint.push(tool_reply("evaluate", {"is_consistent": True}))
    tr = transition()
    out = b.evaluate(skill(), tr)
    assert out == offline_of(b).evaluate(skill(), tr)
    assert len(endpoint.requests) == 2
    assert "expected boolean" in b.last_call.error or "missing" in b.last_call.error


def test_json_in_plain_content_is_accepted_as_fallback(endpoint):
    b = brain_for(endpoint)
    endpoint.push(
        Reply(
            content='Sure: {"is_consistent": false, "is_progressive": true, "reason": "new screen"}'
        )
    )
    assert b.evaluate(skill(), transition()) == Judgement(False, True, "new screen")
    assert len(endpoint.requests) == 1 and b.usage.failed_calls == 0
    # without the fallback, a tools request answered in text means "no tools here"
    b2 = brain_for(endpoint, content_json_fallback=False, max_retries=0)
    endpoint.push(Reply(content='{"is_consistent": false, "is_progressive": true, "reason": ""}'))
    endpoint.push(Reply(content='{"is_consistent": true, "is_progressive": true, "reason": "x"}'))
    assert b2.evaluate(skill(), transition()) == Judgement(True, True, "x")
    assert "response_format" in endpoint.requests[-1]["body"]
    assert b2.chat.mode == "json_schema"  # remembered for the next call


def test_429_honours_retry_after(endpoint):
    b = brain_for(endpoint)
    endpoint.push(Reply(status=429, headers={"Retry-After": "0.3"}))
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), transition()).consistent is True
    assert len(endpoint.requests) == 2
    gap = endpoint.request_times[1] - endpoint.request_times[0]
    assert gap >= 0.28  # the server's wish, not the 0.01 s backoff


def test_429_retry_after_is_capped(endpoint):
    b = brain_for(endpoint, retry_after_cap_s=0.05)
    endpoint.push(Reply(status=429, headers={"Retry-After": "120"}))
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    t0 = time.monotonic()
    assert b.evaluate(skill(), transition()).consistent is True
    assert time.monotonic() - t0 < 3.0


def test_5xx_retried_with_exponential_backoff(endpoint):
    slept: list[float] = []
    b = VLMBrain(
        make_cfg(endpoint, max_retries=3, backoff_s=0.01), sleep=slept.append, log=lambda s: None
    )
    endpoint.default = Reply(status=500)
    tr = transition()
    out = b.evaluate(skill(), tr)
    assert out == OfflineBrain(b.cfg).evaluate(skill(), tr)
    assert len(endpoint.requests) == 4
    assert slept == pytest.approx([0.01, 0.02, 0.04])
    assert b.usage.failed_calls == 1

    endpoint.default = Reply(content="x")
    endpoint.push(Reply(status=503), tool_reply("evaluate", EVAL_OK))
    # the previous call failed: the next gets one try only (a failing endpoint costs little)
    assert b.evaluate(skill(), tr) == OfflineBrain(b.cfg).evaluate(skill(), tr)
    assert len(endpoint.requests) == 5
    assert b.evaluate(skill(), tr) == Judgement(True, False, "panel opened")
    assert len(endpoint.requests) == 6 and b.usage.failed_calls == 2
    # healthy again: the full retry allowance
    endpoint.push(Reply(status=503), Reply(status=502), tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), tr).consistent is True
    assert len(endpoint.requests) == 9 and slept[-2:] == pytest.approx([0.01, 0.02])


def test_client_errors_are_not_retried_and_keep_the_server_message(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())  # the endpoint has answered: later failures degrade
    endpoint.default = Reply(status=401, message="Incorrect API key provided: sk-…")
    ops = [Operation("key", key="enter")]
    tr = transition()
    out = b.describe_skill(ops, tr)
    assert out == OfflineBrain(b.cfg).describe_skill(ops, tr)  # never "meaningless"
    assert out is not None
    assert len(endpoint.requests) == 2 and b.usage.failed_calls == 1
    assert b.last_call.error == "HTTP 401: Incorrect API key provided: sk-…"


def test_timeout_becomes_failed_judgement(endpoint):
    b = brain_for(endpoint, timeout_s=0.3, max_retries=1)
    endpoint.default = Reply(tool="evaluate", arguments=EVAL_OK, delay_s=1.5)
    t0 = time.monotonic()
    out = b.evaluate(skill(), transition())
    elapsed = time.monotonic() - t0
    assert out == OfflineBrain(b.cfg).evaluate(skill(), transition())
    assert b.usage.failed_calls == 1
    assert len(endpoint.requests) == 2
    assert elapsed < 1.4  # the client gave up; it did not wait for the slow replies
    assert "timed out" in b.last_call.error


def test_connection_refused_is_a_failure_not_a_crash():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    cfg = BrainConfig(
        kind="vlm",
        base_url=f"http://127.0.0.1:{port}/v1",
        max_retries=1,
        backoff_s=0.01,
        api_key_env="KGAGENT_TEST_UNSET_KEY",
    )
    cfg.on_unreachable = "offline"  # no stop at the start
    b = VLMBrain(cfg, log=lambda s: None, endpoints=EndpointMemory())
    assert b.choose_cluster(transition().after, clusters()) is None  # offline: no features
    assert b.usage.failed_calls == 1 and b.usage.requests == 2
    assert b.last_call.error.startswith("connection error")


def test_reply_without_usage_is_estimated_and_marked(endpoint):
    b = brain_for(endpoint)
    endpoint.push(Reply(tool="evaluate", arguments=EVAL_OK, usage=None))
    assert b.evaluate(skill(), transition()).consistent is True
    u = b.usage
    # two 64 x 43 images at OpenAI's rule (85 + 170 per tile) dominate the estimate
    assert u.prompt_tokens > 2 * 255 and u.completion_tokens > 0
    assert u.estimated_tokens == u.tokens
    assert u.cost_usd == pytest.approx(
        (u.prompt_tokens * PRICE_IN + u.completion_tokens * PRICE_OUT) / 1e6
    )
    assert b.last_call.estimated
    assert sum("estimated" in line for line in b.test_logs) == 1
    endpoint.push(Reply(tool="evaluate", arguments=EVAL_OK, usage=None))
    b.evaluate(skill(), transition())
    assert sum("estimated" in line for line in b.test_logs) == 1  # told once


# ---------------------------------------------------------------- cluster roles
def test_choose_cluster_validates_ids(endpoint):
    b = brain_for(endpoint)
    view = transition().after
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": "c9"}))
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": "c2", "reason": "dialog"}))
    assert b.choose_cluster(view, clusters()) == "c2"
    assert len(endpoint.requests) == 2
    text = endpoint.requests[0]["body"]["messages"][1]["content"][0]["text"]
    assert "id='c1'" in text and "accepts dialogs" in text
    parts = endpoint.requests[0]["body"]["messages"][1]["content"]
    assert sum(p["type"] == "image_url" for p in parts) == 1

    endpoint.default = Reply(tool="choose_cluster", arguments={"cluster_id": "nope"})
    assert b.choose_cluster(view, clusters()) is None  # the offline rule: no features, none
    assert b.usage.failed_calls == 1 and len(endpoint.requests) == 5


def test_choose_cluster_null_name_and_empty(endpoint):
    b = brain_for(endpoint)
    view = transition().after
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": None}))
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": "confirm"}))  # a name, not an id
    assert b.choose_cluster(view, clusters()) is None
    assert b.choose_cluster(view, clusters()) == "c2"
    assert b.usage.failed_calls == 0
    n = len(endpoint.requests)
    assert b.choose_cluster(view, []) is None
    assert len(endpoint.requests) == n  # nothing to choose from: no request


def test_cluster_skills(endpoint):
    b = brain_for(endpoint)
    new = [skill(id="k1"), skill(id="k2", name="press enter")]
    bad = {
        "assignments": [
            {"skill_id": "k7", "cluster_id": None, "new_name": "x", "new_description": ""}
        ]
    }
    good = {
        "assignments": [
            {"skill_id": "k1", "cluster_id": "c1", "new_name": "", "new_description": ""},
            {
                "skill_id": "k2",
                "cluster_id": None,
                "new_name": "confirming",
                "new_description": "accepts things",
            },
        ]
    }
    endpoint.push(tool_reply("cluster_skills", bad), tool_reply("cluster_skills", good))
    out = b.cluster_skills(new, clusters())
    assert [(a.skill_id, a.cluster_id, a.new_name) for a in out] == [
        ("k1", "c1", ""),
        ("k2", None, "confirming"),
    ]
    assert len(endpoint.requests) == 2
    assert endpoint.requests[0]["body"]["tool_choice"]["function"]["name"] == "cluster_skills"
    assert b.cluster_skills([], clusters()) == [] and len(endpoint.requests) == 2

    dup = {"assignments": [good["assignments"][0], good["assignments"][0]]}
    endpoint.default = Reply(tool="cluster_skills", arguments=dup)
    out = b.cluster_skills(new, clusters())
    assert out == OfflineBrain(b.cfg).cluster_skills(new, clusters())  # offline, not nothing
    assert len(out) == 2 and b.usage.failed_calls == 1


def test_refine_skill(endpoint):
    b = brain_for(endpoint)
    s = skill()
    endpoint.push(tool_reply("refine_skill", {"name": s.name, "description": s.description}))
    assert b.refine_skill(s, transition()) is None  # unchanged: keep it
    endpoint.push(tool_reply("refine_skill", {"name": "open side panel", "description": "d"}))
    assert b.refine_skill(s, transition()) == SkillText("open side panel", "d")
    assert b.usage.failed_calls == 0


# ------------------------------------------------------------- tokens and budget
def test_tokens_and_cost_totals_match_usage_times_prices(endpoint):
    b = brain_for(endpoint)
    usages = [(1234, 56), (987, 65), (4321, 0)]
    endpoint.push(tool_reply("evaluate", EVAL_OK, usage=usages[0]))
    mark = b.usage.copy()
    b.evaluate(skill(), transition())
    step1 = b.usage - mark
    assert (step1.prompt_tokens, step1.completion_tokens) == usages[0]
    assert step1.cost_usd == pytest.approx((1234 * PRICE_IN + 56 * PRICE_OUT) / 1e6, rel=1e-12)
    assert b.last_call.prompt_tokens == 1234 and b.last_call.ok

    endpoint.push(tool_reply("evaluate", "not json", usage=usages[1]))
    endpoint.push(tool_reply("evaluate", EVAL_OK, usage=usages[2]))
    mark = b.usage.copy()
    b.evaluate(skill(), transition())
    step2 = b.usage - mark
    assert (step2.prompt_tokens, step2.completion_tokens) == (987 + 4321, 65)
    assert (step2.calls, step2.requests) == (1, 2)

    pt = sum(u[0] for u in usages)
    ct = sum(u[1] for u in usages)
    assert (b.usage.prompt_tokens, b.usage.completion_tokens) == (pt, ct)
    assert b.usage.cost_usd == (pt * PRICE_IN + ct * PRICE_OUT) / 1e6
    assert b.usage.cost_usd == pytest.approx(step1.cost_usd + step2.cost_usd, rel=1e-12)


def test_budget_cap_raises_before_overspending(endpoint):
    # one call: 1000 in × 2.5 + 50 out × 10 per Mtok = $0.003
    b = brain_for(endpoint, budget_usd=0.005)
    endpoint.default = Reply(tool="evaluate", arguments=EVAL_OK, usage=(1000, 50))
    b.evaluate(skill(), transition())
    assert b.usage.cost_usd == pytest.approx(0.003)
    with pytest.raises(BudgetExceeded):
        b.evaluate(skill(), transition())  # 0.003 + ~0.003 would pass 0.005
    assert len(endpoint.requests) == 1

    b0 = brain_for(endpoint, budget_usd=0.0)
    with pytest.raises(BudgetExceeded):
        b0.evaluate(skill(), transition())
    assert len(endpoint.requests) == 1


def test_budget_is_enough_for_cheap_calls(endpoint):
    b = brain_for(endpoint, budget_usd=0.01)
    endpoint.default = Reply(tool="evaluate", arguments=EVAL_OK, usage=(1000, 50))
    for _ in range(3):
        b.evaluate(skill(), transition())
    assert b.usage.calls == 3 and b.usage.cost_usd == pytest.approx(0.009)
    with pytest.raises(BudgetExceeded):
        b.evaluate(skill(), transition())


# ----------------------------------------------------------------- prompts, misc
def test_prompts_name_no_game(endpoint):
    texts = [prompts.all_prompt_text().lower()]
    b = brain_for(endpoint)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    endpoint.push(tool_reply("cluster_skills", {"assignments": []}))
    b.cluster_skills([skill()], clusters())
    for req in endpoint.requests:
        for m in req["body"]["messages"]:
            c = m["content"]
            texts.append(c if isinstance(c, str) else " ".join(p.get("text", "") for p in c))
            texts[-1] = texts[-1].lower()
    blob = "\n".join(texts)
    assert "software" in blob  # the check reads real prompt text
    for word in GAME_WORDS:
        assert not re.search(rf"\b{word}s?\b", blob), word


def test_one_schema_per_tool():
    assert set(prompts.SCHEMAS) == {
        "describe_skill",
        "evaluate",
        "choose_cluster",
        "refine_skill",
        "cluster_skills",
    }
    assert validate(prompts.SCHEMAS["evaluate"], EVAL_OK) == []
    assert validate(prompts.SCHEMAS["evaluate"], {"is_consistent": 1, "reason": ""}) != []
    assert validate(prompts.SCHEMAS["choose_cluster"], {"cluster_id": None}) == []
    assert validate(prompts.SCHEMAS["refine_skill"], {"name": " ", "description": "x"}) != []


def test_image_data_url_downscales_and_keeps_small_images():
    big = np.zeros((100, 400, 3), np.uint8)
    small = np.zeros((10, 20, 3), np.uint8)
    for arr, size in ((big, (128, 32)), (small, (20, 10))):
        url = image_data_url(arr, 128)
        img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert img.size == size and img.mode == "RGB"


def test_make_brain_choices(monkeypatch):
    monkeypatch.delenv("KGAGENT_TEST_KEY", raising=False)
    logs: list[str] = []
    b = make_brain(BrainConfig(api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert isinstance(b, OfflineBrain) and len(logs) == 1 and "offline" in logs[0]

    logs.clear()
    b = make_brain(
        BrainConfig(base_url="http://127.0.0.1:9/v1", api_key_env="KGAGENT_TEST_KEY"),
        log=logs.append,
    )
    assert isinstance(b, VLMBrain) and len(logs) == 1 and "127.0.0.1:9" in logs[0]

    monkeypatch.setenv("KGAGENT_TEST_KEY", "sk-test")
    b = make_brain(BrainConfig(api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert isinstance(b, VLMBrain)
    assert b.client.api_key == "sk-test"

    monkeypatch.delenv("KGAGENT_TEST_KEY")
    with pytest.raises(ConfigError, match="base_url") as e:
        make_brain(BrainConfig(kind="vlm", api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert "$OPENAI_BASE_URL, or $KGAGENT_TEST_KEY" in str(e.value)  # every way to name one
    with pytest.raises(ConfigError, match="brain.kind"):
        make_brain(BrainConfig(kind="gpt"), log=logs.append)
    b = make_brain(BrainConfig(kind="offline", base_url="http://x/v1"), seed=3, log=logs.append)
    assert isinstance(b, OfflineBrain) and b.seed == 3
