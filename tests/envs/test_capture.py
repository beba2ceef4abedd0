"""Screenshots of a display that stops answering: a clear error, and Ctrl-C still works."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import pytest

from kgagent.envs.launch import PrivateX
from kgagent.envs.xcapture import OffScreen, XCapture
from kgagent.errors import EnvironmentError_

pytestmark = pytest.mark.desktop


@pytest.fixture
def private_x() -> Iterator[PrivateX]:
    x = PrivateX((320, 240))
    try:
        yield x
    finally:
        x.proc.send_signal(signal.SIGCONT)
        x.stop()


def test_the_capture_reads_what_the_screen_shows(private_x: PrivateX) -> None:
    from PIL import ImageGrab
    from Xlib import display as xdisplay

    conn = xdisplay.Display(private_x.display)
    root = conn.screen().root
    for x, pixel in ((0, 0xFF0000), (40, 0x00FF00), (80, 0x0000FF)):  # red, green, blue
        root.create_window(x, 0, 40, 240, 0, conn.screen().root_depth, background_pixel=pixel).map()
    conn.sync()
    cap = XCapture(private_x.display, 5.0)
    try:
        assert cap.direct  # Xvfb's 24-bit TrueColor screen is read without Pillow
        pixels = cap.grab((10, 20, 110, 70))
        assert pixels.shape == (50, 100, 3) and pixels.dtype == np.uint8
        assert pixels[0, 0].tolist() == [255, 0, 0] and pixels[0, 40].tolist() == [0, 255, 0]
        assert pixels[0, 80].tolist() == [0, 0, 255]
        pil = ImageGrab.grab(bbox=(10, 20, 110, 70), xdisplay=private_x.display)
        assert np.array_equal(pixels, np.asarray(pil.convert("RGB")))
    finally:
        cap.close()
        conn.close()


def test_an_area_past_the_screen_is_one_clear_error(private_x: PrivateX) -> None:
    """X refuses an image past the screen's edge (BadMatch): the screen shrank since the
    area was computed. The error names it, and the connection still works."""
    cap = XCapture(private_x.display, 5.0)
    try:
        with pytest.raises(OffScreen, match=r"not all on the screen") as e:
            cap.grab((300, 0, 340, 10))
        assert "\n" not in str(e.value)
        assert cap.grab((0, 0, 10, 10)).shape == (10, 10, 3)
    finally:
        cap.close()


def test_a_display_that_stops_answering_is_one_clear_error(private_x: PrivateX) -> None:
    cap = XCapture(private_x.display, 0.5)
    try:
        cap.grab((0, 0, 10, 10))
        private_x.proc.send_signal(signal.SIGSTOP)  # the X server hangs
        t0 = time.monotonic()
        with pytest.raises(EnvironmentError_, match="did not answer a screenshot within 0.5 s"):
            cap.grab((0, 0, 10, 10))
        assert time.monotonic() - t0 < 5
    finally:
        cap.close()


def test_ctrl_c_stops_a_capture_that_waits_on_a_hung_display(private_x: PrivateX) -> None:
    code = textwrap.dedent(
        f"""
        import signal, sys
        from kgagent.envs.xcapture import OffScreen, XCapture
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
        cap = XCapture({private_x.display!r}, 60.0)
        cap.grab((0, 0, 10, 10))
        print("ready", flush=True)
        sys.stdin.readline()  # the test stops the X server now
        try:
            cap.grab((0, 0, 10, 10))
        except KeyboardInterrupt:
            sys.exit(42)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        private_x.proc.send_signal(signal.SIGSTOP)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(0.5)  # inside the capture's wait
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 42
    finally:
        proc.kill()
        proc.wait()
