"""Where an input will land on an X display, checked just before it is sent.

Why: X gives a click to the topmost window at its point and a key to the window
that holds the keyboard focus, whatever program that is. The desktop env acts only
inside its target, so before an input it asks X where the input would go:

* a pointer action on a bound window: no window of another program may lie over the
  point (the target is raised once first; its own program's windows, its dialogs
  and menus, count as the target);
* a key in a region (no window is bound): the keys go to the window that lies at
  the region's centre, which is given the focus; a key is refused while the focus
  cannot be put there (no window at the centre, a window manager that refuses),
  since it would reach the focused window, wherever that is (the terminal that
  started the agent, say);
* any input: no other program may hold the pointer or the keyboard with an active grab
  (:mod:`kgagent.envs.grabs`), and a bound window must still be its process's
  (:mod:`kgagent.envs.owner`: X reuses a dead program's window ids);
* at the end of a run, the focus goes back to the window that held it when the run
  began (:func:`focus_back`), unless the user has given it to another window since.

A check and the input after it are two requests, and a window that raises itself
between them (an always-on-top notification) would take the input. So the env makes
the last check and the press with the X server held for its input connection
(``XGrabServer``, :meth:`~kgagent.envs.xinput.PyAutoGUIInput.grabbed`): no other
program's request is served in between. Of 300 clicks aimed where a window raised
every 50 ms covers the target, the target received 273 of the 282 sent without the
hold (the covering window's button 5), 294 of 294 with it
(``benchmarks/experiments/covered_clicks.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from kgagent.actions import Action
from kgagent.envs.xwindows import Window, XWindows

Box = tuple[int, int, int, int]


def cover_refusal(
    x: XWindows,
    wid: int,
    box: Box,
    action: Action,
    ours: Callable[[Window], bool],
    raise_first: bool = True,
) -> str | None:
    """Why the pointer action ``action`` (target-relative points) on window ``wid`` at
    ``box`` would land on another program's window; None when every point is the
    target's. With ``raise_first`` a covered target is raised once and looked at again."""
    top = x.top_of(wid)
    for px, py in action.points():
        sx, sy = box[0] + px, box[1] + py
        cover = x.covering(wid, top, sx, sy, ours)
        if cover is not None and raise_first:
            x.raise_window(top)
            cover = x.covering(wid, top, sx, sy, ours)
        if cover is not None:
            return (
                f"{action.kind} at ({px}, {py}) would land on {cover.describe()}, which "
                "covers the target there; nothing was executed"
            )
    return None


def region_key_refusal(x: XWindows, region: Box, action: Action) -> str | None:
    """Give the keyboard focus to the window at the centre of ``region`` (screen
    coordinates) when another has it; why the keys of ``action`` cannot go there, or
    None when they will."""
    rx, ry, rw, rh = region
    top = x.top_at(rx + rw // 2, ry + rh // 2)
    what = action.key or "text" if action.kind != "type" else "text"
    if not top:
        return (
            f"{action.kind} {what!r}: no window lies at the centre of the region to take "
            "keys; nothing was executed"
        )
    if x.key_top() != top:
        win = x.program_window(top)
        x.focus(win.wid if win is not None else top)
    held = x.key_top()
    if held == top:
        return None
    where = x.program_window(held) if held else None
    return (
        f"{action.kind} {what!r} would go to "
        + (where.describe() if where is not None else "no window")
        + ", which holds the keyboard focus outside the region's window; nothing was executed"
    )


def focus_back(x: XWindows, before: int, is_target: Callable[[int], bool]) -> None:
    """Give the keyboard focus back to window ``before`` (the one that held it when the
    run began: the user's terminal, say) if the run left it on the target (``is_target``
    of its top-level window: keys give the target the focus) or on no window; not if the
    user has given it to another window since. Nothing when ``before`` is 0."""
    if not before:
        return
    try:
        now = x.focused()
        if now == before or (now and not is_target(x.top_of(now))):
            return
        x.focus(before)  # a window gone meanwhile is ignored (BadWindow)
    except Exception:  # noqa: BLE001 - the display is going away: nothing to give back
        return
