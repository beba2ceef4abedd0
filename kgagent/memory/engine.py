"""The graph engine adapter: the only module that imports ``kuzu`` or ``ladybug``.

Upstream Kùzu is archived (0.11.3); LadybugDB is its maintained continuation
with the same Python API and Cypher but a different file format. Both cannot
be imported into one process (their native modules register the same types),
so the engine is chosen once per process: ``memory.engine`` in the config, or
``KGAGENT_ENGINE`` in the environment (used by the test suite to run against
both).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from kgagent.errors import MemoryStoreError, QueryError

ENGINES = ("ladybug", "kuzu")


def engine_name(configured: str) -> str:
    name = os.environ.get("KGAGENT_ENGINE") or configured
    if name not in ENGINES:
        raise MemoryStoreError(f"unknown graph engine {name!r}; use one of {', '.join(ENGINES)}")
    other = "kuzu" if name == "ladybug" else "ladybug"
    if other in sys.modules and getattr(sys.modules[other], "Database", None) is not None:
        raise MemoryStoreError(
            f"this process already loaded the {other} engine; {name} cannot be loaded beside it "
            "(run one engine per process)"
        )
    return name


def _module(name: str) -> Any:
    try:
        mod = importlib.import_module(name)
    except ImportError as e:
        raise MemoryStoreError(f"graph engine {name!r} is not installed: pip install {name}") from e
    if not hasattr(mod, "Database") or not hasattr(mod, "Connection"):
        raise MemoryStoreError(
            f"the installed module {name!r} is not the graph database "
            "(PyPI's unrelated 'ladybug-core' also installs a module named ladybug); "
            "pip uninstall ladybug-core && pip install ladybug"
        )
    return mod


def engine_version(name: str) -> str:
    return str(getattr(_module(name), "__version__", "?"))


class GraphDB:
    """One open database and connection. Rows come back as plain dicts."""

    def __init__(
        self, path: Path, engine: str, *, read_only: bool = False, threads: int = 0
    ) -> None:
        self.engine = engine
        self.path = path
        self.read_only = read_only
        mod = _module(engine)
        try:
            self._db = mod.Database(str(path), read_only=read_only)
        except RuntimeError as e:
            msg = str(e).splitlines()[0]
            if "lock" in msg.lower():
                raise MemoryStoreError(
                    f"the memory at {path.parent} is in use by another process "
                    f"({engine} could not lock it): {msg}"
                ) from None
            raise MemoryStoreError(f"cannot open the graph database at {path}: {msg}") from None
        self._conn = mod.Connection(self._db)
        if threads > 0:
            # The agent's queries are small; one thread each avoids waking (and
            # waiting for) worker threads: per-step p95 10-25 % lower here
            # (docs/benchmarks.md, "What changed").
            self._conn.set_max_threads_for_exec(int(threads))
        self._in_tx = False

    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            res = self._conn.execute(query, params or {})
        except RuntimeError as e:
            raise QueryError(_one_line(e)) from None
        if isinstance(res, list):  # several statements
            res = res[-1]
        try:
            names = res.get_column_names()
            rows = []
            while res.has_next():
                rows.append(dict(zip(names, res.get_next())))
            return rows
        finally:
            res.close()

    def begin(self) -> None:
        self.execute("BEGIN TRANSACTION")
        self._in_tx = True

    def commit(self) -> None:
        self.execute("COMMIT")
        self._in_tx = False

    def rollback(self) -> None:
        if self._in_tx:
            self._in_tx = False
            try:
                self.execute("ROLLBACK")
            except QueryError:
                pass

    def table_names(self) -> set[str]:
        return {r["name"] for r in self.execute("CALL show_tables() RETURN *")}

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._db.close()


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or e.__class__.__name__
