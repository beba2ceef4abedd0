"""Change floor: the Δ each kind of action causes on the built-in games.

Why: ``augment.min_change`` (and the two floors beside it) must sit above screen
noise and below the smallest real effect, or the agent calls a real effect
"nothing changed" and never keeps the skill (docs/agent.md, "What counts as a
change"). This prints, per game and per kind of clickable element, the Δ of a
click on it: how small real effects get, and how many fall under a floor.

A harness policy plays (benchmark-only ground truth, ``clickable_elements()``):
with probability ``--random`` it clicks a random clickable element, otherwise
it clicks the first element of a fixed preference list that makes the game go
on (a popup's button, a build or tech choice, next turn; a card, an enemy, end
turn, a map node, a reward). The agent never sees any of this.

    python benchmarks/experiments/change_floor.py [--seeds 2] [--steps 300] [--floor 0.002 --floor 0.0002]
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict

from kgagent.actions import Action
from kgagent.config import Config
from kgagent.envs.cardgame import CardGame
from kgagent.envs.civgame import CivGame
from kgagent.perception.change import visual_change

THRESHOLD = Config().perception.change_threshold  # Δ's grey-level threshold
PREFERENCE = {
    "civgame": ("popup_continue", "build", "tech", "next_turn"),
    "cardgame": ("card", "enemy", "end_turn", "node", "reward", "skip", "close"),
}


def kind(name: str) -> str:
    return name.split(":")[0]


def play(game: str, seed: int, steps: int, p_random: float) -> dict[str, list[float]]:
    env = CivGame() if game == "civgame" else CardGame()
    env.reset(seed=seed)
    rng = random.Random(seed)
    out: dict[str, list[float]] = defaultdict(list)
    for _ in range(steps):
        elements = env.clickable_elements()
        if not elements:
            break
        pick = None
        if rng.random() >= p_random:
            for pref in PREFERENCE[game]:
                pick = next((e for e in elements if kind(e[0]) == pref), None)
                if pick is not None:
                    break
        name, (x, y, w, h) = pick or rng.choice(elements)
        before = env.observe()
        _obs, _r, terminated, _t, _info = env.step(Action("click", x=x + w // 2, y=y + h // 2))
        out[kind(name)].append(visual_change(before, env.observe(), THRESHOLD))
        if terminated:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--random", type=float, default=0.3, help="share of random clicks")
    ap.add_argument("--floor", type=float, action="append", help="floors to count under")
    args = ap.parse_args(argv)
    floors = args.floor or [0.002, 0.0002]
    for game in ("civgame", "cardgame"):
        merged: dict[str, list[float]] = defaultdict(list)
        for seed in range(args.seeds):
            for k, v in play(game, seed, args.steps, args.random).items():
                merged[k].extend(v)
        print(f"\n{game}: Δ of one click, {args.seeds} seed(s) × {args.steps} steps")
        head = "| element | clicks | Δ = 0 | min Δ > 0 | median | max |"
        head += "".join(f" 0 < Δ < {f:g} |" for f in floors)
        print(head)
        print("|---" * (6 + len(floors)) + "|")
        for k in sorted(merged):
            v = sorted(merged[k])
            pos = [c for c in v if c > 0]
            row = (
                f"| {k} | {len(v)} | {sum(c == 0 for c in v)} | "
                f"{(f'{pos[0]:.4%}' if pos else '-')} | {v[len(v) // 2]:.4%} | {v[-1]:.4%} |"
            )
            row += "".join(f" {sum(0 < c < f for c in v)} |" for f in floors)
            print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
