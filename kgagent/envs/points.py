"""Where a desktop agent's pointer may not go, decided from coordinates alone.

Why a module of its own: these rules need no X query, so they are pure and tested
without a display, while the one that needs X (another program's window over the
target, :meth:`kgagent.envs.xwindows.XWindows.covering`) stays with the environment.
A point is refused when it lies outside the target (the window's frame, its close
button included), off the screen (a window reaching past the screen's edge: X would
move the pointer to the edge, onto whatever lies there), or on a corner of the screen,
where pyautogui's fail-safe stops all input.
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
