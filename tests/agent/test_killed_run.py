"""A run killed before its summary line is named by the next run on that memory."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from command_lines import KGAGENT

from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.rounds import log_order
from kgagent.runlog_read import read_log, unfinished_run_note

from .toy import ToyEnv, toy_runner


def _steps(path: Path) -> int:
    n = 0
    for line in path.read_text().splitlines():
        try:
            n += json.loads(line).get("type") == "step"
        except json.JSONDecodeError:  # the writer may be mid-line
            break
    return n


def _play(mem: Path, steps: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kgagent.cli.main",
        "play",
        "--env",
        "civgame",
        "--steps",
        str(steps),
        "--memory",
        str(mem),
        "--quiet",
    ]


def test_the_run_after_a_sigkill_names_it_and_what_it_kept(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _play(mem, 100000), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 120
        log = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = sorted((mem / "runs").glob("*.jsonl")) if (mem / "runs").exists() else []
            if found and _steps(found[0]) >= 2:
                log = found[0]
                break
            time.sleep(0.1)
        assert log is not None, proc.stderr.read() if proc.poll() is not None else "no steps"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    header, steps, summary = read_log(log)
    assert summary is None and len(steps) >= 2  # killed: no summary line

    nxt = subprocess.run(_play(mem, 1), capture_output=True, text=True, env=env, timeout=300)
    assert nxt.returncode == 0, nxt.stderr
    notes = [ln for ln in nxt.stderr.splitlines() if "previous run on this memory" in ln]
    assert len(notes) == 1, nxt.stderr
    note = notes[0]
    started = header["started"].replace("T", " ")
    assert note.startswith(f"note: the previous run on this memory, {log.name} (started {started}")
    n = len(steps)
    assert f"killed, or died, after {n} steps" in note
    command = note.split("`")[1]  # runs as printed, from any folder
    assert shlex.split(command) == ["kgagent", "runs", "show", log.name, "--memory", str(mem)]
    shown = subprocess.run(
        [*KGAGENT, *shlex.split(command)[1:]], capture_output=True, text=True, env=env
    )
    assert shown.returncode == 0 and log.name in shown.stdout, shown.stderr
    # ... and what it says is true: every step of the killed run's log is in the memory
    with Memory.open(mem, Config(), read_only=True) as m:
        for s in steps:
            assert m.run_named("state_get", {"state": s["state_id"]})

    # that run wrote its summary: the next one says nothing
    last = subprocess.run(_play(mem, 1), capture_output=True, text=True, env=env, timeout=300)
    assert last.returncode == 0, last.stderr
    assert "previous run on this memory" not in last.stderr


def _unfinished(log: Path) -> None:
    """The log as a SIGKILL leaves it: the summary line never written (its time kept: it
    orders logs started within one second)."""
    st = log.stat()
    lines = log.read_text().splitlines(keepends=True)
    assert lines[-1].startswith('{"type": "summary"')
    log.write_text("".join(lines[:-1]))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_run_says_nothing_after_a_finished_one_and_names_an_unfinished_one(cfg, tmp_path) -> None:
    mem = tmp_path / "mem"
    said: list[str] = []
    first = toy_runner(cfg, mem, ToyEnv()).run(4)
    toy_runner(cfg, mem, ToyEnv(), said.append).run(2)
    assert not [s for s in said if "previous run" in s]  # the first one finished
    _unfinished(Path(first.log_path))  # older than the newest: not the previous run
    assert unfinished_run_note(mem / "runs", mem) is None
    newest = log_order((mem / "runs").glob("*.jsonl"))[-1]
    _unfinished(newest)
    note = unfinished_run_note(mem / "runs", mem)
    assert note is not None and "after 2 steps" in note and newest.name in note

    said.clear()
    toy_runner(cfg, mem, ToyEnv(), said.append).run(1)
    assert [s for s in said if "previous run" in s] == [note]


def test_in_a_shared_log_folder_only_this_memorys_runs_count(cfg, tmp_path) -> None:
    logs = tmp_path / "logs"
    cfg.run.log_dir = str(logs)
    a, b = tmp_path / "a", tmp_path / "b"
    toy_runner(cfg, a, ToyEnv()).run(2)
    time.sleep(1.1)  # logs are ordered by their names' start second
    other = toy_runner(cfg, b, ToyEnv()).run(3)
    _unfinished(Path(other.log_path))  # memory b's run, killed
    assert unfinished_run_note(logs, a) is None
    note = unfinished_run_note(logs, b)
    assert note is not None and "after 3 steps" in note
    assert str(other.log_path) in note  # outside the memory: the whole path


def test_an_empty_log_is_a_run_killed_before_its_first_step(tmp_path) -> None:
    runs = tmp_path / "mem" / "runs"
    runs.mkdir(parents=True)
    (runs / "20260101-120000-toy-0.jsonl").write_text("")
    note = unfinished_run_note(runs, tmp_path / "mem")
    assert note is not None and "killed, or died, before its first step" in note
    assert re.search(r"20260101-120000-toy-0\.jsonl \(started \?, last written ", note)


def test_a_step_line_a_kill_cut_short_is_not_counted(tmp_path) -> None:
    runs = tmp_path / "mem" / "runs"
    runs.mkdir(parents=True)
    head = {"type": "run", "started": "2026-01-01T12:00:00", "memory": str(tmp_path / "mem")}
    step = {"type": "step", "step": 1}
    text = "".join(json.dumps(x) + "\n" for x in (head, step, {**step, "step": 2}))
    (runs / "20260101-120000-toy-0.jsonl").write_text(text + '{"type": "step", "st')
    note = unfinished_run_note(runs, tmp_path / "mem")
    assert note is not None and "after 2 steps" in note  # as `kgagent runs show` counts them
    assert len(read_log(runs / "20260101-120000-toy-0.jsonl")[1]) == 2


def test_a_memory_older_than_its_killed_log_is_not_said_to_keep_its_steps(cfg, tmp_path) -> None:
    """A memory put back from a copy taken before its last run (or copied without
    graph.db.wal) lacks states that run's log names: the note said every step was kept."""
    mem = tmp_path / "mem"
    first = toy_runner(cfg, mem, ToyEnv()).run(3)
    _unfinished(Path(first.log_path))
    _, steps, _ = read_log(first.log_path)
    named = {s["state_id"] for s in steps} | {
        x for s in steps for e in s["executions"] for x in (e["from_state"], e["to_state"])
    }
    kept = unfinished_run_note(mem / "runs", mem, lambda: set(named))
    assert kept is not None and "What it committed is kept" in kept
    gone = sorted(named)[:1]
    older = unfinished_run_note(mem / "runs", mem, lambda: set(named) - set(gone))
    assert older is not None and "What it committed is kept" not in older
    assert f"Yet 1 of the {len(named)} states its steps name are not in the memory" in older
    from kgagent.memory import Memory

    with Memory.open(mem, cfg, read_only=False) as m:  # the graph of an older copy
        m.cypher(f"MATCH (s:State {{id: '{gone[0]}'}}) DETACH DELETE s", write=True)
    said: list[str] = []  # a run on that memory checks its log against the graph
    toy_runner(cfg, mem, ToyEnv(), said.append).run(1)
    (note,) = [s for s in said if "previous run" in s]
    assert "Yet 1 of the" in note and "what those steps learned is gone" in note


def test_a_log_whose_file_time_is_before_its_start_does_not_say_it_was_written_then(
    cfg, tmp_path
) -> None:
    """`touch -d 2020-01-01` on a killed log (or a copy without its times): the note said
    "started 2026-…, last written 2020-01-01 …", a log written before it began."""
    mem = tmp_path / "mem"
    log = Path(toy_runner(cfg, mem, ToyEnv()).run(2).log_path)
    _unfinished(log)
    os.utime(log, (1577836800, 1577836800))  # 2020-01-01 UTC
    note = unfinished_run_note(mem / "runs", mem)
    assert note is not None
    assert re.search(
        r"last written \? \(the file's time, 2020-01-0[12] \S+, is before its start\)", note
    )
    os.utime(log)  # now: after its start again
    assert "is before its start" not in unfinished_run_note(mem / "runs", mem)
