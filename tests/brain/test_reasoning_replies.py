"""Reasoning models' replies: the answer is found where their servers put it, and a model
that spends its tokens thinking gets more of them (kgagent/brain/reply.py, client.py)."""

from __future__ import annotations

import json

from kgagent.brain.prompts import SCHEMAS
from kgagent.brain.reply import answer_in, without_thoughts
from kgagent.runlog import summarise

from .fake_endpoint import Reply, tool_reply
from .helpers import EVAL_OK, brain_for, skill, transition

DONE = {"stopped": "steps", "duration_s": 1.0}
DRAFT = {**EVAL_OK, "is_consistent": not EVAL_OK["is_consistent"]}


def test_harmony_tokens_answer_from_the_final_channel_not_the_analysis() -> None:
    """gpt-oss through a server that passes Harmony's tokens: the draft in the analysis
    channel validated first and was taken as the answer (no failure said)."""
    text = (
        "<|channel|>analysis<|message|>First try: " + json.dumps(DRAFT) + " hmm, no.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>" + json.dumps(EVAL_OK) + "<|return|>"
    )
    assert answer_in(text, "evaluate", SCHEMAS["evaluate"]) == EVAL_OK
    only = "<|channel|>analysis<|message|>" + json.dumps(DRAFT) + " then " + json.dumps(EVAL_OK)
    assert without_thoughts(only)[1] is True  # no final channel: the answer is last
    assert answer_in(only, "evaluate", SCHEMAS["evaluate"]) == EVAL_OK


def test_an_answer_left_in_reasoning_content_is_read(endpoint) -> None:
    """vLLM's reasoning parser, when the model never closed its thinking: ``content`` is
    null and the answer ends ``reasoning_content``; every call failed "(empty)"."""
    b = brain_for(endpoint, max_retries=0)
    thought = "Let me see. " + json.dumps(DRAFT) + " No, rather: " + json.dumps(EVAL_OK)
    endpoint.push(Reply(content=None, reasoning_content=thought))
    got = b.evaluate(skill(), transition())
    assert b.usage.failed_calls == 0
    assert got.consistent is EVAL_OK["is_consistent"]


def test_a_model_that_spends_its_tokens_thinking_is_given_more_until_the_cap(endpoint) -> None:
    """A thinking model cut at 512 and again at 1024 (all of it reasoning) never answered:
    the limit was raised once. Now it doubles while the cut replies were thinking."""
    b = brain_for(endpoint, max_retries=0, max_output_tokens=100)
    thinking = Reply(
        content="<think>hmm", finish_reason="length", usage=(50, 90), reasoning_tokens=90
    )
    endpoint.push(thinking, thinking, thinking, tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    assert [r["body"]["max_tokens"] for r in endpoint.requests] == [100, 200, 400, 800]
    assert b.usage.failed_calls == 0
    assert any("spent thinking" in n for n in b.take_notes())


def test_thinking_stops_being_raised_at_sixteen_times_the_configured_limit(endpoint) -> None:
    b = brain_for(endpoint, max_retries=0, max_output_tokens=100)
    thinking = Reply(content=None, reasoning_content="hmm", finish_reason="length")
    endpoint.push(*[thinking] * 6)
    b.evaluate(skill(), transition())
    sent = [r["body"]["max_tokens"] for r in endpoint.requests]
    assert sent == [100, 200, 400, 800, 1600] and b.usage.failed_calls == 1


def test_a_reply_cut_without_thinking_is_still_raised_once(endpoint) -> None:
    b = brain_for(endpoint, max_retries=0, max_output_tokens=100)
    cut = Reply(content=json.dumps(EVAL_OK)[:20], finish_reason="length", reasoning_tokens=0)
    endpoint.push(cut, cut, cut)
    b.evaluate(skill(), transition())
    assert [r["body"]["max_tokens"] for r in endpoint.requests] == [100, 200]


def test_the_tokens_a_model_spent_thinking_are_counted_apart(endpoint) -> None:
    """A reasoning model's thinking is billed as output; the server says how much of it
    was thinking, and the usage (and with it the step log and the run summary) keeps it."""
    b = brain_for(endpoint, max_retries=0)
    thinking = Reply(tool="evaluate", arguments=EVAL_OK, usage=(50, 90), reasoning_tokens=60)
    hidden = Reply(tool="evaluate", arguments=EVAL_OK, usage=(50, 90), reasoning_tokens=900)
    endpoint.push(thinking, hidden, tool_reply("evaluate", EVAL_OK))
    for _ in range(3):
        b.evaluate(skill(), transition())
    # 60, then a count larger than the completion it is part of (kept to the 90), then none
    assert b.usage.reasoning_tokens == 60 + 90 and b.usage.completion_tokens == 90 + 90 + 10
    assert b.usage.estimated_tokens == 0


def test_thinking_a_server_counts_only_in_its_total_is_billed(endpoint) -> None:
    """A proxy that reports a model's thinking in ``total_tokens`` and ``reasoning_tokens``
    but not in ``completion_tokens`` (0): the 60 tokens went unbilled and unseen, and the
    budget cap did not see them either."""
    b = brain_for(endpoint, max_retries=0)
    endpoint.push(
        Reply(
            tool="evaluate", arguments=EVAL_OK, usage=(21, 0), total_tokens=81, reasoning_tokens=60
        )
    )
    b.evaluate(skill(), transition())
    assert (b.usage.prompt_tokens, b.usage.completion_tokens) == (21, 60)
    assert b.usage.reasoning_tokens == 60 and b.last_call.reasoning_tokens == 60
    assert b.usage.cost_usd > 0 and b.usage.estimated_tokens == 0


def test_thinking_put_apart_by_a_server_without_usage_is_in_the_estimate(endpoint) -> None:
    b = brain_for(endpoint, max_retries=0)
    thought = "Let me think about this for a while. " * 40 + json.dumps(EVAL_OK)
    endpoint.push(Reply(content=None, reasoning_content=thought, usage=None))
    b.evaluate(skill(), transition())
    assert b.usage.estimated_tokens > 0
    assert b.usage.completion_tokens >= len(thought) // 4  # 4 characters a token
    assert b.usage.reasoning_tokens == 0  # no server said how much was thinking
    # the same thinking under both names (a server between two versions) counts once
    both = Reply(content=None, reasoning_content=thought, reasoning=thought, usage=None)
    endpoint.push(both)
    before = b.usage.completion_tokens
    b.evaluate(skill(), transition())
    once = b.usage.completion_tokens - before
    assert once < len(thought) // 4 * 1.5


def test_the_run_summary_says_how_many_tokens_were_thinking() -> None:
    records = [
        {"tokens": 500, "reasoning_tokens": 300, "cost_usd": 0.0},
        {"tokens": 200, "reasoning_tokens": 0, "cost_usd": 0.0},
    ]
    s = summarise(records, env="x", seed=0, ablation="full", stats=None, truth={}, **DONE)
    assert s.reasoning_tokens == 300
    assert "700 (300 thinking)" in s.format_table()
    old = summarise([{"tokens": 5}], env="x", seed=0, ablation="full", stats=None, truth={}, **DONE)
    assert old.reasoning_tokens == 0 and "thinking" not in old.format_table()
    nulls = {k: None for k in ("tokens", "reasoning_tokens", "estimated_tokens", "cost_usd")}
    read = summarise(
        [nulls, {"tokens": 7}], env="x", seed=0, ablation="full", stats=None, truth={}, **DONE
    )
    assert (read.tokens, read.reasoning_tokens, read.cost_usd) == (7, 0, 0.0)
