"""Fixtures of the brain tests: a local OpenAI-compatible endpoint per test."""

from __future__ import annotations

import pytest

from .fake_endpoint import FakeEndpoint


@pytest.fixture(autouse=True)
def no_base_url_variable(monkeypatch):
    """$OPENAI_BASE_URL stands in for brain.base_url: a value in the shell that runs the
    tests must not choose their endpoint (tests that need it set it themselves)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def endpoint():
    ep = FakeEndpoint().start()
    yield ep
    ep.stop()
