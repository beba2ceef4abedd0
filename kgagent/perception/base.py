"""Perception interfaces: screens to state features, screens to UI objects.

Implementations: ``encoders.py`` (open_clip CLIP, weight-free pixel encoder),
``segmenters.py`` (Segment Anything, classical OpenCV), ``grounding.py``
(template matching), ``change.py`` (visual change Δ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class StateEncoder(Protocol):
    """Turns screenshots into unit-normalised feature vectors."""

    #: Identity recorded in the memory manifest, e.g. "clip:ViT-B-32:openai" or
    #: "pixel:v1". Features of different identities are never mixed.
    identity: str
    dim: int
    #: (θ_merge, θ_simi) calibrated for this encoder.
    default_thresholds: tuple[float, float]

    def encode(self, images: list[np.ndarray]) -> np.ndarray:
        """(n, dim) float32, each row of unit L2 norm."""
        ...


@dataclass
class Segment:
    """A candidate interactable UI element found on one screenshot."""

    bbox: tuple[int, int, int, int]  # x, y, w, h in screen pixels
    crop: np.ndarray  # RGB uint8 crop of the bbox
    phash: int  # 64-bit perceptual hash of the crop
    score: float = 1.0

    @property
    def center(self) -> tuple[int, int]:
        x, y, w, h = self.bbox
        return (x + w // 2, y + h // 2)


@runtime_checkable
class Segmenter(Protocol):
    identity: str

    def segment(self, image: np.ndarray) -> list[Segment]:
        """Interactable UI element candidates, de-duplicated, largest count bounded."""
        ...


@dataclass
class GroundResult:
    """Where an object's reference crop was found on the current screen."""

    found: bool
    score: float
    point: tuple[int, int] | None = None  # click point (centre of the best match)
    bbox: tuple[int, int, int, int] | None = None
    scale: float = 1.0
