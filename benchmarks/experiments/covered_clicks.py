"""Covered clicks: does a window that raises itself over the target ever get a click?

Why: X gives a click to the topmost window at its point. The desktop env checks where
a click will land before it sends it; a window of another program that raises itself
between the check and the press (an always-on-top popup) would take it. The env makes
the last check and the press with the X server held for its input connection
(``kgagent/envs/landing.py``). This starts a private Xvfb and two of the test suite's Tk
apps, the second over part of the first and raised every ``--raise-ms`` by a thread
of its own, and clicks the first's button where the second covers it ``--clicks``
times, with the server held and, with ``--no-hold``, without. It prints how many
clicks were sent, refused, and received by each window.

    python benchmarks/experiments/covered_clicks.py [--clicks 300] [--no-hold]

Needs ``Xvfb`` (apt-get install xvfb).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from private_desktop import clicks_received, private_desktop, start_app  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clicks", type=int, default=300)
    ap.add_argument("--raise-ms", type=float, default=50.0)
    ap.add_argument("--no-hold", action="store_true", help="send without holding the server")
    args = ap.parse_args(argv)
    stop = threading.Event()
    with private_desktop() as procs:
        from kgagent.actions import Action
        from kgagent.config import DesktopConfig
        from kgagent.envs import xinput
        from kgagent.envs.desktop import DesktopEnv
        from kgagent.envs.xwindows import XWindows
        from kgagent.errors import ActionRefused

        folder = Path(tempfile.mkdtemp())
        target, target_counts, _ = start_app(folder, "kgtarget")
        procs.append(target)
        cover, cover_counts, cover_wid = start_app(folder, "kgcover")
        procs.append(cover)
        x = XWindows(os.environ["DISPLAY"])
        x.move_to(cover_wid, 160, 150)  # over the target's button A (at 100+80, 120+50)
        if args.no_hold:

            @contextlib.contextmanager
            def unheld(self):  # what the env did before it held the server
                yield self._conn

            xinput.PyAutoGUIInput.grabbed = unheld  # type: ignore[method-assign]
        env = DesktopEnv(
            DesktopConfig(window="kgtarget", settle_timeout_s=0.05, action_pause_s=0.0)
        )

        def raise_forever() -> None:
            own = XWindows(os.environ["DISPLAY"])
            top = own.top_of(cover_wid)
            while not stop.is_set():
                own.raise_window(top)
                stop.wait(args.raise_ms / 1000)
            own.close()

        raiser = threading.Thread(target=raise_forever, daemon=True)
        raiser.start()
        sent = refused = 0
        t = time.perf_counter()
        try:
            for _ in range(args.clicks):
                try:
                    env.step(Action("click", x=80, y=50))
                    sent += 1
                except ActionRefused:
                    refused += 1
        finally:
            took = time.perf_counter() - t
            stop.set()
            raiser.join()
        time.sleep(0.5)
        env.close()
        x.close()
        hold = "without the hold" if args.no_hold else "server held"
        print(f"{hold}; a window raised every {args.raise_ms:g} ms over the target's button")
        print(
            "| clicks | sent | refused | target received | covering window received | s / click |"
        )
        print("|---|---|---|---|---|---|")
        print(
            f"| {args.clicks} | {sent} | {refused} | {clicks_received(target_counts)} | "
            f"{clicks_received(cover_counts)} | {took / args.clicks:.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
