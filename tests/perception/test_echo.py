"""A text field's echo (kgagent.perception.echo): typed letters read back at the end of
the one line that changed, and later typing in that line; nothing else."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from kgagent.actions import Operation, text_entry
from kgagent.perception.echo import Fields, echo, entered, typed_line
from kgagent.perception.textline import line_around

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _form(text: str, *, extra: str = "", moved: int = 0) -> np.ndarray:
    """A light window with a field label, a boxed field holding ``text``, and a button;
    ``extra``: a second line of text under the field; ``moved``: the world drawn
    shifted down by that much (a big change)."""
    img = np.full((200, 400, 3), 235, np.uint8)
    cv2.putText(img, "Name", (20, 60 + moved), FONT, 0.6, (20, 20, 20), 1, cv2.LINE_AA)
    cv2.rectangle(img, (90, 40), (380, 70), (120, 120, 120), 1)
    cv2.putText(img, text, (96, 62), FONT, 0.6, (20, 20, 20), 1, cv2.LINE_AA)
    if extra:
        cv2.putText(img, extra, (96, 100), FONT, 0.6, (20, 20, 20), 1, cv2.LINE_AA)
    cv2.rectangle(img, (300, 150), (380, 180), (90, 90, 160), -1)
    cv2.putText(img, "OK", (325, 172), FONT, 0.6, (255, 255, 255), 1, cv2.LINE_AA)
    return img


@pytest.mark.parametrize(
    ("before", "after", "typed", "echo_"),
    [
        ("abc", "abcd", "d", True),
        ("", "hello", "hello", True),
        ("a", "ab", "b", True),
        ("", "ab", "b", True),  # the first letter was one glyph, too few to read
        ("abcd|", "abcdx|", "x", True),  # the caret, read as a sign
        ("2p2pqq2p", "2p2pqq2pal", "a", True),  # ... or as a letter
        ("2p2pqq2pal", "2p2pqq2paql", "q", True),
        ("123123123", "3123123123x", "x", False),  # more than the typed text changed
        ("abcdefgh", "bcdefghx", "x", True),  # a full field scrolls by what was typed
        ("abcdefgh", "efghx", "x", False),  # ... not by more
        ("abc", "abcd", "1", False),  # one digit typed: it may be a count
        ("abc", "abc1", "1", False),
        ("", "123", "123", True),  # ... two or more tell
        ("abc1", "abc1123", "123", True),
        ("88", "8812", "12", True),
        ("abc", "dabc", "d", False),  # not at the end
        ("Score 12", "Score 13", "3", False),
        ("", "w", "w", False),  # one character reads as anything
        ("Level 2", "Level 2 done", "d", False),
    ],
)
def test_typed_letters_read_back_at_the_end_of_the_line(before, after, typed, echo_) -> None:
    assert entered(after, before, typed) is echo_


def test_text_entry_is_what_ends_a_skill_in_text_entry() -> None:
    key = lambda k: Operation("key", key=k)  # noqa: E731
    assert text_entry([key("a")]) == ("a", 0)
    assert text_entry([Operation("click", point=(1, 2)), key("a"), key("space")]) == ("a ", 0)
    assert text_entry([Operation("type", text="hi"), key("b")]) == ("hib", 0)
    assert text_entry([key("backspace"), key("delete")]) == ("", 2)
    assert text_entry([key("a"), key("backspace")]) is None  # enters and erases
    assert text_entry([key("enter")]) is None and text_entry([key("a"), key("f1")]) is None
    assert text_entry([Operation("hotkey", key="ctrl+v")]) is None


def test_the_one_line_that_changed_is_found_and_nothing_else_is_one_line() -> None:
    before, after = _form("abc"), _form("abcd")
    box = typed_line(before, after, 30, line_around)
    assert box is not None
    x, y, w, h = box
    assert y <= 50 and y + h >= 62 and x <= 96 + 40 < x + w  # the field's text, whole
    assert typed_line(before, before.copy(), 30, line_around) is None  # nothing changed
    # two lines changed, or the whole window moved: not one line of text
    assert typed_line(before, _form("abcd", extra="Wrong name"), 30, line_around) is None
    assert typed_line(before, _form("abc", moved=90), 30, line_around) is None
    assert typed_line(before, after[:, :300], 30, line_around) is None  # resized


def test_a_field_found_by_its_letters_echoes_what_the_reader_cannot_read() -> None:
    fields, reads = Fields(), []

    def read(crops):
        reads.append(len(crops))
        return [texts.pop(0) for _ in crops]

    kw = dict(threshold=30, around=line_around, read=read)
    # one digit typed first: it tells nothing, and the line is no field yet
    texts: list[str] = []
    assert not echo(_form("ab"), _form("ab1"), "1", fields, **kw) and not reads
    # the place that changed, read with its neighbours, ends with what was typed: then
    # the whole line is read on both screens
    texts = ["b1c", "ab1", "ab1c"]
    assert echo(_form("ab1"), _form("ab1c"), "c", fields, **kw) and reads == [1, 2]
    # now a field: signs, digits and erasing there echo without reading
    assert echo(_form("ab1c"), _form("ab1c;"), ";", fields, **kw)
    assert echo(_form("ab1c;"), _form("ab1c"), "", fields, **kw) and reads == [1, 2]
    # a letter whose reading is not the typed one at the end: no echo
    texts = ["Mame"]
    other = Fields()
    assert not echo(_form("Name"), _form("Mame"), "m", other, **kw)
    assert not other.boxes and not texts and reads[-1] == 1  # the line was not followed
    # any key whose only effect is in a field line is the field's (the caret moved, a
    # selection): no reading needed
    n = len(reads)
    assert echo(_form("ab"), _form("abc"), "", fields, **kw)
    # elsewhere a key that typed nothing, or a change that is no line: no echo, not read
    assert not echo(_form("ab"), _form("abc"), "", Fields(), **kw)
    assert len(reads) == n
    texts = ["Name x"]  # a word moved, read where it went: not one line, whatever it reads
    assert not echo(_form("ab"), _form("ab", moved=90), "x", Fields(), **kw)
