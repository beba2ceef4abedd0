"""Where a step's memory time goes: per-part latency on a kept large memory.

``memory_scale.py`` answers "how fast is each operation"; this script answers
"which part of a step costs what", the measurement behind the memory defaults in
docs/benchmarks.md ("Where a step's time goes"). It runs the per-step memory work
of the agent loop (merge-or-create, neighbourhood + HQ candidates, skill-edge upsert)
on a *copy* of a memory kept by ``memory_scale.py --workdir W --keep``. It times every
part: vector search, journal write, batch append to LanceDB, each named query, and
commit. Then it prints p50/p95 per part, and p50/p95/p99 per step.

    python benchmarks/memory_scale.py --workdir /tmp/w --keep --no-naive --no-archive --samples 5
    python benchmarks/experiments/memory_parts.py --memory /tmp/w/memory                  # defaults
    python benchmarks/experiments/memory_parts.py --memory /tmp/w/memory --threads 0      # every core
    python benchmarks/experiments/memory_parts.py --memory /tmp/w/memory --flush-rows 1   # LanceDB append per step
    python benchmarks/experiments/memory_parts.py --memory /tmp/w/memory --alternatives   # earlier statements

``--alternatives`` also times the earlier forms of three statements
(``benchmarks/experiments/alternatives.cypher``) against the named queries that replaced
them, on the same states and edges.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def ms(samples: list[float]) -> str:
    a = np.asarray(samples) * 1000.0
    return f"p50 {np.percentile(a, 50):7.2f}  p95 {np.percentile(a, 95):7.2f}"


class PartTimer:
    """Wraps callables so that each call's time is added to a named bucket of the current step."""

    def __init__(self) -> None:
        self.step: dict[str, float] = defaultdict(float)
        self.calls: dict[str, list[float]] = defaultdict(list)

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t
                self.step[name] += dt
                self.calls[name].append(dt)

        return timed


def per_step(mem, steps: int, seed: int) -> tuple[list[float], PartTimer]:
    vs = mem._need_vectors()
    timer = PartTimer()
    run_named = mem._q

    def q(name: str, /, **params):
        return timer.wrap(f"query {name}", run_named)(name, **params)

    mem._q = q
    vs.search = timer.wrap("vector search", vs.search)
    vs.journal.append = timer.wrap("journal write", vs.journal.append)
    vs._append = timer.wrap("LanceDB append (batch)", vs._append)
    mem._db.commit = timer.wrap("commit", mem._db.commit)

    rng = np.random.default_rng(seed)
    ids = list(vs._row_of)
    skills = [s.id for s in mem.skills("active")]
    prev = ids[0]
    totals: list[float] = []
    dim = vs.dim
    for _ in range(steps):
        v = vs.vector(ids[int(rng.integers(len(ids)))])
        x = v + 0.2 * rng.standard_normal(dim).astype(np.float32) / np.sqrt(dim)
        k = skills[int(rng.integers(len(skills)))]
        timer.step.clear()
        t = time.perf_counter()
        hit = mem.merge_or_create_state(x)
        mem.neighbourhood(hit.id)
        mem.hq_candidates(hit.id)
        mem.upsert_skill_edge(prev, hit.id, k, 0.4, 0.5)
        totals.append(time.perf_counter() - t)
        prev = hit.id
    mem._q = run_named
    return totals, timer


def alternatives(mem, n: int, seed: int) -> list[tuple[str, list[float], list[float]]]:
    """(what, earlier form's samples, current form's samples) on the same inputs."""
    from kgagent.memory import queries

    alt = queries.parse((HERE / "alternatives.cypher").read_text(encoding="utf-8"), "alt")
    db = mem._db
    rng = np.random.default_rng(seed)
    ids = list(mem._need_vectors()._row_of)
    skills = [s.id for s in mem.skills("active")]
    m = mem.config.memory

    def current(name: str, **p):
        return db.execute(queries.get(name).text, p)

    def earlier(name: str, **p):
        return db.execute(alt[name].text, p)

    def timed(fn, *a, **p) -> float:
        t = time.perf_counter()
        fn(*a, **p)
        return time.perf_counter() - t

    out = []
    old, new = [], []
    for _ in range(n):
        s = ids[int(rng.integers(len(ids)))]
        old.append(timed(earlier, "hq_candidates_path", state=s))
        new.append(timed(current, "hq_candidates", state=s))
    out.append(("HQ candidates: *0..1 path vs UNION ALL", old, new))

    old, new = [], []
    for _ in range(n):
        a, b = ids[int(rng.integers(len(ids)))], ids[int(rng.integers(len(ids)))]
        k = skills[int(rng.integers(len(skills)))]
        p = {"src": a, "dst": b, "skill": k, "change": 0.3, "r_total": 0.5, "now": 1.0}

        def merge_way(p=p):
            earlier("skill_edge_get", src=p["src"], dst=p["dst"], skill=p["skill"])
            earlier("skill_edge_merge", weight=0.6, **p)

        def bump_way(p=p):
            q = {**p, "alpha": float(m.alpha), "fit_term": 0.05}
            current("skill_edge_bump", **q) or current("skill_edge_create", **q)

        # The first call of a pair creates the edge; the second finds it: time both ways
        # on a new edge and on an existing one, alternating which goes first.
        first, second = (merge_way, bump_way) if len(old) % 2 == 0 else (bump_way, merge_way)
        t1, t2 = timed(first), timed(second)
        o, c = (t1, t2) if first is merge_way else (t2, t1)
        old.append(o)
        new.append(c)
    out.append(("skill-edge upsert: get + MERGE vs MATCH…SET (+ CREATE)", old, new))

    old, new = [], []
    for _ in range(n):
        s = ids[int(rng.integers(len(ids)))]
        rows = [r for r in current("similar_of", state=s) if s < r["id"]]
        if not rows:
            continue
        w = [float(r["weight"]) for r in rows]
        old.append(
            timed(
                earlier,
                "similar_set_weight_unwind_out",
                state=s,
                rows=[{"id": r["id"], "weight": x} for r, x in zip(rows, w)],
            )
        )
        new.append(
            timed(
                current,
                "similar_set_weight_out",
                state=s,
                ids=[r["id"] for r in rows],
                weights=w,
            )
        )
    out.append(("SIMILAR re-weigh: UNWIND + match per row vs list_contains", old, new))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--memory", type=Path, required=True, help="a memory kept by memory_scale.py")
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--threads", type=int, default=1, help="memory.query_threads (0: every core)")
    ap.add_argument("--flush-rows", type=int, default=64, help="memory.vector_flush_rows")
    ap.add_argument("--alternatives", action="store_true", help="also time earlier statements")
    ap.add_argument("--samples", type=int, default=300, help="samples per alternative")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    from kgagent.memory.files import read_manifest

    manifest = read_manifest(args.memory)
    if manifest is None or not manifest.get("encoder"):
        print(f"error: {args.memory} is not a kgagent memory with vectors", file=sys.stderr)
        return 2
    os.environ.setdefault("KGAGENT_ENGINE", manifest.get("engine", "ladybug"))
    work = Path(tempfile.mkdtemp(prefix="kgagent-parts-"))
    try:
        copy = work / "memory"
        print(f"copying {args.memory} → {copy} (the kept memory is not modified)", flush=True)
        shutil.copytree(args.memory, copy)
        os.sync()  # the copy's write-back must not land in the timed region
        cfg = Config()
        cfg.memory.engine = manifest.get("engine", "ladybug")
        cfg.memory.query_threads = args.threads
        cfg.memory.vector_flush_rows = args.flush_rows
        enc = manifest["encoder"]
        spec = EncoderSpec(enc["identity"], int(enc["dim"]), tuple(enc["thresholds"]))
        t = time.perf_counter()
        mem = Memory.open(copy, cfg, encoder=spec)
        print(f"open: {time.perf_counter() - t:.1f} s; {mem.stats()}", flush=True)
        print(
            f"load average {os.getloadavg()}; query_threads={args.threads}, "
            f"vector_flush_rows={args.flush_rows}, {args.steps} steps",
            flush=True,
        )
        try:
            totals, timer = per_step(mem, args.steps, args.seed)
            a = np.asarray(totals) * 1000.0
            print(
                f"per step: p50 {np.percentile(a, 50):.2f}  p95 {np.percentile(a, 95):.2f}  "
                f"p99 {np.percentile(a, 99):.2f} ms"
            )
            print(f"{'part':<42} {'calls/step':>10}   per call (ms)")
            for name in sorted(timer.calls, key=lambda k: -sum(timer.calls[k])):
                calls = timer.calls[name]
                print(f"{name:<42} {len(calls) / args.steps:>10.2f}   {ms(calls)}")
            if args.alternatives:
                print(f"earlier vs current statements ({args.samples} samples each):")
                for what, old, new in alternatives(mem, args.samples, args.seed):
                    print(f"  {what}")
                    print(f"    earlier  {ms(old)}")
                    print(f"    current  {ms(new)}")
        finally:
            mem.close()
        print(f"load average at end {os.getloadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
