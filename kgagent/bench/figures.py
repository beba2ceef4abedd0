"""The figures of one run: its summary's numbers, plus what only the step log holds.

A run's :class:`~kgagent.runlog.RunSummary` has the papers' columns (progression,
score, ERR, cost, the graph's size). Two more things are read back from the step
log, which records the harness's ground truth at every step:

* the progression curve (one value per step), for learning curves;
* for environments whose ground truth lists achievements (Crafter), the
  achievements of every episode: distinct achievements over the run, unlocks (an
  achievement counts once per episode, as Crafter's reward does) per 1,000 steps,
  episodes and world steps (inputs that moved the game). Episode lines close the
  episodes that ended; the steps after the last one are the episode the run
  ended in.

Only the standard library is used (results are written without the agent).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

#: Summary fields that are numbers but not figures (identifiers, bookkeeping).
NOT_FIGURES = {"seed", "episodes"}
#: Figures of runs whose ground truth lists achievements (Crafter), read from the step log.
ACHIEVEMENT_FIGURES = ("achievements", "unlocks_per_1000", "episode_count", "world_steps")
#: The names of Crafter as an environment (kgagent.envs.gym plays them with its own adapter).
CRAFTER_ENVS = ("gym:crafter", "gym:crafterreward-v1", "gym:crafternoreward-v1")


def read_lines(path: str | Path) -> list[dict[str, Any]]:
    """Every JSON line of a step log (a torn last line is skipped)."""
    out: list[dict[str, Any]] = []
    lines = Path(path).read_text().splitlines()
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError:
            if i == len(lines):
                break
            raise
    return out


def run_figures(summary: dict[str, Any], log_path: str | Path | None) -> dict[str, Any]:
    """The figures of one run (numbers only) and its curve and episodes (lists)."""
    figures: dict[str, Any] = {
        k: (float(v) if isinstance(v, float) else v)
        for k, v in summary.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in NOT_FIGURES
    }
    figures["alive"] = int(bool(summary.get("alive", True)))
    if not summary.get("executions"):
        figures.pop("err", None)  # no executed skill: no rate (a blank in runs.csv, not a 0)
    lines = read_lines(log_path) if log_path and Path(log_path).is_file() else []
    steps = [d for d in lines if d.get("type") == "step"]
    figures["curve"] = [float((s.get("truth") or {}).get("progression", 0.0) or 0.0) for s in steps]
    episodes = episode_achievements(lines)
    if episodes is not None:
        n_steps = max(1, len(steps))
        figures["achievements"] = len({a for e in episodes for a in e["achievements"]})
        figures["unlocks_per_1000"] = (
            1000.0 * sum(len(set(e["achievements"])) for e in episodes) / n_steps
        )
        figures["episode_count"] = len(episodes)
        figures["world_steps"] = sum(int(e.get("env_steps", 0)) for e in episodes)
        figures["episodes"] = [e["achievements"] for e in episodes]
    return figures


def episode_achievements(lines: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Per episode: its achievements and world steps; None when the log has no achievements."""
    episodes: list[dict[str, Any]] = []
    since = 0
    last: dict[str, Any] = {}
    seen = False
    for d in lines:
        if d.get("type") == "step":
            since += 1
            last = (d.get("truth") or {}).get("extra") or {}
            seen = seen or "achievements" in last
        elif d.get("type") == "episode":
            seen = seen or "achievements" in d
            episodes.append(
                {
                    "achievements": list(d.get("achievements") or []),
                    "env_steps": int(d.get("env_steps", 0) or 0),
                }
            )
            since = 0
    if since:
        episodes.append(
            {
                "achievements": list(last.get("achievements") or []),
                "env_steps": int(last.get("env_steps", 0) or 0),
            }
        )
    return episodes if seen else None


def crafter_score(episodes: list[list[str]], names: list[str]) -> float:
    """Hafner's score, %: S = exp(mean_i ln(1 + s_i)) - 1, s_i in % of episodes."""
    if not episodes or not names:
        return 0.0
    rates = [100.0 * sum(a in e for e in episodes) / len(episodes) for a in names]
    return math.exp(statistics.fmean(math.log(1.0 + r) for r in rates)) - 1.0


def achievement_names(env: str) -> list[str] | None:
    """The achievement names of a ``gym:ID`` environment that has them (Crafter), else None."""
    if env.lower() not in CRAFTER_ENVS:
        return None
    try:
        import crafter
    except ImportError:
        return None
    return list(crafter.constants.achievements)
