"""Does the segmenter of this checkout find the same segments as another checkout's, and how much faster?

    .venv/bin/python benchmarks/experiments/same_segments.py OTHER_CHECKOUT [--frames N]

OTHER_CHECKOUT is a tree of kgagent (e.g. `git worktree add /tmp/old <commit>`); its
``kgagent/perception/segmenters.py`` is loaded beside this one's. The screens: N frames of
each built-in game (random clicks on their controls, seeds 1 and 2) and, when Crafter is
installed, N of Crafter (random actions, seeds 3 and 4). Both segmenters see every frame;
"the same" means every segment's box, pHash, score and crop bytes are equal. The masked
path (SAM's candidates) is checked on random boxes with random masks over every sixth
frame. Then both are timed, frame by frame in alternating order (three passes), and the
difference is paired by frame. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from kgagent.actions import Action
from kgagent.bench.stats import paired_t
from kgagent.config import Config
from kgagent.envs.registry import make_env
from kgagent.perception import segmenters as this


def _load_other(tree: Path):
    path = tree / "kgagent" / "perception" / "segmenters.py"
    spec = importlib.util.spec_from_file_location("other_segmenters", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no segmenter at {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _frames(cfg: Config, n: int) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {}
    for name in ("cardgame", "civgame"):
        frames = []
        for seed in (1, 2):
            env = make_env(name, cfg)
            env.reset(seed=seed)
            rng = np.random.default_rng(seed)
            for _ in range(n // 2):
                frames.append(np.asarray(env.observe()).copy())
                controls = env.clickable_elements()
                _, (x, y, w, h) = controls[int(rng.integers(len(controls)))]
                env.step(Action("click", x=x + w // 2, y=y + h // 2))
        out[name] = frames
    if importlib.util.find_spec("crafter") is None:
        print("crafter: not installed, skipped")
        return out
    from kgagent.envs.gym import GymEnv

    frames = []
    for seed in (3, 4):
        env = GymEnv("crafter", seed=seed)
        env.reset()
        rng = np.random.default_rng(seed)
        for _ in range(n // 2):
            f, *_ = env.step_index(int(rng.integers(1, 17)))
            frames.append(np.asarray(f).copy())
    out["crafter"] = frames
    return out


def _digest(segments) -> list[tuple]:
    return [
        (s.bbox, s.phash, s.score, hashlib.sha1(s.crop.tobytes()).hexdigest()) for s in segments
    ]


def _masked(mod, frame: np.ndarray, seed: int, cfg) -> list[tuple]:
    rng = np.random.default_rng(seed)
    h, w = frame.shape[:2]
    cands = []
    for _ in range(80):
        bw, bh = int(rng.integers(4, w // 3)), int(rng.integers(4, h // 3))
        x, y = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        mask = np.zeros((h, w), bool)
        if rng.random() < 0.8:
            mask[y : y + bh, x : x + bw] = rng.random((bh, bw)) < 0.7
        keep_mask = rng.random() < 0.7
        score = float(np.round(rng.random(), 2))
        cands.append(mod._Candidate((x, y, bw, bh), score, mask if keep_mask else None))
        if rng.random() < 0.2:  # the same box again, without a mask
            cands.append(mod._Candidate((x, y, bw, bh), float(np.round(rng.random(), 1))))
    return _digest(mod._finalize(frame, cands, cfg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", type=Path, help="another checkout of kgagent")
    ap.add_argument("--frames", type=int, default=60, help="frames per program (60)")
    args = ap.parse_args()
    other = _load_other(args.other)
    cfg = Config()
    pc = cfg.perception
    mine, theirs = this.OpenCVSegmenter(pc), other.OpenCVSegmenter(pc)
    frames = _frames(cfg, args.frames)
    for name, fs in frames.items():
        found = [(_digest(mine.segment(f)), _digest(theirs.segment(f))) for f in fs]
        same = sum(a == b for a, b in found)
        segs = sum(len(a) for a, _ in found)
        masked = fs[::6]
        same_m = sum(
            _masked(this, f, k, pc) == _masked(other, f, k, pc) for k, f in enumerate(masked)
        )
        shape = "x".join(map(str, fs[0].shape[1::-1]))
        print(
            f"{name} ({shape}): the same segments on {same} of {len(fs)} frames "
            f"({segs} segments); masked candidates: {same_m} of {len(masked)}"
        )
        for f in fs[:3]:
            mine.segment(f), theirs.segment(f)  # warm
        t_mine, t_theirs = [], []
        for rep in range(3):
            for k, f in enumerate(fs):
                order = ((mine, t_mine), (theirs, t_theirs))
                for seg, out in order if (k + rep) % 2 else order[::-1]:
                    t0 = time.perf_counter()
                    seg.segment(f)
                    out.append(time.perf_counter() - t0)
        diff = paired_t([1e3 * t for t in t_mine], [1e3 * t for t in t_theirs])
        print(
            f"  per frame: this {1e3 * statistics.median(t_mine):.1f} ms p50, other "
            f"{1e3 * statistics.median(t_theirs):.1f} ms; this − other, ms: {diff.text(2)}"
        )


if __name__ == "__main__":
    main()
