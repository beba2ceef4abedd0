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
the pointer for a pointer grab, the focus window for a keyboard grab. The pointer's
check sends no event to any client (no crossing: the grab window holds the pointer).
The keyboard's does: X sends the focused window a ``FocusOut``/``FocusIn`` pair marked
as a grab's (modes ``NotifyGrab``, ``NotifyUngrab``) before each key input. SDL2
programs ignore such pairs; Tk and GTK programs see the focus go and come back, and one
that acts on every focus change (validation on focus-out) acts (docs/games.md).

A grab held by the target's own program (its open menu: Tk and GTK menus grab both
devices) is told apart by its window: a menu is an override-redirect window of the
program's X connection, mapped above every other window. The input goes on when the
topmost window on the screen is such a window of the target's program and holds the
input's point (for a key: the pointer), so that a tooltip of the target's shown while
another program holds a grab does not open the way; an input elsewhere is refused then,
without counting towards the run's end. Any other grab refuses the input,
and a grab that lasts (``STREAK`` refusals in a row over at least ``HOLD_S`` seconds)
ends the run. A program that grabs its own pointer outside a menu (a game in relative
mouse mode, DOSBox) cannot be told from another program's grab: the error says to set
``desktop.refuse_grabbed_input=false`` for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kgagent.actions import Action
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


def _inside(point: tuple[int, int], box: tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


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
        self,
        x: XWindows,
        action: Action,
        wid: int | None,
        ours: Callable[[Window], bool],
        origin: tuple[int, ...],
    ) -> None:
        """Raise :class:`ActionRefused` (or, the ``streak``-th time in a row,
        :class:`EnvironmentError_`) when another client holds the device ``action``
        uses, unless the topmost window is a menu of bound window ``wid``'s program
        (:meth:`XWindows.own_popup`; ``ours`` accepts its windows by PID) that holds
        every point of the action (target-relative, from ``origin``; a key: the pointer)."""
        kind = action.kind
        points = [(origin[0] + px, origin[1] + py) for px, py in action.points()]
        device = held_device(x.conn, x.root, kind in KEY_KINDS)
        if device is None:
            self.refused = 0
            return
        top = topmost(x.root)
        if wid is not None and top is not None and x.own_popup(top, wid, ours):
            box = x.box(int(top.id))
            if not points:
                ptr = x.root.query_pointer()
                points = [(int(ptr.root_x), int(ptr.root_y))]
            if box is not None and all(_inside(p, box) for p in points):
                self.refused = 0
                return
            # most likely the menu's own grab: refused, but no step towards the run's end
            raise ActionRefused(
                f"{kind}: a menu of the target is open and a grab holds the {device}; only "
                "inputs on the menu are sent (the grab may be another program's); nothing "
                "was executed"
            )
        now = time.monotonic()
        self.since = now if self.refused == 0 else self.since
        self.refused += 1
        if self.refused >= self.streak and now - self.since >= self.hold_s:
            raise EnvironmentError_(
                f"another program has held the {device} with an active grab for "
                f"{self.refused} inputs in a row over {now - self.since:.0f} s (a screen "
                "locker, a password prompt, an open menu): the agent stopped, since every "
                "input would go to it (a target that grabs its own pointer, such as a game "
                "in relative mouse mode: desktop.refuse_grabbed_input=false)"
            )
        raise ActionRefused(
            f"{kind}: another program holds the {device} (an active grab: a screen locker, "
            "a password prompt, an open menu) and would receive it; nothing was executed"
        )
