"""A run's figures from its step log: episodes and achievements (Crafter), and random_keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgagent.bench.cell import finished, run_cell
from kgagent.bench.figures import crafter_score, episode_achievements, run_figures
from kgagent.bench.spec import parse_grid


def _step(n: int, ach: list[str], env_steps: int) -> dict:
    extra = {"achievements": ach, "env_steps": env_steps}
    return {"type": "step", "step": n, "truth": {"progression": len(ach), "extra": extra}}


def test_episodes_from_episode_lines_and_the_last_steps() -> None:
    lines = [
        {"type": "run"},
        _step(1, [], 1),
        _step(2, ["collect_wood"], 2),
        {"type": "episode", "steps": 2, "achievements": ["collect_wood"], "env_steps": 2},
        _step(3, [], 1),
        _step(4, ["wake_up"], 2),
        _step(5, ["collect_wood", "wake_up"], 3),
    ]
    eps = episode_achievements(lines)
    assert eps == [
        {"achievements": ["collect_wood"], "env_steps": 2},
        {"achievements": ["collect_wood", "wake_up"], "env_steps": 3},
    ]
    # a run that ends right after an episode line has no extra episode
    assert len(episode_achievements(lines[:4])) == 1
    assert episode_achievements([{"type": "step", "truth": {"progression": 1}}]) is None


def test_run_figures_reads_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = [_step(1, [], 1), _step(2, ["eat_cow", "collect_wood"], 2), _step(3, ["eat_cow"], 1)]
    lines.insert(
        2, {"type": "episode", "achievements": ["eat_cow", "collect_wood"], "env_steps": 2}
    )
    log.write_text("".join(json.dumps(d) + "\n" for d in lines) + '{"type": "st')  # torn last line
    f = run_figures({"progression": 1.0, "seed": 4, "alive": True, "paths": {}}, log)
    assert f["curve"] == [0.0, 2.0, 1.0] and "seed" not in f
    assert (f["achievements"], f["episode_count"], f["world_steps"]) == (2, 2, 3)
    assert f["unlocks_per_1000"] == pytest.approx(1000 * 3 / 3)


def test_err_is_a_figure_only_of_a_run_that_executed_a_skill(tmp_path: Path) -> None:
    """A run without executions (every random one) has no ERR: left out of its figures,
    so a grid's mean and paired tests skip it (it was a 0.000 in them)."""
    ran = run_figures({"err": 0.25, "executions": 4}, None)
    idle = run_figures({"err": 0.0, "executions": 0}, None)
    assert ran["err"] == 0.25 and "err" not in idle


def test_crafter_score_by_hand() -> None:
    names = ["a", "b"]
    # a in 1 of 2 episodes (50 %), b never: exp((ln 51 + ln 1) / 2) - 1 = sqrt(51) - 1
    assert crafter_score([["a"], []], names) == pytest.approx(51**0.5 - 1)
    assert crafter_score([], names) == 0.0


def test_random_keys_cell_on_crafter(tmp_path: Path) -> None:
    pytest.importorskip("crafter")
    grid = parse_grid(
        {"envs": ["gym:crafter"], "methods": ["random_keys"], "seeds": [1], "steps": 30},
        tmp_path / "g.toml",
    )
    cell = grid.cells[0]
    out = run_cell(cell.to_dict(), tmp_path / "cell")
    assert out["status"] == "done", out
    record = finished(tmp_path / "cell", cell.digest)
    run = record["runs"][0]
    assert run["summary"]["steps"] == 30 and run["summary"]["ablation"] == "random_keys"
    assert run["figures"]["world_steps"] == 30 and run["figures"]["episode_count"] >= 1
    assert len(run["figures"]["curve"]) == 30
    assert not (tmp_path / "cell" / "memory").exists()  # a baseline keeps no memory
