"""Which tables of a memory's graph are kgagent's, and which a user added.

A user can make tables of their own in a memory (``kgagent query --write "CREATE NODE
TABLE …"``). kgagent's own tables are the ones its named queries know: every table of
the schema has ``catalog_columns_<table>``, ``archive_export_<table>`` and
``archive_load_<table>`` (``queries/``). Export and merge carry kgagent's tables only,
so both refuse a memory holding other tables rather than leave them behind unsaid.
"""

from __future__ import annotations

from kgagent.memory import migrations, queries
from kgagent.memory.archive_format import columns_query, export_query, load_query
from kgagent.memory.engine import GraphDB


def table_queries(table: str) -> tuple[str, str, str]:
    """The names of the queries every kgagent table has: its columns, export and load."""
    return columns_query(table), export_query(table), load_query(table)


def is_kgagent_table(table: str) -> bool:
    """Whether ``table`` is kgagent's: one of its named queries exists (all should)."""
    named = queries.load_all()
    return any(q in named for q in table_queries(table))


def user_tables(db: GraphDB) -> list[str]:
    """The graph's tables that are not kgagent's, in an order they can be dropped in
    (rel tables first, a node table after the rel tables that may point at it)."""
    found = []
    for r in db.execute(queries.get("catalog_tables").text):
        name, kind = str(r["name"]), str(r["type"]).upper()
        if name != migrations.BOOKKEEPING and not is_kgagent_table(name):
            found.append((kind != "REL", name))
    return [name for _, name in sorted(found)]
