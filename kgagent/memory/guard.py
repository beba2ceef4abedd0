"""What a Cypher query may do: read the graph, write it, or reach outside the memory.

A raw query (``kgagent query``, :meth:`kgagent.memory.Memory.cypher`, the queries
``kgagent view`` runs) is read with :mod:`~kgagent.memory.cypher_lexer` and put
in up to two classes:

* **writes** the graph: ``CREATE``, ``MERGE``, ``SET``, ``DELETE``, ``REMOVE``,
  ``DROP``, ``ALTER``, ``COMMENT``, ``ANALYZE``, transaction control, a
  ``CALL`` that builds or drops an index. Allowed with ``write=True`` (``--write``).
* **files**: reaches files, extensions, other databases or settings: ``COPY``
  (to or from a file), ``EXPORT``/``IMPORT DATABASE``, ``LOAD`` (``LOAD FROM`` a
  file, ``LOAD EXTENSION`` — native code), ``INSTALL``, ``UNINSTALL``,
  ``UPDATE`` (an extension), ``FORCE INSTALL``, ``ATTACH``, ``DETACH`` (a
  database), ``USE``, ``CHECKPOINT``, ``GLOB``, ``CALL name = value`` (a
  setting: ``file_search_path``, ``home_directory``, ``threads``, ``timeout`` …)
  and a ``CALL`` of any table function not known to only read the catalogue
  (``read_csv_serial``, ``read_parquet``, ``json_scan`` …). Refused even with
  ``--write``, unless ``allow_files=True`` (``--allow-files``).

These keywords are not reserved in the dialect, so a variable named ``load`` is
refused too (write it in backticks); a property (after ``.``) is not a keyword.
The check runs on tokens, never on raw text: a quote in a comment, or a comment
marker in a string, cannot hide a statement. Not the only line of defence: a
query that is not ``--write`` also runs on a database opened read-only, or in a
read-only transaction, and ``kgagent query`` runs it in a process the kernel keeps
off the files (:mod:`kgagent.memory.confine`, where Linux has Landlock).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kgagent.errors import QueryError, ReadOnlyViolation
from kgagent.memory.cypher_lexer import Token, significant

#: Words that reach files, extensions, other databases or settings.
FILE_WORDS = frozenset(
    {
        "COPY",
        "EXPORT",
        "IMPORT",
        "LOAD",
        "INSTALL",
        "UNINSTALL",
        "UPDATE",
        "FORCE",
        "ATTACH",
        "USE",
        "CHECKPOINT",
        "GLOB",
    }
)
#: Words that write the graph.
WRITE_WORDS = frozenset(
    {
        "CREATE",
        "MERGE",
        "SET",
        "DELETE",
        "REMOVE",
        "DROP",
        "ALTER",
        "COMMENT",
        "ANALYZE",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "CHECKPOINT",
        "IMPORT",
    }
)
#: Table functions that only read the catalogue, the settings or the graph.
READ_CALLS = frozenset(
    {
        "SHOW_TABLES",
        "TABLE_INFO",
        "SHOW_CONNECTION",
        "CURRENT_SETTING",
        "DB_VERSION",
        "CATALOG_VERSION",
        "STORAGE_VERSION",
        "SHOW_FUNCTIONS",
        "SHOW_WARNINGS",
        "SHOW_ATTACHED_DATABASES",
        "SHOW_SEQUENCES",
        "SHOW_INDEXES",
        "SHOW_MACROS",
        "SHOW_GRAPHS",
        "SHOW_PROJECTED_GRAPHS",
        "SHOW_LOADED_EXTENSIONS",
        "SHOW_OFFICIAL_EXTENSIONS",
        "PROJECTED_GRAPH_INFO",
        "STATS_INFO",
        "STORAGE_INFO",
        "BM_INFO",
        "FILE_INFO",
        "FSM_INFO",
        "DISK_INFO",
        "DISK_SIZE_INFO",
        "QUERY_FTS_INDEX",
        "QUERY_VECTOR_INDEX",
        # graph algorithms over an in-memory projection
        "PROJECT_GRAPH",
        "PROJECT_GRAPH_CYPHER",
        "DROP_PROJECTED_GRAPH",
        "PAGE_RANK",
        "PR",
        "WCC",
        "WEAKLY_CONNECTED_COMPONENTS",
        "SCC",
        "SCC_KO",
        "STRONGLY_CONNECTED_COMPONENTS",
        "STRONGLY_CONNECTED_COMPONENTS_KOSARAJU",
        "KCORE",
        "K_CORE_DECOMPOSITION",
        "LOUVAIN",
    }
)
#: Table functions that write the database (indexes).
WRITE_CALLS = frozenset(
    {
        "CREATE_FTS_INDEX",
        "DROP_FTS_INDEX",
        "CREATE_VECTOR_INDEX",
        "DROP_VECTOR_INDEX",
        "CLEAR_WARNINGS",
    }
)


class FileAccessRefused(QueryError):
    """A query that would reach files, extensions or settings, without ``allow_files``."""


@dataclass(frozen=True)
class Verdict:
    """What a query does: the first construct that writes, and the first that reaches out."""

    writes: str | None = None
    files: str | None = None
    params: tuple[str, ...] = ()
    #: a flagged word written as a name (after ``AS``): the refusal suggests backticks
    named: str | None = None


@lru_cache(maxsize=512)
def classify(text: str) -> Verdict:
    """Read ``text`` token by token and say what it may do. The verdict depends on the
    text alone, so the verdicts of recent texts are kept (a merge or a view runs the same
    named queries thousands of times)."""
    toks = significant(text)
    writes: str | None = None
    files: str | None = None
    named: str | None = None
    for i, t in enumerate(toks):
        if t.kind != "word" or (i and _is_op(toks[i - 1], ".")):
            continue
        word = t.text.upper()
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if word == "CALL":
            kind, what = _call(toks, i)
            if kind == "files":
                files = files or what
            elif kind == "writes":
                writes = writes or what
            continue
        if word == "DETACH":
            if nxt is not None and nxt.kind == "word" and nxt.text.upper() == "DELETE":
                writes = writes or "DETACH DELETE"
            else:
                files = files or "DETACH"
            continue
        if word == "COPY" and not (nxt is not None and _is_op(nxt, "(")):
            writes = writes or "COPY"  # COPY <table> FROM …: a bulk load
        if word in FILE_WORDS:
            files = files or word
        if word in WRITE_WORDS:
            writes = writes or word
        after_as = i and toks[i - 1].kind == "word" and toks[i - 1].text.upper() == "AS"
        if after_as and (word in FILE_WORDS or word in WRITE_WORDS):
            named = named or t.text
    params = tuple(dict.fromkeys(t.value for t in toks if t.kind == "param"))
    return Verdict(writes, files, params, named)


def _is_op(t: Token, char: str) -> bool:
    return t.kind == "op" and t.text == char


def _call(toks: list[Token], i: int) -> tuple[str, str]:
    """``("files" | "writes" | "reads", what)`` for the CALL at ``toks[i]``."""
    name = toks[i + 1] if i + 1 < len(toks) else None
    if name is None or name.kind not in ("word", "name"):
        return "files", "CALL"
    fn = name.value.upper()
    after = toks[i + 2] if i + 2 < len(toks) else None
    if after is not None and _is_op(after, "="):
        return "files", f"CALL {name.value} = … (a setting)"
    if fn in READ_CALLS:
        return "reads", fn
    if fn in WRITE_CALLS:
        return "writes", f"CALL {name.value}"
    return "files", f"CALL {name.value}"


def params_of(text: str) -> list[str]:
    """The ``$parameters`` a query uses, in order of first use (strings and comments skipped)."""
    return list(classify(text).params)


def check(text: str, *, write: bool, allow_files: bool) -> Verdict:
    """Refuse ``text`` unless ``write`` / ``allow_files`` allow what it does; its verdict."""
    v = classify(text)
    # a keyword given as a name (`AS load`) reads as the keyword wherever it is used
    hint = f"; if {v.named} is a name, write it in backticks (`{v.named}`)" if v.named else ""
    if v.files and not allow_files:
        raise FileAccessRefused(
            f"this query reaches files, extensions or settings ({v.files}) and is refused, "
            f"even with --write; pass --allow-files to run it anyway{hint}"
        )
    if v.writes and not write:
        raise ReadOnlyViolation(f"this query writes ({v.writes}); pass --write to allow it{hint}")
    return v
