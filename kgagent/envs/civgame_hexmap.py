"""The civ game's world: the hex grid's geometry (offset rows, cube distance, neighbours)
and the island's terrain, generated from the seed."""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

COLS, ROWS = 34, 24
HEX_R = 40
HEX_W = math.sqrt(3) * HEX_R
ROW_H = 1.5 * HEX_R
MARGIN = 40
WORLD_W = int(MARGIN * 2 + HEX_W * (COLS + 0.5))
WORLD_H = int(MARGIN * 2 + ROW_H * (ROWS - 1) + 2 * HEX_R)


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
def terrain(seed: int) -> tuple[tuple[str, ...], ...]:
    """The terrain of every hex, row by row: an island, sea at the edges (cached per seed)."""
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
