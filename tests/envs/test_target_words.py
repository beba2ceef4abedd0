"""The target's part on the screen, the pointer's rest point, and the words the desktop env
says of them (no display needed)."""

from __future__ import annotations

import pytest

from kgagent.envs.desktop_words import target_line
from kgagent.envs.keyguard import closing_reason
from kgagent.envs.points import rest_point, visible_part

SCREEN = (640, 480)
CORNERS = [(0, 0), (639, 0), (0, 479), (639, 479)]


@pytest.mark.parametrize(
    "box, part",
    [
        ((100, 100, 200, 100), (100, 100, 200, 100)),  # all on the screen
        ((500, 250, 300, 300), (500, 250, 140, 230)),  # past the right and bottom edges
        ((-150, 20, 400, 300), (0, 20, 250, 300)),  # past the left edge
        ((0, 0, 1000, 1000), (0, 0, 640, 480)),  # larger than the screen
        ((640, 0, 100, 100), None),  # wholly off it
        ((-100, -100, 100, 100), None),
    ],
)
def test_the_part_of_a_box_on_the_screen(box, part) -> None:
    assert visible_part(box, SCREEN) == part


def test_the_rest_point_is_the_bottom_left_pixel_inside_the_target_off_the_corners() -> None:
    assert rest_point((100, 100, 200, 100), CORNERS) == (0, 99)
    # a target filling the screen: its bottom-left pixel is a fail-safe corner
    assert rest_point((0, 0, 640, 480), CORNERS) == (1, 478)
    assert rest_point((0, 479, 5, 1), CORNERS) is None  # one pixel high, on the corner
    for view in ((100, 100, 200, 100), (0, 0, 640, 480), (7, 9, 2, 2)):
        px, py = rest_point(view, CORNERS)
        assert 0 <= px < view[2] and 0 <= py < view[3]  # never outside the target


def test_the_whole_screen_says_every_window_is_captured_and_how_to_narrow_it() -> None:
    line = target_line("screen", (0, 0, 1024, 768), (1024, 768), whole_screen=True)
    assert line.startswith("screen 1024x768+0+0; every window on it is captured and read")
    assert "--window" in line and "--region" in line
    assert target_line("region", (10, 20, 300, 200), SCREEN, whole_screen=False) == (
        "region 300x200+10+20"
    )


def test_a_target_past_the_screens_edge_says_which_part_is_used() -> None:
    line = target_line("window 'xlogo' (id 0x200001)", (500, 250, 300, 300), SCREEN, False)
    assert line == (
        "window 'xlogo' (id 0x200001) 300x300+500+250; it reaches past the edge of the "
        "640x480 screen: the agent sees and acts on its 140x230+500+250 part on the screen"
    )
    off = target_line("window 'x' (id 0x1)", (700, 0, 100, 100), SCREEN, False)
    assert off.endswith("it lies wholly off the 640x480 screen: nothing of it can be seen")


def test_the_ctrl_c_refusal_names_no_program_as_if_it_were_the_target() -> None:
    """It is printed about whatever program is being learned (xbill, say)."""
    reason = closing_reason(["ctrl", "c"])
    assert reason is not None and "(" not in reason and "xcalc" not in reason
