"""Synthetic GUI screens drawn with OpenCV: no game knowledge, known ground truth."""

from __future__ import annotations

import cv2
import numpy as np

Box = tuple[int, int, int, int]


def draw_ui(
    *,
    seed: int = 0,
    size: tuple[int, int] = (1280, 720),
    shift: int = 0,
    hp: int = 80,
    bg: tuple[int, int, int] = (32, 34, 40),
) -> tuple[np.ndarray, list[Box]]:
    """A toolbar, a row of labelled buttons and three framed cards; returns (image, boxes)."""
    rng = np.random.default_rng(seed)
    w, h = size
    img = np.empty((h, w, 3), np.uint8)
    img[:] = bg
    cv2.rectangle(img, (0, 0), (w - 1, 60), (50, 55, 70), -1)
    cv2.putText(img, f"HP {hp}/100", (20, 40), cv2.FONT_HERSHEY_DUPLEX, 0.8, (240, 240, 240), 1)
    boxes: list[Box] = []
    for i in range(5):
        x, y, bw, bh = 100 + i * 200 + shift, 600, 150, 50
        col = tuple(int(c) for c in rng.integers(60, 230, 3))
        cv2.rectangle(img, (x, y), (x + bw, y + bh), col, -1)
        cv2.rectangle(img, (x, y), (x + bw, y + bh), (240, 240, 240), 2)
        cv2.putText(
            img, f"Btn {i}", (x + 20, y + 33), cv2.FONT_HERSHEY_DUPLEX, 0.7, (10, 10, 10), 1
        )
        boxes.append((x, y, bw + 1, bh + 1))
    for i in range(3):
        x, y, cw, ch = 300 + i * 180 + shift, 200, 120, 160
        cv2.rectangle(img, (x, y), (x + cw, y + ch), (200, 180, 140), -1)
        cv2.circle(img, (x + 60, y + 60), 18 + 4 * i, (200, 50 + 60 * i, 50), -1)
        cv2.putText(img, f"C{i}", (x + 40, y + 130), cv2.FONT_HERSHEY_DUPLEX, 0.7, (10, 10, 10), 1)
        boxes.append((x, y, cw + 1, ch + 1))
    return img, boxes


def iou(a: Box, b: Box) -> float:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    ix = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    iy = max(0, min(ay + ah, by + bh) - max(ay, by))
    inter = ix * iy
    return inter / float(aw * ah + bw * bh - inter)
