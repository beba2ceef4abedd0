"""One-line errors for what a user hands the CLI, and the options every command shares."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import MAX_CONFIG_BYTES
from kgagent.errors import ConfigError


def run(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=input, prog_name="kgagent")


def one_error_line(res, code: int = 1) -> str:
    """The single line a failed command printed (stderr), after checking the exit code."""
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    return lines[0]


@pytest.mark.parametrize(
    "seed_args, code, expected",
    [
        (["--seed", "-1"], 2, "error: Invalid value for '--seed': -1 is not in the range 0<=x<="),
        (["--set", "run.seed=-1"], 1, "error: run.seed = -1: must be an integer >= 0"),
    ],
    ids=["option", "config"],
)
def test_negative_seed_is_refused_before_the_memory_is_opened(
    tmp_path: Path, seed_args, code, expected
) -> None:
    """An option out of its range is a usage error (2), as ``--steps -1`` is; a config
    value out of its range is a config error (1)."""
    mem = tmp_path / "memory"
    line = one_error_line(run("play", "--memory", str(mem), "--steps", "1", *seed_args), code)
    assert line.startswith(expected), line
    assert not mem.exists()  # nothing was created or opened


@pytest.mark.parametrize(
    "args, says",
    [
        (["--timeout", "nan"], "'--timeout': 'nan' is not a finite number"),
        (["--timeout", "inf"], "'--timeout': inf is not in the range"),
        (["--timeout", "1e300"], "'--timeout': 1e+300 is not in the range"),
        (["--max-memory", "1e308"], "'--max-memory': 1e+308 is not in the range"),
        (["--max-memory", "nan"], "'--max-memory': 'nan' is not a finite number"),
        (["--limit", "99999999999999999999999"], "'--limit': 99999999999999999999999 is not in"),
    ],
)
def test_query_numbers_out_of_range_are_usage_errors(tmp_path: Path, args, says) -> None:
    """``nan`` passes every comparison of a range (``--timeout nan`` ran with no limit);
    a huge number reached an engine's or a slice's overflow, in a traceback."""
    line = one_error_line(run("query", "--memory", str(tmp_path), *args, "RETURN 1"), 2)
    assert says in line, line


def test_a_desktop_option_for_another_env_is_refused_by_env_show(tmp_path: Path) -> None:
    out = tmp_path / "a.png"
    line = one_error_line(run("env", "show", "cardgame", "--out", str(out), "--window", "x"), 2)
    assert "--window applies to desktop only, not to cardgame" in line
    assert not out.exists()


@pytest.mark.parametrize(
    "override, expected",
    [
        ("memory.theta_merge=1.5", "memory.theta_merge = 1.5: must be a number in [-1, 1]"),
        ("memory.theta_simi=-5", "memory.theta_simi = -5.0: must be a number in [-1, 1]"),
        ("memory.alpha=true", "memory.alpha = true: must be a number in [0, 1]"),
        ("library.max_library=-1", "library.max_library = -1: must be an integer >= 1"),
        ("desktop.region=1,2", "desktop.region = [1, 2]: must be 4 integers"),
    ],
)
def test_bad_config_values_are_one_line_and_touch_nothing(tmp_path: Path, override, expected):
    mem = tmp_path / "memory"
    line = one_error_line(run("play", "--memory", str(mem), "--set", override))
    assert line.startswith(f"error: {expected}")
    assert not mem.exists()


def test_region_option_is_checked_like_the_config_field(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    line = one_error_line(run("play", "--memory", str(mem), "--region", "0,0,0,600"))
    assert line.startswith("error: desktop.region = [0, 0, 0, 600]: must be 4 integers")
    assert not mem.exists()


@pytest.mark.parametrize("flag", ["--launch", "--window", "--region"])
def test_an_empty_desktop_option_is_named(tmp_path: Path, flag: str) -> None:
    """`--launch "$PROG"` with PROG unset: the error names the option, not a display."""
    mem = tmp_path / "memory"
    line = one_error_line(run("play", "--memory", str(mem), flag, " "))
    assert line == f"error: {flag} is empty: give it a value, or leave it out"
    assert not mem.exists()


def test_config_files_that_are_not_utf8_toml_or_small_are_one_line(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[run]\nenv = "caf\xe9"\n')
    line = one_error_line(run("play", "--memory", str(mem), "--config", str(latin)))
    assert line.endswith("latin.toml is not UTF-8 text (byte 16 is 0xe9)")
    broken = tmp_path / "broken.toml"
    broken.write_text("[memory\n")
    assert "is not valid TOML" in one_error_line(run("memory", "info", "--config", str(broken)))
    typed = tmp_path / "typed.toml"
    typed.write_text("[memory]\nalpha = true\n")
    line = one_error_line(run("query", "--memory", str(mem), "--config", str(typed), "RETURN 1"))
    assert line == "error: memory.alpha = true: must be a number in [0, 1]"
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    assert "is larger than" in one_error_line(run("runs", "list", "--config", str(big)))
    assert not mem.exists()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_endless_inputs_are_bounded(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    line = one_error_line(run("query", "--memory", str(mem), "--file", "/dev/zero"))
    assert line.startswith("error: query file /dev/zero is larger than 1,048,576 bytes")
    line = one_error_line(run("play", "--memory", str(mem), "--config", "/dev/zero"))
    assert "/dev/zero is larger than" in line
    line = one_error_line(run("runs", "show", "/dev/zero"))
    assert line == "error: /dev/zero is not a file; give a step log (.jsonl)"
    assert not mem.exists()


def test_query_text_that_is_not_utf8_or_too_long_is_one_line(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    q = tmp_path / "q.cypher"
    q.write_bytes(b"MATCH (s:State) RETURN s.id -- \xff\n")
    line = one_error_line(run("query", "--memory", str(mem), "--file", str(q)))
    assert line.endswith("q.cypher is not UTF-8 text (byte 31 is 0xff)")
    line = one_error_line(run("query", "--memory", str(mem), input=b"RETURN \xfe 1"))
    assert line == "error: the query on standard input is not UTF-8 text (byte 7 is 0xfe)"
    line = one_error_line(run("query", "--memory", str(mem), input=b"RETURN 1 " * 200_000))
    assert line.startswith("error: the query on standard input is larger than")
    assert not mem.exists()


def test_unreadable_or_unwritable_paths_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"type": "run"}\n\xff\xfe\n')
    line = one_error_line(run("runs", "show", str(log)))
    assert line.endswith("log.jsonl is not UTF-8 text; is this a kgagent step log?")
    line = one_error_line(run("runs", "show", "no-such-log.jsonl", "--memory", str(tmp_path)))
    assert (
        line
        == f"error: no step log at no-such-log.jsonl or {tmp_path / 'runs' / 'no-such-log.jsonl'}"
    )
    line = one_error_line(run("runs", "show", str(tmp_path / "gone.jsonl")))
    assert line == f"error: no step log at {tmp_path / 'gone.jsonl'}"
    out = tmp_path / "missing" / "dir" / "screen.png"
    line = one_error_line(run("env", "show", "cardgame", "--out", str(out)))
    assert line.startswith(f"error: cannot write {out}")


def test_usage_errors_are_one_line_with_exit_2() -> None:
    line = one_error_line(run("play", "--bogus"), code=2)
    assert line == "error: No such option '--bogus' (see 'kgagent play --help')"
    line = one_error_line(run("--bogus"), code=2)
    assert "No such option '--bogus'" in line and "'kgagent --help'" in line
    line = one_error_line(run("play", "--env", "nope"), code=2)
    assert "'nope' is not an environment; known: cardgame, civgame" in line
    # the same name refused the same way where it is an argument
    line = one_error_line(run("env", "show", "nope", "--out", "x.png"), code=2)
    assert "'nope' is not an environment; known: cardgame, civgame" in line
    line = one_error_line(run("query", "RETURN 1", "--name", "recent_states"), code=2)
    assert line == "error: give one of: a query, --file, --name (see 'kgagent query --help')"
    line = one_error_line(run("nosuchcommand"), code=2)
    assert "No such command 'nosuchcommand'" in line


def test_debug_shows_the_exception_instead() -> None:
    res = run("--debug", "play", "--set", "run.seed=-1")
    assert res.exit_code == 1 and isinstance(res.exception, ConfigError)
    assert "run.seed = -1" in str(res.exception)
    assert not res.stderr.startswith("error: ")


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize(
    "path",
    [
        ("play",),
        ("query",),
        ("memory", "info"),
        ("memory", "check"),
        ("memory", "export"),
        ("memory", "import"),
        ("runs", "list"),
        ("runs", "show"),
    ],
)
def test_commands_share_memory_config_set_format(path) -> None:
    command: click.Command = cli
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    opts = _options(command)
    assert {"--memory", "--config", "--set", "--format"} <= opts, (path, opts)
    order = [o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--")]
    shared = [o for o in order if o in ("--memory", "--config", "--set", "--format")]
    assert shared == ["--memory", "--config", "--set", "--format"]


def test_env_commands_take_the_options_that_make_sense() -> None:
    env = cli.commands["env"]  # type: ignore[attr-defined]
    assert "--format" in _options(env.commands["list"])
    assert {"--config", "--set"} <= _options(env.commands["show"])
    listed = run("env", "list", "--format", "json")
    assert listed.exit_code == 0
    assert "cardgame" in {r["name"] for r in json.loads(listed.stdout)}


def test_help_gives_the_memory_location_in_order() -> None:
    text = " ".join(run("--help").output.split())
    assert (
        "--memory PATH on every command that opens one; else $KGAGENT_MEMORY; else the "
        "config's memory.path; else the user data directory"
    ) in text
    assert "$KGAGENT_MEMORY and $KGAGENT_ENGINE win over both" in text


def test_ctrl_c_is_one_line_and_the_shells_code(tmp_path, monkeypatch) -> None:
    """Ctrl-C in a command other than play (which stops after its step, 130) ends with
    "interrupted" and 130, not click's "Aborted!" and 1."""
    import kgagent.memory.merge as merge

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(merge, "merge_memories", interrupted)
    res = run("memory", "merge", str(tmp_path / "a"), "--into", str(tmp_path / "b"))
    assert res.exit_code == 130, res.output
    assert res.output.strip() == "interrupted"


def test_a_record_is_shown_as_fields_without_a_row_count(capsys) -> None:
    from kgagent.cli.output import emit, emit_record

    emit_record({"nodes": 14, "skills": 3})
    record = capsys.readouterr().out
    assert "nodes" in record and "rows)" not in record
    emit([{"a": 1}, {"a": 2}])
    assert capsys.readouterr().out.rstrip().endswith("(2 rows)")


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "info", "--memory", ""],
        ["memory", "export", "", "--memory", "m"],
        ["query", "--memory", "", "RETURN 1"],
        ["env", "show", "cardgame", "--out", ""],
        ["play", "--memory", "", "--steps", "1"],
        ["runs", "show", ""],
        ["runs", "list", ""],
    ],
    ids=["memory", "export-out", "query", "env-show-out", "play", "runs-show", "runs-list"],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path: Path, monkeypatch, args
) -> None:
    """``Path("")`` is ``.``: ``--memory "$UNSET"`` read or wrote in the current folder."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(run(*args), 2)
    assert "the path is empty" in line, line
    assert list(tmp_path.iterdir()) == []  # nothing made here


def test_a_relative_path_under_a_deleted_working_directory_says_so(monkeypatch) -> None:
    """`play --memory relmem` from a folder deleted meanwhile said only "No such file or
    directory": the path was fine, the folder it is relative to was gone."""
    import errno
    import os

    from kgagent.cli.main import describe_error

    gone = OSError(errno.ENOENT, "No such file or directory")
    assert describe_error(gone) == "No such file or directory"  # a working directory is here

    def deleted() -> str:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(os, "getcwd", deleted)
    assert describe_error(gone).endswith(
        "(the current directory was deleted: a relative path "
        "cannot be found from it; cd to an existing directory "
        "or give absolute paths)"
    )
    absolute = OSError(errno.ENOENT, "No such file or directory", "/nowhere/x")
    assert describe_error(absolute) == "No such file or directory: /nowhere/x"
