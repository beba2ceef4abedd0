"""Rows of a read-only query from a child process that is watched and stopped.

A query can ask the engine for more than the machine has (``UNWIND range(1, 3e8)``),
run far past the engine's own timeout (a long expression spends minutes in the
parser, which the timeout does not cover), or crash the engine (brackets nested
hundreds deep). In the process of the caller any of these ends badly: the machine
runs out of memory, Ctrl-C is not heard, the process dies without a word.

:func:`child_rows` runs the query in a child process and reads its rows as JSON
lines through a pipe. The child is forked from ``kgagent``'s own process, whose
threads are known (a BLAS pool that holds no lock at rest), and it is a fresh
interpreter when the caller is a host
process with threads of its own (a notebook, a test runner, a program that calls the
CLI in-process): a fork copies the locks those threads hold at that instant, and a
child that needs one waits forever. The fresh child receives ``produce`` pickled
through its standard input, from this process only; it never reads a memory's files
as pickles. The parent watches the clock and the child's resident
memory and kills the child past ``timeout_s`` (plus :data:`GRACE_S`) or
``max_rss_bytes``; a child killed by a signal is one line saying which. The child
only reads (a read-only connection of its own), so killing it loses nothing.
Rows arrive already made JSON-able (:func:`kgagent.cli.output.jsonable`).
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from kgagent import errors
from kgagent.errors import KGAgentError, QueryError

#: Seconds the engine gets past ``timeout_s`` to stop a query itself before the child
#: is killed.
GRACE_S = 2.0
#: How often (s) the parent looks at the child's memory while no row arrives.
POLL_S = 0.1


def default_max_rss() -> int:
    """Half of this machine's memory (bytes): a query may grow large, not take the host."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return max(1 << 30, pages * size // 2)
    except (ValueError, OSError):
        return 8 << 30


@contextmanager
def child_rows(
    produce: Callable[[], AbstractContextManager[Iterator[dict[str, Any]]]],
    *,
    timeout_s: float,
    max_rss_bytes: int,
    jsonable: Callable[[Any], Any],
    fork: bool = True,
) -> Iterator[Iterator[dict[str, Any]]]:
    """The rows ``produce()`` yields, computed in a child process (see the module).

    ``produce`` runs in the child: it opens what it needs and returns a context
    manager of a row iterator. A :class:`KGAgentError` there is raised here again,
    with its message. ``timeout_s`` 0: no limit of time. Leaving the ``with`` block
    early (enough rows) stops the child. ``fork`` False: the child is a fresh
    interpreter, and ``produce`` and ``jsonable`` must be picklable (module-level
    functions, or instances of module-level classes).
    """
    read_fd, write_fd = os.pipe()
    try:
        if fork:
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(read_fd)
                _child(produce, write_fd, jsonable)
            child = _Child(pid)
        else:
            child = _spawn(produce, jsonable, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        yield Received(child, read_fd, timeout_s, max_rss_bytes)
    finally:
        os.close(read_fd)
        child.stop()


def _spawn(produce: Callable, jsonable: Callable, write_fd: int) -> _Child:
    """A fresh interpreter that runs ``produce`` and writes its rows to ``write_fd``.

    It has the caller's import path (a host may have set up its own) but not the working
    folder, which ``python -c`` or ``-m`` would put first: the confinement lets the child
    read what its import path holds (:func:`kgagent.memory.confine.python_dirs`), and the
    working folder is the user's data, often their home. It has its own session (a
    terminal's Ctrl-C reaches the caller, which stops it) and no other descriptor of ours.
    A child that cannot start is told by :func:`_read` as one that ended."""
    payload = pickle.dumps((produce, jsonable))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isabs(p))
    popen = subprocess.Popen(
        [sys.executable, "-c", _SPAWNED],
        stdin=subprocess.PIPE,
        stdout=write_fd,
        env=env,
        start_new_session=True,
    )
    child = _Child(popen.pid, popen)
    try:
        assert popen.stdin is not None
        with popen.stdin:
            popen.stdin.write(payload)
    except BrokenPipeError:
        pass  # it ended before reading: _read says so
    except BaseException:  # Ctrl-C while a large query was written: no child left behind
        child.stop()
        raise
    return child


#: The fresh interpreter's program: the working folder (``''``, first in ``sys.path``
#: under ``-c``) is dropped before anything is imported.
_SPAWNED = (
    "import sys; del sys.path[0]; "
    "from kgagent.memory.isolated import _spawned_main; _spawned_main()"
)


class _Child:
    """The child's pid, reaped once (through its :class:`subprocess.Popen` when it has
    one, which would otherwise reap it again)."""

    def __init__(self, pid: int, popen: subprocess.Popen | None = None) -> None:
        self.pid = pid
        self.popen = popen
        self.status: int | None = None

    def wait(self) -> int | None:
        """Its exit code; a negative one is the signal that ended it."""
        if self.status is None:
            try:
                if self.popen is not None:
                    self.status = self.popen.wait()
                else:
                    self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            except ChildProcessError:
                return None
        return self.status

    def stop(self) -> None:
        """Kill the child if it was not reaped yet, and reap it."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()


def _child(produce: Callable, fd: int, jsonable: Callable[[Any], Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent hears Ctrl-C and stops us
    faulthandler.disable()  # a crash is told by the parent, in one line
    code = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            try:
                with produce() as rows:
                    columns = getattr(rows, "columns", None)
                    if columns is not None:  # a result without rows still has them
                        out.write(json.dumps(["columns", [str(c) for c in columns]]) + "\n")
                    for row in rows:
                        item = {str(k): jsonable(v) for k, v in row.items()}
                        out.write(json.dumps(["row", item], ensure_ascii=False) + "\n")
                out.write('["end"]\n')
            except KGAgentError as e:
                out.write(json.dumps(["error", type(e).__name__, str(e)]) + "\n")
            except Exception as e:  # the engine's own errors: one line, as in process
                out.write(json.dumps(["error", "QueryError", f"{type(e).__name__}: {e}"]) + "\n")
    except BrokenPipeError:
        pass  # the parent has all the rows it wants
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class Received(Iterator[dict[str, Any]]):
    """The rows as they come from the child, and the result's ``columns`` once it sent
    them (before its first row; None when the rows have none to say)."""

    def __init__(self, child: _Child, fd: int, timeout_s: float, max_rss: int) -> None:
        self.columns: list[str] | None = None
        self._rows = _read(child, fd, timeout_s, max_rss, self)

    def __next__(self) -> dict[str, Any]:
        return next(self._rows)


def _read(
    child: _Child, fd: int, timeout_s: float, max_rss: int, into: Received
) -> Iterator[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s + GRACE_S if timeout_s else None
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            if msg[0] == "row":
                yield msg[1]
            elif msg[0] == "columns":
                into.columns = msg[1]
            elif msg[0] == "end":
                return
            else:
                raise _error(msg[1], msg[2])
        wait = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
        ready, _, _ = select.select([fd], [], [], wait)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                buf += chunk
                continue
            raise QueryError(_death(child.wait()))
        if deadline is not None and time.monotonic() >= deadline:
            raise QueryError(
                f"the query ran longer than --timeout {timeout_s:g} s and was stopped; "
                "narrow it, or give a larger --timeout (0: no limit)"
            )
        rss = _rss(child.pid)
        if rss > max_rss:
            raise QueryError(
                f"the query took more than {max_rss / 2**30:.1f} GiB of memory and was "
                "stopped; narrow it (LIMIT, fewer rows in UNWIND), or raise --max-memory"
            )


def _error(kind: str, message: str) -> KGAgentError:
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, KGAgentError)):
        cls = QueryError
    return cls(message)


def _death(status: int | None) -> str:
    """Why the child ended without a last line (``status``: its exit code, negative for
    the signal that ended it)."""
    if status is not None and status < 0:
        sig = -status
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return (
            f"the database engine crashed on this query ({name}); the memory is unchanged. "
            "A query nested very deep or very long can do this: simplify it"
        )
    code = "" if status is None else f" (exit {status})"
    return f"the query process ended without an answer{code}"


def _rss(pid: int) -> int:
    """The child's resident memory in bytes (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _spawned_main() -> None:
    """The fresh interpreter's side of :func:`_spawn`: the rows go to the descriptor
    that was standard output, and standard output becomes standard error, so that
    nothing the engine prints mixes with them."""
    rows_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        produce, jsonable = pickle.load(sys.stdin.buffer)
    except Exception as e:  # the caller's code is not importable here: one line there
        try:
            with os.fdopen(rows_fd, "w", encoding="utf-8") as out:
                reason = f"the query process could not start: {type(e).__name__}: {e}"
                out.write(json.dumps(["error", "QueryError", reason]) + "\n")
        except OSError:
            pass  # the caller stopped before it was told (Ctrl-C while it wrote)
        os._exit(1)
    _child(produce, rows_fd, jsonable)
