"""`kgagent runs` on a memory whose runs/ folder this user may not read.

A glob passes over such a folder without a word: `runs list` then looked inside it and
named a path that is not there (``runs/runs``), and `runs show` said to play first. Both
must say the folder cannot be read and name it. In process the permission goes by making
``os.scandir`` refuse the folder (root reads any folder); end to end, ``kgagent`` runs as
a user the folder is closed to (``nobody`` through ``setpriv`` when the tests run as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from command_lines import KGAGENT, denied_user
from kgagent.cli.main import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="kgagent")


def a_memory_with_a_log(path: Path) -> Path:
    """A folder that passes for a memory with one step log in its runs/ (`runs` reads only
    the logs: a summary line is all `runs list` needs)."""
    runs = path / "runs"
    runs.mkdir(parents=True)
    (path / "manifest.json").write_text("{}")
    (runs / "20260101-000000-cardgame-0.jsonl").write_text(
        '{"type": "run", "env": "cardgame", "seed": 0}\n'
        '{"type": "summary", "env": "cardgame", "seed": 0, "steps": 0}\n'
    )
    return runs


def refuse(monkeypatch: pytest.MonkeyPatch, closed: Path) -> None:
    """Make listing ``closed`` fail with EACCES, as for a folder chmod 000."""
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == os.fspath(closed):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fspath(closed))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


def expected(runs: Path, *, own: bool) -> str:
    """Its own folder closed to it: the owner's bits; another user's: the others' bits."""
    fix = (
        f"it is this user's: chmod u+rwx {runs}"
        if own
        else f"run kgagent as its owner, or let this user read it (its owner: chmod go+rx {runs})"
    )
    return f"error: the step log folder {runs} cannot be read (permission denied); {fix}"


@pytest.mark.parametrize(
    "args",
    [("list",), ("show",), ("show", "20260101-000000-cardgame-0.jsonl")],
    ids=["list", "show", "show-log"],
)
def test_runs_names_an_unreadable_runs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    memory = tmp_path / "m"
    runs = a_memory_with_a_log(memory)
    monkeypatch.chdir(tmp_path)
    refuse(monkeypatch, runs)
    res = run("runs", *args, "--memory", str(memory))
    assert res.exit_code == 1, res.output
    assert res.output.strip().splitlines() == [expected(runs, own=True)]


def test_runs_list_of_a_readable_runs_folder_is_unchanged(tmp_path: Path) -> None:
    memory = tmp_path / "m"
    a_memory_with_a_log(memory)
    res = run("runs", "list", "--memory", str(memory), "--format", "json")
    assert res.exit_code == 0, res.output
    assert "20260101-000000-cardgame-0.jsonl" in res.output


@pytest.mark.parametrize("command", ["list", "show"])
def test_runs_as_another_user_names_the_closed_runs_folder(command: str) -> None:
    prefix = denied_user()
    top = Path(tempfile.mkdtemp(prefix="kgagent-runs-"))
    runs = a_memory_with_a_log(top / "m")
    try:
        for p in (top, top / "m"):
            p.chmod(0o755)
        runs.chmod(0)
        res = subprocess.run(
            [*prefix, *KGAGENT, "runs", command, "--memory", str(top / "m")],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=top,
            env={**os.environ, "HOME": str(top)},
        )
    finally:
        runs.chmod(0o755)
        shutil.rmtree(top)
    assert res.returncode == 1, res.stdout
    assert res.stderr.strip().splitlines() == [expected(runs, own=False)]
