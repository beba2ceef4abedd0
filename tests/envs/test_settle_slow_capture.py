"""The settle wait when one capture outlasts ``settle_timeout_s`` (a large screen under
load): it still compares two captures before it says whether the screen held still,
on the scripted screen and simulated clock of tests/envs/test_desktop_settle.py."""

from __future__ import annotations

import pytest
from test_desktop_settle import BEFORE, SETTINGS, _env


def test_a_still_screen_whose_first_capture_outlasts_the_timeout_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: 0, grab_s=2.5, **SETTINGS)  # timeout 2 s
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 0
    assert clock.now == pytest.approx(5.0)  # two captures, no sleep between them


def test_a_reaction_seen_by_a_capture_past_the_timeout_settles_when_it_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: 1, grab_s=2.5, **SETTINGS)
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 1 and clock.now == pytest.approx(5.0)
    env, clock = _env(monkeypatch, lambda t: 1, grab_s=2.5, **SETTINGS)
    _, settled = env.settle(None)  # a program's start: no input before
    assert settled


def test_slow_captures_that_differ_still_did_not_hold_still(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: int(t), grab_s=2.5, **SETTINGS)
    frame, settled = env.settle(BEFORE)
    assert settled is False and frame[0, 0, 0] == 5  # the second capture, at 5 s
    assert clock.now == pytest.approx(5.0)
