"""How the client finds a way to get a JSON answer from each kind of server."""

from __future__ import annotations

import json

from kgagent.brain import prompts
from kgagent.brain.base import Judgement
from kgagent.brain.client import EndpointMemory
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
    # cut twice: give up for that call (no identical retries)
    endpoint.push(cut, cut, tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    assert [r["body"]["max_tokens"] for r in endpoint.requests[2:]] == [300, 600]
    assert b.last_call.error == "reply cut at max_tokens (600)" and b.usage.failed_calls == 1
    assert b.cfg.max_output_tokens == 300  # the next call starts from the configured value


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
