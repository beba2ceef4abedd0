"""The noise probe (:func:`kgagent.perception.change.idle_change`) is bounded by time, not
by a count of screenshots: where one screenshot takes seconds, each phase still ends
after about ``duration_s``, having compared at least two screenshots."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.perception.change import idle_change


class SlowScreen:
    """A screen whose every screenshot takes ``capture_s`` on a fake clock; it shows
    ``frames`` in turn (the last one for ever)."""

    def __init__(self, frames: list[np.ndarray], capture_s: float) -> None:
        self.frames, self.capture_s = frames, capture_s
        self.now = 0.0
        self.shots = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s

    def observe(self) -> np.ndarray:
        self.now += self.capture_s
        frame = self.frames[min(self.shots, len(self.frames) - 1)]
        self.shots += 1
        return frame


def _blinking(shots: int) -> list[np.ndarray]:
    """A caret that blinks at every screenshot: 3 % of the pixels."""
    off = np.zeros((10, 10), np.uint8)
    on = off.copy()
    on[0, :3] = 255
    return [on if i % 2 else off for i in range(shots)]


def test_a_probe_of_a_screen_that_captures_slowly_lasts_a_few_screenshots() -> None:
    screen = SlowScreen(_blinking(200), capture_s=30.0)
    got = idle_change(
        screen.observe,
        duration_s=2.0,
        interval_s=0.02,  # 100 screenshots a phase by count
        sleep=screen.sleep,
        clock=screen.clock,
    )
    assert got == pytest.approx(0.03)  # the blink, seen in both watches
    # the wait: two screenshots (never equal); each watch: one more
    assert screen.shots == 4
    assert screen.now == pytest.approx(4 * 30.0 + 3 * 0.02)


def test_a_still_screen_that_captures_slowly_ends_after_one_watch() -> None:
    screen = SlowScreen([np.zeros((10, 10), np.uint8)], capture_s=30.0)
    got = idle_change(
        screen.observe, duration_s=2.0, interval_s=0.02, sleep=screen.sleep, clock=screen.clock
    )
    assert got == 0.0 and screen.shots == 3


def test_a_fast_screen_is_watched_for_the_whole_duration() -> None:
    """A screenshot in 10 ms every 20 ms: the wall time, not the count, ends each watch."""
    screen = SlowScreen(_blinking(1000), capture_s=0.01)
    idle_change(
        screen.observe, duration_s=0.3, interval_s=0.02, sleep=screen.sleep, clock=screen.clock
    )
    # wait: 1 + 10 screenshots (0.3 s at 30 ms each); each watch: 10 more
    assert screen.shots == 1 + 10 + 10 + 10
