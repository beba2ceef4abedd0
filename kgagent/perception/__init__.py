"""Perception: screens to state features, UI objects, click points and visual change.

Importing this package does not import torch, open_clip or segment_anything:
they are imported inside :class:`ClipEncoder` and :class:`SamSegmenter`, so the
weight-free path (pixel encoder, OpenCV segmenter) starts in well under a second.
"""

from kgagent.perception.base import GroundResult, Segment, Segmenter, StateEncoder
from kgagent.perception.change import to_gray, visual_change
from kgagent.perception.encoders import ClipEncoder, PixelEncoder, make_encoder
from kgagent.perception.grounding import ground, ground_or_raise
from kgagent.perception.segmenters import (
    OpenCVSegmenter,
    SamSegmenter,
    hamming,
    make_segmenter,
    phash,
)

__all__ = [
    "ClipEncoder",
    "GroundResult",
    "OpenCVSegmenter",
    "PixelEncoder",
    "SamSegmenter",
    "Segment",
    "Segmenter",
    "StateEncoder",
    "ground",
    "ground_or_raise",
    "hamming",
    "make_encoder",
    "make_segmenter",
    "phash",
    "to_gray",
    "visual_change",
]
