"""A text field's echo: keys typed into a field show up in it, and that is all they do.

Every key typed into a text field changes the screen, so an agent that counts a new
screen as progress, or a changed screen as the program's answer to a key, stays in the
first field it finds and types there for good (zenity's forms, xboard's move box,
``less``'s prompt: docs/agent.md, "Text fields"). A person knows better: the program
did nothing yet, the field only showed what was typed. This module tells that case
apart from the pixels and the text reader, and knows nothing about any program:

* :func:`typed_line`: where a typing step changed the screen, when that is one line of
  text: the box of every changed pixel with its neighbours, widened to the whole text
  line it lies in on either screen (:func:`~kgagent.perception.textline.line_around`),
  and holding one row of glyphs that fills it on each screen that shows text there (a
  menu that opened, a world that moved: not one line);
* :func:`entered`: whether the line's reading after is its reading before with the
  typed characters at its end, with a text reader's slack: a caret read as a sign or a
  thin letter, a field too narrow that scrolls;
* :class:`Fields`: the lines where an echo was read. Once what was typed into a line
  was read there, later typing that changes only that line is an echo too, whatever
  the reader makes of it (digits, signs and spaces read poorly next to a caret), and
  so is any key whose only effect is there (erasing, moving the caret, selecting).

An echo is confirmed only by typed text that tells (:func:`telling`): a letter, or two
characters or more, read back. One digit read back may be a count that changed (a
game's digit keys make things it then counts), and a game's letter keys never appear
as text where it changed (Crafter's inventory is digits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import numpy as np

from kgagent.perception.change import to_gray
from kgagent.perception.textline import MAX_GLYPH_H, text_lines
from kgagent.records import label_key

Box = tuple[int, int, int, int]

#: Field lines remembered per run; the oldest goes first.
MAX_FIELDS = 32


def typed_line(
    before: np.ndarray,
    after: np.ndarray,
    threshold: int,
    around: Callable[[np.ndarray, Box], Box | None],
    worth: Callable[[Box], bool] | None = None,
) -> Box | None:
    """The one text line where ``after`` differs from ``before`` (see the module
    docstring); ``None`` when nothing changed, the screens differ in size, or the change
    is not one line of text. ``threshold``: the grey-level difference that is a change;
    ``around``: :func:`~kgagent.perception.textline.line_around` (or a cache of it);
    ``worth``: asked with the changed box and its neighbours before the line is followed
    (following a line through a picture that passes for text costs tens of ms): ``False``
    ends the search."""
    if before.shape != after.shape:
        return None
    mask = cv2.absdiff(to_gray(before), to_gray(after)) > threshold
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return None
    x0, y0 = int(xs.min()), int(ys.min())
    box = (x0, y0, int(xs.max()) - x0 + 1, int(ys.max()) - y0 + 1)
    if box[3] > 2 * MAX_GLYPH_H:
        return None  # taller than any line of text (a world that moved): no glyph search
    # A sign, a caret or a small letter alone is too little of a line to follow: take in
    # its neighbours, and the ascenders and descenders of the line's other letters.
    pad, up = 2 * box[3], box[3] // 2
    wx0, wx1 = max(0, x0 - pad), min(after.shape[1], x0 + box[2] + pad)
    wy0, wy1 = max(0, y0 - up), min(after.shape[0], y0 + box[3] + up)
    wide = (wx0, wy0, wx1 - wx0, wy1 - wy0)
    if not any(text_lines(img[wy0:wy1, wx0:wx1], 1) for img in (before, after)):
        return None  # no text where it changed: no line to follow (and following costs)
    if worth is not None and not worth(wide):
        return None
    lines = [around(img, wide) or wide for img in (before, after)]
    left, top = min(b[0] for b in lines), min(b[1] for b in lines)
    right = max(b[0] + b[2] for b in lines)
    bottom = max(b[1] + b[3] for b in lines)
    rows = [text_lines(img[top:bottom, left:right], 2) for img in (before, after)]
    if not any(rows) or any(len(r) > 1 for r in rows):
        return None
    # a line fills its box: a word found in a box much taller than it moved, or went
    if any(r and r[0].box[3] < 0.5 * (bottom - top) for r in rows):
        return None
    return (left, top, right - left, bottom - top)


def _alnum(text: str) -> str:
    """The letters and digits of a text (:func:`~kgagent.records.label_key`): a text
    reader reads a field's caret as a sign (``|``, ``:``, ``]``), never as these."""
    return "".join(ch for ch in label_key(text) if ch.isalnum())


def telling(typed: str) -> bool:
    """Whether typed text, read back, tells a field: a letter, or two characters or more
    (a lone digit read back may be a game's count that changed: Crafter makes a tool
    with a digit key and shows how many it has)."""
    t = _alnum(typed)
    return len(t) >= 2 or any(ch.isalpha() for ch in t)


#: What a text reader makes of a caret (a thin upright bar) among letters and digits.
CARET_READS = frozenset("il1j")


def _uncareted(text: str) -> list[str]:
    """``text``, and ``text`` without a last character that may be a caret as read."""
    return [text, text[:-1]] if text and text[-1] in CARET_READS else [text]


def entered(after: str, before: str, typed: str) -> bool:
    """Whether a line that read ``before`` reads ``after`` once ``typed`` is entered at
    its end: its letters and digits end with the typed ones, after what it showed before.
    A reader's and a field's slack: either reading may end in a caret read as a letter
    (:data:`CARET_READS`); a field too narrow for its text scrolls (the line may lose as
    many characters at its start as were entered, and one more); a line that read
    nothing before held at most one glyph. ``False`` when what was typed cannot tell
    (:func:`telling`)."""
    if not telling(typed):
        return False
    t = _alnum(typed)
    return any(
        _appended(a, b, t, len(typed))
        for a in _uncareted(_alnum(after))
        for b in _uncareted(_alnum(before))
    )


def _appended(a: str, b: str, t: str, n: int) -> bool:
    """:func:`entered` for one reading of each line (letters and digits only)."""
    if len(a) < 2 or not a.endswith(t):
        return False
    rest = a[: len(a) - len(t)]
    if not b:  # nothing read before: at most one glyph there, too few to read
        return len(rest) <= 1
    return b.endswith(rest) and len(b) - len(rest) <= n + 1


def overlaps(a: Box, b: Box) -> bool:
    """Whether two line boxes are one line: they overlap across, and over at least half
    the lower one's height."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    across = min(ax + aw, bx + bw) - max(ax, bx)
    down = min(ay + ah, by + bh) - max(ay, by)
    return across > 0 and down >= 0.5 * min(ah, bh)


class Fields:
    """The text lines of this run where typed text was read back (see the module
    docstring)."""

    def __init__(self) -> None:
        self.boxes: list[Box] = []

    def at(self, box: Box) -> bool:
        return any(overlaps(box, b) for b in self.boxes)

    def add(self, box: Box) -> None:
        self.boxes.append(box)
        del self.boxes[:-MAX_FIELDS]


def echo(
    before: np.ndarray,
    after: np.ndarray,
    typed: str,
    fields: Fields,
    *,
    threshold: int,
    around: Callable[[np.ndarray, Box], Box | None],
    read: Callable[[Sequence[np.ndarray]], list[str]],
) -> bool:
    """Whether a step that ended in keys only changed a text field: one line changed
    (:func:`typed_line`), and it is a field line already (``fields``: then any key
    counts, typing, erasing, moving the caret, selecting), or it typed text that tells
    (``typed``, the text of :func:`~kgagent.actions.text_entry`, :func:`telling`; ``""``
    when its end typed nothing) and that is read back at the line's end (:func:`entered`; the line
    then becomes one of ``fields``). ``read``: the text of each crop.

    Before a line is followed, the changed place must touch a field, or its reading with
    its neighbours must end with the typed text (the line's end is where it was typed):
    a game's pictures that pass for text are not followed."""
    text = typed
    if not fields.boxes and not telling(text):
        return False
    t = _alnum(text)

    def worth(near: Box) -> bool:
        if fields.at(near):
            return True
        if not telling(text):
            return False
        x, y, w, h = near
        (now,) = read([after[y : y + h, x : x + w]])
        return any(a.endswith(t) for a in _uncareted(_alnum(now)))

    line = typed_line(before, after, threshold, around, worth)
    if line is None:
        return False
    if fields.at(line):
        return True
    if not telling(text):
        return False
    x, y, w, h = line
    was, now = read([before[y : y + h, x : x + w], after[y : y + h, x : x + w]])
    if not entered(now, was, text):
        return False
    fields.add(line)
    return True
