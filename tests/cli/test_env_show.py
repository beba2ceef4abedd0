"""`kgagent env show --out`: a PNG, or one line that says why not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli
from PIL import Image


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="kgagent")


@pytest.mark.parametrize("out", ["noext", "", "first.jpg", "shot.png.txt"])
def test_a_name_without_png_is_a_usage_error(tmp_path: Path, out: str) -> None:
    res = run("env", "show", "cardgame", "--out", str(tmp_path / out) if out else "")
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    says = "the path is empty" if not out else "name a .png file"
    assert len(lines) == 1 and says in lines[0], res.stderr
    assert [p.name for p in tmp_path.iterdir()] == []


def test_writes_a_png_and_a_failed_write_says_why(tmp_path: Path) -> None:
    out = tmp_path / "first.PNG"
    res = run("env", "show", "cardgame", "--out", str(out))
    assert res.exit_code == 0, res.output
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size == (1280, 720)
    missing = tmp_path / "no" / "dir" / "x.png"
    # A subprocess: OpenCV printed its warnings straight to the process's stderr.
    proc = subprocess.run(
        [sys.executable, "-c", "from kgagent.cli.main import main; main()"]
        + ["env", "show", "cardgame", "--out", str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: cannot write {missing}: No such file or directory"
    ]
