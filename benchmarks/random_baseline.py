"""Random-action baseline on the built-in games (ground truth + env speed).

Why: it shows that the games are playable enough for progress to be
measurable, gives the floor any agent must beat, and measures that a frame and
an action cost only a few milliseconds.

Two policies, both seeded:
* ``uniform``: clicks uniformly over the screen, with occasional keys
  (10%: enter, escape, space, e, arrows) — a blind, persistent clicker;
* ``elements``: clicks the centre of a random truly-clickable element
  (``clickable_elements()``, a benchmark-only oracle) — an upper bound for
  a random policy with perfect perception.

Usage: python benchmarks/random_baseline.py [--steps 300] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from kgagent.actions import Action
from kgagent.envs.cardgame import CardGame
from kgagent.envs.civgame import CivGame

KEYS = ("enter", "escape", "space", "e", "left", "right", "up", "down")


def pick(env, rng: random.Random, policy: str) -> Action:
    w, h = env.size
    if policy == "uniform":
        if rng.random() < 0.1:
            return Action("key", key=rng.choice(KEYS))
        return Action("click", x=rng.randrange(w), y=rng.randrange(h))
    els = env.clickable_elements()
    if not els:
        return Action("key", key="enter")
    _n, (x, y, bw, bh) = rng.choice(els)
    return Action("click", x=x + bw // 2, y=y + bh // 2)


def run(game: type, policy: str, seed: int, steps: int) -> tuple[dict, list[float], list[float]]:
    env = game(seed)
    env.reset(seed)
    rng = random.Random(1000 + seed)
    frame_ms, step_ms = [], []
    for _ in range(steps):
        a = pick(env, rng, policy)
        t0 = time.perf_counter()
        _obs, _r, term, trunc, _info = env.step(a)
        step_ms.append((time.perf_counter() - t0) * 1000)
        env._frame = None  # force a full re-render to time it
        t0 = time.perf_counter()
        env.observe()
        frame_ms.append((time.perf_counter() - t0) * 1000)
        if term or trunc:
            break
    gt = env.ground_truth()
    return {"progression": gt.progression, "score": gt.score, "alive": gt.alive}, frame_ms, step_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    for game, prog_name, score_name in ((CardGame, "floors", "score"), (CivGame, "turns", "techs")):
        for policy in ("uniform", "elements"):
            rows = []
            fms: list[float] = []
            sms: list[float] = []
            print(f"\n{game.name} / {policy} clicks, {args.steps} steps")
            for seed in args.seeds:
                res, f, s = run(game, policy, seed, args.steps)
                rows.append(res)
                fms += f
                sms += s
                print(
                    f"  seed {seed}: {prog_name}={res['progression']:.0f} {score_name}={res['score']:.0f} alive={res['alive']}"
                )
            print(
                f"  mean: {prog_name}={statistics.mean(r['progression'] for r in rows):.2f} "
                f"{score_name}={statistics.mean(r['score'] for r in rows):.2f} "
                f"alive={sum(r['alive'] for r in rows)}/{len(rows)}"
            )
            if policy == "uniform":
                print(
                    f"  frame render ms p50={np.percentile(fms, 50):.2f} p95={np.percentile(fms, 95):.2f}; "
                    f"step (action incl. render) ms p50={np.percentile(sms, 50):.2f} p95={np.percentile(sms, 95):.2f}"
                )


if __name__ == "__main__":
    main()
