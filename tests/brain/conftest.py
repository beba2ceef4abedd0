"""Fixtures of the brain tests: a local OpenAI-compatible endpoint per test."""

from __future__ import annotations

import pytest

from .fake_endpoint import FakeEndpoint


@pytest.fixture
def endpoint():
    ep = FakeEndpoint().start()
    yield ep
    ep.stop()
