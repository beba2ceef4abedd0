"""Runs on one memory made under different time zones are ordered as they happened.

A step log's name holds the local time of its run's start; the header's ``started`` holds
it with its UTC offset, and that orders the logs (:func:`kgagent.rounds.log_order`): the
rounds, the view, the note on a killed run. Older logs (no offset) are read in this
machine's time zone, in their name order.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.rounds import log_order, memory_logs, memory_rounds
from kgagent.runlog_read import unfinished_run_note
from kgagent.view.logs import RunLogs

from .toy import ToyEnv, toy_runner

#: Runs made in this order: by their local-time names the last, in UTC, comes before the two before it.
ZONES = ("UTC", "Pacific/Kiritimati", "UTC-14", "UTC")


@pytest.fixture
def zone(monkeypatch):
    """Set this process's time zone (``TZ`` and ``time.tzset``); put back afterwards."""

    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def _unfinished(log: Path) -> None:
    """The log as a SIGKILL leaves it: no summary line (its time kept)."""
    st = log.stat()
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_runs_under_different_time_zones_are_in_the_order_they_ran(cfg, tmp_path, zone) -> None:
    mem = tmp_path / "mem"
    made = []
    for name in ZONES:
        zone(name)
        made.append(Path(toy_runner(cfg, mem, ToyEnv()).run(1).log_path))
    zone("UTC")
    by_name = sorted(made, key=lambda p: p.name)
    assert by_name != made  # the names alone say otherwise
    header = json.loads(made[1].read_text().splitlines()[0])
    assert header["started"].endswith("+14:00")  # the offset is kept
    assert datetime.fromisoformat(header["started"]).strftime("%Y%m%d-%H%M%S") in made[1].name

    assert memory_logs(mem) == made
    assert [r.log for r in memory_rounds(mem)] == [p.name for p in made]
    assert [g.name for g in RunLogs(mem).all()] == [p.name for p in made]
    res = CliRunner().invoke(cli, ["runs", "show", "--memory", str(mem), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert [r["log"] for r in json.loads(res.stdout)] == [p.name for p in made]
    # the last run was killed: the next one names it, not the newest by name
    _unfinished(made[-1])
    note = unfinished_run_note(mem / "runs", mem)
    assert note is not None and made[-1].name in note
    for name in ("Pacific/Kiritimati", "America/Los_Angeles"):  # whoever reads them
        zone(name)
        assert log_order(reversed(made)) == made


def test_runs_list_shows_them_in_that_order(cfg, tmp_path, zone) -> None:
    mem = tmp_path / "mem"
    made = []
    for name in ZONES:
        zone(name)
        made.append(Path(toy_runner(cfg, mem, ToyEnv()).run(1).log_path).name)
    zone("Asia/Kolkata")  # whoever lists them sees the times they are ordered by, in one zone
    res = CliRunner().invoke(cli, ["runs", "list", "--memory", str(mem), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["log"] for r in rows] == made
    started = [datetime.fromisoformat(r["started"]) for r in rows]
    assert started == sorted(started) and {r["started"][-6:] for r in rows} == {"+05:30"}
    assert list(rows[0])[:3] == ["log", "env", "seed"] and list(rows[0])[-1] == "started"


def _log(folder: Path, name: str, started: str) -> Path:
    path = folder / name
    head = {"type": "run", "log_version": 2, "env": "toy", "seed": 0, "started": started}
    summary = {"type": "summary", "env": "toy", "seed": 0, "stopped": "steps"}
    path.write_text(json.dumps(head) + "\n" + json.dumps(summary) + "\n")
    return path


def test_older_logs_without_an_offset_fall_among_new_ones_by_this_machines_time(
    tmp_path, zone
) -> None:
    """A log written before the offset was recorded is read in local time: on a machine in
    Berlin (UTC+1 in January), 12:00 there came after 11:30 UTC, though its name sorts
    first. Old logs keep their name order among themselves."""
    zone("Europe/Berlin")
    old = [
        _log(tmp_path, "20260101-100000-toy-0.jsonl", "2026-01-01T10:00:00"),
        _log(tmp_path, "20260101-120000-toy-0.jsonl", "2026-01-01T12:00:00"),
        _log(tmp_path, "20260101-140000-toy-0.jsonl", "2026-01-01T14:00:00"),
    ]
    new = [
        _log(tmp_path, "20260101-103000-toy-0.jsonl", "2026-01-01T10:30:00+00:00"),  # 11:30 here
        _log(tmp_path, "20260102-023000-toy-0.jsonl", "2026-01-02T02:30:00+14:00"),  # 13:30 here
    ]
    assert log_order(reversed(old + new)) == [old[0], new[0], old[1], new[1], old[2]]
    # a header cut short, or none, and a name without a time: the name's time, or first
    odd = tmp_path / "20260101-134500-toy-0.jsonl"
    odd.write_text('{"type": "run", "started": "2026-01-01T0')
    nameless = _log(tmp_path, "mine.jsonl", "2026-01-01T00:00:00")
    assert log_order([odd, nameless, *new, *old]) == [
        nameless,
        old[0],
        new[0],
        old[1],
        new[1],
        odd,
        old[2],
    ]


def test_a_killed_runs_note_says_when_it_was_written_in_its_own_time_zone(
    cfg, tmp_path, zone
) -> None:
    mem = tmp_path / "mem"
    zone("Pacific/Kiritimati")
    log = Path(toy_runner(cfg, mem, ToyEnv()).run(1).log_path)
    _unfinished(log)
    zone("UTC")  # read elsewhere: started and last written in the run's own zone
    started = json.loads(log.read_text().splitlines()[0])["started"].replace("T", " ")
    note = unfinished_run_note(mem / "runs", mem)
    ran = datetime.fromisoformat(started)
    assert ran.utcoffset().total_seconds() == 14 * 3600  # Kiritimati's, read in UTC
    last = datetime.fromtimestamp(log.stat().st_mtime, ran.tzinfo).strftime("%Y-%m-%d %H:%M:%S")
    if last[:10] == started[:10]:
        last = last[11:]
    assert note is not None and f"(started {started}, last written {last})" in note, note


def test_memory_info_times_carry_their_offset(cfg, tmp_path, zone) -> None:
    """`memory info --format json` gave "2026-12-07 23:49:44" under Asia/Kolkata and
    "18:19:44" under UTC for one memory: the same instant, read without its zone."""
    mem = tmp_path / "mem"
    toy_runner(cfg, mem, ToyEnv()).run(1)
    seen = []
    for name in ("UTC", "Asia/Kolkata"):
        zone(name)
        res = CliRunner().invoke(cli, ["memory", "info", "--memory", str(mem), "--format", "json"])
        assert res.exit_code == 0, res.output
        (info,) = json.loads(res.stdout)
        seen.append(datetime.fromisoformat(info["created"]))
        assert info["created"].endswith("+00:00" if name == "UTC" else "+05:30")
    assert seen[0] == seen[1] and seen[0].tzinfo is not None
