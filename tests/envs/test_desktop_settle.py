"""The desktop's settle wait (:class:`kgagent.envs.settle.Settler`) on a scripted screen and a simulated clock (no display).

The waits are settings (``desktop.settle_quiet_s``, ``settle_still_s``,
``settle_timeout_s``); these tests check that a wait lasts what its setting says, not
up to a whole polling interval more, and that a reaction, a quiet input and a screen
that never holds still each end the way the docstring of ``_settle`` says. The quiet
wait follows a program that draws less often than it (``settle_reaction_margin``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kgagent.config_sections import DesktopConfig
from kgagent.envs import settle
from kgagent.envs.reaction import MIN_SEEN, ReactionWait, StillCheck
from kgagent.envs.settle import Settler


class Clock:
    """``time.monotonic`` and ``time.sleep`` of the settle module; a capture takes ``grab_s``."""

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


class Scripted:
    """What DesktopEnv does with its :class:`Settler`, on a screen that shows frame number
    ``screen(t)`` at simulated time t: ``settle`` after an input, ``observe`` when the
    agent looks (Screen.catch_up)."""

    def __init__(self, screen: Callable[[float], int], clock: Clock, config: DesktopConfig):
        self.screen, self.clock = screen, clock
        self.settler = Settler(config)
        self.last: np.ndarray | None = None

    def grab(self) -> np.ndarray:
        self.clock.now += self.clock.grab_s
        return np.full((4, 4, 3), self.screen(self.clock.now), np.uint8)

    def settle(self, before: np.ndarray | None) -> tuple[np.ndarray, bool]:
        return self.settler.settle(self.grab, before)

    def observe(self) -> np.ndarray:
        now = self.grab()
        self.settler.looked(self.last, now)
        self.last = now
        return now

    def notes(self) -> list[str]:
        return self.settler.notes()


def _env(
    monkeypatch: pytest.MonkeyPatch, screen: Callable[[float], int], grab_s: float = 0.004, **cfg
) -> tuple[Scripted, Clock]:
    """A settle wait on frame number ``screen(t)`` at simulated time t (no display)."""
    clock = Clock(grab_s)
    monkeypatch.setattr(settle, "time", clock)
    return Scripted(screen, clock, DesktopConfig(**cfg)), clock


BEFORE = np.zeros((4, 4, 3), np.uint8)  # the screen before the input: frame 0

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
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 0
    # whole intervals would end at 0.106 (three intervals, four captures): 16 ms late
    assert clock.now == pytest.approx(0.09 + 0.004)
    assert clock.sleeps == pytest.approx([0.03, 0.03, 0.018])


def test_a_reaction_settles_still_time_after_its_last_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the program redraws at 0.05 and 0.07 s, then holds still
    env, clock = _env(monkeypatch, lambda t: 0 if t < 0.05 else 1 if t < 0.07 else 2, **SETTINGS)
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 2
    # last change seen by the capture that ended at 0.072 (poll at 0.038 + 0.03 + 0.004)
    assert clock.now == pytest.approx(0.072 + 0.04 + 0.004)


def test_a_screen_that_never_holds_still_stops_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, clock = _env(monkeypatch, lambda t: int(t * 1000) % 251, **SETTINGS)
    _, settled = env.settle(BEFORE)
    assert settled is False
    assert 2.0 <= clock.now <= 2.0 + 0.004 + 1e-9  # the last poll lands on the deadline


def test_a_reaction_after_the_quiet_time_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before any reaction was seen the quiet time is the setting: a reaction later than
    it is seen at the next step, not within this one."""
    env, clock = _env(monkeypatch, lambda t: 0 if t < 0.15 else 1, **SETTINGS)
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 0 and clock.now < 0.15


def _slow_program(
    monkeypatch: pytest.MonkeyPatch, inputs: int, **cfg
) -> tuple[Scripted, list[bool]]:
    """A program that draws 5 frames a second shows each input at its next frame; the
    inputs come at times with every phase against the frames. Returns the env and, per
    input, whether its settle wait saw the reaction."""
    frame_s, reacted_at = 0.2, []

    def screen(t: float) -> int:  # how many inputs the screen shows by time t
        return sum(r <= t for r in reacted_at)

    env, clock = _env(monkeypatch, screen, **{**SETTINGS, **cfg})
    seen, frame = [], BEFORE
    for i in range(inputs):
        clock.now = 1.0 + i * 0.537  # 0.537 s apart: phases spread over a frame
        reacted_at.append((clock.now // frame_s + 1) * frame_s)
        frame, settled = env.settle(frame)  # before: what the last wait returned
        seen.append(settled and int(frame[0, 0, 0]) == i + 1)
    return env, seen


def test_the_quiet_wait_follows_a_program_that_draws_less_often_than_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, seen = _slow_program(monkeypatch, 60)
    assert not all(seen[:MIN_SEEN])  # with the setting (90 ms) some reactions come after it
    assert all(seen[-30:])  # later the wait has grown to the program's frame time
    assert 0.2 <= env.settler.reactions.quiet_s <= 1.5 * 0.2 + 0.05
    assert env.notes() and "desktop.settle_reaction_margin 1.5" in env.notes()[0]


def test_with_the_margin_at_zero_the_quiet_wait_stays_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, seen = _slow_program(monkeypatch, 60, settle_reaction_margin=0.0)
    assert sum(seen[-30:]) < 25  # about half the reactions fall after 90 ms
    assert env.settler.reactions.quiet_s == 0.09 and env.notes() == []


def test_the_reaction_wait_estimate() -> None:
    w = ReactionWait(0.1, 1.5, 2.0)
    for _ in range(MIN_SEEN - 1):
        w.record(0.3)
    assert w.quiet_s == 0.1 and w.note() is None  # too few seen
    w.record(0.3)
    assert w.quiet_s == pytest.approx(0.45) and "300 ms" in (w.note() or "")
    for _ in range(40):  # a fast program: the setting is the floor, never shortened
        w.record(0.01)
    assert w.quiet_s == 0.1 and w.note() is None
    for r in [0.01] * 28 + [5.0] * 4:  # 4 strays in 32 (12.5 %) set the 90th percentile
        w.record(r)
    assert w.quiet_s == pytest.approx(2.0)  # capped at the settle timeout
    w2 = ReactionWait(0.1, 1.5, 2.0)
    for r in [0.01] * 29 + [5.0] * 3:  # 3 in 32 (9 %) do not
        w2.record(r)
    assert w2.quiet_s == 0.1


def test_a_reaction_before_the_first_capture_only_has_to_hold_still(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program that answers within milliseconds has drawn its reaction by the first
    capture: the wait is the still time, not the quiet time of an input that did nothing."""
    env, clock = _env(monkeypatch, lambda t: 1, **SETTINGS)
    frame, settled = env.settle(BEFORE)
    assert settled and frame[0, 0, 0] == 1
    assert clock.now == pytest.approx(0.004 + 0.04 + 0.004)  # < 0.094, the quiet wait
    assert env.settler.reactions.count == 1


def test_a_start_is_no_reaction(monkeypatch: pytest.MonkeyPatch) -> None:
    env, _ = _env(monkeypatch, lambda t: 0 if t < 0.05 else 1, **SETTINGS)
    frame, settled = env.settle(None)  # a launched program's first frame
    assert settled and frame[0, 0, 0] == 1 and env.settler.reactions.count == 0


def _animated_program(
    monkeypatch: pytest.MonkeyPatch, inputs: int, gaps: tuple[float, ...], **cfg
) -> Scripted:
    """A program that answers each input at once with an animation whose frames come
    ``gaps`` apart; the agent looks again 10 ms after each wait ends (Screen.catch_up)."""
    frames_at: list[float] = []

    def screen(t: float) -> int:  # the frames drawn by time t
        return sum(f <= t for f in frames_at)

    env, clock = _env(monkeypatch, screen, **{**SETTINGS, "settle_interval_s": 0.005, **cfg})
    frame = env.observe()
    for i in range(inputs):
        clock.now = 1.0 + i * 2.0
        t = clock.now + 0.001
        frames_at.append(t)
        for g in gaps:
            t += g
            frames_at.append(t)
        frame, _settled = env.settle(frame)
        env.last = frame
        clock.now += 0.01
        frame = env.observe()
    return env


def test_an_animation_slower_than_the_still_wait_is_named_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames 45-55 ms apart (a toolkit's fade at about 20 fps) hold still longer than
    40 ms between two of them: the run ends with the setting to raise."""
    env = _animated_program(monkeypatch, 12, (0.03, 0.045, 0.05, 0.055))
    assert env.settler.stills.checked == 12 and env.settler.stills.went_on == 12
    notes = [n for n in env.notes() if "settle_still_s" in n]
    assert notes and "after 12 of 12 reactions" in notes[0] and "settle_still_s=0.08" in notes[0]


def test_an_animation_faster_than_the_still_wait_is_waited_out_and_not_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = _animated_program(monkeypatch, 12, (0.02, 0.03, 0.03))
    assert (
        env.settler.stills.checked == 12 and env.settler.stills.went_on == 0 and env.notes() == []
    )


def test_a_program_s_own_slow_motion_is_no_reaction_going_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A world that moves on its own every 200 ms (Crafter's, while its player sleeps)
    changes the screen after most waits, but not within one more still wait of their end."""
    own: list[float] = []

    def screen(t: float) -> int:
        return sum(f <= t for f in own) + int(t // 0.2)

    env, clock = _env(monkeypatch, screen, **{**SETTINGS, "settle_interval_s": 0.005})
    frame = env.observe()
    for i in range(60):
        clock.now = 1.0 + i * 0.537
        own.append(clock.now + 0.001)  # the input's reaction: one frame at once
        frame, _settled = env.settle(frame)
        env.last = frame
        clock.now += 0.01
        frame = env.observe()
    assert (
        env.settler.stills.checked > 30
        and env.settler.stills.went_on * 10 <= env.settler.stills.checked
    )
    assert not any("settle_still_s" in n for n in env.notes())


def test_the_still_check_needs_ten_reactions_and_more_than_one_in_ten() -> None:
    c = StillCheck(0.04)
    for went_on in [True] * 9:
        c.record(went_on)
    assert c.note() is None  # too few to judge
    for _ in range(81):
        c.record(False)
    assert c.note() is None  # 9 in 90
    c.record(True)
    assert "after 10 of 91 reactions" in (c.note() or "")
