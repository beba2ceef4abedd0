"""How long the copies of a frame take: numpy's strided copies against OpenCV's, same pixels.

    .venv/bin/python benchmarks/experiments/frame_copies.py [--repeats N]

Two copies are made of every frame the agent sees:
- a screenshot read over python-xlib is BGRX; it is turned into RGB. On a private Xvfb,
  600×600 and 1280×720: the conversion by numpy's strided copy (`bgrx[:, :, 2::-1]`) and
  by `cv2.cvtColor`, and a whole `XCapture.grab` (needs Xvfb and python-xlib);
- Crafter's render is a column-major view; it is put in C order by
  `np.ascontiguousarray` and by `kgagent.envs.gym_frames.contiguous` (needs Crafter).
Both pairs are checked to give the same pixels. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import time
from collections.abc import Callable

import cv2
import numpy as np


def _p50_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def captures(repeats: int) -> None:
    if shutil.which("Xvfb") is None or importlib.util.find_spec("Xlib") is None:
        print("capture: needs Xvfb and python-xlib, skipped")
        return
    from Xlib import X
    from Xlib import display as xdisplay

    from kgagent.envs import xcapture
    from kgagent.envs.launch import PrivateX

    x = PrivateX((1280, 720))
    try:
        conn = xdisplay.Display(x.display)
        screen = conn.screen()
        for i, pixel in enumerate((0xFF0000, 0x00FF00, 0x0000FF, 0x808080)):
            screen.root.create_window(
                i * 320, 0, 320, 720, 0, screen.root_depth, background_pixel=pixel
            ).map()
        conn.sync()
        cap = xcapture.XCapture(x.display, 5.0)
        try:
            for x0, y0, w, h in ((0, 0, 600, 600), (0, 0, 1280, 720)):
                box = (x0, y0, x0 + w, y0 + h)
                raw = screen.root.get_image(x0, y0, w, h, X.ZPixmap, 0xFFFFFFFF).data
                bgrx = np.frombuffer(raw, np.uint8).reshape(h, w, 4)
                by_numpy = np.ascontiguousarray(bgrx[:, :, 2::-1])
                same = np.array_equal(by_numpy, cv2.cvtColor(bgrx, cv2.COLOR_BGRA2RGB))
                same &= np.array_equal(by_numpy, cap.grab(box))
                a = _p50_ms(lambda b=bgrx: np.ascontiguousarray(b[:, :, 2::-1]), repeats)
                b = _p50_ms(lambda b=bgrx: cv2.cvtColor(b, cv2.COLOR_BGRA2RGB), repeats)
                g = _p50_ms(lambda b=box: cap.grab(b), repeats)
                print(
                    f"capture {w}x{h} (the same pixels: {same}): BGRX to RGB by numpy "
                    f"{a:.2f} ms p50, by cv2.cvtColor {b:.2f} ms; a whole XCapture.grab "
                    f"{g:.2f} ms"
                )
        finally:
            cap.close()
            conn.close()
    finally:
        x.stop()


def crafter_frames(repeats: int) -> None:
    if importlib.util.find_spec("crafter") is None:
        print("crafter frame: Crafter not installed, skipped")
        return
    import crafter

    from kgagent.envs.gym_frames import contiguous

    env = crafter.Env(seed=1)
    env.reset()
    frame = env.render([600, 600])
    same = np.array_equal(np.ascontiguousarray(frame), contiguous(frame))
    a = _p50_ms(lambda: np.ascontiguousarray(frame), repeats)
    b = _p50_ms(lambda: contiguous(frame), repeats)
    print(
        f"crafter frame 600x600 (C order: {frame.flags.c_contiguous}; the same pixels: {same}): "
        f"np.ascontiguousarray {a:.2f} ms p50, contiguous {b:.2f} ms p50"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    captures(args.repeats)
    crafter_frames(args.repeats)


if __name__ == "__main__":
    main()
