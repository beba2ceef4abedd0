"""Where the pointer may not go, from coordinates alone (no display needed)."""

from __future__ import annotations

from kgagent.actions import Action
from kgagent.envs.points import point_refusal

SCREEN = (800, 600)
CORNERS = [(0, 0), (799, 0), (0, 599), (799, 599)]


def test_inside_target_and_screen_is_sent() -> None:
    assert point_refusal(Action("click", x=10, y=10), (100, 100, 400, 300), SCREEN, CORNERS) is None


def test_outside_the_target_off_the_screen_and_on_a_corner_are_refused() -> None:
    box = (-150, 0, 400, 300)  # reaches past the screen's left edge
    assert "outside the 400x300 target" in point_refusal(
        Action("click", x=400, y=10), box, SCREEN, CORNERS
    )
    assert "off the screen" in point_refusal(Action("click", x=80, y=30), box, SCREEN, CORNERS)
    assert "corner of the screen" in point_refusal(
        Action("click", x=150, y=0), box, SCREEN, CORNERS
    )
    assert point_refusal(Action("click", x=200, y=30), box, SCREEN, CORNERS) is None


def test_every_point_of_a_drag_is_checked() -> None:
    drag = Action("drag", x=10, y=10, x2=390, y2=10)
    assert point_refusal(drag, (600, 0, 400, 300), SCREEN, CORNERS).startswith("drag at (390, 10)")
