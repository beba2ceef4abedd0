"""`kgagent play` refuses options it would drop without a word: targets that exclude each
other, desktop options with another environment, and a --screen no private Xvfb uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from command_lines import play_args
from kgagent.cli.main import cli


def usage_error(tmp_path: Path, *args: str) -> str:
    """The one line a refused `kgagent play` printed (exit 2), with nothing created."""
    mem = tmp_path / "memory"
    res = CliRunner().invoke(cli, ["play", "--memory", str(mem), *args], prog_name="kgagent")
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert lines[0].endswith("(see 'kgagent play --help')")
    assert not mem.exists()  # refused before the memory is opened
    return lines[0]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--window", "xcalc", "--region", "0,0,100,100"], "--window and --region exclude"),
        (
            ["--window", "xcalc", "--set", "desktop.region=0,0,100,100"],
            "--window and desktop.region exclude",
        ),
        (
            ["--set", "desktop.window=xcalc", "--region", "0,0,100,100"],
            "desktop.window and --region exclude",
        ),
        (["--launch", "xcalc", "--region", "0,0,100,100"], "--launch and --region exclude"),
        (["--env", "desktop", "--display", "new"], "--display new starts an empty private"),
        (["--window", "xterm", "--display", "new"], "add --launch CMD, or name the display"),
        (
            ["--env", "desktop", "--set", "desktop.display=new"],
            "desktop.display=new starts an empty private Xvfb",
        ),
    ],
)
def test_targets_that_exclude_each_other_are_refused(tmp_path, args, expected) -> None:
    assert expected in usage_error(tmp_path, *args)


def test_config_values_that_exclude_each_other_are_refused(tmp_path) -> None:
    config = tmp_path / "desktop.toml"
    config.write_text(
        '[run]\nenv = "desktop"\n[desktop]\nwindow = "xcalc"\nregion = [0, 0, 9, 9]\n'
    )
    line = usage_error(tmp_path, "--config", str(config))
    assert "desktop.window and desktop.region exclude each other" in line


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["--env", "cardgame", "--window", "xcalc"],
            "--window applies to --env desktop only, and this run plays --env cardgame",
        ),
        (
            ["--env", "civgame", "--launch", "xcalc"],
            "--launch applies to --env desktop only, and this run plays --env civgame",
        ),
        (
            ["--env", "cardgame", "--display", ":5", "--screen", "800x600"],
            "--display and --screen apply",
        ),
        (
            ["--display", ":5"],
            "--display applies to --env desktop only, and this run plays cardgame (run.env)",
        ),
    ],
)
def test_desktop_options_with_another_environment_are_refused(tmp_path, args, expected) -> None:
    assert expected in usage_error(tmp_path, *args)


def test_screen_without_a_private_xvfb_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DISPLAY", ":7")
    line = usage_error(tmp_path, "--env", "desktop", "--screen", "800x600")
    assert "--screen sizes a private Xvfb, and this run uses the display :7 ($DISPLAY)" in line
    line = usage_error(tmp_path, "--launch", "xcalc", "--display", ":8", "--screen", "800x600")
    assert "this run uses the display :8" in line
    monkeypatch.delenv("DISPLAY")
    line = usage_error(tmp_path, "--env", "desktop", "--screen", "800x600")
    assert "only --launch starts one" in line


def test_window_with_launch_and_screen_on_a_private_xvfb_pass_the_checks(
    tmp_path, monkeypatch
) -> None:
    """--window with --launch picks which of the program's windows to bind; --screen with
    --launch and no display sizes the private Xvfb. Both get past the option checks (the
    run then fails on the program that does not exist, exit 1)."""
    monkeypatch.delenv("DISPLAY", raising=False)
    mem = tmp_path / "memory"
    for extra in (
        ["--window", "Calc"],
        ["--screen", "800x600"],
        ["--display", "new", "--screen", "800x600"],
    ):
        res = CliRunner().invoke(
            cli,
            play_args(mem, "--launch", "no-such-program-zz9", *extra, steps=1, quiet=False),
            prog_name="kgagent",
        )
        assert res.exit_code == 1, (extra, res.output)
        assert "no-such-program-zz9 not found" in res.stderr, (extra, res.stderr)


def test_a_launch_command_that_cannot_be_split_is_one_line_naming_the_option(tmp_path) -> None:
    mem = tmp_path / "memory"
    res = CliRunner().invoke(
        cli, ["play", "--memory", str(mem), "--launch", "xcalc 'unterminated"], prog_name="kgagent"
    )
    assert res.exit_code == 1, res.output
    assert res.stderr.strip() == (
        "error: desktop.launch: cannot split the command (No closing quotation): "
        "xcalc 'unterminated"
    )
    assert not mem.exists()  # refused before the memory is opened


def test_a_gym_id_that_cannot_be_made_creates_no_memory(tmp_path) -> None:
    pytest.importorskip("gymnasium")
    mem = tmp_path / "scratch"
    result = CliRunner().invoke(
        cli, ["play", "--env", "gym:NoSuch-v0", "--steps", "1", "--memory", str(mem)]
    )
    assert result.exit_code == 1, result.output
    assert "NoSuch" in result.output and "Traceback" not in result.output
    assert not mem.exists()


def test_play_warns_of_a_killed_merges_work_directory(tmp_path: Path) -> None:
    """A killed merge's copy of the memory (GBs on a big one) is named when the memory is
    played, with the command that removes it."""
    mem = tmp_path / "memory"
    work = tmp_path / ".memory.merge-dead1"
    work.mkdir()
    (work / "blob").write_bytes(b"x" * 2**20)
    res = CliRunner().invoke(cli, play_args(mem, steps=1, env="cardgame"), prog_name="kgagent")
    assert res.exit_code == 0, res.output
    assert (
        "warning: a killed merge left 1 work directory (1.0 MiB) beside the memory "
        "(.memory.merge-*): `kgagent memory check --repair` removes it"
    ) in res.stderr
