"""The screen of ``gym:ID``: a game's rendering checked as RGB ``uint8`` pixels, in C
order, scaled by nearest neighbour to the size the agent sees."""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from kgagent.errors import EnvironmentError_


def pixels(render: Any, env_id: str) -> np.ndarray:
    """A Gymnasium rendering as ``uint8`` pixels. Integers within 0–255 are taken as they
    are; floats are refused, since their scale (0–1 or 0–255) cannot be told apart
    from the frame, and a cast would turn a 0–1 picture black. Checked here, on the
    game's own rendering (the first one is made before the run starts), so that what
    is wrong is told in the game's own shape, not the scaled screen's."""
    if render is None:
        raise EnvironmentError_(
            f'gym:{env_id} render() returned None, made with render_mode="rgb_array": in '
            "that mode render() returns the screen, a uint8 array (height, width, 3) (does "
            "the game's __init__ keep its render_mode?)"
        )
    a = np.asarray(render)
    shape = tuple(a.shape)
    if a.ndim != 3 or a.shape[2] not in (3, 4) or not a.size:
        raise EnvironmentError_(
            f"gym:{env_id} rendered {a.dtype} {shape}: a screen is an RGB array, "
            "(height, width, 3) (a grey picture: np.stack([frame] * 3, axis=-1))"
        )
    if a.dtype == np.uint8:
        return a
    if a.dtype.kind in "iu" and 0 <= a.min() and a.max() <= 255:
        return a.astype(np.uint8)
    raise EnvironmentError_(
        f"gym:{env_id} rendered {a.dtype} {shape}: a screen is an RGB array of uint8, "
        "(height, width, 3), with values 0–255 (scale a float picture in the game's "
        "render(): (frame * 255).astype(np.uint8))"
    )


def contiguous(img: np.ndarray) -> np.ndarray:
    """``img`` in C order (itself when it is already).

    A column-major image, an (h, w, c) view of a (w, h, c) buffer as Crafter's render
    and pygame's ``surfarray`` give, is transposed by OpenCV: the same pixels, about 20×
    faster than numpy's strided copy (benchmarks/experiments/frame_copies.py).
    """
    if img.flags.c_contiguous:
        return img
    t = img.T if img.ndim == 2 else img.transpose(1, 0, 2)
    if t.flags.c_contiguous and img.dtype == np.uint8 and (img.ndim == 2 or img.shape[2] <= 4):
        return cv2.transpose(t)
    return np.ascontiguousarray(img)


def nearest(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour scaling to (width, height)."""
    h, w = img.shape[:2]
    tw, th = size
    if (w, h) == (tw, th):
        return contiguous(img)
    ys = (np.arange(th) * h // th).clip(0, h - 1)
    xs = (np.arange(tw) * w // tw).clip(0, w - 1)
    return np.ascontiguousarray(img[ys[:, None], xs[None, :]])


def default_size(native: tuple[int, int], least: int = 400) -> tuple[int, int]:
    k = max(1, math.ceil(least / max(1, min(native))))
    return native[0] * k, native[1] * k
