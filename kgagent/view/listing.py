"""Lists that grow with the memory, kept bounded on the page.

A memory of 100,046 states put every state into the "neighbourhood of" dropdown (6.5 MB
of options in one layout) and every one of 20,000 skills into the library table (4.3 MB):
headless Chromium never finished the page. So nothing the page holds is a whole list:

* a dropdown offers at most :data:`OPTION_LIMIT` options, found on the server as the user
  types (:class:`Choices`), with the chosen one always among them and a last line saying
  how many more match;
* a table holds one page (:data:`PAGE_SIZE` rows, at most :data:`PAGE_MAX`); filtering,
  sorting and paging run on the server over every row (:func:`table_page`), with the
  table's own filter language (:func:`parse_filter`).

What a request asks the server to do is bounded too, since any web page can make the
browser ask (a plain GET of ``/download/skills.csv?filter=...``): the time grows with each
search word, filter clause and sort key (on 20,000 skills, 200 filter clauses took 1.6 s,
a 200-word search 2.9 s). A request beyond :data:`SEARCH_MAX` characters or
:data:`SEARCH_TERMS` words, :data:`FILTER_MAX` characters or :data:`FILTER_CLAUSES`
clauses, or :data:`SORT_MAX` sort keys is refused whole (:class:`Refused`), never cut
short: a cut answer would pass for the one asked for.
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Options a dropdown offers at most (besides fixed ones such as "all runs").
OPTION_LIMIT = 50
#: Rows a table page shows unless the page asks for another size; never more than PAGE_MAX.
PAGE_SIZE = 25
PAGE_MAX = 200
#: The value of the line that says how many more options match (disabled: never chosen).
MORE = "\x00more"
#: A dropdown search: its length and words. Labels are a few words ("s12 ×5", "R3 · cardgame
#: seed 1 · 100 steps"); each word is one pass over every option (about 15 ms on 20,000).
SEARCH_MAX = 200
SEARCH_TERMS = 8
#: A table filter: its length and clauses. The filter row writes one clause per column (the
#: skills table has 12, the clusters 5); each clause is a test of every row: 12 that keep
#: all of 20,000 rows take about 0.6 s (24: 1.2 s on a busy 2-core machine).
FILTER_MAX = 2000
FILTER_CLAUSES = 12
#: Sort keys a request may send. The table sorts by one column (DataTable's single sort
#: mode); a key repeated or on a column the table lacks changes no order and is dropped,
#: so more keys than a table has columns (12, 5) are not a request the page makes. Each
#: key is one sort of every row: 12 keys took 0.8 s on 20,000 rows.
SORT_MAX = 16


class Refused(ValueError):
    """A request beyond the bounds above: answered with this message, not computed."""


class PerSnapshot:
    """Values derived from one snapshot, computed once per read rather than once per
    request (a dropdown searched as the user types; a table paged, sorted and filtered).

    Holds the snapshot weakly: a reread drops what was derived from the one before."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ref: weakref.ref | None = None
        self._values: dict[Any, Any] = {}

    def get(self, snap: Any, key: Any, make: Callable[[], T]) -> T:
        with self._lock:
            if self._ref is None or self._ref() is not snap:
                self._ref, self._values = weakref.ref(snap), {}
            if key in self._values:
                return self._values[key]
        value = make()
        with self._lock:
            if self._ref is not None and self._ref() is snap:
                self._values[key] = value
        return value


@dataclass
class Choices:
    """The options a dropdown may offer, best first; the page gets a bounded few of them.

    A search matches an option when each of its words is part of the option's label or
    value (ignoring case), as the dropdown's own filter does in the browser, so the
    browser keeps what the server found. An option one of whose words (or its value) is a
    searched word comes first, then one with a word that begins with it, then the rest,
    each in the given order: ``s12`` finds state 12 before s120..s129 and the 11,000
    states of a large memory whose number contains 12."""

    options: list[dict[str, Any]]
    _words: list[tuple[str, ...]] = field(default_factory=list, repr=False)
    _index: dict[Any, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._words = [
            (str(o["value"]).lower(), *str(o["label"]).lower().split()) for o in self.options
        ]
        self._index = {o["value"]: i for i, o in enumerate(self.options)}

    def __len__(self) -> int:
        return len(self.options)

    def offer(
        self,
        search: Any = None,
        selected: Any = None,
        *,
        limit: int = OPTION_LIMIT,
        fixed: Sequence[dict[str, Any]] = (),
        what: str = "options",
    ) -> list[dict[str, Any]]:
        """``fixed`` options, then at most ``limit`` matches of ``search`` (all options
        when it is empty), the ``selected`` one if it is not among them, and a disabled
        last line when more match than are offered."""
        limit = max(int(limit), 0)
        try:
            terms = search_terms(search)
        except Refused as e:  # the chosen one stays; the last line says why nothing matches
            return self._refused(str(e), selected, fixed, search)
        if terms:
            tiers: list[list[int]] = [[], [], []]
            total = 0
            for i, words in enumerate(self._words):
                tier = _tier(terms, words)
                if tier is None:
                    continue
                total += 1
                if len(tiers[tier]) < limit:
                    tiers[tier].append(i)
            found = (tiers[0] + tiers[1] + tiers[2])[:limit]
        else:
            total, found = len(self.options), list(range(min(limit, len(self.options))))
        out = self._with_selected([*fixed, *(self.options[i] for i in found)], selected)
        if total > len(found):
            out.append(
                _line(f"showing {len(found):,} of {total:,} {what}: type to find others", search)
            )
        return out

    def _with_selected(self, out: list[dict[str, Any]], selected: Any) -> list[dict[str, Any]]:
        """``out`` and the ``selected`` option, so that the dropdown keeps its value."""
        if selected is None or not isinstance(selected, str | int | float | bool):
            return out
        if selected not in {o["value"] for o in out} and selected != MORE:
            i = self._index.get(selected)
            out.append(
                self.options[i] if i is not None else {"label": str(selected), "value": selected}
            )
        return out

    def _refused(
        self, why: str, selected: Any, fixed: Sequence[dict[str, Any]], search: Any
    ) -> list[dict[str, Any]]:
        return [*self._with_selected(list(fixed), selected), _line(why, search)]


def _line(label: str, search: Any) -> dict[str, Any]:
    """A disabled last line of a dropdown (never chosen)."""
    return {
        "label": label,
        "value": MORE,
        "disabled": True,
        # the dropdown filters in the browser too; this keeps the line there
        "search": search if isinstance(search, str) else "",
    }


def search_terms(search: Any) -> list[str]:
    """The words of a dropdown search (none when it is not text); :class:`Refused` beyond
    :data:`SEARCH_MAX` characters or :data:`SEARCH_TERMS` words."""
    if not isinstance(search, str):
        return []
    if len(search) > SEARCH_MAX:
        raise Refused(f"search not run: longer than {SEARCH_MAX} characters")
    terms = search.lower().split()
    if len(terms) > SEARCH_TERMS:
        raise Refused(f"search not run: more than {SEARCH_TERMS} words")
    return terms


def _tier(terms: list[str], words: tuple[str, ...]) -> int | None:
    """0: every term is a whole word; 1: each begins a word; 2: each is part of one;
    None: some term is in no word."""
    worst = 0
    for t in terms:
        if t in words:
            continue
        if any(w.startswith(t) for w in words):
            worst = max(worst, 1)
        elif any(t in w for w in words):
            worst = 2
        else:
            return None
    return worst


# --------------------------------------------------------------------------- tables
@dataclass
class Page:
    """One page of a table, and what it was taken from."""

    rows: list[dict[str, Any]]
    page: int  # 0-based, within range
    page_count: int
    matching: int  # rows that pass the filter
    total: int  # rows in all
    first: int  # 1-based number of the first row shown (0 when none)
    ignored: list[str] = field(default_factory=list)  # filter clauses not understood

    def note(self, noun: str) -> str:
        """``showing 25 of 1,234 skills that match the filter (rows 26-50)``."""
        if not self.matching:
            return f"none of the {self.total:,} {noun} match the filter"
        last = self.first + len(self.rows) - 1
        which = "" if self.matching == self.total else " that match the filter"
        text = f"showing {len(self.rows):,} of {self.matching:,} {noun}{which}"
        if len(self.rows) < self.matching:
            text += f" (rows {self.first:,}–{last:,})"
        if self.ignored:
            text += "; filter not understood, ignored: " + ", ".join(self.ignored)
        return text


def table_rows(
    rows: Sequence[dict[str, Any]],
    *,
    sort_by: Any = None,
    filter_query: Any = "",
    columns: Sequence[str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every row that passes the filter, sorted: (rows, filter clauses not understood).

    :class:`Refused` for a filter or a sort beyond the bounds (module docstring); a sort
    key on a column not in ``columns`` (when given) is dropped, as it orders nothing."""
    query = filter_query if isinstance(filter_query, str) else ""
    if len(query) > FILTER_MAX:
        raise Refused(f"filter not applied: longer than {FILTER_MAX:,} characters")
    keys = _sort_keys(sort_by, columns)  # refused before the filter's work
    clauses, ignored = parse_filter(query)
    kept = [r for r in rows if all(c.holds(r) for c in clauses)]
    for col, desc in reversed(keys):
        present = [r for r in kept if r.get(col) not in (None, "")]
        absent = [r for r in kept if r.get(col) in (None, "")]
        present.sort(key=lambda r, c=col: _sortable(r[c]), reverse=desc)
        kept = present + absent  # empty cells last, either way
    return kept, ignored


def table_page(
    rows: Sequence[dict[str, Any]],
    *,
    page: Any = 0,
    size: Any = PAGE_SIZE,
    sort_by: Any = None,
    filter_query: Any = "",
    columns: Sequence[str] | None = None,
) -> Page:
    """Filter every row, sort what passes, and cut out one page: a sort over the whole
    table, not over the rows on screen. ``page`` beyond the last is the last.
    :class:`Refused` as :func:`table_rows`."""
    kept, ignored = table_rows(rows, sort_by=sort_by, filter_query=filter_query, columns=columns)
    size = _int(size, PAGE_SIZE, 1, PAGE_MAX)
    count = max(1, math.ceil(len(kept) / size))
    page = _int(page, 0, 0, count - 1)
    shown = kept[page * size : (page + 1) * size]
    return Page(shown, page, count, len(kept), len(rows), page * size + 1 if shown else 0, ignored)


def _int(value: Any, default: int, lo: int, hi: int) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        n = default
    return min(max(n, lo), hi)


def _sort_keys(sort_by: Any, columns: Sequence[str] | None = None) -> list[tuple[str, bool]]:
    """(column, descending) of each sort key, each column once (the first key on it: a
    later one only breaks ties among equal values of that column, which it cannot)."""
    sort_by = sort_by if isinstance(sort_by, list) else []
    if len(sort_by) > SORT_MAX:
        raise Refused(f"sort not applied: more than {SORT_MAX} sort keys")
    out: dict[str, bool] = {}
    for s in sort_by:
        if isinstance(s, dict) and isinstance(s.get("column_id"), str):
            col = s["column_id"]
            if col not in out and (columns is None or col in columns):
                out[col] = s.get("direction") == "desc"
    return list(out.items())


def _sortable(v: Any) -> tuple[int, Any]:
    """Numbers before text, each in its own order (a column holds one kind)."""
    if isinstance(v, bool | int | float):
        return (0, float(v))
    return (1, str(v))


# The filter language of Dash's DataTable, as its filter row writes it (``{fitness} > 0.5
# && {status} scontains active``): one clause per column, joined by &&.
_FIELD = r"\{(?P<field>(?:[^{}\\]|\\.)+)\}"
_OP = (
    r"(?P<op>(?:[is])?(?:contains|eq|ne|lt|le|gt|ge)(?=\s|$)|datestartswith(?=\s|$)"
    r"|(?:[is])?(?:>=|<=|!=|=|<|>))"
)
_VALUE = (
    r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`"
    r"|(?:[^\s'\"`{}()\\]|\\.)+)"
)
_UNARY = r"is (?P<unary>blank|nil|num|str)"
_CLAUSE = re.compile(rf"^\s*{_FIELD}\s*(?:{_OP}\s*{_VALUE}|{_UNARY})\s*$", re.IGNORECASE)
_WORDS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@dataclass
class Clause:
    """One column's condition, evaluated as the DataTable evaluates it in the browser."""

    field: str
    op: str  # contains = != < <= > >= datestartswith blank nil num str
    value: Any = None
    fold: bool = False  # the i- prefix: ignore case

    def holds(self, row: dict[str, Any]) -> bool:
        v = row.get(self.field)
        if self.op == "blank":
            return v is None or v == ""
        if self.op == "nil":
            return v is None
        if self.op == "num":
            return isinstance(v, int | float) and not isinstance(v, bool)
        if self.op == "str":
            return isinstance(v, str)
        if v is None:
            return False
        want = self.value
        if self.op == "contains":
            if not (isinstance(v, str) or isinstance(want, str)):
                return False
            a, b = _text(v), _text(want)
            return (b.upper() in a.upper()) if self.fold else (b in a)
        if self.op == "datestartswith":
            return _text(v).startswith(_text(want))
        a, b = _number(v), _number(want)
        if a is None or b is None:
            a, b = _text(v), _text(want)
            if self.fold:
                a, b = a.upper(), b.upper()
        return {
            "=": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
        }[self.op]


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # as JavaScript writes 1.0
    return str(v)


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        f = float(str(v).strip())
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def parse_filter(query: str) -> tuple[list[Clause], list[str]]:
    """The clauses of a DataTable filter query, and the parts not understood (which
    filter nothing, as the table leaves out a clause it cannot read); :class:`Refused`
    beyond :data:`FILTER_CLAUSES` clauses."""
    clauses: list[Clause] = []
    ignored: list[str] = []
    parts = _split_and(query)
    if len(parts) > FILTER_CLAUSES:
        raise Refused(f"filter not applied: more than {FILTER_CLAUSES} clauses")
    for part in parts:
        m = _CLAUSE.match(part)
        if not m:
            ignored.append(part.strip())
            continue
        name = re.sub(r"\\(.)", r"\1", m["field"])
        if m["unary"]:
            clauses.append(Clause(name, m["unary"].lower()))
            continue
        op = m["op"].lower()
        fold = op[0] == "i" and op not in ("datestartswith",)
        if op[0] in "is" and op != "datestartswith":
            op = op[1:]
        op = _WORDS.get(op, op)
        raw = m["value"]
        if raw[0] in "'\"`" and raw[-1] == raw[0] and len(raw) >= 2:
            value: Any = re.sub(r"\\(.)", r"\1", raw[1:-1])
        else:
            raw = re.sub(r"\\(.)", r"\1", raw)
            num = _number(raw)
            value = num if num is not None else raw
        clauses.append(Clause(name, op, value, fold))
    return clauses, ignored


def _split_and(query: str) -> list[str]:
    """The query cut at each ``&&`` outside quotes."""
    parts, cur, quote, i = [], [], "", 0
    while i < len(query):
        c = query[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(query):
                cur.append(query[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
            cur.append(c)
        elif query.startswith("&&", i):
            parts.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]
