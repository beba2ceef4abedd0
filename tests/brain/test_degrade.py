"""A failing endpoint costs little and loses nothing: offline answers, notes, circuit breaker."""

from __future__ import annotations

import socket

import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import Judgement, Transition, View
from kgagent.brain.breaker import CircuitBreaker
from kgagent.brain.client import EndpointMemory
from kgagent.brain.offline import OfflineBrain
from kgagent.brain.vlm import VLMBrain
from kgagent.config import BrainConfig

from .fake_endpoint import Reply, tool_reply
from .helpers import EVAL_OK, brain_for, skill, transition


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket closes


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def dead_brain(**kw) -> tuple[VLMBrain, list[str]]:
    cfg = BrainConfig(
        kind="vlm",
        base_url=closed_port_url(),
        api_key_env="KGAGENT_TEST_UNSET_KEY",
        max_retries=1,
        backoff_s=0.0,
    )
    cfg.on_unreachable = "offline"  # offline play chosen: a server never reached stops
    for k, v in kw.items():  # a run otherwise (test_endpoint_setup.py)
        setattr(cfg, k, v)
    logs: list[str] = []
    return VLMBrain(cfg, log=logs.append, endpoints=EndpointMemory(), clock=Clock()), logs


def test_dead_endpoint_opens_the_breaker_and_tells_once():
    b, logs = dead_brain(breaker_failures=2, breaker_cooldown_calls=3, breaker_cooldown_s=1e9)
    tr = transition()
    offline = OfflineBrain(b.cfg)
    for _ in range(2):  # two failed calls: the first with its retry, the second single
        assert b.evaluate(skill(), tr) == offline.evaluate(skill(), tr)
    assert b.usage.requests == 3 and b.breaker.is_open
    for _ in range(3):  # paused: offline answers without a request
        assert b.evaluate(skill(), tr) == offline.evaluate(skill(), tr)
    assert b.usage.requests == 3
    b.evaluate(skill(), tr)  # the cool-down is over: one probe, which fails
    assert b.usage.requests == 4 and b.breaker.is_open and b.breaker.trips == 2
    b.evaluate(skill(), tr)
    assert b.usage.requests == 4
    assert b.usage.calls == 7 and b.usage.failed_calls == 3 and b.usage.offline_calls == 7
    paused = [line for line in logs if "role calls in a row failed" in line]
    assert len(paused) == 1 and "connection error" in paused[0]
    notes = b.take_notes()
    assert sum("endpoint paused after" in n for n in notes) >= 4
    assert all(n.startswith(("evaluate: offline answer", "endpoint paused")) for n in notes)


def test_breaker_cooldown_in_seconds_and_recovery(endpoint):
    clock = Clock()
    cfg_kw = dict(breaker_failures=1, breaker_cooldown_calls=10**6, breaker_cooldown_s=30.0)
    b = brain_for(endpoint, max_retries=0, **cfg_kw)
    b.breaker = CircuitBreaker(1, 10**6, 30.0, clock)
    endpoint.push(Reply(status=503))
    b.evaluate(skill(), transition())
    assert b.breaker.is_open and len(endpoint.requests) == 1
    clock.t = 29.0
    b.evaluate(skill(), transition())
    assert len(endpoint.requests) == 1
    clock.t = 31.0
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), transition()) == Judgement(True, False, "panel opened")
    assert not b.breaker.is_open and len(endpoint.requests) == 2
    notes = b.take_notes()
    assert notes[-1] == "endpoint answers again: back to the VLM"
    assert any("back to the VLM" in line for line in b.test_logs)


def test_breaker_off_with_zero_failures(endpoint):
    b = brain_for(endpoint, max_retries=0, breaker_failures=0)
    endpoint.default = Reply(status=503)
    for _ in range(5):
        b.evaluate(skill(), transition())
    assert len(endpoint.requests) == 5 and not b.breaker.is_open


def unchanged() -> Transition:
    img = np.zeros((20, 30, 3), np.uint8)
    v = View(img, np.eye(4)[0], "s1")
    return Transition(v, View(img.copy(), np.eye(4)[0], "s1"), 0.0, False, False)


def test_known_answers_cost_no_request(endpoint):
    b = brain_for(endpoint)
    tr = unchanged()
    ops = [Operation("click", object_id="obj-1")]
    assert b.evaluate(skill(), tr) == Judgement(
        False, False, OfflineBrain().evaluate(skill(), tr).reason
    )
    assert b.describe_skill(ops, tr) is None  # changes nothing: never kept (SPEC)
    assert b.refine_skill(skill(), tr) is None
    assert endpoint.requests == []
    assert b.usage.calls == 3 and b.usage.offline_calls == 3 and b.usage.failed_calls == 0
    assert b.take_notes() == []  # not a degradation


def test_failed_describe_is_never_meaningless_and_evaluate_marks_only_as_offline(endpoint):
    b = brain_for(endpoint, max_retries=0)
    endpoint.default = Reply(content="no idea")
    tr = transition()
    text = b.describe_skill([Operation("click", object_id="obj-3")], tr)
    assert text is not None and text.name == "click obj-3"
    j = b.evaluate(skill(), tr)
    assert j.progressive is True and j.consistent is True  # a new screen: as offline says


def test_offline_brain_has_no_notes():
    b = OfflineBrain()
    b.evaluate(skill(), transition())
    assert b.take_notes() == []


def test_notes_are_bounded_between_takes():
    b = OfflineBrain()
    for i in range(b.MAX_NOTES + 7):
        b.note(f"note {i}\n  with a break")
    notes = b.take_notes()
    assert len(notes) == b.MAX_NOTES + 1
    assert notes[0] == "note 0 with a break" and notes[-1] == "(and 7 more notes like these)"
    assert b.take_notes() == []
