"""Where the agent's actions land: the true element under each action of one run.

Why: a learning run reports progression and ERR, not *what the agent spent its
steps on*. This runs the agent exactly as ``benchmarks/learning.py`` does (fresh
memory, offline brain, pixel encoder, OpenCV segmenter) and, in the harness
only, looks up which clickable element (``clickable_elements()``) each action
hit, and on which screen. The agent never sees any of it.

    python benchmarks/action_targets.py --game cardgame --method full --seed 0
    python benchmarks/action_targets.py --game civgame --method no_graph --seed 3 --top 20

Prints the most frequent (screen, action kind, element) triples, the share of
actions that hit no element, and how often one element kind directly follows
another (``--after card`` shows what the agent did right after clicking a card).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning import _config  # noqa: E402  (the same configuration as the learning grid)


def _element(env: Any, action: Any) -> str:
    points = action.points()
    if not points:
        return action.kind  # a key press, a hotkey, typed text
    x, y = points[0]
    for name, (bx, by, bw, bh) in env.clickable_elements():
        if bx <= x < bx + bw and by <= y < by + bh:
            return name.split(":")[0]
    return "none"


def run(game: str, method: str, seed: int, steps: int, overrides: list[str]) -> tuple[Any, list]:
    """One run; returns (summary, [(screen, action kind, element), ...])."""
    from kgagent.agent.runner import Runner
    from kgagent.envs.registry import make_env

    cfg = _config(game, method, seed, overrides)
    env = make_env(game, cfg)
    hits: list[tuple[str, str, str]] = []
    step = env.step

    def spy(action: Any) -> Any:
        info = env._info()  # harness only
        screen = str(info.get("screen")) + (f"/{info['overlay']}" if info.get("overlay") else "")
        hits.append((screen, action.kind, _element(env, action)))
        return step(action)

    env.step = spy  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as d:
        summary = Runner(
            cfg, memory_path=Path(d) / "m", env=env, progress=False, log=lambda m: None
        ).run(steps)
    return summary, hits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="cardgame")
    ap.add_argument("--method", default="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--after", default=None, help="what followed a click on this element kind")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="S.F=V")
    args = ap.parse_args(argv)
    summary, hits = run(args.game, args.method, args.seed, args.steps, args.overrides)
    n = len(hits)
    print(
        f"{args.game} {args.method} seed {args.seed}: progression {summary.progression:g}, "
        f"{summary.steps} steps, {n} actions, stopped: {summary.stopped}"
    )
    if not n:
        return 0
    none = sum(1 for h in hits if h[2] == "none")
    print(f"actions on no clickable element: {none} ({none / n:.0%})")
    print("element kinds:", dict(Counter(h[2] for h in hits).most_common()))
    print("\n| actions | screen | action | element |\n|---|---|---|---|")
    for (screen, kind, element), c in Counter(hits).most_common(args.top):
        print(f"| {c} | {screen} | {kind} | {element} |")
    if args.after:
        follow = Counter(
            (b[1], b[2]) for a, b in zip(hits, hits[1:]) if a[2] == args.after and a[1] == "click"
        )
        print(f"\nright after a click on '{args.after}':", dict(follow.most_common(args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
