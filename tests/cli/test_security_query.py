"""`kgagent query` cannot write files, read files, change settings or load native code.

Every variant of the attack in the issue, through every way a query arrives
(argument, --file, stdin, the library's Memory.cypher as `kgagent view` uses it),
with and without --write: refused in one line, nothing written anywhere. And the
escape hatch, --allow-files, does what it says (so the refusals are not vacuous).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.errors import QueryError, ReadOnlyViolation
from kgagent.memory import EncoderSpec, Memory
from kgagent.memory.guard import FileAccessRefused

ENC = EncoderSpec("test:v1", 16, (0.95, 0.88))

#: Wrappers that fooled the old text filter: a quote, double quote or backtick in a
#: comment, and a line comment holding an apostrophe.
WRAPPERS = [
    ("/* ' */ ", " /* ' */"),
    ('/* " */ ', ' /* " */'),
    ("/* ` */ ", " /* ` */"),
    ("// it's\n", ""),
    ("", ""),
]


@pytest.fixture(scope="module")
def mem(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("sec") / "memory"
    with Memory.open(p, Config(), encoder=ENC) as m:
        for i in range(3):
            m.merge_or_create_state(np.eye(16)[i])
    return p


def run(*args: str, input: str | None = None):
    """In this process: for queries refused before any child is forked."""
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


#: `kgagent` in a process of its own; BLIND_GUARD=1 takes the token check away (the
#: kernel's confinement is then the only line).
DRIVER = """
import os, sys
if os.environ.get("BLIND_GUARD"):
    from kgagent.memory import guard
    guard.classify = lambda text: guard.Verdict()
from kgagent.cli.main import main
main()
"""


def run_process(*args: str, blind: bool = False) -> SimpleNamespace:
    """The command in a process of its own, as `kgagent` runs: it forks the query's child
    (kgagent/memory/isolated.py), where `CliRunner` in pytest's process, whose threads
    (LanceDB's event loop, the watchdog) a fork would copy with the locks they hold,
    starts a fresh interpreter. The guarded path is the one users run."""
    env = {**os.environ, **({"BLIND_GUARD": "1"} if blind else {})}
    res = subprocess.run(
        [sys.executable, "-c", DRIVER, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    return SimpleNamespace(
        exit_code=res.returncode,
        stdout=res.stdout,
        stderr=res.stderr,
        output=res.stdout + res.stderr,
    )


def attacks(out: Path) -> list[str]:
    """Statements that reach outside the memory; any of them, run, leaves a trace in ``out``."""
    return [
        f"COPY (MATCH (s:State) RETURN s.id) TO '{out}/leak.csv'",
        f"EXPORT DATABASE '{out}/dump'",
        "LOAD FROM '/etc/passwd' (file_format='csv', header=false, delim=':') RETURN *",
        f"CALL file_search_path='{out}'",
        f"CALL `home_directory` = '{out}'",
        "CALL threads=1",
        "INSTALL json",
        "UNINSTALL json",
        f"LOAD EXTENSION '{out}/lib.so'",
        f"ATTACH '{out}/other.db' AS o (dbtype kuzu)",
        "DETACH o",
        "USE o",
        f"IMPORT DATABASE '{out}/dump'",
        "CALL read_csv_serial('/etc/passwd') RETURN *",
        "CHECKPOINT",
    ]


def _one_line_refusal(res) -> str:
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def _untouched(mem: Path, out: Path) -> None:
    assert not any(out.iterdir()), sorted(p.name for p in out.iterdir())
    assert not (mem / "graph.db.shadow").exists()


@pytest.mark.parametrize("write", [False, True])
def test_every_attack_in_every_wrapper_is_refused(mem: Path, tmp_path: Path, write: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for stmt in attacks(out):
        for head, tail in WRAPPERS:
            q = head + stmt + tail
            args = ["query", "--memory", str(mem), q] + (["--write"] if write else [])
            line = _one_line_refusal(run(*args))
            assert "--allow-files" in line, (q, line)
    _untouched(mem, out)


def test_with_the_guard_fooled_the_kernel_still_keeps_a_read_query_off_the_files(
    mem: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second line: a read-only query's process is confined by Landlock (reads
    beneath the memory and Python's code, writes nowhere). Should the token check ever
    let a file statement through, the engine's attempt fails and nothing is written or
    read outside the memory."""
    from kgagent.memory.confine import abi_version

    if abi_version() < 1:
        pytest.skip("this kernel has no Landlock: the query guard is the only line")
    out = tmp_path / "out"
    out.mkdir()
    secret = tmp_path / "secret.csv"
    secret.write_text("alice,hunter2\n")
    for stmt in (
        f"COPY (MATCH (s:State) RETURN s.id) TO '{out}/leak.csv'",
        f"EXPORT DATABASE '{out}/dump'",
        f"LOAD FROM '{secret}' (header=false) RETURN *",
    ):
        res = run_process("query", "--memory", str(mem), stmt, blind=True)  # a blind guard
        line = _one_line_refusal(res)
        assert "hunter2" not in res.output, (stmt, line)
    _untouched(mem, out)
    ok = run_process(
        "query", "--memory", str(mem), "MATCH (s:State) RETURN count(*) AS n", "--format", "csv"
    )
    assert (ok.exit_code, ok.output.split()) == (0, ["n", "3"]), ok.output  # reads still work
    allowed = run_process(
        "query",
        "--memory",
        str(mem),
        "--allow-files",
        f"LOAD FROM '{secret}' (header=false) RETURN *",
    )
    assert allowed.exit_code == 0 and "hunter2" in allowed.output  # not confined when allowed


def test_file_and_stdin_are_checked_the_same(mem: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    q = f"/* ' */ COPY (MATCH (s:State) RETURN s.id) TO '{out}/leak.csv' /* ' */"
    f = tmp_path / "q.cypher"
    f.write_text(q)
    _one_line_refusal(run("query", "--memory", str(mem), "--file", str(f)))
    _one_line_refusal(run("query", "--memory", str(mem), input=q))
    _one_line_refusal(run("query", "--memory", str(mem), "--write", "--file", str(f)))
    _untouched(mem, out)


def test_checkpoint_leaves_no_shadow_and_readers_still_open(mem: Path) -> None:
    _one_line_refusal(run("query", "--memory", str(mem), "/* ' */ CHECKPOINT /* ' */"))
    assert not (mem / "graph.db.shadow").exists()
    ok = run_process(
        "query", "--memory", str(mem), "MATCH (s:State) RETURN count(*) AS n", "--format", "csv"
    )
    assert (ok.exit_code, ok.output.split()) == (0, ["n", "3"]), ok.output


def test_memory_cypher_refuses_as_the_viewer_would_use_it(mem: Path, tmp_path: Path) -> None:
    """`kgagent view` opens the memory read-only and runs queries through Memory.cypher."""
    out = tmp_path / "out"
    out.mkdir()
    with Memory.open(mem, Config(), read_only=True) as m:
        for stmt in attacks(out):
            with pytest.raises(FileAccessRefused):
                m.cypher("/* ' */ " + stmt + " /* ' */")
            with pytest.raises(FileAccessRefused):
                m.cypher(stmt, write=True)
        with pytest.raises(ReadOnlyViolation):
            m.cypher("MATCH (s:State) SET s.visits = 9")
        assert m.run_named("view_states")  # the viewer's own queries still run
    _untouched(mem, out)


def test_a_read_is_read_only_in_the_engine_too(tmp_path: Path) -> None:
    """Without write=True a query runs in a read-only transaction even on a writable memory."""
    p = tmp_path / "m"
    with Memory.open(p, Config(), encoder=ENC) as m:
        m.merge_or_create_state(np.eye(16)[0])
        db = m._db
        # Past the check, the engine itself refuses a write inside the read-only transaction.
        db.begin(read_only=True)
        with pytest.raises(QueryError):
            db.execute("MATCH (s:State) SET s.visits = 99")
        db.rollback()
        assert m.cypher("MATCH (s:State) RETURN s.visits AS v") == [{"v": 1}]


def test_strings_comments_and_properties_are_not_statements(mem: Path) -> None:
    """The tokenizer reads what the engine reads: keywords in strings, comments,
    escaped names and property keys are data."""
    for q in (
        "RETURN 'COPY (x) TO \\'/tmp/f\\'' AS t",
        'RETURN "LOAD EXTENSION x" AS t',
        "RETURN 1 AS `load` // COPY x TO 'y'",
        "/* CHECKPOINT */ MATCH (s:State) RETURN count(*) AS n",
        "MATCH (s:State) WHERE s.id <> '*/ INSTALL json /*' RETURN count(*) AS n",
        "CALL show_tables() RETURN name",
        "CALL table_info('State') RETURN name",
    ):
        res = run_process("query", "--memory", str(mem), q, "--format", "json")
        assert res.exit_code == 0, (q, res.output)


def test_allow_files_is_the_only_way_and_it_works(mem: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "states.csv"
    q = f"COPY (MATCH (s:State) RETURN s.id) TO '{target}'"
    _one_line_refusal(run("query", "--memory", str(mem), "--write", q))
    assert not target.exists()
    ok = run_process("query", "--memory", str(mem), "--allow-files", q)
    assert ok.exit_code == 0, ok.output
    assert len(target.read_text().splitlines()) >= 3


EXT = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void kgagent_marker(void) {
    const char *p = getenv("KGAGENT_TEST_MARKER");
    if (p) { FILE *f = fopen(p, "w"); if (f) { fputs("ran\n", f); fclose(f); } }
}
"""


def test_load_extension_never_runs_native_code(mem: Path, tmp_path: Path) -> None:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the test extension")
    src = tmp_path / "ext.c"
    src.write_text(EXT)
    lib = tmp_path / "libmarker.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    env = {**os.environ}
    kgagent = [sys.executable, "-m", "kgagent.cli.main", "query", "--memory", str(mem)]
    for i, (head, tail) in enumerate(WRAPPERS):
        marker = tmp_path / f"marker-{i}"
        env["KGAGENT_TEST_MARKER"] = str(marker)
        for extra in ([], ["--write"]):
            q = f"{head}LOAD EXTENSION '{lib}'{tail}"
            res = subprocess.run(kgagent + extra + [q], env=env, capture_output=True, text=True)
            assert res.returncode == 1 and "--allow-files" in res.stderr, res.stderr
            assert not marker.exists(), "the library's constructor ran"
    # Control: the same statement with --allow-files does load the library (in a child).
    marker = tmp_path / "marker-allowed"
    env["KGAGENT_TEST_MARKER"] = str(marker)
    subprocess.run(
        kgagent + ["--allow-files", f"LOAD EXTENSION '{lib}'"], env=env, capture_output=True
    )
    assert marker.read_text() == "ran\n"


def test_unreadable_query_input_is_one_line(mem: Path, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.cypher"
    bad.write_bytes("RETURN 'caf\xe9' AS x".encode("latin-1"))
    line = _one_line_refusal(run("query", "--memory", str(mem), "--file", str(bad)))
    assert "UTF-8" in line
    zero = _one_line_refusal(run("query", "--memory", str(mem), "--file", "/dev/zero"))
    assert "larger than" in zero
    res = CliRunner().invoke(
        cli, ["query", "--memory", str(mem)], input=b"RETURN '\xff' AS x", catch_exceptions=False
    )
    assert res.exit_code == 1 and "UTF-8" in res.output


def test_limit_streams_and_says_when_rows_were_left(mem: Path) -> None:
    q = "UNWIND range(1, 25) AS x RETURN x"
    res = run_process("query", "--memory", str(mem), q, "--limit", "10", "--format", "jsonl")
    assert res.exit_code == 0
    assert [int(line.split(":")[1].rstrip("}")) for line in res.stdout.splitlines()] == list(
        range(1, 11)
    )
    assert "only the first 10 rows" in res.stderr
    for fmt in ("json", "csv", "jsonl", "table"):
        full = run_process("query", "--memory", str(mem), q, "--limit", "0", "--format", fmt)
        assert full.exit_code == 0 and "only the first" not in full.stderr
        assert "25" in full.stdout


def test_timeout_stops_a_long_query(mem: Path) -> None:
    q = (
        "UNWIND range(1, 20000) AS a UNWIND range(1, 20000) AS b "
        "WITH a, b WHERE (a * b) % 7 = 3 RETURN count(*) AS n"
    )
    line = _one_line_refusal(run("query", "--memory", str(mem), "--timeout", "0.3", q))
    assert "--timeout 0.3 s" in line
