"""A real X11 desktop program as an environment.

Why this shape: the agent must drive software it did not write, through the
screen alone. The env is bound to one *target*: a window found by title, class or
PID (:mod:`kgagent.envs.xwindows`), an explicit region, or the whole screen, so
that the agent can never click outside the program it is learning. Every
coordinate of an Action is relative to the target's part on the screen (all that
X shows and clicks of a window reaching past its edge), which is all that is
captured, and an action with any point outside it is refused before anything is
executed. So is a point where another
program's window lies over a bound window (X would give the click to that window):
the target is raised once, and if it stays covered there the action is refused;
the program's own windows (its dialogs and menus) count as the target. Keys go to
the target's keyboard focus, which is set before each; in a region, to the window at
its centre, and a key is refused when that window cannot take the focus
(:mod:`kgagent.envs.landing`). The target's geometry is
re-read before every action because windows move, and a window that disappears
is reported instead of silently clicking on whatever is now underneath. When a
screen-sized window of the program's own lies over the target (an SDL 1.2 game's full
screen on a display that cannot change its mode), the target is that window for as
long as it does: it is what the user sees. Before each capture compared with another,
the pointer rests at one point of the target (:mod:`kgagent.envs.rest`), so that a
hover highlight is not taken for the program's answer.

With ``launch`` the env starts the program itself (:mod:`kgagent.envs.launch`):
in its own process group, its output in a log file, on the display given or, with
no ``DISPLAY`` (or ``display="new"``), on a private Xvfb. It binds to the
program's first window, ends the episode when the program exits (``end_info()``
gives the exit code), starts it again on ``reset()``, and stops everything at
``close()``. A program that dies at start-up ``start_failures`` times in a row is
an error, not a loop.

Keys that close windows or log out are refused unless allowed
(:mod:`kgagent.envs.keyguard`). Capture reads the named display over an X
connection of its own (:mod:`kgagent.envs.xcapture`: a few ms, and a hung display is
an error, never a hang that Ctrl-C cannot stop); input uses pyautogui through :mod:`kgagent.envs.xinput`,
the one place that touches pyautogui's process-wide settings. Nothing here reads
or changes the process's ``DISPLAY`` beyond reading it as the default display.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.config import DesktopConfig
from kgagent.envs.base import Env, GroundTruth
from kgagent.envs.desktop_options import DesktopOptions
from kgagent.envs.desktop_words import end_notes, target_line
from kgagent.envs.grabs import GrabWatch
from kgagent.envs.keyguard import key_refusal
from kgagent.envs.landing import cover_refusal, focus_back, region_key_refusal
from kgagent.envs.launch import PrivateX, Program, choose_display, default_program_log
from kgagent.envs.owner import Owner, TargetHidden, check_owner, owner_change, target_gone
from kgagent.envs.points import on_screen, point_refusal, visible_part
from kgagent.envs.rest import rest_pointer
from kgagent.envs.settle import Settler
from kgagent.envs.xcapture import XCapture
from kgagent.envs.xinput import PyAutoGUIInput
from kgagent.envs.xwindows import Window, XWindows, owned
from kgagent.errors import ActionRefused, EnvironmentError_

Box = tuple[int, int, int, int]
KEY_KINDS = ("key", "hotkey", "type")


class DesktopEnv(Env):
    """A program on an X display, seen through screenshots and driven by pyautogui."""

    name = "desktop"
    live = True

    def __init__(
        self,
        config: DesktopConfig | None = None,
        display: str | None = None,
        options: DesktopOptions | None = None,
    ) -> None:
        """``options`` (default: read from ``config``) and ``display`` (default:
        ``options.display``) say what to launch and where."""
        self.config = config or DesktopConfig()
        self.opts = options or DesktopOptions.of(self.config)
        self.opts.check(self.config)
        self.restarts = bool(self.opts.launch)
        self._settler = Settler(self.config)
        self._xserver: PrivateX | None = None
        self._x: XWindows | None = None
        self._input: PyAutoGUIInput | None = None
        self._capture: XCapture | None = None
        self._program: Program | None = None
        self._wid: int | None = None
        self._title = ""
        self._target_pid: int | None = None
        self._owner: Owner | None = None  # the bound process (:mod:`kgagent.envs.owner`)
        self._grabs = GrabWatch()  # another program's grab (:mod:`kgagent.envs.grabs`)
        self._region: Box | None = None
        self._face: Box | None = None  # the last window of its own program seen over it
        self._events: list[str] = []  # what it did on its own since the runner last asked
        self._put_backs = 0  # times an input moved the target partly off the screen
        self._gone: str | None = None  # the bound window that closed after an input
        self._last: np.ndarray | None = None
        self._fresh = False  # launched and not acted on yet
        self._episode_steps = 0
        self._early_exits = 0  # consecutive start-ups that died before the agent could act
        self._focus_before = 0
        try:
            self.display = self._choose_display(display)
            self._x = XWindows(self.display)
            # the user's window with the focus (their terminal), given it back by close()
            self._focus_before = self._x.focused() if self._xserver is None else 0
            if self.opts.launch:
                self._program = Program(
                    self.opts.launch,
                    self.display,
                    self.opts.program_log or default_program_log(),
                    self.opts.stop_timeout_s,
                    where=self._xserver.where if self._xserver is not None else None,
                )
                self._start_program()
            elif self.config.window:
                win = self._x.find(self.config.window)
                if win is None:
                    raise self._x.not_found(self.config.window)
                self._bind(win)
            elif self.config.region:
                self._region = self._check_region(self.config.region)
            self._box = self._geometry()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ display and target
    def _choose_display(self, display: str | None) -> str:
        disp, self._xserver = choose_display(
            display or self.opts.display, self.opts.launch, self.opts.screen_size
        )
        return disp

    def _check_region(self, region: tuple[int, int, int, int]) -> Box:
        x, y, w, h = (int(v) for v in region)
        sw, sh = self._screen_size
        if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > sw or y + h > sh:
            raise EnvironmentError_(f"region {region} is not inside the {sw}x{sh} screen")
        return x, y, w, h

    def _xw(self) -> XWindows:
        """The X connection; after close() a bound env reconnects on its next use."""
        if self._x is None:
            self._x = XWindows(self.display)
        return self._x

    @property
    def _screen_size(self) -> tuple[int, int]:
        """The screen's size now (it changes with the display's mode: RandR)."""
        return self._xw().screen_size

    @property
    def _box(self) -> Box:
        """The target's box on the screen at the last check (a window's may reach past
        the screen's edge)."""
        return self._full

    @_box.setter
    def _box(self, box: Box) -> None:
        """Set with the part of it on the screen, ``_view``: what is captured, and what
        every coordinate of an Action is relative to, since X can neither show nor click
        beyond the screen. A target wholly off the screen keeps its box (captured black,
        every point refused as off the screen)."""
        self._full = box
        self._view = visible_part(box, self._screen_size) or box

    def _bind(self, win: Window) -> None:
        self._wid, self._title, self._target_pid = win.wid, win.title, win.pid
        self._owner, self._grabs = Owner.of(win.pid), GrabWatch()  # a new streak

    def _geometry(self) -> Box:
        """The target's current screen box; raises if the window has gone."""
        if self._wid is None:
            return self._region or (0, 0, *self._screen_size)
        x = self._xw()
        box, why = x.box(self._wid), owner_change(x, self._wid, self._owner)
        if box is None or why:  # gone, hidden, or its id another program's now
            raise target_gone(x, self._wid, self._title or self.config.window or "", why)
        face = x.face(self._wid, box)
        if face is not None:
            if face != self._face:
                self._events.append(
                    f"a {face[2]}x{face[3]} window of the target's own program lies over it "
                    "(a full screen): acting on that window"
                )
            self._face = face
        return face or box

    @property
    def size(self) -> tuple[int, int]:
        return self._view[2], self._view[3]

    @property
    def target_box(self) -> Box:
        """The target's box in screen coordinates at the last check."""
        return self._box

    def describe_target(self) -> str:
        """What the agent acts on, in words: the bound window (title, id, PID), a region,
        or the screen, with its box now (the run's first line and its summary), and what
        the user must know of it (:func:`~kgagent.envs.desktop_words.target_line`)."""
        if self._wid is not None:
            pid = f", pid {self._target_pid}" if self._target_pid else ""
            what = f"window {self._title!r} (id {self._wid:#x}{pid})"
        else:
            what = "region" if self._region is not None else "screen"
        return target_line(what, self._box, self._screen_size, self._wid is None, what == "region")

    @property
    def program(self) -> Program | None:
        """The launched program (harness only), or None for a bound window."""
        return self._program

    # ------------------------------------------------------------ launching
    def _start_program(self) -> None:
        """Start the program and bind to its first window; retry early deaths up to the limit."""
        prog, x = self._program, self._xw()
        assert prog is not None
        while True:
            prog.stop()
            before = {w.wid for w in x.windows()}
            prog.start()
            win = self._await_window(before, self.opts.launch_timeout_s)
            if win is not None:
                break
            # windows that appeared since the start, none the program's or none matching
            # desktop.window: named in the error (a program in a session of its own)
            if prog.running:
                others = x.new_windows(before, 0.0)
                why = prog.no_window(self.opts.launch_timeout_s, others, self.config.window)
                prog.stop()
                raise EnvironmentError_(why)
            if prog.exit_code == 0:  # handed on (setsid, a launcher): its window comes later
                wait = self.opts.launch_timeout_s if self._early_exits == 0 else 0.0
                others = x.new_windows(before, wait)
                if others:  # a retry would start another copy that kgagent cannot stop
                    raise EnvironmentError_(prog.handed_on(others))
            self._count_early_exit()
        self._bind(win)
        self._box = self._await_viewable()
        self._fresh, self._episode_steps = True, 0
        self._rest()
        self._last = self._settle(None)[0]  # its first frame drawn (not a reaction)
        self._await_viewable()  # some programs unmap the window a moment after that frame
        now = x.window(self._wid) if self._wid is not None else None
        if now is not None:  # its title as the program set it by its first frame
            self._bind(now)

    def _await_viewable(self) -> Box:
        """The new window's box, once it can be seen. Just after a window appears, a
        window manager may still be reparenting it into a frame (the window is unmapped
        for that moment), and a program may replace its first window with another;
        wait for either within ``desktop.launch_timeout_s``, then it is an error."""
        prog, x = self._program, self._xw()
        assert prog is not None and self._wid is not None
        deadline = time.monotonic() + self.opts.launch_timeout_s
        while (box := x.box(self._wid)) is None:
            if not prog.running or time.monotonic() >= deadline:
                return self._geometry()  # raises: closed or hidden
            own = owned(list(reversed(x.windows())), prog.owns)
            if own and own[0].wid != self._wid:
                self._bind(own[0])  # the program replaced its first window
            time.sleep(0.05)
        return box

    def _count_early_exit(self) -> None:
        prog = self._program
        assert prog is not None
        self._early_exits += 1
        if self._early_exits >= self.opts.start_failures:
            raise EnvironmentError_(prog.start_up_failure(self._early_exits))

    def _await_window(self, before: set[int], timeout_s: float) -> Window | None:
        """The launched program's first visible window (``XWindows.await_window``)."""
        prog = self._program
        assert prog is not None
        return self._xw().await_window(
            prog.owns, lambda: prog.running, self.config.window, before, timeout_s
        )

    def _program_ended(self) -> bool:
        """After the target window vanished: did the program end? (It may instead have
        replaced its window, then the env follows the new one.)"""
        prog = self._program
        assert prog is not None
        if prog.wait_exit(min(1.0, self.opts.stop_timeout_s)) is not None:
            return True
        win = self._await_window(set(), min(2.0, self.opts.launch_timeout_s))
        if win is None:
            return True
        self._events.append(
            f"the program replaced its window: following {win.title!r} (id {win.wid:#x})"
        )
        self._bind(win)
        self._box = self._geometry()
        return False

    def _ended(self) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The step that reports the launched program's end (nothing is executed)."""
        prog = self._program
        assert prog is not None
        prog.seen_end()
        w, h = self.size
        obs = self._last if self._last is not None else np.zeros((h, w, 3), np.uint8)
        return obs, 0.0, True, False, {"alive": False, "exit_code": prog.exit_code}

    # ------------------------------------------------------------ capture
    def _grab(self) -> np.ndarray:
        """The pixels of the target's part on the screen (``_view``); black where it lies
        past the screen's edge by the capture (a screen that just shrank, a target wholly
        off it: :meth:`XCapture.grab_part`)."""
        if self._capture is None:  # after close() a bound env reconnects on its next use
            self._capture = XCapture(self.display, self.config.capture_timeout_s)
        return self._capture.grab_part(self._view, lambda: self._screen_size)

    def tolerate_motion(self, still: Callable[[np.ndarray, np.ndarray], bool] | None) -> None:
        self._settler.still = still

    def _settle(self, before: np.ndarray | None) -> tuple[np.ndarray, bool]:
        """Wait for the program's reaction to the input (:class:`Settler`)."""
        return self._settler.settle(self._grab, before)

    # ------------------------------------------------------------ Env API
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """A bound program cannot be reset: this re-checks the target and captures it.
        A launched program is started again, unless it was just started."""
        prog = self._program
        if prog is not None:
            alive = prog.running and self._xw().box(self._wid or 0)
            if not (self._fresh and alive):
                if self._episode_steps == 0 and not prog.running:
                    self._count_early_exit()
                self._start_program()
        self._box = self._geometry()
        self._rest()
        self._last = self._grab()
        return self._last, self._info()

    def observe(self) -> np.ndarray:
        try:
            self._box = self._geometry()
        except EnvironmentError_:
            if self._program is None or self._last is None:
                raise
            return self._last  # the launched program has gone; step() reports it
        now = self._grab()
        self._settler.looked(self._last, now)
        self._last = now
        return now

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        prog = self._program
        if prog is not None and not prog.running:
            return self._ended()
        try:
            self._box = self._geometry()  # the window may have moved or closed
        except EnvironmentError_:
            if prog is None or self._program_ended():
                if prog is None:
                    raise
                return self._ended()
        self._check(action)
        before, placed = self._last, self._box
        t0 = time.perf_counter()
        self._execute(action)
        t_input = time.perf_counter() - t0
        self._fresh = False
        if prog is not None:
            # the program was up to take an input: an exit from now on is no start-up
            # death, even when this input is what closed it (a game's quit key)
            self._episode_steps += 1
            self._early_exits = 0
        size = self.size
        if (end := self._closed(size)) is not None:
            return end
        t1 = time.perf_counter()
        self._rest()  # where it was before the input: what differs is the program's answer
        t_input += time.perf_counter() - t1
        t1 = time.perf_counter()
        obs, settled = self._settle(before)
        t_settle = time.perf_counter() - t1
        self.unsettled = 0 if settled else self.unsettled + 1
        # the input may have closed the window during the wait: what was captured there
        # since is whatever lay behind it, no reaction of the program's
        wid = self._wid
        if (end := self._closed(size)) is not None:
            return end
        if self._wid != wid:
            self._rest()
            obs = self._grab()  # it replaced its window: the env follows the new one
        elif self._put_back(placed):
            self._rest()
            obs, settled = self._settle(before)  # what it shows where the user sees it
            t_settle = time.perf_counter() - t1
        self._last = obs
        if prog is not None and not prog.running:
            return self._ended()
        timing = {"input": t_input, "settle": t_settle}  # seconds; the agent logs them
        return obs, 0.0, False, False, {**self._info(), "settled": settled, "timing": timing}

    def _closed(
        self, size: tuple[int, int]
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]] | None:
        """After an input: the window's box again, or the step that ends the episode when
        the window has gone (None: it is there, or the program replaced it and the env
        now follows the new one). ``size``: the target's size before the input."""
        try:
            self._box = self._geometry()
            return None
        except EnvironmentError_ as e:
            if self._program is None:
                if isinstance(e, TargetHidden):
                    raise  # not closed: the window is there, hidden (an error, as before)
                self._gone = f"{self._title or self.config.window!r} (id {self._wid or 0:#x})"
                w, h = size
                return np.zeros((h, w, 3), np.uint8), 0.0, True, False, {"alive": False}
            return self._ended() if self._program_ended() else None

    def _put_back(self, placed: Box) -> bool:
        """Put the target back at ``placed`` when an input moved it from there, wholly on
        the screen, to partly off it; whether it did. A program that draws its own title
        bar (GTK, Chromium, Electron) moves its window when a drag starts on that bar,
        and the part pushed past the screen's edge could be neither seen nor clicked for
        the rest of the run. A window that moved and stays on the screen is left where it
        is (what is captured is the same), and so is one the user placed partly off it.
        Only a move counts: a box that changed size (or a full screen of the program's
        own that came or went) is not put anywhere."""
        box, screen = self._box, self._screen_size
        if self._wid is None or box[:2] == placed[:2] or box[2:] != placed[2:]:
            return False
        if on_screen(box, screen) or not on_screen(placed, screen):
            return False  # (a full screen of its own over it is on the screen: left alone)
        self._xw().move_to(self._wid, placed[0], placed[1])
        try:
            self._box = self._geometry()
        except EnvironmentError_:
            return False  # it closed meanwhile: the next step reports it
        back = on_screen(self._box, screen)  # a manager may refuse the move
        self._put_backs += back
        self._events.append(
            f"an input moved the target to ({box[0]}, {box[1]}), partly off the screen: "
            + (
                f"put back at ({placed[0]}, {placed[1]})"
                if back
                else "the window manager refused to put it back"
            )
        )
        return True

    def ground_truth(self) -> GroundTruth:
        alive = self._program is None or self._program.running
        if alive:
            try:
                self._geometry()
            except EnvironmentError_:
                alive = False
        return GroundTruth(alive=alive)

    def end_info(self) -> dict[str, Any]:
        """For a launched program: its exit code (None while running) and its log file."""
        prog = self._program
        if prog is None:
            return {}
        return {
            "exit_code": prog.exit_code,
            "program_log": str(prog.log_path),
            "program_starts": prog.starts,
        }

    def notes(self) -> list[str]:
        """The quiet wait, when the program's reaction times lengthened it; how the launched
        program ended, when it did (a program that crashes at every input shows here, not
        only in the step log); the target put back on the screen; the target's own
        full-screen window, when one lay over it."""
        out = [f"desktop: {n}" for n in self._settler.notes()]
        if self._program is not None and (ended := self._program.endings_note()):
            out.append(f"desktop: {ended}")
        return out + end_notes(self._put_backs, self._gone, self._face)

    def events(self) -> list[str]:
        out, self._events = self._events, []
        return out

    def _info(self) -> dict[str, Any]:
        return {"alive": True, "target": self._view}

    def close(self) -> None:
        """Give the focus back, stop the launched program and the private Xvfb; close the X
        connections."""
        if self._x is not None:
            focus_back(self._x, self._focus_before, self._has_target)
        self._focus_before = 0
        if self._program is not None:
            self._program.stop()
        if self._input is not None:
            self._input.close()
            self._input = None
        if self._capture is not None:
            self._capture.close()
            self._capture = None
        if self._x is not None:
            self._x.close()
            self._x = None
        if self._xserver is not None:
            self._xserver.stop()
            self._xserver = None

    def _has_target(self, top: int) -> bool:
        """Whether top-level window ``top`` is (of) the target: the bound window's, one of
        its program's, or the one at a region's centre (where its keys went)."""
        x = self._xw()
        if self._wid is not None and top == x.top_of(self._wid):
            return True
        if self._region is not None:
            rx, ry, rw, rh = self._box
            return top == x.top_at(rx + rw // 2, ry + rh // 2)
        win = x.program_window(top)
        return win is not None and self._ours(win)

    # ------------------------------------------------------------ input
    def _check(self, action: Action) -> None:
        """Refuse, before anything is sent: points outside the target, off the screen or on
        a fail-safe corner (:mod:`kgagent.envs.points`), points another program's window
        covers, unknown keys, and keys that close or log out (:mod:`kgagent.envs.keyguard`)."""
        pg = self._pg()  # the input connection knows the fail-safe corners
        corners = self._input.corners if self._input is not None else []
        why = point_refusal(action, self._view, self._screen_size, corners)
        if why is not None:
            raise ActionRefused(why)
        if action.kind in ("key", "hotkey"):
            why = key_refusal(
                action.kind, action.key or "", pg.KEYBOARD_KEYS, self.opts.allow_closing_keys
            )
            if why is not None:
                raise ActionRefused(why)
        self._check_uncovered(action)

    def _check_uncovered(self, action: Action) -> None:
        """Refuse a click another program's window covers: the target is raised once first
        (:func:`~kgagent.envs.landing.cover_refusal`; checked again as it is sent)."""
        if self._wid is not None and action.points():
            why = cover_refusal(self._xw(), self._wid, self._view, action, self._ours)
            if why is not None:
                raise ActionRefused(why)

    def _land(self, a: Action, x: XWindows) -> None:
        """With the server held: keys get the target's focus (a region's: the window at
        its centre, or they are refused); a pointer action is refused where another
        program's window covers its point by now."""
        why = None
        if self.config.refuse_grabbed_input:
            self._grabs.check(x, a, self._wid, self._ours, self._box)
        check_owner(x, self._wid, self._owner, self._title)
        if a.kind in KEY_KINDS and self._wid is not None:
            x.focus(self._wid)
        elif a.kind in KEY_KINDS and self._region is not None:
            why = region_key_refusal(x, self._box, a)
        elif self._wid is not None and a.points():
            why = cover_refusal(x, self._wid, self._view, a, self._ours, raise_first=False)
        if why is not None:
            raise ActionRefused(why)

    def _rest(self) -> None:
        """Put the pointer on the target's rest point before a capture that is compared
        with another (:mod:`kgagent.envs.rest`)."""
        self._pg()  # the fail-safe corners of the screen now
        assert self._input is not None
        rest_pointer(self._input, self._view, self._wid, self._ours)

    def _ours(self, win: Window) -> bool:
        """A window of the target's program by its PID: the launched program's process
        group, or the bound window's own PID."""
        if win.pid is None:
            return False
        if self._program is not None and self._program.owns(win.pid):
            return True
        return win.pid == self._target_pid

    def _pg(self) -> Any:
        if self._input is None:
            self._input = PyAutoGUIInput(self.display, self.config.action_pause_s)
        return self._input.use(self._screen_size)

    def _execute(self, a: Action) -> None:
        """Send ``a`` (:meth:`PyAutoGUIInput.send`): with the X server held, where it will
        land is checked again (:meth:`_land`) and the press made, with no other program's
        request served in between (:mod:`kgagent.envs.landing`)."""
        self._pg()
        assert self._input is not None
        x = self._input.windows()
        self._input.send(a, (self._view[0], self._view[1]), lambda: self._land(a, x))
