"""Where things lie on the civ game's 1280x720 screen: its fixed buttons and panels, the
rows of the production list, the boxes of the technology tree, and a hex's or the city's
place on the scrolled map."""

from __future__ import annotations

from kgagent.envs import render as R
from kgagent.envs.civgame_data import TECHS
from kgagent.envs.civgame_hexmap import hex_center
from kgagent.envs.civgame_state import State, buildable

W, H = 1280, 720
TOP = 36

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


def to_screen(s: State, col: int, row: int) -> tuple[int, int]:
    """Where the centre of a hex is on the screen, with the map scrolled to ``s.view``."""
    x, y = hex_center(col, row)
    return int(x - s.view[0]), int(y - s.view[1] + TOP)


def city_box(s: State) -> tuple[int, int, int, int] | None:
    """The city's clickable box, or None while it is off the map's visible part."""
    x, y = to_screen(s, *s.city)
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


def prod_rows(s: State) -> list[tuple[str, tuple[int, int, int, int]]]:
    """(item, box) of each row of the production list."""
    return [
        (n, (16, PROD_ROW0 + i * PROD_ROW_H, 368, PROD_ROW_H - 6))
        for i, n in enumerate(buildable(s))
    ]


def tech_boxes() -> list[tuple[str, tuple[int, int, int, int]]]:
    """(technology, box) of each technology in the tree."""
    out = []
    for n, (_c, _p, col, row) in TECHS.items():
        out.append((n, (30 + col * 205, 120 + row * 76, TECH_BOX[0], TECH_BOX[1])))
    return out
