"""The keys a desktop agent never sends unless allowed: each rule, without a display."""

from __future__ import annotations

import pytest

from kgagent.envs.keyguard import closing_reason, key_refusal, normalize, split_keys

SUPER = "the super/Windows key opens the desktop's menus and shortcuts"
SLEEP = "the sleep key suspends the machine"
CTRL_ALT = "ctrl+alt combinations end the session or switch away from it"
ALT_F4 = "alt+f4 closes the window"
QUIT = "ctrl+q, ctrl+w and ctrl+f4 quit the program or close its window"
CTRL_C = (
    "ctrl+c, alone or with other keys, interrupts the program running in a terminal, "
    "and some programs quit on it"
)

#: A few of pyautogui's key names (its KEYBOARD_KEYS), enough for every rule.
KNOWN = frozenset(
    "a c q s w x tab enter return esc escape space backspace delete left right up down f1 f4 "
    "f5 ctrl ctrlleft ctrlright alt altleft altright shift shiftleft shiftright win winleft "
    "winright command option sleep".split()
)


@pytest.mark.parametrize(
    "keys, reason",
    [
        (["win"], SUPER),
        (["winleft", "r"], SUPER),
        (["winright"], SUPER),
        (["command", "q"], SUPER),  # super is said first
        (["cmd"], SUPER),
        (["super"], SUPER),
        (["sleep"], SLEEP),
        (["SLEEP"], SLEEP),
        (["ctrl", "alt", "backspace"], CTRL_ALT),
        (["ctrlright", "altleft", "f1"], CTRL_ALT),
        (["control", "option", "delete"], CTRL_ALT),
        (["alt", "f4"], ALT_F4),
        (["altright", "f4"], ALT_F4),
        (["optionleft", "f4"], ALT_F4),
        (["ctrl", "q"], QUIT),
        (["ctrl", "w"], QUIT),
        (["ctrl", "f4"], QUIT),
        (["ctrlright", "q"], QUIT),
        (["ctrlleft", "shift", "w"], QUIT),  # another modifier does not make it safe
        (["Ctrl", "Q"], QUIT),
        (["ctrl", "c"], CTRL_C),
        (["ctrlright", "c"], CTRL_C),
        (["control", "C"], CTRL_C),
        (["ctrl", "shift", "c"], CTRL_C),  # xcalc quits on it (a terminal's copy, too)
        (["ctrl", "a", "c"], CTRL_C),  # c pressed while ctrl is held: ctrl+c
    ],
)
def test_each_closing_rule(keys: list[str], reason: str) -> None:
    assert closing_reason(keys) == reason


@pytest.mark.parametrize(
    "keys",
    [
        [],
        ["enter"],
        ["esc"],
        ["f4"],  # f4 alone closes nothing
        ["q"],
        ["alt"],
        ["ctrl"],
        ["alt", "tab"],
        ["ctrl", "s"],
        ["ctrl", "x"],
        ["alt", "c"],
        ["shift", "f4"],
        ["shift", "q"],
    ],
)
def test_keys_that_close_nothing_are_allowed(keys: list[str]) -> None:
    assert closing_reason(keys) is None


@pytest.mark.parametrize(
    "key, name",
    [
        ("ctrlleft", "ctrl"),
        ("ctrlright", "ctrl"),
        ("control", "ctrl"),
        ("altleft", "alt"),
        ("altright", "alt"),
        ("option", "alt"),
        ("optionleft", "alt"),
        ("optionright", "alt"),
        ("shiftleft", "shift"),
        ("shiftright", "shift"),
        ("win", "super"),
        ("winleft", "super"),
        ("winright", "super"),
        ("command", "super"),
        ("cmd", "super"),
        ("esc", "escape"),
        ("return", "enter"),
        (" CtrlRight ", "ctrl"),
        ("a", "a"),
    ],
)
def test_one_name_per_physical_key(key: str, name: str) -> None:
    assert normalize(key) == name


def test_split_keys_keeps_the_plus_key() -> None:
    assert split_keys("ctrl+s") == ["ctrl", "s"]
    assert split_keys("+") == ["+"]
    assert split_keys("enter") == ["enter"]
    assert split_keys("ctrl++") == ["ctrl"]


@pytest.mark.parametrize(
    "kind, key, reason",
    [
        ("key", "sleep", SLEEP),
        ("key", "win", SUPER),
        ("hotkey", "ctrlright+q", QUIT),
        ("hotkey", "ctrl+alt+backspace", CTRL_ALT),
        ("hotkey", "alt+f4", ALT_F4),
        ("hotkey", "ctrl+c", CTRL_C),
    ],
)
def test_a_closing_key_is_refused_unless_allowed(kind: str, key: str, reason: str) -> None:
    assert key_refusal(kind, key, KNOWN, allow_closing=False) == (
        f"{kind} {key!r} is refused: {reason} "
        "(desktop.allow_closing_keys=true allows it); nothing was executed"
    )
    assert key_refusal(kind, key, KNOWN, allow_closing=True) is None


@pytest.mark.parametrize("kind, key", [("key", "enter"), ("hotkey", "ctrl+s"), ("key", "f4")])
def test_a_safe_known_key_is_not_refused(kind: str, key: str) -> None:
    assert key_refusal(kind, key, KNOWN, allow_closing=False) is None


def test_an_unknown_key_is_refused_even_when_closing_keys_are_allowed() -> None:
    want = "unknown key 'hyper'; use pyautogui key names such as enter, esc, left, ctrl"
    for allow in (False, True):
        assert key_refusal("hotkey", "ctrl+hyper", KNOWN, allow_closing=allow) == want
    # known names are matched whatever their case and spaces; the unknown one is named first
    assert key_refusal("hotkey", " Ctrl +S", KNOWN, allow_closing=False) is None
    assert key_refusal("hotkey", "bogus+alt+f4", KNOWN, allow_closing=False).startswith(
        "unknown key 'bogus'"
    )
