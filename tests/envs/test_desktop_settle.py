"""DesktopEnv's settle wait on a scripted screen and a simulated clock (no display).

The waits are settings (``desktop.settle_quiet_s``, ``settle_still_s``,
``settle_timeout_s``); these tests check that a wait lasts what its setting says, not
up to a whole polling interval more, and that a reaction, a quiet input and a screen
that never holds still each end the way the docstring of ``_settle`` says.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kgagent.config_sections import DesktopConfig
from kgagent.envs import desktop
from kgagent.envs.desktop import DesktopEnv


class Clock:
    """``time.monotonic`` and ``time.sleep`` of the desktop module; a capture takes ``grab_s``."""

    def __init__(self, grab_s: float) -> None:
        self.now = 0.0
        self.grab_s = grab_s
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        assert s >= 0
        self.sleeps.append(s)
        self.now += s


def _env(
    monkeypatch: pytest.MonkeyPatch, screen: Callable[[float], int], grab_s: float = 0.004, **cfg
) -> tuple[DesktopEnv, Clock]:
    """An env whose capture shows frame number ``screen(t)`` at simulated time t."""
    clock = Clock(grab_s)
    monkeypatch.setattr(desktop, "time", clock)
    env = DesktopEnv.__new__(DesktopEnv)  # no display: only the settle loop is exercised
    env.config = DesktopConfig(**cfg)
    env._still = None

    def grab() -> np.ndarray:
        clock.now += clock.grab_s
        return np.full((4, 4, 3), screen(clock.now), np.uint8)

    env._grab = grab  # type: ignore[method-assign]
    return env, clock


SETTINGS = {
    "settle_interval_s": 0.03,
    "settle_quiet_s": 0.09,
    "settle_still_s": 0.04,
    "settle_timeout_s": 2.0,
}


def test_an_input_that_changes_nothing_waits_the_quiet_time_and_one_capture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: 0, **SETTINGS)
    frame, settled = env._settle()
    assert settled and frame[0, 0, 0] == 0
    # whole intervals would end at 0.106 (three intervals, four captures): 16 ms late
    assert clock.now == pytest.approx(0.09 + 0.004)
    assert clock.sleeps == pytest.approx([0.03, 0.03, 0.018])


def test_a_reaction_settles_still_time_after_its_last_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the program redraws at 0.05 and 0.07 s, then holds still
    env, clock = _env(monkeypatch, lambda t: 0 if t < 0.05 else 1 if t < 0.07 else 2, **SETTINGS)
    frame, settled = env._settle()
    assert settled and frame[0, 0, 0] == 2
    # last change seen by the capture that ended at 0.072 (poll at 0.038 + 0.03 + 0.004)
    assert clock.now == pytest.approx(0.072 + 0.04 + 0.004)


def test_a_screen_that_never_holds_still_stops_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: int(t * 1000) % 251, **SETTINGS)
    _, settled = env._settle()
    assert settled is False
    assert 2.0 <= clock.now <= 2.0 + 0.004 + 1e-9  # the last poll lands on the deadline


def test_a_reaction_after_the_quiet_time_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quiet time is the setting that decides it: a program slower than it (a frame
    every 200 ms) is seen at the next step, not within this one."""
    env, clock = _env(monkeypatch, lambda t: 0 if t < 0.15 else 1, **SETTINGS)
    frame, settled = env._settle()
    assert settled and frame[0, 0, 0] == 0 and clock.now < 0.15
