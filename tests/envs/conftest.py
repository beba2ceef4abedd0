"""Fixtures for the environment tests: a private Xvfb display per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest


def _free_display() -> int:
    for n in range(90, 200):
        if not os.path.exists(f"/tmp/.X{n}-lock") and not os.path.exists(f"/tmp/.X11-unix/X{n}"):
            return n
    raise RuntimeError("no free X display number between :90 and :199")


@pytest.fixture(scope="session")
def xvfb() -> Iterator[str]:
    """Start `Xvfb :N -screen 0 1280x800x24`, export DISPLAY and XDG_SESSION_TYPE=x11."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb); desktop tests need an X server")
    n = _free_display()
    disp = f":{n}"
    proc = subprocess.Popen(
        # -noreset: the wait below connects and leaves; without it the server then resets
        # and refuses the next test's connection for a moment
        ["Xvfb", disp, "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    from Xlib import display as xdisplay

    deadline = time.monotonic() + 10
    while True:
        try:
            xdisplay.Display(disp).close()
            break
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"Xvfb {disp} did not start") from None
            time.sleep(0.1)
    mp = pytest.MonkeyPatch()
    mp.setenv("DISPLAY", disp)
    mp.setenv("XDG_SESSION_TYPE", "x11")
    try:
        yield disp
    finally:
        mp.undo()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
