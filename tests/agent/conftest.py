"""Fixtures for the agent tests: a config, a memory in tmp, the toy program."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.perception.encoders import PixelEncoder

from .toy import ToyEnv, ToySegmenter


@pytest.fixture
def cfg() -> Config:
    c = Config()
    c.perception.encoder = "pixel"
    c.perception.segmenter = "opencv"
    c.brain.kind = "offline"
    return c


@pytest.fixture
def encoder() -> PixelEncoder:
    return PixelEncoder()


@pytest.fixture
def memory(tmp_path, cfg, encoder) -> Iterator[Memory]:
    mem = Memory.open(tmp_path / "mem", cfg, encoder=EncoderSpec.of(encoder))
    try:
        yield mem
    finally:
        mem.close()


@pytest.fixture
def toy() -> ToyEnv:
    env = ToyEnv()
    env.reset()
    return env


@pytest.fixture
def segmenter() -> ToySegmenter:
    return ToySegmenter()
