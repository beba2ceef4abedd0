"""Hover changes: how many inputs look like effects only because the pointer lit something up?

Why: a program redraws what lies under the pointer (a button's hover colour or border,
a link's underline). When the screen after an input is captured with the pointer where
the input left it, and the screen before with the pointer elsewhere, the two differ by
the hover alone, and the agent counts an effect (``augment.min_change``). The desktop
env puts the pointer back on one rest point of the target before every compared capture
(``kgagent/envs/rest.py``). This launches a program on a private 1024x768 Xvfb, sends it
a fixed list of pointer inputs twice, with the rest point (``rest``) and without
(``no-rest``: the pointer stays where the input left it), and counts per input whether
the env's before and after screens differ by ``augment.min_change`` ("changed"), and
whether the program itself changed: the target captured with the pointer moved off it,
onto the bare screen, before and after the input (between the env's captures, the
pointer put back where it was and the hover redrawn). "Hover only" is changed without
a change of the program's own. It also times the rest move of each step.

    python benchmarks/experiments/hover_changes.py --program toy|xbill|chromium

``toy`` is ``tests/envs/hover_app.py`` (a Tk window: ``Idle`` lights up and does
nothing, ``Paint`` paints a strip); ``xbill`` (apt-get install xbill) is driven on its
"New Game?" dialog, whose Xaw buttons light up; ``chromium`` shows a page with a
button that lights up (CSS ``:hover``), a link, and a button that paints a strip.
Needs ``Xvfb``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OFF = (1000, 700)  # a point of the bare 1024x768 screen, off every program's window
PAGE = """<!doctype html><html><body style="margin:0;background:#fff;font:16px sans-serif">
<style>button{width:120px;height:50px;margin:20px;background:#ddd;border:1px solid #888}
button:hover{background:#36c} a:hover{color:#c00}</style>
<button>Idle</button><button onclick="p()">Paint</button>
<p style="margin:20px"><a href="#nowhere" onclick="return false">a link</a></p>
<div id="strip" style="margin:20px;width:260px;height:60px;background:#444"></div>
<script>var n=0;function p(){n++;
document.getElementById('strip').style.background=['#444','#999','#eee'][n%3];
document.title='paint '+n;}</script>
</body></html>"""


def _inputs(program: str):
    """(launch command, the inputs of one round); a round leaves the program as it began."""
    from kgagent.actions import Action

    def click(x, y):
        return Action("click", x=x, y=y)

    def hover(x, y):  # a scroll of 0 moves the pointer there and does nothing else
        return Action("scroll", x=x, y=y, scroll=0)

    folder = Path(tempfile.mkdtemp())
    if program == "toy":
        app = ROOT / "tests" / "envs" / "hover_app.py"
        idle, paint, bg, strip = (80, 50), (220, 50), (150, 95), (150, 140)
        ops = [click(*idle), click(*bg), click(*paint), hover(*idle), click(*strip)]
        ops += [click(*paint), click(*idle), hover(*paint), click(*paint)]
        return f"{sys.executable} {app} {folder / 'c.json'} kghover", ops
    if program == "xbill":
        # the Game menu's "New Game" opens the dialog; OK and Cancel light up under the
        # pointer; Cancel closes it (OK would start the game's animation)
        ok, cancel, label = (155, 225), (198, 225), (175, 203)
        ops = [Action("drag", x=22, y=13, x2=40, y2=38), hover(*ok), click(*label)]
        ops += [hover(*cancel), click(300, 350), hover(*ok), click(*cancel)]
        return shutil.which("xbill") or "/usr/games/xbill", ops
    page = folder / "page.html"
    page.write_text(PAGE)
    idle, paint, link, strip, bg = (80, 45), (240, 45), (40, 118), (150, 175), (400, 300)
    ops = [click(*idle), hover(*link), click(*bg), click(*paint), hover(*idle)]
    ops += [click(*strip), click(*link), hover(*paint), click(*paint)]
    cmd = (
        "chromium --no-sandbox --test-type --no-first-run --disable-gpu "
        f"--user-data-dir={folder / 'profile'} --window-position=0,0 --window-size=500,400 "
        f"--app=file://{page}"
    )
    return cmd, ops


def _still(env, timeout_s: float = 3.0):
    """The target's capture once two taken 0.1 s apart are equal (or after the timeout)."""
    import numpy as np

    prev = env._grab()
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        time.sleep(0.1)
        cur = env._grab()
        if np.array_equal(prev, cur):
            return cur
        prev = cur
    return prev


def _off_target(env):
    """The target with the pointer off it; then the pointer goes back where it was and the
    env's last screen is taken again (the same screen, hover included)."""
    pg = env._pg()
    back = pg.position()
    pg.moveTo(*OFF, _pause=False)
    off = _still(env)
    pg.moveTo(back[0], back[1], _pause=False)
    env._last = _still(env)
    return off


def run(program: str, rounds: int, rest: bool) -> dict:
    from kgagent.config import Config, DesktopConfig
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions
    from kgagent.perception.change import visual_change

    cfg = Config()
    floor, threshold = cfg.augment.min_change, cfg.perception.change_threshold
    cmd, ops = _inputs(program)
    log = Path(tempfile.mkdtemp()) / "program.log"
    opts = DesktopOptions(launch=cmd, display="new", screen_size=(1024, 768), program_log=str(log))
    env = DesktopEnv(DesktopConfig(), options=opts)
    rests: list[float] = []
    real_rest = env._rest

    def timed_rest() -> None:
        t = time.perf_counter()
        real_rest()
        rests.append(time.perf_counter() - t)

    env._rest = timed_rest if rest else (lambda: None)
    out = {"executions": 0, "changed": 0, "hover_only": 0, "missed": 0}
    try:
        env.reset()
        time.sleep(1.0 if program != "chromium" else 4.0)  # its first drawing done
        env._last = _still(env)
        for _ in range(rounds):
            for op in ops:
                before_off = _off_target(env)
                before = env._last
                after = env.step(op)[0]
                after_off = _off_target(env)
                changed = before.shape != after.shape or (
                    visual_change(before, after, threshold) >= floor
                )
                own = visual_change(before_off, after_off, threshold) >= floor
                out["executions"] += 1
                out["changed"] += changed
                out["hover_only"] += changed and not own
                out["missed"] += own and not changed
    finally:
        env.close()
    out["rest_ms_p50"] = round(1000 * statistics.median(rests), 2) if rests else None
    out["rest_ms_max"] = round(1000 * max(rests), 2) if rests else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", choices=("toy", "xbill", "chromium"), default="toy")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if shutil.which("Xvfb") is None:
        raise SystemExit("error: Xvfb is not installed (apt-get install xvfb)")
    print(f"{args.program}: {args.rounds} rounds of the same inputs")
    print(
        "| mode | executions | changed | hover only | program changed, not counted |"
        " rest move p50 / max (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for rest in (False, True):
        r = run(args.program, args.rounds, rest)
        when = f"{r['rest_ms_p50']} / {r['rest_ms_max']}" if rest else "-"
        print(
            f"| {'rest' if rest else 'no-rest'} | {r['executions']} | {r['changed']} | "
            f"{r['hover_only']} | {r['missed']} | {when} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
