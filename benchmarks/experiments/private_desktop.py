"""What the desktop experiments share: a private Xvfb and the test suite's Tk app on it.

``private_desktop()`` starts an Xvfb on a free display number (kgagent's own
``PrivateX``), makes it this process's ``DISPLAY`` and stops it, with every process the
caller adds to the list it yields, on the way out. ``start_app`` starts
``tests/envs/desktop_app.py`` there and waits for its window.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "tests" / "envs" / "desktop_app.py"


@contextlib.contextmanager
def private_desktop() -> Iterator[list[subprocess.Popen]]:
    """A private Xvfb as ``DISPLAY``; the processes put in the list are killed with it.

    Raises ``SystemExit`` with a one-line message when Xvfb is missing or does not start.
    """
    from kgagent.envs.launch import PrivateX
    from kgagent.errors import KGAgentError

    try:
        x = PrivateX((1280, 800))
    except KGAgentError as exc:
        raise SystemExit(f"error: {exc}") from None
    saved = {k: os.environ.get(k) for k in ("DISPLAY", "XDG_SESSION_TYPE")}
    os.environ["DISPLAY"] = x.display
    os.environ["XDG_SESSION_TYPE"] = "x11"
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()
        x.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_app(folder: Path, title: str, *extra: str) -> tuple[subprocess.Popen, Path, int]:
    """Start the Tk app titled ``title`` on ``DISPLAY``; its process, counts file and window.

    Its counts file (clicks per button, keys) is ``folder/TITLE.json``.
    """
    from kgagent.envs.xwindows import XWindows

    counts = folder / f"{title}.json"
    proc = subprocess.Popen([sys.executable, str(APP), str(counts), title, *extra])
    x = XWindows(os.environ["DISPLAY"])
    try:
        for _ in range(400):
            win = x.find(title) if counts.exists() else None
            if win is not None:
                return proc, counts, win.wid
            time.sleep(0.05)
    finally:
        x.close()
    proc.kill()
    proc.wait()
    raise SystemExit(f"error: the test app {title!r} did not start")


def clicks_received(counts: Path) -> int:
    """Clicks the app's buttons received, from its counts file."""
    c = json.loads(counts.read_text())
    return sum(c[k] for k in ("A", "B", "C", "D"))
