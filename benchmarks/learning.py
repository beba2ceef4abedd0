"""Learning benchmark: the papers' Table 1 / Table 2 metrics on the built-in games.

Grid: games × ablations × seeds, each a fresh memory, ``--steps`` steps, the
offline brain, the weight-free pixel encoder and the OpenCV segmenter (so it
runs on any machine). Then a multi-round run per game: ``--rounds`` runs of
``--steps`` steps that resume one memory (seed = round), as in Table 2;
``--series N`` plays N such series in fresh memories (series s: seed 100·s + round)
and judges "round 3 > round 0" on the last round against round 0, paired by series.

Every target is judged by one rule (:func:`kgagent.bench.stats.verdict`): met takes at
least ten pairs (seeds, or series for the rounds) and the paired t test's two-sided
p < 0.05 in the target's direction, and a ratio target the ratio of the means too;
missed is a difference shown the other way (or a shown one short of its ratio); anything
else is "not shown", with the reason (``not shown (n = 3 < 10)``, ``not shown (p = 0.0695)``).

    python benchmarks/learning.py                       # 2 games × 4 methods × 3 seeds × 300 steps
    python benchmarks/learning.py --steps 100 --seeds 1 --games cardgame --jobs 2
    python benchmarks/learning.py --seeds 0 --series 6 --games cardgame --jobs 2   # rounds only
    python benchmarks/learning.py --write /tmp/learning.md   (then update docs/benchmarks.md, section Learning)
    python benchmarks/learning.py --seeds 10 --rounds 0 --methods full,no_graph \
        --variant c0_half=full:memory.c0=0.5        # one setting's effect, paired by seed

``--methods`` takes any of the config's ablations (``run.ablation``). ``--variant
NAME=METHOD:S.F=V[,S.F=V]`` (repeatable) also runs METHOD with those settings in the
same grid, reported as NAME and paired by seed with no_graph, random and METHOD;
``--set`` applies to every run, baselines included. The rounds are the full agent's.

Every run's memory (with its step logs) is kept in a temporary folder that the report
names; ``benchmarks/experiments/skill_transfer.py`` reads them.

Metrics: progression and score are the games' ground truth (floors / turns,
score / techs), read by the harness only; ERR = share of executed skills that
caused a valid transition; $/100 steps from the brain's usage (0 offline);
nodes, skill edges and similarity edges from the memory.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kgagent.bench.local import spawn_pool
from kgagent.bench.meta import machine, versions
from kgagent.bench.stats import paired_t, ratio
from kgagent.bench.stats import verdict as judge
from kgagent.bench.variants import Variant, add_arguments, parse_variants
from kgagent.config import Config
from kgagent.config_sections import ABLATIONS
from kgagent.errors import ConfigError

METHODS = ("full", "no_graph", "no_similarity", "random")
COLUMNS = (
    ("progression", "progression", 2),
    ("score", "score", 1),
    ("err", "ERR", 3),
    ("cost_per_100_steps", "$/100 steps", 3),
    ("nodes", "nodes", 1),
    ("skill_edges", "skill edges", 1),
    ("similarity_edges", "sim edges", 1),
    ("skills_augmented", "augmented", 1),
    ("actions", "actions", 0),
    ("duration_s", "time s", 0),
)


def _config(game: str, method: str, seed: int, overrides: list[str]) -> Any:
    from kgagent.config import Config

    cfg = Config.load(
        None,
        [
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
            f"run.env={game}",
            f"run.ablation={method}",
            f"run.seed={seed}",
            *overrides,
        ],
    )
    return cfg


def one_run(
    game: str,
    method: str,
    seed: int,
    steps: int,
    memory: str,
    overrides: list[str],
    variant: str | None = None,
) -> dict:
    """One run in a fresh (or resumed) memory; returns the RunSummary as a dict, with
    ``variant``, the run's label in the report (default: the method)."""
    from kgagent.agent.runner import Runner

    cfg = _config(game, method, seed, overrides)
    s = Runner(cfg, memory_path=memory, progress=False, log=lambda m: None).run(steps)
    return {**asdict(s), "variant": variant or method}


def series_seed(series: int, rnd: int) -> int:
    """Round ``rnd`` of series ``series`` plays seed r (series 0) or 100·s + r."""
    return rnd if series == 0 else 100 * series + rnd


def rounds_run(
    game: str, rounds: int, steps: int, memory: str, overrides: list[str], series: int = 0
) -> list[dict]:
    """Table 2: ``rounds`` runs of the full agent resuming one memory (seeds: ``series_seed``)."""
    return [
        one_run(game, "full", series_seed(series, r), steps, memory, overrides)
        for r in range(rounds)
    ]


def _fmt(values: list[float], digits: int) -> str:
    if not values:
        return "-"
    m = statistics.fmean(values)
    if len(values) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _values(rows: list[dict], key: str) -> list[float]:
    """A column's values over runs; ERR only of runs that executed a skill (a run without
    executions, every random one, has no rate: `kgagent runs show` says the same)."""
    if key == "err":
        rows = [r for r in rows if r.get("executions")]
    return [float(r[key]) for r in rows]


def _err(r: dict) -> str:
    return f"{r['err']:.3f}" if r.get("executions") else "-"


def table(results: list[dict], games: list[str], labels: Sequence[str] = METHODS) -> str:
    """One row per game and method or variant, in ``labels``' order."""
    head = "| game | method | " + " | ".join(t for _, t, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for g in games:
        for m in labels:
            rows = [r for r in results if r["env"] == g and r["variant"] == m]
            if not rows:
                continue
            cells = [_fmt(_values(rows, k), d) for k, _, d in COLUMNS]
            lines.append(f"| {g} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rounds_table(per_game: dict[str, list[list[dict]]]) -> str:
    cols = (
        ("progression", "progression"),
        ("score", "score"),
        ("err", "ERR"),
        ("cost_per_100_steps", "$/100 steps"),
        ("library_size", "library"),
        # the memory's counts, so far in the series (`kgagent runs show` counts each round's)
        ("skills_augmented", "augmented, all rounds"),
        ("skills_pruned", "pruned, all rounds"),
        ("nodes", "nodes"),
        ("skill_edges", "skill edges"),
        ("similarity_edges", "sim edges"),
    )
    lines = [
        "| game | series | round | " + " | ".join(t for _, t in cols) + " |",
        "|" + "---|" * (len(cols) + 3),
    ]
    for g, series in per_game.items():
        for s, rows in enumerate(series):
            for i, r in enumerate(rows):
                cells = [
                    _err(r)
                    if k == "err"
                    else f"{r[k]:.3f}"
                    if isinstance(r[k], float)
                    else str(r[k])
                    for k, _ in cols
                ]
                lines.append(f"| {g} | {s} | {i} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def round_means(series: list[list[dict]]) -> list[float]:
    """Mean progression of each round over the series."""
    n = min(len(rows) for rows in series)
    return [statistics.fmean(rows[i]["progression"] for rows in series) for i in range(n)]


def paired(a: list[float], b: list[float]) -> str:
    """``b − a`` pair by pair: mean ± standard error, t and p, and how many pairs went up / down.

    The targets compare means, which on these games move by a standard deviation of
    2–20 between seeds; the paired difference says whether a gap is more than noise.
    """
    return paired_t(b, a).text() if a else "no pairs"


def target(x: list[float], y: list[float], factor: float = 1.0) -> str:
    """The verdict on "x ≥ factor × y", x and y paired (:func:`kgagent.bench.stats.verdict`):
    the paired t test of ``x − factor·y``, so that met shows the ratio, not only a
    difference (a ratio of means past ``factor`` with ``x − factor·y`` inside the noise is
    not shown, as is one short of it inside the noise)."""
    if factor == 1.0:
        return str(judge(paired_t(x, y)))
    p = paired_t(x, [factor * v for v in y])
    a, b = statistics.fmean(x), statistics.fmean(y)
    spread = f" ± {p.se:.2f}" if p.se else ""
    return f"{judge(p)} ({ratio(a, b)}; x − {factor:g}·y {p.mean:+.2f}{spread})"


def verdict(
    results: list[dict],
    per_game: dict[str, list[list[dict]]],
    games: list[str],
    variants: Sequence[Variant] = (),
) -> str:
    """The targets per game (full against random and no_graph, the rounds), then each
    variant against no_graph, random and the method it varies, paired by seed."""
    out = []
    for g in games:

        def by_seed(m: str, g: str = g) -> dict[int, float]:
            return {
                r["seed"]: r["progression"] for r in results if r["env"] == g and r["variant"] == m
            }

        for other, factor in (("random", 3.0), ("no_graph", 1.3)):
            f, o = by_seed("full"), by_seed(other)
            seeds = sorted(set(f) & set(o))
            if not seeds:
                continue
            x, y = [f[k] for k in seeds], [o[k] for k in seeds]
            out.append(
                f"- {g}: full {statistics.fmean(x):.2f} vs {other} {statistics.fmean(y):.2f} "
                f"(target ≥ {factor:g}×): {target(x, y, factor)}; "
                f"full − {other} per seed {paired(y, x)}"
            )
        series = per_game.get(g)
        means = round_means(series) if series else []
        if len(means) >= 2:
            per = " / ".join(f"{m:.2f}" for m in means)
            last = len(means) - 1
            first, end = (
                [r[0]["progression"] for r in series],
                [r[last]["progression"] for r in series],
            )
            out.append(
                f"- {g}: rounds {per} (mean of {len(series)} series); round {last} "
                f"vs round 0 (target: better): {target(end, first)}; per series {paired(first, end)}"
            )
        for v in variants:
            for other in dict.fromkeys(("no_graph", "random", v.method)):
                mine, theirs = by_seed(v.name), by_seed(other)
                seeds = sorted(set(mine) & set(theirs))
                if not seeds:
                    continue
                a, b = (
                    statistics.fmean(mine[k] for k in seeds),
                    statistics.fmean(theirs[k] for k in seeds),
                )
                diff = paired([theirs[k] for k in seeds], [mine[k] for k in seeds])
                out.append(
                    f"- {g}: {v.name} {a:.2f} vs {other} {b:.2f} ({ratio(a, b)}); "
                    f"{v.name} − {other} per seed {diff}"
                )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--games", default="cardgame,civgame")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--rounds", type=int, default=4, help="Table 2 rounds (0 to skip)")
    ap.add_argument(
        "--series",
        type=int,
        default=1,
        help="independent round series, each in its own memory (series s: seeds 100·s + r)",
    )
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    add_arguments(ap, paired_with="no_graph and random")
    ap.add_argument("--write", default=None, help="write a Markdown report to this file")
    args = ap.parse_args(argv)
    games = [g for g in args.games.split(",") if g]
    methods = [m for m in args.methods.split(",") if m]
    bad = [m for m in methods if m not in ABLATIONS]
    if bad:
        ap.error(f"unknown method(s) {', '.join(bad)}; known: {', '.join(ABLATIONS)}")
    try:
        variants = parse_variants(args.variants, ABLATIONS)
        # Every run's settings, checked before the first run rather than in a worker.
        Config.load(None, list(args.overrides))
    except ConfigError as e:
        ap.error(str(e))
    arms = [Variant(m, m) for m in methods] + variants
    tmp = Path(tempfile.mkdtemp(prefix="kgagent-bench-"))
    t0 = time.time()
    jobs = []
    with spawn_pool(args.jobs) as pool:
        # The rounds are sequential within a game (each resumes the last memory): the
        # longest jobs, so they are submitted first and the single runs fill the gaps.
        round_jobs = {
            (g, s): pool.submit(
                rounds_run,
                g,
                args.rounds,
                args.steps,
                str(tmp / f"{g}-rounds-{s}"),
                args.overrides,
                s,
            )
            for g in games
            for s in range(max(1, args.series))
            if args.rounds > 0
        }
        for g in games:
            for v in arms:
                for seed in range(args.seeds):
                    mem = str(tmp / f"{g}-{v.name}-{seed}")
                    sets = [*args.overrides, *v.overrides]
                    jobs.append(
                        pool.submit(one_run, g, v.method, seed, args.steps, mem, sets, v.name)
                    )
        results = []
        for j in jobs:
            r = j.result()
            results.append(r)
            print(
                f"{r['env']:9s} {r['variant']:13s} seed {r['seed']}: progression {r['progression']:g} "
                f"score {r['score']:g} ERR {_err(r)} nodes {r['nodes']} ({r['duration_s']:.0f} s)",
                file=sys.stderr,
            )
        per_game: dict[str, list[list[dict]]] = {}
        for (g, _s), j in round_jobs.items():
            per_game.setdefault(g, []).append(j.result())
    elapsed = time.time() - t0
    cmd = "python benchmarks/learning.py " + " ".join(
        shlex.quote(a) for a in (argv or sys.argv[1:])
    )
    report = [
        f"command: `{cmd}`",
        f"grid: {len(games)} game(s) × {', '.join(v.name for v in arms)} × {args.seeds} seed(s) × "
        f"{args.steps} steps; "
        f"offline brain, pixel encoder, OpenCV segmenter; wall {elapsed / 60:.1f} min",
        f"versions: {versions()}",
        f"machine: {machine()}",
        f"memories and step logs: {tmp} (kept for `benchmarks/experiments/skill_transfer.py` and "
        "`kgagent runs show`; delete it when done)",
        "",
        "## Methods (mean ± sd over seeds)",
        "",
        table(results, games, [v.name for v in arms]),
    ]
    if per_game:
        report += [
            "",
            f"## Rounds resuming one memory ({args.rounds} × {args.steps} steps, full)",
            "",
            rounds_table(per_game),
        ]
    report += ["", "## Targets", "", verdict(results, per_game, games, variants)]
    if variants:
        report += [
            "",
            "Variants:",
            *(f"- {v.name}: {v.method} with {', '.join(v.overrides)}" for v in variants),
        ]
    text = "\n".join(report)
    print(text)
    if args.write:
        Path(args.write).write_text("# Learning benchmark\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
