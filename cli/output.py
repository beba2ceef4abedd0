"""Shared output formatting for commands that print rows.

``emit(rows, fmt)`` prints a list of dicts as an aligned ``table`` (the default,
for people), ``json`` (one array), ``jsonl`` (one object per line) or ``csv``
(with a header). Values that JSON cannot hold natively (engine node/rel dicts
with nested ids, dates, bytes, numpy scalars, ...) are still printed: nested
values as compact JSON, anything else with ``str``. The table aligns by display width
(:func:`display_width`: a CJK character takes two columns of a terminal), not by the
number of characters.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import math
import shutil
import sys
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from kgagent.textsafe import CsvWriter, visible

FORMATS = ("table", "json", "csv", "jsonl")

F = TypeVar("F", bound=Callable[..., Any])


def format_option(func: F) -> F:
    """``--format table|json|csv|jsonl`` (default ``table``) as the ``fmt`` argument."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS, case_sensitive=False),
        default="table",
        show_default=True,
        help="Output format: an aligned table for people (on a terminal, cut to its width), "
        "or json / csv / jsonl for programs.",
    )(func)


def jsonable(value: Any) -> Any:
    """A JSON-serialisable copy of ``value`` (never fails)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):  # a whole number stays one (an INT128 sum)
        whole = value.is_finite() and value.as_tuple().exponent >= 0
        return int(value) if whole else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return jsonable(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        try:
            return jsonable(tolist())
        except (TypeError, ValueError):
            pass
    return str(value)


def cell(value: Any) -> str:
    """One value as text for table and csv output."""
    v = jsonable(value)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return str(v)


def columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    out: dict[str, None] = {}
    for r in rows:
        for k in r:
            out.setdefault(str(k), None)
    return list(out)


def render(
    rows: list[dict[str, Any]], fmt: str = "table", count: bool = True, width: int | None = None
) -> str:
    """The text ``emit`` prints (without a trailing newline for table output); ``count``:
    the table ends with its number of rows. ``width``: a table wider than this many
    columns has its widest text columns cut to fit (:func:`fit`), and says so."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    rows = [{str(k): v for k, v in r.items()} for r in rows]
    cols = columns(rows)
    if fmt == "json":
        return json.dumps([jsonable(r) for r in rows], ensure_ascii=False, indent=2)
    if fmt == "jsonl":
        return "\n".join(json.dumps(jsonable(r), ensure_ascii=False) for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        w = CsvWriter(buf)
        if cols:
            w.writerow(cols)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in cols])
        return buf.getvalue().rstrip("\n")
    if not rows:
        return "(no rows)"
    text = [[_one_line(cell(r.get(c))) for c in cols] for r in rows]
    widths = [
        max(display_width(c), *(display_width(t[i]) for t in text)) for i, c in enumerate(cols)
    ]
    numeric = [all(_is_number(r.get(c)) for r in rows) for c in cols]
    cut = width is not None and fit(widths, cols, numeric, width)
    if cut:
        text = [[_cut(v, w) for v, w in zip(t, widths)] for t in text]

    def line(vals: list[str]) -> str:
        parts = [_pad(v, w, right=num) for v, w, num in zip(vals, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(cols), "  ".join("-" * w for w in widths)]
    out.extend(line(t) for t in text)
    if count:
        out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    if cut:
        out.append(CUT_NOTE)
    return "\n".join(out)


#: what a table cut to the terminal's width ends with
CUT_NOTE = "(cut to fit: --format json gives whole values)"
#: the fewest columns a cut text column keeps (its header's width when wider)
MIN_CUT_WIDTH = 8


def fit(widths: list[int], cols: list[str], numeric: list[bool], width: int) -> bool:
    """Narrow the widest text columns (in place) until the table's lines fit ``width``
    columns, keeping the first column (what a row is named by: a log, a field, a query),
    headers and numbers whole; whether any was narrowed."""
    room = width - 2 * (len(widths) - 1)
    floor = [
        w if num or i == 0 else min(w, max(display_width(c), MIN_CUT_WIDTH))
        for i, (w, c, num) in enumerate(zip(widths, cols, numeric))
    ]
    cut = False
    while sum(widths) > room:
        i = max(range(len(widths)), key=lambda k: widths[k] - floor[k])
        if widths[i] <= floor[i]:
            break  # as narrow as it goes: the terminal wraps the rest
        widths[i] -= 1
        cut = True
    return cut


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` display columns, ending in ``…`` when cut."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def emit(rows: list[dict[str, Any]], fmt: str = "table") -> None:
    """Print ``rows`` in ``fmt`` on stdout; a table on a terminal fits its width."""
    text = render(rows, fmt, width=terminal_width())
    if text:
        click.echo(text)


def emit_record(record: dict[str, Any], fmt: str = "table", table: str | None = None) -> None:
    """One record (a summary, an info block): ``table`` (or key/value lines) for people,
    one object in ``json`` / ``jsonl`` / ``csv`` for programs."""
    if fmt.lower() != "table":
        emit([record], fmt)
    elif table is not None:
        click.echo(table)
    else:  # a record's fields, not rows: no count under them
        pairs = [{"key": k, "value": v} for k, v in record.items()]
        click.echo(render(pairs, fmt, count=False, width=terminal_width()))


def terminal_width() -> int | None:
    """The width of the terminal stdout is, or None when it is not one (a pipe or a file
    gets every value whole; ``$COLUMNS`` wins, as in ``shutil.get_terminal_size``)."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((120, 24)).columns


def display_width(text: str) -> int:
    """The columns ``text`` takes in a terminal: wide and full-width characters (CJK,
    East Asian width W or F) take two, combining marks none, the others one."""
    return sum(_char_width(ch) for ch in text)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display columns (:func:`display_width`)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _is_number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _one_line(s: str) -> str:
    """A table cell on one line, with nothing a terminal would run (:func:`visible`)."""
    return visible(s.replace("\t", " "))
