"""How long one input takes on a real window, by part, read from finished runs' step logs.

Each step log entry carries ``times_ms`` (settle, input, capture and perception,
memory, brain, ...) for the whole step and the inputs its executions sent. An input's
time is its step's total divided by the step's inputs; every input counts once, so
the percentiles are over inputs, not steps. Parts are reported the same way
(median per input). The mix of inputs differs between runs (a drag moves the
pointer for 0.2 s, a key press takes a millisecond), so ``by_kind`` gives the same
figures over the steps whose inputs were all of one kind: those compare across runs.

``--no-change-keys K1,K2,…`` also counts the presses of those keys that the step log
records as having changed nothing (``grounding[].change`` 0), over the whole run and
its second half: for keys that change the program's screen whenever they are pressed
(Crafter's movement keys w, a, s, d: it moves or turns unless blocked), a count above
what blocking explains is reactions the settle wait did not wait for. The keys are the
harness's knowledge of the program, never the agent's. ``late_changes`` sums the step
lines' ``late_changes``: changes found after an action had settled, before the next step
or execution began (credited to no input), and the steps that had any. ``runs`` gives the
runs' wall time and episodes (their summary lines) and ``slow_steps``: the steps whose
settle wait took more than ``--slow-ms`` (1,000) an input, a screen that would not hold
still.

    env -u DISPLAY kgagent play --env desktop --launch "python -m crafter.run_gui --wait True" \\
        --steps 100 --memory /tmp/lat --format json
    .venv/bin/python benchmarks/experiments/action_latency.py '/tmp/lat/runs/*.jsonl' \\
        --no-change-keys w,a,s,d
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict

import numpy as np

from kgagent.errors import ConfigError
from kgagent.runlog_read import read_log, step_logs


def per_input(files: list[str]) -> dict:
    """Per-input times (ms) and part medians over the step logs ``files``."""
    totals: list[float] = []
    parts: dict[str, list[float]] = defaultdict(list)
    kinds: Counter = Counter()
    pure: dict[str, list[float]] = defaultdict(list)  # steps of one kind of input
    pure_settle: dict[str, list[float]] = defaultdict(list)
    for r in (step for f in files for step in read_log(f)[1]):
        n = sum(e.get("actions", 0) for e in r.get("executions", []))
        if n <= 0:
            continue
        times = r.get("times_ms") or {}
        each = sum(times.values()) / n
        totals += [each] * n
        for part, ms in times.items():
            parts[part] += [ms / n] * n
        mine = [
            (g.get("action") or {}).get("kind", "none")
            for e in r.get("executions", [])
            for g in e.get("grounding", [])
        ]
        kinds.update(mine)
        if len(set(mine)) == 1:
            pure[mine[0]] += [each] * n
            pure_settle[mine[0]] += [times.get("settle", 0.0) / n] * n
    if not totals:
        raise SystemExit("no step with an input in " + ", ".join(files))
    t = np.array(totals)
    return {
        "inputs": len(t),
        "p50_ms": _pct(totals, 50),
        "p95_ms": _pct(totals, 95),
        "mean_ms": round(float(t.mean()), 1),
        "part_median_ms": {
            k: round(float(np.median(v)), 1)
            for k, v in sorted(parts.items(), key=lambda kv: -float(np.median(kv[1])))
        },
        "input_kinds": dict(kinds.most_common()),
        "by_kind": {
            k: {
                "inputs": len(v),
                "p50_ms": _pct(v, 50),
                "p95_ms": _pct(v, 95),
                "settle_median_ms": _pct(pure_settle[k], 50),
            }
            for k, v in sorted(pure.items(), key=lambda kv: -len(kv[1]))
        },
    }


def late_changes(files: list[str]) -> dict:
    """Changes found after an action had settled (the step lines' ``late_changes``)."""
    counts = [int(r.get("late_changes", 0)) for f in files for r in read_log(f)[1]]
    return {
        "steps": len(counts),
        "changes": sum(counts),
        "steps_with_one": sum(c > 0 for c in counts),
    }


def run_totals(files: list[str], slow_ms: float) -> dict:
    """The runs' wall time and episodes (their summary lines), and the steps whose settle
    wait took more than ``slow_ms`` an input (a screen that would not hold still)."""
    wall, episodes, slow = 0.0, 0, 0
    for f in files:
        _header, steps, summary = read_log(f)
        if summary is not None:
            wall += float(summary.get("duration_s") or 0.0)
            episodes += int(summary.get("episodes") or 0)
        for r in steps:
            n = sum(e.get("actions", 0) for e in r.get("executions", []))
            if n > 0 and (r.get("times_ms") or {}).get("settle", 0.0) / n > slow_ms:
                slow += 1
    return {"wall_s": round(wall, 1), "episodes": episodes, "slow_steps": slow}


def no_change(files: list[str], keys: set[str]) -> dict:
    """Presses of ``keys`` that changed nothing (Δ 0), in the whole run and its second half."""
    unchanged = [
        not (g.get("change") or 0)
        for r in (step for f in files for step in read_log(f)[1])
        for e in r.get("executions", [])
        for g in e.get("grounding", [])
        if (g.get("action") or {}).get("kind") == "key" and (g["action"].get("key") in keys)
    ]
    half = unchanged[len(unchanged) // 2 :]
    return {
        "keys": sorted(keys),
        "presses": len(unchanged),
        "no_change": sum(unchanged),
        "second_half": {"presses": len(half), "no_change": sum(half)},
    }


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", help="step logs (globs), e.g. '/tmp/lat/runs/*.jsonl'")
    ap.add_argument(
        "--no-change-keys",
        default="",
        help="comma-separated keys: count their presses that changed nothing (e.g. w,a,s,d)",
    )
    ap.add_argument(
        "--slow-ms",
        type=float,
        default=1000.0,
        help="count the steps whose settle wait took more than this (ms) an input",
    )
    args = ap.parse_args(argv)
    try:
        files = step_logs(args.logs)
        out = {
            **per_input(files),
            "late_changes": late_changes(files),
            "runs": run_totals(files, args.slow_ms),
        }
        keys = {k.strip() for k in args.no_change_keys.split(",") if k.strip()}
        if keys:
            out["no_change_keys"] = no_change(files, keys)
        print(json.dumps(out, indent=1))
    except ConfigError as e:  # no file matches, or one that is not a step log
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
