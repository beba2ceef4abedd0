"""`kgagent query` and `kgagent memory`: sources, formats, read-only, errors, two processes."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli
from kgagent.cli.output import render
from kgagent.cli.query import parse_param

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.errors import QueryError
from kgagent.memory import EncoderSpec, Memory
from kgagent.memory.engine import engine_name

ENC = EncoderSpec("test:v1", 16, (0.95, 0.88))


def build(path: Path) -> dict[str, str]:
    with Memory.open(path, Config(), encoder=ENC) as m:
        a = m.merge_or_create_state(np.eye(16)[0]).id
        b = m.merge_or_create_state(np.eye(16)[1]).id
        k = m.add_skill("open", "opens", [Operation("key", key="enter")])
        m.upsert_skill_edge(a, b, k.id, 0.5, 1.0)
    return {"a": a, "b": b, "k": k.id}


@pytest.fixture(scope="module")
def mem(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    p = tmp_path_factory.mktemp("cli") / "memory"
    return p, build(p)


def run(*args: str, input: str | None = None):
    res = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    return res


def test_list_shows_named_queries_with_params(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    res = run("query", "--list", "--format", "json")
    assert res.exit_code == 0
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["hq_candidates"]["params"] == "state" and not rows["hq_candidates"]["writes"]
    assert rows["skill_create"]["writes"]
    assert "Eq. 3" in rows["hq_candidates"]["description"]
    table = run("query", "--list").output.splitlines()
    assert table[0].split()[:2] == ["name", "params"]
    assert max(len(line) for line in table) <= 120  # the terminal's width
    assert any(line.split()[0] == "hq_candidates" for line in table[2:-1])


def test_named_query_with_param(mem) -> None:
    path, ids = mem
    res = run(
        "query",
        "--memory",
        str(path),
        "--name",
        "hq_candidates",
        "--param",
        f"state={ids['a']}",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["skill"] for r in rows] == [ids["k"]]
    assert rows[0]["weight"] == pytest.approx(1 / (1 + np.exp(-0.35)))
    res = run(
        "query",
        "--memory",
        str(path),
        "--name",
        "recent_states",
        "--param",
        "limit=1",
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0 and len(res.output.splitlines()) == 1
    missing = run("query", "--memory", str(path), "--name", "hq_candidates")
    assert missing.exit_code == 1 and "needs parameter(s): state" in missing.output


def test_a_sum_of_integers_is_a_whole_number(mem) -> None:
    """Both engines give ``sum()`` of integers as a 128-bit integer (Python's ``Decimal``):
    a whole number from Python and in every format, not ``2.0`` or ``Decimal('2')``."""
    p, _ = mem
    q = "MATCH (s:State) RETURN sum(s.visits + 1) AS n, sum(0.5) AS f"
    with Memory.open(p, Config(), read_only=True) as m:
        (row,) = m.cypher(q)
    assert type(row["n"]) is int and row["f"] == 1.0
    res = run("query", "--memory", str(p), q, "--format", "json")
    assert json.loads(res.output) == [{"n": row["n"], "f": 1.0}]
    assert run("query", "--memory", str(p), q, "--format", "csv").output.splitlines()[1] == (
        f"{row['n']},1.0"
    )


def test_a_parameter_the_query_does_not_use_is_refused(mem) -> None:
    """A misspelt --param would bind nothing and the query would run without it."""
    path, ids = mem
    named = ["--name", "hq_candidates", "--param", f"state={ids['a']}", "--param", "stat=x"]
    res = run("query", "--memory", str(path), *named)
    assert res.exit_code == 1
    assert res.output.strip() == "error: the query has no parameter $stat (its parameters: state)"
    res = run("query", "--memory", str(path), "RETURN 1 AS one", "--param", "x=1")
    assert res.output.strip() == "error: the query has no parameter $x (its parameters: none)"


def test_an_internal_query_is_refused_by_name_with_or_without_write(mem) -> None:
    """Not "pass --write" first and "internal" after: the same line either way."""
    path, _ = mem
    for extra in ([], ["--write"]):
        res = run("query", "--memory", str(path), "--name", "tx_begin_read_only", *extra)
        assert res.exit_code == 1
        assert "is internal to the memory (_transaction.cypher)" in res.output, res.output


def test_param_values_are_toml_scalars() -> None:
    assert parse_param("limit=17") == ("limit", 17)
    assert parse_param("x=0.5") == ("x", 0.5)
    assert parse_param("f=true") == ("f", True)
    assert parse_param('s="17"') == ("s", "17")
    assert parse_param("state=s-123") == ("state", "s-123")
    assert parse_param("xs=[1, 2]") == ("xs", [1, 2])
    with pytest.raises(QueryError, match="outside the engines' 64-bit integers"):
        parse_param("v=99999999999999999999999")


def test_raw_file_stdin_and_formats(mem, tmp_path: Path) -> None:
    path, ids = mem
    q = "MATCH (s:State) RETURN s.id AS id, s.visits AS visits ORDER BY id"
    want = sorted([ids["a"], ids["b"]])
    raw = run("query", "--memory", str(path), q, "--format", "json")
    assert raw.exit_code == 0 and [r["id"] for r in json.loads(raw.output)] == want
    f = tmp_path / "q.cypher"
    f.write_text(q + ";\n")
    fr = run("query", "--memory", str(path), "--file", str(f), "--format", "csv")
    assert fr.exit_code == 0
    assert list(csv.DictReader(io.StringIO(fr.output))) == [{"id": i, "visits": "1"} for i in want]
    st = run("query", "--memory", str(path), "--format", "jsonl", input=q)
    assert st.exit_code == 0
    assert [json.loads(line)["id"] for line in st.output.splitlines()] == want
    table = run("query", "--memory", str(path), q).output.splitlines()
    assert table[0].split() == ["id", "visits"] and set(table[1]) <= {"-", " "}
    assert table[2].startswith(want[0]) and table[-1] == "(2 rows)"
    # A parameter bound into a raw query.
    p = run(
        "query",
        "--memory",
        str(path),
        "MATCH (s:State {id: $x}) RETURN s.visits AS v",
        "--param",
        f"x={ids['a']}",
        "--format",
        "json",
    )
    assert json.loads(p.output) == [{"v": 1}]


def test_node_values_print_in_every_format(mem) -> None:
    path, _ = mem
    for fmt in ("table", "json", "csv", "jsonl"):
        res = run(
            "query",
            "--memory",
            str(path),
            "MATCH (s:State)-[e:SKILL_EDGE]->() RETURN s, e",
            "--format",
            fmt,
        )
        assert res.exit_code == 0, res.output
        assert "feature_rev" in res.output and "weight" in res.output
    odd = json.loads(render([{"x": b"\x01", "y": float("nan"), "z": {1, 2}}], "json"))
    assert odd == [{"x": "01", "y": "nan", "z": [1, 2]}]


def test_write_refused_without_write_and_allowed_with_it(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    build(path)
    q = "MATCH (k:Skill) SET k.name = 'renamed' RETURN k.name AS name"
    res = run("query", "--memory", str(path), q)
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [
        "error: this query writes (SET); pass --write to allow it"
    ]
    named = run("query", "--memory", str(path), "--name", "skill_prune", "--param", "skill=k-x")
    assert named.exit_code == 1 and "--write" in named.output
    unchanged = run(
        "query", "--memory", str(path), "MATCH (k:Skill) RETURN k.name AS n", "--format", "json"
    )
    assert json.loads(unchanged.output) == [{"n": "open"}]
    ok = run("query", "--memory", str(path), "--write", q, "--format", "json")
    assert ok.exit_code == 0 and json.loads(ok.output) == [{"name": "renamed"}]


def test_bad_cypher_is_one_line_exit_1(mem) -> None:
    path, _ = mem
    for q in ("MATCH (s:State RETURN s", "MATCH (s:NoSuchTable) RETURN s", "RETURN $missing AS x"):
        res = run("query", "--memory", str(path), q)
        assert res.exit_code == 1
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    res = run("query", "--memory", str(path), "--name", "no_such_query")
    assert res.exit_code == 1 and "--list" in res.output
    res = run("query", "--memory", str(path.parent / "absent"), "RETURN 1")
    assert res.exit_code == 1 and "no kgagent memory" in res.output


def test_memory_info_check_export_import(mem, tmp_path: Path) -> None:
    path, _ = mem
    info = run("memory", "info", "--memory", str(path), "--format", "json")
    assert info.exit_code == 0
    rec = json.loads(info.output)[0]
    assert rec["nodes"] == 2 and rec["encoder"] == "test:v1"
    check = run("memory", "check", "--memory", str(path), "--format", "json")
    assert check.exit_code == 0
    assert {r["check"]: r["status"] for r in json.loads(check.output)}[
        "states_without_vector"
    ] == "ok"
    out = tmp_path / "m.tar.gz"
    ex = run("memory", "export", "--memory", str(path), str(out))
    assert ex.exit_code == 0 and out.exists()
    dest = tmp_path / "copy"
    im = run("memory", "import", "--memory", str(dest), str(out), "--format", "json")
    assert im.exit_code == 0, im.output
    again = run("memory", "import", "--memory", str(dest), str(out))
    assert again.exit_code == 1 and "--force" in again.output
    (tmp_path / "bad.tar.gz").write_bytes(b"not an archive")
    bad = run("memory", "import", "--memory", str(tmp_path / "x"), str(tmp_path / "bad.tar.gz"))
    assert bad.exit_code == 1 and "corrupt or truncated" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_memory_check_finds_missing_vectors(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    build(path)
    import shutil

    shutil.rmtree(path / "vectors")
    res = run("memory", "check", "--memory", str(path), "--format", "json")
    assert res.exit_code == 1
    rows = {r["check"]: r for r in json.loads(res.output.split("\nerror:")[0])}
    assert rows["states_without_vector"]["count"] == 2  # both states of build()


HOLDER = textwrap.dedent(
    """
    import sys
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    m = Memory.open(sys.argv[1], Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    print("ready", flush=True)
    sys.stdin.readline()
    m.close()
    print("closed", flush=True)
    """
)


def test_second_process_query_while_agent_holds_memory(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    build(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready", holder.stderr.read()
        res = run(
            "query",
            "--memory",
            str(path),
            "MATCH (s:State) RETURN count(*) AS n",
            "--format",
            "json",
        )
        if engine_name(Config().memory.engine) == "ladybug":
            assert res.exit_code == 0, res.output  # ladybug: read-only readers work
            assert json.loads(res.output) == [{"n": 2}]
        else:
            assert res.exit_code == 1  # kuzu: one process at a time, and it says so
            line = res.output.strip()
            assert len(line.splitlines()) == 1
            assert (
                "in use by another process" in line
                and "ladybug" in line
                and "wait for it to finish, or stop it" in line
            )
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "closed"
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        for s in (holder.stdin, holder.stdout, holder.stderr):
            s.close()
    assert holder.returncode == 0


def test_a_csv_without_rows_is_its_header(mem) -> None:
    """A CSV reader (``pandas.read_csv``, ``csv.DictReader``) takes an empty file for no
    table at all; the header says the query ran and what it returns."""
    path, _ = mem
    q = "MATCH (k:Skill) WHERE k.name = 'no such skill' RETURN k.id AS id, k.fitness AS fitness"
    res = run("query", "--memory", str(path), "--format", "csv", q)
    assert res.exit_code == 0
    assert res.stdout == "id,fitness\n"
    written = run("query", "--memory", str(path), "--write", "--format", "csv", q)
    assert written.exit_code == 0 and written.stdout == "id,fitness\n"  # in this process
