"""Screenshots of an X display that a hung display cannot turn into a hung kgagent.

Pillow's ``ImageGrab.grab(xdisplay=…)`` waits for the X server inside C while holding
Python's GIL: while a display does not answer, no Python code runs, so Ctrl-C and SIGTERM
do nothing and kgagent waits for ever without a word. :class:`XCapture` reads the screen
with python-xlib instead (``GetImage``, a ZPixmap), whose waits are Python socket waits
that release the GIL. It captures in a daemon thread and waits for it in the calling
thread, where signals are handled at once; a display that has not answered within the
timeout is one clear error.

It reads in horizontal strips of about 1 MiB, not in one request: python-xlib 0.33
gathers a reply by copying what it has received so far for every chunk it receives,
so one large reply costs time quadratic in its size. Seven grabs each of a box of
``Xvfb :91 -screen 0 3840x2160x24`` (``XCapture(":91", 30).grab((0, 0, w, h))``, the
one-request reader of before against this one; python-xlib 0.33, a 2-core VM with a
test run beside it, 2026-11-28), median (slowest):

=========  ===================  ==============
box        one request          strips
=========  ===================  ==============
3840×2160  470-540 ms (2.2 s)   27-28 ms (54)
1920×1080  16-20 ms (28)        6-8 ms (12)
1280×720   3 ms (9)             3 ms (9)
=========  ===================  ==============

The strips are one snapshot: the X server is grabbed while they are read (no other
client draws meanwhile) and always ungrabbed after, or every other X client would
freeze. On the common 24-bit TrueColor screens (Xvfb, Xorg) this is also faster than
Pillow's grab (about 4 ms against 9 ms for 1280×720).

It reads two pixel formats itself: 32-bit pixels of a 24- or 32-bit TrueColor screen
(Xvfb's and Xorg's usual one) and 16-bit RGB565 pixels of a 16-bit screen, which Pillow
cannot read (widened to 8 bits a colour as the X server widens them; a whole
``Xvfb -screen 0 1024x768x16`` in 4 ms, median of seven, as above). Other formats use
Pillow's grab, without that protection; one that Pillow cannot read either is one clear
error naming the display's depth.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

from kgagent.envs.xwindows import connect, disconnect
from kgagent.errors import EnvironmentError_

Box = tuple[int, int, int, int]  # x0, y0, x1, y1

#: about this many bytes per GetImage request (one strip)
STRIP_BYTES = 2**20

#: the pixel formats read here: 32-bit B, G, R, pad (depth 24 or 32); 16-bit RGB565
BGRX, RGB565 = "bgrx", "rgb565"


class OffScreen(EnvironmentError_):
    """A capture of an area that is not (or no longer) all on the screen."""


def _rgb565_table() -> np.ndarray:
    """RGB for every 16-bit pixel value (65536 × 3), each channel's top bits repeated
    below it (31 → 255, 16 → 132), as X servers widen 5- and 6-bit colours."""
    v = np.arange(65536, dtype=np.uint32)
    r, g, b = v >> 11, (v >> 5) & 0x3F, v & 0x1F
    rgb = np.stack([(r << 3) | (r >> 2), (g << 2) | (g >> 4), (b << 3) | (b >> 2)], axis=1)
    return rgb.astype(np.uint8)


class XCapture:
    """Screenshots of one X display over a connection of their own."""

    def __init__(self, display: str, timeout_s: float) -> None:
        from Xlib import X

        self.display = display
        self.timeout_s = timeout_s
        self.conn: Any = connect(display)
        screen = self.conn.screen()
        self.root = screen.root
        self.depth = depth = int(screen.root_depth)
        fmt = next((f for f in self.conn.display.info.pixmap_formats if f.depth == depth), None)
        bpp = fmt.bits_per_pixel if fmt is not None else 0
        #: bits each row of an image is padded to
        self._pad = fmt.scanline_pad if fmt is not None else 32
        visual = next((v for d in screen.allowed_depths if d.depth == depth
                       for v in d.visuals if v.visual_id == screen.root_visual), None)  # fmt: skip
        masks = (visual.red_mask, visual.green_mask, visual.blue_mask) if visual else None
        lsb = self.conn.display.info.image_byte_order == X.LSBFirst
        #: the pixel format read here (BGRX, RGB565), None: Pillow's grab reads it
        self.format: str | None = None
        if lsb and bpp == 32 and depth in (24, 32) and masks == (0xFF0000, 0x00FF00, 0x0000FF):
            self.format = BGRX  # 32-bit pixels B, G, R, pad in memory
        elif lsb and bpp == 16 and depth == 16 and masks == (0xF800, 0x07E0, 0x001F):
            self.format = RGB565
        self._bpp = bpp
        self._rgb565: np.ndarray | None = None

    @property
    def direct(self) -> bool:
        """Whether the screen is read here (not by Pillow's grab)."""
        return self.format is not None

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

    def grab_part(self, box: Box, screen: Callable[[], tuple[int, int]]) -> np.ndarray:
        """The RGB pixels of ``box``, of which only the part on the screen is read (its
        size now: ``screen()``); the rest is black. The screen may shrink between reading
        its size and the capture: then once more, at its new size."""
        x, y, w, h = box
        out = np.zeros((h, w, 3), np.uint8)
        for last in (False, True):
            sw, sh = screen()
            x0, y0, x1, y1 = max(0, x), max(0, y), min(sw, x + w), min(sh, y + h)
            if x1 <= x0 or y1 <= y0:
                break
            try:
                out[y0 - y : y1 - y, x0 - x : x1 - x] = self.grab((x0, y0, x1, y1))
                break
            except OffScreen:
                if last:
                    raise
        return out

    def _read(self, box: Box) -> np.ndarray:
        if self.format is None:
            return self._pillow(box)
        from Xlib import X, error

        x0, y0, x1, y1 = box
        w, h = x1 - x0, y1 - y0
        out = np.empty((max(h, 0), max(w, 0), 3), np.uint8)
        if out.size == 0:
            return out
        stride = (w * self._bpp + self._pad - 1) // self._pad * self._pad // 8  # bytes a row
        rows = max(1, STRIP_BYTES // stride)
        self.conn.grab_server()
        try:
            for y in range(0, h, rows):
                n = min(rows, h - y)
                try:
                    reply = self.root.get_image(x0, y0 + y, w, n, X.ZPixmap, 0xFFFFFFFF)
                except error.BadMatch:
                    raise OffScreen(
                        f"the area {box} is not all on the screen of {self.display!r}"
                    ) from None
                self._convert(reply.data, stride, out[y : y + n])
        finally:
            self.conn.ungrab_server()
            self.conn.flush()
        return out

    def _convert(self, data: bytes, stride: int, out: np.ndarray) -> None:
        """One strip's pixels as RGB, written into ``out`` (rows × w × 3)."""
        n, w = out.shape[:2]
        if self.format == BGRX:
            bgrx = np.frombuffer(data, np.uint8).reshape(n, w, 4)  # 32-bit rows have no pad
            # OpenCV's conversion, not numpy's strided copy of bgrx[:, :, 2::-1]: the same
            # pixels, about 0.1 ms against 5-6 ms for 1280×720 (a settle wait captures many
            # times; benchmarks/experiments/frame_copies.py).
            cv2.cvtColor(bgrx, cv2.COLOR_BGRA2RGB, dst=out)
            return
        if self._rgb565 is None:
            self._rgb565 = _rgb565_table()
        pixels = np.frombuffer(data, "<u2").reshape(n, stride // 2)[:, :w]
        np.take(self._rgb565, pixels, axis=0, out=out)

    def _pillow(self, box: Box) -> np.ndarray:
        from PIL import ImageGrab

        try:
            img = ImageGrab.grab(bbox=box, xdisplay=self.display)
        except OSError as e:
            if "bit depth" not in str(e):
                raise
            raise EnvironmentError_(
                f"the X display {self.display!r} has a screen of depth {self.depth} "
                f"({self._bpp} bits a pixel), whose pixels kgagent cannot read: it reads "
                "depths 24 and 32 (TrueColor) and 16 (RGB565); start the X server at one "
                "of these (Xvfb … -screen 0 1280x800x24)"
            ) from None
        return np.asarray(img.convert("RGB"))

    def close(self) -> None:
        disconnect(self.conn)
