"""Where a desktop agent's pointer may not go, decided from coordinates alone.

Why a module of its own: these rules need no X query, so they are pure and tested
without a display, while the one that needs X (another program's window over the
target, :meth:`kgagent.envs.xwindows.XWindows.covering`) stays with the environment.
A point is refused when it lies outside the target (the window's frame, its close
button included), off the screen (a window reaching past the screen's edge: X would
move the pointer to the edge, onto whatever lies there), or on a corner of the screen,
where pyautogui's fail-safe stops all input.

Two more answers from coordinates alone: the part of a target that lies on the screen
(:func:`visible_part`: what the agent sees and acts on, since X can neither show nor
click the rest), and the point inside it where the pointer rests between inputs
(:func:`rest_point`).
"""

from __future__ import annotations

from collections.abc import Collection

from kgagent.actions import Action

Box = tuple[int, int, int, int]


def point_refusal(
    action: Action, box: Box, screen: tuple[int, int], corners: Collection[tuple[int, int]]
) -> str | None:
    """Why one of ``action``'s points may not be sent; None when all may. ``box``: the
    target on the screen; ``screen``: the screen's size; ``corners``: the fail-safe points."""
    ox, oy, w, h = box
    sw, sh = screen
    for px, py in action.points():
        at = f"{action.kind} at ({px}, {py})"
        if not (0 <= px < w and 0 <= py < h):
            return f"{at} is outside the {w}x{h} target; nothing was executed"
        sx, sy = ox + px, oy + py
        if not (0 <= sx < sw and 0 <= sy < sh):
            return (
                f"{at} is off the screen (the target reaches past its edge there, and X would "
                "move the pointer to the edge, onto whatever lies there); nothing was executed"
            )
        if (sx, sy) in corners:
            return (
                f"{at} is a corner of the screen, where pyautogui's fail-safe stops all input; "
                "nothing was executed"
            )
    return None


def on_screen(box: Box, screen: tuple[int, int]) -> bool:
    """Whether all of ``box`` lies on a screen of size ``screen``."""
    x, y, w, h = box
    return x >= 0 and y >= 0 and x + w <= screen[0] and y + h <= screen[1]


def visible_part(box: Box, screen: tuple[int, int]) -> Box | None:
    """The part of ``box`` that lies on a screen of size ``screen``; None when none does."""
    x, y, w, h = box
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(screen[0], x + w), min(screen[1], y + h)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


def rest_point(view: Box, corners: Collection[tuple[int, int]]) -> tuple[int, int] | None:
    """Where the pointer rests between inputs, relative to ``view`` (the target's part on
    the screen): its bottom-left pixel, or the pixel diagonally inside it when that is a
    fail-safe corner; None when neither is (a view one pixel wide or high).

    Why a rest point: a program redraws what lies under the pointer (a button's hover
    border, a link's underline), so a screen captured with the pointer where the last
    input left it differs from the one before that input by the hover alone; with the
    pointer back at one point before every capture, what differs is the program's
    answer. Why this point: it lies inside the target, so the pointer never hovers
    another program; the corner pixel of a window is its border or the margin that
    toolkits (Tk, Xaw, GTK, Qt) keep around their widgets; and the bottom, not the top,
    where menu bars lie (with a menu open, GTK and Qt switch menus under a pointer
    that crosses their bar)."""
    x, y, w, h = view
    for px, py in ((0, h - 1), (1, h - 2)):
        if 0 <= px < w and 0 <= py < h and (x + px, y + py) not in corners:
            return px, py
    return None
