"""Waiting in the tests for something another process does (a window to map, a file to grow).

Import as ``from polling import wait_until`` (pyproject.toml puts ``tests/`` on the path).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(pred: Callable[[], object], timeout: float = 10.0, every: float = 0.05) -> bool:
    """Whether ``pred()`` became true within ``timeout`` seconds, asked every ``every`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(every)
    return False
