"""The step log's writer: a line written is in the file at once, for a reader or a kill."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kgagent.runlog import RunLogWriter


def _lines(path: Path) -> list[dict]:
    """The log's whole lines, read by another open of the file (as ``kgagent runs`` or
    ``kgagent view`` read the log of a run that is still going)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.endswith("\n")]


def test_every_line_is_readable_by_another_reader_before_the_log_is_closed(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    with path.open("w") as fh:  # as the runner opens it: buffered text
        out = RunLogWriter(fh)
        out.write("run", {"env": "toy", "seed": 0})
        assert _lines(path) == [{"type": "run", "env": "toy", "seed": 0}]
        for step in range(1, 4):
            out.write("step", {"step": step, "delta": np.float32(0.5), "op": ("key", "enter")})
            seen = _lines(path)
            assert len(seen) == 1 + step
            assert seen[-1] == {"type": "step", "step": step, "delta": 0.5, "op": ["key", "enter"]}
        assert not fh.closed
