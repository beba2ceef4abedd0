"""A turn-based civilization game in the spirit of Civilization V (1280x720).

Why it exists: it reproduces the structure that the papers' Civ V results
depend on, without the commercial game.

* "Next turn" is blocked until decisions are made; while blocked its label
  reads CHOOSE PRODUCTION / CHOOSE RESEARCH and clicking it opens the menu
  where the choice is made (a two-click skill);
* small visual change, high value: an unblocked "Next turn" changes only a
  few numbers on the screen;
* functionally equal screens that look different: the hex map scrolls (arrow
  keys, mouse wheel, drag, minimap click);
* dead ends with a large visual change: Diplomacy and the game menu open
  full panels that change nothing;
* delayed payoff: buildings take turns to finish and only then raise output;
* threats: barbarians walk to the city from turn 12 on and capture an
  undefended city (terminated=True, a defeat screen);
* modal popups (tech discovered, building completed, barbarians spotted)
  block every other input until dismissed.

Rules for humans are in ``docs/games.md``. Deterministic given ``reset(seed)``
and the action sequence.

This module is the game's ``Env``: founding the city, the input, and the scrolled
view. The techs and buildings are in ``civgame_data``, the hex grid and terrain in
``civgame_hexmap``, the city's state and economy in ``civgame_state``, a turn's
rules in ``civgame_turn``, where things lie on screen in ``civgame_layout``, and the
drawing in ``civgame_draw``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.envs import render as R
from kgagent.envs.base import Env, GroundTruth
from kgagent.envs.civgame_draw import render
from kgagent.envs.civgame_hexmap import (
    COLS,
    ROWS,
    WORLD_H,
    WORLD_W,
    hex_center,
    hex_dist,
    neighbours,
    terrain,
)
from kgagent.envs.civgame_layout import (
    DIPLO_BTN,
    MENU_BTN,
    MINIMAP,
    NEXT_BTN,
    NOTE_PROD,
    NOTE_TECH,
    PANEL_CLOSE,
    POPUP_BTN,
    PROD_CLOSE,
    RESEARCH_BOX,
    TOP,
    TREE_CLOSE,
    H,
    W,
    city_box,
    prod_rows,
    tech_boxes,
)
from kgagent.envs.civgame_state import State, available_techs, blocker, city_yields, tech_available
from kgagent.envs.civgame_turn import end_turn

SCROLL_STEP = 120


class CivGame(Env):
    """The civilization game. Accepts every Action kind; useless ones change nothing."""

    name = "civgame"

    def __init__(self, seed: int | None = None) -> None:
        self._seed = 0 if seed is None else int(seed)
        self._frame: np.ndarray | None = None
        self._steps = 0
        self.reset(self._seed)

    # ------------------------------------------------------------ Env API
    @property
    def size(self) -> tuple[int, int]:
        return (W, H)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self._seed = int(seed)
        rng = random.Random(self._seed)
        s = State(rng=rng)
        terr = terrain(self._seed)
        land = [
            (c, r)
            for r in range(4, ROWS - 4)
            for c in range(5, COLS - 5)
            if terr[r][c] in ("grassland", "plains")
            and all(terr[nr][nc] not in ("ocean", "mountain") for nc, nr in neighbours(c, r))
        ]
        mid = (COLS // 2, ROWS // 2)
        land.sort(key=lambda p: (hex_dist(p, mid), p))
        s.city = land[rng.randrange(min(6, len(land)))] if land else mid
        cands = [
            (c, r)
            for r in range(ROWS)
            for c in range(COLS)
            if terr[r][c] not in ("ocean", "coast", "mountain")
            and 6 <= hex_dist((c, r), s.city) <= 9
        ]
        cands.sort()
        rng.shuffle(cands)
        s.camps = (
            cands[:2]
            if len(cands) >= 2
            else [(max(0, s.city[0] - 7), s.city[1]), (min(COLS - 1, s.city[0] + 7), s.city[1])]
        )
        s.popups = [
            (
                "Welcome, Augustus",
                "Found a great empire. Choose what your city builds and what your people research.",
            )
        ]
        self._s = s
        self._center_on_city()
        self._steps = 0
        self._frame = None
        return self.observe(), self._info()

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        before = len(self._s.techs)
        if self._s.alive:
            self._steps += 1
            if self._dispatch(action):
                self._frame = None
        obs = self.observe()
        return obs, float(len(self._s.techs) - before), not self._s.alive, False, self._info()

    def observe(self) -> np.ndarray:
        if self._frame is None:
            self._frame = render(self._s, self._seed)
        return self._frame.copy()

    def ground_truth(self) -> GroundTruth:
        s = self._s
        return GroundTruth(
            progression=float(s.turn - 1),
            score=float(len(s.techs) - 1),
            alive=s.alive,
            extra={
                "pop": s.pop,
                "buildings": list(s.built),
                "city_hp": s.city_hp,
                "barbarians_killed": s.barbs_killed,
            },
        )

    def clickable_elements(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        """Elements whose click changes the game now (tests and perception benchmarks only)."""
        s = self._s
        if not s.alive:
            return []
        if s.popups:
            return [("popup_continue", POPUP_BTN)]
        if s.screen == "production":
            return [(f"build:{n}", b) for n, b in prod_rows(s)] + [("close", PROD_CLOSE)]
        if s.screen == "tech":
            return [(f"tech:{n}", b) for n, b in tech_boxes() if tech_available(s, n)] + [
                ("close", TREE_CLOSE)
            ]
        if s.screen in ("diplomacy", "menu"):
            return [("close", PANEL_CLOSE)]
        out = [
            ("next_turn", NEXT_BTN),
            ("research", RESEARCH_BOX),
            ("diplomacy", DIPLO_BTN),
            ("menu", MENU_BTN),
            ("minimap", MINIMAP),
        ]
        if s.production is None:
            out.append(("note_production", NOTE_PROD))
        if s.research is None and available_techs(s):
            out.append(("note_research", NOTE_TECH))
        cb = city_box(s)
        if cb is not None:
            out.append(("city", cb))
        return out

    # ------------------------------------------------------------ metrics
    def _info(self) -> dict[str, Any]:
        s = self._s
        return {
            "screen": s.screen if not s.popups else "popup",
            "turn": s.turn,
            "turns_survived": s.turn - 1,
            "progression": float(s.turn - 1),
            "techs": len(s.techs) - 1,
            "score": float(len(s.techs) - 1),
            "alive": s.alive,
            "city_hp": s.city_hp,
            "pop": s.pop,
            "production": s.production,
            "research": s.research,
            "buildings": list(s.built),
            "barbarians": len(s.barbs),
            "view": s.view,
            "steps": self._steps,
        }

    # ------------------------------------------------------------ economy
    def yields(self) -> dict[str, int]:
        """Per-turn yields of the city (shown in the top bar)."""
        return city_yields(self._s)

    # ------------------------------------------------------------ view
    def _center_on_city(self) -> None:
        cx, cy = hex_center(*self._s.city)
        self._set_view(int(cx - W / 2), int(cy - (H + TOP) / 2))

    def _set_view(self, vx: int, vy: int) -> bool:
        vx = max(0, min(WORLD_W - W, vx))
        vy = max(0, min(WORLD_H - (H - TOP), vy))
        changed = (vx, vy) != self._s.view
        self._s.view = (vx, vy)
        return changed

    def _scroll(self, dx: int, dy: int) -> bool:
        vx, vy = self._s.view
        return self._set_view(vx + dx, vy + dy)

    # ------------------------------------------------------------ input
    def _dispatch(self, a: Action) -> bool:
        s = self._s
        k = a.kind
        if k in ("click", "double_click"):
            return self._click(a.x, a.y)  # type: ignore[arg-type]
        if k == "right_click":
            return self._close_panel()
        if k == "key":
            return self._key((a.key or "").lower())
        if s.popups or s.screen != "map":
            return False
        if k == "scroll":
            return self._scroll(0, -SCROLL_STEP * a.scroll)
        if k == "drag":
            if R.contains(NEXT_BTN, a.x, a.y) or a.y < TOP + 64:  # type: ignore[arg-type]
                return False
            return self._scroll(-(a.x2 - a.x), -(a.y2 - a.y))  # type: ignore[operator]
        return False  # hotkey, type

    def _close_panel(self) -> bool:
        s = self._s
        if s.popups:
            return False
        if s.screen in ("production", "tech", "diplomacy", "menu"):
            s.screen = "map"
            return True
        return False

    def _key(self, key: str) -> bool:
        s = self._s
        if s.popups:
            if key in ("enter", "return", "escape", "esc", "space"):
                s.popups.pop(0)
                return True
            return False
        if key in ("escape", "esc"):
            return self._close_panel()
        if s.screen != "map":
            return False
        arrows = {
            "left": (-SCROLL_STEP, 0),
            "right": (SCROLL_STEP, 0),
            "up": (0, -SCROLL_STEP),
            "down": (0, SCROLL_STEP),
        }
        if key in arrows:
            return self._scroll(*arrows[key])
        if key == "enter":
            return self._next_turn_button()
        return False

    def _next_turn_button(self) -> bool:
        blk = blocker(self._s)
        if blk == "production":
            self._s.screen = "production"
        elif blk == "research":
            self._s.screen = "tech"
        else:
            end_turn(self._s)
        return True

    def _click(self, x: int, y: int) -> bool:
        s = self._s
        if s.popups:
            if R.contains(POPUP_BTN, x, y):
                s.popups.pop(0)
                return True
            return False
        if s.screen == "production":
            for n, box in prod_rows(s):
                if R.contains(box, x, y):
                    s.production = n
                    s.screen = "map"
                    return True
            if R.contains(PROD_CLOSE, x, y):
                s.screen = "map"
                return True
            return False
        if s.screen == "tech":
            for n, box in tech_boxes():
                if R.contains(box, x, y) and tech_available(s, n):
                    s.research = n
                    s.screen = "map"
                    return True
            if R.contains(TREE_CLOSE, x, y):
                s.screen = "map"
                return True
            return False
        if s.screen in ("diplomacy", "menu"):
            if R.contains(PANEL_CLOSE, x, y):
                s.screen = "map"
                return True
            return False
        # the map screen
        if R.contains(NEXT_BTN, x, y):
            return self._next_turn_button()
        if R.contains(RESEARCH_BOX, x, y):
            s.screen = "tech"
            return True
        if R.contains(DIPLO_BTN, x, y):
            s.screen = "diplomacy"
            return True
        if R.contains(MENU_BTN, x, y):
            s.screen = "menu"
            return True
        if s.production is None and R.contains(NOTE_PROD, x, y):
            s.screen = "production"
            return True
        if s.research is None and available_techs(s) and R.contains(NOTE_TECH, x, y):
            s.screen = "tech"
            return True
        if R.contains(MINIMAP, x, y):
            mx, my, mw, mh = MINIMAP
            wx = (x - mx) / mw * WORLD_W
            wy = (y - my) / mh * WORLD_H
            return self._set_view(int(wx - W / 2), int(wy - (H - TOP) / 2))
        cb = city_box(s)
        if cb is not None and R.contains(cb, x, y):
            s.screen = "production"
            return True
        return False
