"""Perception: screens to state features, UI objects, their text, click points and visual change.

Importing this package does not import torch, open_clip, segment_anything or
RapidOCR: they are imported inside :class:`ClipEncoder`, :class:`SamSegmenter` and
:class:`OcrReader`, so the weight-free path (pixel encoder, OpenCV segmenter) starts in
well under a second.
"""

from kgagent.perception.base import GroundResult, Segment, Segmenter, StateEncoder
from kgagent.perception.change import to_gray, visual_change
from kgagent.perception.encoders import ClipEncoder, PixelEncoder, make_encoder
from kgagent.perception.grounding import TextGround, ground, ground_or_raise
from kgagent.perception.reader import NoReader, OcrReader, Reading, TextReader, make_reader
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
    "NoReader",
    "OcrReader",
    "OpenCVSegmenter",
    "PixelEncoder",
    "Reading",
    "SamSegmenter",
    "Segment",
    "Segmenter",
    "StateEncoder",
    "TextGround",
    "TextReader",
    "ground",
    "ground_or_raise",
    "hamming",
    "make_encoder",
    "make_reader",
    "make_segmenter",
    "phash",
    "to_gray",
    "visual_change",
]
