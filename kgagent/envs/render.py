"""Shared drawing helpers for the built-in games.

The games must render a full 1280x720 frame in a few milliseconds, so every
helper draws straight into an RGB ``uint8`` array with OpenCV primitives
(no PIL round trips), and text sprites are cached per (text, style) because
``cv2.putText`` with anti-aliasing is the most expensive primitive we use.

Boxes are ``(x, y, w, h)`` in pixels; colours are RGB tuples.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

Box = tuple[int, int, int, int]
Color = tuple[int, int, int]

FONT = cv2.FONT_HERSHEY_DUPLEX
FONT_BOLD = cv2.FONT_HERSHEY_TRIPLEX

WHITE: Color = (240, 240, 240)
BLACK: Color = (10, 10, 10)
GOLD: Color = (235, 196, 80)
RED: Color = (210, 60, 50)
BLUE: Color = (70, 130, 220)
GREEN: Color = (80, 190, 90)
GREY: Color = (120, 120, 120)
DARK: Color = (32, 34, 40)


def canvas(w: int, h: int, color: Color = DARK) -> np.ndarray:
    """A new RGB frame filled with one colour."""
    img = np.empty((h, w, 3), np.uint8)
    img[:] = color
    return img


@lru_cache(maxsize=32)
def _vgradient(w: int, h: int, top: Color, bottom: Color) -> np.ndarray:
    t = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None]
    col = (1 - t) * np.array(top, np.float32) + t * np.array(bottom, np.float32)
    img = np.repeat(col[:, None, :], w, axis=1).astype(np.uint8)
    img.setflags(write=False)
    return img


def vgradient(w: int, h: int, top: Color, bottom: Color) -> np.ndarray:
    """A vertical gradient (a fresh writable copy of a cached one) for backgrounds."""
    return _vgradient(w, h, tuple(top), tuple(bottom)).copy()


def contains(box: Box, x: float, y: float) -> bool:
    """Whether point (x, y) lies inside ``box``: the games' hit test."""
    bx, by, bw, bh = box
    return bx <= x < bx + bw and by <= y < by + bh


def fill(img: np.ndarray, box: Box, color: Color) -> None:
    x, y, w, h = box
    img[max(0, y) : max(0, y + h), max(0, x) : max(0, x + w)] = color


def blend(img: np.ndarray, box: Box, color: Color, alpha: float) -> None:
    """Darken/tint a region (modal backdrops) without a full-frame copy."""
    x, y, w, h = box
    x0, y0 = max(0, x), max(0, y)
    region = img[y0 : y + h, x0 : x + w]
    out = cv2.convertScaleAbs(region, alpha=1.0 - alpha)
    if any(color):
        out = cv2.add(out, (color[0] * alpha, color[1] * alpha, color[2] * alpha, 0.0))
    region[:] = out


def rect(img: np.ndarray, box: Box, color: Color, thickness: int = 2) -> None:
    x, y, w, h = box
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), color, thickness, cv2.LINE_AA)


def panel(
    img: np.ndarray,
    box: Box,
    fill_color: Color,
    border: Color | None = None,
    radius: int = 8,
    thickness: int = 2,
) -> None:
    """A rounded, bordered panel."""
    x, y, w, h = box
    r = max(0, min(radius, w // 2, h // 2))
    if r == 0:
        fill(img, box, fill_color)
    else:
        cv2.rectangle(img, (x + r, y), (x + w - 1 - r, y + h - 1), fill_color, -1)
        cv2.rectangle(img, (x, y + r), (x + w - 1, y + h - 1 - r), fill_color, -1)
        for cx, cy in (
            (x + r, y + r),
            (x + w - 1 - r, y + r),
            (x + r, y + h - 1 - r),
            (x + w - 1 - r, y + h - 1 - r),
        ):
            cv2.circle(img, (cx, cy), r, fill_color, -1, cv2.LINE_AA)
    if border is not None:
        if r == 0:
            rect(img, box, border, thickness)
        else:
            pts = _rounded_outline(x, y, w, h, r)
            cv2.polylines(img, [pts], True, border, thickness, cv2.LINE_AA)


@lru_cache(maxsize=256)
def _rounded_outline(x: int, y: int, w: int, h: int, r: int) -> np.ndarray:
    pts: list[tuple[int, int]] = []
    corners = (
        (x + w - 1 - r, y + r, -90),
        (x + w - 1 - r, y + h - 1 - r, 0),
        (x + r, y + h - 1 - r, 90),
        (x + r, y + r, 180),
    )
    for cx, cy, start in corners:
        for a in range(start, start + 91, 15):
            t = np.deg2rad(a)
            pts.append((int(round(cx + r * np.cos(t))), int(round(cy + r * np.sin(t)))))
    return np.array(pts, np.int32)


@lru_cache(maxsize=4096)
def _text_sprite(
    s: str, scale: float, color: Color, thickness: int, font: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Render text once into a small RGB sprite + alpha mask; returns (rgb, alpha, baseline)."""
    (tw, th), base = cv2.getTextSize(s, font, scale, thickness)
    h = th + base + 4
    w = tw + 4
    mask = np.zeros((h, w), np.uint8)
    cv2.putText(mask, s, (2, th + 2), font, scale, 255, thickness, cv2.LINE_AA)
    rgb = np.empty((h, w, 3), np.uint8)
    rgb[:] = color
    alpha = (mask.astype(np.float32) / 255.0)[:, :, None]
    return rgb, alpha, th + 2


def text_size(s: str, scale: float = 0.6, thickness: int = 1, font: int = FONT) -> tuple[int, int]:
    """Width and height of a string as :func:`text` would draw it."""
    (tw, th), _ = cv2.getTextSize(s, font, scale, thickness)
    return tw, th


def text(
    img: np.ndarray,
    s: str,
    x: int,
    y: int,
    scale: float = 0.6,
    color: Color = WHITE,
    thickness: int = 1,
    anchor: str = "lt",
    font: int = FONT,
) -> None:
    """Draw text; ``anchor`` is two letters: l/c/r horizontally, t/m/b vertically."""
    if not s:
        return
    rgb, alpha, base = _text_sprite(s, float(scale), tuple(color), int(thickness), int(font))
    h, w = alpha.shape[:2]
    tx = x - 2 if anchor[0] == "l" else x - w // 2 if anchor[0] == "c" else x - w + 2
    ty = y - 2 if anchor[1] == "t" else y - base // 2 - 1 if anchor[1] == "m" else y - base
    _paste(img, rgb, alpha, tx, ty)


def _paste(img: np.ndarray, rgb: np.ndarray, alpha: np.ndarray, x: int, y: int) -> None:
    H, W = img.shape[:2]
    h, w = alpha.shape[:2]
    x0, y0, x1, y1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if x0 >= x1 or y0 >= y1:
        return
    a = alpha[y0 - y : y1 - y, x0 - x : x1 - x]
    src = rgb[y0 - y : y1 - y, x0 - x : x1 - x]
    dst = img[y0:y1, x0:x1]
    dst[:] = (src * a + dst * (1.0 - a)).astype(np.uint8)


def wrap(s: str, width_px: int, scale: float = 0.5, thickness: int = 1) -> list[str]:
    """Greedy word wrap to a pixel width."""
    lines: list[str] = []
    cur = ""
    for word in s.split():
        cand = f"{cur} {word}".strip()
        if cur and text_size(cand, scale, thickness)[0] > width_px:
            lines.append(cur)
            cur = word
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines


def button(
    img: np.ndarray,
    box: Box,
    label: str,
    fill_color: Color = (60, 70, 90),
    text_color: Color = WHITE,
    border: Color | None = (200, 200, 210),
    scale: float = 0.6,
    thickness: int = 1,
    radius: int = 8,
) -> None:
    """A labelled, rounded button with the label centred."""
    panel(img, box, fill_color, border, radius)
    x, y, w, h = box
    text(img, label, x + w // 2, y + h // 2, scale, text_color, thickness, "cm")


def bar(
    img: np.ndarray,
    box: Box,
    frac: float,
    color: Color,
    back: Color = (50, 20, 20),
    label: str | None = None,
) -> None:
    """A horizontal progress/health bar with an optional centred label."""
    x, y, w, h = box
    fill(img, box, back)
    fw = int(round(w * max(0.0, min(1.0, frac))))
    if fw > 0:
        fill(img, (x, y, fw, h), color)
    rect(img, box, (20, 20, 20), 1)
    if label:
        text(img, label, x + w // 2, y + h // 2, 0.45, WHITE, 1, "cm")


# ----------------------------------------------------------------- icons
def icon_heart(img: np.ndarray, cx: int, cy: int, r: int, color: Color = RED) -> None:
    cv2.circle(img, (cx - r // 2, cy - r // 4), r // 2 + 1, color, -1, cv2.LINE_AA)
    cv2.circle(img, (cx + r // 2, cy - r // 4), r // 2 + 1, color, -1, cv2.LINE_AA)
    pts = np.array([(cx - r, cy - r // 6), (cx + r, cy - r // 6), (cx, cy + r)], np.int32)
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)


def icon_shield(img: np.ndarray, cx: int, cy: int, r: int, color: Color = BLUE) -> None:
    pts = np.array(
        [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], np.int32
    )
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)
    cv2.polylines(img, [pts], True, WHITE, 1, cv2.LINE_AA)


def icon_sword(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (220, 220, 230)) -> None:
    cv2.line(img, (cx - r, cy + r), (cx + r, cy - r), color, max(2, r // 4), cv2.LINE_AA)
    cv2.line(img, (cx - r // 2, cy), (cx, cy + r // 2), (150, 110, 60), max(2, r // 4), cv2.LINE_AA)


def icon_up(img: np.ndarray, cx: int, cy: int, r: int, color: Color = GREEN) -> None:
    pts = np.array(
        [
            (cx, cy - r),
            (cx + r, cy),
            (cx + r // 3, cy),
            (cx + r // 3, cy + r),
            (cx - r // 3, cy + r),
            (cx - r // 3, cy),
            (cx - r, cy),
        ],
        np.int32,
    )
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)


def icon_fire(img: np.ndarray, cx: int, cy: int, r: int) -> None:
    cv2.ellipse(img, (cx, cy), (r * 2 // 3, r), 0, 0, 360, (230, 110, 30), -1, cv2.LINE_AA)
    cv2.ellipse(
        img, (cx, cy + r // 4), (r // 3, r * 2 // 3), 0, 0, 360, (250, 210, 80), -1, cv2.LINE_AA
    )


def icon_skull(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (230, 225, 210)) -> None:
    cv2.circle(img, (cx, cy - r // 5), r * 4 // 5, color, -1, cv2.LINE_AA)
    fill(img, (cx - r // 2, cy + r // 3, r, r // 2), color)
    cv2.circle(img, (cx - r // 3, cy - r // 5), r // 5, BLACK, -1, cv2.LINE_AA)
    cv2.circle(img, (cx + r // 3, cy - r // 5), r // 5, BLACK, -1, cv2.LINE_AA)


def icon_coin(img: np.ndarray, cx: int, cy: int, r: int) -> None:
    cv2.circle(img, (cx, cy), r, GOLD, -1, cv2.LINE_AA)
    cv2.circle(img, (cx, cy), r, (150, 110, 30), 1, cv2.LINE_AA)


def icon_flask(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (80, 170, 240)) -> None:
    pts = np.array(
        [
            (cx - r // 4, cy - r),
            (cx + r // 4, cy - r),
            (cx + r // 4, cy - r // 3),
            (cx + r, cy + r),
            (cx - r, cy + r),
            (cx - r // 4, cy - r // 3),
        ],
        np.int32,
    )
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)


def icon_hammer(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (200, 140, 70)) -> None:
    cv2.line(
        img,
        (cx - r, cy + r),
        (cx + r // 3, cy - r // 3),
        (150, 100, 50),
        max(2, r // 3),
        cv2.LINE_AA,
    )
    pts = np.array(
        [(cx, cy - r), (cx + r, cy), (cx + r // 2, cy + r // 2), (cx - r // 2, cy - r // 2)],
        np.int32,
    )
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)


def icon_wheat(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (120, 200, 90)) -> None:
    cv2.line(img, (cx, cy + r), (cx, cy - r), color, 2, cv2.LINE_AA)
    for k in (-1, 0, 1):
        cv2.ellipse(
            img,
            (cx - r // 3, cy + k * r // 2),
            (r // 3, r // 6),
            30,
            0,
            360,
            color,
            -1,
            cv2.LINE_AA,
        )
        cv2.ellipse(
            img,
            (cx + r // 3, cy + k * r // 2),
            (r // 3, r // 6),
            -30,
            0,
            360,
            color,
            -1,
            cv2.LINE_AA,
        )


def icon_star(img: np.ndarray, cx: int, cy: int, r: int, color: Color = (200, 120, 230)) -> None:
    pts = []
    for i in range(10):
        rr = r if i % 2 == 0 else r * 0.45
        t = np.deg2rad(-90 + 36 * i)
        pts.append((int(cx + rr * np.cos(t)), int(cy + rr * np.sin(t))))
    cv2.fillPoly(img, [np.array(pts, np.int32)], color, cv2.LINE_AA)


def card(
    img: np.ndarray,
    box: Box,
    title: str,
    cost: int,
    kind: str,
    desc: str,
    selected: bool = False,
    playable: bool = True,
) -> None:
    """A playing card: cost gem, title banner, art box by kind, wrapped description."""
    x, y, w, h = box
    frame = {"attack": (150, 60, 50), "skill": (50, 90, 140), "power": (140, 110, 40)}.get(
        kind, (90, 90, 90)
    )
    border = GOLD if selected else (30, 30, 30)
    panel(img, box, frame, border, 10, 3 if selected else 2)
    panel(img, (x + 8, y + 26, w - 16, h * 2 // 5), (40, 40, 48), None, 4)
    # art
    ax, ay = x + w // 2, y + 26 + h // 5
    if kind == "attack":
        icon_sword(img, ax, ay, h // 9)
    elif kind == "skill":
        icon_shield(img, ax, ay, h // 10)
    else:
        icon_up(img, ax, ay, h // 10, GOLD)
    panel(img, (x + 4, y + 4, w - 8, 20), (230, 220, 200), None, 4)
    text(img, title, x + w // 2, y + 14, 0.42, BLACK, 1, "cm")
    gem = (70, 140, 230) if playable else (90, 90, 100)
    cv2.circle(img, (x + 6, y + 6), 13, gem, -1, cv2.LINE_AA)
    cv2.circle(img, (x + 6, y + 6), 13, WHITE, 1, cv2.LINE_AA)
    text(img, str(cost), x + 6, y + 6, 0.55, WHITE, 1, "cm")
    text(img, kind.capitalize(), x + w // 2, y + 34 + h * 2 // 5, 0.38, (220, 220, 220), 1, "cm")
    ty = y + 48 + h * 2 // 5
    for line in wrap(desc, w - 16, 0.4)[:4]:
        text(img, line, x + w // 2, ty, 0.4, WHITE, 1, "ct")
        ty += 16


def hexagon(cx: float, cy: float, r: float) -> np.ndarray:
    """Corners of a pointy-top hexagon, for hex-tile maps."""
    ang = np.deg2rad(np.arange(6) * 60 - 30)
    return np.stack([cx + r * np.cos(ang), cy + r * np.sin(ang)], 1).round().astype(np.int32)


def to_png(img: np.ndarray, path: str) -> None:
    """Save an RGB frame as PNG (cv2 writes BGR)."""
    if not cv2.imwrite(str(path), cv2.cvtColor(img, cv2.COLOR_RGB2BGR)):
        raise OSError(f"cannot write {path}")
