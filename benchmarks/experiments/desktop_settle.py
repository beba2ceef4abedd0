"""Desktop settle: seconds per action on a window that never holds still.

Why: after each action ``DesktopEnv`` waits until the screen settles. A spinner
never gives two equal screenshots, so unless the environment tolerates the idle
motion the noise probe measured, every action on a busy program waits the whole
``desktop.settle_timeout_s`` (docs/agent.md, "Settling on a moving screen"). This starts a private Xvfb display and the test suite's Tk app
with its spinner (a 60×60 square changing every 20 ms), clicks a button
``--clicks`` times without and then with the tolerance, and prints both.

    python benchmarks/experiments/desktop_settle.py [--clicks 10]

Needs ``Xvfb`` (apt-get install xvfb).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from private_desktop import private_desktop, start_app  # noqa: E402


def _clicks(env, n: int) -> tuple[float, int]:
    from kgagent.actions import Action

    t = time.perf_counter()
    settled = sum(bool(env.step(Action("click", x=80, y=50))[4]["settled"]) for _ in range(n))
    return (time.perf_counter() - t) / n, settled


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clicks", type=int, default=10)
    args = ap.parse_args(argv)
    with private_desktop() as procs:
        folder = Path(tempfile.mkdtemp())
        procs.append(start_app(folder, "kgsettle", "animate")[0])
        from kgagent.config import Config
        from kgagent.envs.desktop import DesktopEnv
        from kgagent.perception.change import idle_change, visual_change

        full = Config()
        full.desktop.window = "kgsettle"
        cfg, thr = full.desktop, full.perception.change_threshold
        env = DesktopEnv(cfg)
        before = _clicks(env, args.clicks)
        idle = idle_change(
            env.observe,
            duration_s=cfg.noise_probe_s,
            interval_s=cfg.settle_interval_s,
            threshold=thr,
        )
        env.tolerate_motion(lambda a, b: visual_change(a, b, thr) <= idle)
        after = _clicks(env, args.clicks)
        print(f"idle change {idle:.3%}; settle_timeout_s {cfg.settle_timeout_s}")
        print("| settle test | s / action | settled |\n|---|---|---|")
        print(f"| equal screenshots only | {before[0]:.3f} | {before[1]}/{args.clicks} |")
        print(f"| within the idle change | {after[0]:.3f} | {after[1]}/{args.clicks} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
