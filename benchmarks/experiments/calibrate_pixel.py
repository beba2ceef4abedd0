"""Calibrate θ_merge / θ_simi for the pixel encoder on the built-in games.

Why: cosines of the weight-free pixel encoder do not mean what CLIP cosines
mean, so the papers' (0.95, 0.88) cannot be reused blindly. This script plays
the built-in games with a random policy (it reads ``clickable_elements()`` and
the screen name from ``info`` -- benchmark-only ground truth, never seen by the
agent), encodes every screenshot, and prints cosine distributions for pairs of
screens in four groups:

* ``near-identical``  -- same screen type, 0 < Δ ≤ ``--small`` (a number or a
  highlight changed): should merge;
* ``same type``       -- same screen type, Δ > ``--small`` (scrolled map,
  another hand, other enemies): should link (θ_simi < cos ≤ θ_merge);
* ``scrolled map``    -- a subset of ``same type``: before/after a scroll;
* ``other type``      -- different screens of one game (map vs fight vs
  reward vs overlays): should stay apart (cos ≤ θ_simi).

It then reports how each group falls with respect to the chosen thresholds.

    python benchmarks/experiments/calibrate_pixel.py [--seeds 4] [--first-seed 3] [--steps 150]
                                         [--merge 0.985 --simi 0.70]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict

import numpy as np

from kgagent.actions import Action
from kgagent.config import Config
from kgagent.envs.registry import make_env
from kgagent.perception import PixelEncoder, visual_change


def _label(game: str, info: dict) -> str:
    screen = info.get("screen", "?")
    if info.get("overlay"):
        screen = f"overlay:{info['overlay']}"
    return f"{game}:{screen}"


def collect(
    game: str, seeds: int, steps: int, first_seed: int = 0
) -> list[tuple[np.ndarray, str, str]]:
    """(screenshot, screen label, how it was reached) along random play."""
    out = []
    for seed in range(first_seed, first_seed + seeds):
        cfg = Config()
        cfg.run.seed = seed
        env = make_env(game, cfg)
        rng = random.Random(1000 + seed)
        obs, info = env.reset(seed)
        out.append((obs, _label(game, info), "reset"))
        for _ in range(steps):
            r = rng.random()
            clickable = env.clickable_elements()
            if r < 0.7 and clickable:
                _, (x, y, w, h) = rng.choice(clickable)
                act, how = Action("click", x=x + w // 2, y=y + h // 2), "click"
            elif r < 0.85:
                if rng.random() < 0.5:
                    key = rng.choice(["left", "right", "up", "down"])
                    act = Action("key", key=key)
                else:
                    act = Action("scroll", x=640, y=360, scroll=rng.choice([-2, -1, 1, 2]))
                how = "scroll"
            else:
                act = Action("click", x=rng.randrange(1280), y=rng.randrange(720))
                how = "random"
            obs, _r, term, trunc, info = env.step(act)
            out.append((obs, _label(game, info), how))
            if term or trunc:
                obs, info = env.reset(seed + 100)
                out.append((obs, _label(game, info), "reset"))
        env.close()
    return out


def quantiles(v: list[float]) -> str:
    if not v:
        return "| – | – | – | – | – | – |"
    a = np.asarray(v)
    q = np.quantile(a, [0.0, 0.05, 0.5, 0.95, 1.0])
    return f"| {len(a)} | " + " | ".join(f"{x:.3f}" for x in q) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default="cardgame,civgame")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument(
        "--first-seed",
        type=int,
        default=3,
        help="seeds 0-2 were used to choose the block weights; evaluate on others",
    )
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--small", type=float, default=0.005, help="Δ bound of near-identical")
    ap.add_argument("--pairs", type=int, default=20000, help="random pairs per game")
    ap.add_argument("--merge", type=float, default=None)
    ap.add_argument("--simi", type=float, default=None)
    args = ap.parse_args(argv)

    enc = PixelEncoder()
    thr = Config().perception.change_threshold  # Δ's grey-level threshold
    merge = args.merge if args.merge is not None else enc.default_thresholds[0]
    simi = args.simi if args.simi is not None else enc.default_thresholds[1]
    groups: dict[str, list[float]] = defaultdict(list)
    per_type: dict[str, list[float]] = defaultdict(list)
    rng = random.Random(0)
    n_screens = 0
    t_enc = 0.0
    for game in args.games.split(","):
        shots = collect(game, args.seeds, args.steps, args.first_seed)
        n_screens += len(shots)
        imgs = [s[0] for s in shots]
        t = time.perf_counter()
        feats = enc.encode(imgs)
        t_enc += time.perf_counter() - t
        labels = [s[1] for s in shots]
        # consecutive pairs: scrolls and small changes
        for i in range(1, len(shots)):
            if labels[i] != labels[i - 1]:
                continue
            d = visual_change(imgs[i - 1], imgs[i], thr)
            if d == 0:
                continue
            c = float(feats[i - 1] @ feats[i])
            if d <= args.small:
                groups["near-identical (same type, Δ ≤ small)"].append(c)
            elif shots[i][2] == "scroll":
                groups["scrolled view (same type, after scroll/arrow)"].append(c)
        # random pairs
        n = len(shots)
        for _ in range(args.pairs):
            i, j = rng.randrange(n), rng.randrange(n)
            if i == j:
                continue
            c = float(feats[i] @ feats[j])
            if labels[i] == labels[j]:
                d = visual_change(imgs[i], imgs[j], thr)
                if d == 0:
                    groups["identical (Δ = 0)"].append(c)
                elif d > args.small:
                    groups["same type (Δ > small)"].append(c)
                    per_type[labels[i]].append(c)
            else:
                groups["other type (same game)"].append(c)
                per_type[" vs ".join(sorted((labels[i], labels[j])))].append(c)

    print(
        f"pixel encoder {enc.identity}, games {args.games}, seeds {args.first_seed}.."
        f"{args.first_seed + args.seeds - 1}, {args.steps} random steps each"
    )
    print(f"{n_screens} screens, {1000 * t_enc / max(1, n_screens):.2f} ms/screen to encode")
    print(f"thresholds: θ_merge={merge}, θ_simi={simi}\n")
    print("| group | pairs | min | p5 | median | p95 | max | merge (>θm) | link | apart (≤θs) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    order = [
        "identical (Δ = 0)",
        "near-identical (same type, Δ ≤ small)",
        "same type (Δ > small)",
        "scrolled view (same type, after scroll/arrow)",
        "other type (same game)",
    ]
    for g in order:
        v = np.asarray(groups.get(g, []))
        if len(v):
            m, s_ = (v > merge).mean(), (v <= simi).mean()
            share = f"| {m:.0%} | {1 - m - s_:.0%} | {s_:.0%} |"
        else:
            share = "| – | – | – |"
        print(f"| {g} " + quantiles(list(v)) + share[1:])
    print("\nper screen type / type pair (median cos, share apart):")
    for k in sorted(per_type):
        v = np.asarray(per_type[k])
        if len(v) >= 5:
            print(
                f"  {k:55s} n={len(v):5d} median={np.median(v):.3f} "
                f"p5={np.quantile(v, 0.05):.3f} p95={np.quantile(v, 0.95):.3f} "
                f"apart={np.mean(v <= simi):.0%}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
