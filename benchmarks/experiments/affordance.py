"""Do screens that look alike to the pixel encoder afford the same actions? Per cosine bin.

The question behind θ_merge and θ_simi: a state node stands for screens that afford the
same actions (merge), and a similarity edge should join screens whose actions mostly
carry over (Eq. 2–3 borrow skills across it). This measures that on three programs, the
two built-in games and Crafter (Hafner 2021), from the programs' own behaviour:

* screens come from uniformly random play (Crafter: its 17 actions; the built-in games:
  clicks on a grid of points), one every ``--every`` steps;
* a screen's affordances are the probe actions that change what the program shows,
  compared with doing nothing (Crafter's world moves on its own: an action counts when
  its next frame differs from the no-op's, both from copies of the same world); probes
  are Crafter's 16 keys and, for the built-in games, clicks on a 16 × 9 grid;
* for every pair of screens: the cosine of their pixel-encoder features and the Jaccard
  overlap of their affordances.

Printed per program and cosine bin: pairs, mean Jaccard, and the share of pairs with the
same affordances (Jaccard 1). The programs' internals are read here, by a benchmark, to
know the ground truth; the agent never sees them.

    python benchmarks/experiments/affordance.py --screens 120
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() not in (HERE, HERE.parent)]

BINS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.985, 0.995, 1.0001)


def crafter_screens(n: int, every: int, seed: int) -> tuple[list[np.ndarray], list[frozenset]]:
    import crafter

    rng = np.random.default_rng(seed)
    env = crafter.Env(seed=seed, size=(600, 600))
    env.reset()
    noop = crafter.constants.actions.index("noop")
    probes = [i for i in range(len(crafter.constants.actions)) if i != noop]
    shots, affs = [], []
    steps = 0
    while len(shots) < n:
        if steps % every == 0:
            base = copy.deepcopy(env)
            ref = base.step(noop)[0]
            aff = set()
            for a in probes:
                e = copy.deepcopy(env)
                if not np.array_equal(e.step(a)[0], ref):
                    aff.add(a)
            shots.append(env.render())
            affs.append(frozenset(aff))
        _, _, done, _ = env.step(int(rng.integers(len(crafter.constants.actions))))
        steps += 1
        if done:
            env.reset()
    return shots, affs


def builtin_screens(
    name: str, n: int, every: int, seed: int
) -> tuple[list[np.ndarray], list[frozenset]]:
    from kgagent.actions import Action
    from kgagent.config import Config
    from kgagent.envs.registry import make_env

    cfg = Config()
    cfg.run.seed = seed
    env = make_env(name, cfg)
    obs, _ = env.reset(seed=seed)
    w, h = env.size
    grid = [(int((x + 0.5) * w / 16), int((y + 0.5) * h / 9)) for y in range(9) for x in range(16)]
    rng = np.random.default_rng(seed)
    shots, affs = [], []
    steps = 0
    while len(shots) < n:
        if steps % every == 0:
            aff = set()
            for i, (x, y) in enumerate(grid):
                e = copy.deepcopy(env)
                if not np.array_equal(e.step(Action("click", x=x, y=y))[0], obs):
                    aff.add(i)
            shots.append(obs)
            affs.append(frozenset(aff))
        x, y = grid[int(rng.integers(len(grid)))]
        obs, _, term, trunc, _ = env.step(Action("click", x=x, y=y))
        steps += 1
        if term or trunc:
            obs, _ = env.reset(seed=seed + steps)
    return shots, affs


def table(name: str, shots: list[np.ndarray], affs: list[frozenset]) -> str:
    from kgagent.perception.encoders import PixelEncoder

    feats = PixelEncoder().encode(shots)
    cos = feats @ feats.T
    iu = np.triu_indices(len(shots), 1)
    c = cos[iu]
    jac = np.array(
        [
            len(affs[i] & affs[j]) / max(1, len(affs[i] | affs[j]))
            for i, j in zip(iu[0], iu[1], strict=True)
        ]
    )
    lines = [
        f"{name}: {len(shots)} screens, {len(c)} pairs, affordances per screen "
        f"{np.mean([len(a) for a in affs]):.1f}",
        "| cosine | pairs | mean Jaccard | same affordances |",
        "|---|---|---|---|",
    ]
    for lo, hi in zip(BINS, BINS[1:], strict=False):
        m = (c >= lo) & (c < hi)
        if m.any():
            lines.append(
                f"| {lo:.3f}–{min(hi, 1.0):.3f} | {int(m.sum())} | {jac[m].mean():.3f} "
                f"| {(jac[m] == 1.0).mean():.0%} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--screens", type=int, default=120, help="screens per program")
    ap.add_argument("--every", type=int, default=3, help="keep one screen every N steps")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--programs", default="crafter,cardgame,civgame")
    args = ap.parse_args(argv)
    for name in args.programs.split(","):
        if name == "crafter":
            shots, affs = crafter_screens(args.screens, args.every, args.seed)
        else:
            shots, affs = builtin_screens(name, args.screens, args.every, args.seed)
        print(table(name, shots, affs))
        print()


if __name__ == "__main__":
    main()
