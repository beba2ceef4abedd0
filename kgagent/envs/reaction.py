"""How long to wait for a program that has not reacted yet: its own reaction time, measured.

The settle wait after an input ends, when the screen has not changed, after
``desktop.settle_quiet_s``: the input is taken to have changed nothing. A program that
draws less often than that (a game at 5 frames a second draws every 200 ms) shows a
reaction later than the wait: the input is judged to have changed nothing, and the
change goes to no input (``Screen.catch_up``) or, within one capture, to the next. Its
own reaction times say so: :class:`ReactionWait` keeps the times from input to first
change of the recent inputs that did change the screen, and the quiet wait becomes
``margin`` × their 90th percentile (one change in ten that was not a reaction, a
program's own animation, does not set it), never shorter than the setting and never
longer than the settle timeout.

Only reactions the wait saw are counted, so the estimate starts low; ``margin`` > 1
lets each longer wait see later reactions, and the wait grows to the program's real
reaction time within a few dozen inputs. A program whose reactions all come later than
``settle_quiet_s`` is never seen reacting: its setting must be raised by hand. The
wait only ever lengthens the setting: a program that answers at once keeps
``settle_quiet_s``.

The end of a reaction is not followed the same way. A reaction is over once the screen
has held still for ``desktop.settle_still_s`` (40 ms, over a frame at 30 fps); an
animation drawn at fewer frames a second "holds still" between two of its frames, and
the rest of it is a late change, credited to no input (``Screen.catch_up``) while the
action's effect is measured on a half-drawn screen. GNOME's Lights Off fades its lights
at about 20 frames a second under Xvfb (frames 45-57 ms apart). Gaps longer than the
wait are never seen within it, and lengthening the wait from what is seen after it
cannot tell a slow animation from the program's own motion (Crafter's world, every
200 ms while its player sleeps), which would lengthen it without end. So
:class:`StillCheck` only measures and says so: when the agent looks again within one
more still wait of a reaction's end (the program's own slower motion is not seen that
soon), whether the screen had changed; when more than one reaction in ten had, the run
ends with a line that names the setting to raise.
"""

from __future__ import annotations

import math
from collections import deque

#: the recent reactions the wait follows: enough to see a 5 fps program's slowest
#: frame phase among them, few enough to follow a program that speeds up (ours)
WINDOW = 32
#: reactions seen before the wait adapts: one slow first frame (a program's warm-up)
#: does not set it alone (ours)
MIN_SEEN = 5


class ReactionWait:
    """The quiet wait (s) after an input, from the program's recent reaction times."""

    def __init__(self, floor_s: float, margin: float, cap_s: float) -> None:
        self.floor_s = floor_s
        self.margin = margin
        self.cap_s = max(cap_s, floor_s)
        self._seen: deque[float] = deque(maxlen=WINDOW)
        self.count = 0

    def record(self, seconds: float) -> None:
        """An input's first change showed ``seconds`` after the input was sent."""
        self._seen.append(max(0.0, float(seconds)))
        self.count += 1

    @property
    def p90_s(self) -> float | None:
        """The recent reactions' 90th percentile (nearest rank), once enough were seen."""
        if len(self._seen) < MIN_SEEN:
            return None
        ranked = sorted(self._seen)
        return ranked[math.ceil(0.9 * len(ranked)) - 1]

    @property
    def quiet_s(self) -> float:
        """How long an input may show nothing before it counts as having changed nothing."""
        p90 = self.p90_s
        if self.margin <= 0 or p90 is None:
            return self.floor_s
        return min(self.cap_s, max(self.floor_s, self.margin * p90))

    def note(self) -> str | None:
        """One line for the user when the wait was lengthened, else None."""
        p90, quiet = self.p90_s, self.quiet_s
        if p90 is None or quiet <= self.floor_s:
            return None
        return (
            f"the program's reactions came up to {p90 * 1000:.0f} ms after an input (90th "
            "percentile), "
            f"so an input waits {quiet * 1000:.0f} ms for one (desktop.settle_quiet_s "
            f"{self.floor_s * 1000:.0f} ms; desktop.settle_reaction_margin {self.margin:g})"
        )


class StillCheck:
    """How often a reaction had gone on within one more still wait after its wait ended."""

    def __init__(self, still_s: float) -> None:
        self.still_s = still_s
        self.checked = 0
        self.went_on = 0

    def record(self, went_on: bool) -> None:
        self.checked += 1
        self.went_on += bool(went_on)

    def note(self) -> str | None:
        """One line for the user when more than one reaction in ten (of ten or more) had
        gone on, else None."""
        n, k = self.checked, self.went_on
        if n < 10 or k * 10 <= n:
            return None
        return (
            f"after {k} of {n} reactions the screen changed again within "
            f"{self.still_s * 1000:.0f} ms of holding still: the program draws its "
            "animations less often than desktop.settle_still_s, so part of each was "
            "credited to no input; raise it (e.g. --set desktop.settle_still_s="
            f"{2 * self.still_s:g})"
        )
