"""A real X11 desktop program as an environment.

Why this shape: the agent must drive software it did not write, through the
screen alone. The env is bound to one *target* (a window found by title or
class, an explicit region, or the whole screen) so that the agent can never
click outside the program it is learning: every coordinate of an Action is
relative to the target, and an action with any point outside it is refused
before anything is executed. Window geometry is re-read before every action
because windows move, and a window that disappears is reported as an error
instead of silently clicking on whatever is now underneath.

Capture uses ``PIL.ImageGrab`` (XCB, a few ms); input uses ``pyautogui``,
imported lazily because importing it without a display fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.config import DesktopConfig
from kgagent.envs.base import Env, GroundTruth
from kgagent.errors import ActionRefused, EnvironmentError_

Box = tuple[int, int, int, int]


def _xdotool(*args: str, display: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("xdotool") is None:
        raise EnvironmentError_(
            "xdotool is not installed; install it (apt-get install xdotool) to bind to a window"
        )
    env = dict(os.environ, DISPLAY=display)
    return subprocess.run(["xdotool", *args], capture_output=True, text=True, env=env, timeout=10)


def visible_window_titles(display: str, limit: int = 8) -> list[str]:
    """Titles of some visible windows, to make 'window not found' actionable."""
    try:
        res = _xdotool("search", "--onlyvisible", "--name", ".", display=display)
    except (EnvironmentError_, subprocess.SubprocessError):
        return []
    titles: list[str] = []
    for wid in res.stdout.split():
        name = _xdotool("getwindowname", wid, display=display).stdout.strip()
        if name and name not in titles:
            titles.append(name)
        if len(titles) >= limit:
            break
    return titles


class DesktopEnv(Env):
    """A program on an X display, seen through screenshots and driven by pyautogui."""

    name = "desktop"
    live = True

    def __init__(self, config: DesktopConfig | None = None, display: str | None = None) -> None:
        self.config = config or DesktopConfig()
        self._still: Callable[[np.ndarray, np.ndarray], bool] | None = None
        os.environ.setdefault("XDG_SESSION_TYPE", "x11")
        disp = display or os.environ.get("DISPLAY")
        if not disp:
            raise EnvironmentError_(
                "no X display: DISPLAY is not set; start one (e.g. `Xvfb :99 &`) and export DISPLAY=:99"
            )
        self.display = disp
        try:
            from Xlib import display as xdisplay  # python-xlib

            d = xdisplay.Display(disp)
            geo = d.screen().root.get_geometry()
            self._screen_size = (int(geo.width), int(geo.height))
            d.close()
        except Exception as e:  # noqa: BLE001 - any failure means "cannot connect"
            raise EnvironmentError_(
                f"cannot connect to X display {disp!r} ({type(e).__name__}); is the X server running?"
            ) from None
        self._wid: str | None = None
        self._region: Box | None = None
        if self.config.window:
            self._wid = self._find_window(self.config.window)
        elif self.config.region:
            x, y, w, h = (int(v) for v in self.config.region)
            sw, sh = self._screen_size
            if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > sw or y + h > sh:
                raise EnvironmentError_(
                    f"region {self.config.region} is not inside the {sw}x{sh} screen"
                )
            self._region = (x, y, w, h)
        self._box = self._geometry()
        self._pg: Any = None

    # ------------------------------------------------------------ target
    def _find_window(self, query: str) -> str:
        for flag in ("--name", "--class", "--classname"):
            res = _xdotool("search", "--onlyvisible", flag, query, display=self.display)
            ids = res.stdout.split()
            if ids:
                return ids[0]
        titles = visible_window_titles(self.display)
        shown = "; ".join(repr(t) for t in titles) if titles else "none"
        raise EnvironmentError_(
            f"no visible window matches {query!r} (by title or class) on {self.display}; visible windows: {shown}"
        )

    def _geometry(self) -> Box:
        """The target's current screen box; raises if the window has gone."""
        if self._wid is None:
            return self._region or (0, 0, *self._screen_size)
        res = _xdotool("getwindowgeometry", "--shell", self._wid, display=self.display)
        vals = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
        if res.returncode != 0 or not {"X", "Y", "WIDTH", "HEIGHT"} <= vals.keys():
            raise EnvironmentError_(
                f"the target window {self.config.window!r} (id {self._wid}) was closed or is no longer available"
            )
        mapped = _xdotool(
            "search", "--onlyvisible", "--name", ".", display=self.display
        ).stdout.split()
        if self._wid not in mapped:
            raise EnvironmentError_(
                f"the target window {self.config.window!r} (id {self._wid}) is closed or hidden"
            )
        return int(vals["X"]), int(vals["Y"]), int(vals["WIDTH"]), int(vals["HEIGHT"])

    @property
    def size(self) -> tuple[int, int]:
        return self._box[2], self._box[3]

    @property
    def target_box(self) -> Box:
        """The target's box in screen coordinates at the last check."""
        return self._box

    # ------------------------------------------------------------ capture
    def _grab(self) -> np.ndarray:
        from PIL import ImageGrab

        x, y, w, h = self._box
        sw, sh = self._screen_size
        x0, y0, x1, y1 = max(0, x), max(0, y), min(sw, x + w), min(sh, y + h)
        out = np.zeros((h, w, 3), np.uint8)
        if x1 > x0 and y1 > y0:
            img = ImageGrab.grab(bbox=(x0, y0, x1, y1), xdisplay=self.display).convert("RGB")
            out[y0 - y : y1 - y, x0 - x : x1 - x] = np.asarray(img)
        return out

    def tolerate_motion(self, still: Callable[[np.ndarray, np.ndarray], bool]) -> None:
        self._still = still

    def _settle(self) -> tuple[np.ndarray, bool]:
        """Poll captures until two consecutive ones show a settled screen.

        Settled means equal, or ``still(prev, cur)`` when the runner measured that
        the target moves on its own (a spinner never gives two equal captures, so
        without it every action would wait the whole ``settle_timeout_s``).
        Returns the last capture and whether it settled before the timeout.
        """
        deadline = time.monotonic() + self.config.settle_timeout_s
        prev = self._grab()
        while time.monotonic() < deadline:
            time.sleep(self.config.settle_interval_s)
            cur = self._grab()
            if np.array_equal(cur, prev) or (self._still is not None and self._still(prev, cur)):
                return cur, True
            prev = cur
        return prev, False

    # ------------------------------------------------------------ Env API
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """A real program cannot be reset; this re-checks the target and captures it."""
        self._box = self._geometry()
        return self._grab(), self._info()

    def observe(self) -> np.ndarray:
        self._box = self._geometry()
        return self._grab()

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._box = self._geometry()  # the window may have moved or closed
        w, h = self.size
        for px, py in action.points():
            if not (0 <= px < w and 0 <= py < h):
                raise ActionRefused(
                    f"{action.kind} at ({px}, {py}) is outside the {w}x{h} target; nothing was executed"
                )
        self._pyautogui()
        if action.kind in ("key", "hotkey"):
            for k in (action.key or "").split("+"):
                self._check_key(k)
        self._execute(action)
        try:
            self._box = self._geometry()
        except EnvironmentError_:
            # the action closed the program: that ends the episode
            return np.zeros((h, w, 3), np.uint8), 0.0, True, False, {"alive": False}
        obs, settled = self._settle()
        return obs, 0.0, False, False, {**self._info(), "settled": settled}

    def ground_truth(self) -> GroundTruth:
        try:
            self._geometry()
            alive = True
        except EnvironmentError_:
            alive = False
        return GroundTruth(alive=alive)

    def _info(self) -> dict[str, Any]:
        return {"alive": True, "target": self._box}

    # ------------------------------------------------------------ input
    def _pyautogui(self) -> Any:
        os.environ["DISPLAY"] = self.display
        if self._pg is None:
            import pyautogui

            pyautogui.FAILSAFE = True
            pyautogui.PAUSE = self.config.action_pause_s
            self._pg = pyautogui
        # pyautogui opens its X connection at import; follow a changed display
        x11 = getattr(self._pg, "_pyautogui_x11", None)
        if x11 is not None and getattr(x11, "_display", None) is not None:
            cur = x11._display.get_display_name()
            if cur != self.display:
                from Xlib.display import Display

                x11._display = Display(self.display)
        return self._pg

    def _execute(self, a: Action) -> None:
        pg = self._pyautogui()
        ox, oy = self._box[0], self._box[1]
        try:
            if a.kind in ("key", "hotkey", "type"):
                self._focus()
            if a.kind == "click":
                pg.click(ox + a.x, oy + a.y)
            elif a.kind == "double_click":
                pg.doubleClick(ox + a.x, oy + a.y)
            elif a.kind == "right_click":
                pg.rightClick(ox + a.x, oy + a.y)
            elif a.kind == "drag":
                pg.moveTo(ox + a.x, oy + a.y)
                pg.dragTo(ox + a.x2, oy + a.y2, duration=0.2, button="left")
            elif a.kind == "scroll":
                pg.moveTo(ox + a.x, oy + a.y)
                pg.scroll(a.scroll)
            elif a.kind == "key":
                pg.press(self._check_key(a.key or ""))
            elif a.kind == "hotkey":
                keys = [self._check_key(k) for k in (a.key or "").split("+")]
                pg.hotkey(*keys)
            elif a.kind == "type":
                pg.write(a.text or "", interval=0.01)
        except pg.FailSafeException:
            raise EnvironmentError_(
                "pyautogui fail-safe triggered (mouse in a screen corner); move the mouse away and retry"
            ) from None

    def _check_key(self, key: str) -> str:
        k = key.strip().lower()
        if k not in self._pg.KEYBOARD_KEYS:
            raise ActionRefused(
                f"unknown key {key!r}; use pyautogui key names such as enter, esc, left, ctrl"
            )
        return k

    def _focus(self) -> None:
        if self._wid is not None:
            _xdotool("windowfocus", "--sync", self._wid, display=self.display)
