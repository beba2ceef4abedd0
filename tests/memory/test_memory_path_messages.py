"""What a command says when ``--memory`` names no memory: advice that works where it is
given. ``kgagent play`` creates a memory at a missing path or in an empty directory, and
refuses a directory of other files or a symbolic link to nothing; the messages of the
read commands and of ``play`` itself say which of these the path is."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.errors import ConfigError, MemoryStoreError
from kgagent.memory import Memory

OTHER_FILES = (
    "junkd holds other files and is not a kgagent memory; give the folder of a memory "
    "(`kgagent play --memory NEW_FOLDER` creates one)"
)
DANGLING = (
    "dang is a symbolic link to nowhere, which does not exist; "
    "create that directory or remove the link"
)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="kgagent")


def error_line(res) -> str:
    assert res.exit_code == 1, (res.exit_code, res.output, res.exception)
    lines = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0].removeprefix("error: ")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with ``junkd/`` (a file of notes) and ``dang`` (a link to
    nothing), named as a user types them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "junkd").mkdir()
    (tmp_path / "junkd" / "notes.txt").write_text("hi\n")
    (tmp_path / "dang").symlink_to("nowhere")
    return tmp_path


def read_only_open(path: str | Path) -> str:
    with pytest.raises(MemoryStoreError) as e:
        Memory.open(path, Config(), read_only=True, create=False)
    return str(e.value)


# -------------------------------------------------------- a directory of other files
def test_a_folder_of_other_files_is_not_told_to_run_play_there(here: Path) -> None:
    assert read_only_open("junkd") == OTHER_FILES
    for args in (
        ("memory", "info", "--memory", "junkd"),
        ("memory", "check", "--memory", "junkd"),
        ("query", "RETURN 1", "--memory", "junkd"),
        ("memory", "export", "x.tgz", "--memory", "junkd"),
    ):
        assert error_line(run(*args)) == OTHER_FILES, args
    assert not (here / "x.tgz").exists()
    assert sorted(p.name for p in (here / "junkd").iterdir()) == ["notes.txt"]


def test_the_view_says_the_same_of_a_folder_of_other_files(here: Path) -> None:
    from kgagent.view.app import create_app

    with pytest.raises(ConfigError) as e:
        create_app("junkd", Config())
    assert str(e.value) == OTHER_FILES.replace("junkd", str(here.resolve() / "junkd"), 1)


def test_play_indeed_refuses_a_folder_of_other_files(here: Path) -> None:
    """Why the read commands must not send the user to ``play --memory junkd``."""
    with pytest.raises(MemoryStoreError, match="junkd exists and is not a kgagent memory"):
        Memory.open("junkd", Config())


# ------------------------------------- where `kgagent play --memory PATH` does work
@pytest.mark.parametrize("kind", ["missing", "empty", "a creator's lock only"])
def test_a_missing_path_or_an_empty_folder_keeps_the_advice_to_run_play(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "new ü"
    if kind != "missing":
        path.mkdir()
    if kind == "a creator's lock only":
        from kgagent.memory.lock import LOCK_FILE

        (path / LOCK_FILE).touch()
    message = read_only_open(path)
    assert message == (
        f"no kgagent memory at {path}; run `kgagent play --memory {shlex.quote(str(path))}` "
        "to create one"
    )
    # ... and the advice works: the command it gives creates a memory there
    assert shlex.split(message.split("`")[1]) == ["kgagent", "play", "--memory", str(path)]
    Memory.open(path, Config()).close()
    assert (path / "manifest.json").is_file()


def test_the_view_keeps_the_advice_for_a_missing_path(tmp_path: Path) -> None:
    from kgagent.view.app import create_app

    missing = (tmp_path / "gone").resolve()
    with pytest.raises(ConfigError) as e:
        create_app(missing, Config())
    assert str(e.value) == (
        f"no kgagent memory at {missing}; run `kgagent play --memory {missing}` to create one"
    )


# -------------------------------------------------------- a symbolic link to nothing
def test_play_at_a_link_to_nothing_says_what_the_link_is(here: Path) -> None:
    res = run("play", "--env", "civgame", "--steps", "2", "--memory", "dang")
    assert error_line(res) == DANGLING
    with pytest.raises(MemoryStoreError) as e:
        Memory.open("dang", Config())
    assert str(e.value) == DANGLING
    # nothing was made: not the link's target, not a staging directory beside it
    assert (here / "dang").is_symlink() and os.readlink(here / "dang") == "nowhere"
    assert sorted(p.name for p in here.iterdir()) == ["dang", "junkd"]


def test_the_read_commands_say_the_same_of_a_link_to_nothing(here: Path) -> None:
    """Not ``run kgagent play --memory dang``, which cannot create a memory there."""
    assert read_only_open("dang") == DANGLING
    assert error_line(run("memory", "info", "--memory", "dang")) == DANGLING
    assert not (here / "nowhere").exists()
