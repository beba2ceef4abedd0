"""Do skills transfer between similar states? θ_simi checked against what the agent did.

Why: a similarity edge (θ_simi < cos ≤ θ_merge) lets Eq. 3 offer a state the skills
of its neighbours. That is only worth it if a skill that works from one state also
works from a state that similar. The pixel encoder's θ_simi (0.70) was calibrated on
screen *types* (docs/perception.md); this script measures *function* from the step
logs of finished runs: for every skill executed from two different states u and v,
and every such pair with the skill valid from u, whether it was valid from v too,
binned by cos(u, v). "Good" is the same with ``R_total > invocation.r_good``.

    python benchmarks/learning.py --seeds 10 --rounds 0 --methods full   # prints its folder
    python benchmarks/experiments/skill_transfer.py /tmp/kgagent-bench-XXXX/civgame-full-*

Only executions that reached the program count (``actions > 0``). Both stages
already skip a skill whose first object is not on screen, so the figures say whether
a skill that could start did something, not whether it could start.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

BINS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.985, 1.0 + 1e-9)


def executions(memory: Path) -> dict[str, dict[str, tuple[bool, bool]]]:
    """skill id -> state id -> (valid from there at least once, good at least once)."""
    from kgagent.config import Config
    from kgagent.runlog_read import read_log

    r_good = Config().invocation.r_good
    out: dict[str, dict[str, tuple[bool, bool]]] = defaultdict(dict)
    for log in sorted((memory / "runs").glob("*.jsonl")):
        # The agent's own reader: a run killed mid-write leaves a torn last line, skipped.
        for d in read_log(log)[1]:
            for e in d.get("executions", []):
                if not e.get("skill_id") or not e.get("actions"):
                    continue
                valid, good = out[e["skill_id"]].get(e["from_state"], (False, False))
                out[e["skill_id"]][e["from_state"]] = (
                    valid or bool(e.get("valid_transition")),
                    good or float(e.get("r_total", 0.0)) > r_good,
                )
    return out


def transfer(memories: list[Path]) -> list[tuple[float, float, int, int, int, int]]:
    """Per cosine bin: (low, high, valid pairs, pairs, good pairs, pairs good at u)."""
    from kgagent.memory.store import Memory

    valid = np.zeros((len(BINS) - 1, 2), dtype=int)
    good = np.zeros((len(BINS) - 1, 2), dtype=int)
    for path in memories:
        mem = Memory.open(path, read_only=True)
        try:
            feats: dict[str, np.ndarray] = {}
            for by_state in executions(path).values():
                states = sorted(by_state)
                for s in states:
                    if s not in feats:
                        feats[s] = np.asarray(mem.state_feature(s), dtype=np.float64)
                for u in states:
                    if not by_state[u][0]:
                        continue
                    for v in states:
                        if v == u:
                            continue
                        k = int(np.digitize(float(feats[u] @ feats[v]), BINS)) - 1
                        k = min(max(k, 0), len(BINS) - 2)
                        valid[k] += (by_state[v][0], 1)
                        if by_state[u][1]:
                            good[k] += (by_state[v][1], 1)
        finally:
            mem.close()
    return [
        (BINS[k], min(BINS[k + 1], 1.0), *valid[k], *good[k])
        for k in range(len(BINS) - 1)
        if valid[k][1]
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("memories", nargs="+", type=Path, help="memory directories with runs/")
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.memories if not (p / "runs").is_dir()]
    if missing:
        print(f"error: not a memory with step logs: {', '.join(missing)}", file=sys.stderr)
        return 1
    from kgagent.errors import KGAgentError

    try:
        rows = transfer(args.memories)
    except KGAgentError as e:
        # A memory that cannot be opened read-only, or a damaged step log: one line, no
        # traceback; the memories are only read, never changed.
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{len(args.memories)} memories; pairs of states a skill ran from (valid from the first)")
    print()
    print("| cos(u, v) | pairs | P(valid from v) | pairs good from u | P(good from v) |")
    print("|---|---|---|---|---|")
    for lo, hi, nv, n, ng, m in rows:
        pg = f"{ng / m:.2f}" if m else "-"
        print(f"| {lo:.3f}–{hi:.3f} | {n} | {nv / n:.2f} | {m} | {pg} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
