"""Judge benchmark: the learning grid under three judges, to separate the algorithm from the judge.

The papers' results come from GPT-4o as the judge of progress; they cannot say how
much of the gain is the SA-KG and how much the judge. This runs the same grid
(methods ``full``, ``no_graph`` — the Bottom-Up Agent —, ``random``) under:

* ``offline`` — the offline brain (visual signals only);
* ``truth`` — a ground-truth judge: a local OpenAI-compatible server
  (benchmarks/judge_server.py) that answers ``evaluate`` from the environment's own
  progress signal and every other role by the offline brain's rules. The agent
  reaches it through the normal VLM path and never knows what it is;
* ``vlm`` — a real model, when one is configured (``--vlm-url``, ``--vlm-model``).

    python benchmarks/judges.py                                  # smoke: cardgame, 2 seeds × 60 steps
    python benchmarks/judges.py --games cardgame,civgame,gym:crafter --seeds 10 --steps 300 --jobs 2
    python benchmarks/judges.py --judges vlm --vlm-url http://localhost:8000/v1 \\
        --vlm-model Qwen/Qwen2.5-VL-7B-Instruct --seeds 3
    python benchmarks/judges.py --judges truth --methods full,no_graph --seeds 10 --steps 300 \\
        --variant state_off=full:rewards.use_state=false       # one setting's effect, paired

Reported per judge, game and method: progression and score (mean ± SE over seeds),
the library size, brain role calls per 100 steps per role (what the agent asked),
VLM requests per 100 steps (what went to an endpoint; retries included), tokens
(``~`` marks estimates) and cost; then, per judge and game, each method and variant
(``--variant``: a method with its own settings) vs no_graph, and each variant vs its
method: the ratio of means (target ≥ 1.3 with the ground-truth judge), the paired difference
(mean ± SE, t) and the ratio of VLM requests (target ≤ 50 %). For the ground-truth
judge, "judged progressive" is how many of its ``evaluate`` answers said yes (how
sparse the signal is), and a *miss* is an ``evaluate`` whose screenshot the server
could not match (expected 0).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# benchmarks/ last: its crafter.py is named like the game, which `gym:crafter` imports
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

from learning import machine, versions  # noqa: E402 - benchmarks/ is not a package

from kgagent.bench.local import spawn_pool  # noqa: E402
from kgagent.bench.stats import paired_t, ratio  # noqa: E402
from kgagent.bench.variants import Variant, add_arguments, parse_variants  # noqa: E402
from kgagent.config_sections import ABLATIONS  # noqa: E402
from kgagent.errors import ConfigError  # noqa: E402

METHODS = ("full", "no_graph", "random")
JUDGES = ("offline", "truth", "vlm")
ROLES = ("describe_skill", "evaluate", "choose_cluster", "refine_skill", "cluster_skills")
SHORT = {"describe_skill": "d", "evaluate": "e", "choose_cluster": "c", "refine_skill": "r"}
SHORT["cluster_skills"] = "k"


def counting(inner: Any) -> Any:
    """``inner`` behind a brain that counts role calls (the agent's demand) per role."""
    from kgagent.brain.base import Brain

    class CountingBrain(Brain):
        name = inner.name

        def __init__(self) -> None:  # no Brain.__init__: usage and notes are the inner's
            self.inner = inner
            self.calls: Counter[str] = Counter()

        @property
        def usage(self):  # type: ignore[override]
            return self.inner.usage

        def take_notes(self) -> list[str]:
            return self.inner.take_notes()

        def describe_skill(self, operations, tr):
            self.calls["describe_skill"] += 1
            return self.inner.describe_skill(operations, tr)

        def evaluate(self, skill, tr):
            self.calls["evaluate"] += 1
            return self.inner.evaluate(skill, tr)

        def choose_cluster(self, view, clusters):
            self.calls["choose_cluster"] += 1
            return self.inner.choose_cluster(view, clusters)

        def refine_skill(self, skill, tr):
            self.calls["refine_skill"] += 1
            return self.inner.refine_skill(skill, tr)

        def cluster_skills(self, skills, clusters):
            self.calls["cluster_skills"] += 1
            return self.inner.cluster_skills(skills, clusters)

    return CountingBrain()


def one_run(
    judge: str,
    game: str,
    method: str,
    seed: int,
    steps: int,
    memory: str,
    overrides: list[str],
    vlm: dict[str, str | None],
    variant: str | None = None,
) -> dict[str, Any]:
    """One run in a fresh memory under ``judge``; the RunSummary plus the judge's counts.
    ``variant`` labels the run in the report (default: the method)."""
    from dataclasses import asdict

    from judge_server import GroundTruthJudge, JudgeServer, TruthRecorder

    from kgagent.agent.runner import Runner
    from kgagent.bench.figures import run_figures
    from kgagent.brain import make_brain
    from kgagent.config import Config
    from kgagent.envs.registry import make_env

    cfg = Config.load(
        None,
        [
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            f"run.env={game}",
            f"run.ablation={method}",
            f"run.seed={seed}",
            *overrides,
        ],
    )
    env = make_env(game, cfg)
    server = truth_judge = None
    b = cfg.brain
    if judge == "offline":
        b.kind = "offline"
    elif judge == "truth":
        env = TruthRecorder(env, b)
        truth_judge = GroundTruthJudge(env, b)
        server = JudgeServer(truth_judge).start()
        b.kind, b.base_url, b.model = "vlm", server.base_url, "judge"
        b.api_key_env, b.budget_usd = "KGAGENT_JUDGE_NO_KEY", None
    else:
        b.kind, b.base_url, b.model = "vlm", vlm["url"], vlm["model"] or b.model
        if vlm.get("key_env"):
            b.api_key_env = vlm["key_env"]
    notes: list[str] = []
    try:
        brain = counting(make_brain(b, seed=seed, log=notes.append))
        s = Runner(
            cfg, memory_path=memory, env=env, brain=brain, progress=False, log=notes.append
        ).run(steps)
    finally:
        if server is not None:
            server.stop()
    out = asdict(s)
    figures = run_figures(out, s.log_path)
    if "achievements" in figures:  # Crafter: distinct achievements over the run
        out["achievements"] = figures["achievements"]
    u = brain.usage
    out.update(
        judge=judge,
        variant=variant or method,
        role_calls=dict(brain.calls),
        requests=dict(getattr(brain.inner, "requests_by_role", {})),
        estimated_tokens=u.estimated_tokens,
        failed_calls=u.failed_calls,
        misses=truth_judge.misses if truth_judge else 0,
        judged=truth_judge.judged if truth_judge else 0,
        judged_progressive=truth_judge.progressive if truth_judge else 0,
    )
    return out


# ------------------------------------------------------------------------ report
def mean_se(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {statistics.stdev(values) / len(values) ** 0.5:.{digits}f}"


def measure(r: dict) -> float:
    """What a run achieved: distinct achievements where the game lists them (Crafter, as
    in the bench grid), else the game's progression."""
    return float(r.get("achievements", r["progression"]))


def measure_name(rows: list[dict]) -> str:
    return "distinct achievements" if any("achievements" in r for r in rows) else "progression"


def per_100(rows: list[dict], key: str, role: str) -> float:
    return statistics.fmean(100.0 * r[key].get(role, 0) / max(1, r["steps"]) for r in rows)


def table(results: list[dict], labels: Sequence[str] = METHODS) -> str:
    """One row per judge, game and method or variant (``labels`` gives their order)."""
    head = (
        "| judge | game | method | seeds | progression | score | library | role calls / 100 "
        "steps (d e c r k) | VLM requests / 100 steps | tokens / run | $ / run | judged "
        "progressive | misses |"
    )
    lines = [head, "|" + "---|" * 13]
    keys = sorted(
        {(r["judge"], r["env"], r["variant"]) for r in results}, key=lambda k: _order(k, labels)
    )
    for j, g, m in keys:
        rows = [r for r in results if (r["judge"], r["env"], r["variant"]) == (j, g, m)]
        calls = " ".join(f"{per_100(rows, 'role_calls', k):.0f}" for k in ROLES)
        reqs = sum(per_100(rows, "requests", k) for k in ROLES)
        tokens = statistics.fmean(r["tokens"] for r in rows)
        est = "~" if any(r["estimated_tokens"] for r in rows) else ""
        lines.append(
            f"| {j} | {g} | {m} | {len(rows)} | {mean_se([measure(r) for r in rows])}"
            f"{' (achievements)' if measure_name(rows) != 'progression' else ''} | "
            f"{mean_se([r['score'] for r in rows], 1)} | "
            f"{statistics.fmean(r['library_size'] for r in rows):.1f} | {calls} | {reqs:.0f} | "
            f"{est}{tokens:.0f} | {statistics.fmean(r['cost_usd'] for r in rows):.4f} | "
            f"{_share(rows, 'judged_progressive')} | {_share(rows, 'misses')} |"
        )
    return "\n".join(lines)


def _share(rows: list[dict], key: str) -> str:
    """``key`` out of the evaluations the ground-truth judge answered (``-`` for others)."""
    judged = sum(r["judged"] for r in rows)
    return f"{sum(r[key] for r in rows)} / {judged}" if judged else "-"


def _order(k: tuple[str, str, str], labels: Sequence[str] = METHODS) -> tuple[int, str, int, str]:
    """Judges in their fixed order, then games, then methods and variants as ``labels``
    lists them (any other after, by name)."""
    j, g, m = k
    rank = list(labels).index(m) if m in labels else len(labels)
    return (JUDGES.index(j) if j in JUDGES else 9, g, rank, m)


def verdicts(
    results: list[dict], variants: Sequence[Variant] = (), labels: Sequence[str] = METHODS
) -> str:
    """Per judge and game: every learning method and variant against ``no_graph``, and
    each variant against the method it varies (paired by seed), in ``labels``' order."""
    base = {v.name: v.method for v in variants}
    out = []
    for j, g in sorted({(r["judge"], r["env"]) for r in results}, key=lambda k: _order((*k, ""))):
        ran = {r["variant"] for r in results if (r["judge"], r["env"]) == (j, g)}
        for a in sorted(ran - {"no_graph", "random"}, key=lambda m: _order((j, g, m), labels)):
            for b in ("no_graph", base.get(a)):
                if b in ran:
                    out += _versus(results, j, g, a, b)
    return "\n".join(out)


def _versus(results: list[dict], j: str, g: str, a: str, b: str) -> list[str]:
    """One line: ``a`` vs ``b`` under judge ``j`` on game ``g``, paired by seed."""

    def by_seed(m: str) -> dict[int, dict]:
        return {r["seed"]: r for r in results if (r["judge"], r["env"], r["variant"]) == (j, g, m)}

    ra, rb = by_seed(a), by_seed(b)
    seeds = sorted(set(ra) & set(rb))
    if not seeds:
        return []
    pa = [measure(ra[s]) for s in seeds]
    pb = [measure(rb[s]) for s in seeds]
    what = measure_name([ra[s] for s in seeds])
    ma, mb = statistics.fmean(pa), statistics.fmean(pb)

    def per_step(rows: dict[int, dict], key: str) -> float:
        return statistics.fmean(sum(rows[s][key].values()) / rows[s]["steps"] for s in seeds)

    qa, qb = per_step(ra, "requests"), per_step(rb, "requests")
    ca, cb = per_step(ra, "role_calls"), per_step(rb, "role_calls")
    calls = f"{100 * ca / cb:.0f} %" if cb else "—"
    reqs = f"{100 * qa / qb:.0f} %" if qb else "— (no requests)"
    targets = b == "no_graph"
    return [
        f"- {j} / {g}: {what} {a} {ma:.2f} vs {b} {mb:.2f} ({ratio(ma, mb)}"
        + ("; target ≥ 1.3× with the ground-truth judge" if targets else "")
        + f"); {a} − {b} per seed {paired_t(pa, pb).text()}; role calls {a} / {b} {calls}, "
        f"VLM requests {reqs}" + (" (target ≤ 50 %)" if targets else "")
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", default="cardgame")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--judges", default=None, help="default: offline,truth (+vlm with --vlm-url)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--vlm-url", default=None, help="a real model's OpenAI-compatible base URL")
    ap.add_argument("--vlm-model", default=None)
    ap.add_argument("--vlm-key-env", default=None, help="variable holding its key (if any)")
    add_arguments(ap, paired_with="no_graph")
    ap.add_argument("--write", default=None, help="write the Markdown report to this file")
    args = ap.parse_args(argv)
    games = [g for g in args.games.split(",") if g]
    methods = [m for m in args.methods.split(",") if m]
    bad = [m for m in methods if m not in ABLATIONS]
    if bad:
        ap.error(f"unknown method(s) {', '.join(bad)}; known: {', '.join(ABLATIONS)}")
    try:
        variants = parse_variants(args.variants, ABLATIONS)
    except ConfigError as e:
        ap.error(str(e))
    judges = args.judges.split(",") if args.judges else ["offline", "truth"]
    if args.vlm_url and not args.judges:
        judges.append("vlm")
    if "vlm" in judges and not args.vlm_url:
        ap.error("--judges vlm needs --vlm-url (and usually --vlm-model)")
    unknown = [j for j in judges if j not in JUDGES]
    if unknown:
        ap.error(f"unknown judge(s) {', '.join(unknown)}; known: {', '.join(JUDGES)}")
    vlm = {"url": args.vlm_url, "model": args.vlm_model, "key_env": args.vlm_key_env}
    tmp = Path(tempfile.mkdtemp(prefix="kgagent-judges-"))
    t0 = time.time()
    arms = [Variant(m, m) for m in methods] + variants
    grid = [(j, g, v, s) for j in judges for g in games for v in arms for s in range(args.seeds)]
    print(f"{len(grid)} runs of {args.steps} steps; memories in {tmp}", file=sys.stderr)
    results = []
    with spawn_pool(args.jobs) as pool:
        jobs = [
            pool.submit(
                one_run,
                j,
                g,
                v.method,
                s,
                args.steps,
                str(tmp / f"{j}-{g}-{v.name}-{s}"),
                [*args.overrides, *v.overrides],
                vlm,
                v.name,
            )
            for j, g, v, s in grid
        ]
        failed: list[str] = []
        for k, (job, key) in enumerate(zip(jobs, grid), 1):
            try:
                r = job.result()
            except Exception as e:  # noqa: BLE001 - one broken run must not lose the grid
                j, g, v, s = key
                line = f"{j} {g} {v.name} {s}: {type(e).__name__}: {e}"
                failed.append(line)
                print(f"[{k}/{len(jobs)}] FAILED {line}", file=sys.stderr)
                continue
            results.append(r)
            print(
                f"[{k}/{len(jobs)}] {r['judge']:7s} {r['env']:10s} {r['variant']:8s} seed "
                f"{r['seed']}: progression {r['progression']:g} score {r['score']:g} "
                + (f"achievements {r['achievements']} " if "achievements" in r else "")
                + f"library "
                f"{r['library_size']} requests {sum(r['requests'].values())} "
                f"({r['duration_s']:.0f} s)",
                file=sys.stderr,
            )
    cmd = "python benchmarks/judges.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    report = [
        f"command: `{cmd}`",
        f"grid: judges {', '.join(judges)} × {', '.join(games)} × "
        f"{', '.join(v.name for v in arms)} × "
        f"{args.seeds} seed(s) × {args.steps} steps; pixel encoder, OpenCV segmenter; "
        f"wall {(time.time() - t0) / 60:.1f} min; {time.strftime('%Y-%m-%d')}",
        f"versions: {versions()}",
        f"machine: {machine()}",
        "",
        "## Per judge and method (mean ± SE over seeds)",
        "",
        table(results, [v.name for v in arms]),
        "",
        "## Paired by seed: each method vs no_graph, each variant vs its method",
        "",
        verdicts(results, variants, [v.name for v in arms]),
    ]
    if variants:
        report += [
            "",
            "Variants:",
            *(f"- {v.name}: {v.method} with {', '.join(v.overrides)}" for v in variants),
        ]
    if failed:
        report += ["", f"## Failed runs ({len(failed)})", "", *(f"- {x}" for x in failed)]
    text = "\n".join(report)
    print(text)
    if args.write:
        Path(args.write).write_text("# Judge benchmark\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
