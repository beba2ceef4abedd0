"""A SIGTERM that arrives once a command's change is in place (the archive renamed onto
its name, the run written and closed) has nothing to undo: the command says what it did
and exits 0 — not 143 with "what was under way was undone" while the work is done."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from click.testing import CliRunner
from kgagent.cli import memory_cmd, play
from kgagent.cli.main import cli


def _record(stdout: str) -> dict:
    data = json.loads(stdout)
    return data[0] if isinstance(data, list) else data


def _term_then(real):
    def emit(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # handled before the next line runs
        return real(*args, **kwargs)

    return emit


def test_a_sigterm_after_the_work_is_in_place_is_ignored(tmp_path: Path, monkeypatch) -> None:
    mem, archive = tmp_path / "m", tmp_path / "m.tgz"
    res = CliRunner().invoke(
        cli, ["play", "--env", "civgame", "--steps", "2", "--memory", str(mem), "--quiet"]
    )
    assert res.exit_code == 0, res.output
    monkeypatch.setattr(memory_cmd, "emit_record", _term_then(memory_cmd.emit_record))
    res = CliRunner().invoke(
        cli, ["memory", "export", str(archive), "--memory", str(mem), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    assert _record(res.stdout)["archive"] == str(archive) and archive.is_file()
    assert "stopped by" not in res.output

    monkeypatch.setattr(play, "_emit_summary", _term_then(play._emit_summary))
    res = CliRunner().invoke(
        cli,
        ["play", "--env", "civgame", "--steps", "2", "--memory", str(mem), "--quiet"]
        + ["--format", "json"],
    )
    assert res.exit_code == 0, res.output
    assert _record(res.stdout)["steps"] == 2 and "stopped by" not in res.output


def test_a_sigterm_while_an_import_tidies_up_after_placing_is_ignored(
    tmp_path: Path, monkeypatch
) -> None:
    """The imported memory is in place when the work folder (the replaced memory) is
    deleted, which takes long for a large memory: a SIGTERM then has nothing to undo."""
    from kgagent.memory import staging

    mem, archive = tmp_path / "m", tmp_path / "m.tgz"
    for args in (
        ["play", "--env", "civgame", "--steps", "2", "--memory", str(mem), "--quiet"],
        ["memory", "export", str(archive), "--memory", str(mem)],
    ):
        assert CliRunner().invoke(cli, args).exit_code == 0
    monkeypatch.setattr(staging, "remove", _term_then(staging.remove))
    res = CliRunner().invoke(
        cli, ["memory", "import", str(archive), "--memory", str(mem), "--force"]
    )
    assert res.exit_code == 0, res.output
    assert "stopped by" not in res.output and (mem / "manifest.json").is_file()


def test_a_sigterm_while_a_finished_run_closes_its_program_is_ignored(
    tmp_path: Path, monkeypatch
) -> None:
    """The run's summary is written when the program and the memory are closed: a SIGTERM
    then does not cut the closing short (a launched program left running) nor say that
    the run's work was undone."""
    from kgagent.envs.civgame import CivGame

    closed = []
    monkeypatch.setattr(CivGame, "close", _term_then(lambda self: closed.append(True)))
    res = CliRunner().invoke(
        cli,
        ["play", "--env", "civgame", "--steps", "2", "--memory", str(tmp_path / "m"), "--quiet"],
    )
    assert res.exit_code == 0, res.output
    assert closed and "stopped by" not in res.output
