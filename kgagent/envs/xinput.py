"""pyautogui, pointed at one X display: the one place that touches its process globals.

Why a module of its own: pyautogui keeps its settings and its X connection in module
globals. ``FAILSAFE`` (on: a mouse in a screen corner stops the agent) and ``PAUSE``
(the wait after each call) cannot be set per caller, and its X11 backend opens its
connection from ``$DISPLAY`` at import. Everything that touches them is here:

* :func:`import_pyautogui` imports it with ``DISPLAY`` naming the target display for
  the import only (and restores the process's value at once), so that kgagent works
  with no ``DISPLAY`` at all, or with one that names a display that is not running;
* :meth:`PyAutoGUIInput.use` sets ``FAILSAFE = True`` and ``PAUSE``, and points the
  backend's X connection (``_pyautogui_x11._display``) at this input's own connection
  to its display before every action, which is how two environments on two displays
  share one pyautogui. The fail-safe corners become this display's corners;
* :meth:`PyAutoGUIInput.send` makes an action's presses, with the X server held, and
  :meth:`PyAutoGUIInput.rest` moves the pointer to the target's rest point the same way
  (:mod:`kgagent.envs.rest`).

The key map pyautogui built at import is kept: Xvfb and Xorg start with the same
core keyboard map.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from kgagent.actions import Action
from kgagent.envs.keyguard import split_keys
from kgagent.envs.xwindows import XWindows
from kgagent.errors import ActionRefused, EnvironmentError_

_IMPORT_LOCK = threading.Lock()
FAILSAFE = "pyautogui fail-safe triggered (mouse in a screen corner); move the mouse away and retry"


def import_pyautogui(display: str) -> ModuleType:
    """pyautogui, imported (once) while ``DISPLAY`` names ``display``."""
    with _IMPORT_LOCK:
        import sys

        if "pyautogui" in sys.modules:
            return sys.modules["pyautogui"]
        old = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = display
        try:
            import pyautogui
        except Exception as e:  # noqa: BLE001 - Xlib errors of every kind
            raise EnvironmentError_(
                f"cannot load pyautogui on display {display!r} ({type(e).__name__}: {e})"
            ) from None
        finally:
            if old is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = old
        return pyautogui


class PyAutoGUIInput:
    """Mouse and keyboard input into one X display through pyautogui."""

    def __init__(self, display: str, pause_s: float) -> None:
        from Xlib.display import Display

        self.display = display
        self.pause_s = pause_s
        self.pg = import_pyautogui(display)
        self._conn: Any = Display(display)
        s = self._conn.screen()
        self.corners: list[tuple[int, int]] = []
        self._corners_of((int(s.width_in_pixels), int(s.height_in_pixels)))
        self._x11: Any = getattr(self.pg, "_pyautogui_x11", None)
        self._previous = getattr(self._x11, "_display", None)
        self._windows: XWindows | None = None

    def _corners_of(self, screen: tuple[int, int]) -> None:
        w, h = screen
        self.corners = [(0, 0), (0, h - 1), (w - 1, 0), (w - 1, h - 1)]

    def use(self, screen: tuple[int, int] | None = None) -> ModuleType:
        """pyautogui, with its globals set for this display (call before every action);
        ``screen``: the screen's size now, whose corners are the fail-safe points (the
        size at connect time when not given)."""
        if screen is not None:
            self._corners_of(screen)
        if self._conn is None:  # closed by :meth:`_abandon`
            from Xlib.display import Display

            self._conn = Display(self.display)
        pg = self.pg
        pg.FAILSAFE = True
        pg.PAUSE = self.pause_s
        pg.FAILSAFE_POINTS[:] = self.corners
        if self._x11 is not None:
            self._x11._display = self._conn
        return pg

    def windows(self) -> XWindows:
        """Window queries on this input's own connection, the one :meth:`grabbed` holds the
        server for; made once per connection (making them asks the server six things)."""
        self.use()
        if self._windows is None or self._windows.conn is not self._conn:
            self._windows = XWindows(self.display, self._conn)
        return self._windows

    @contextlib.contextmanager
    def grabbed(self) -> Iterator[Any]:
        """The X server held for this input's connection alone (``XGrabServer``) while the
        block runs, which gets that connection: no other program's request (a window
        raising itself, taking the focus) is served between a check of where an input
        will land and the input. pyautogui's pause comes after the release, so the
        display is held only while requests are made.

        A block left by Ctrl-C (or any exception but a refusal made before a request) may
        have left a request half made on the connection, and asking the server anything
        more could wait for ever with the display held: the connection is closed instead,
        which the server answers by releasing the hold; the next action opens a new one."""
        self.use()
        pg = self.pg
        self._conn.grab_server()
        try:
            pg.PAUSE = 0.0
            yield self._conn
            self._conn.ungrab_server()
            self._conn.sync()
        except ActionRefused:
            self._conn.ungrab_server()  # raised before any input: the connection is sound
            self._conn.sync()
            raise
        except BaseException:
            self._abandon()
            raise
        finally:
            pg.PAUSE = self.pause_s
        if self.pause_s > 0:
            time.sleep(self.pause_s)

    def send(self, a: Action, origin: tuple[int, int], land: Callable[[], None]) -> None:
        """Send action ``a`` to the target whose top-left screen point is ``origin``: the
        server is held (:meth:`grabbed`) while ``land`` checks where it will land (it may
        refuse) and the press is made. A drag's motion and release come after the
        release of the server: the target holds the pointer from its press on."""
        pg = self.use()
        ox, oy = origin
        try:
            with self.grabbed():
                land()
                if a.kind == "click":
                    pg.click(ox + a.x, oy + a.y)
                elif a.kind == "double_click":
                    pg.doubleClick(ox + a.x, oy + a.y)
                elif a.kind == "right_click":
                    pg.rightClick(ox + a.x, oy + a.y)
                elif a.kind in ("drag", "scroll"):
                    pg.moveTo(ox + a.x, oy + a.y)
                    if a.kind == "drag":
                        pg.mouseDown(button="left")
                    else:
                        pg.scroll(a.scroll)
                elif a.kind in ("key", "hotkey"):
                    keys = [k.strip().lower() for k in split_keys(a.key or "")]
                    if len(keys) == 1:
                        pg.press(keys[0])
                    else:
                        pg.hotkey(*keys)
                elif a.kind == "type":
                    pg.write(a.text or "", interval=0.01)
            if a.kind == "drag":
                pg.moveTo(ox + a.x2, oy + a.y2, duration=0.2)
                pg.mouseUp(button="left")
        except pg.FailSafeException:
            raise EnvironmentError_(FAILSAFE) from None

    def rest(self, point: tuple[int, int], inside: Callable[[Any], bool]) -> bool:
        """Move the pointer to screen ``point`` (no button, no key) if ``inside(windows)``
        says, with the server held, that it lies in the target; whether it moved there.
        The hold keeps a window from coming over the point between the check and the
        move, as for an input (:meth:`grabbed`)."""
        pg = self.use()
        try:
            with self.grabbed():
                if not inside(self.windows()):
                    return False
                pg.moveTo(point[0], point[1], _pause=False)
        except pg.FailSafeException:
            raise EnvironmentError_(FAILSAFE) from None
        return True

    def _abandon(self) -> None:
        """Close the connection at its socket (no request, no reply awaited) and open a new
        one for the next action."""
        import socket

        sock = getattr(getattr(self._conn, "display", None), "socket", None)
        with contextlib.suppress(Exception):
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._x11 is not None and self._x11._display is self._conn:
            self._x11._display = self._previous
        self._conn = None  # :meth:`use` connects again

    def close(self) -> None:
        """Close this input's X connection; pyautogui gets back the one it had."""
        if self._conn is None:
            return
        if self._x11 is not None and self._x11._display is self._conn:
            self._x11._display = self._previous
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001 - the server may be gone already
            pass
