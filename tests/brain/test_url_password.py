"""A password in the endpoint's URL is used for requests and shown nowhere.

``http://alice:PASSWORD@host/v1`` reaches the server as given (HTTP basic auth), while
every message, note, error, the step log's header and summary, and the memory folder
show ``http://alice:***@host/v1``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from command_lines import play_command

from kgagent.brain import make_brain
from kgagent.brain.endpoint import EndpointUnusable, Redactor, shown_url, url_secrets

from .fake_endpoint import PROFILES, FakeEndpoint
from .helpers import brain_for, make_cfg, skill, transition

PASSWORD = "s3cretPW"


def with_password(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@")


def test_shown_url_masks_the_password_only():
    assert shown_url(f"http://alice:{PASSWORD}@h:8000/v1") == "http://alice:***@h:8000/v1"
    assert shown_url("https://h:8000/v1") == "https://h:8000/v1"
    assert shown_url("http://alice@h/v1") == "http://alice@h/v1"  # a user name is no secret
    assert shown_url("http://h:8000/v1/x@y") == "http://h:8000/v1/x@y"  # no userinfo
    assert url_secrets("http://alice:s3cret%40PW@h/v1") == ("s3cret%40PW", "s3cret@PW")
    assert url_secrets("http://h/v1") == ()
    r = Redactor(None, *url_secrets(f"http://alice:{PASSWORD}@h/v1"))
    said = r(f"Invalid URL 'http://bob:hunter2@h/v1': refused {PASSWORD}")
    assert said == "Invalid URL 'http://bob:***@h/v1': refused ***"


def test_requests_use_the_password_and_nothing_shows_it(endpoint):
    endpoint.profile = PROFILES["ollama"]  # a step down: a line that names the endpoint
    url = with_password(endpoint.base_url)
    logs: list[str] = []
    cfg = make_cfg(endpoint, base_url=url)
    b = make_brain(cfg, log=logs.append)
    b.evaluate(skill(), transition())
    assert endpoint.requests[0]["headers"]["Authorization"].startswith("Basic ")  # sent
    shown = with_password(endpoint.base_url).replace(PASSWORD, "***")
    said = logs + b.take_notes() + [str(b.figures())]
    assert any(shown in line for line in said) and PASSWORD not in " ".join(said)


def test_a_setup_error_does_not_show_the_password(endpoint):
    b = brain_for(endpoint, base_url=with_password(endpoint.base_url.removesuffix("/v1")))
    with pytest.raises(EndpointUnusable) as e:
        b.evaluate(skill(), transition())
    assert "http://alice:***@" in str(e.value) and PASSWORD not in str(e.value)


def play(memory: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = play_command(memory, *args, steps=30, env="cardgame")  # 30: the brain is asked
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def files_holding(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_run_shows_and_stores_no_password(tmp_path):
    """`kgagent play --brain-url http://alice:PW@…`: stdout, stderr, the step log (header
    config and summary) and every file of the memory folder hold no password; a run that
    stops on a wrong URL says so without it too."""
    ep = FakeEndpoint(PROFILES["ollama"]).start()
    url = with_password(ep.base_url)
    unset = ("--set", "brain.api_key_env=KGAGENT_UNSET_KEY")
    try:
        ok = play(tmp_path / "mem", "--brain-url", url, *unset)
        stopped = play(tmp_path / "mem2", "--brain-url", url + "/chat/completions", *unset)
    finally:
        ep.stop()
    assert ok.returncode == 0, ok.stderr
    assert len(ep.requests) > 1 and ep.requests[0]["headers"]["Authorization"].startswith("Basic")
    assert "at http://alice:***@127.0.0.1:" in ok.stdout + ok.stderr
    assert PASSWORD not in ok.stdout + ok.stderr
    (log,) = (tmp_path / "mem" / "runs").glob("*.jsonl")
    assert "http://alice:***@" in log.read_text()
    assert files_holding(tmp_path / "mem", PASSWORD) == []
    assert stopped.returncode == 1 and "did you mean http://alice:***@127.0.0.1:" in stopped.stderr
    assert PASSWORD not in stopped.stdout + stopped.stderr
    assert files_holding(tmp_path / "mem2", PASSWORD) == []
