"""Numbered schema migrations (yoyo/alembic style) for the graph database.

``migrations/NNNN_name.cypher`` files are applied in order, each in one
transaction; the database records every applied step in ``_Migration`` nodes.
Opening a memory that is older migrates it (the caller backs it up first);
opening one that is newer than this kgagent refuses.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources

from kgagent.errors import QueryError, SchemaVersionError
from kgagent.memory import queries
from kgagent.memory.engine import GraphDB
from kgagent.memory.queries import strip_strings

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.cypher$")
BOOKKEEPING = "_Migration"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def available() -> list[Migration]:
    out = []
    folder = resources.files("kgagent.migrations")
    for entry in folder.iterdir():
        m = _FILE.match(entry.name)
        if m:
            out.append(Migration(int(m.group(1)), m.group(2), tuple(split(entry.read_text()))))
    out.sort(key=lambda x: x.version)
    for i, mig in enumerate(out, start=1):
        if mig.version != i:
            raise SchemaVersionError(
                f"migrations are not numbered 0001.. without gaps (at {mig.version:04d})"
            )
    return out


def latest_version() -> int:
    migs = available()
    return migs[-1].version if migs else 0


def split(text: str) -> list[str]:
    """Statements of a migration file: ';' at the end of a line ends one."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    parts = re.split(r";\s*(?:\n|$)", body)
    return [p.strip() for p in parts if strip_strings(p).strip()]


def applied_version(db: GraphDB) -> int:
    if BOOKKEEPING not in db.table_names():
        return 0
    rows = db.execute(queries.get("migrations_applied").text)
    return max((int(r["version"]) for r in rows), default=0)


def pending(db: GraphDB) -> list[Migration]:
    current = applied_version(db)
    migs = available()
    newest = migs[-1].version if migs else 0
    if current > newest:
        raise SchemaVersionError(
            f"this memory has schema version {current}, newer than this kgagent knows ({newest}); "
            "upgrade kgagent (pip install -U kgagent) to open it"
        )
    return [m for m in migs if m.version > current]


def apply(db: GraphDB, migs: list[Migration]) -> list[int]:
    """Apply migrations in order, each atomically; returns the versions applied."""
    if BOOKKEEPING not in db.table_names():
        db.execute(queries.get("migrations_bootstrap").text)
    done = []
    for mig in migs:
        try:
            with db.transaction():
                for stmt in mig.statements:
                    db.execute(stmt)
                db.execute(
                    queries.get("migration_record").text,
                    {"version": mig.version, "name": mig.name, "now": time.time()},
                )
        except QueryError as e:
            raise SchemaVersionError(
                f"migration {mig.version:04d}_{mig.name} failed: {e}"
            ) from None
        done.append(mig.version)
    return done
