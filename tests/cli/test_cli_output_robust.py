"""What the CLI prints when the world is unkind: a setting too large for the machine, a
standard output that is not UTF-8, a reader that closes the pipe early, paths with spaces
in printed commands, wide characters in tables."""

from __future__ import annotations

import csv
import io
import json
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from command_lines import KGAGENT
from kgagent.cli import bench_cmd
from kgagent.cli.main import cli
from kgagent.cli.output import render

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory

TEXT = "记忆 ü"


def run(*args: str, charset: str = "utf-8"):
    return CliRunner(charset=charset).invoke(cli, list(args), prog_name="kgagent")


def one_error_line(res) -> str:
    assert res.exit_code == 1, (res.exit_code, res.output, res.exception)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    return lines[0]


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("robust") / "memory"
    with Memory.open(path, Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88))):
        pass
    return path


# --------------------------------------------------------------- a setting too large
def test_a_huge_object_count_is_refused_naming_the_field(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    res = run(
        "play",
        "--env",
        "civgame",
        "--memory",
        str(mem),
        "--steps",
        "2",
        "--set",
        "perception.max_objects=1000000000",
    )
    line = one_error_line(res)
    assert line == "error: perception.max_objects = 1000000000: must be an integer in [1, 4096]"
    assert res.stdout == "" and not mem.exists()


class _Hungry:
    """A runner whose run allocates more than any machine has (numpy's own MemoryError)."""

    last_summary = None
    stop_signal = None

    def __init__(self, *args, **kwargs) -> None:
        pass

    def run(self):
        return np.zeros((2**25, 2**25), dtype=np.uint8)  # 1 PiB


def test_running_out_of_memory_is_one_line_and_debug_shows_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr("kgagent.agent.runner.Runner", _Hungry)
    args = ["play", "--memory", str(tmp_path / "m"), "--steps", "1"]
    line = one_error_line(run(*args))
    assert line.startswith("error: out of memory: unable to allocate 1.00 PiB for an array")
    assert "a setting may be too large" in line
    res = run("--debug", *args)
    assert res.exit_code == 1 and isinstance(res.exception, MemoryError)


# ------------------------------------------------------ standard output not UTF-8
@pytest.mark.parametrize("charset", ["ascii", "latin-1"])
def test_json_and_jsonl_escape_what_stdout_cannot_hold(memory: Path, charset: str) -> None:
    q = f"RETURN '{TEXT}' AS x, 1 AS n"
    res = run("query", "--memory", str(memory), "--format", "json", q, charset=charset)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == [{"x": TEXT, "n": 1}] and res.stderr == ""
    res = run("query", "--memory", str(memory), "--format", "jsonl", q, charset=charset)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"x": TEXT, "n": 1} and "\\u8bb0" in res.stdout


@pytest.mark.parametrize(
    "charset, value", [("ascii", "\\u8bb0\\u5fc6 \\xfc"), ("latin-1", "\\u8bb0\\u5fc6 ü")]
)
def test_csv_writes_backslash_escapes_and_says_so(memory: Path, charset, value) -> None:
    q = f"UNWIND range(1, 3) AS i RETURN i, '{TEXT}' AS `列`"
    res = run("query", "--memory", str(memory), "--format", "csv", q, charset=charset)
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert rows == [["i", "\\u5217"], *([str(i), value] for i in (1, 2, 3))]
    note = res.stderr.strip()
    assert note.startswith("note: 4 values held characters that standard output's encoding")
    assert "backslash escapes" in note and len(note.splitlines()) == 1
    utf8 = run("query", "--memory", str(memory), "--format", "csv", q)
    assert list(csv.reader(io.StringIO(utf8.stdout)))[1] == ["1", TEXT] and utf8.stderr == ""


# ------------------------------------------------------------- a closed pipe
@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_a_reader_that_closes_the_pipe_ends_the_query_quietly(memory: Path, fmt: str) -> None:
    proc = subprocess.Popen(
        [
            *KGAGENT,
            "query",
            "--memory",
            str(memory),
            "--format",
            fmt,
            "--limit",
            "0",
            "UNWIND range(1, 200000) AS i RETURN i",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline()  # `| head -1`
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
        assert err == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stderr.close()


# --------------------------------------------------- printed commands and hints
def _closed(fd: int, args: list[str], **kw) -> subprocess.CompletedProcess:
    """``kgagent ARGS`` started with descriptor ``fd`` closed, as ``kgagent … >&-`` does."""
    line = " ".join(shlex.quote(a) for a in [*KGAGENT, *args]) + f" {fd}>&-"
    return subprocess.run(["bash", "-c", line], capture_output=True, timeout=300, **kw)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_a_closed_standard_output_is_no_traceback(memory: Path, fmt: str) -> None:
    """Python makes ``sys.stdout`` None there: the row writers failed on it in a
    traceback. What is printed goes nowhere, as Python's ``print`` does."""
    res = _closed(1, ["query", "--memory", str(memory), "--format", fmt, "RETURN 1 AS one"])
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""


def test_a_closed_descriptor_is_not_taken_by_a_file_the_command_opens(tmp_path: Path) -> None:
    """A run with standard output closed: its memory and log open on other numbers, so
    what an engine prints cannot land in them; the run completes and the log is whole."""
    mem = tmp_path / "m"
    res = _closed(1, ["play", "--memory", str(mem), "--steps", "3", "--quiet"])
    assert res.returncode == 0, res.stderr
    assert b"Traceback" not in res.stderr
    (log,) = (mem / "runs").glob("*.jsonl")
    assert json.loads(log.read_text().splitlines()[-1])["type"] == "summary"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_into_a_full_disk_is_one_line(flag: str) -> None:
    with open("/dev/full", "w") as full:
        res = subprocess.run([*KGAGENT, flag], stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert res.returncode == 1
    assert res.stderr.decode().strip().splitlines() == ["error: No space left on device"]


def test_a_printed_command_quotes_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "no such ü" / "memory"
    line = one_error_line(run("runs", "list", "--memory", str(missing)))
    command = line.split("`")[1]
    assert shlex.split(command) == ["kgagent", "play", "--memory", str(missing)]
    mem = tmp_path / "a memory"
    (mem / "runs").mkdir(parents=True)
    res = run("runs", "list", str(mem))
    hint = res.stdout.split("its step logs: ")[1].rstrip(")\n")
    assert shlex.split(hint) == ["kgagent", "runs", "list", "--memory", str(mem)]


def test_bench_report_command_quotes_the_grid_path(monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert bench_cmd._command(Path("my grids/g.toml")) == "kgagent bench 'my grids/g.toml'"


def test_a_memory_without_logs_mentions_log_dir(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "manifest.json").write_text("{}")
    res = run("runs", "list", "--memory", str(mem))
    assert res.exit_code == 0, res.output
    out = res.stdout.strip()
    assert out.startswith(f"no step logs in {mem / 'runs'} (an imported or merged memory")
    assert "--log-dir" in out and "kgagent runs list LOG_DIR" in out


# ---------------------------------------------------------------- wide characters
def display_width(text: str) -> int:
    """Terminal columns: East Asian wide (W) and full-width (F) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def test_tables_align_by_display_width() -> None:
    assert display_width("记忆 ü") == 6 and display_width("ü") == 1
    rows = [
        {"name": "记忆记忆", "n": 1},
        {"name": "abcdefgh", "n": 22},
        {"name": "ｆｕｌｌ", "n": 3},
    ]
    lines = render(rows, "table", count=False).splitlines()
    assert len({display_width(line) for line in lines}) == 1, lines  # the n column lines up
    rows = [{"name": "记忆", "kind": "x"}, {"name": "abcd", "kind": "y"}]
    lines = render(rows, "table", count=False).splitlines()
    assert {display_width(line[:-1]) for line in lines[2:]} == {6}  # "kind" starts at column 6


def test_hints_from_the_library_quote_their_paths(tmp_path: Path) -> None:
    """Messages made below the CLI (rounds, the view, merge, the engine's open) print
    commands too: each runs as printed when its path has a space."""
    from kgagent.errors import KGAgentError
    from kgagent.rounds import require_logs
    from kgagent.view.app import create_app

    missing = tmp_path / "no such ü"
    opens = (
        lambda: require_logs(missing),
        lambda: create_app(missing, Config()),
        lambda: Memory.open(missing, Config(), read_only=True),
    )
    for call in opens:
        with pytest.raises(KGAgentError) as e:
            call()
        command = str(e.value).split("`")[1]
        assert shlex.split(command) == ["kgagent", "play", "--memory", str(missing)]


def _first_line_then_close(args: list[str]) -> int:
    """Run kgagent with stdout and stderr into one pipe, read one line, close the pipe
    (`kgagent … 2>&1 | head -1`); the exit code."""
    proc = subprocess.Popen(
        [*KGAGENT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    return proc.wait(timeout=300)


def test_a_reader_gone_from_the_pipe_does_not_stop_a_run_or_an_export(tmp_path: Path) -> None:
    """Progress lines that nobody reads any more are dropped and the work goes on: the
    run plays all its steps and writes its summary, the export writes its archive."""
    mem = tmp_path / "m"
    assert (
        _first_line_then_close(["play", "--env", "civgame", "--steps", "6", "--memory", str(mem)])
        == 0
    )
    logs = list((mem / "runs").glob("*.jsonl"))
    assert len(logs) == 1
    last = json.loads(logs[0].read_text().splitlines()[-1])
    assert last["type"] == "summary" and last["steps"] == 6
    archive = tmp_path / "m.tgz"
    assert _first_line_then_close(["memory", "export", str(archive), "--memory", str(mem)]) == 0
    assert archive.is_file() and archive.stat().st_size > 0


_BARS_INTO_A_GONE_PIPE = """
import os, sys
from kgagent import terminal
from kgagent.agent.runner import _progress
from kgagent.bench.progress import GridProgress

terminal._isatty = lambda stream: True  # tqdm's bars, as on a terminal

read, write = os.pipe()
os.close(read)  # the reader went after the run's first lines, before the bar's next draw
os.dup2(write, 2)
bar = _progress(3, True)
bar.update(1)
bar.refresh()
bar.close()
grid = GridProgress(2)
grid.finish({"status": "failed", "key": "a", "error": "x"})
grid.close()
print("gone" if os.path.samestat(os.fstat(2), os.stat(os.devnull)) else "kept")
"""


def test_a_progress_bar_drawn_after_its_reader_went_does_not_stop_the_work() -> None:
    """tqdm writes standard error itself: a draw into a pipe nobody reads any more points
    the outputs that lead nowhere at /dev/null, as a progress line does, instead of raising
    out of the step (`kgagent play 2>&1 | head -1` exited 1 when the bar drew first)."""
    res = subprocess.run(
        [sys.executable, "-c", _BARS_INTO_A_GONE_PIPE], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "gone"


def test_progress_into_a_file_is_plain_lines(tmp_path: Path) -> None:
    """Standard error that is not a terminal (a file, a CI log) gets plain progress lines,
    not tqdm's carriage returns and block characters."""
    res = subprocess.run(
        [*KGAGENT, "play", "--env", "civgame", "--steps", "3", "--memory", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr and "\u2588" not in res.stderr
    assert any(line.startswith("play: 3/3 steps | ") for line in res.stderr.splitlines())
