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
