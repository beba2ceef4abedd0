"""The graph engine adapter: the only module that imports ``kuzu`` or ``ladybug``.

Upstream Kùzu is archived (0.11.3); LadybugDB is its maintained continuation
with the same Python API and Cypher but a different file format. Both cannot
be imported into one process (their native modules register the same types),
so the engine is chosen once per process: ``memory.engine`` in the config, or
``KGAGENT_ENGINE`` in the environment (used by the test suite to run against
both).

Errors are worded here, where they are raised: a failed open or query becomes one
line (:class:`MemoryStoreError`, :class:`QueryError`) that says what to do. Even
transaction control is a named query (``queries/_transaction.cypher``).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgagent.errors import MemoryStoreError, QueryError
from kgagent.memory import queries
from kgagent.memory.diskspace import SpaceGuard, Watchdog
from kgagent.paths import shell_word

ENGINES = ("ladybug", "kuzu")


def engine_name(configured: str) -> str:
    env = os.environ.get("KGAGENT_ENGINE")
    name = env or configured
    if name not in ENGINES:
        where = "KGAGENT_ENGINE (in the environment)" if env else "memory.engine"
        raise MemoryStoreError(f"{where} = {name!r}: must be one of {', '.join(ENGINES)}")
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
    """One open database and connection. Rows come back as plain dicts.

    A writable database checks the free space before every commit that writes
    (``space``, :class:`~kgagent.memory.diskspace.SpaceGuard`) and runs every call
    under a watchdog (``commit_timeout`` seconds; 0: none), so a full or failing
    disk ends a run with one line instead of a torn log or a hang.
    """

    def __init__(
        self,
        path: Path,
        engine: str,
        *,
        read_only: bool = False,
        threads: int = 0,
        reserve: int = 0,
        commit_timeout: float = 0.0,
        lenient_wal: bool = False,
    ) -> None:
        self.engine = engine
        self.path = path
        self.read_only = read_only
        self.commit_timeout = commit_timeout
        #: Arm the watchdog for calls that do not say otherwise: on once the memory is
        #: open (a migration of a large memory may take long; a step's queries never do).
        self.watching = False
        self._broken = False
        mod = _module(engine)
        kwargs: dict[str, Any] = {"read_only": read_only}
        if lenient_wal:
            # LadybugDB: replay the log up to a damaged record instead of refusing it.
            kwargs["throw_on_wal_replay_failure"] = False
        try:
            self._db = mod.Database(str(path), **kwargs)
        except (RuntimeError, OSError, ValueError) as e:
            raise MemoryStoreError(_open_error(path, engine, _one_line(e))) from None
        self._conn = mod.Connection(self._db)
        if threads > 0:
            # The agent's queries are small; one thread each avoids waking (and
            # waiting for) worker threads, which lowers the per-step p95
            # (docs/benchmarks.md).
            self._conn.set_max_threads_for_exec(int(threads))
        self._in_tx = False
        self._tx_writes = False
        self.space = SpaceGuard(path.parent, 0 if read_only else reserve)
        self._watch = (
            Watchdog(f"the {engine} graph engine", self._conn.interrupt)
            if not read_only and commit_timeout > 0
            else None
        )

    def set_timeout(self, seconds: float) -> None:
        """Let the engine stop any query that runs longer than ``seconds`` (0: no limit)."""
        self._conn.set_query_timeout(int(max(0.0, seconds) * 1000))

    def execute(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        writes: bool = False,
        watch: float | None = None,
    ) -> list[dict[str, Any]]:
        """Every row of ``query``; ``writes``: check the free space first (outside a
        transaction, the statement commits by itself)."""
        return list(_rows(self._run(query, params, writes=writes, watch=watch)))

    def stream(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        writes: bool = False,
        watch: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The rows of ``query`` one at a time (the caller decides how many it keeps).

        The query runs now; the rows are fetched as the caller iterates."""
        return _rows(self._run(query, params, writes=writes, watch=watch))

    def _run(
        self, query: str, params: dict[str, Any] | None, *, writes: bool, watch: float | None
    ) -> Any:
        if self._broken:
            raise MemoryStoreError(_BROKEN)
        if writes and not self._in_tx:
            self.space.check()
        seconds = watch if watch is not None else self.commit_timeout if self.watching else 0.0
        if self._watch is not None:
            self._watch.arm(seconds)
        try:
            res = self._conn.execute(query, params or {})
        except (RuntimeError, TypeError, ValueError) as e:
            msg = _one_line(e)
            if not self.read_only and _write_failed(msg):
                self._broken = True
                raise MemoryStoreError(f"{_BROKEN} ({msg})") from None
            raise QueryError(msg) from None
        finally:
            if self._watch is not None:
                self._watch.disarm()
        if isinstance(res, list):  # several statements
            for r in res[:-1]:
                r.close()
            res = res[-1]
        return res

    def begin(self, *, read_only: bool = False) -> None:
        """Start a transaction. It is marked open before BEGIN is sent: an interrupt
        (Ctrl-C) that lands once BEGIN has run, but before this returns, leaves a
        transaction only :meth:`rollback` ends; a ROLLBACK with none open is refused
        harmlessly. Any failure here rolls back at once."""
        self._in_tx, self._tx_writes = True, not read_only
        try:
            self.execute(queries.get("tx_begin_read_only" if read_only else "tx_begin").text)
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        if self._tx_writes:
            self.space.check()  # refused before COMMIT: the transaction is rolled back whole
        self.execute(queries.get("tx_commit").text)
        self._in_tx = False

    def rollback(self) -> None:
        if self._in_tx:
            self._in_tx = False
            try:
                self.execute(queries.get("tx_rollback").text)
            except (QueryError, MemoryStoreError):
                pass

    @contextmanager
    def transaction(self, *, read_only: bool = False) -> Iterator[None]:
        """Run the block in one transaction: committed at its end, rolled back on any error."""
        try:
            self.begin(read_only=read_only)
            yield
            self.commit()
        except BaseException:
            self.rollback()
            raise

    @property
    def in_transaction(self) -> bool:
        return self._in_tx

    def table_names(self) -> set[str]:
        return {r["name"] for r in self.execute(queries.get("catalog_tables").text)}

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self._broken:
            _abandon(self._conn, self._db)
            return
        try:
            self._conn.close()
        finally:
            self._db.close()


def _rows(res: Any) -> Iterator[dict[str, Any]]:
    try:
        names = res.get_column_names()
        while True:
            try:
                if not res.has_next():
                    break
                row = res.get_next()
            except RuntimeError as e:
                raise QueryError(_one_line(e)) from None
            yield dict(zip(names, row))
    finally:
        res.close()


#: Why a database is no longer used after the engine failed to write its files.
_BROKEN = (
    "the graph engine could not write its files (is the disk full?); the step was not "
    "committed and this run stops. Free some space, then run `kgagent memory check --repair`"
)
_ABANDONED: list[Any] = []


def _write_failed(msg: str) -> bool:
    """The engine failed writing its own files: it must not be used or closed again."""
    low = msg.lower()
    return "io exception" in low and ("cannot write" in low or "no space" in low)


def _abandon(*objs: Any) -> None:
    """Never close a database whose engine failed mid-write: both engines abort the
    process in the destructor. Keep it referenced and leave with ``os._exit`` at exit."""
    if not _ABANDONED:
        atexit.register(_exit_without_destructors)
    _ABANDONED.extend(objs)


def _exit_without_destructors() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
    os._exit(1)


#: Opens a graph read-only (replaying its log in memory) and closes it: run in a child.
_LOG_PROBE = (
    "import sys; from pathlib import Path; from kgagent.memory.engine import GraphDB; "
    "GraphDB(Path(sys.argv[1]), sys.argv[2], read_only=True).close()"
)


def log_crash(graph: Path, engine: str) -> str | None:
    """Whether the engine crashes replaying the write-ahead log a writer that did not
    close left beside ``graph``: a child process opens it read-only first, as some
    damaged logs end the process that reads them (a segmentation fault) instead of
    raising. The signal's name, or None: no log, it opened, or it refused with an error
    (the open in this process says which). Asked once per state of the log (its size
    and time) in a process, so a reader that opens again and again asks once."""
    wal = Path(f"{graph}.wal")
    try:
        st = wal.stat()
    except OSError:
        return None
    if not st.st_size:
        return None
    return _log_crash(str(graph), engine, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _log_crash(graph: str, engine: str, _size: int, _mtime_ns: int) -> str | None:
    import signal
    import subprocess

    try:
        proc = subprocess.run(
            [sys.executable, "-c", _LOG_PROBE, graph, engine], capture_output=True, timeout=600
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no child to ask (a confined process): the open says what it can
    if proc.returncode >= 0:
        return None
    try:
        return signal.Signals(-proc.returncode).name
    except ValueError:
        return f"signal {-proc.returncode}"


def _open_error(path: Path, engine: str, msg: str) -> str:
    """The one line for a database that does not open, with what to do about it."""
    low = msg.lower()
    where = path.parent
    if "lock" in low:
        return _in_use(path, engine, msg)
    if "wal" in low and ("corrupt" in low or "past the end" in low or "checksum" in low):
        return (
            f"the graph database's write-ahead log {path}.wal is damaged ({msg}); "
            f"`kgagent memory check --repair --memory {shell_word(where)}` keeps a copy of it and recovers "
            "what it holds"
        )
    wal = Path(f"{path}.wal")
    if ("assertion" in low or "runtime exception" in low) and wal.is_file() and wal.stat().st_size:
        return (
            f"the graph engine failed reading {path} and the write-ahead log {wal} that a "
            f"writer which did not close left beside it ({msg}): a damaged log does this; "
            f"`kgagent memory check --repair --memory {shell_word(where)}` keeps a copy of it and recovers "
            "what it can"
        )
    if "checkpoint" in low and ("pending" in low or "recovery" in low):
        return (
            f"a checkpoint of {path} was left unfinished ({msg}); open the memory read-write "
            f"once to finish it: `kgagent memory check --repair --memory {shell_word(where)}`"
        )
    return f"cannot open the graph database at {path}: {msg}"


def _in_use(path: Path, engine: str, msg: str) -> str:
    """The one line for a database another process holds, with what to do about it."""
    msg = msg.rstrip(". ")
    held = f"the memory at {path.parent} is in use by another process ({engine} could not lock it): {msg}"
    if engine == "kuzu":
        return (
            f"{held}. The kuzu engine lets only one process open a memory at a time: stop the "
            "agent first, or use the ladybug engine (memory.engine=ladybug), whose read-only "
            "readers can query while an agent runs"
        )
    return f"{held}. Stop the process that holds it read-write and try again"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or e.__class__.__name__
