"""Drawing the civ game's screen from a city's state: the scrolled hex map with the city,
camps, barbarians, research box, minimap and Next-turn button; the production list, the
technology tree, the dead-end panels, popups and the defeat screen; and the cached art
(the terrain layer, the minimap, the tree's backdrop)."""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from kgagent.envs import render as R
from kgagent.envs.civgame_data import CITY_MAX_HP, ITEMS, TECHS
from kgagent.envs.civgame_hexmap import (
    COLS,
    HEX_R,
    ROWS,
    WORLD_H,
    WORLD_W,
    hex_center,
    hex_dist,
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
    POPUP,
    POPUP_BTN,
    PROD_CLOSE,
    PROD_PANEL,
    RESEARCH_BOX,
    TOP,
    TREE_CLOSE,
    H,
    W,
    prod_rows,
    tech_boxes,
    to_screen,
)
from kgagent.envs.civgame_state import (
    State,
    available_techs,
    blocker,
    border_level,
    buildable,
    city_yields,
    tech_available,
)

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


@lru_cache(maxsize=8)
def world(seed: int) -> np.ndarray:
    """The static terrain layer of the whole map (built once per seed)."""
    terr = terrain(seed)
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
def minimap(seed: int) -> np.ndarray:
    """The whole map shrunk into the minimap's box (built once per seed)."""
    img = cv2.resize(
        np.asarray(world(seed)), (MINIMAP[2], MINIMAP[3]), interpolation=cv2.INTER_AREA
    )
    img.setflags(write=False)
    return img


@lru_cache(maxsize=1)
def tech_bg() -> np.ndarray:
    """The technology tree's backdrop with its era headings."""
    img = R.vgradient(W, H, (18, 24, 40), (30, 40, 60))
    for i, era in enumerate(
        ("Ancient", "Ancient", "Classical", "Classical", "Medieval", "Medieval")
    ):
        R.text(img, era, 30 + i * 205 + 88, 104, 0.5, (150, 160, 190), 1, "cm")
    img.setflags(write=False)
    return img


def render(s: State, seed: int) -> np.ndarray:
    """The frame of the state: the map or the tech tree, a panel, the top bar, a popup."""
    if not s.alive:
        return _render_defeat(s)
    if s.screen == "tech":
        img = _render_tech(s)
    else:
        img = _render_map(s, seed)
        if s.screen == "production":
            _render_production(s, img)
        elif s.screen in ("diplomacy", "menu"):
            _render_dead_panel(s, img)
    _render_top(s, img)
    if s.popups:
        _render_popup(s, img)
    return img


def _render_top(s: State, img: np.ndarray) -> None:
    y = city_yields(s)
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


def _render_map(s: State, seed: int) -> np.ndarray:
    vx, vy = s.view
    img = np.empty((H, W, 3), np.uint8)
    img[TOP:] = world(seed)[vy : vy + H - TOP, vx : vx + W]
    # borders
    lvl = border_level(s)
    for r in range(max(0, s.city[1] - lvl), min(ROWS, s.city[1] + lvl + 1)):
        for c in range(max(0, s.city[0] - lvl - 1), min(COLS, s.city[0] + lvl + 2)):
            if hex_dist((c, r), s.city) <= lvl:
                x, y = to_screen(s, c, r)
                cv2.polylines(
                    img, [R.hexagon(x, y, HEX_R - 3)], True, (220, 60, 200), 2, cv2.LINE_AA
                )
    for camp in s.camps:
        x, y = to_screen(s, *camp)
        if -50 < x < W + 50 and TOP - 50 < y < H + 50:
            tri = np.array([(x, y - 22), (x - 20, y + 14), (x + 20, y + 14)], np.int32)
            cv2.fillPoly(img, [tri], (120, 70, 40), cv2.LINE_AA)
            R.icon_skull(img, x, y + 2, 8, (240, 230, 210))
    # city
    x, y = to_screen(s, *s.city)
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
        ux, uy = to_screen(s, b.col, b.row)
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
        turns = max(1, math.ceil((cost - s.sci_store) / max(1, city_yields(s)["science"])))
        R.text(img, f"{turns} turns", 320, TOP + 20, 0.45, (180, 200, 220), 1, "rm")
    else:
        R.text(
            img,
            "Choose a research" if available_techs(s) else "All researched",
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
    img[my : my + mh, mx : mx + mw] = minimap(seed)
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
    blk = blocker(s)
    if s.production is None and buildable(s):
        R.panel(img, NOTE_PROD, (170, 110, 40), (250, 220, 150), 28)
        R.icon_hammer(img, NOTE_PROD[0] + 28, NOTE_PROD[1] + 28, 14, (250, 230, 200))
    if s.research is None and available_techs(s):
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
                (ITEMS[s.production][0] - s.prod_store) / max(1, city_yields(s)["production"])
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


def _render_production(s: State, img: np.ndarray) -> None:
    R.panel(img, PROD_PANEL, (28, 32, 44), (150, 130, 70), 0, 3)
    R.text(img, "Rome - Choose Production", 200, TOP + 26, 0.7, R.GOLD, 1, "cm")
    y = city_yields(s)
    for n, box in prod_rows(s):
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
        turns = max(1, math.ceil((cost - (s.prod_store if cur else 0)) / max(1, y["production"])))
        R.text(img, f"{turns} turns", bx + bw - 10, by + bh // 2, 0.5, (230, 200, 140), 1, "rm")
    R.button(img, PROD_CLOSE, "Close", (80, 50, 40), R.WHITE, (200, 160, 110), 0.6)


def _render_dead_panel(s: State, img: np.ndarray) -> None:
    R.blend(img, (0, TOP, W, H - TOP), (0, 0, 0), 0.6)
    R.panel(img, (290, 110, 700, 560), (30, 36, 50), (150, 130, 70), 12, 3)
    if s.screen == "diplomacy":
        R.text(img, "Diplomacy", 640, 150, 1.0, R.GOLD, 2, "cm", R.FONT_BOLD)
        R.text(img, "You have not met any other civilization.", 640, 260, 0.65, R.WHITE, 1, "cm")
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


def _render_tech(s: State) -> np.ndarray:
    img = tech_bg().copy()
    boxes = dict(tech_boxes())
    for n, (_c, pre, _col, _row) in TECHS.items():
        x, y, w, h = boxes[n]
        for p in pre:
            px, py, pw, ph = boxes[p]
            cv2.line(img, (px + pw, py + ph // 2), (x, y + h // 2), (110, 130, 160), 2, cv2.LINE_AA)
    for n, box in boxes.items():
        if n in s.techs:
            fillc, border, tc = (150, 120, 40), (250, 220, 120), R.WHITE
        elif n == s.research:
            fillc, border, tc = (40, 110, 160), (160, 220, 250), R.WHITE
        elif tech_available(s, n):
            fillc, border, tc = (50, 90, 70), (150, 230, 170), R.WHITE
        else:
            fillc, border, tc = (45, 48, 58), (80, 84, 96), (140, 140, 150)
        R.panel(img, box, fillc, border, 6)
        x, y, w, h = box
        R.text(img, n, x + 8, y + 14, 0.5, tc, 1, "lm")
        status = "known" if n in s.techs else f"{TECHS[n][0]} science"
        R.text(img, status, x + 8, y + 32, 0.4, tc, 1, "lm")
    R.text(img, "Technology Tree - choose a technology to research", 40, 70, 0.8, R.WHITE, 1, "lm")
    R.button(img, TREE_CLOSE, "Close", (80, 50, 40), R.WHITE, (200, 160, 110), 0.65)
    return img


def _render_popup(s: State, img: np.ndarray) -> None:
    title, body = s.popups[0]
    R.blend(img, (0, 0, W, H), (0, 0, 0), 0.45)
    R.panel(img, POPUP, (36, 40, 56), (220, 190, 110), 12, 3)
    x, y, w, h = POPUP
    R.text(img, title, x + w // 2, y + 34, 0.8, R.GOLD, 1, "cm", R.FONT_BOLD)
    ty = y + 70
    for line in R.wrap(body, w - 50, 0.55)[:4]:
        R.text(img, line, x + w // 2, ty, 0.55, R.WHITE, 1, "cm")
        ty += 26
    R.button(img, POPUP_BTN, "Continue", (60, 100, 60), R.WHITE, (190, 230, 170), 0.7)


def _render_defeat(s: State) -> np.ndarray:
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
