"""The pointer's rest between inputs: put back at one point of the target before a capture.

Why: a program redraws what lies under the pointer (a button's hover border or
colour, a link's underline, a tooltip), so a screen captured with the pointer where
the last input left it differs from the screen before that input by the hover alone,
and the agent would take that for the program's answer (an effect to learn, a skill
that "works") and keep the highlighted look in its crops. Before each capture that
is compared with another (an episode's first, each after an input) the desktop env
puts the pointer on one rest point of the target (:func:`kgagent.envs.points.rest_point`
says which and why), so both are taken under the same pointer. The point is checked
as the pointer moves there, with the X server held: it must lie in the target's box
and be the target's (no other program's window over it), or the pointer stays where
it is. No other program is ever hovered.
"""

from __future__ import annotations

from collections.abc import Callable

from kgagent.envs.points import Box, rest_point
from kgagent.envs.xinput import PyAutoGUIInput
from kgagent.envs.xwindows import Window, XWindows


def rest_pointer(
    inp: PyAutoGUIInput, view: Box, wid: int | None, ours: Callable[[Window], bool]
) -> bool:
    """Move the pointer to the rest point of ``view`` (the target's part on the screen;
    ``wid``: its window, None for a region or the screen) if it is the target's there;
    whether it moved. ``ours``: whether a window is of the target's program."""
    point = rest_point(view, inp.corners)
    if point is None:
        return False
    sx, sy = view[0] + point[0], view[1] + point[1]
    return inp.rest((sx, sy), lambda x: rests_inside(x, wid, ours, sx, sy))


def rests_inside(
    x: XWindows, wid: int | None, ours: Callable[[Window], bool], sx: int, sy: int
) -> bool:
    """Whether screen point (sx, sy) is the target's now: on the screen, and for a bound
    window ``wid`` inside its box and taken by it (or by a window of its own program
    over it: a dialog, its full screen)."""
    sw, sh = x.screen_size
    if not (0 <= sx < sw and 0 <= sy < sh):
        return False
    if wid is None:
        return True  # a region or the screen: the point lies in it
    hit = x.top_at(sx, sy)
    if not hit:
        return False
    if hit != x.top_of(wid):
        win = x.program_window(hit)
        return win is not None and (x.same_client(win.wid, wid) or ours(win))
    bx, by, bw, bh = x.box(wid) or (0, 0, 0, 0)
    return bx <= sx < bx + bw and by <= sy < by + bh
