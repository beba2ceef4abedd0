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

Both engines close a database without a word when their last checkpoint fails (a
full disk, ``ulimit -f``): the process would end as if all went well and leave a
memory whose next read-only open is refused. So a writer checkpoints itself before
closing, and a failed checkpoint, at a commit or at the close, is a
:class:`GraphWriteError`. Under ``ulimit -v`` the engine is opened with an address
space that fits (:func:`kgagent.memory.limits.engine_sizes`).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgagent.errors import MemoryStoreError, QueryError
from kgagent.memory import limits, queries
from kgagent.memory.ctype_locale import ascii_case_mapping
from kgagent.memory.diskspace import SpaceGuard, Watchdog
from kgagent.paths import shell_word

ENGINES = ("ladybug", "kuzu")
#: Moves the write-ahead log into the database file. Issued by :meth:`GraphDB.close`
#: before the engine's own close, which would swallow its failure. Not a named query:
#: those touch no file but the bulk loads (tests/memory/test_guard.py), and the guard
#: counts CHECKPOINT as a statement on the database's files.
CHECKPOINT = "CHECKPOINT;"


class GraphWriteError(MemoryStoreError):
    """The engine failed writing its files; this process does not use the database again.

    ``committed``: the failing transaction is in the engine's log (True: only the
    checkpoint after it failed), was not committed (False) or may be either (None).
    ``cause`` and ``fix`` say why in a few words (a full disk, ``ulimit -f``), for a
    caller that words the error for its own command (an import, a merge).
    """

    def __init__(self, message: str, *, cause: str, fix: str, committed: bool | None) -> None:
        super().__init__(message)
        self.cause = cause
        self.fix = fix
        self.committed = committed


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
        try:
            str(path).encode("utf-8")  # what the engine's binding takes
        except UnicodeEncodeError:
            raise MemoryStoreError(
                f"the path {str(path).encode('utf-8', 'backslashreplace').decode()} cannot "
                "be handed to the graph engine: it holds bytes that are not UTF-8 in this "
                "locale (LC_ALL=C with PYTHONUTF8=0?); use a UTF-8 locale, PYTHONUTF8=1, "
                "or a path of ASCII letters"
            ) from None
        self.engine = engine
        self.path = path
        self.read_only = read_only
        self.commit_timeout = commit_timeout
        #: Arm the watchdog for calls that do not say otherwise: on once the memory is
        #: open (a migration of a large memory may take long; a step's queries never do).
        self.watching = False
        self._broken = False
        mod = _module(engine)
        ascii_case_mapping()  # a Turkish LC_CTYPE hides every function with an i (LiST_SORT)
        kwargs: dict[str, Any] = {"read_only": read_only}
        if lenient_wal:
            # LadybugDB: replay the log up to a damaged record instead of refusing it.
            kwargs["throw_on_wal_replay_failure"] = False
        #: The largest database the engine may map (None: its 8 TiB default, no ulimit -v).
        self.max_db_size: int | None = None
        sizes = limits.engine_sizes(path, threads)
        for i, size in enumerate(sizes):
            self.max_db_size = size.get("max_db_size")
            try:
                self._db = mod.Database(str(path), **kwargs, **size)
                break
            except (RuntimeError, OSError, ValueError) as e:
                msg = _one_line(e)
                if i + 1 < len(sizes) and "mmap" in msg.lower():
                    continue  # a smaller map may still fit under ulimit -v
                raise MemoryStoreError(_open_error(path, engine, msg, self.max_db_size)) from None
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
        return list(Rows(self._run(query, params, writes=writes, watch=watch)))

    def stream(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        writes: bool = False,
        watch: float | None = None,
    ) -> Rows:
        """The rows of ``query`` one at a time (the caller decides how many it keeps).

        The query runs now; the rows are fetched as the caller iterates."""
        return Rows(self._run(query, params, writes=writes, watch=watch))

    def _run(
        self, query: str, params: dict[str, Any] | None, *, writes: bool, watch: float | None
    ) -> Any:
        if self._broken:
            raise MemoryStoreError(
                f"{_BROKEN} (`kgagent memory check --repair --memory "
                f"{shell_word(self.path.parent)}`)"
            )
        if writes and not self._in_tx:
            self.space.check()
        seconds = watch if watch is not None else self.commit_timeout if self.watching else 0.0
        if self._watch is not None:
            self._watch.arm(seconds)
        try:
            res = self._conn.execute(query, params or {})
        except (RuntimeError, TypeError, ValueError) as e:
            msg = _one_line(e)
            failed = None if self.read_only else self._write_failure(query, msg)
            if failed is not None:
                # Never used (or closed) again: both engines may abort the process then.
                self._broken, self._in_tx = True, False
                raise failed from None
            if self.max_db_size is not None and _out_of_map(msg):
                raise MemoryStoreError(
                    f"the graph engine ran out of the address space it was given for {self.path} "
                    f"({msg}): {limits.address_space_hint(self.path, self.max_db_size)}; "
                    "everything committed before is kept"
                ) from None
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
        """Checkpoint (a writer with a log to move), then close. A failed checkpoint is
        raised, once the database is set aside (never closed: Kùzu crashes closing it)."""
        failed = None
        if not self.read_only and not self._broken:
            self.rollback()  # a transaction an interrupt left open
            wal, shadow = Path(f"{self.path}.wal"), Path(f"{self.path}.shadow")
            if _size(wal) or shadow.exists():
                try:
                    self.execute(CHECKPOINT)
                except GraphWriteError as e:
                    failed = e
                except (QueryError, MemoryStoreError):
                    pass  # not a write that failed: the engine's close checkpoints again
        if self._watch is not None:
            self._watch.close()
        if self._broken:
            _abandon(self._conn, self._db)
        else:
            try:
                self._conn.close()
            finally:
                self._db.close()
        if failed is not None:
            raise failed

    def _write_failure(self, query: str, msg: str) -> GraphWriteError | None:
        """The error for a statement during which the engine failed writing its files
        (None: any other failure, a :class:`QueryError`).

        LadybugDB says when only the checkpoint after a commit failed ("Transaction
        committed successfully, but the post-commit checkpoint failed"); Kùzu fails the
        COMMIT writing the database file itself, which only a checkpoint writes (the
        transaction is in the log by then), or fails rolling that checkpoint back
        ("Invalid transaction type to rollback"), after which its outcome is unknown.
        """
        low = msg.lower()
        statement = " ".join(query.split()).rstrip(";").strip().upper()
        files = [self.path, Path(f"{self.path}.wal"), Path(f"{self.path}.shadow")]
        cause, fix = limits.write_cause(files, msg)
        where = shell_word(self.path.parent)
        repair = f"`kgagent memory check --repair --memory {where}`"
        io = "io exception" in low
        written = _written_file(msg)
        checkpoint = (
            "checkpoint failed" in low
            or statement == CHECKPOINT.rstrip(";")
            or (statement == "COMMIT" and io and written is not None and written.suffix != ".wal")
        )
        if checkpoint:
            return GraphWriteError(
                f"the graph engine could not checkpoint {self.path} ({cause}); everything "
                f"committed is safe in its write-ahead log {files[1]}, which the next "
                f"read-write open replays. This process does not write the memory again: "
                f"{fix}, then run {repair}",
                cause=cause,
                fix=fix,
                committed=True,
            )
        if "invalid transaction type to rollback" in low:
            return GraphWriteError(
                f"the graph engine failed finishing a commit to {self.path} ({cause}: {msg}); "
                "the last transaction may not be committed, everything before it is kept. "
                f"This process does not write the memory again: {fix}, then run {repair}",
                cause=cause,
                fix=fix,
                committed=None,
            )
        if _write_failed(msg):
            return GraphWriteError(
                f"the graph engine could not write its files ({cause}); the step was not "
                f"committed and this run stops. {fix[:1].upper()}{fix[1:]}, then run "
                f"{repair} ({msg})",
                cause=cause,
                fix=fix,
                committed=False,
            )
        return None


class Rows(Iterator[dict[str, Any]]):
    """A result's rows, one at a time, and its ``columns`` (known before the first row, so
    that a result without rows still has a CSV header). ``close`` frees the result."""

    def __init__(self, res: Any) -> None:
        self._res = res
        try:
            self.columns: list[str] = list(res.get_column_names())
        except BaseException:
            res.close()
            raise
        self._open = True

    def __next__(self) -> dict[str, Any]:
        if not self._open:
            raise StopIteration
        try:
            more = self._res.has_next()
            row = self._res.get_next() if more else None
        except RuntimeError as e:
            self.close()
            raise QueryError(_one_line(e)) from None
        if not more:
            self.close()
            raise StopIteration
        return dict(zip(self.columns, row))

    def close(self) -> None:
        if self._open:
            self._open = False
            self._res.close()


#: Why a database is no longer used after the engine failed to write its files.
_BROKEN = (
    "the graph engine failed writing its files earlier in this process, which no longer "
    "writes the memory; repair it once the cause is gone"
)
_ABANDONED: list[Any] = []


def _write_failed(msg: str) -> bool:
    """The engine failed writing its own files: it must not be used or closed again."""
    low = msg.lower()
    return "io exception" in low and ("cannot write" in low or "no space" in low)


def _written_file(msg: str) -> Path | None:
    """The file an engine's IO exception names (``path: …`` or ``file: …``), if any."""
    m = re.search(r"\b(?:path|file):\s*(\S+)", msg, re.IGNORECASE)
    return Path(m.group(1)) if m else None


def _out_of_map(msg: str) -> bool:
    """The engine ran out of the address space it mapped for the database or its pool."""
    low = msg.lower()
    return "buffer manager exception" in low or "mmap" in low


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


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


def _open_error(path: Path, engine: str, msg: str, max_db_size: int | None = None) -> str:
    """The one line for a database that does not open, with what to do about it."""
    low = msg.lower()
    where = path.parent
    if limits.address_space_limit() is not None and _out_of_map(msg):
        return (
            f"cannot open the graph database at {path}: "
            f"{limits.address_space_hint(path, max_db_size)} ({msg})"
        )
    limit = limits.limit_in_message(msg)
    if limit is not None:
        return f"cannot open the graph database at {path} ({msg}): {limit}"
    if "checkpoint" in low and ("pending" in low or "recovery" in low):
        return (
            f"a checkpoint of {path} was left unfinished ({msg}); open the memory read-write "
            f"once to finish it: `kgagent memory check --repair --memory {shell_word(where)}`"
        )
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
    return f"cannot open the graph database at {path}: {msg}"


def _in_use(path: Path, engine: str, msg: str) -> str:
    """The one line for a database another process holds, with what to do about it: the
    kgagent process that writes it, named as the writer refusals name it (its lock file),
    else the engine's own words."""
    from kgagent.memory.lock import writer_holder

    holder = writer_holder(path.parent)
    if holder == f" (pid {os.getpid()})":  # this process writes it: a reader holds the file
        holder = None
    if holder is not None:
        held = f"the memory at {path.parent} is in use by another process{holder} that writes it"
    else:
        held = (
            f"the memory at {path.parent} is in use by another process ({engine} could not "
            f"lock it): {msg.rstrip('. ')}"
        )
    if engine == "kuzu":
        return (
            f"{held}. The kuzu engine lets one process open a memory at a time: wait for "
            "it to finish, or stop it (a memory made on the ladybug engine can be read "
            "while an agent writes it)"
        )
    return f"{held}. Wait for it to finish, or stop it, and try again"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or e.__class__.__name__
