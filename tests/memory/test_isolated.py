"""A read-only query runs in a watched child process (kgagent/memory/isolated.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import types
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli
from kgagent.cli.output import jsonable

from kgagent.errors import ConfigError, QueryError
from kgagent.memory.isolated import child_rows


def _rows(produce, **kw):
    kw.setdefault("timeout_s", 10.0)
    kw.setdefault("max_rss_bytes", 8 << 30)
    with child_rows(produce, jsonable=jsonable, **kw) as rows:
        return list(rows)


@contextmanager
def _counting(n):
    yield ({"i": i, "t": (i, "x")} for i in range(n))


def test_rows_come_from_the_child_as_json_values() -> None:
    assert _rows(lambda: _counting(3)) == [{"i": i, "t": [i, "x"]} for i in range(3)]


def _children() -> set[int]:
    """This process's children (alive or not yet reaped), from /proc."""
    out: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        out.update(int(x) for x in (task / "children").read_text().split())
    return out


def test_leaving_early_stops_the_child() -> None:
    before = _children()  # other tests' helpers (an X server) may be running
    with child_rows(lambda: _counting(10**9), timeout_s=0, max_rss_bytes=8 << 30,
                    jsonable=jsonable) as rows:  # fmt: skip
        assert next(rows) == {"i": 0, "t": [0, "x"]}
        assert len(_children() - before) == 1  # the child computing the rows
    assert _children() - before == set()  # killed and reaped: nothing left behind


def test_the_childs_error_is_raised_here_with_its_class() -> None:
    @contextmanager
    def bad():
        raise ConfigError("no memory there")
        yield

    with pytest.raises(ConfigError, match="no memory there"):
        _rows(bad)


def test_a_crash_a_hang_and_a_hog_are_one_line_each() -> None:
    @contextmanager
    def crash():
        os.kill(os.getpid(), signal.SIGSEGV)
        yield iter(())

    with pytest.raises(QueryError, match=r"engine crashed on this query \(SIGSEGV\)"):
        _rows(crash)

    @contextmanager
    def hang():
        time.sleep(60)
        yield iter(())

    t0 = time.monotonic()
    with pytest.raises(QueryError, match="longer than --timeout 0.5 s"):
        _rows(hang, timeout_s=0.5)
    assert time.monotonic() - t0 < 10  # the child was killed; the engine never answered

    @contextmanager
    def hog():
        block = bytearray(300 << 20)  # resident: written page by page
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(60)
        yield iter(())

    with pytest.raises(QueryError, match="more than 0.2 GiB of memory"):
        _rows(hog, max_rss_bytes=200 << 20)


def test_a_query_that_crashes_the_engine_is_one_line(tmp_path: Path) -> None:
    from kgagent.config import Config
    from kgagent.memory import Memory

    mem = tmp_path / "m"
    Memory.open(mem, Config()).close()
    deep = "RETURN " + "[" * 800 + "1" + "]" * 800 + " AS a"
    res = CliRunner().invoke(cli, ["query", "--memory", str(mem), deep])
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x.startswith("error:")]
    # the engines here crash on it (SIGSEGV): one line either way, never a dead CLI
    assert len(lines) == 1 and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["query", "--memory", str(mem), "RETURN 1 AS one"])
    assert res.exit_code == 0 and "one" in res.output  # the memory is as it was


# --- a fresh interpreter for a host's process ----------------------------------------
# What the child runs must be importable there: module-level functions.

#: A lock a host's thread holds at the instant a child starts.
_HELD = threading.Lock()


@contextmanager
def _needs_the_lock():
    with _HELD:
        yield iter([{"got": "the lock"}])


@contextmanager
def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)
    yield iter(())


@contextmanager
def _config_error():
    raise ConfigError("no memory there")
    yield


@contextmanager
def _chatty():
    print("the engine says something on standard output")
    yield iter([{"i": 1}])


def test_a_lock_held_by_a_hosts_thread_hangs_a_fork_but_not_a_fresh_interpreter() -> None:
    taken, release = threading.Event(), threading.Event()

    def host_thread() -> None:
        with _HELD:
            taken.set()
            release.wait(30)

    worker = threading.Thread(target=host_thread, daemon=True)
    worker.start()
    taken.wait(10)
    try:
        # the forked copy of the lock stays held: nobody in the child will release it
        with pytest.raises(QueryError, match="longer than --timeout 0.5 s"):
            _rows(_needs_the_lock, timeout_s=0.5)
        assert _rows(_needs_the_lock, timeout_s=20, fork=False) == [{"got": "the lock"}]
    finally:
        release.set()
        worker.join()


def test_a_fresh_interpreter_tells_errors_and_crashes_as_a_fork_does() -> None:
    with pytest.raises(ConfigError, match="no memory there"):
        _rows(_config_error, timeout_s=20, fork=False)
    with pytest.raises(QueryError, match=r"engine crashed on this query \(SIGSEGV\)"):
        _rows(_segfault, timeout_s=20, fork=False)
    # what the engine prints does not mix with the rows
    assert _rows(_chatty, timeout_s=20, fork=False) == [{"i": 1}]


def test_what_a_fresh_interpreter_cannot_import_is_one_line(monkeypatch) -> None:
    # a function of a module that exists in this process only
    only_here = types.ModuleType("kgagent_test_only_here")

    @contextmanager
    def rows():
        yield iter(())

    rows.__module__ = only_here.__name__
    rows.__qualname__ = "rows"
    only_here.rows = rows  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, only_here.__name__, only_here)
    with pytest.raises(QueryError, match="could not start: ModuleNotFoundError"):
        _rows(rows, timeout_s=20, fork=False)


def test_a_query_called_in_a_hosts_process_does_not_fork(tmp_path: Path, monkeypatch) -> None:
    from kgagent.config import Config
    from kgagent.memory import Memory

    mem = tmp_path / "m"
    Memory.open(mem, Config()).close()

    def no_fork() -> int:
        raise AssertionError("forked a process with threads of its host")

    monkeypatch.setattr(os, "fork", no_fork)
    res = CliRunner().invoke(cli, ["query", "--memory", str(mem), "RETURN 1 AS one"])
    assert res.exit_code == 0, res.output
    assert "one" in res.output


@contextmanager
def _import_folders():
    from kgagent.memory.confine import python_dirs

    yield iter([{"dir": str(p)} for p in python_dirs()])


def test_a_fresh_interpreter_does_not_count_the_working_folder_as_code(
    tmp_path: Path, monkeypatch
) -> None:
    """The confined child may read the folders it imports code from; ``python -c`` and
    ``-m`` put the working folder first among them, and that is the user's data."""
    work = tmp_path / "home"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend("")  # as a REPL or `python -c` host has it
    dirs = {r["dir"] for r in _rows(_import_folders, timeout_s=20, fork=False)}
    assert dirs and not any(Path(d) == work or work in Path(d).parents for d in dirs)
