"""How the client finds a way to get a JSON answer from each kind of server."""

from __future__ import annotations

import json

import pytest

from kgagent.brain import prompts
from kgagent.brain.base import Judgement
from kgagent.brain.client import EndpointMemory
from kgagent.brain.endpoint import EndpointUnusable
from kgagent.brain.vlm import VLMBrain

from .fake_endpoint import PROFILES, Reply, tool_reply
from .helpers import EVAL_OK, brain_for, make_cfg, offline_of, skill, transition

EVAL_JSON = json.dumps(EVAL_OK)


def kinds(endpoint) -> list[str]:
    """The answer mode of each request the endpoint received."""
    out = []
    for r in endpoint.requests:
        b = r["body"]
        out.append("tools" if "tools" in b else "json_schema" if "response_format" in b else "text")
    return out


def user_text(request) -> str:
    return request["body"]["messages"][1]["content"][0]["text"]


def test_ollama_without_tools_steps_down_once_and_is_remembered(endpoint):
    endpoint.profile = PROFILES["ollama"]
    memory = EndpointMemory()
    logs: list[str] = []
    b = VLMBrain(make_cfg(endpoint), log=logs.append, endpoints=memory)
    out = b.evaluate(skill(), transition())
    assert out == Judgement(True, True, "looked at it")  # the model's answer, not offline
    assert kinds(endpoint) == ["tools", "json_schema"]
    rf = endpoint.requests[1]["body"]["response_format"]
    assert (
        rf["type"] == "json_schema" and rf["json_schema"]["schema"] == prompts.SCHEMAS["evaluate"]
    )
    assert '"is_progressive": true|false' in user_text(endpoint.requests[1])  # shape stated
    assert b.usage.failed_calls == 0 and b.usage.requests == 2
    notes = b.take_notes()
    assert (
        len(notes) == 1 and "refused tools (HTTP 400: qwen2.5vl does not support tools)" in notes[0]
    )
    # the next call, and a new brain on the same endpoint, start where it worked
    b.evaluate(skill(), transition())
    b2 = VLMBrain(make_cfg(endpoint), log=logs.append, endpoints=memory)
    b2.evaluate(skill(), transition())
    assert kinds(endpoint) == ["tools", "json_schema", "json_schema", "json_schema"]
    assert sum("refused tools" in line for line in logs) == 1  # told once
    assert sum("answers in json_schema mode" in line for line in logs) == 1


def test_llamacpp_without_jinja_500_is_a_refusal_not_an_outage(endpoint):
    endpoint.profile = PROFILES["llamacpp"]
    b = brain_for(endpoint, max_retries=3)
    assert b.evaluate(skill(), transition()).reason == "looked at it"
    assert kinds(endpoint) == ["tools", "json_schema"]  # no retries of the 500
    assert "tools param requires --jinja flag" in b.take_notes()[0]


def test_server_ignoring_tools_and_format_gets_the_shape_in_the_prompt(endpoint):
    endpoint.profile = PROFILES["plain"]
    b = brain_for(endpoint)
    assert b.evaluate(skill(), transition()) == Judgement(True, True, "looked at it")
    # tools ignored (own keys in text) -> json_schema, which it ignores too, but the
    # prompt now states the shape and the model follows it
    assert kinds(endpoint) == ["tools", "json_schema"]
    assert "Answer (evaluate) with one JSON object" not in user_text(endpoint.requests[0])
    assert "Answer (evaluate) with one JSON object" in user_text(endpoint.requests[1])
    assert b.chat.mode == "json_schema"
    assert b.usage.estimated_tokens == b.usage.tokens > 0  # the proxy sends no usage


def test_lmstudio_string_error_body_and_text_mode(endpoint):
    b = brain_for(endpoint)
    lm = {"error": "'response_format.type' must be 'json_schema' or 'text'"}
    endpoint.push(
        Reply(status=400, error_body={"error": "tools are not enabled"}),
        Reply(status=400, error_body=lm),
        Reply(content="```json\n" + EVAL_JSON + "\n```"),
    )
    assert b.evaluate(skill(), transition()) == Judgement(True, False, "panel opened")
    assert kinds(endpoint) == ["tools", "json_schema", "text"]
    assert "tools" not in endpoint.requests[2]["body"]
    system = endpoint.requests[2]["body"]["messages"][0]["content"]
    assert "JSON object" in system and "calling the requested function" not in system
    notes = b.take_notes()
    assert "HTTP 400: 'response_format.type' must be 'json_schema' or 'text'" in notes[1]


def test_vllm_bare_error_body_message_is_kept(endpoint):
    b = brain_for(endpoint, max_retries=0, mode="text")
    body = {"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError"}
    endpoint.push(Reply(content=EVAL_JSON))  # it answered once: a later 404 degrades
    b.evaluate(skill(), transition())
    endpoint.push(Reply(status=404, error_body=body))
    b.evaluate(skill(), transition())
    assert b.last_call.error == "HTTP 404: The model `x` does not exist."
    assert kinds(endpoint) == ["text", "text"]  # a fixed mode is never stepped


def test_every_mode_refused_fails_with_the_last_message(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.default = Reply(status=400, message="unrecognized request argument")
    tr = transition()
    assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    assert kinds(endpoint) == ["tools", "json_schema", "text"]
    assert b.last_call.error == "HTTP 400: unrecognized request argument"
    assert b.chat.mode == "tools"  # only what worked is remembered


def test_refusal_is_not_retried(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.default = Reply(refusal="I can't assist with that.", usage=(40, 6))
    tr = transition()
    assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    assert len(endpoint.requests) == 1
    assert b.last_call.error == "the model refused: I can't assist with that."
    assert b.usage.prompt_tokens == 40  # billed all the same
    assert "evaluate: offline answer (the model refused" in b.take_notes()[0]


def test_truncation_raises_max_tokens_once(endpoint):
    b = brain_for(endpoint, max_retries=3, max_output_tokens=300)
    cut = Reply(content=EVAL_JSON[:20], finish_reason="length")
    endpoint.push(cut, tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), transition()).consistent is True
    assert [r["body"]["max_tokens"] for r in endpoint.requests] == [300, 600]
    assert b.usage.failed_calls == 0
    # cut at the raised limit: give up for that call (no identical retries, no more raising)
    endpoint.push(cut, tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    assert [r["body"]["max_tokens"] for r in endpoint.requests[2:]] == [600]
    assert b.last_call.error == "reply cut at max_tokens (600)" and b.usage.failed_calls == 1
    assert b.cfg.max_output_tokens == 300  # the configuration is left as the user set it


def test_max_completion_tokens_and_temperature_are_adapted(endpoint):
    b = brain_for(endpoint)
    endpoint.push(
        Reply(
            status=400,
            message="Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        ),
        Reply(
            status=400,
            message="Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported.",
        ),
        tool_reply("evaluate", EVAL_OK),
        tool_reply("evaluate", EVAL_OK),
    )
    assert b.evaluate(skill(), transition()).consistent is True
    first, second, third = (r["body"] for r in endpoint.requests)
    assert "max_tokens" in first and "temperature" in first
    assert "max_completion_tokens" in second and "max_tokens" not in second
    assert "temperature" not in third and kinds(endpoint) == ["tools"] * 3
    b.evaluate(skill(), transition())
    fourth = endpoint.requests[3]["body"]
    assert "max_completion_tokens" in fourth and "temperature" not in fourth  # remembered


def test_fixed_json_schema_mode(endpoint):
    b = brain_for(endpoint, mode="json_schema")
    endpoint.push(Reply(content=EVAL_JSON))
    assert b.evaluate(skill(), transition()).consistent is True
    assert kinds(endpoint) == ["json_schema"]


def test_unknown_mode_is_a_config_error(endpoint):
    import pytest

    from kgagent.errors import ConfigError

    with pytest.raises(ConfigError, match="brain.mode"):
        brain_for(endpoint, mode="grammar")


def test_a_server_ignoring_tools_is_remembered_while_answers_stay_bad(endpoint):
    b = brain_for(endpoint, max_retries=0)
    endpoint.default = Reply(content="fine")
    b.evaluate(skill(), transition())
    b.evaluate(skill(), transition())
    assert kinds(endpoint) == ["tools", "json_schema", "json_schema"]


@pytest.mark.parametrize(
    "profile, fix",
    [
        ("llamacpp", "use brain.mode=auto, or start llama-server with --jinja"),
        ("ollama", "use brain.mode=auto, or a model whose chat template has tools"),
    ],
)
def test_a_fixed_mode_the_server_refuses_stops_at_once(endpoint, profile, fix):
    endpoint.profile = PROFILES[profile]
    b = brain_for(endpoint, mode="tools", max_retries=3)
    with pytest.raises(EndpointUnusable) as e:
        b.evaluate(skill(), transition())
    said = PROFILES[profile].tools_error["error"]["message"]
    assert f"refuses tools (HTTP {PROFILES[profile].tools_status}: {said})" in str(e.value)
    assert f"and brain.mode=tools allows no other: {fix}" in str(e.value)
    assert len(endpoint.requests) == 1 and "\n" not in str(e.value)


def test_a_fixed_mode_refused_after_answers_degrades(endpoint):
    b = brain_for(endpoint, mode="json_schema", max_retries=3)
    endpoint.push(Reply(content=EVAL_JSON))
    b.evaluate(skill(), transition())
    endpoint.default = Reply(status=400, message="response_format is not supported")
    tr = transition()
    assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    assert len(endpoint.requests) == 2
    assert b.last_call.error == (
        "the server refuses response_format (json_schema) (HTTP 400: response_format is not "
        "supported) and brain.mode=json_schema allows no other"
    )


def test_a_raised_max_tokens_is_remembered_and_said_once(endpoint):
    endpoint.profile = PROFILES["cutting"]  # cut at 512, whole at 1024
    memory = EndpointMemory()
    logs: list[str] = []
    b = VLMBrain(make_cfg(endpoint, max_output_tokens=512), log=logs.append, endpoints=memory)
    for _ in range(3):
        assert b.evaluate(skill(), transition()).reason == "looked at it"
    b2 = VLMBrain(make_cfg(endpoint, max_output_tokens=512), log=logs.append, endpoints=memory)
    b2.evaluate(skill(), transition())
    assert [r["body"]["max_tokens"] for r in endpoint.requests] == [512, 1024, 1024, 1024, 1024]
    line = "replies were cut at 512 tokens; using 1024 (set brain.max_output_tokens)"
    assert logs.count(f"brain: {line}") == 1 and b.take_notes() == [line]


def test_rate_limit_retries_are_counted_and_noted(endpoint):
    endpoint.profile = PROFILES["ratelimited"]  # every second request: 429, Retry-After 0.05
    b = brain_for(endpoint, max_retries=3)
    for _ in range(3):  # ok; 429 then ok; 429 then ok
        b.evaluate(skill(), transition())
    u = b.usage
    assert (u.calls, u.requests, u.failed_calls) == (3, 5, 0)
    assert (u.retries, u.rate_limited) == (2, 2) and u.rate_limit_wait_s == pytest.approx(0.1)
    assert b.figures()["rate_limited"] == 2
    note = "evaluate: rate limited (HTTP 429) 1 time(s); 0.1 s waited before retrying"
    assert b.take_notes() == [note, note]
