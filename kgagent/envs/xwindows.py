"""Top-level X11 windows: find them by title, class or PID, and read where they are.

Why Xlib and not ``xdotool search --onlyvisible``: on a display without a window
manager (a bare Xvfb) xdotool misses windows that X itself reports as mapped and
viewable, SDL/pygame windows among them. Here a window is visible when X says so:
its map state is ``IsViewable`` (it and every ancestor are mapped) and it has a size.

With a window manager the root's children are the manager's frames and the program's
own window (the *client*, the one with ``WM_STATE``, a title or a class) lies below
its frame; without one, the root's children are the clients. Boxes are always the
client's, so a frame's decorations, its close button included, lie outside the
target and every action there is refused.

One :class:`XWindows` holds one X connection, passed the display name explicitly:
nothing here reads or changes the process's ``DISPLAY``.
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kgagent.errors import EnvironmentError_


def owned(wins: list[Window], owns: Callable[[int], bool]) -> list[Window]:
    """The windows of ``wins`` whose process ``owns`` claims (a program's group)."""
    return [w for w in wins if w.pid is not None and owns(w.pid)]


def wayland_session(env: dict[str, str] | None = None) -> bool:
    """Whether this process runs in a Wayland session (it has a Wayland display)."""
    e = os.environ if env is None else env
    return bool(e.get("WAYLAND_DISPLAY")) or e.get("XDG_SESSION_TYPE") == "wayland"


Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Window:
    """A visible top-level window (its client, below any window-manager frame)."""

    wid: int
    title: str
    wm_class: tuple[str, str]  # (instance, class), ("", "") when unset
    pid: int | None
    box: Box  # x, y, w, h on the screen

    def describe(self) -> str:
        x, y, w, h = self.box
        cls = self.wm_class[1] or self.wm_class[0] or "?"
        pid = f" pid {self.pid}" if self.pid else ""
        return f"{self.title!r} ({cls}{pid}) {w}x{h}+{x}+{y}"


def listed(wins: Sequence[Window], limit: int) -> str:
    """``wins`` described, the first ``limit`` of them, and how many more there are."""
    shown = "; ".join(w.describe() for w in wins[:limit])
    return shown + (f" (+{len(wins) - limit} more)" if len(wins) > limit else "")


def parse_query(query: str) -> tuple[str, str]:
    """``"pid:1234"``, ``"class:XTerm"``, ``"title:Calculator"`` or a plain text.

    A plain text matches a title (exactly, then as a case-insensitive part), then a
    class or instance name (case-insensitively). Texts are compared in Unicode's
    composed form (NFC): an "ü" typed as "u" and a combining diaeresis (NFD, as some
    keyboards and file names give it) names the title written with the one character
    "ü"; they look the same."""
    kind, sep, value = query.partition(":")
    if sep and kind in ("pid", "class", "title"):
        if not value.strip():
            example = {"pid": "pid:1234", "class": "class:XTerm", "title": "title:Calculator"}
            raise EnvironmentError_(
                f"window query {query!r}: {kind}: needs a value after it, e.g. {example[kind]}"
            )
        if kind == "pid" and not value.strip().isdigit():
            raise EnvironmentError_(f"window query {query!r}: pid: needs a number, e.g. pid:1234")
        return kind, value.strip()
    return "any", query


def _nfc(text: str) -> str:
    """``text`` in Unicode's composed form (NFC), as query and titles are compared."""
    return unicodedata.normalize("NFC", text)


#: what a query of each kind (:func:`parse_query`) was matched against, for messages
SEARCHED = {
    "pid": "by pid",
    "class": "by class or instance name",
    "title": "by title",
    "any": "by title, then class; title:TEXT, class:NAME or pid:N searches one",
}


def matches(query: str, windows: list[Window]) -> list[Window]:
    """Every window of ``windows`` (topmost first) that ``query`` names (see
    :func:`parse_query`), by the first of its tests that names any."""
    kind, value = parse_query(query)
    if kind == "pid":
        return [w for w in windows if w.pid == int(value)]
    value = _nfc(value)
    v = value.lower()
    if kind == "class":
        return [w for w in windows if v in (_nfc(c).lower() for c in w.wm_class)]
    tests: list[Callable[[Window], bool]] = [
        lambda w: _nfc(w.title) == value,
        lambda w: v in _nfc(w.title).lower(),
    ]
    if kind == "any":
        tests.append(lambda w: v in (_nfc(c).lower() for c in w.wm_class))
    for test in tests:
        hits = [w for w in windows if test(w)]
        if hits:
            return hits
    return []


def match(query: str, windows: list[Window]) -> Window | None:
    """The first of ``windows`` (topmost first) that ``query`` names (see :func:`matches`)."""
    hits = matches(query, windows)
    return hits[0] if hits else None


def connect(display: str) -> Any:
    """A python-xlib connection to X ``display``; failing to connect is one clear error."""
    try:
        from Xlib import display as xdisplay  # python-xlib

        return xdisplay.Display(display)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot connect"
        raise EnvironmentError_(
            f"cannot connect to X display {display!r} ({type(e).__name__}); is the X server running?"
        ) from None


def disconnect(conn: Any) -> None:
    """Close a connection from :func:`connect`; a server that is gone already is fine."""
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - the server may be gone already
        pass


class XWindows:
    """One connection to an X display, and the window queries made on it."""

    def __init__(self, display: str, conn: Any = None) -> None:
        """A connection of its own to ``display``, or queries on ``conn`` (another's
        connection, kept open by its owner; :meth:`close` leaves it alone)."""
        self._owned = conn is None
        self.conn: Any = connect(display) if conn is None else conn
        self.display = display
        self.root = self.conn.screen().root
        atom = self.conn.intern_atom
        self._net_wm_name = atom("_NET_WM_NAME")
        self._utf8 = atom("UTF8_STRING")
        self._net_wm_pid = atom("_NET_WM_PID")
        self._wm_state = atom("WM_STATE")
        self._xres = self.conn.has_extension("X-Resource")
        # Its PIDs are the server's: trusted only where the server names this process by
        # this process's own PID (a local server in the same PID namespace; not over
        # ssh -X, where every client is the ssh process, nor from a container)
        self._xres = self._xres and self.client_pid(self._own_xid()) == os.getpid()
        from Xlib import X

        s = self.conn.screen()
        self._screen = int(s.width_in_pixels), int(s.height_in_pixels)
        if self._owned:  # the root's own configure events: a RandR change of the screen's size
            self.root.change_attributes(event_mask=X.StructureNotifyMask)
        self.conn.sync()

    @property
    def screen_size(self) -> tuple[int, int]:
        """The screen's size now. The connection's setup gives it at connect time; a
        RandR change since (a program switching the display's mode, ``xrandr``) resizes
        the root window, which X reports to this connection as an event, read here
        without a round trip (5 µs when none is waiting)."""
        from Xlib import X

        while self.conn.pending_events():
            ev = self.conn.next_event()
            if ev.type == X.ConfigureNotify and int(ev.window.id) == int(self.root.id):
                self._screen = int(ev.width), int(ev.height)
        return self._screen

    def close(self) -> None:
        if self._owned:
            disconnect(self.conn)

    # ------------------------------------------------------------ listing
    def windows(self) -> list[Window]:
        """Visible top-level windows, bottom to top in stacking order."""
        from Xlib import X

        out: list[Window] = []
        for top in self._children(self.root):
            try:
                if top.get_attributes().map_state != X.IsViewable:
                    continue
                win = self._program_window(top)
            except Exception:  # noqa: BLE001 - the window went away meanwhile
                continue
            if win is not None:
                out.append(win)
        return out

    def window(self, wid: int) -> Window | None:
        """Window ``wid`` as it is now (its title may have changed since it was found);
        None when it is gone, unmapped or hidden."""
        try:
            return self._describe(self.conn.create_resource_object("window", wid))
        except Exception:  # noqa: BLE001 - BadWindow: it was destroyed
            return None

    def find(self, query: str) -> Window | None:
        """The topmost visible window that ``query`` names (see :func:`matches`); None when
        none does. Windows of more than one program named alike are an error that lists
        them: the agent must not pick one of two terminals by their stacking order."""
        hits = matches(query, list(reversed(self.windows())))
        if not hits:
            return None
        first = hits[0]
        others = [w for w in hits[1:] if not self._one_program(first, w)]
        if others:
            shown = "; ".join(w.describe() for w in [first, *others][:6])
            raise EnvironmentError_(
                f"window query {query!r} names windows of {len(others) + 1} programs: {shown}; "
                "name one: title:EXACT TITLE, class:NAME or pid:N"
            )
        return first

    def _one_program(self, a: Window, b: Window) -> bool:
        if a.pid is not None and b.pid is not None:
            return a.pid == b.pid
        return self.same_client(a.wid, b.wid)

    def await_window(
        self,
        owns: Callable[[int], bool],
        alive: Callable[[], bool],
        query: str | None,
        before: set[int],
        timeout_s: float,
    ) -> Window | None:
        """A started program's first visible window: one of its process group's (``owns``),
        else a new one (not in ``before``: a client whose PID X cannot tell); with
        ``query``, one that matches it (:func:`match`). ``None`` once ``alive()`` is false
        or ``timeout_s`` has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            wins = list(reversed(self.windows()))  # topmost first
            cands = owned(wins, owns) or [w for w in wins if w.wid not in before and w.pid is None]
            win = match(query, cands) if query else (cands[0] if cands else None)
            if win is not None:
                return win
            if not alive() or time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def new_windows(self, before: set[int], timeout_s: float) -> list[Window]:
        """The visible windows not in ``before``, topmost first, once there are any or
        ``timeout_s`` has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            new = [w for w in reversed(self.windows()) if w.wid not in before]
            if new or time.monotonic() >= deadline:
                return new
            time.sleep(0.1)

    def not_found(self, query: str, limit: int = 8) -> EnvironmentError_:
        """The one-line error for a query that matches nothing: it lists what exists."""
        wins = list(reversed(self.windows()))
        shown = listed(wins, limit) if wins else "none"
        hint = (
            "; this is a Wayland session, where only programs on X11 (XWayland) have X "
            "windows: start it with GDK_BACKEND=x11, QT_QPA_PLATFORM=xcb or "
            "SDL_VIDEODRIVER=x11, or let kgagent start it (desktop.launch)"
            if wayland_session()
            else ""
        )
        searched = SEARCHED[parse_query(query)[0]]
        return EnvironmentError_(
            f"no visible window matches {query!r} ({searched}) on "
            f"{self.display}; visible windows: {shown}{hint}"
        )

    # ------------------------------------------------------------ one window
    def box(self, wid: int) -> Box | None:
        """The window's box on the screen, or None when it is gone, unmapped or hidden."""
        from Xlib import X

        try:
            w = self.conn.create_resource_object("window", wid)
            if w.get_attributes().map_state != X.IsViewable:
                return None
            geo = w.get_geometry()
            pos = self.root.translate_coords(w, 0, 0)
        except Exception:  # noqa: BLE001 - BadWindow: it was destroyed
            return None
        return int(pos.x), int(pos.y), int(geo.width), int(geo.height)

    # ------------------------------------------------------------ what covers what
    def top_of(self, wid: int) -> int:
        """The top-level window (a child of the root: a manager's frame, or the window
        itself without one) that holds window ``wid``; 0 when it is gone."""
        w = self.conn.create_resource_object("window", wid)
        try:
            for _depth in range(16):
                parent = w.query_tree().parent
                if not parent or int(parent.id) == int(self.root.id):
                    return int(w.id)
                w = parent
        except Exception:  # noqa: BLE001 - BadWindow: it was destroyed
            return 0
        return 0

    def top_at(self, x: int, y: int) -> int:
        """The topmost top-level window that takes the pointer at screen point (x, y)
        (X's own answer: mapped, and the point inside its shape); 0 for the root."""
        child = self.root.translate_coords(self.root, int(x), int(y)).child
        return int(child.id) if child else 0

    def covering(
        self, wid: int, top: int, x: int, y: int, ours: Callable[[Window], bool]
    ) -> Window | None:
        """The window of another program that takes the pointer at screen point (x, y)
        where window ``wid`` (top-level ``top``, :meth:`top_of`) lies; None when ``wid``
        takes it, or a window of its own program does (one X connection, or one that
        ``ours`` accepts). A window with no title, class or ``WM_STATE`` (an overlay) is
        another program's unless it is shown to be the target's: X gives it the click."""
        hit = self.top_at(x, y)
        if not hit or hit == top:
            return None
        if self.same_client(hit, wid):
            return None
        win = self.program_window(hit) or self._anonymous(hit)
        if win.wid == wid or self.same_client(win.wid, wid) or ours(win):
            return None
        return win

    def face(self, wid: int, box: Box) -> Box | None:
        """The screen's box when a screen-sized window of ``wid``'s own program lies over
        window ``wid`` (at ``box``), as seen at its centre; None otherwise. An SDL 1.2
        game switched to full screen on a display that cannot change its mode draws in
        a new screen-sized window over its own; what the user sees of the program is
        that one. A smaller window of the program over it (its main window over one of
        its palettes) is not its face: the target does not grow to it."""
        x, y, w, h = box
        hit = self.top_at(x + w // 2, y + h // 2)
        if not hit or hit == wid or not self.same_client(hit, wid) or hit == self.top_of(wid):
            return None
        screen = (0, 0, *self.screen_size)
        return screen if self.box(hit) == screen and box != screen else None

    def program_window(self, top: int) -> Window | None:
        """The program window (client) of a top-level window; None when it has none (an
        overlay or a frame without a client), or when it is gone."""
        try:
            return self._program_window(self.conn.create_resource_object("window", top))
        except Exception:  # noqa: BLE001 - the window went away meanwhile
            return None

    def _program_window(self, top: Any) -> Window | None:
        client = self._client(top)
        return self._describe(client) if client is not None else None

    def same_client(self, a: int, b: int) -> bool:
        """Whether windows ``a`` and ``b`` were made by one X connection (one program):
        X gives every connection its own range of resource ids."""
        mask = int(self.conn.display.info.resource_id_mask)
        return (int(a) & ~mask) == (int(b) & ~mask)

    def raise_window(self, top: int) -> None:
        """Put a top-level window above its siblings (a window manager may refuse)."""
        from Xlib import X, error

        catch = error.CatchError(error.BadWindow, error.BadMatch)
        w = self.conn.create_resource_object("window", top)
        w.configure(stack_mode=X.Above, onerror=catch)
        self.conn.sync()

    def move(self, wid: int, x: int, y: int) -> None:
        """Ask for window ``wid``'s box (:meth:`box`) to start at screen point (x, y). On
        a bare X server the window moves; under a window manager the request goes to it,
        which places the window's frame around that point (a few pixels off, by its
        gravity)."""
        from Xlib import error

        catch = error.CatchError(error.BadWindow, error.BadMatch, error.BadValue)
        w = self.conn.create_resource_object("window", wid)
        try:
            border = int(w.get_geometry().border_width)
        except Exception:  # noqa: BLE001 - BadWindow: it was destroyed
            return
        w.configure(x=int(x) - border, y=int(y) - border, onerror=catch)
        self.conn.sync()

    def move_to(self, wid: int, x: int, y: int, timeout_s: float = 0.5) -> Box | None:
        """Move window ``wid``'s box to start at (x, y) and wait (up to ``timeout_s``) for
        it to move; its box then, None when it has gone. Under a window manager, which
        lands the frame by its gravity a few pixels off, the offset is corrected once."""
        box, aim = self.box(wid), (x, y)
        for _try in range(2):
            if box is None:
                return None
            self.move(wid, *aim)
            start, end = box, time.monotonic() + timeout_s
            while (box := self.box(wid)) is not None and box[:2] == start[:2]:
                if time.monotonic() >= end:
                    break
                time.sleep(0.01)
            if box is None or box[:2] == (x, y):
                return box
            aim = (aim[0] + x - box[0], aim[1] + y - box[1])
        return box

    def focus(self, wid: int) -> None:
        """Give the window the keyboard focus (needed without a window manager, where the
        focus otherwise follows the pointer)."""
        from Xlib import X, error

        catch = error.CatchError(error.BadWindow, error.BadMatch)
        w = self.conn.create_resource_object("window", wid)
        w.set_input_focus(X.RevertToParent, X.CurrentTime, onerror=catch)
        self.conn.sync()

    def focused(self) -> int:
        """The window holding the keyboard focus; 0 when none does (focus None, on the
        root, or following the pointer)."""
        focus = self.conn.get_input_focus().focus
        if isinstance(focus, int) or int(focus.id) == int(self.root.id):
            return 0
        return int(focus.id)

    def key_top(self) -> int:
        """The top-level window a key pressed now goes to: the one holding the keyboard
        focus, or, with the focus on the root (or following the pointer), the one under
        the pointer; 0 when keys go to no window (focus None, the pointer on the root)."""
        from Xlib import X

        focus = self.conn.get_input_focus().focus
        if isinstance(focus, int):  # X.NONE or X.PointerRoot
            if focus != X.PointerRoot:
                return 0
            focus = self.root
        if int(focus.id) == int(self.root.id):
            child = self.root.query_pointer().child
            return int(child.id) if child else 0
        return self.top_of(int(focus.id))

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _children(win: Any) -> list[Any]:
        try:
            return list(win.query_tree().children)
        except Exception:  # noqa: BLE001
            return []

    def _client(self, top: Any) -> Any | None:
        """The program's window at or below a top-level window (a WM frame's client)."""
        if self._is_client(top):
            return top
        level = self._children(top)
        for _depth in range(3):
            for c in level:
                if self._is_client(c):
                    return c
            level = [g for c in level for g in self._children(c)]
        return None

    def _is_client(self, w: Any) -> bool:
        from Xlib import X

        if w.get_full_property(self._wm_state, X.AnyPropertyType) is not None:
            return True
        return bool(w.get_wm_class()) or bool(self._title(w))

    def _title(self, w: Any) -> str:
        prop = w.get_full_property(self._net_wm_name, self._utf8)
        if prop is not None and prop.value:
            v = prop.value
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        name = w.get_wm_name()
        if isinstance(name, bytes):
            return name.decode("latin-1")
        return name or ""

    def _pid(self, w: Any) -> int | None:
        """The PID of the window's program: the server's answer (X-Resource) when it has
        the extension, since ``_NET_WM_PID`` is set by the client and any client can
        claim another's PID with it; the property only on a server without it."""
        if self._xres:
            return self.client_pid(int(w.id))
        from Xlib import X

        prop = w.get_full_property(self._net_wm_pid, X.AnyPropertyType)
        if prop is not None and len(prop.value):
            return int(prop.value[0])
        return None

    def client_pid(self, wid: int) -> int | None:
        """The PID of the X client that made window ``wid``, by the X-Resource extension;
        None without it, for a remote client (no local PID) or a window that is gone."""
        if not self._xres:
            return None
        from Xlib.ext import res

        try:
            reply = self.conn.res_query_client_ids(
                [{"client": int(wid), "mask": res.LocalClientPIDMask}]
            )
            for cid in reply.ids:
                if len(cid.value):
                    return int(cid.value[0])
        except Exception:  # noqa: BLE001 - BadValue: no such client any more
            return None
        return None

    def _own_xid(self) -> int:
        """An id of this connection's range (X-Resource finds a client by any of its ids)."""
        return int(self.conn.display.info.resource_id_base)

    def exists(self, wid: int) -> bool:
        """Whether window ``wid`` exists (mapped or not)."""
        try:
            self.conn.create_resource_object("window", wid).get_attributes()
        except Exception:  # noqa: BLE001 - BadWindow: it was destroyed
            return False
        return True

    def own_popup(self, top: Any, wid: int, ours: Callable[[Window], bool]) -> bool:
        """Whether top-level window ``top`` is an override-redirect window (a menu, a
        tooltip) of window ``wid``'s program: its X connection, or a PID ``ours`` accepts."""
        try:
            if not top.get_attributes().override_redirect:
                return False
        except Exception:  # noqa: BLE001 - the window went away meanwhile
            return False
        if self.same_client(int(top.id), wid):
            return True
        return ours(self._anonymous(int(top.id)))

    def _anonymous(self, top: int) -> Window:
        """A top-level window with no program window in it (no title, class or
        ``WM_STATE``), described by what the server knows: its box and client's PID."""
        return Window(top, "", ("", ""), self.client_pid(top), self.box(top) or (0, 0, 0, 0))

    def _describe(self, client: Any) -> Window | None:
        from Xlib import X

        if client.get_attributes().map_state != X.IsViewable:
            return None
        geo = client.get_geometry()
        if geo.width < 2 or geo.height < 2:
            return None
        pos = self.root.translate_coords(client, 0, 0)
        cls = client.get_wm_class() or ("", "")
        return Window(
            wid=int(client.id),
            title=self._title(client),
            wm_class=(str(cls[0]), str(cls[1])),
            pid=self._pid(client),
            box=(int(pos.x), int(pos.y), int(geo.width), int(geo.height)),
        )
