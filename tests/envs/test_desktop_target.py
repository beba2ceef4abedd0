"""What the run's first line says of the target, on Xvfb: that on the whole screen every
window is captured; for a window larger than the screen (xlogo on a 64x64 Xvfb), that the
agent sees and acts on its part on the screen, which it does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgagent.actions import Action
from kgagent.config import DesktopConfig

pytestmark = pytest.mark.desktop


def test_the_whole_screen_says_every_window_on_it_is_captured(xvfb: str) -> None:
    from kgagent.envs.desktop import DesktopEnv

    env = DesktopEnv(DesktopConfig())
    try:
        assert env.describe_target() == (
            "screen 1280x800+0+0; every window on it is captured and read, and what the agent "
            "reads there (crops, text) is kept in its memory: --window, --launch or --region "
            "narrows it"
        )
    finally:
        env.close()


@pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("xlogo") is None,
    reason="needs Xvfb and xlogo (apt-get install xvfb x11-apps)",
)
def test_a_window_larger_than_the_screen_is_its_part_on_the_screen(tmp_path: Path) -> None:
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    opts = DesktopOptions(
        launch="xlogo", display="new", screen_size=(64, 64), program_log=str(tmp_path / "p.log")
    )
    env = DesktopEnv(DesktopConfig(settle_timeout_s=0.5), options=opts)
    try:
        x, y, w, h = env.target_box
        assert (w, h) == (100, 100) and 0 <= x < 4 and 0 <= y < 4  # xlogo's size, no manager
        assert env.size == (64 - x, 64 - y)
        obs = env.reset()[0]
        assert obs.shape == (64 - y, 64 - x, 3) and obs.mean() > 100  # no black margin
        assert "reaches past the edge of the 64x64 screen: the agent sees and acts on its " in (
            env.describe_target()
        )
        for px, py in ((5, 5), (58, 5), (32, 32), (5, 58), (58, 58), (59, 40)):
            env.step(Action("click", x=px, y=py))  # none refused: every point is on screen
    finally:
        env.close()
