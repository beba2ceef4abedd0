"""A piece of the key is a secret too: a server that quotes the key without its ``sk-``
prefix, or only its tail, must not put that piece in the error line, the ``--debug``
traceback or the step log's summary (each goes through the endpoint's redactor)."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest

from kgagent.agent.runner import Runner
from kgagent.brain import EndpointUnusable, make_brain
from kgagent.brain.endpoint import Redactor

from .fake_endpoint import FakeEndpoint, Reply
from .helpers import brain_for, skill, transition
from .test_profiles_e2e import config

KEY = "sk-proj-Xq7Lm2Np9Rt4Vw6Yz8Ab1Cd3Ef5Gh0Jk"
BODY = KEY.removeprefix("sk-proj-")  # what a server may quote: the key less its prefix
TAIL = KEY[-14:]  # or its last characters


def pieces() -> list[str]:
    """Every run of 12 characters of the key's body: none may be shown."""
    return [BODY[i : i + 12] for i in range(len(BODY) - 11)]


def test_a_run_of_twelve_characters_of_the_key_is_masked_wherever_it_stands() -> None:
    r = Redactor(KEY)
    assert r(f"Incorrect API key provided: {BODY}.") == "Incorrect API key provided: ***."
    assert r(f"key ending {TAIL}, refused") == "key ending ***, refused"
    assert r(f"proj-{BODY}") == "***"  # the key less "sk-" is a run of it too
    middle = BODY[5:20]
    assert r(f"[{middle}]") == "[***]"
    # two pieces with other text between: each masked, the text between kept
    assert r(f"{BODY[:12]} and {BODY[-12:]}") == "*** and ***"


def test_a_shorter_piece_and_other_text_stay() -> None:
    r = Redactor(KEY)
    assert r(f"key ending {KEY[-4:]}") == f"key ending {KEY[-4:]}"  # OpenAI shows the last 4
    assert r(f"x {BODY[:11]} y") == f"x {BODY[:11]} y"
    assert r("Incorrect API key provided.") == "Incorrect API key provided."
    # a secret shorter than a run is masked only whole
    short = Redactor("Pa55word99")
    assert short("refused Pa55word99 and Pa55word") == "refused *** and Pa55word"


def test_a_401_that_quotes_the_key_without_its_prefix_shows_none_of_it(
    endpoint, monkeypatch
) -> None:
    monkeypatch.setenv("KGAGENT_TEST_KEY", KEY)
    b = brain_for(endpoint, api_key_env="KGAGENT_TEST_KEY")
    endpoint.default = Reply(
        status=401, message=f"Incorrect API key provided: {BODY}. Key ending ...{TAIL}"
    )
    with pytest.raises(EndpointUnusable) as e:
        b.evaluate(skill(), transition())
    line = str(e.value)
    shown = "".join(traceback.format_exception(e.value))  # what --debug prints
    said = " ".join([line, shown, *b.test_logs])
    assert "Incorrect API key provided: ***" in line
    assert not [p for p in pieces() if p in said]


def test_the_step_log_summary_of_such_a_run_shows_none_of_it(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("KGAGENT_TEST_KEY", KEY)
    ep = FakeEndpoint().start()
    ep.default = Reply(status=401, message=f"Incorrect API key provided: {BODY}.")
    try:
        cfg = config(ep.base_url, "local", api_key_env="KGAGENT_TEST_KEY")
        brain = make_brain(cfg.brain, log=lambda m: None)
        runner = Runner(
            cfg, memory_path=tmp_path / "mem", brain=brain, progress=False, log=lambda m: None
        )
        with pytest.raises(EndpointUnusable):
            runner.run(20)
    finally:
        ep.stop()
    (log,) = (tmp_path / "mem" / "runs").glob("*.jsonl")
    text = log.read_text()
    summary = json.loads(text.strip().splitlines()[-1])
    assert summary["type"] == "summary" and "***" in json.dumps(summary)
    assert not [p for p in pieces() if p in text]
