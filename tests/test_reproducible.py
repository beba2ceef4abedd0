"""Same seed, fresh memories: the same run, step for step (ids differ only in their random part)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from command_lines import KGAGENT, play_args

from kgagent.agent.runner import Runner
from kgagent.config import Config

_RANDOM_PART = re.compile(r"\b([skoc]-\d{7})-[0-9a-f]{10}\b")
_NAME_HASH = re.compile(r"#[0-9a-f]{6}\b")  # offline skill names hash the (random) state id


def _steps(log: Path) -> list[str]:
    """The step lines of a log, without wall-clock times and the random part of ids."""
    steps = []
    for line in log.read_text().splitlines():
        row = json.loads(line)
        if row.get("type") == "step":
            row.pop("duration_s", None)
            row.pop("times_ms", None)  # wall-clock, like the duration
            text = _RANDOM_PART.sub(r"\1", json.dumps(row, sort_keys=True))
            steps.append(_NAME_HASH.sub("#", text))
    return steps


def _run(tmp: Path, env: str) -> list[str]:
    cfg = Config.load(None, [f"run.env={env}", "run.steps=40", "run.seed=3"])
    summary = Runner(cfg, memory_path=tmp, progress=False, log=lambda *a, **k: None).run()
    return _steps(Path(summary.log_path))


@pytest.mark.parametrize("env", ["cardgame", "civgame", "gym:crafter"])
def test_same_seed_same_run(tmp_path: Path, env: str) -> None:
    if env.startswith("gym:"):
        pytest.importorskip("crafter", reason="the games extra is not installed")
    a = _run(tmp_path / "a", env)
    b = _run(tmp_path / "b", env)
    assert len(a) == len(b) > 0
    for i, (x, y) in enumerate(zip(a, b), start=1):
        assert x == y, f"runs diverge at step {i}"


def test_either_engine_the_same_run(tmp_path: Path) -> None:
    """R_state sums a state's edge weights (Eq. 10): in whatever order an engine reads
    them, the sum is the same to the last digit (LadybugDB and Kùzu differed at step 27).
    One process per engine: one process loads one."""
    env = {k: v for k, v in os.environ.items() if k != "KGAGENT_ENGINE"}  # it would choose
    runs = []
    for engine in ("ladybug", "kuzu"):
        mem = tmp_path / engine
        args = play_args(mem, "--seed", "3", "--set", f"memory.engine={engine}",
                         steps=40, env="cardgame")  # fmt: skip
        res = subprocess.run([*KGAGENT, *args], capture_output=True, text=True, env=env,
                             timeout=300)  # fmt: skip
        assert res.returncode == 0, res.stderr
        (log,) = (mem / "runs").glob("*.jsonl")
        runs.append(_steps(log))
    a, b = runs
    assert len(a) == len(b) > 0
    for i, (x, y) in enumerate(zip(a, b), start=1):
        assert x == y, f"the engines' runs diverge at step {i}"
