"""How long memory takes to find "the same object" for a screen's segments: by its hash
index and by a scan of every stored object, and whether both find the same objects.

Every screen the agent segments is looked up object by object (``Memory.find_object``:
the nearest stored pHash within ``memory.object_hash_distance`` bits, of a size within
``memory.object_size_tolerance``). This plays ``--screens`` screens of Crafter
(``gym:crafter``, random moves under ``--seed``; harness code), segments them with the
OpenCV segmenter, and looks every segment up in the memory at ``--memory`` (opened
read-only) twice: through memory's index, and by the scan of every object that the index
replaced (written here, over memory's in-process arrays). It prints the objects stored,
the look-ups, the CPU milliseconds per look-up of each, the index's candidates per
look-up, and whether the two found the same object every time.

    python benchmarks/crafter.py --seeds 1 --steps 300 --rounds 3 --methods full   # a memory
    .venv/bin/python benchmarks/experiments/object_lookup.py --memory /tmp/kgagent-crafter-XXXX/memory-full-1
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from kgagent.errors import KGAgentError

#: a scan's "no match" distance (larger than any 64-bit Hamming distance)
_NO_MATCH = 1 << 30


def frames(screens: int, seed: int) -> list[np.ndarray]:
    """``screens`` screens of Crafter after random moves (the harness knows its keys)."""
    from kgagent.actions import Action
    from kgagent.config import Config
    from kgagent.envs.registry import make_env

    env = make_env("gym:crafter", Config.load(None, [f"run.seed={seed}"]))
    env.reset()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(screens):
        obs, _r, terminated, truncated, _info = env.step(
            Action("key", key=str(rng.choice(list("wasd"))))
        )
        out.append(np.array(obs))
        if terminated or truncated:
            env.reset()
    env.close()
    return out


def scan(mem, phash: int, size: tuple[int, int]) -> str | None:
    """The look-up the index replaced: every stored object tested (no label asked)."""
    n = len(mem._object_ids)
    if n == 0:
        return None
    m = mem.config.memory
    dist = np.bitwise_count(np.bitwise_xor(mem._hashes[:n], np.uint64(phash))).astype(int)
    w, h = max(size[0], 1), max(size[1], 1)
    sizes = mem._sizes[:n]
    rel = np.abs(sizes - [w, h]) / np.maximum(sizes, [w, h])
    ok = (dist <= m.object_hash_distance) & (rel.max(axis=1) <= m.object_size_tolerance)
    if not ok.any():
        return None
    return mem._object_ids[int(np.argmin(np.where(ok, dist, _NO_MATCH)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memory", required=True, help="a memory folder (opened read-only)")
    ap.add_argument("--screens", type=int, default=40, help="Crafter screens to segment (40)")
    ap.add_argument("--seed", type=int, default=1, help="Crafter world and moves (1)")
    args = ap.parse_args(argv)
    from kgagent.config import Config
    from kgagent.memory import Memory
    from kgagent.perception.segmenters import OpenCVSegmenter

    cfg = Config.load(None, [])
    segmenter = OpenCVSegmenter(cfg.perception)
    queries = [
        (int(s.phash), (int(s.bbox[2]), int(s.bbox[3])))
        for f in frames(args.screens, args.seed)
        for s in segmenter.segment(f)
    ]
    try:
        mem = Memory.open(args.memory, cfg, read_only=True)
    except KGAgentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with mem:
        t = time.process_time()
        indexed = [mem.find_object(p, s) for p, s in queries]
        index_s = time.process_time() - t
        t = time.process_time()
        scanned = [scan(mem, p, s) for p, s in queries]
        scan_s = time.process_time() - t
        cands = [len(mem._hash_index.candidates(p)) for p, _ in queries]
        same = all(
            (a.id if a is not None else None) == b for a, b in zip(indexed, scanned, strict=True)
        )
        n = max(len(queries), 1)
        print(
            json.dumps(
                {
                    "objects": len(mem._object_ids),
                    "lookups": len(queries),
                    "found": sum(a is not None for a in indexed),
                    "index_ms_per_lookup": round(1000 * index_s / n, 3),
                    "scan_ms_per_lookup": round(1000 * scan_s / n, 3),
                    "candidates_mean": round(float(np.mean(cands)), 1) if cands else 0.0,
                    "candidates_max": max(cands, default=0),
                    "same_objects": same,
                },
                indent=1,
            )
        )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
