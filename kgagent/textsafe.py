"""Text the agent did not write, made safe where it goes out: a terminal and a CSV file.

What a memory holds as text (labels read from a program's screen, names a VLM gave,
anything ``kgagent query --write`` set) may come from a hostile program. Two places
would act on it rather than show it:

* a terminal runs the escape sequences of control characters (``ESC ] 0 ; … BEL`` sets
  its title, ``ESC [ 2 J`` clears it) and reorders text around bidirectional controls
  (U+202E shows ``abc‮txt.exe`` as ``abcexe.txt``): :func:`visible` writes them as
  escapes (``\\x1b``, ``\\u202e``);
* a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula
  (``=HYPERLINK(…)``): :class:`CsvWriter` with ``spreadsheet=True`` puts a ``'`` before
  such a text cell (OWASP's advice for CSV meant to be opened in one), and quotes every
  row that holds a carriage return, which Python's writer leaves bare with ``\\n`` line
  ends, so that a reader splits the row in two.
"""

from __future__ import annotations

import csv
import re
from typing import IO, Any

#: C0 and C1 control characters, DEL, and the Unicode controls of text direction.
HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible(text: str) -> str:
    """``text`` on one line, every control and direction character written as an escape."""
    return HIDDEN.sub(_escape, text)


#: What a spreadsheet takes as the start of a formula (OWASP, "CSV Injection").
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


class CsvWriter:
    """:func:`csv.writer` with ``\\n`` line ends whose rows survive their cells: a row
    with a carriage return in a cell is quoted whole (see the module). ``spreadsheet``:
    a text cell that a spreadsheet would run as a formula starts with ``'``; numbers are
    left as they are (``-3`` is a number there, not a formula)."""

    def __init__(self, out: IO[str], *, spreadsheet: bool = False) -> None:
        self._minimal = csv.writer(out, lineterminator="\n")
        self._all = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
        self._spreadsheet = spreadsheet

    def writerow(self, row: list[Any]) -> None:
        if self._spreadsheet:
            row = [_inert(v) for v in row]
        cr = any(isinstance(v, str) and "\r" in v for v in row)
        (self._all if cr else self._minimal).writerow(row)


def _inert(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA) and not _number(value):
        return "'" + value
    return value


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
