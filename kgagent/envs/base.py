"""The environment interface, in the spirit of Gymnasium.

``reset(seed) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated,
truncated, info)``. Observations are RGB ``uint8`` arrays of shape (H, W, 3).
``info`` and ``reward`` carry ground truth (floors cleared, turns survived...)
for the benchmark harness only.

The agent never holds an :class:`Env`. It holds a
:class:`~kgagent.agent.screen.Screen`, which exposes exactly what a person at the
screen has: the pixels, the size, a way to act, and whether the program is still
running. The ground truth stays behind in the harness
(:class:`kgagent.agent.runner.Runner`). Environments import neither perception nor
the agent.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgagent.actions import Action


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
    #: When an episode ends before the run's step budget (a game over, a program that
    #: exits), the runner resets the environment and goes on (``run.restart`` overrides).
    restarts: bool = False
    #: Live targets: the inputs in a row whose screen did not hold still before the
    #: settle timeout (0 after one that did). When it reaches
    #: ``desktop.noise_reprobe_after``, the runner watches the target's noise again right
    #: after that input (:meth:`kgagent.agent.screen.Screen.rewatch_after`) and sets it to 0.
    unsettled: int = 0

    @property
    @abstractmethod
    def size(self) -> tuple[int, int]:
        """(width, height) of the observation in pixels (the step log's header records it;
        a first screen of another size is refused, unless the environment is ``live``)."""

    @abstractmethod
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode; return the first screenshot and ground-truth info."""

    @abstractmethod
    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Execute one atomic action; return (obs, reward, terminated, truncated, info).

        Anything else (Gym's old four values, None) ends the run in one line, as does an
        exception of the environment's own (:mod:`kgagent.agent.screen`). Raises
        :class:`kgagent.errors.ActionRefused` for an action outside the target (nothing is
        executed then).
        """

    @abstractmethod
    def observe(self) -> np.ndarray:
        """The current screenshot without acting."""

    @abstractmethod
    def ground_truth(self) -> GroundTruth:
        """The harness's view of progress. Never passed to the agent."""

    def tolerate_motion(self, still: Callable[[np.ndarray, np.ndarray], bool] | None) -> None:  # noqa: B027
        """Live targets: ``still(a, b)`` tells two consecutive screenshots of a
        settled screen apart from a screen that is still reacting. The runner
        sets it from the measured idle change; a still program needs none (None)."""

    def end_info(self) -> dict[str, Any]:
        """What the step log records when an episode ends (e.g. a program's exit code)."""
        return {}

    def notes(self) -> list[str]:
        """What the environment learned about the program that the user should hear at
        the end of a run (one line each; the runner prints them)."""
        return []

    def events(self) -> list[str]:
        """What the environment did on its own since the last call, one line each (a
        window put back on the screen, a replaced window followed); the runner writes
        them into the step's line of the step log (``env_events``). Drains them."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
