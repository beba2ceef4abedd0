"""`kgagent query`: run Cypher against the experience graph.

The query comes from the argument, ``--file``, standard input (when neither is
given and stdin is not a terminal) or ``--name`` (a named query from
``queries/``, parameters with ``--param key=value``). Read-only unless
``--write``: the memory is opened read-only and a query that writes is refused
before it runs. No logic lives here; it calls :class:`kgagent.memory.Memory`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from kgagent.cli.common import config_options, memory_option
from kgagent.cli.output import emit, format_option

from kgagent.config import Config
from kgagent.errors import MemoryStoreError, QueryError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


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
    if isinstance(value, (bool, int, float, str, list)):
        return key, value
    return key, raw  # dates, tables: keep the text


def open_memory(path: Path, config: Config, *, write: bool) -> Any:
    """Open a memory for a CLI command, explaining a lock held by another process."""
    from kgagent.memory import Memory

    try:
        return Memory.open(path, config, read_only=not write, create=False)
    except MemoryStoreError as e:
        msg = str(e)
        if "in use by another process" in msg:
            raise MemoryStoreError(
                f"{msg}. The kuzu engine lets only one process open a memory at a time: stop the "
                "agent first, or use the ladybug engine (memory.engine=ladybug), whose read-only "
                "readers can query while an agent runs"
                if "kuzu" in msg
                else f"{msg}. Stop the process that holds it read-write and try again"
            ) from None
        raise


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
        for q in sorted(queries.load_all().values(), key=lambda q: (q.source, q.name))
    ]


@click.command("query")
@click.argument("text", required=False)
@click.option(
    "--file",
    "query_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
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
@format_option
@memory_option
@config_options
def query_cmd(
    text: str | None,
    query_file: Path | None,
    name: str | None,
    params: tuple[str, ...],
    list_: bool,
    write: bool,
    fmt: str,
    memory: Path,
    config: Config,
) -> None:
    """Run a Cypher query against the experience graph and print the rows.

    \b
    Examples:
      kgagent query "MATCH (s:State) RETURN s.id, s.visits ORDER BY s.visits DESC LIMIT 5"
      kgagent query --name hq_candidates --param state=s-0123456789abcdef
      kgagent query --file q.cypher --format csv
      echo "MATCH (k:Skill) RETURN count(*)" | kgagent query --format json
    """
    if list_:
        emit(list_rows(), fmt)
        return
    sources = sum(x is not None for x in (text, query_file, name))
    if sources > 1:
        raise click.UsageError("give one of: a query, --file, --name")
    bound = dict(parse_param(p) for p in params)
    if name is None:
        if query_file is not None:
            text = query_file.read_text(encoding="utf-8")
        elif text is None:
            stdin = sys.stdin
            if stdin is None or stdin.isatty():
                raise click.UsageError("give a query, --file, --name, or pipe a query on stdin")
            text = stdin.read()
        if not text or not text.strip():
            raise QueryError("the query is empty")
    from kgagent.memory import queries

    if name is not None:
        queries.get(name)  # unknown name: a clear error before opening the memory
        kw = queries.writes(queries.get(name).text)
    else:
        kw = queries.writes(text)
        unbound = [
            p
            for p in dict.fromkeys(queries._PARAM.findall(queries.strip_strings(text)))
            if p not in bound
        ]
        if unbound:
            raise QueryError(
                f"the query uses parameter(s) {', '.join('$' + p for p in unbound)}; "
                f"bind them with --param {unbound[0]}=..."
            )
    if kw and not write:
        # Refused before the memory is even opened: a read-only query never writes.
        from kgagent.errors import ReadOnlyViolation

        raise ReadOnlyViolation(f"this query writes ({kw}); pass --write to allow it")
    mem = open_memory(memory, config, write=write)
    try:
        if name is not None:
            rows = mem.run_named(name, bound, write=write)
        else:
            rows = mem.cypher(text, bound, write=write)
    finally:
        mem.close()
    emit(rows, fmt)
