"""Fixtures for perception tests."""

from __future__ import annotations

import numpy as np
import pytest

from .synthetic import Box, draw_ui


@pytest.fixture
def ui() -> tuple[np.ndarray, list[Box]]:
    return draw_ui()
