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
        help="Output format: an aligned table for people, or json / csv / jsonl for programs.",
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


def render(rows: list[dict[str, Any]], fmt: str = "table", count: bool = True) -> str:
    """The text ``emit`` prints (without a trailing newline for table output); ``count``:
    the table ends with its number of rows."""
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

    def line(vals: list[str]) -> str:
        parts = [_pad(v, w, right=num) for v, w, num in zip(vals, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(cols), "  ".join("-" * w for w in widths)]
    out.extend(line(t) for t in text)
    if count:
        out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def emit(rows: list[dict[str, Any]], fmt: str = "table") -> None:
    """Print ``rows`` in ``fmt`` on stdout."""
    text = render(rows, fmt)
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
        click.echo(render([{"key": k, "value": v} for k, v in record.items()], fmt, count=False))


def display_width(text: str) -> int:
    """The columns ``text`` takes in a terminal: wide and full-width characters (CJK,
    East Asian width W or F) take two, combining marks none, the others one."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display columns (:func:`display_width`)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def _is_number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _one_line(s: str) -> str:
    """A table cell on one line, with nothing a terminal would run (:func:`visible`)."""
    return visible(s.replace("\t", " "))
