"""The environment interface, in the spirit of Gymnasium.

``reset(seed) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated,
truncated, info)``. Observations are RGB ``uint8`` arrays of shape (H, W, 3).
``info`` and ``reward`` carry ground truth (floors cleared, turns survived...)
for the benchmark harness only.

The agent never holds an :class:`Env`. It holds a :class:`Screen`, which exposes
exactly what a person at the screen has: the pixels, the size, a way to act,
and whether the program is still running. The ground truth stays behind in
the harness (:class:`kgagent.agent.runner.Runner`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.perception.change import visual_change


@dataclass
class GroundTruth:
    """Progress metrics an environment knows about itself (harness only)."""

    progression: float = 0.0  # floors cleared / turns survived
    score: float = 0.0  # run score / techs researched
    alive: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


class Env(ABC):
    """A program the agent can see and act on."""

    name: str = "env"
    #: The screen may change without any action (a real program: carets, clocks,
    #: animations). The runner then measures that noise before the agent acts.
    live: bool = False

    @property
    @abstractmethod
    def size(self) -> tuple[int, int]:
        """(width, height) of the observation in pixels."""

    @abstractmethod
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode; return the first screenshot and ground-truth info."""

    @abstractmethod
    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Execute one atomic action; return (obs, reward, terminated, truncated, info).

        Raises :class:`kgagent.errors.ActionRefused` for an action outside the
        target (nothing is executed then).
        """

    @abstractmethod
    def observe(self) -> np.ndarray:
        """The current screenshot without acting."""

    @abstractmethod
    def ground_truth(self) -> GroundTruth:
        """The harness's view of progress. Never passed to the agent."""

    def tolerate_motion(self, still: Callable[[np.ndarray, np.ndarray], bool]) -> None:  # noqa: B027
        """Live targets: ``still(a, b)`` tells two consecutive screenshots of a
        settled screen apart from a screen that is still reacting. The runner
        sets it from the measured idle change; a still program needs none."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Screen:
    """What the agent is allowed to see of an environment: pixels in, actions out."""

    __slots__ = ("_env", "_done", "_last", "_reaction", "_change_floor", "_threshold")

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

    @property
    def size(self) -> tuple[int, int]:
        return self._env.size

    @property
    def done(self) -> bool:
        """True once the program has ended (a real desktop app closed, a game over)."""
        return self._done

    def observe(self) -> np.ndarray:
        if self._last is None:
            self._last = self._env.observe()
        return self._last

    @property
    def last_reaction(self) -> tuple[np.ndarray, Action] | None:
        """The screen before the last action that changed the screen, and that action.

        The agent's own short-term memory of cause and effect: the current screen
        is what the program made of that action (actions since changed nothing).
        """
        return self._reaction

    def act(self, action: Action) -> np.ndarray:
        before = self._last
        obs, _reward, terminated, truncated, _info = self._env.step(action)
        self._done = bool(terminated or truncated)
        self._last = obs
        if before is not None and self._changed(before, obs):
            self._reaction = (before, action)
        return obs

    def _changed(self, before: np.ndarray, after: np.ndarray) -> bool:
        if before.shape != after.shape:
            return True
        if self._change_floor <= 0:
            return not np.array_equal(before, after)
        return visual_change(before, after, self._threshold) > self._change_floor

    def refresh(self) -> np.ndarray:
        self._last = self._env.observe()
        return self._last
