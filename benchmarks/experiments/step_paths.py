"""Where a run's steps and inputs went, read from finished runs' step logs.

Per group of runs (a glob each): steps, the path each step ended on (hq, cluster,
augment), the steps on which stage 1 (HQ) ran at all, evaluated executions and the
share judged progressive per path (the judge's R_progress > 0), and the inputs tried
per device (keyboard: keys, hotkeys, typed text; pointer: the rest) with how many
changed the screen (Δ ≥ augment.min_change's default) and which keys did.

With ``--per-run``, also per run (by the seed in its header): the keyboard's share of
the inputs and the inputs that changed the screen; with two groups, the second minus the
first of those, paired by seed (mean ± SE, the paired t).

    .venv/bin/python benchmarks/experiments/step_paths.py \\
        'full=/tmp/kgagent-judges-*/truth-cardgame-full-*/runs/*.jsonl' \\
        'no_graph=/tmp/kgagent-judges-*/truth-cardgame-no_graph-*/runs/*.jsonl'
    .venv/bin/python benchmarks/experiments/step_paths.py --per-run \\
        'full=/tmp/kgagent-crafter-*/memory-full-*/runs/*.jsonl' \\
        'keys=/tmp/kgagent-crafter-*/memory-keys-*/runs/*.jsonl'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from kgagent.bench.stats import paired_t
from kgagent.config import Config
from kgagent.errors import ConfigError
from kgagent.runlog_read import read_log, step_logs

KEYBOARD = ("key", "hotkey", "type")


def tally(files: list[str], min_change: float) -> dict:
    steps, hq_ran = 0, 0
    ended: Counter = Counter()
    executions: Counter = Counter()
    progressive: Counter = Counter()
    tried: Counter = Counter()
    changed: Counter = Counter()
    keys: Counter = Counter()
    for r in (step for f in files for step in read_log(f)[1]):
        steps += 1
        ended[r["path"]] += 1
        runs = r.get("executions", [])
        hq_ran += any(e["path"] == "hq" for e in runs)
        for e in runs:
            if e.get("evaluated"):
                executions[e["path"]] += 1
                progressive[e["path"]] += (e.get("r_progress") or 0) > 0
            for g in e.get("grounding", []):
                op = g["op"]
                dev = "keyboard" if op["kind"] in KEYBOARD else "pointer"
                tried[dev] += 1
                if g["change"] >= min_change:
                    changed[dev] += 1
                    if dev == "keyboard":
                        keys[op.get("key") or op.get("text")] += 1
    return {
        "runs": len(files),
        "steps": steps,
        "ended on": dict(ended),
        "steps where HQ ran": hq_ran,
        "evaluated executions": dict(executions),
        "progressive share": {p: round(progressive[p] / n, 4) for p, n in executions.items()},
        "inputs tried": dict(tried),
        "inputs that changed the screen": dict(changed),
        "keys that changed it": dict(keys.most_common(10)),
    }


def per_run(files: list[str], min_change: float) -> dict[int, dict]:
    """Per run, by the seed in its header: the keyboard's share of the inputs tried, and
    how many inputs changed the screen. Runs of one seed (rounds) add up."""
    out: dict[int, dict] = {}
    for f in files:
        header, steps, _ = read_log(f)
        seed = int((header or {}).get("seed", -1))
        row = out.setdefault(seed, {"keyboard": 0, "pointer": 0, "changed": 0})
        for g in (g for r in steps for e in r.get("executions", []) for g in e["grounding"]):
            row["keyboard" if g["op"]["kind"] in KEYBOARD else "pointer"] += 1
            row["changed"] += g["change"] >= min_change
    for row in out.values():
        row["keyboard share"] = round(row["keyboard"] / max(1, row["keyboard"] + row["pointer"]), 3)
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="+", help="NAME=GLOB of step logs (JSONL)")
    ap.add_argument(
        "--per-run", action="store_true", help="also per run; two groups: paired by seed"
    )
    args = ap.parse_args(argv)
    min_change = Config().augment.min_change
    runs: dict[str, dict[int, dict]] = {}
    for group in args.groups:
        name, _, pattern = group.partition("=")
        try:
            files = step_logs([pattern or name])
            out = {"group": name, **tally(files, min_change)}
            if args.per_run:
                runs[name] = out["per run"] = per_run(files, min_change)
            print(json.dumps(out, indent=1))
        except ConfigError as e:  # no file matches, or one that is not a step log
            print(f"error: {e}", file=sys.stderr)
            return 2
    if len(runs) == 2:
        (a, ra), (b, rb) = runs.items()
        seeds = sorted(set(ra) & set(rb))
        if len(seeds) >= 2:
            d = paired_t([rb[s]["changed"] for s in seeds], [ra[s]["changed"] for s in seeds])
            print(f"{b} − {a}, inputs that changed the screen, by seed: {d.text(1)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
