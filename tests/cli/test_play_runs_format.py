"""`kgagent play` and `kgagent runs show` print their run summary as a table or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from command_lines import play_args
from kgagent.cli.main import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="kgagent")


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[Path, dict]:
    """A 4-step card game run printed as JSON."""
    mem = tmp_path_factory.mktemp("play") / "memory"
    res = run(*play_args(mem, "--seed", "2", "--format", "json", steps=4, env="cardgame"))
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)  # stdout is pure JSON; notes and progress go to stderr
    assert isinstance(rows, list) and len(rows) == 1
    return mem, rows[0]


def test_play_prints_its_summary_as_json(played) -> None:
    mem, s = played
    assert (s["env"], s["seed"], s["ablation"], s["steps"]) == ("cardgame", 2, "full", 4)
    assert s["stopped"] == "steps"
    assert s["executions"] == sum(n for n, _, _ in s["executions_by_path"].values())
    assert sum(s["paths"].values()) == 4
    assert Path(s["log_path"]).parent == mem / "runs"
    assert s["memory_path"] == str(mem)


def test_runs_show_json_matches_what_play_printed(played) -> None:
    mem, s = played
    log = Path(s["log_path"])
    by_path = run("runs", "show", str(log), "--format", "json")
    assert by_path.exit_code == 0, by_path.output
    shown = json.loads(by_path.stdout)
    assert len(shown) == 1
    for key in ("env", "seed", "steps", "executions", "valid_executions", "err", "paths"):
        assert shown[0][key] == s[key], key
    # the same log named by its file name in the memory's runs folder
    by_name = run("runs", "show", log.name, "--memory", str(mem), "--format", "json")
    assert by_name.exit_code == 0, by_name.output
    assert json.loads(by_name.stdout) == shown


def test_runs_list_reads_a_log_dir_folder(played, tmp_path) -> None:
    """`play --log-dir DIR` writes its logs outside the memory: `runs list DIR` lists them."""
    import shutil

    mem, s = played
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(s["log_path"], logs)
    listed = run("runs", "list", str(logs), "--format", "json")
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["log"], r["steps"]) for r in rows] == [(Path(s["log_path"]).name, 4)]
    assert type(rows[0]["progression"]) is float  # as the log holds it (the table writes 0)
    line = run("runs", "list", str(logs / Path(s["log_path"]).name))
    assert line.exit_code == 1 and "is not a folder; give a folder of step logs" in line.stderr
    memory = run("runs", "list", str(mem))  # a memory given as the folder: where its logs are
    assert memory.exit_code == 0
    assert f"a memory? its step logs: kgagent runs list --memory {mem}" in memory.stdout


def test_table_stays_the_default_and_jsonl_is_one_line(played) -> None:
    _, s = played
    table = run("runs", "show", s["log_path"])
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:2] == ["environment", "cardgame"]
    assert any(line.startswith("ERR") for line in lines)
    jsonl = run("runs", "show", s["log_path"], "--format", "jsonl")
    assert jsonl.exit_code == 0
    assert len(jsonl.stdout.splitlines()) == 1 and json.loads(jsonl.stdout)["steps"] == 4


def test_runs_show_rebuilds_a_killed_runs_summary_as_json(played, tmp_path: Path) -> None:
    _, s = played
    lines = Path(s["log_path"]).read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "summary"
    killed = tmp_path / "killed.jsonl"
    killed.write_text("\n".join(lines[:-1]) + "\n")  # no summary line
    res = run("runs", "show", str(killed), "--format", "json")
    assert res.exit_code == 0, res.output
    rebuilt = json.loads(res.stdout)[0]
    assert rebuilt["stopped"] == "incomplete" and rebuilt["steps"] == 4
    assert rebuilt["executions_by_path"] == s["executions_by_path"]
    assert rebuilt["brain"] == "offline" and rebuilt["brain_calls"] is None  # from the header
    assert rebuilt["memory_path"] == s["memory_path"]  # the header names it


def test_runs_list_gives_programs_the_values_as_logged(played) -> None:
    """The table rounds (ERR to three places) and writes 1.0 as 1; json keeps the logged
    float, so a column has one type and full precision."""
    mem, s = played
    res = run("runs", "list", "--memory", str(mem), "--format", "json")
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)[-1]
    assert row["err"] == s["err"] and isinstance(row["progression"], float)
    assert row["cost_usd"] == s["cost_usd"]


def test_the_table_names_episodes_and_has_no_err_without_executions() -> None:
    from kgagent.runlog import summarise

    s = summarise(
        [],
        env="desktop",
        seed=0,
        ablation="full",
        stats=None,
        truth={},
        stopped="steps",
        duration_s=0.0,
    )
    table = s.format_table()
    assert "- (no executions)" in table and "0/0" not in table
    s.episodes = 3
    assert "(steps) in 3 episodes" in s.format_table()


def test_a_run_going_on_says_running_not_incomplete(played, tmp_path) -> None:
    """The newest log without its summary line, while a process holds the memory's lock,
    is a run going on (the view says so too); once the lock is gone it is a killed one."""
    import shutil

    from kgagent.memory.lock import lock_memory

    mem, s = played
    copy = tmp_path / "mem"
    shutil.copytree(mem, copy)
    lines = Path(s["log_path"]).read_text().splitlines()
    going = copy / "runs" / "29991231-235959-cardgame-0.jsonl"
    going.write_text("\n".join(lines[:-1]) + "\n")  # no summary line yet
    held = lock_memory(copy)  # as `kgagent play` holds it
    try:
        rows = json.loads(run("runs", "list", "--memory", str(copy), "--format", "json").stdout)
        assert [r["stopped"] for r in rows][-1] == "running"
        shown = json.loads(run("runs", "show", str(going), "--format", "json").stdout)[0]
        assert shown["stopped"] == "running"
        rounds = run("runs", "show", "--memory", str(copy))
        assert "running; totals when it ends" in rounds.stdout
    finally:
        held.release()
    rows = json.loads(run("runs", "list", "--memory", str(copy), "--format", "json").stdout)
    assert [r["stopped"] for r in rows][-1] == "incomplete"


def test_runs_list_of_a_memory_without_step_logs_says_why(played, tmp_path) -> None:
    """An imported or merged memory has experience and no step logs (archives carry none)."""
    import shutil

    mem, _ = played
    copy = tmp_path / "imported"
    shutil.copytree(mem, copy, ignore=shutil.ignore_patterns("runs"))
    res = run("runs", "list", "--memory", str(copy))
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == (
        f"no step logs in {copy / 'runs'} (an imported or merged memory has none: step logs "
        "stay where the runs were; a run played with --log-dir wrote its log there: "
        "kgagent runs list LOG_DIR)"
    )
    assert json.loads(run("runs", "list", "--memory", str(copy), "--format", "json").stdout) == []


def test_runs_list_names_the_brain_and_no_err_without_executions(played, tmp_path) -> None:
    """A run that executed nothing (stopped at its first request) has no ERR, not 0.0; each
    row names the brain, since runs on one memory may switch it."""
    _, s = played
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = Path(s["log_path"]).read_text().splitlines()
    summary = json.loads(lines[-1])
    vlm = {**summary, "executions": 0, "valid_executions": 0, "err": 0.0, "brain": "vlm"}
    vlm["brain_model"], vlm["stopped"] = "llava", "endpoint"
    (logs / "a.jsonl").write_text("\n".join(lines) + "\n")
    (logs / "b.jsonl").write_text("\n".join([*lines[:-1], json.dumps(vlm)]) + "\n")
    listed = run("runs", "list", str(logs), "--format", "json")
    assert listed.exit_code == 0, listed.output
    a, b = json.loads(listed.stdout)
    assert a["brain"] == "offline" and isinstance(a["err"], float)
    assert b["brain"] == "vlm:llava" and b["err"] is None
    rounds = run("runs", "show", str(logs), "--format", "json")  # a folder: its rounds
    assert rounds.exit_code == 0, rounds.output
    assert [r["log"] for r in json.loads(rounds.stdout)] == ["a.jsonl", "b.jsonl"]
    empty = run("runs", "show", str(tmp_path))
    assert empty.exit_code == 1 and f"no step logs in {tmp_path}" in empty.stderr


def test_the_step_log_header_names_the_encoder_and_the_segmenter(played) -> None:
    _, s = played
    header = json.loads(Path(s["log_path"]).read_text().splitlines()[0])
    assert (header["encoder"], header["segmenter"]) == ("pixel:v1", "opencv:v1")
