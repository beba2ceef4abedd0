"""Where a step's time goes: acting on the program, perception, memory, the brain.

Every step record carries ``times_ms``: milliseconds by part, each part exclusive of
the parts it calls (a memory call made while segmenting counts as memory, not as
segmentation). The parts are measured by wrapping the agent's collaborators
(:class:`Timed`) and by the screen around each action; the environment may report its
own parts of an action (a desktop: sending the input, waiting for the screen to settle,
capturing it) in ``info["timing"]``. Template matching of remembered objects is ``ground``
(to execute a skill, and to ask whether a candidate skill's objects are on the screen:
the part that grows with the library). What is left is the agent's own work (choosing,
bookkeeping): ``other``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any


class PartTimes:
    """Exclusive seconds per named part, for one step at a time."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # [start, time spent in nested parts]

    def run(self, part: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, its time (less nested parts') counted as ``part``."""
        frame = [time.perf_counter(), 0.0]
        self._stack.append(frame)
        try:
            return fn(*args, **kwargs)
        finally:
            self._stack.pop()
            total = time.perf_counter() - frame[0]
            self._spent[part] += total - frame[1]
            if self._stack:
                self._stack[-1][1] += total

    def split(self, whole: str, part: str, seconds: float) -> None:
        """Move ``seconds`` of ``whole`` into ``part`` (a part the environment measured)."""
        seconds = min(seconds, self._spent[whole])
        self._spent[whole] -= seconds
        self._spent[part] += seconds

    def take(self, total_s: float) -> dict[str, float]:
        """The step's parts in ms, ``other`` = the rest of ``total_s``; the counts restart."""
        out = {k: round(1000 * v, 2) for k, v in sorted(self._spent.items())}
        out["other"] = round(1000 * max(0.0, total_s - sum(self._spent.values())), 2)
        self._spent.clear()
        return out


class Timed:
    """Forwards attribute access to ``target``; its method calls count as ``part``."""

    def __init__(self, target: Any, times: PartTimes, part: str) -> None:
        self._target, self._times, self._part = target, times, part

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            return self._times.run(self._part, attr, *args, **kwargs)

        return timed
