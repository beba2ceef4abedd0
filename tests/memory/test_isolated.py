"""A read-only query runs in a watched child process (kgagent/memory/isolated.py)."""

from __future__ import annotations

import os
import signal
import time
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
