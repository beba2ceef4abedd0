import numpy as np
import pytest

from kgagent.perception import visual_change


def test_exact_fraction_and_strict_threshold():
    a = np.zeros((4, 5), np.uint8)
    b = a.copy()
    b[0, 0] = 31  # exceeds 30: a change
    b[0, 1] = 30  # equals 30: not a change ("exceeds")
    b[1, :] = 255  # 5 changes
    assert visual_change(a, b, 30) == pytest.approx(6 / 20)
    assert visual_change(a, b, threshold=0) == pytest.approx(7 / 20)
    assert visual_change(b, a, 30) == visual_change(a, b, 30)  # absolute difference


def test_identical_and_total():
    a = np.full((10, 10, 3), 100, np.uint8)
    assert visual_change(a, a, 30) == 0.0
    assert visual_change(a, np.zeros_like(a), 30) == 1.0


def test_rgb_uses_grayscale():
    a = np.zeros((2, 2, 3), np.uint8)
    b = a.copy()
    b[0, 0] = (0, 0, 200)  # pure blue: luma 0.114*200 ≈ 23 -> below 30, no change
    b[0, 1] = (0, 200, 0)  # pure green: luma ≈ 117 -> change
    assert visual_change(a, b, 30) == pytest.approx(1 / 4)


def test_screens_of_different_sizes_differ_everywhere():
    """A resized window: Δ = 1, not an error that would end the run."""
    assert visual_change(np.zeros((4, 4), np.uint8), np.zeros((4, 5), np.uint8), 30) == 1.0


def test_idle_change_is_the_largest_change_a_watch_sees_in_every_watch():
    from kgagent.perception.change import idle_change

    still = np.zeros((10, 10), np.uint8)
    blink = still.copy()
    blink[0, :3] = 255  # 3 % of the pixels
    spin = still.copy()
    spin[5:7, :] = 255  # 20 %
    # seen still once, then two watches of four screenshots, each with the spinner
    frames = iter([still, still, blink, still, spin, still, spin, still, spin, still])
    slept: list[float] = []
    got = idle_change(lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=slept.append)
    assert got == pytest.approx(0.20)
    # one screenshot to see it still, then one per interval over each watch; no real sleep
    assert slept == [0.1] * 9
    # the spinner in one watch, the caret in the other: the caret is what recurs
    frames = iter([still, still, blink, still, spin, still, still, blink, still, still])
    got = idle_change(lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=lambda s: None)
    assert got == pytest.approx(0.03)
    slept.clear()
    frames = iter([still] * 6)
    assert (
        idle_change(lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=slept.append) == 0.0
    )
    assert slept == [0.1] * 5  # a still screen ends the probe after one watch


def test_a_program_still_drawing_its_first_screen_is_not_noise():
    """Black, then the window's content, then still: the drawing is not counted."""
    from kgagent.perception.change import idle_change

    black, drawn = np.zeros((10, 10), np.uint8), np.full((10, 10), 200, np.uint8)
    frames = iter([black, drawn, drawn, drawn, drawn, drawn, drawn])
    got = idle_change(lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=lambda s: None)
    assert got == 0.0


def test_a_blank_window_that_held_still_before_drawing_is_not_noise():
    """A window blank for a moment (the program still loading), then drawn once: the draw
    is in one watch, not in both, so it raises no floor."""
    from kgagent.perception.change import idle_change

    black, drawn = np.zeros((10, 10), np.uint8), np.full((10, 10), 200, np.uint8)
    frames = iter([black, black, black, drawn, drawn, drawn] + [drawn] * 4)
    got = idle_change(lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=lambda s: None)
    assert got == 0.0
    # the same with one watch (the probe before): the draw was taken for noise
    frames = iter([black, black, black, drawn, drawn, drawn])
    one = idle_change(
        lambda: next(frames), duration_s=0.4, interval_s=0.1, sleep=lambda s: None, watches=1
    )
    assert one == 1.0


def test_changed_regions_boxes_each_place_largest_first():
    from kgagent.perception.change import changed_regions

    a = np.zeros((200, 300), np.uint8)
    b = a.copy()
    b[20:30, 20:40] = 255  # a small change at the top left
    b[100:160, 200:280] = 255  # a larger one at the bottom right
    b[190, 5] = 255  # a one-pixel speck: dropped
    assert changed_regions(a, b, 30, grow=0, min_pixels=16) == [
        (200, 100, 80, 60),
        (20, 20, 20, 10),
    ]
    assert changed_regions(a, a, 30, grow=8, min_pixels=16) == []
    with pytest.raises(ValueError, match="differ in size"):
        changed_regions(a, np.zeros((200, 301), np.uint8), 30, grow=8, min_pixels=16)


def test_changed_regions_joins_a_frame_and_its_content():
    from kgagent.perception.change import changed_regions

    a = np.zeros((200, 300), np.uint8)
    b = a.copy()
    b[50:52, 100:160] = 255  # a frame's top and bottom edges, 40 px apart
    b[90:92, 100:160] = 255
    assert len(changed_regions(a, b, 30, grow=0, min_pixels=16)) == 2
    ((x, y, w, h),) = changed_regions(a, b, 30, grow=20, min_pixels=16)  # grown: one place
    assert x <= 100 and y <= 50 and x + w >= 160 and y + h >= 92
