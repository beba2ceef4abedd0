"""`kgagent query`: run Cypher against the experience graph.

The query comes from the argument, ``--file``, standard input (when neither is
given and stdin is not a terminal) or ``--name`` (a named query from
``queries/``, parameters with ``--param key=value``). Read-only unless
``--write``: the memory is opened read-only and a query that writes is refused
before it runs; a query that reaches files, extensions or settings is refused
unless ``--allow-files`` (:mod:`kgagent.memory.guard`). Rows are printed as they
come, at most ``--limit``; the engine stops a query after ``--timeout`` seconds.
A read-only query runs in a child process that is killed past ``--timeout`` (when
the engine does not stop it) or ``--max-memory``, and whose crash is one line
(:mod:`kgagent.memory.isolated`). No logic lives here; it calls
:class:`kgagent.memory.Memory`.

Standard output that is not UTF-8 (``PYTHONIOENCODING=ascii``, a latin-1 terminal)
still takes every row: ``json`` and ``jsonl`` write a row that its encoding cannot hold
with JSON's ``\\uXXXX`` escapes (the same JSON), and ``csv`` writes such characters as
backslash escapes (``\\u8bb0``, ``\\xfc``) and says so on stderr at the end, never an
encoding error half-way through the rows.
"""

from __future__ import annotations

import codecs
import itertools
import json
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from kgagent.cli.common import (
    FiniteRange,
    NonEmptyPath,
    common_options,
    mark_writes,
    open_memory,
    own_process,
    read_input,
)
from kgagent.cli.output import cell, emit, jsonable

from kgagent.config import Config
from kgagent.errors import QueryError
from kgagent.textsafe import CsvWriter

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Rows printed unless --limit says otherwise: enough to read, bounded in memory.
DEFAULT_LIMIT = 10_000
#: Seconds a query may run unless --timeout says otherwise.
DEFAULT_TIMEOUT_S = 60.0
#: The largest --timeout (about 31 years; 0 is no limit): the engines take milliseconds
#: in 64 bits and refuse, past them, with a 300-digit number.
MAX_TIMEOUT_S = 1e9
#: The largest --max-memory (1 PiB): a byte count must fit an integer a process can
#: compare with.
MAX_MEMORY_GIB = float(2**20)


def parse_param(item: str) -> tuple[str, Any]:
    """``key=value``; the value is read as a TOML scalar when it is one (17, 0.5, true,
    "text", [1, 2]), else kept as the literal string (``state=s-123``)."""
    if "=" not in item:
        raise QueryError(f"--param {item!r} must look like key=value")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key.isidentifier():
        raise QueryError(f"--param {item!r}: {key!r} is not a parameter name")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return key, raw
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise QueryError(f"--param {key}: {value} is outside the engines' 64-bit integers")
    if isinstance(value, (bool, int, float, str, list)):
        return key, value
    return key, raw  # dates, tables: keep the text


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def list_rows() -> list[dict[str, Any]]:
    from kgagent.memory import queries

    return [
        {
            "name": q.name,
            "params": ", ".join(q.params),
            "writes": bool(q.writes),
            "description": q.doc,
            "file": q.source,
        }
        for q in queries.public()
    ]


@click.command("query")
@click.argument("text", required=False)
@click.option(
    "--file",
    "query_file",
    type=NonEmptyPath(exists=True, dir_okay=False, path_type=Path),
    help="Read the Cypher query from this file.",
)
@click.option("--name", "name", help="Run a named query from queries/ (see --list).")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Bind a query parameter (repeatable); values are TOML scalars when they parse "
    '(17, 0.5, true, "text"), else strings.',
)
@click.option("--list", "list_", is_flag=True, help="List the named queries with their parameters.")
@click.option(
    "--write",
    is_flag=True,
    help="Allow a query that writes (opens the memory read-write). Without it, writing is refused.",
)
@click.option(
    "--allow-files",
    is_flag=True,
    help="Allow a query that reaches files, extensions or settings (COPY, LOAD, EXPORT, "
    "ATTACH, INSTALL, CALL threads=…). Refused without it, even with --write.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0, max=sys.maxsize),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Print at most this many rows (a note on stderr says when more were left); 0: all.",
)
@click.option(
    "--timeout",
    type=FiniteRange(min=0, max=MAX_TIMEOUT_S),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Stop the query after this many seconds; 0: no limit.",
)
@click.option(
    "--max-memory",
    "max_memory_gib",
    type=FiniteRange(min=0.1, max=MAX_MEMORY_GIB),
    default=None,
    help="Stop a read-only query whose process grows past this many GiB "
    "(default: half of this machine's memory).",
)
@common_options()
def query_cmd(
    text: str | None,
    query_file: Path | None,
    name: str | None,
    params: tuple[str, ...],
    list_: bool,
    write: bool,
    allow_files: bool,
    limit: int,
    timeout: float,
    max_memory_gib: float | None,
    memory: Path,
    config: Config,
    fmt: str,
) -> None:
    """Run a Cypher query against the experience graph and print the rows.

    \b
    Examples:
      kgagent query "MATCH (s:State) RETURN s.id, s.visits ORDER BY s.visits DESC LIMIT 5"
      kgagent query --name hq_candidates --param state=s-0000001-1f904aca98
        # (a state's id, as the first example prints them)
      kgagent query --file q.cypher --format csv
      echo "MATCH (k:Skill) RETURN count(*)" | kgagent query --format json
    """
    if write:
        mark_writes()
    if list_:
        rows = list_rows()
        if fmt == "table":  # a line a terminal can hold; json/csv keep the whole text
            width = shutil.get_terminal_size((120, 24)).columns
            names = max((len(r["name"]) for r in rows), default=4)
            room = max(width - names - 24 - 6 - 10, 24)  # params 24, writes 6, gaps and margin
            for r in rows:
                r.pop("file")
                r["params"] = _cut(r["params"], 24)
                r["description"] = _cut(" ".join(str(r["description"]).split()), room)
        emit(rows, fmt)
        return
    sources = sum(x is not None for x in (text, query_file, name))
    if sources > 1:
        raise click.UsageError("give one of: a query, --file, --name")
    bound = dict(parse_param(p) for p in params)
    from kgagent.memory import guard, queries

    if name is not None:
        from kgagent.memory.core import refuse_internal

        named = queries.get(name)  # unknown name: a clear error before opening the memory
        refuse_internal(named)  # before the guard, which would ask for --write (BEGIN)
        text = named.text
    elif query_file is not None:
        text = read_input(query_file, "query file", QueryError)
    elif text is None:
        stdin = sys.stdin
        if stdin is None or stdin.isatty():
            raise click.UsageError("give a query, --file, --name, or pipe a query on stdin")
        text = read_input(stdin, "the query on standard input", QueryError)
    if not text or not text.strip():
        raise QueryError("the query is empty")
    # Refused before the memory is even opened: a read-only query never writes, and
    # nothing reaches files without --allow-files.
    verdict = guard.check(text, write=write, allow_files=allow_files)
    if name is None:
        unbound = [p for p in verdict.params if p not in bound]
        if unbound:
            raise QueryError(
                f"the query uses parameter(s) {', '.join('$' + p for p in unbound)}; "
                f"bind them with --param {unbound[0]}=..."
            )
    unused = [p for p in bound if p not in verdict.params]
    if unused:  # a misspelt name would otherwise bind nothing, silently
        takes = ", ".join(sorted(verdict.params)) or "none"
        raise QueryError(
            f"the query has no parameter {', '.join('$' + p for p in unused)} "
            f"(its parameters: {takes})"
        )
    if write:
        cut = _write_query(text, bound, name, memory, config, allow_files, timeout, fmt, limit)
    else:
        from kgagent.memory.isolated import child_rows, default_max_rss

        produce = _ReadQuery(memory, config, text, bound, name, allow_files, timeout)
        cap = int(max_memory_gib * 2**30) if max_memory_gib else default_max_rss()
        with child_rows(
            produce, timeout_s=timeout, max_rss_bytes=cap, jsonable=jsonable, fork=own_process()
        ) as rows:
            cut = _print_rows(rows, fmt, limit)
    if cut:
        click.echo(
            f"note: only the first {limit:,} row{'s are' if limit != 1 else ' is'} shown "
            f"(--limit {limit}); "
            "pass --limit 0 for all, or narrow the query",
            err=True,
        )


@dataclass(frozen=True)
class _ReadQuery:
    """A read-only query as the child process runs it (:mod:`kgagent.memory.isolated`):
    its own read-only connection, confined unless ``allow_files``. A class, not a
    closure, so that a fresh interpreter can receive it."""

    memory: Path
    config: Config
    text: str
    bound: dict[str, Any]
    name: str | None
    allow_files: bool
    timeout: float

    @contextmanager
    def __call__(self) -> Iterator[Iterator[dict[str, Any]]]:
        mem = open_memory(self.memory, self.config, write=False)
        if not self.allow_files:
            mem = _confined(mem, self.memory, self.config)
        try:
            if self.name is not None:
                mem.named_query(self.name, self.bound)  # internal or missing parameters: refused
            with mem.cypher_rows(
                self.text, self.bound, allow_files=self.allow_files, timeout=self.timeout
            ) as rows:
                yield rows
        except QueryError as e:
            raise _timed_out(e, self.timeout) from None
        finally:
            mem.close()


def _confined(mem: Any, memory: Path, config: Config) -> Any:
    """The memory opened again after the kernel confined this process: files readable
    beneath the memory and Python's code only, none writable, no TCP
    (:mod:`kgagent.memory.confine`). The first open loaded what the engine loads lazily;
    the engine's threads, started by the second, are confined too (the kernel confines
    a thread and the threads it starts)."""
    from kgagent.memory import queries
    from kgagent.memory.confine import confine, python_dirs

    queries.load_all()  # read from the package's files: before the doors close
    mem.close()
    confine([memory, *python_dirs()])
    return open_memory(memory, config, write=False)


def _write_query(
    text: str,
    bound: dict[str, Any],
    name: str | None,
    memory: Path,
    config: Config,
    allow_files: bool,
    timeout: float,
    fmt: str,
    limit: int,
) -> bool:
    """A ``--write`` query, in this process (a write is not cut off half-way by a kill):
    the engine's timeout stops it."""
    mem = open_memory(memory, config, write=True)
    try:
        if name is not None:
            mem.named_query(name, bound)
        try:
            with mem.cypher_rows(
                text, bound, write=True, allow_files=allow_files, timeout=timeout
            ) as rows:
                return _print_rows(rows, fmt, limit)
        except QueryError as e:
            raise _timed_out(e, timeout) from None
    finally:
        mem.close()


def _timed_out(e: QueryError, timeout: float) -> QueryError:
    """The engine's "interrupted" said as the --timeout it was."""
    if timeout and "interrupt" in str(e).lower():
        return QueryError(
            f"the query ran longer than --timeout {timeout:g} s and was stopped; "
            "narrow it, or give a larger --timeout (0: no limit)"
        )
    return e


def _print_rows(rows: Iterator[dict[str, Any]], fmt: str, limit: int) -> bool:
    """Print the rows in ``fmt``, at most ``limit`` (0: all); True when more were left.

    Only the table format holds its rows (it aligns columns); the others print as
    rows arrive, so memory stays bounded whatever the query returns.
    """
    fmt = fmt.lower()
    taken = rows if limit == 0 else itertools.islice(rows, limit)
    if fmt == "table":
        emit(list(taken), fmt)
    else:
        _stream(taken, fmt, lambda: getattr(rows, "columns", None))
    return limit > 0 and next(rows, None) is not None


def _stream(
    rows: Iterable[dict[str, Any]], fmt: str, columns: Callable[[], list[str] | None]
) -> None:
    """``columns()``: the result's columns, for the header of a CSV without rows (known
    once the rows began: after the loop)."""
    out = sys.stdout
    encoding = getattr(out, "encoding", None) or "utf-8"
    fits = _fits(encoding)
    if fmt == "jsonl":
        for r in rows:
            out.write(_json(jsonable(_keys(r)), fits) + "\n")
    elif fmt == "json":
        first = True
        for r in rows:
            item = _json(jsonable(_keys(r)), fits, indent=2)
            out.write(("[" if first else ",") + "\n  " + item.replace("\n", "\n  "))
            first = False
        out.write("[]\n" if first else "\n]\n")
    else:  # csv
        w = CsvWriter(out)
        cols: list[str] | None = None
        escaped = 0
        for r in rows:
            r = _keys(r)
            if cols is None:
                cols = list(r)
                header = [_escape(c, encoding, fits) for c in cols]
                escaped += sum(a != b for a, b in zip(header, cols))
                w.writerow(header)
            values = [cell(r.get(c)) for c in cols]
            row = [_escape(v, encoding, fits) for v in values]
            escaped += sum(a != b for a, b in zip(row, values))
            w.writerow(row)
        known = [str(c) for c in columns() or []] if cols is None else []
        if known:  # no rows: the header alone, as a CSV reader expects
            header = [_escape(c, encoding, fits) for c in known]
            escaped += sum(a != b for a, b in zip(header, known))
            w.writerow(header)
        if escaped:
            click.echo(
                f"note: {escaped} value{'s' if escaped != 1 else ''} held characters that standard "
                f"output's encoding ({encoding}) cannot, written as backslash escapes (\\u8bb0); "
                "set PYTHONIOENCODING=utf-8 for the characters themselves",
                err=True,
            )
    out.flush()


def _fits(encoding: str) -> Any:
    """A test of whether ``encoding`` holds a text as it is."""
    encoder = codecs.getincrementalencoder(encoding)

    def fits(text: str) -> bool:
        if text.isascii():
            return True
        try:
            encoder().encode(text, final=True)
        except UnicodeEncodeError:
            return False
        return True

    return fits


def _json(value: Any, fits: Any, indent: int | None = None) -> str:
    """A row as JSON; with ``\\uXXXX`` escapes when stdout's encoding cannot hold its text."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return text if fits(text) else json.dumps(value, ensure_ascii=True, indent=indent)


def _escape(text: str, encoding: str, fits: Any) -> str:
    """A CSV value as stdout's encoding can hold it: what it cannot, as backslash escapes."""
    if fits(text):
        return text
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _keys(r: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in r.items()}
