"""The pointer rests at one point of the target before every compared capture, so a hover
highlight is no effect (a Tk toy whose buttons light up under the pointer, on Xvfb)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from polling import wait_until

from kgagent.actions import Action
from kgagent.config import Config, DesktopConfig
from kgagent.perception.change import visual_change

pytestmark = pytest.mark.desktop
HOVER_APP = Path(__file__).with_name("hover_app.py")
TK_APP = Path(__file__).with_name("desktop_app.py")
LIT = np.array([48, 80, 192])  # the toy's hover colour (activebackground): Δ counts it
MIN_CHANGE = Config().augment.min_change  # below it, an input "changed nothing"
THRESHOLD = Config().perception.change_threshold


def _start(app: Path, counts: Path, title: str, display: str) -> subprocess.Popen:
    from kgagent.envs.xwindows import XWindows

    proc = subprocess.Popen([sys.executable, str(app), str(counts), title])
    x = XWindows(display)
    try:
        assert wait_until(lambda: counts.exists() and x.find(title) is not None), "no toy window"
    finally:
        x.close()
    return proc


@pytest.fixture
def hover(xvfb: str, tmp_path: Path):
    counts, title = tmp_path / "hover.json", f"kghover-{tmp_path.name}"
    proc = _start(HOVER_APP, counts, title, xvfb)
    yield counts, title
    proc.kill()
    proc.wait()


def _env(title: str):
    from kgagent.envs.desktop import DesktopEnv

    return DesktopEnv(DesktopConfig(window=title, settle_timeout_s=1.0))


def _pointer(display: str) -> tuple[int, int]:
    from Xlib.display import Display

    d = Display(display)
    try:
        p = d.screen().root.query_pointer()
        return int(p.root_x), int(p.root_y)
    finally:
        d.close()


def _move_pointer(display: str, x: int, y: int) -> None:
    from Xlib import X
    from Xlib.display import Display
    from Xlib.ext import xtest

    d = Display(display)
    try:
        xtest.fake_input(d, X.MotionNotify, x=x, y=y)
        d.sync()
    finally:
        d.close()


def _lit(img: np.ndarray) -> int:
    return int(np.all(img == LIT, axis=2).sum())


def test_a_button_that_only_lights_up_under_the_pointer_is_no_effect(hover) -> None:
    counts, title = hover
    env = _env(title)
    try:
        before = env.reset()[0]
        after = env.step(Action("click", x=80, y=50))[0]  # Idle: a hover colour, no command
        assert _lit(after) == 0
        assert visual_change(before, after, THRESHOLD) < MIN_CHANGE
        painted = env.step(Action("click", x=220, y=50))[0]  # Paint: the strip changes
        assert json.loads(counts.read_text())["paint"] == 1
        assert visual_change(after, painted, THRESHOLD) >= MIN_CHANGE
        assert _lit(painted) == 0  # the change is the strip's, not Paint's hover colour
    finally:
        env.close()


def test_the_first_capture_is_taken_with_the_pointer_at_rest(hover, xvfb: str) -> None:
    """A pointer left on a button (by the user, or by the last episode's input) is moved to
    the rest point before the episode's first capture."""
    _counts, title = hover
    _move_pointer(xvfb, 100 + 80, 100 + 50)  # over Idle
    env = _env(title)
    try:
        obs = env.reset()[0]
        assert _lit(obs) == 0
        x, y, _w, h = env.target_box
        assert _pointer(xvfb) == (x, y + h - 1)  # the bottom-left pixel of the target
    finally:
        env.close()


def test_the_pointer_never_rests_on_another_programs_window(hover, xvfb, tmp_path) -> None:
    """Where a window of another program lies over the rest point, the pointer stays where
    the input left it (inside the target), hovering no other program."""
    from kgagent.envs.xwindows import XWindows

    _counts, title = hover
    other_title = f"kgother-{tmp_path.name}"
    other = _start(TK_APP, tmp_path / "other.json", other_title, xvfb)
    x = XWindows(xvfb)
    try:
        x.move_to(x.find(other_title).wid, 0, 250)  # over the toy's bottom-left (100, 299)
        env = _env(title)
        try:
            env.step(Action("click", x=220, y=50))
            bx, by = env.target_box[:2]
            assert _pointer(xvfb) == (bx + 220, by + 50)
        finally:
            env.close()
    finally:
        x.close()
        other.kill()
        other.wait()
