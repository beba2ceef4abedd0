"""The answer in a reply's text: after a reasoning model's thoughts, among several JSON
objects, or inside a tool call written as text (Llama 3)."""

from __future__ import annotations

import json

from kgagent.brain import prompts
from kgagent.brain.reply import answer_in, json_object_in, unwrapped, without_thoughts

from .fake_endpoint import PROFILES, THOUGHTS, Reply
from .helpers import EVAL_OK, brain_for, skill, transition

SCHEMA = prompts.SCHEMAS["evaluate"]
ANSWER = json.dumps(EVAL_OK)


def test_thoughts_are_left_out():
    assert json_object_in(THOUGHTS + ANSWER) == EVAL_OK
    assert json_object_in(f"<THINK>{{'a': 1}} {{\"a\": 1}}</THINK>\n{ANSWER}") == EVAL_OK
    # the template opened the block in the prompt: the reply only closes it
    assert json_object_in(f'Maybe {{"x": 1}}?\n</think>\n{ANSWER}') == EVAL_OK
    # opened and never closed: the thoughts run up to the answer, which is the last object
    assert json_object_in(f'<think>\nlike {{"x": 1}}, then\n{ANSWER}') == EVAL_OK
    assert without_thoughts("plain {}") == ("plain {}", False)


def test_a_later_object_that_validates_is_taken():
    text = f'First {{"is_consistent": "maybe"}}, no: {ANSWER} and {{"note": 1}}'
    assert answer_in(text, "evaluate", SCHEMA) == EVAL_OK
    assert answer_in('{"a": 1} {"b": 2}', "evaluate", SCHEMA) == {"a": 1}  # none: the first
    assert answer_in("no JSON", "evaluate", SCHEMA) is None


def test_a_tool_call_written_as_text_is_unwrapped():
    for key in ("parameters", "arguments"):
        assert unwrapped({"name": "evaluate", key: EVAL_OK}, "evaluate") == EVAL_OK
    as_string = {"type": "function", "name": "evaluate", "arguments": ANSWER}
    assert unwrapped(as_string, "evaluate") == EVAL_OK
    other_tool = {"name": "describe_skill", "parameters": EVAL_OK}
    assert unwrapped(other_tool, "evaluate") == other_tool
    a_skill = {"meaningful": True, "name": "describe_skill", "description": "x"}
    assert unwrapped(a_skill, "describe_skill") == a_skill  # an answer, not a call


def test_a_reasoning_model_answers_in_text_mode(endpoint):
    endpoint.profile = PROFILES["reasoning"]
    b = brain_for(endpoint, max_retries=1)
    for _ in range(2):
        assert b.evaluate(skill(), transition()).reason == "looked at it"
    assert b.usage.failed_calls == 0 and b.chat.mode == "text"


def test_llama3_tool_calls_written_as_text_are_answers(endpoint):
    endpoint.profile = PROFILES["llama3"]
    b = brain_for(endpoint, max_retries=1)
    for _ in range(2):
        out = b.describe_skill(skill().operations, transition())
        assert out is not None and out.name == "do click obj-3"
    assert b.usage.failed_calls == 0 and b.usage.requests == 2  # read in tools mode


def test_a_later_object_answers_when_the_first_does_not_validate(endpoint):
    endpoint.default = Reply(content=f'Draft: {{"is_consistent": "maybe"}}. Final: {ANSWER}')
    b = brain_for(endpoint, mode="text", max_retries=0)
    assert b.evaluate(skill(), transition()).reason == "panel opened"
    assert b.usage.failed_calls == 0
