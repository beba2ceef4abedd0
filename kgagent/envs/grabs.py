"""Whether another X client holds the pointer or the keyboard, asked just before an input.

Why: while a client holds an active grab (``XGrabPointer``, ``XGrabKeyboard``: a screen
locker, a password prompt, another program's open menu), X gives it every click or key,
wherever the pointer is and whichever window has the focus; an input sent through XTEST
would reach that program, not the target. The core protocol cannot name a grab's
holder, but a grab attempt answers ``AlreadyGrabbed`` (or ``Frozen``) while another client
holds one. So with the server held for the input connection (nothing else runs in
between: :mod:`kgagent.envs.landing`), the env grabs the device the input uses, and
releases it at once when that succeeds.

The attempt is made on the window the device is on already, the deepest window under
the pointer for a pointer grab, the focus window for a keyboard grab: X sends the
enter, leave and focus events of a grab (``NotifyGrab``) only when the grab window
differs from it, so the target sees nothing of the check. With no event mask and
``owner_events`` false, no event of the short grab reaches any client.

A grab held by the target's own program (its open menu: Tk and GTK menus grab both
devices) is told apart by its window: a menu is an override-redirect window of the
program's X connection, mapped above every other window. The input goes on when the
topmost window on the screen is such a window of the target's program; any other grab
refuses the input, and a grab that lasts (``STREAK`` refusals in a row over at least
``HOLD_S`` seconds) ends the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kgagent.envs.xwindows import Window, XWindows
from kgagent.errors import ActionRefused, EnvironmentError_

#: refused inputs in a row, every one for a grab, and the seconds since the first of
#: them, after which the run stops. Another program's menu or a drag the user makes
#: holds a grab for a moment (an input a step or two later passes); a screen locker or a
#: password prompt holds it until a person answers it, and an agent that went on
#: refusing would only spin. Each refusal sends nothing, so waiting costs steps, not
#: safety; the time is counted too because an agent may try several inputs within one
#: step, a few milliseconds apart.
STREAK = 5
HOLD_S = 3.0
KEY_KINDS = ("key", "hotkey", "type")


def _pointer_window(root: Any) -> Any:
    """The deepest window under the pointer (X's own pointer window)."""
    w = root
    for _depth in range(32):
        child = w.query_pointer().child
        if not child:
            break
        w = child
    return w


def held_device(conn: Any, root: Any, keys: bool) -> str | None:
    """``"keyboard"`` (``keys``) or ``"pointer"`` when another client holds that device
    with an active grab; None when it is free (the test grab is released at once)."""
    from Xlib import X

    if keys:
        focus = conn.get_input_focus().focus
        win = focus if not isinstance(focus, int) else root
        status = win.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
        if status == X.GrabNotViewable and win is not root:
            status = root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
        if status == X.GrabSuccess:
            conn.ungrab_keyboard(X.CurrentTime)
    else:
        win = _pointer_window(root)
        status = win.grab_pointer(
            False, 0, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
        )
        if status == X.GrabSuccess:
            conn.ungrab_pointer(X.CurrentTime)
    conn.sync()
    if status in (X.AlreadyGrabbed, X.GrabFrozen):
        return "keyboard" if keys else "pointer"
    return None


def topmost(root: Any) -> Any | None:
    """The topmost mapped child of the root (a frame, or an override-redirect window)."""
    from Xlib import X

    for top in reversed(list(root.query_tree().children)):
        try:
            if top.get_attributes().map_state == X.IsViewable:
                return top
        except Exception:  # noqa: BLE001 - the window went away meanwhile
            continue
    return None


class GrabWatch:
    """Refuses an input while another program holds the device it uses; counts the
    refusals in a row."""

    def __init__(self, streak: int = STREAK, hold_s: float = HOLD_S) -> None:
        self.streak, self.hold_s = streak, hold_s
        self.refused = 0
        self.since = 0.0  # time.monotonic() of the first refusal in a row

    def check(
        self, x: XWindows, kind: str, wid: int | None, ours: Callable[[Window], bool]
    ) -> None:
        """Raise :class:`ActionRefused` (or, the ``streak``-th time in a row,
        :class:`EnvironmentError_`) when another client holds the device an input of
        ``kind`` uses, unless the topmost window is a menu of bound window ``wid``'s
        program (:meth:`XWindows.own_popup`; ``ours`` accepts its windows by PID)."""
        device = held_device(x.conn, x.root, kind in KEY_KINDS)
        if device is None:
            self.refused = 0
            return
        top = topmost(x.root)
        if wid is not None and top is not None and x.own_popup(top, wid, ours):
            self.refused = 0
            return
        now = time.monotonic()
        self.since = now if self.refused == 0 else self.since
        self.refused += 1
        if self.refused >= self.streak and now - self.since >= self.hold_s:
            raise EnvironmentError_(
                f"another program has held the {device} with an active grab for "
                f"{self.refused} inputs in a row over {now - self.since:.0f} s (a screen "
                "locker, a password prompt, an open menu): the agent stopped, since every "
                "input would go to it"
            )
        raise ActionRefused(
            f"{kind}: another program holds the {device} (an active grab: a screen locker, "
            "a password prompt, an open menu) and would receive it; nothing was executed"
        )
