"""Crafter (Hafner 2021) as a learning benchmark: the agent against two random baselines.

Crafter is an open-world survival game no one here wrote (pip ``crafter``): 22
achievements, from collecting wood to making an iron pickaxe. The agent plays it
with zero prior, through the ``gym:crafter`` adapter (fast, headless) or, with
``--window``, through Crafter's own pygame window (``python -m crafter.run_gui
--wait True --fps 30``; ``--fps N`` for another frame rate) that kgagent launches on a
private Xvfb. The harness alone reads the
achievements: from the adapter's ground truth, or from the lines the game prints.

Methods, on the same screen and the same action space:

* ``full``: the KG-Agent (offline brain, pixel encoder, OpenCV segmenter) with its
  default action space: clicks on the objects it segments and on a background grid,
  and the whole keyboard of kgagent/agent/inputs.py. Nothing tells it which keys
  Crafter uses;
* ``no_graph`` (the Bottom-Up Agent) and ``no_similarity``: the papers' ablations;
* ``random``: the runner's ``random`` ablation, one uniformly random action per step
  over that same action space;
* ``random_keys``: harness code that knows Crafter's 17 actions (its window's 16
  keys and the no-op) and picks one uniformly per step: Hafner's random baseline.
  Through the window, the no-op sends nothing (the game waits).

``--variant NAME=METHOD:S.F=V[,S.F=V]`` also runs METHOD with those settings, reported
as NAME and paired by seed with the baselines and with METHOD.

With ``--rounds R`` each learning method plays R + 1 runs per seed that resume one
memory (round 0 from an empty memory); the table is then per round, each learning
method's and variant's later rounds are paired by seed with its round 0, and the
comparisons with a learning baseline (no_graph, no_similarity) are made in every round.

Reported per method: distinct achievements per seed, unlocks per 1,000 steps (an
achievement counts once per episode, as Crafter's reward does), episodes, world steps
(inputs that moved the game: keys of its key map; adapter only), and the
Crafter score S = exp(mean_i ln(1 + s_i)) - 1 over the 22 achievements, s_i the
percentage of episodes that unlocked achievement i, beside the published scores
(random 1.6 %, human experts 50.5 %; Hafner 2021). Our episodes end at the step
budget, so the score is over budget-limited episodes, not full ones.

    python benchmarks/crafter.py --seeds 2 --steps 200
    python benchmarks/crafter.py --seeds 3 --steps 200 --window --methods random_keys,random
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import re
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# This file is named like the game: drop its folder from the path, or `import crafter`
# would import this script instead of the package (in spawned workers too).
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

METHODS = ("full", "no_graph", "no_similarity", "random", "random_keys")
LEARNING = ("full", "no_graph", "no_similarity")
GUI = "python -u -m crafter.run_gui --wait True --fps {fps} --seed {seed}"
FPS = 30  # the window's frame rate (crafter.run_gui's own default is 5)
PUBLISHED = {"random": 1.6, "human experts": 50.5}  # Crafter score, % (Hafner 2021, Table)


def _config(method: str, seed: int, window: bool, overrides: list[str]) -> Any:
    from kgagent.config import Config

    cfg = Config.load(
        None,
        [
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
            f"run.env={'desktop' if window else 'gym:crafter'}",
            f"run.ablation={method if method != 'random_keys' else 'random'}",
            f"run.seed={seed}",
            "desktop.settle_interval_s=0.1",
            "desktop.settle_timeout_s=1.0",
            *overrides,
        ],
    )
    return cfg


def _tally_gym(seed: int) -> Any:
    """``gym:crafter`` that keeps each episode's achievements for the harness."""
    from kgagent.envs.gym import GymEnv

    class TallyGym(GymEnv):
        def __init__(self, seed: int) -> None:
            self.episodes: list[list[str]] = []
            self.world_steps = 0  # inputs that moved the world (mapped keys)
            self.acted = False
            super().__init__("crafter", seed=seed)

        def _keep(self) -> None:
            if self.acted:
                extra = self.ground_truth().extra
                self.episodes.append(list(extra["achievements"]))
                self.world_steps += int(extra["env_steps"])
            self.acted = False

        def reset(self, seed: int | None = None) -> Any:
            self._keep()
            return super().reset(seed)

        def step(self, action: Any) -> Any:
            self.acted = True
            return super().step(action)

        def step_index(self, index: int) -> Any:
            self.acted = True
            return super().step_index(index)

        def close(self) -> None:
            self._keep()
            super().close()

    return TallyGym(seed)


def parse_gui_log(text: str) -> list[list[str]]:
    """Episodes and their achievements from the output of ``crafter.run_gui``: each start
    (kgagent's ``--- kgagent: start`` line) and each "Starting a new episode." opens one."""
    episodes: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("--- kgagent: start") or line.startswith("Starting a new episode."):
            episodes.append([])
        m = re.match(r"Achievement \(\d+/\d+\): (\w+)", line)
        if m and episodes:
            episodes[-1].append(m.group(1))
    return episodes


def _random_keys(env: Any, steps: int, seed: int, window: bool) -> None:
    """Hafner's random agent: one of Crafter's 17 actions, uniformly, per step."""
    from kgagent.actions import Action
    from kgagent.envs.gym_keys import CRAFTER_KEYS
    from kgagent.seeding import player_rng

    rng = player_rng(seed)  # not the world's numbers
    keys = [None, *CRAFTER_KEYS]  # None: the no-op
    for _ in range(steps):
        key = keys[int(rng.integers(len(keys)))]
        if key is not None:
            *_, term, trunc, _ = env.step(Action("key", key=key))
        elif not window:
            *_, term, trunc, _ = env.step_index(env.action_names.index("noop"))
        else:
            continue  # the window waits for a key
        if term or trunc:
            env.reset()
    env.close()


def one_run(
    method: str,
    seed: int,
    steps: int,
    window: bool,
    workdir: str,
    overrides: list[str],
    rounds: int = 0,
    variant: str | None = None,
    fps: int = FPS,
) -> list[dict]:
    """One method on one seed, ``rounds`` + 1 runs resuming one memory; one result per run.
    ``variant`` labels the runs in the report (default: the method); ``fps``: the window's
    frame rate."""
    return [
        _one_round(method, seed, steps, window, workdir, overrides, r, variant or method, fps)
        for r in range(rounds + 1 if method in LEARNING else 1)
    ]


def _one_round(
    method: str,
    seed: int,
    steps: int,
    window: bool,
    workdir: str,
    overrides: list[str],
    rnd: int,
    label: str,
    fps: int = FPS,
) -> dict:
    from kgagent.agent.runner import Runner

    t0 = time.perf_counter()
    # Round r plays world seed 1000·r + seed: a resumed memory meets a new world.
    world = seed + 1000 * rnd
    cfg = _config(method, world, window, overrides)
    log = Path(workdir) / f"{label}-{seed}-{rnd}.program.log"
    if window:
        from kgagent.envs.desktop import DesktopEnv, DesktopOptions

        opts = DesktopOptions(
            launch=GUI.format(fps=fps, seed=world),
            display="new",
            program_log=str(log),
            screen_size=(800, 700),
        )
        env: Any = DesktopEnv(cfg.desktop, options=opts)
    else:
        env = _tally_gym(world)
    if method == "random_keys":
        _random_keys(env, steps, world, window)
    else:
        memory = Path(workdir) / f"memory-{label}-{seed}"
        Runner(cfg, memory_path=memory, env=env, progress=False, log=lambda m: None).run(steps)
    episodes = parse_gui_log(log.read_text()) if window else env.episodes
    return {
        "method": label,
        "seed": seed,
        "round": rnd,
        "steps": steps,
        "episodes": episodes,
        "world_steps": None if window else env.world_steps,
        "duration_s": time.perf_counter() - t0,
    }


def crafter_score(episodes: list[list[str]], names: list[str]) -> float:
    """Hafner's score, %: S = exp(mean_i ln(1 + s_i)) - 1, s_i in % of episodes."""
    if not episodes:
        return 0.0
    rates = [100.0 * sum(a in e for e in episodes) / len(episodes) for a in names]
    return math.exp(statistics.fmean(math.log(1.0 + r) for r in rates)) - 1.0


def _mean_se(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f}" if values else "-"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values) / len(values) ** 0.5:.2f}"


def _distinct(r: dict) -> int:
    return len({a for e in r["episodes"] for a in e})


def paired(results: list[dict], a: str, b: str, rnd: int = 0) -> str:
    """Paired by seed: mean difference ± SE, t and p of distinct achievements, a − b
    (:func:`kgagent.bench.stats.paired_t`)."""
    from kgagent.bench.stats import paired_t, ratio

    got = {
        m: {r["seed"]: _distinct(r) for r in results if r["method"] == m and r["round"] == rnd}
        for m in (a, b)
    }
    seeds = sorted(set(got[a]) & set(got[b]))
    if len(seeds) < 2:
        return f"{a} − {b}: fewer than 2 paired seeds"
    xa, xb = [got[a][s] for s in seeds], [got[b][s] for s in seeds]
    ma, mb = statistics.fmean(xa), statistics.fmean(xb)
    return (
        f"{a} − {b} (round {rnd}), n = {len(seeds)}: {paired_t(xa, xb).text()}; "
        f"{ma:.2f} vs {mb:.2f} ({ratio(ma, mb)})"
    )


def report(
    results: list[dict], methods: list[str], names: list[str], variants: Sequence[Any] = ()
) -> str:
    """The table per method (and variant) and round, then the paired comparisons."""
    from kgagent.bench.stats import paired_t

    methods = [*methods, *(v.name for v in variants)]
    lines = [
        "| method | round | distinct achievements per seed | mean ± SE | unlocks / 1,000 steps "
        "| episodes | world steps | Crafter score | achievements seen |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups = sorted(
        {(r["method"], r["round"]) for r in results}, key=lambda t: (methods.index(t[0]), t[1])
    )
    for m, rnd in groups:
        rows = sorted(
            (r for r in results if r["method"] == m and r["round"] == rnd), key=lambda r: r["seed"]
        )
        if not rows:
            continue
        distinct = [len({a for e in r["episodes"] for a in e}) for r in rows]
        episodes = [e for r in rows for e in r["episodes"]]
        unlocks = sum(len(set(e)) for e in episodes)
        steps = sum(r["steps"] for r in rows)
        seen = sorted({a for e in episodes for a in e})
        world = [r["world_steps"] for r in rows]
        world_s = "-" if None in world else str(sum(world))
        lines.append(
            f"| {m} | {rnd} | {' / '.join(map(str, distinct))} | {_mean_se([float(d) for d in distinct])} "
            f"| {1000 * unlocks / max(1, steps):.1f} | {len(episodes)} | {world_s} "
            f"| {crafter_score(episodes, names):.1f} % | {', '.join(seen) or '-'} |"
        )
    lines.append("")
    baselines = ("random", "random_keys", "no_graph", "no_similarity")

    def rounds_of(m: str) -> set[int]:
        return {r["round"] for r in results if r["method"] == m}

    for v in ("full", *(v.name for v in variants)):
        for other in baselines:
            if v in methods and other in methods:
                # every round both played (a baseline that learns resumes its memory too)
                for rnd in sorted(rounds_of(v) & rounds_of(other)) or [0]:
                    lines.append("- " + paired(results, v, other, rnd))
    for v in variants:
        if v.method in methods and v.method not in baselines:
            lines.append("- " + paired(results, v.name, v.method))
    for v in variants:
        lines.append(f"- variant {v.name}: {v.method} with {', '.join(v.overrides)}")
    for m in methods:  # every learning method and variant that resumed its memories
        first = {r["seed"]: _distinct(r) for r in results if r["method"] == m and r["round"] == 0}
        for rnd in sorted(rounds_of(m) - {0}):  # each later round against round 0
            later = {
                r["seed"]: _distinct(r) for r in results if r["method"] == m and r["round"] == rnd
            }
            seeds = sorted(set(first) & set(later))
            if len(seeds) > 1:
                test = paired_t([later[s] for s in seeds], [first[s] for s in seeds])
                lines.append(f"- {m} round {rnd} − round 0, n = {len(seeds)}: {test.text()}")
    pub = ", ".join(f"{k} {v} %" for k, v in PUBLISHED.items())
    lines.append("")
    lines.append(
        f"Published Crafter scores (Hafner 2021; full episodes): {pub}. "
        "Here episodes end at the step budget."
    )
    return "\n".join(lines)


def _machine() -> str:
    """benchmarks/learning.py's machine line (CPU model, cores, OpenCV SIMD)."""
    import importlib.util

    try:
        spec = importlib.util.spec_from_file_location("_learning", HERE / "learning.py")
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        return str(mod.machine())
    except Exception as e:  # noqa: BLE001 - the machine line is informative only
        return f"unknown ({type(e).__name__})"


def _versions() -> str:
    parts = []
    for name in ("crafter", "gymnasium", "pygame", "numpy", "opencv-python"):
        try:
            parts.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    from kgagent.bench.local import spawn_pool
    from kgagent.bench.variants import Variant, add_arguments, parse_variants
    from kgagent.errors import ConfigError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--steps", type=int, default=200, help="steps per run (default 200)")
    ap.add_argument(
        "--methods",
        default=",".join(METHODS),
        help="comma-separated subset of " + ", ".join(METHODS),
    )
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    ap.add_argument(
        "--rounds", type=int, default=0, help="extra rounds resuming each learning memory"
    )
    ap.add_argument(
        "--window",
        action="store_true",
        help="play Crafter's own window (launched on a private Xvfb)",
    )
    ap.add_argument(
        "--fps",
        type=int,
        default=FPS,
        help=f"the window's frame rate (default {FPS}; crafter.run_gui's own default is 5)",
    )
    add_arguments(ap, paired_with="the baselines")
    args = ap.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if args.fps < 1:
        ap.error(f"need --fps >= 1 (got {args.fps})")
    if bad or args.seeds < 1 or args.steps < 1:
        ap.error(
            f"need --seeds >= 1, --steps >= 1 and methods among {', '.join(METHODS)} (got {bad or methods})"
        )
    try:
        variants = parse_variants(args.variants, METHODS)
    except ConfigError as e:
        ap.error(str(e))
    import crafter

    names = list(crafter.constants.achievements)
    workdir = tempfile.mkdtemp(prefix="kgagent-crafter-")
    arms = [Variant(m, m) for m in methods] + variants
    jobs = [(v, s) for v in arms for s in range(1, args.seeds + 1)]
    mode = (
        f"Crafter's window ({GUI.format(fps=args.fps, seed='SEED')}, private Xvfb)"
        if args.window
        else "gym:crafter"
    )
    print(
        f"$ python benchmarks/crafter.py {shlex.join(argv if argv is not None else sys.argv[1:])}"
    )
    print(
        f"{time.strftime('%Y-%m-%d')}; {mode}; {len(jobs)} runs of {args.steps} steps; runs in {workdir}"
    )
    print(f"machine: {_machine()}")
    print(f"versions: python {sys.version.split()[0]}, {_versions()}")
    results: list[dict] = []
    t0 = time.perf_counter()
    run = (args.steps, args.window, workdir)

    def arm(v: Any, s: int) -> tuple:
        return (
            v.method,
            s,
            *run,
            [*args.overrides, *v.overrides],
            args.rounds,
            v.name,
            args.fps,
        )

    if args.jobs <= 1:
        for i, (v, s) in enumerate(jobs, 1):
            results += one_run(*arm(v, s))
            _progress(results[-1], i, len(jobs))
    else:
        with spawn_pool(args.jobs) as pool:
            futs = [pool.submit(one_run, *arm(v, s)) for v, s in jobs]
            for i, f in enumerate(futs, 1):
                results += f.result()
                _progress(results[-1], i, len(jobs))
    print()
    print(report(results, methods, names, variants))
    print(f"\n{len(jobs)} runs in {time.perf_counter() - t0:.0f} s")


def _progress(r: dict, done: int, total: int) -> None:
    got = sorted({a for e in r["episodes"] for a in e})
    print(
        f"[{done}/{total}] {r['method']} seed {r['seed']}: {len(r['episodes'])} episodes, "
        f"{len(got)} achievements ({', '.join(got) or '-'}), {r['duration_s']:.0f} s",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    main()
