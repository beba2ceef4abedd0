"""Keys that a desktop agent never sends unless the user allows it.

Why: a real desktop is not a sandbox. An exploring agent presses keys at random,
and a few combinations close the program it is learning (``alt+f4``, ``ctrl+q``,
``ctrl+w``, ``ctrl+f4``, each with any other keys held too; ``ctrl+c``, alone or
with other keys, which interrupts the program running in a terminal such as xterm
and which some X programs, xcalc among them, take as their quit key even with shift), end the session or switch away from it (anything with ``ctrl+alt``: ``ctrl+alt+backspace`` kills the X
server, ``ctrl+alt+f1`` switches the console), open the desktop's own menus (the
super/Windows key) or suspend the machine (``sleep``). They are refused before
anything is sent; the window manager's close button needs no rule here because it
lies on the frame, outside the target, where every action is refused anyway.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

# pyautogui key names of the same physical modifier
_ALIASES = {
    "ctrlleft": "ctrl",
    "ctrlright": "ctrl",
    "control": "ctrl",
    "altleft": "alt",
    "altright": "alt",
    "option": "alt",
    "optionleft": "alt",
    "optionright": "alt",
    "shiftleft": "shift",
    "shiftright": "shift",
    "win": "super",
    "winleft": "super",
    "winright": "super",
    "command": "super",
    "cmd": "super",
    "esc": "escape",
    "return": "enter",
}


def normalize(key: str) -> str:
    """One name per physical key (``ctrlleft`` -> ``ctrl``, ``esc`` -> ``escape``)."""
    k = key.strip().lower()
    return _ALIASES.get(k, k)


def closing_reason(keys: Iterable[str]) -> str | None:
    """Why the keys pressed together would close, log out or leave the program; None if safe."""
    ks = {normalize(k) for k in keys}
    if "super" in ks:
        return "the super/Windows key opens the desktop's menus and shortcuts"
    if "sleep" in ks:
        return "the sleep key suspends the machine"
    if {"ctrl", "alt"} <= ks:
        return "ctrl+alt combinations end the session or switch away from it"
    if "alt" in ks and "f4" in ks:
        return "alt+f4 closes the window"
    if "ctrl" in ks and ks & {"q", "w", "f4"}:
        return "ctrl+q, ctrl+w and ctrl+f4 quit the program or close its window"
    if {"ctrl", "c"} <= ks:
        # with other keys too: X toolkit programs bind "Ctrl<Key>c" whatever else is
        # held (xcalc quits on ctrl+shift+c), and ctrl+a+c delivers ctrl+c. Worded for
        # any target: the refusal is printed about the program being learned.
        return (
            "ctrl+c, alone or with other keys, interrupts the program running in a terminal, "
            "and some programs quit on it"
        )
    return None


def split_keys(key: str) -> list[str]:
    """``"ctrl+s"`` -> ``["ctrl", "s"]``; the plus key itself stays ``["+"]``."""
    if len(key) <= 1:
        return [key]
    return [k for k in key.split("+") if k] or [key]


def key_refusal(kind: str, key: str, known: Collection[str], allow_closing: bool) -> str | None:
    """Why a ``key`` or ``hotkey`` action may not be sent: a key not among ``known`` (the
    input library's names), or keys that close, unless ``allow_closing``; None if it may."""
    keys = split_keys(key)
    for k in keys:
        if k.strip().lower() not in known:
            return f"unknown key {k!r}; use pyautogui key names such as enter, esc, left, ctrl"
    reason = closing_reason(keys)
    if reason and not allow_closing:
        return (
            f"{kind} {key!r} is refused: {reason} "
            "(desktop.allow_closing_keys=true allows it); nothing was executed"
        )
    return None
