"""The play progress bar for readers that cannot take a redrawn line (kgagent/terminal.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from kgagent import terminal
from kgagent.agent.runner import POSTFIX_NAME, _postfix


@pytest.fixture
def on_a_terminal(monkeypatch):
    monkeypatch.setattr(terminal, "_isatty", lambda stream: True)
    monkeypatch.delenv("TERM", raising=False)
    for k in ("TQDM_ASCII", "TQDM_DISABLE"):
        monkeypatch.delenv(k, raising=False)


def test_a_dumb_terminal_gets_plain_lines(on_a_terminal, monkeypatch) -> None:
    """TERM=dumb (a screen reader's or an editor's shell): tqdm redrew the bar 25 times in
    9 s, each redraw read out with its block characters."""
    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(terminal.progress_bar(10, "play", "step"), terminal.PlainProgress)
    monkeypatch.setenv("TERM", "xterm")
    bar = terminal.progress_bar(10, "play", "step")
    try:
        assert not isinstance(bar, terminal.PlainProgress)
    finally:
        bar.close()


def test_tqdm_settings_it_cannot_draw_with_give_plain_lines_not_a_traceback() -> None:
    """tqdm reads ``$TQDM_*`` when it is imported: a process of its own."""
    code = (
        "from kgagent import terminal; terminal._isatty = lambda s: True; "
        "bar = terminal.progress_bar(10, 'play', 'step'); print(type(bar).__name__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "TERM"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "TQDM_ASCII": "1"},  # tqdm: ZeroDivisionError in its meter
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "PlainProgress"
    assert "note: tqdm cannot draw a bar (ZeroDivisionError; check $TQDM_*)" in out.stderr


def test_a_long_skill_name_is_cut_with_a_mark() -> None:
    rec = SimpleNamespace(
        path="hq", skill_name='right-click object_74 -> "Choose your card"', r_total=0.5
    )
    post = _postfix(rec, [])
    name = post.split(": ", 1)[1].split(" | ", 1)[0]
    assert len(name) == POSTFIX_NAME and name.endswith("...")
    short = SimpleNamespace(path="hq", skill_name='click "Deck"', r_total=0.5)
    assert _postfix(short, []).startswith('hq: click "Deck" | ')
