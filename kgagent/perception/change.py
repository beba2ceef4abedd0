"""Visual change Δ between consecutive screenshots (the papers' Δ_ij, Eq. 1).

One shared definition, used by the skill-edge weight (Eq. 1), by augmentation
("nothing changed" means Δ below a floor) and by the benchmarks, so that every
caller measures change the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import cv2
import numpy as np


def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 grayscale of an RGB(A) or already-grey image.

    Uses the ITU-R 601 luma weights (cv2's RGB2GRAY) so that Δ does not depend
    on which channel order a caller assumed.
    """
    img = np.asarray(image)
    if img.size == 0:
        return np.zeros(img.shape[:2], np.uint8)
    if img.ndim == 2:
        gray = img
    elif img.ndim == 3 and img.shape[2] == 1:
        gray = img[:, :, 0]
    elif img.ndim == 3 and img.shape[2] == 3:
        gray = cv2.cvtColor(np.ascontiguousarray(img, dtype=np.uint8), cv2.COLOR_RGB2GRAY)
    elif img.ndim == 3 and img.shape[2] == 4:
        gray = cv2.cvtColor(np.ascontiguousarray(img, dtype=np.uint8), cv2.COLOR_RGBA2GRAY)
    else:
        raise ValueError(f"expected an (H, W), (H, W, 3) or (H, W, 4) image, got {img.shape}")
    if gray.dtype != np.uint8:
        gray = np.clip(gray, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(gray)


def visual_change(a: np.ndarray, b: np.ndarray, threshold: int) -> float:
    """Δ_ij: the fraction of pixels whose grey-level absolute difference exceeds ``threshold``.

    Strictly greater than: a difference of exactly ``threshold`` is not a change (the
    papers: "exceeds 30"). Two screens of different sizes (a window resized between
    them) differ everywhere: Δ = 1.0. Cropping one to the other would hide the resize,
    and refusing would end a run over a program that resized its own window.
    """
    ga, gb = to_gray(a), to_gray(b)
    if ga.shape != gb.shape:
        return 1.0
    mask = cv2.absdiff(ga, gb) > threshold
    if mask.size == 0:
        return 0.0
    return float(np.count_nonzero(mask)) / float(mask.size)


def _change_mask(a: np.ndarray, b: np.ndarray, threshold: int) -> np.ndarray:
    """Boolean mask of the pixels whose grey-level difference exceeds ``threshold``."""
    ga, gb = to_gray(a), to_gray(b)
    if ga.shape != gb.shape:
        raise ValueError(f"screens differ in size: {ga.shape} vs {gb.shape}")
    return cv2.absdiff(ga, gb) > threshold


def idle_change(
    observe: Callable[[], np.ndarray],
    *,
    duration_s: float,
    interval_s: float,
    threshold: int = 30,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    watches: int = 2,
) -> float:
    """The Δ a screen shows without any input: the smallest of ``watches`` watches' largest.

    A real program may change its screen on its own (a caret, a clock, a spinner, a
    video). That change is noise to every "did the action change anything?" test, so it
    is measured before the agent acts. A program that has just started may still be
    drawing its first screen, which is no noise: the probe first waits (up to
    ``duration_s`` more) for two consecutive screenshots to be equal. Then it watches
    ``watches`` times in a row: screenshots every ``interval_s`` for ``duration_s``,
    each compared with the watch's first (the previous watch's last). Noise recurs, so
    it is in every watch; a program that held still for a moment and then drew its
    first screen (a blank window while it loads) changes once, in one watch only. The
    smallest watch is the noise; a still screen ends the probe after one watch. Returns
    0.0 for a screen that stays still (every built-in game).

    Each phase (the wait, each watch) ends once ``duration_s`` has passed on ``clock``,
    after at least one comparison, or after ``duration_s / interval_s`` screenshots:
    where one screenshot takes seconds (a large screen under load), the probe lasts a
    few screenshots, not that many of them.
    """
    n = max(1, int(round(duration_s / interval_s))) if interval_s > 0 else 1
    wait = max(interval_s, 0.0)
    end = clock() + duration_s
    first = observe()
    for _ in range(n):  # wait until the screen holds still once (or give up)
        sleep(wait)
        cur = observe()
        if cur.shape == first.shape and np.array_equal(cur, first):
            break
        first = cur
        if clock() >= end:
            break
    least = 1.0
    for _ in range(max(1, watches)):
        end = clock() + duration_s
        worst = 0.0
        for _ in range(n):
            sleep(wait)
            cur = observe()
            worst = max(worst, visual_change(first, cur, threshold))
            if clock() >= end:
                break
        least = min(least, worst)
        if least == 0.0:
            break
        first = cur
    return least


def changed_regions(
    a: np.ndarray, b: np.ndarray, threshold: int, *, grow: int, min_pixels: int
) -> list[tuple[int, int, int, int]]:
    """Bounding boxes ``(x, y, w, h)`` of the places where the screen changed from ``a`` to ``b``.

    The pixels counted by :func:`visual_change` are grown by ``grow`` pixels (so a
    frame drawn around an element and the element itself form one place) and
    split into connected parts; parts with fewer than ``min_pixels`` changed
    pixels are dropped as specks. Largest first. Raises ``ValueError`` on screens
    of different sizes, as :func:`visual_change` does.
    """
    mask = _change_mask(a, b, threshold).astype(np.uint8)
    if not mask.any():
        return []
    grown = cv2.dilate(mask, np.ones((2 * grow + 1, 2 * grow + 1), np.uint8)) if grow > 0 else mask
    n, labels, stats, _ = cv2.connectedComponentsWithStats(grown, connectivity=8)
    counts = np.bincount(labels[mask > 0].ravel(), minlength=n)
    boxes = [
        (int(stats[i, 0]), int(stats[i, 1]), int(stats[i, 2]), int(stats[i, 3]))
        for i in range(1, n)
        if counts[i] >= min_pixels
    ]
    return sorted(boxes, key=lambda bx: -bx[2] * bx[3])
