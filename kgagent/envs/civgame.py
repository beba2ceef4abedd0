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
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from kgagent.actions import Action
from kgagent.envs import render as R
from kgagent.envs.base import Env, GroundTruth

W, H = 1280, 720
TOP = 36
COLS, ROWS = 34, 24
HEX_R = 40
HEX_W = math.sqrt(3) * HEX_R
ROW_H = 1.5 * HEX_R
MARGIN = 40
WORLD_W = int(MARGIN * 2 + HEX_W * (COLS + 0.5))
WORLD_H = int(MARGIN * 2 + ROW_H * (ROWS - 1) + 2 * HEX_R)
SCROLL_STEP = 120

# ---------------------------------------------------------------- layout
NEXT_BTN = (984, 630, 284, 76)
RESEARCH_BOX = (0, TOP, 330, 64)
DIPLO_BTN = (1004, 3, 130, 30)
MENU_BTN = (1140, 3, 130, 30)
MINIMAP = (12, 566, 224, 142)
NOTE_PROD = (1204, 560, 56, 56)
NOTE_TECH = (1140, 560, 56, 56)
POPUP = (390, 230, 500, 240)
POPUP_BTN = (510, 390, 260, 62)
PANEL_CLOSE = (560, 600, 160, 50)
PROD_PANEL = (0, TOP, 400, H - TOP)
PROD_ROW0, PROD_ROW_H = TOP + 70, 50
PROD_CLOSE = (120, 660, 160, 46)
TREE_CLOSE = (1100, 50, 150, 44)
TECH_BOX = (176, 46)

# ---------------------------------------------------------------- terrain
TERRAIN_COLORS = {
    "ocean": (40, 80, 150),
    "coast": (70, 130, 190),
    "grassland": (100, 160, 70),
    "plains": (170, 170, 90),
    "forest": (50, 110, 50),
    "hills": (140, 130, 80),
    "mountain": (120, 110, 110),
    "desert": (220, 200, 140),
}

# ---------------------------------------------------------------- content
# name: (cost in science, prerequisites, column, row)
TECHS: dict[str, tuple[int, tuple[str, ...], int, int]] = {
    "Agriculture": (0, (), 0, 3),
    "Pottery": (20, ("Agriculture",), 1, 1),
    "Animal Husbandry": (20, ("Agriculture",), 1, 2),
    "Archery": (20, ("Agriculture",), 1, 4),
    "Mining": (20, ("Agriculture",), 1, 5),
    "Sailing": (40, ("Pottery",), 2, 0),
    "Calendar": (40, ("Pottery",), 2, 1),
    "Writing": (40, ("Pottery",), 2, 2),
    "The Wheel": (40, ("Animal Husbandry",), 2, 3),
    "Masonry": (40, ("Mining",), 2, 5),
    "Bronze Working": (40, ("Mining",), 2, 6),
    "Optics": (70, ("Sailing",), 3, 0),
    "Philosophy": (70, ("Writing", "Calendar"), 3, 1),
    "Mathematics": (70, ("The Wheel", "Archery"), 3, 3),
    "Construction": (70, ("Masonry", "The Wheel"), 3, 4),
    "Currency": (70, ("Bronze Working",), 3, 5),
    "Iron Working": (70, ("Bronze Working",), 3, 6),
    "Drama": (110, ("Philosophy",), 4, 0),
    "Civil Service": (110, ("Philosophy",), 4, 1),
    "Engineering": (110, ("Construction", "Mathematics"), 4, 3),
    "Guilds": (110, ("Currency",), 4, 5),
    "Metal Casting": (110, ("Iron Working",), 4, 6),
    "Education": (160, ("Civil Service", "Drama"), 5, 1),
    "Machinery": (160, ("Engineering",), 5, 3),
    "Chivalry": (160, ("Civil Service", "Guilds"), 5, 5),
}
# name: (cost in production, tech needed, repeatable, short effect)
ITEMS: dict[str, tuple[int, str, bool, str]] = {
    "Monument": (40, "Agriculture", False, "+2 culture"),
    "Shrine": (40, "Pottery", False, "+1 science, +1 culture"),
    "Granary": (50, "Pottery", False, "+2 food"),
    "Warrior": (25, "Agriculture", True, "defends the city (+4)"),
    "Archer": (35, "Archery", True, "defends the city (+6)"),
    "Walls": (60, "Masonry", False, "+8 city defence"),
    "Library": (60, "Writing", False, "+3 science"),
    "Water Mill": (60, "The Wheel", False, "+2 production, +1 food"),
    "Forge": (80, "Bronze Working", False, "+2 production"),
    "Market": (80, "Currency", False, "+3 gold"),
    "Amphitheater": (90, "Drama", False, "+3 culture"),
    "University": (120, "Education", False, "+4 science"),
}
MAX_GARRISON = {"Warrior": 3, "Archer": 3}
CITY_MAX_HP = 30
BARB_FIRST_TURN = 12
BARB_EVERY = 6


@dataclass
class Barbarian:
    col: int
    row: int
    hp: int
    attack: int


@dataclass
class State:
    rng: random.Random
    turn: int = 1
    alive: bool = True
    screen: str = "map"  # map | production | tech | diplomacy | menu | defeat
    popups: list[tuple[str, str]] = field(default_factory=list)
    view: tuple[int, int] = (0, 0)
    city: tuple[int, int] = (0, 0)
    camps: list[tuple[int, int]] = field(default_factory=list)
    pop: int = 1
    food_store: int = 0
    culture: int = 0
    gold: int = 0
    city_hp: int = CITY_MAX_HP
    production: str | None = None
    prod_store: int = 0
    research: str | None = None
    sci_store: int = 0
    techs: set[str] = field(default_factory=lambda: {"Agriculture"})
    built: list[str] = field(default_factory=list)
    barbs: list[Barbarian] = field(default_factory=list)
    barbs_killed: int = 0
    next_barb: int = BARB_FIRST_TURN
    last_event: str = ""


# ---------------------------------------------------------------- hex helpers
def hex_center(col: int, row: int) -> tuple[float, float]:
    x = MARGIN + HEX_W * (col + 0.5 * (row & 1)) + HEX_W / 2
    y = MARGIN + HEX_R + ROW_H * row
    return x, y


def _cube(col: int, row: int) -> tuple[int, int, int]:
    q = col - (row - (row & 1)) // 2
    return q, row, -q - row


def hex_dist(a: tuple[int, int], b: tuple[int, int]) -> int:
    ax, ay, az = _cube(*a)
    bx, by, bz = _cube(*b)
    return max(abs(ax - bx), abs(ay - by), abs(az - bz))


def neighbours(col: int, row: int) -> list[tuple[int, int]]:
    odd = row & 1
    deltas = [(1, 0), (-1, 0), (0 + odd - 1, -1), (odd, -1), (odd - 1, 1), (odd, 1)]
    out = []
    for dc, dr in deltas:
        c, r = col + dc, row + dr
        if 0 <= c < COLS and 0 <= r < ROWS:
            out.append((c, r))
    return out


@lru_cache(maxsize=8)
def _terrain(seed: int) -> tuple[tuple[str, ...], ...]:
    rng = np.random.default_rng(seed)
    elev = cv2.GaussianBlur(rng.random((ROWS, COLS)).astype(np.float32), (0, 0), 2.2)
    moist = cv2.GaussianBlur(rng.random((ROWS, COLS)).astype(np.float32), (0, 0), 1.5)
    elev = (elev - elev.min()) / (np.ptp(elev) + 1e-6)
    moist = (moist - moist.min()) / (np.ptp(moist) + 1e-6)
    # an island: land in the middle, sea at the edges
    yy, xx = np.mgrid[0:ROWS, 0:COLS]
    edge = np.minimum.reduce([xx, yy, COLS - 1 - xx, ROWS - 1 - yy]).astype(np.float32)
    elev = elev * 0.7 + np.clip(edge / 5.0, 0, 1) * 0.45
    rows = []
    for r in range(ROWS):
        row = []
        for c in range(COLS):
            e, m = elev[r, c], moist[r, c]
            if e < 0.42:
                t = "ocean"
            elif e < 0.48:
                t = "coast"
            elif e > 0.9:
                t = "mountain"
            elif e > 0.8:
                t = "hills"
            elif m > 0.62:
                t = "forest"
            elif m < 0.22:
                t = "desert"
            elif m < 0.42:
                t = "plains"
            else:
                t = "grassland"
            row.append(t)
        rows.append(tuple(row))
    return tuple(rows)


@lru_cache(maxsize=8)
def _world(seed: int) -> np.ndarray:
    """The static terrain layer of the whole map (built once per seed)."""
    terr = _terrain(seed)
    img = R.canvas(WORLD_W, WORLD_H, (20, 50, 110))
    for r in range(ROWS):
        for c in range(COLS):
            t = terr[r][c]
            cx, cy = hex_center(c, r)
            pts = R.hexagon(cx, cy, HEX_R)
            col = TERRAIN_COLORS[t]
            cv2.fillPoly(img, [pts], col, cv2.LINE_AA)
            cv2.polylines(img, [pts], True, tuple(int(v * 0.75) for v in col), 1, cv2.LINE_AA)
            ix, iy = int(cx), int(cy)
            if t == "forest":
                for dx, dy in ((-12, 4), (10, -4), (0, 12)):
                    tri = np.array(
                        [
                            (ix + dx, iy + dy - 14),
                            (ix + dx - 9, iy + dy + 6),
                            (ix + dx + 9, iy + dy + 6),
                        ],
                        np.int32,
                    )
                    cv2.fillPoly(img, [tri], (30, 80, 35), cv2.LINE_AA)
            elif t in ("hills", "mountain"):
                hgt = 26 if t == "mountain" else 14
                tri = np.array([(ix, iy - hgt), (ix - 22, iy + 12), (ix + 22, iy + 12)], np.int32)
                cv2.fillPoly(
                    img, [tri], (95, 85, 80) if t == "mountain" else (115, 105, 65), cv2.LINE_AA
                )
                if t == "mountain":
                    cap = np.array(
                        [(ix, iy - hgt), (ix - 7, iy - hgt + 9), (ix + 7, iy - hgt + 9)], np.int32
                    )
                    cv2.fillPoly(img, [cap], (240, 240, 240), cv2.LINE_AA)
            elif t == "ocean" and (r + c) % 3 == 0:
                cv2.ellipse(img, (ix, iy), (10, 4), 0, 200, 340, (80, 120, 190), 1, cv2.LINE_AA)
    img.setflags(write=False)
    return img


@lru_cache(maxsize=8)
def _minimap(seed: int) -> np.ndarray:
    img = cv2.resize(
        np.asarray(_world(seed)), (MINIMAP[2], MINIMAP[3]), interpolation=cv2.INTER_AREA
    )
    img.setflags(write=False)
    return img


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
        terr = _terrain(self._seed)
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
            self._frame = self._render()
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
            return [(f"build:{n}", b) for n, b in self._prod_rows()] + [("close", PROD_CLOSE)]
        if s.screen == "tech":
            return [(f"tech:{n}", b) for n, b in self._tech_boxes() if self._tech_available(n)] + [
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
        if s.research is None and self._available_techs():
            out.append(("note_research", NOTE_TECH))
        cb = self._city_box()
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
        s = self._s
        b = set(s.built)
        food = 2 + s.pop + 2 * ("Granary" in b) + ("Water Mill" in b) - s.pop  # surplus
        prod = 3 + s.pop // 2 + 2 * ("Water Mill" in b) + 2 * ("Forge" in b) + self._border_level()
        sci = 2 + s.pop + ("Shrine" in b) + 3 * ("Library" in b) + 4 * ("University" in b)
        gold = 2 + s.pop // 2 + 3 * ("Market" in b)
        cult = 1 + 2 * ("Monument" in b) + ("Shrine" in b) + 3 * ("Amphitheater" in b)
        return {"food": food, "production": prod, "science": sci, "gold": gold, "culture": cult}

    def _border_level(self) -> int:
        c = self._s.culture
        return 1 + (c >= 20) + (c >= 60) + (c >= 140)

    def _defence(self) -> int:
        s = self._s
        return (
            2
            + 8 * s.built.count("Walls")
            + 4 * s.built.count("Warrior")
            + 6 * s.built.count("Archer")
        )

    def _available_techs(self) -> list[str]:
        return [t for t in TECHS if self._tech_available(t)]

    def _tech_available(self, t: str) -> bool:
        s = self._s
        return t not in s.techs and all(p in s.techs for p in TECHS[t][1])

    def _buildable(self) -> list[str]:
        s = self._s
        out = []
        for n, (_c, tech, rep, _e) in ITEMS.items():
            if tech not in s.techs:
                continue
            if not rep and n in s.built:
                continue
            if rep and s.built.count(n) >= MAX_GARRISON.get(n, 99):
                continue
            out.append(n)
        return out

    def _blocker(self) -> str | None:
        s = self._s
        if s.production is None and self._buildable():
            return "production"
        if s.research is None and self._available_techs():
            return "research"
        return None

    def _end_turn(self) -> None:
        s = self._s
        y = self.yields()
        s.turn += 1
        s.gold += y["gold"]
        s.culture += y["culture"]
        # production (delayed payoff: output rises only once the item is finished)
        if s.production is not None:
            s.prod_store += y["production"]
            cost = ITEMS[s.production][0]
            if s.prod_store >= cost:
                s.prod_store -= cost
                s.built.append(s.production)
                s.popups.append(
                    (
                        f"{s.production} completed",
                        f"Rome has finished the {s.production}: {ITEMS[s.production][3]}.",
                    )
                )
                s.production = None
        # science
        if s.research is not None:
            s.sci_store += y["science"]
            cost = TECHS[s.research][0]
            if s.sci_store >= cost:
                s.sci_store -= cost
                s.techs.add(s.research)
                unlocks = [n for n, v in ITEMS.items() if v[1] == s.research]
                more = f" Unlocks: {', '.join(unlocks)}." if unlocks else ""
                s.popups.append(
                    (f"{s.research} discovered", f"Your scholars have mastered {s.research}.{more}")
                )
                s.research = None
        # growth
        s.food_store += y["food"]
        need = 8 + 4 * s.pop
        if s.food_store >= need:
            s.food_store -= need
            s.pop += 1
        self._barbarians()

    def _barbarians(self) -> None:
        s = self._s
        # spawn
        if s.turn >= s.next_barb:
            camp = s.camps[s.rng.randrange(len(s.camps))]
            n = 1 + (s.turn >= 40) + (s.turn >= 80)
            for _ in range(n):
                s.barbs.append(Barbarian(camp[0], camp[1], 10 + s.turn // 8, 6 + s.turn // 10))
            if s.next_barb == BARB_FIRST_TURN:
                s.popups.append(
                    (
                        "Barbarians spotted!",
                        "Barbarians are marching on Rome. Build Warriors or Walls to defend the city.",
                    )
                )
            s.next_barb = s.turn + BARB_EVERY + s.rng.randrange(3)
        d = self._defence()
        for b in s.barbs:
            if hex_dist((b.col, b.row), s.city) <= 1:
                b.hp -= 2 + d // 2
                s.city_hp -= max(0, b.attack - d // 2)
            else:
                best = min(neighbours(b.col, b.row), key=lambda p: (hex_dist(p, s.city), p))
                b.col, b.row = best
        dead = [b for b in s.barbs if b.hp <= 0]
        s.barbs_killed += len(dead)
        s.gold += 10 * len(dead)
        s.barbs = [b for b in s.barbs if b.hp > 0]
        if not any(hex_dist((b.col, b.row), s.city) <= 1 for b in s.barbs):
            s.city_hp = min(CITY_MAX_HP, s.city_hp + 3)
        if s.city_hp <= 0:
            s.city_hp = 0
            s.alive = False
            s.screen = "defeat"
            s.popups = []

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

    def _to_screen(self, col: int, row: int) -> tuple[int, int]:
        x, y = hex_center(col, row)
        return int(x - self._s.view[0]), int(y - self._s.view[1] + TOP)

    def _city_box(self) -> tuple[int, int, int, int] | None:
        x, y = self._to_screen(*self._s.city)
        box = (x - 70, y - 64, 140, 100)
        if (
            x < 0
            or x >= W
            or y < TOP + 70
            or y >= H
            or R.contains(NEXT_BTN, x, y)
            or R.contains(MINIMAP, x, y)
        ):
            return None
        return box

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
        blk = self._blocker()
        if blk == "production":
            self._s.screen = "production"
        elif blk == "research":
            self._s.screen = "tech"
        else:
            self._end_turn()
        return True

    def _click(self, x: int, y: int) -> bool:
        s = self._s
        if s.popups:
            if R.contains(POPUP_BTN, x, y):
                s.popups.pop(0)
                return True
            return False
        if s.screen == "production":
            for n, box in self._prod_rows():
                if R.contains(box, x, y):
                    s.production = n
                    s.screen = "map"
                    return True
            if R.contains(PROD_CLOSE, x, y):
                s.screen = "map"
                return True
            return False
        if s.screen == "tech":
            for n, box in self._tech_boxes():
                if R.contains(box, x, y) and self._tech_available(n):
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
        if s.research is None and self._available_techs() and R.contains(NOTE_TECH, x, y):
            s.screen = "tech"
            return True
        if R.contains(MINIMAP, x, y):
            mx, my, mw, mh = MINIMAP
            wx = (x - mx) / mw * WORLD_W
            wy = (y - my) / mh * WORLD_H
            return self._set_view(int(wx - W / 2), int(wy - (H - TOP) / 2))
        cb = self._city_box()
        if cb is not None and R.contains(cb, x, y):
            s.screen = "production"
            return True
        return False

    def _prod_rows(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        return [
            (n, (16, PROD_ROW0 + i * PROD_ROW_H, 368, PROD_ROW_H - 6))
            for i, n in enumerate(self._buildable())
        ]

    def _tech_boxes(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        out = []
        for n, (_c, _p, col, row) in TECHS.items():
            out.append((n, (30 + col * 205, 120 + row * 76, TECH_BOX[0], TECH_BOX[1])))
        return out

    # ------------------------------------------------------------ render
    def _render(self) -> np.ndarray:
        s = self._s
        if not s.alive:
            return self._render_defeat()
        if s.screen == "tech":
            img = self._render_tech()
        else:
            img = self._render_map()
            if s.screen == "production":
                self._render_production(img)
            elif s.screen in ("diplomacy", "menu"):
                self._render_dead_panel(img)
        self._render_top(img)
        if s.popups:
            self._render_popup(img)
        return img

    def _render_top(self, img: np.ndarray) -> None:
        s = self._s
        y = self.yields()
        R.fill(img, (0, 0, W, TOP), (22, 30, 44))
        R.fill(img, (0, TOP - 2, W, 2), (150, 130, 70))
        R.icon_flask(img, 20, 18, 10)
        R.text(img, f"+{y['science']}", 36, 18, 0.55, (130, 190, 250), 1, "lm")
        R.icon_coin(img, 100, 18, 9)
        R.text(img, f"{s.gold} (+{y['gold']})", 116, 18, 0.55, R.GOLD, 1, "lm")
        R.icon_star(img, 230, 18, 10)
        R.text(img, f"{s.culture} (+{y['culture']})", 246, 18, 0.55, (210, 150, 240), 1, "lm")
        R.icon_hammer(img, 360, 18, 10)
        R.text(img, f"+{y['production']}", 376, 18, 0.55, (230, 170, 100), 1, "lm")
        R.icon_wheat(img, 440, 18, 10)
        R.text(img, f"+{y['food']}", 456, 18, 0.55, (150, 220, 110), 1, "lm")
        year = 4000 - (s.turn - 1) * 40
        era = f"{year} BC" if year > 0 else f"{1 - year} AD"
        R.text(img, f"Turn {s.turn}  |  {era}", 700, 18, 0.6, R.WHITE, 1, "cm")
        R.button(img, DIPLO_BTN, "Diplomacy", (40, 55, 80), R.WHITE, (120, 140, 170), 0.5, radius=4)
        R.button(img, MENU_BTN, "Menu", (40, 55, 80), R.WHITE, (120, 140, 170), 0.5, radius=4)

    def _render_map(self) -> np.ndarray:
        s = self._s
        vx, vy = s.view
        img = np.empty((H, W, 3), np.uint8)
        img[TOP:] = _world(self._seed)[vy : vy + H - TOP, vx : vx + W]
        # borders
        lvl = self._border_level()
        for r in range(max(0, s.city[1] - lvl), min(ROWS, s.city[1] + lvl + 1)):
            for c in range(max(0, s.city[0] - lvl - 1), min(COLS, s.city[0] + lvl + 2)):
                if hex_dist((c, r), s.city) <= lvl:
                    x, y = self._to_screen(c, r)
                    cv2.polylines(
                        img, [R.hexagon(x, y, HEX_R - 3)], True, (220, 60, 200), 2, cv2.LINE_AA
                    )
        for camp in s.camps:
            x, y = self._to_screen(*camp)
            if -50 < x < W + 50 and TOP - 50 < y < H + 50:
                tri = np.array([(x, y - 22), (x - 20, y + 14), (x + 20, y + 14)], np.int32)
                cv2.fillPoly(img, [tri], (120, 70, 40), cv2.LINE_AA)
                R.icon_skull(img, x, y + 2, 8, (240, 230, 210))
        # city
        x, y = self._to_screen(*s.city)
        for dx, dy, sz in ((-16, 6, 14), (10, 2, 18), (-2, -14, 16), (18, 16, 12)):
            R.fill(img, (x + dx - sz // 2, y + dy - sz // 2, sz, sz), (200, 190, 170))
            R.rect(img, (x + dx - sz // 2, y + dy - sz // 2, sz, sz), (90, 80, 70), 1)
        if "Walls" in s.built:
            cv2.circle(img, (x, y), 34, (150, 140, 130), 3, cv2.LINE_AA)
        bx, by = x - 70, y - 64
        R.panel(img, (bx, by, 140, 26), (120, 30, 110), (240, 220, 240), 6)
        R.text(img, f"{s.pop}  Rome", bx + 70, by + 13, 0.55, R.WHITE, 1, "cm")
        frac = s.prod_store / ITEMS[s.production][0] if s.production else 0.0
        R.bar(img, (bx + 10, by + 27, 120, 6), frac, (230, 150, 60), (40, 30, 30))
        R.bar(img, (x - 30, y + 26, 60, 6), s.city_hp / CITY_MAX_HP, (80, 200, 80), (90, 20, 20))
        garrison = s.built.count("Warrior") + s.built.count("Archer")
        for i in range(garrison):
            ux, uy = x + 34 + 12 * i, y + 4
            cv2.circle(img, (ux, uy), 9, (60, 120, 220), -1, cv2.LINE_AA)
            cv2.circle(img, (ux, uy), 9, R.WHITE, 1, cv2.LINE_AA)
        for b in s.barbs:
            ux, uy = self._to_screen(b.col, b.row)
            if -20 < ux < W + 20 and TOP - 20 < uy < H + 20:
                cv2.circle(img, (ux, uy), 15, (170, 30, 30), -1, cv2.LINE_AA)
                cv2.circle(img, (ux, uy), 15, (20, 20, 20), 2, cv2.LINE_AA)
                R.icon_sword(img, ux, uy, 8, (250, 230, 200))
        # research box
        R.panel(img, RESEARCH_BOX, (25, 40, 60), (90, 150, 200), 0)
        R.icon_flask(img, 30, TOP + 32, 14)
        if s.research:
            cost = TECHS[s.research][0]
            R.text(img, s.research, 56, TOP + 20, 0.6, R.WHITE, 1, "lm")
            R.bar(img, (56, TOP + 38, 250, 12), s.sci_store / cost, (80, 160, 230), (30, 40, 60))
            turns = max(1, math.ceil((cost - s.sci_store) / max(1, self.yields()["science"])))
            R.text(img, f"{turns} turns", 320, TOP + 20, 0.45, (180, 200, 220), 1, "rm")
        else:
            R.text(
                img,
                "Choose a research" if self._available_techs() else "All researched",
                56,
                TOP + 32,
                0.6,
                (250, 210, 120),
                1,
                "lm",
            )
        # minimap
        mx, my, mw, mh = MINIMAP
        R.fill(img, (mx - 3, my - 3, mw + 6, mh + 6), (150, 130, 70))
        img[my : my + mh, mx : mx + mw] = _minimap(self._seed)
        sx, sy = mw / WORLD_W, mh / WORLD_H
        R.rect(
            img,
            (mx + int(vx * sx), my + int(vy * sy), int(W * sx), int((H - TOP) * sy)),
            R.WHITE,
            1,
        )
        cx, cy = hex_center(*s.city)
        cv2.circle(img, (mx + int(cx * sx), my + int(cy * sy)), 3, (230, 60, 210), -1)
        # notifications + next turn
        blk = self._blocker()
        if s.production is None and self._buildable():
            R.panel(img, NOTE_PROD, (170, 110, 40), (250, 220, 150), 28)
            R.icon_hammer(img, NOTE_PROD[0] + 28, NOTE_PROD[1] + 28, 14, (250, 230, 200))
        if s.research is None and self._available_techs():
            R.panel(img, NOTE_TECH, (40, 100, 170), (180, 220, 250), 28)
            R.icon_flask(img, NOTE_TECH[0] + 28, NOTE_TECH[1] + 28, 14, (220, 240, 255))
        label = {"production": "CHOOSE PRODUCTION", "research": "CHOOSE RESEARCH"}.get(
            blk or "", "NEXT TURN"
        )
        fillc = (150, 100, 40) if blk else (40, 110, 60)
        R.button(img, NEXT_BTN, label, fillc, R.WHITE, (230, 210, 150), 0.72 if blk else 0.9, 1, 10)
        if s.production:
            turns = max(
                1,
                math.ceil(
                    (ITEMS[s.production][0] - s.prod_store) / max(1, self.yields()["production"])
                ),
            )
            R.text(
                img,
                f"Building: {s.production} ({turns})",
                NEXT_BTN[0] + 132,
                NEXT_BTN[1] - 12,
                0.5,
                R.WHITE,
                1,
                "cm",
            )
        return img

    def _render_production(self, img: np.ndarray) -> None:
        s = self._s
        R.panel(img, PROD_PANEL, (28, 32, 44), (150, 130, 70), 0, 3)
        R.text(img, "Rome - Choose Production", 200, TOP + 26, 0.7, R.GOLD, 1, "cm")
        y = self.yields()
        for n, box in self._prod_rows():
            cost, _t, _r, eff = ITEMS[n]
            cur = n == s.production
            R.panel(
                img,
                box,
                (70, 80, 110) if cur else (48, 56, 76),
                (200, 180, 120) if cur else (100, 110, 140),
                6,
            )
            bx, by, bw, bh = box
            R.icon_hammer(img, bx + 20, by + bh // 2, 10)
            R.text(img, n, bx + 40, by + 14, 0.55, R.WHITE, 1, "lm")
            R.text(img, eff, bx + 40, by + 32, 0.4, (190, 200, 210), 1, "lm")
            turns = max(
                1, math.ceil((cost - (s.prod_store if cur else 0)) / max(1, y["production"]))
            )
            R.text(img, f"{turns} turns", bx + bw - 10, by + bh // 2, 0.5, (230, 200, 140), 1, "rm")
        R.button(img, PROD_CLOSE, "Close", (80, 50, 40), R.WHITE, (200, 160, 110), 0.6)

    def _render_dead_panel(self, img: np.ndarray) -> None:
        s = self._s
        R.blend(img, (0, TOP, W, H - TOP), (0, 0, 0), 0.6)
        R.panel(img, (290, 110, 700, 560), (30, 36, 50), (150, 130, 70), 12, 3)
        if s.screen == "diplomacy":
            R.text(img, "Diplomacy", 640, 150, 1.0, R.GOLD, 2, "cm", R.FONT_BOLD)
            R.text(
                img, "You have not met any other civilization.", 640, 260, 0.65, R.WHITE, 1, "cm"
            )
            R.text(img, "City-states: none known", 640, 310, 0.6, (180, 180, 190), 1, "cm")
        else:
            R.text(img, "Game Menu", 640, 150, 1.0, R.GOLD, 2, "cm", R.FONT_BOLD)
            for i, t in enumerate(
                ("Save game (disabled)", "Load game (disabled)", "Options (disabled)")
            ):
                R.button(
                    img,
                    (490, 220 + i * 80, 300, 56),
                    t,
                    (50, 50, 60),
                    (140, 140, 150),
                    (90, 90, 100),
                    0.6,
                )
        R.button(img, PANEL_CLOSE, "Close", (80, 50, 40), R.WHITE, (200, 160, 110), 0.65)

    def _render_tech(self) -> np.ndarray:
        s = self._s
        img = _tech_bg().copy()
        boxes = dict(self._tech_boxes())
        for n, (_c, pre, _col, _row) in TECHS.items():
            x, y, w, h = boxes[n]
            for p in pre:
                px, py, pw, ph = boxes[p]
                cv2.line(
                    img, (px + pw, py + ph // 2), (x, y + h // 2), (110, 130, 160), 2, cv2.LINE_AA
                )
        for n, box in boxes.items():
            if n in s.techs:
                fillc, border, tc = (150, 120, 40), (250, 220, 120), R.WHITE
            elif n == s.research:
                fillc, border, tc = (40, 110, 160), (160, 220, 250), R.WHITE
            elif self._tech_available(n):
                fillc, border, tc = (50, 90, 70), (150, 230, 170), R.WHITE
            else:
                fillc, border, tc = (45, 48, 58), (80, 84, 96), (140, 140, 150)
            R.panel(img, box, fillc, border, 6)
            x, y, w, h = box
            R.text(img, n, x + 8, y + 14, 0.5, tc, 1, "lm")
            status = "known" if n in s.techs else f"{TECHS[n][0]} science"
            R.text(img, status, x + 8, y + 32, 0.4, tc, 1, "lm")
        R.text(
            img, "Technology Tree - choose a technology to research", 40, 70, 0.8, R.WHITE, 1, "lm"
        )
        R.button(img, TREE_CLOSE, "Close", (80, 50, 40), R.WHITE, (200, 160, 110), 0.65)
        return img

    def _render_popup(self, img: np.ndarray) -> None:
        title, body = self._s.popups[0]
        R.blend(img, (0, 0, W, H), (0, 0, 0), 0.45)
        R.panel(img, POPUP, (36, 40, 56), (220, 190, 110), 12, 3)
        x, y, w, h = POPUP
        R.text(img, title, x + w // 2, y + 34, 0.8, R.GOLD, 1, "cm", R.FONT_BOLD)
        ty = y + 70
        for line in R.wrap(body, w - 50, 0.55)[:4]:
            R.text(img, line, x + w // 2, ty, 0.55, R.WHITE, 1, "cm")
            ty += 26
        R.button(img, POPUP_BTN, "Continue", (60, 100, 60), R.WHITE, (190, 230, 170), 0.7)

    def _render_defeat(self) -> np.ndarray:
        s = self._s
        img = R.vgradient(W, H, (30, 10, 10), (70, 25, 20))
        R.text(img, "DEFEAT", 640, 220, 2.0, (220, 70, 60), 3, "cm", R.FONT_BOLD)
        R.text(img, "Barbarians have captured Rome.", 640, 320, 0.8, R.WHITE, 1, "cm")
        R.text(
            img,
            f"Turns survived: {s.turn - 1}    Technologies: {len(s.techs) - 1}",
            640,
            380,
            0.8,
            R.GOLD,
            1,
            "cm",
        )
        return img


@lru_cache(maxsize=1)
def _tech_bg() -> np.ndarray:
    img = R.vgradient(W, H, (18, 24, 40), (30, 40, 60))
    for i, era in enumerate(
        ("Ancient", "Ancient", "Classical", "Classical", "Medieval", "Medieval")
    ):
        R.text(img, era, 30 + i * 205 + 88, 104, 0.5, (150, 160, 190), 1, "cm")
    img.setflags(write=False)
    return img
