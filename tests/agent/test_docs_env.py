"""The `Env` example of docs/games.md runs as written (a program of the user's own)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "games.md"


def test_the_docs_env_example_runs_and_names_its_run(tmp_path, monkeypatch, capsys) -> None:
    text = DOC.read_text()
    start = text.index("## A program of your own, from Python")
    code = re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)
    assert ".run(60)" in code
    monkeypatch.chdir(tmp_path)
    scope: dict = {"__name__": "docs_example"}
    exec(compile(code.replace(".run(60)", ".run(15)"), str(DOC), "exec"), scope)  # noqa: S102
    summary = scope["summary"]
    assert summary.env == "counter" and summary.steps == 15
    assert "environment       counter (seed 0, full)" in capsys.readouterr().out
    assert (tmp_path / "counter-memory" / "runs").is_dir()
