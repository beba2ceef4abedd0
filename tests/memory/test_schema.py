"""schema/schema.cypher (the DDL people read) is exactly what the migrations build."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.errors import QueryError
from kgagent.memory import Memory, migrations, queries

_CREATE = re.compile(r"^CREATE\s+(NODE|REL)\s+TABLE\s+(\w+)\s*\((.*)\)$", re.S | re.I)


def _items(body: str) -> list[str]:
    """The comma-separated items of a table definition (commas inside parentheses kept)."""
    out, depth, cur = [], 0, ""
    for ch in body:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def parse_ddl(text: str) -> dict[str, dict]:
    """{table: {kind, columns [(name, TYPE)], key, ends (from, to)}} of CREATE TABLE statements."""
    tables: dict[str, dict] = {}
    for stmt in migrations.split(text):
        m = _CREATE.match(stmt.strip())
        assert m, f"not a CREATE TABLE statement: {stmt[:60]!r}"
        kind, name, body = m.group(1).upper(), m.group(2), m.group(3)
        t = {"kind": kind, "columns": [], "key": None, "ends": None}
        for item in _items(body):
            if pk := re.fullmatch(r"PRIMARY\s+KEY\s*\(\s*(\w+)\s*\)", item, re.I):
                t["key"] = pk.group(1)
            elif ends := re.fullmatch(r"FROM\s+(\w+)\s+TO\s+(\w+)", item, re.I):
                t["ends"] = (ends.group(1), ends.group(2))
            else:
                col, typ = item.split()
                t["columns"].append((col, typ.upper()))
        tables[name] = t
    return tables


def built_schema(m: Memory) -> dict[str, dict]:
    """The same description, read from a memory's catalogue."""
    tables: dict[str, dict] = {}
    for r in m.run_named("catalog_tables"):
        name, kind = r["name"], r["type"].upper()
        if name == migrations.BOOKKEEPING:
            continue
        info = m.cypher(f"CALL table_info('{name}') RETURN *")
        columns = [(c["name"], c["type"]) for c in info]
        # The named catalogue query the archive uses says the same.
        named = m.run_named(f"catalog_columns_{name.lower()}")
        assert [(c["name"], c["type"]) for c in named] == columns
        keys = [c["name"] for c in info if c.get("primary key")]
        ends = None
        if kind == "REL":
            conn = m.cypher(f"CALL show_connection('{name}') RETURN *")
            assert len(conn) == 1
            ends = (conn[0]["source table name"], conn[0]["destination table name"])
        tables[name] = {
            "kind": kind,
            "columns": columns,
            "key": keys[0] if keys else None,
            "ends": ends,
        }
    return tables


def test_schema_file_equals_what_the_migrations_build(tmp_path: Path) -> None:
    ddl = parse_ddl(resources.files("kgagent.schema").joinpath("schema.cypher").read_text())
    assert {"State", "Skill", "SIMILAR", "SKILL_EDGE"} <= set(ddl)  # the parser found tables
    with Memory.open(tmp_path / "memory", Config()) as m:
        built = built_schema(m)
    assert built == ddl


def test_the_ddl_parser_sees_a_difference() -> None:
    """The comparison above would notice a changed column, key or end."""
    text = resources.files("kgagent.schema").joinpath("schema.cypher").read_text()
    base = parse_ddl(text)
    for old, new in (
        ("visits INT64", "visits DOUBLE"),
        (
            "PRIMARY KEY(id));\nCREATE NODE TABLE Skill",
            "PRIMARY KEY(thumbnail));\nCREATE NODE TABLE Skill",
        ),
        ("USES(FROM Skill TO Object", "USES(FROM State TO Object"),
    ):
        assert old in text
        assert parse_ddl(text.replace(old, new)) != base


def test_every_table_has_its_catalogue_and_archive_queries(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "memory", Config()) as m:
        names = [r["name"] for r in m.run_named("catalog_tables")]
    have = queries.load_all()
    for name in names:
        if name == migrations.BOOKKEEPING:
            continue
        for prefix in ("catalog_columns_", "archive_export_", "archive_load_"):
            assert f"{prefix}{name.lower()}" in have, (prefix, name)


@pytest.mark.parametrize("name", ["tx_begin", "tx_begin_read_only", "tx_commit", "tx_rollback"])
def test_transaction_statements_are_internal_named_queries(name: str, tmp_path: Path) -> None:
    q = queries.get(name)
    assert q.internal and q.source == "_transaction.cypher"
    assert name not in {p.name for p in queries.public()}
    with Memory.open(tmp_path / "memory", Config()) as m:
        with pytest.raises(QueryError, match="internal to the memory"):
            m.run_named(name, write=True)
