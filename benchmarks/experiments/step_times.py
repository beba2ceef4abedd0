"""One part of a step's time in finished runs, per step, and two versions compared step by step.

Each step log line carries ``times_ms`` (memory, segment, settle, ...). For each group
``NAME=GLOB`` of step logs this prints, over its steps, the part's p50 / p95 / mean per
step (ms), the whole step's p50, and the steps' summed time (s). With two groups, the runs
of one seed (from the run header) are compared: when they made the same decisions (every
step line equal but for its times and the random part of its ids), the second group's part
minus the first's is paired by step, per seed (mean ± SE, the paired t); runs that parted
are named and not paired.

    kgagent play --env gym:crafter --steps 300 --seed 1 --memory /tmp/a1 --quiet  # version A
    kgagent play --env gym:crafter --steps 300 --seed 1 --memory /tmp/b1 --quiet  # version B
    .venv/bin/python benchmarks/experiments/step_times.py 'old=/tmp/a*/runs/*.jsonl' \\
        'new=/tmp/b*/runs/*.jsonl' --part memory
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from kgagent.bench.stats import paired_t
from kgagent.errors import ConfigError
from kgagent.memory.core import without_random_part
from kgagent.runlog_read import read_log, step_logs

_TIMES = ("times_ms", "duration_s")


def runs_by_seed(files: list[str]) -> dict[int, list[dict]]:
    """The step lines of each run, by the seed in its header (runs of one seed add up)."""
    out: dict[int, list[dict]] = {}
    for f in files:
        header, steps, _ = read_log(f)
        out.setdefault(int((header or {}).get("seed", -1)), []).extend(steps)
    return dict(sorted(out.items()))


def summary(steps: list[dict], part: str) -> dict:
    """The part's per-step percentiles and mean (ms), the whole step's p50, the summed time."""
    if not steps:
        raise SystemExit("no step lines")
    mine = np.array([(r.get("times_ms") or {}).get(part, 0.0) for r in steps])
    whole = np.array([sum((r.get("times_ms") or {}).values()) for r in steps])
    return {
        "steps": len(steps),
        f"{part} p50_ms": round(float(np.percentile(mine, 50)), 1),
        f"{part} p95_ms": round(float(np.percentile(mine, 95)), 1),
        f"{part} mean_ms": round(float(mine.mean()), 1),
        "step p50_ms": round(float(np.percentile(whole, 50)), 1),
        "steps_s": round(sum(float(r.get("duration_s") or 0.0) for r in steps), 1),
    }


def _decisions(step: dict) -> str:
    return without_random_part(
        json.dumps({k: v for k, v in step.items() if k not in _TIMES}, sort_keys=True)
    )


def paired(a: dict[int, list[dict]], b: dict[int, list[dict]], part: str) -> dict[int, str]:
    """Per seed in both: ``b − a`` of the part, paired by step, or why it is not paired."""
    out: dict[int, str] = {}
    for seed in sorted(set(a) & set(b)):
        x, y = a[seed], b[seed]
        if len(x) != len(y) or any(_decisions(s) != _decisions(t) for s, t in zip(x, y)):
            out[seed] = "not paired: the runs made other decisions"
            continue
        t = paired_t(
            [(s.get("times_ms") or {}).get(part, 0.0) for s in y],
            [(s.get("times_ms") or {}).get(part, 0.0) for s in x],
        )
        out[seed] = t.text(1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="+", help="NAME=GLOB of step logs (JSONL); two to compare")
    ap.add_argument("--part", default="memory", help="the part of times_ms (default memory)")
    args = ap.parse_args(argv)
    groups: dict[str, dict[int, list[dict]]] = {}
    try:
        for group in args.groups:
            name, _, pattern = group.partition("=")
            groups[name] = runs_by_seed(step_logs([pattern or name]))
    except ConfigError as e:  # no file matches, or one that is not a step log
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name, runs in groups.items():
        steps = [s for seed_steps in runs.values() for s in seed_steps]
        print(json.dumps({"group": name, **summary(steps, args.part)}))
    if len(groups) == 2:
        (a, ra), (b, rb) = groups.items()
        for seed, text in paired(ra, rb, args.part).items():
            print(f"seed {seed}: {b} − {a}, {args.part} per step: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
