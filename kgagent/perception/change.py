"""Visual change Δ between consecutive screenshots (SPEC: Environment IO).

One shared definition, used by the skill-edge weight (Eq. 1), by augmentation
("nothing changed" means Δ below a floor) and by the benchmarks, so that every
caller measures change the same way.
"""

from __future__ import annotations

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


def visual_change(a: np.ndarray, b: np.ndarray, threshold: int = 30) -> float:
    """Δ_ij: the fraction of pixels whose grey-level absolute difference exceeds ``threshold``.

    Strictly greater than: a difference of exactly ``threshold`` is not a change
    (SPEC: "exceeds 30"). Raises ``ValueError`` when the two screens differ in
    size, because a resized window is not a pixel-wise change and silently
    cropping would hide it.
    """
    ga, gb = to_gray(a), to_gray(b)
    if ga.shape != gb.shape:
        raise ValueError(f"screens differ in size: {ga.shape} vs {gb.shape}")
    if ga.size == 0:
        return 0.0
    diff = cv2.absdiff(ga, gb)
    return float(np.count_nonzero(diff > threshold)) / float(diff.size)
