"""A circuit breaker for the model endpoint.

Why: a dead or overloaded endpoint used to cost every role call its full retry
budget (minutes per call at the default timeout). After ``failures`` consecutive
failed role calls the breaker opens: role calls are answered offline, without a
request, until ``cooldown_calls`` calls or ``cooldown_s`` seconds have passed;
then one call probes the endpoint (half-open). A success closes the breaker; a
failure opens it again for another cool-down.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class CircuitBreaker:
    """Counts consecutive failures; says when to skip the endpoint (see the module docstring)."""

    def __init__(
        self,
        failures: int,
        cooldown_calls: int,
        cooldown_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self.cooldown_calls = cooldown_calls
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.consecutive = 0
        self.trips = 0  # how many times it opened
        self._open_since: float | None = None
        self._skipped = 0

    @property
    def is_open(self) -> bool:
        return self._open_since is not None

    def allow(self) -> bool:
        """May this role call use the endpoint? (A paused call counts toward the cool-down.)"""
        if self._open_since is None:
            return True
        elapsed = self._clock() - self._open_since
        if self._skipped >= self.cooldown_calls or elapsed >= self.cooldown_s:
            return True  # half-open: one probe; its outcome closes or reopens
        self._skipped += 1
        return False

    def remaining(self) -> str:
        """The rest of the cool-down, in words (for notes)."""
        if self._open_since is None:
            return "now"
        calls = max(0, self.cooldown_calls - self._skipped)
        secs = max(0.0, self.cooldown_s - (self._clock() - self._open_since))
        return f"after {calls} more call(s) or {secs:.0f} s"

    @property
    def struggling(self) -> bool:
        """The last call failed: the next one should not spend a full retry budget."""
        return self.consecutive > 0

    def success(self) -> bool:
        """Record a good call; True when it closed an open breaker."""
        was_open = self._open_since is not None
        self.consecutive = 0
        self._open_since = None
        self._skipped = 0
        return was_open

    def failure(self) -> bool:
        """Record a failed call; True when the breaker (re)opens now."""
        self.consecutive += 1
        if self.failures <= 0:
            return False
        if self._open_since is not None or self.consecutive >= self.failures:
            self._open_since = self._clock()
            self._skipped = 0
            self.trips += 1
            return True
        return False
