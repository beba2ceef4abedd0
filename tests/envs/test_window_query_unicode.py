"""Window queries (kgagent.envs.xwindows) compare texts in Unicode's composed form, and a
query that names nothing says what it searched."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest

from kgagent.envs.xwindows import Window, XWindows, matches

COMPOSED = unicodedata.normalize("NFC", "Prüfung")  # "ü" as one character
DECOMPOSED = unicodedata.normalize("NFD", "Prüfung")  # "u" and a combining diaeresis
assert COMPOSED != DECOMPOSED


def _window(title: str, wm_class: tuple[str, str] = ("", "")) -> Window:
    return Window(wid=1, title=title, wm_class=wm_class, pid=None, box=(0, 0, 10, 10))


@pytest.mark.parametrize(("title", "typed"), [(COMPOSED, DECOMPOSED), (DECOMPOSED, COMPOSED)])
def test_a_title_matches_in_either_unicode_form(title: str, typed: str) -> None:
    win = _window(f"{title} – Editor", ("prüfung", "Prüfung"))
    for query in (
        f"title:{typed} – Editor",  # exactly
        f"{typed} – Editor",
        f"title:{typed.lower()}",  # a case-insensitive part
        typed.upper()[:4],
        f"class:{typed}",
    ):
        assert matches(query, [win]) == [win], query
    assert matches("title:prufung", [win]) == []  # a different letter is no match


def _connect(display: str) -> Any:
    """A connection to ``display``, retried: an X server started without ``-noreset``
    resets when its last client leaves, and refuses connections meanwhile."""
    from Xlib import display as xdisplay

    deadline = time.monotonic() + 5
    while True:
        try:
            return xdisplay.Display(display)
        except Exception:  # noqa: BLE001 - resetting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="module")
def titled(xvfb: str) -> Iterator[str]:
    """A mapped window titled "Prüfung – Editor" (composed) on the test display; its
    connection stays open for the module's tests, so the server does not reset."""
    from Xlib import X

    conn = _connect(xvfb)
    screen = conn.screen()
    win = screen.root.create_window(
        20, 20, 200, 100, 0, screen.root_depth, X.InputOutput, background_pixel=0x336699
    )
    title = f"{COMPOSED} – Editor"
    win.change_property(
        conn.intern_atom("_NET_WM_NAME"), conn.intern_atom("UTF8_STRING"), 8, title.encode()
    )
    win.set_wm_class("pruefung", "Pruefung")
    win.map()
    conn.sync()
    try:
        yield title
    finally:
        win.destroy()
        conn.sync()
        conn.close()


def test_a_decomposed_query_finds_the_composed_title_on_the_display(xvfb: str, titled: str) -> None:
    x = XWindows(xvfb)
    try:
        win = x.find(f"title:{DECOMPOSED}")
        assert win is not None and win.title == titled
        assert x.find(f"{DECOMPOSED} – Editor") == win
    finally:
        x.close()


@pytest.mark.parametrize(
    ("query", "searched"),
    [
        ("title:Nirgends", "(by title)"),
        ("class:Nirgends", "(by class or instance name)"),
        ("pid:999999", "(by pid)"),
        ("Nirgends", "(by title, then class;"),
    ],
)
def test_a_query_that_names_no_window_says_what_it_searched(
    xvfb: str, titled: str, query: str, searched: str
) -> None:
    x = XWindows(xvfb)
    try:
        assert x.find(query) is None
        msg = str(x.not_found(query))
        assert f"no visible window matches {query!r} {searched}" in msg
        assert titled in msg and "\n" not in msg  # it lists what there is
    finally:
        x.close()
