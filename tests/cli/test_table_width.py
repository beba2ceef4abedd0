"""A table for people fits the terminal it is printed on: the widest text columns are cut
(ending in "…") and the table says so; numbers and headers stay whole. Printed into a
pipe or a file, every value is whole, as json and csv always are."""

from __future__ import annotations

import os
import pty
import subprocess

from command_lines import KGAGENT

from cli.output import CUT_NOTE, display_width, render

ROWS = [
    {"name": "a" * 70, "count": 123456789, "path": "/home/user/" + "x" * 80, "ok": True},
    {
        "name": "short",
        "count": 2,
        "path": "/tmp/漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字",
        "ok": False,
    },
]


def test_a_wide_table_is_cut_to_the_width_and_says_so() -> None:
    text = render(ROWS, "table", width=100)
    lines = text.splitlines()
    assert all(display_width(ln) <= 100 for ln in lines), lines
    assert lines[-1] == CUT_NOTE and lines[0].split() == ["name", "count", "path", "ok"]
    assert "123456789" in text  # numbers whole
    assert lines[2].split()[0] == "a" * 70  # the first column names the row: whole
    assert "…" in lines[2] and "…" in lines[3]  # the long texts after it are cut


def test_a_table_that_fits_or_goes_to_a_pipe_is_whole() -> None:
    assert render(ROWS, "table", width=None) == render(ROWS, "table", width=10_000)
    whole = render(ROWS, "table", width=None)
    assert "a" * 70 in whole and CUT_NOTE not in whole


def test_a_terminal_too_narrow_for_the_headers_keeps_them_whole() -> None:
    lines = render(ROWS, "table", width=10).splitlines()
    assert lines[0].split() == ["name", "count", "path", "ok"]
    assert lines[-1] == CUT_NOTE


def test_the_cli_fits_its_terminal_and_not_its_pipe(tmp_path) -> None:
    """``kgagent config`` (a key/value table of every field) on a 70-column terminal."""
    env = {**os.environ, "COLUMNS": "70", "LINES": "40", "KGAGENT_MEMORY": str(tmp_path)}
    cmd = [*KGAGENT, "config"]
    main, side = pty.openpty()
    chunks = []
    try:
        proc = subprocess.Popen(cmd, stdout=side, stderr=subprocess.DEVNULL, env=env)
        os.close(side)
        while True:  # read as it writes: a terminal's buffer is small
            try:
                data = os.read(main, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(main)
    assert proc.returncode == 0
    shown = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert shown and all(display_width(ln) <= 70 for ln in shown), max(shown, key=len)
    piped = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert CUT_NOTE not in piped.stdout
