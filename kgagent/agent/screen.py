"""The agent's only view of a program: pixels in, actions out.

A :class:`Screen` wraps an :class:`~kgagent.envs.base.Env` and hides everything a
person at the screen would not have: no reward, no info, no ground truth. It also
keeps the agent's shortest memory of cause and effect, the last action that changed
the screen (:attr:`Screen.last_reaction`), which augmentation reads to look first
where the program reacted.

It is also where an environment of one's own meets the agent, so what such an
environment gets wrong is said here in one line naming it (an
:class:`~kgagent.errors.EnvironmentError_`), not by a failure deep in the loop: a screen
that is no RGB ``uint8`` array, a first screen of another size than ``Env.size``, a
``step()`` that returns other than five values, an exception of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.envs.base import Env
from kgagent.errors import EnvironmentError_, KGAgentError
from kgagent.perception.change import visual_change

from .timing import PartTimes


def rgb(frame: object, env: Env) -> np.ndarray:
    """``frame`` when it is a screen the agent can read (an RGB ``uint8`` array, height ×
    width × 3); an environment of one's own that gives another kind is told so in one
    line, not by a failure deep in perception."""
    if (
        isinstance(frame, np.ndarray)
        and frame.dtype == np.uint8
        and frame.ndim == 3
        and frame.shape[2] == 3
        and frame.shape[0] > 0
        and frame.shape[1] > 0
    ):
        return frame
    what = (
        f"{frame.dtype} {tuple(frame.shape)}"
        if isinstance(frame, np.ndarray)
        else type(frame).__name__
    )
    raise EnvironmentError_(
        f"environment {env.name!r} gave a screen of {what}: a screen is an RGB array of "
        "uint8, (height, width, 3)"
    )


#: What ``Env.step`` returns, as the one-line errors name it.
STEP_RETURNS = "(obs, reward, terminated, truncated, info)"


def call_env(env: Env, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """``fn(*args)``, a call into an environment; what its own code raises is one line
    naming the environment, the call and the exception (``--debug`` shows its traceback),
    as ``gym:ID`` games say it. kgagent's own errors (a window closed, an action refused)
    and a machine out of memory (the CLI says that in its own words) pass as they are."""
    try:
        return fn(*args, **kw)
    except (KGAgentError, MemoryError):
        raise
    except Exception as e:
        raise EnvironmentError_(
            f"environment {env.name!r} failed in {what}(): {type(e).__name__}: {e}"
        ) from e


def step_result(out: object, env: Env) -> tuple[Any, Any, Any, Any, Any]:
    """``out`` when it is what ``Env.step`` returns (five values); None, Gym's old
    four-tuple or anything else is told in one line, not by a failed unpacking."""
    if isinstance(out, (tuple, list)) and len(out) == 5:
        return tuple(out)  # type: ignore[return-value]
    if isinstance(out, (tuple, list)):
        what = f"a {type(out).__name__} of {len(out)} values"
    else:
        what = "None" if out is None else f"a {type(out).__name__}"
    old = " (Gym's old (obs, reward, done, info)?)" if what.endswith("of 4 values") else ""
    raise EnvironmentError_(
        f"environment {env.name!r} returned {what} from step(): step(action) returns "
        f"{STEP_RETURNS}{old}"
    )


class Screen:
    """What the agent is allowed to see of an environment: pixels in, actions out."""

    __slots__ = (
        "_env",
        "_done",
        "_last",
        "_reaction",
        "_change_floor",
        "_threshold",
        "timer",
        "late_changes",
        "_rewatch",
        "_sized",
    )

    def __init__(self, env: Env, *, change_floor: float = 0.0, threshold: int = 30) -> None:
        """``change_floor``: the Δ (grey-level ``threshold``) an action must exceed to count
        as the program's reaction (a live screen's own noise stays below it); 0 counts any
        changed pixel."""
        self._env = env
        self._done = False
        self._last: np.ndarray | None = None
        self._reaction: tuple[np.ndarray, Action] | None = None
        self._change_floor = change_floor
        self._threshold = threshold
        #: changes of a live target found by :meth:`catch_up` since the step began
        self.late_changes = 0
        #: where the agent counts the time of acting (``act``, and the parts the
        #: environment reports in ``info["timing"]``); None: not counted
        self.timer: PartTimes | None = None
        self._rewatch: tuple[int, Callable[[], None]] | None = None
        self._sized = False  # the first frame was checked against Env.size

    def rewatch_after(self, n: int, watch: Callable[[], None]) -> None:
        """Live targets: right after the input that makes ``n`` inputs in a row whose screen
        did not hold still (``Env.unsettled``), ``watch()`` runs (the runner's noise watch,
        which sets the count back to 0), timed as the step's ``noise`` part. So a step that
        tries many inputs waits out the settle timeout at most ``n`` times in a row.
        ``n`` = 0: never."""
        self._rewatch = (n, watch) if n > 0 else None

    @property
    def size(self) -> tuple[int, int]:
        return self._env.size

    @property
    def done(self) -> bool:
        """True once the program has ended (a real desktop app closed, a game over)."""
        return self._done

    def observe(self) -> np.ndarray:
        if self._last is None:
            self._last = self._take(call_env(self._env, "observe", self._env.observe))
        return self._last

    def _take(self, frame: object) -> np.ndarray:
        """``frame`` as the agent's screen (:func:`rgb`). The first one is checked against
        ``Env.size``, which the step log's header records: an environment whose size says
        otherwise is told so in one line. Not for a live target, whose window may change
        size between reading its size and the capture (the desktop env follows it)."""
        img = rgb(frame, self._env)
        if not self._sized:
            self._sized = True
            h, w = img.shape[:2]
            size = tuple(self._env.size)
            if not self._env.live and size != (w, h):
                raise EnvironmentError_(
                    f"environment {self._env.name!r} gave a screen {w} wide and {h} high, "
                    f"but its size is {size}: size is (width, height) of its screens in pixels"
                )
        return img

    def begin_step(self) -> None:
        """A step begins: its count of late changes restarts, and the screen is caught up."""
        self.late_changes = 0
        self.catch_up()

    def catch_up(self) -> bool:
        """Before a step and before each execution: a live target (a real program) is
        captured again, and when its screen changed since the last action settled (a
        reaction later than the settle wait, or the program's own motion) what follows
        sees the screen as it is now: the change is credited to no input instead of to
        the next one. Returns whether it changed (``late_changes`` counts it); the
        remembered reaction ends then, as the screen is no longer what that action made
        of it. Other environments change only when acted on: nothing to do."""
        if not self._env.live or self._last is None:
            return False
        if self.timer is None:
            now = call_env(self._env, "observe", self._env.observe)
        else:
            now = self.timer.run("capture", call_env, self._env, "observe", self._env.observe)
        now = self._take(now)
        if not self._changed(self._last, now):
            return False  # the cached frame stays (the state's merge is reused)
        self._last = now
        self._reaction = None
        self.late_changes += 1
        return True

    @property
    def last_reaction(self) -> tuple[np.ndarray, Action] | None:
        """The screen before the last action that changed the screen, and that action.

        The agent's own short-term memory of cause and effect: the current screen
        is what the program made of that action (actions since changed nothing, and
        the screen did not change by itself: :meth:`catch_up`); None when it is not.
        """
        return self._reaction

    def act(self, action: Action) -> np.ndarray:
        before = self._last
        if self.timer is None:
            out = call_env(self._env, "step", self._env.step, action)
        else:
            out = self.timer.run("act", call_env, self._env, "step", self._env.step, action)
        obs, _reward, terminated, truncated, info = step_result(out, self._env)
        if self.timer is not None and isinstance(info, dict):
            for part, seconds in (info.get("timing") or {}).items():
                self.timer.split("act", part, float(seconds))
        self._done = bool(terminated or truncated)
        obs = self._take(obs)
        self._last = obs
        if before is not None and self._changed(before, obs):
            self._reaction = (before, action)
        if self._rewatch is not None and not self._done:
            n, watch = self._rewatch
            if self._env.unsettled >= n:
                if self.timer is None:
                    watch()
                else:
                    self.timer.run("noise", watch)
                # the watch took its time: what changed meanwhile is no input's doing
                self.catch_up()
        return obs

    def _changed(self, before: np.ndarray, after: np.ndarray) -> bool:
        if before.shape != after.shape:
            return True
        if self._change_floor <= 0:
            return not np.array_equal(before, after)
        return visual_change(before, after, self._threshold) > self._change_floor

    def refresh(self) -> np.ndarray:
        self._last = self._take(call_env(self._env, "observe", self._env.observe))
        return self._last
