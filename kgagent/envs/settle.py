"""The wait after an input: poll captures until the program has reacted and holds still.

Why a module of its own: the wait is an algorithm with its own state (the program's
measured reaction times, :mod:`kgagent.envs.reaction`) and its own tests on a scripted
screen and a simulated clock (tests/envs/test_desktop_settle.py); the environment only
hands it a capture function.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from kgagent.config import DesktopConfig
from kgagent.envs.reaction import ReactionWait, StillCheck

Frame = np.ndarray


class Settler:
    """The settle wait of one environment, and what it learns of its program."""

    def __init__(self, config: DesktopConfig) -> None:
        c = self.config = config
        self.reactions = ReactionWait(
            c.settle_quiet_s, c.settle_reaction_margin, c.settle_timeout_s
        )
        self.stills = StillCheck(c.settle_still_s)
        #: the runner's tolerance for a target that moves on its own (None: exact)
        self.still: Callable[[Frame, Frame], bool] | None = None
        self._reacted_at: float | None = None  # the last wait ended on a reaction then

    def settle(self, grab: Callable[[], Frame], before: Frame | None) -> tuple[Frame, bool]:
        """Poll ``grab()`` until the program has reacted to the input and holds still.

        Settled: the screen changed and then held still for the still wait, or it
        showed no change at all for the quiet wait (the input changed nothing). The quiet
        wait is ``settle_quiet_s``, lengthened to ``settle_reaction_margin`` × the 90th
        percentile of the program's recent reactions (:mod:`kgagent.envs.reaction`), which
        each first change seen here adds to; the still wait is ``settle_still_s``
        (:meth:`looked` checks whether a reaction went on after it). ``before`` is the
        screen before the input: a first capture that differs from it shows a reaction
        that came before it (a program that answers within milliseconds), which then only
        has to hold still. None: no input (a program's start), whose time is no reaction.
        Alike means equal, or ``still(prev, cur)`` when the runner measured that the
        target moves on its own (a spinner never gives two equal captures, so without it
        every action would wait the whole ``settle_timeout_s``). Polling every
        ``settle_interval_s`` keeps the wait close to the program's own reaction time;
        the poll before a wait's end is shortened to land on it, so a wait lasts what
        its setting says, not up to one interval and one capture more. It always compares
        at least two captures: when the first alone outlasts ``settle_timeout_s`` (a large
        screen under load), the second decides.
        Returns the last capture and whether it settled before the timeout.
        """
        c = self.config
        quiet, still = self.reactions.quiet_s, c.settle_still_s
        self._reacted_at = None
        start = time.monotonic()
        deadline = start + c.settle_timeout_s
        prev = grab()
        changed_at: float | None = None  # when the screen last changed
        if before is not None and not self.alike(before, prev):
            changed_at = time.monotonic()
            self.reactions.record(changed_at - start)
        while True:  # at least one comparison: a first capture past the timeout is no verdict
            now = time.monotonic()
            due = start + quiet if changed_at is None else changed_at + still
            time.sleep(max(0.0, min(c.settle_interval_s, due - now, deadline - now)))
            cur = grab()
            now = time.monotonic()
            if not self.alike(prev, cur):
                if changed_at is None and before is not None:
                    self.reactions.record(now - start)
                changed_at = now
            elif changed_at is not None and now - changed_at >= still:
                if before is not None:  # looked() checks that it went no further
                    self._reacted_at = now
                return cur, True
            elif changed_at is None and now - start >= quiet:
                return cur, True
            prev = cur
            if now >= deadline:
                return prev, False

    def looked(self, settled: Frame | None, now: Frame) -> None:
        """The environment captured ``now`` after the wait that returned ``settled``:
        within one more still wait of a reaction's end, whether it had gone on (a
        program's own slower motion, a frame every 200 ms, is not seen this soon)."""
        reacted_at, self._reacted_at = self._reacted_at, None
        if reacted_at is None or settled is None:
            return
        if time.monotonic() - reacted_at <= self.config.settle_still_s:
            self.stills.record(not self.alike(settled, now))

    def alike(self, a: Frame, b: Frame) -> bool:
        """Two captures of a screen that did not react: equal, or ``still(a, b)`` when the
        runner measured that the target moves on its own."""
        if a.shape != b.shape:
            return False
        return np.array_equal(a, b) or (self.still is not None and self.still(a, b))

    def notes(self) -> list[str]:
        """The waits' lines for the end of a run (none when the settings held)."""
        return [n for n in (self.reactions.note(), self.stills.note()) if n]
