"""The episode's short-term memory: what the agent remembers until the program restarts.

The SA-KG is long-term memory and outlives episodes. Within an episode the agent also
keeps, and forgets at :meth:`Episode.clear`:

* the states visited (the offline brain's "new in this episode");
* the screens seen per state (:class:`ScreenNovelty`, docs/agent.md "Screen novelty");
* stale marks: a skill judged not progressive from a state is not a candidate there
  for ``invocation.stale_steps`` steps (docs/agent.md "Anti-cycling");
* the previous execution: the validated skill whose execution made the current
  screen, which augmentation may extend (docs/agent.md "Where the program reacted").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import cv2
import numpy as np

from kgagent.brain.base import Judgement
from kgagent.config import Config
from kgagent.perception.change import to_gray, visual_change
from kgagent.records import Skill

from .executor import Execution


@dataclass
class PreviousExecution:
    """The last screen-changing execution, when a validated skill made it."""

    skill: Skill
    execution: Execution
    state_id: str  # the state it ran from
    feature: np.ndarray  # that state's feature


class ScreenNovelty:
    """Is a screen a configuration of its state not seen before in this episode?

    The screen is reduced (grey, ``1/screen_novelty_scale`` resolution, area
    averaging) and compared with Δ to every screen of the same state kept for this
    episode; it is new when every Δ exceeds ``rewards.screen_novelty_change``. A new
    screen is remembered: at most ``screen_novelty_cap`` per state and
    ``screen_novelty_total_cap`` over all states, oldest dropped first.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._screens: dict[str, deque[tuple[int, np.ndarray]]] = {}
        self._order: deque[tuple[int, str]] = deque()  # (seq, state) oldest first
        self._seq = 0
        self._count = 0  # screens kept over all states

    def register(self, state_id: str, image: np.ndarray) -> bool:
        """Remember ``image`` as a screen of ``state_id``; True when it was new."""
        rc = self.cfg.rewards
        g = to_gray(image)
        f = max(int(rc.screen_novelty_scale), 1)
        if f > 1:
            h, w = g.shape[:2]
            g = cv2.resize(g, (max(1, w // f), max(1, h // f)), interpolation=cv2.INTER_AREA)
        thr = self.cfg.perception.change_threshold
        seen = self._screens.setdefault(state_id, deque())
        for _, old in seen:
            if old.shape == g.shape and visual_change(old, g, thr) <= rc.screen_novelty_change:
                return False
        self._seq += 1
        seen.append((self._seq, g))
        self._order.append((self._seq, state_id))
        self._count += 1
        if len(seen) > max(int(rc.screen_novelty_cap), 1):
            seen.popleft()  # FIFO per state (its order entry is skipped when reached)
            self._count -= 1
        while self._count > max(int(rc.screen_novelty_total_cap), 1):
            seq, sid = self._order.popleft()  # FIFO over all states
            q = self._screens.get(sid)
            if q and q[0][0] == seq:
                q.popleft()
                self._count -= 1
        return True

    def kept(self, state_id: str) -> int:
        """How many screens of ``state_id`` are remembered."""
        return len(self._screens.get(state_id, ()))

    @property
    def total(self) -> int:
        return self._count

    def clear(self) -> None:
        self._screens.clear()
        self._order.clear()
        self._count = 0


class Episode:
    """Short-term memory of one episode (see the module docstring)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.visited: set[str] = set()
        self.screens = ScreenNovelty(cfg)
        self.previous: PreviousExecution | None = None
        self._stale: dict[tuple[str, str], int] = {}

    def is_stale(self, state_id: str, skill_id: str, step: int) -> bool:
        """The skill was judged not progressive from this state within ``stale_steps`` steps."""
        at = self._stale.get((state_id, skill_id))
        return at is not None and step - at < self.cfg.invocation.stale_steps

    def mark_stale(
        self, state_id: str, skill_id: str, judgement: Judgement | None, step: int
    ) -> None:
        """Remember a non-progressive execution from a state; a progressive one clears it.

        Off when ``stale_steps`` is 0 or R_progress is switched off (then the progress
        judgement drives nothing, as that ablation intends).
        """
        if self.cfg.invocation.stale_steps <= 0 or not self.cfg.rewards.use_progress:
            return
        key = (state_id, skill_id)
        if judgement is not None and judgement.progressive:
            self._stale.pop(key, None)
        else:
            self._stale[key] = step

    def clear(self) -> None:
        """Forget everything episode-local; the SA-KG persists."""
        self.visited.clear()
        self.screens.clear()
        self._stale.clear()
        self.previous = None
