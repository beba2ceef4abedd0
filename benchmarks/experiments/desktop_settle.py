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
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "tests" / "envs" / "desktop_app.py"


def _clicks(env, n: int) -> tuple[float, int]:
    from kgagent.actions import Action

    t = time.perf_counter()
    settled = sum(bool(env.step(Action("click", x=80, y=50))[4]["settled"]) for _ in range(n))
    return (time.perf_counter() - t) / n, settled


def _wait_for_display(display: str, proc: subprocess.Popen, timeout_s: float = 10.0) -> bool:
    """Wait until the X server answers (a fixed sleep is too short on a loaded machine)."""
    from Xlib import display as xdisplay

    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            xdisplay.Display(display).close()
            return True
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clicks", type=int, default=10)
    ap.add_argument("--display", default=":87")
    args = ap.parse_args(argv)
    if shutil.which("Xvfb") is None:
        print("error: Xvfb is not installed (apt-get install xvfb)", file=sys.stderr)
        return 1
    os.environ["DISPLAY"] = args.display
    os.environ["XDG_SESSION_TYPE"] = "x11"
    procs = [subprocess.Popen(["Xvfb", args.display, "-screen", "0", "1280x800x24"])]
    try:
        if not _wait_for_display(args.display, procs[0]):
            print(f"error: Xvfb {args.display} did not start (display in use?)", file=sys.stderr)
            return 1
        counts = Path(tempfile.mkdtemp()) / "counts.json"
        procs.append(
            subprocess.Popen([sys.executable, str(APP), str(counts), "kgsettle", "animate"])
        )
        time.sleep(2.0)
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
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
