"""Same seed, fresh memories: the same run, step for step (ids differ only in their random part)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kgagent.agent.runner import Runner
from kgagent.config import Config

_RANDOM_PART = re.compile(r"\b([skoc]-\d{7})-[0-9a-f]{10}\b")
_NAME_HASH = re.compile(r"#[0-9a-f]{6}\b")  # offline skill names hash the (random) state id


def _run(tmp: Path, env: str) -> list[str]:
    cfg = Config.load(None, [f"run.env={env}", "run.steps=40", "run.seed=3"])
    summary = Runner(cfg, memory_path=tmp, progress=False, log=lambda *a, **k: None).run()
    steps = []
    for line in Path(summary.log_path).read_text().splitlines():
        row = json.loads(line)
        if row.get("type") == "step":
            row.pop("duration_s", None)
            row.pop("times_ms", None)  # wall-clock, like the duration
            text = _RANDOM_PART.sub(r"\1", json.dumps(row, sort_keys=True))
            steps.append(_NAME_HASH.sub("#", text))
    return steps


@pytest.mark.parametrize("env", ["cardgame", "civgame", "gym:crafter"])
def test_same_seed_same_run(tmp_path: Path, env: str) -> None:
    if env.startswith("gym:"):
        pytest.importorskip("crafter", reason="the games extra is not installed")
    a = _run(tmp_path / "a", env)
    b = _run(tmp_path / "b", env)
    assert len(a) == len(b) > 0
    for i, (x, y) in enumerate(zip(a, b), start=1):
        assert x == y, f"runs diverge at step {i}"
