"""Screenshots of an X display that a hung display cannot turn into a hung kgagent.

Pillow's ``ImageGrab.grab(xdisplay=…)`` waits for the X server inside C while holding
Python's GIL: while a display does not answer, no Python code runs, so Ctrl-C and SIGTERM
do nothing and kgagent waits for ever without a word. :class:`XCapture` reads the screen
with python-xlib instead (``GetImage``, a ZPixmap), whose waits are Python socket waits
that release the GIL. It captures in a daemon thread and waits for it in the calling
thread, where signals are handled at once; a display that has not answered within the
timeout is one clear error. On the common 24-bit TrueColor screens (Xvfb, Xorg) this is
also faster than Pillow's grab (about 4 ms against 9 ms for 1280×720); other pixel
formats use Pillow's grab, without that protection.
"""

from __future__ import annotations

import threading
from typing import Any

import cv2
import numpy as np

from kgagent.envs.xwindows import connect, disconnect
from kgagent.errors import EnvironmentError_

Box = tuple[int, int, int, int]  # x0, y0, x1, y1


class OffScreen(EnvironmentError_):
    """A capture of an area that is not (or no longer) all on the screen."""


class XCapture:
    """Screenshots of one X display over a connection of their own."""

    def __init__(self, display: str, timeout_s: float) -> None:
        from Xlib import X

        self.display = display
        self.timeout_s = timeout_s
        self.conn: Any = connect(display)
        screen = self.conn.screen()
        self.root = screen.root
        depth = screen.root_depth
        bpp = next((f.bits_per_pixel for f in self.conn.display.info.pixmap_formats
                    if f.depth == depth), 0)  # fmt: skip
        visual = next((v for d in screen.allowed_depths if d.depth == depth
                       for v in d.visuals if v.visual_id == screen.root_visual), None)  # fmt: skip
        #: 32-bit pixels B, G, R, pad in memory: read straight into an array
        self.direct = (
            bpp == 32
            and depth in (24, 32)
            and self.conn.display.info.image_byte_order == X.LSBFirst
            and visual is not None
            and (visual.red_mask, visual.green_mask, visual.blue_mask)
            == (0xFF0000, 0x00FF00, 0x0000FF)
        )

    def grab(self, box: Box) -> np.ndarray:
        """The RGB pixels (h × w × 3, uint8) of ``box`` on the screen."""
        out: dict[str, Any] = {}

        def capture() -> None:
            try:
                out["pixels"] = self._read(box)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                out["error"] = e

        worker = threading.Thread(target=capture, name="kgagent-capture", daemon=True)
        worker.start()
        worker.join(self.timeout_s)  # signals interrupt this wait (KeyboardInterrupt, SystemExit)
        if worker.is_alive():
            raise EnvironmentError_(
                f"the X display {self.display!r} did not answer a screenshot within "
                f"{self.timeout_s:g} s; it has hung (desktop.capture_timeout_s)"
            )
        if "error" in out:
            raise out["error"]
        return out["pixels"]

    def _read(self, box: Box) -> np.ndarray:
        x0, y0, x1, y1 = box
        w, h = x1 - x0, y1 - y0
        if not self.direct:
            from PIL import ImageGrab

            img = ImageGrab.grab(bbox=box, xdisplay=self.display)
            return np.asarray(img.convert("RGB"))
        from Xlib import X, error

        try:
            reply = self.root.get_image(x0, y0, w, h, X.ZPixmap, 0xFFFFFFFF)
        except error.BadMatch:
            raise OffScreen(
                f"the area {box} is not all on the screen of {self.display!r}"
            ) from None
        bgrx = np.frombuffer(reply.data, np.uint8).reshape(h, w, 4)
        # OpenCV's conversion, not numpy's strided copy of bgrx[:, :, 2::-1]: the same
        # pixels, about 0.1 ms against 5-6 ms for 1280×720 (a settle wait captures many
        # times; benchmarks/experiments/frame_copies.py).
        return cv2.cvtColor(bgrx, cv2.COLOR_BGRA2RGB)

    def close(self) -> None:
        disconnect(self.conn)
