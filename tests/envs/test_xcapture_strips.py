"""Screenshots read in strips, one snapshot under a server grab, and the pixel formats
read without Pillow (kgagent.envs.xcapture), on private Xvfb displays of each depth."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from kgagent.envs import xcapture
from kgagent.envs.xcapture import OffScreen, XCapture
from kgagent.errors import EnvironmentError_

pytestmark = pytest.mark.desktop


@contextmanager
def _xvfb(size: tuple[int, int], depth: int) -> Iterator[str]:
    """A private ``Xvfb -screen 0 WxHxDEPTH`` on a display number it picks itself."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    r, w = os.pipe()
    screen = f"{size[0]}x{size[1]}x{depth}"
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(w), "-screen", "0", screen, "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(w,),
    )
    os.close(w)
    try:
        number = b""
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([r], [], [], 10)
            chunk = os.read(r, 64) if ready else b""
            if not chunk:
                raise RuntimeError(f"Xvfb {screen} did not start")
            number += chunk
        yield f":{number.decode().strip()}"
    finally:
        os.close(r)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _noise(display: str, seed: int) -> tuple[Any, np.ndarray]:
    """Random pixels on the whole screen (the root's background); returns the connection
    (the background lasts while it is open) and the pixel values drawn (h × w)."""
    from Xlib import X
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    screen = conn.screen()
    root, depth = screen.root, screen.root_depth
    w, h = screen.width_in_pixels, screen.height_in_pixels
    rng = np.random.default_rng(seed)
    if depth == 16:
        values = rng.integers(0, 2**16, (h, w), dtype=np.uint16)
        data = values.astype("<u2")
    else:
        values = rng.integers(0, 2**24, (h, w), dtype=np.uint32)
        data = values.astype("<u4")
    pixmap = root.create_pixmap(w, h, depth)
    gc = pixmap.create_gc()
    rows = 40  # a request under X's limit (256 KiB) without BIG-REQUESTS
    for y in range(0, h, rows):
        part = data[y : y + rows]
        pixmap.put_image(gc, 0, y, w, len(part), X.ZPixmap, depth, 0, part.tobytes())
    root.change_attributes(background_pixmap=pixmap)
    root.clear_area(0, 0, w, h)
    conn.sync()
    return conn, values


class _Requests:
    """The capture's server grab, ungrab and GetImage requests, in order."""

    def __init__(self, cap: XCapture, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self._spy(monkeypatch, cap.conn, "grab_server", "grab")
        self._spy(monkeypatch, cap.conn, "ungrab_server", "ungrab")
        self._spy(monkeypatch, cap.root, "get_image", "get_image")

    def _spy(self, monkeypatch: pytest.MonkeyPatch, obj: Any, method: str, name: str) -> None:
        call = getattr(obj, method)

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.sent.append(name)
            return call(*args, **kwargs)

        monkeypatch.setattr(obj, method, spy)


def _answers(display: str, conn: Any) -> bool:
    """Whether the X server answers another client (``conn``) within 5 s: it is not
    grabbed by the capture's connection."""
    done = threading.Event()

    def round_trip() -> None:
        conn.get_input_focus()
        done.set()

    threading.Thread(target=round_trip, daemon=True).start()
    return done.wait(5)


def test_a_capture_in_strips_is_one_grab_and_equals_pillow_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from PIL import ImageGrab
    from Xlib import display as xdisplay

    with _xvfb((1280, 800), 24) as display:
        conn, _values = _noise(display, 1)
        other = xdisplay.Display(display)
        cap = XCapture(display, 10.0)
        try:
            assert cap.direct
            requests = _Requests(cap, monkeypatch)
            box = (17, 9, 1017, 709)  # 1000 px wide: strips of 262 rows; 700 rows: 262+262+176
            pixels = cap.grab(box)
            assert requests.sent == ["grab", "get_image", "get_image", "get_image", "ungrab"]
            pil = np.asarray(ImageGrab.grab(bbox=box, xdisplay=display).convert("RGB"))
            assert pixels.shape == (700, 1000, 3) and np.array_equal(pixels, pil)
            assert _answers(display, other)  # the server is ungrabbed
        finally:
            cap.close()
            other.close()
            conn.close()


def test_a_strip_past_the_screen_is_off_screen_and_the_server_is_ungrabbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from Xlib import display as xdisplay

    with _xvfb((1280, 800), 24) as display:
        other = xdisplay.Display(display)
        cap = XCapture(display, 10.0)
        try:
            requests = _Requests(cap, monkeypatch)
            with pytest.raises(OffScreen, match="not all on the screen"):
                cap.grab((0, 300, 1280, 900))  # strips of 204 rows: the third is past the edge
            assert requests.sent == ["grab", "get_image", "get_image", "get_image", "ungrab"]
            assert _answers(display, other)
            assert cap.grab((0, 0, 10, 10)).shape == (10, 10, 3)
        finally:
            cap.close()
            other.close()


def test_a_16_bit_screen_is_read_as_the_server_s_colours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RGB565 pixels widened to 8 bits as the X server itself widens them (its colormap's
    QueryColors), in strips, on a box whose rows are padded (an odd width)."""
    with _xvfb((320, 240), 16) as display:
        conn, values = _noise(display, 2)
        cap = XCapture(display, 10.0)
        try:
            monkeypatch.setattr(xcapture, "STRIP_BYTES", 30_000)  # 49 rows of 604 bytes
            requests = _Requests(cap, monkeypatch)
            x0, y0, x1, y1 = 3, 5, 304, 230
            pixels = cap.grab((x0, y0, x1, y1))
            assert requests.sent.count("get_image") == 5
            assert pixels.shape == (225, 301, 3) and pixels.dtype == np.uint8
            seen = values[y0:y1, x0:x1]
            unique = np.unique(seen)
            colormap = conn.screen().default_colormap
            server = np.zeros((2**16, 3), np.uint8)
            for i in range(0, len(unique), 8192):
                part = [int(v) for v in unique[i : i + 8192]]
                for v, c in zip(part, colormap.query_colors(part), strict=True):
                    server[v] = (c.red >> 8, c.green >> 8, c.blue >> 8)
            assert np.array_equal(pixels, server[seen])
        finally:
            cap.close()
            conn.close()


def test_a_depth_that_nothing_reads_is_one_clear_line() -> None:
    with _xvfb((320, 240), 8) as display:
        cap = XCapture(display, 10.0)
        try:
            with pytest.raises(EnvironmentError_) as e:
                cap.grab((0, 0, 10, 10))
            msg = str(e.value)
            assert "\n" not in msg and "depth 8" in msg and display in msg
            assert "24 and 32" in msg and "16" in msg
        finally:
            cap.close()
