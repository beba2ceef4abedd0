"""Transfer benchmark: does one memory merged from several agents play better than each alone?

For every seed r: ``--agents`` agents (game seeds 1000·r + i) each learn the game for
``--learn-steps`` steps in a fresh memory (restarting the game when it ends, so each
gets the full budget); their memories are merged (``kgagent memory merge``); then one
new round of ``--round-steps`` steps on an unseen game seed (1000·r + 999) is played
from a copy of the merged memory, from a copy of each single memory, and from an
empty memory. The round's progression (the game's ground truth, read by the harness
only) is compared per seed: merged against the mean of the single memories, and
each against the empty memory (paired: mean difference ± standard error, t).

    python benchmarks/transfer.py                                  # card game, 8 seeds
    python benchmarks/transfer.py --seeds 10 --learn-steps 300 --round-steps 300 --jobs 2
    python benchmarks/transfer.py --game civgame --seeds 2 --learn-steps 50 --round-steps 50

Offline brain, pixel encoder, OpenCV segmenter (any machine). Every merge is also
checked: `Memory.check` passes, the merged memory has at most the sum of the
sources' states, and every skill of every source is in it or merged into one with
equal operations. The memories and step logs are kept in the folder the report names.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from learning import machine, paired, versions

from kgagent.bench.local import spawn_pool

#: The game seed of agent i in replicate r, and of the replicate's evaluation round.
SEED_STRIDE = 1000
EVAL_OFFSET = 999


def _config(game: str, seed: int, restart: bool, overrides: list[str]) -> Any:
    from kgagent.config import Config

    return Config.load(
        None,
        [
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
            f"run.env={game}",
            f"run.seed={seed}",
            f"run.restart={'true' if restart else 'false'}",
            *overrides,
        ],
    )


def play(
    game: str, seed: int, steps: int, memory: str, restart: bool, overrides: list[str]
) -> dict:
    """One run on ``memory``; returns its summary."""
    from kgagent.agent.runner import Runner

    cfg = _config(game, seed, restart, overrides)
    s = Runner(cfg, memory_path=memory, progress=False, log=lambda m: None).run(steps)
    return s.to_dict()


def merge(sources: list[str], dest: str, overrides: list[str]) -> dict:
    """Merge the learners' memories and check the result (the issue's merge target)."""
    from kgagent.config import Config
    from kgagent.memory import Memory
    from kgagent.memory.merge import merge_memories

    cfg = Config.load(None, list(overrides))
    summary = merge_memories(sources, dest, cfg)
    with Memory.open(dest, cfg, read_only=True) as m:
        check_ok = all(r["status"] == "ok" for r in m.check())
        merged = {r["id"]: r for r in m.run_named("archive_export_skill")}
    source_states, missing = 0, 0
    for src in sources:
        with Memory.open(src, cfg, read_only=True) as m:
            source_states += m.stats().nodes
            mid = m.manifest["memory_id"]
            for k in m.skills():
                if not any(
                    {"memory": mid, "id": k.id} in json.loads(r["origin"] or "[]")
                    for r in merged.values()
                ):
                    missing += 1
    return {
        "check_ok": check_ok,
        "nodes": summary["nodes"],
        "source_nodes": source_states,
        "skills": summary["skills_augmented"],
        "skills_missing": missing,
        "states_merged": summary["states_merged"],
        "seconds": summary["seconds"],
    }


def _run_all(args: argparse.Namespace, tmp: Path) -> tuple[dict, dict]:
    seeds, agents = range(args.seeds), range(args.agents)
    learn = lambda r, i: str(tmp / f"learn-{r}-{i}")  # noqa: E731
    rounds: dict[tuple[int, str], dict] = {}
    merges: dict[int, dict] = {}
    with spawn_pool(args.jobs) as pool:
        jobs = {
            (r, i): pool.submit(
                play,
                args.game,
                SEED_STRIDE * r + i,
                args.learn_steps,
                learn(r, i),
                True,
                args.overrides,
            )
            for r in seeds
            for i in agents
        }
        for (r, i), j in jobs.items():
            s = j.result()
            _say(
                f"seed {r} agent {i}: learned {s['steps']} steps, {s['nodes']} states, {s['library_size']} skills"
            )
        mjobs = {
            r: pool.submit(
                merge, [learn(r, i) for i in agents], str(tmp / f"merged-{r}"), args.overrides
            )
            for r in seeds
        }
        for r, j in mjobs.items():
            merges[r] = j.result()
            _say(f"seed {r}: merged {merges[r]}")
        conditions = ["merged", *[f"single-{i}" for i in agents], "empty"]
        rjobs = {}
        for r in seeds:
            for c in conditions:
                where = tmp / f"round-{r}-{c}"
                if c == "merged":
                    shutil.copytree(tmp / f"merged-{r}", where)
                elif c.startswith("single"):
                    shutil.copytree(learn(r, int(c.split("-")[1])), where)
                rjobs[(r, c)] = pool.submit(
                    play,
                    args.game,
                    SEED_STRIDE * r + EVAL_OFFSET,
                    args.round_steps,
                    str(where),
                    False,
                    args.overrides,
                )
        for (r, c), j in rjobs.items():
            rounds[(r, c)] = j.result()
            _say(f"seed {r} round from {c}: progression {rounds[(r, c)]['progression']:g}")
    return rounds, merges


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _mean_se(values: list[float]) -> str:
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.2f}"
    return f"{m:.2f} ± {statistics.stdev(values) / len(values) ** 0.5:.2f}"


def report(
    args: argparse.Namespace, rounds: dict, merges: dict, elapsed: float, tmp: Path, argv: list[str]
) -> str:
    seeds, agents = list(range(args.seeds)), list(range(args.agents))
    prog = lambda r, c: float(rounds[(r, c)]["progression"])  # noqa: E731
    merged = [prog(r, "merged") for r in seeds]
    single = [statistics.fmean(prog(r, f"single-{i}") for i in agents) for r in seeds]
    empty = [prog(r, "empty") for r in seeds]
    lines = [
        f"command: `python benchmarks/transfer.py {' '.join(shlex.quote(a) for a in argv)}`",
        f"date: {time.strftime('%Y-%m-%d')}; wall {elapsed / 60:.1f} min",
        f"grid: {args.game}, {args.seeds} seed(s) × {args.agents} agents × {args.learn_steps} learning "
        f"steps, rounds of {args.round_steps} steps; offline brain, pixel encoder, OpenCV segmenter",
        f"versions: {versions()}",
        f"machine: {machine()}",
        f"memories and step logs: {tmp}",
        "",
        "| seed | merge: states (sum of sources) | check | skills missing | round progression: merged | singles | mean single | empty |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in seeds:
        mg = merges[r]
        singles = " ".join(f"{prog(r, f'single-{i}'):g}" for i in agents)
        lines.append(
            f"| {r} | {mg['nodes']} ({mg['source_nodes']}) | {'ok' if mg['check_ok'] else 'FAILED'} | "
            f"{mg['skills_missing']} | {merged[r]:g} | {singles} | {single[r]:.2f} | "
            f"{empty[r]:g} |"
        )
    lines += [
        "",
        f"round progression, mean ± SE over {len(seeds)} seeds: merged {_mean_se(merged)}, "
        f"mean single {_mean_se(single)}, empty {_mean_se(empty)}",
        f"- merged − mean single: {paired(single, merged)}",
        f"- merged − empty: {paired(empty, merged)}",
        f"- mean single − empty: {paired(empty, single)}",
        "",
        f"target (the merged memory's round beats the mean single memory's round): "
        f"{'met' if statistics.fmean(merged) > statistics.fmean(single) else 'MISSED'} "
        f"({statistics.fmean(merged):.2f} against {statistics.fmean(single):.2f})",
        f"merge targets: check passed {sum(m['check_ok'] for m in merges.values())}/{len(seeds)}, "
        f"states ≤ sum {sum(m['nodes'] <= m['source_nodes'] for m in merges.values())}/{len(seeds)}, "
        f"skills missing {sum(m['skills_missing'] for m in merges.values())}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--game", default="cardgame")
    ap.add_argument(
        "--seeds", type=int, default=8, help="replicates (each: agents, a merge, rounds)"
    )
    ap.add_argument("--agents", type=int, default=4, help="learning agents per seed")
    ap.add_argument("--learn-steps", type=int, default=150)
    ap.add_argument("--round-steps", type=int, default=150)
    ap.add_argument("--jobs", type=int, default=2, help="parallel processes")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="S.F=V")
    ap.add_argument("--write", default=None, help="also write the report to this file")
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.agents < 1:
        ap.error("--seeds and --agents must be at least 1")
    tmp = Path(tempfile.mkdtemp(prefix="kgagent-transfer-"))
    t0 = time.time()
    rounds, merges = _run_all(args, tmp)
    text = report(
        args,
        rounds,
        merges,
        time.time() - t0,
        tmp,
        list(argv if argv is not None else sys.argv[1:]),
    )
    print(text)
    if args.write:
        Path(args.write).write_text("# Transfer benchmark\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
