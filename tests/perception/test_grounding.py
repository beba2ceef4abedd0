import numpy as np
import pytest

from kgagent.errors import GroundingError
from kgagent.perception import ground, ground_or_raise

from .synthetic import draw_ui

SCALES = (1.0, 0.9, 1.1, 0.8, 1.25)


def test_finds_moved_crop_at_its_new_centre(ui):
    img, boxes = ui
    x, y, w, h = boxes[6]  # a card
    crop = img[y : y + h, x : x + w]
    moved, moved_boxes = draw_ui(shift=37)
    r = ground(crop, moved, threshold=0.8, scales=SCALES)
    mx, my, mw, mh = moved_boxes[6]
    assert r.found and r.score > 0.99
    assert r.point == (mx + w // 2, my + h // 2)
    assert r.bbox == (mx, my, w, h)


def test_absent_object_is_not_found_and_has_no_point(ui):
    img, _ = ui
    icon = np.zeros((40, 40, 3), np.uint8)
    icon[:] = (20, 200, 20)
    icon[10:30, 5:35] = (250, 0, 250)
    icon[15:25, 18:22] = (0, 0, 0)
    r = ground(icon, img, threshold=0.8, scales=SCALES)
    assert not r.found and r.point is None and r.score < 0.8
    with pytest.raises(GroundingError, match="not found"):
        ground_or_raise(icon, img, threshold=0.8, scales=SCALES)


def test_rescaled_screen_found_at_another_scale(ui):
    import cv2

    img, boxes = ui
    x, y, w, h = boxes[5]
    crop = img[y : y + h, x : x + w]
    big = cv2.resize(img, None, fx=1.25, fy=1.25, interpolation=cv2.INTER_LINEAR)
    r = ground(crop, big, threshold=0.8, scales=SCALES)
    assert r.found and r.scale == 1.25
    px, py = r.point
    assert abs(px - (x + w / 2) * 1.25) <= 3 and abs(py - (y + h / 2) * 1.25) <= 3


def test_degenerate_templates_are_not_found(ui):
    img, _ = ui
    flat = np.full((30, 30, 3), 32, np.uint8)  # same colour as the background: 0/0
    r = ground(flat, img, threshold=0.8, scales=SCALES)
    assert not r.found and np.isfinite(r.score)
    big = np.random.default_rng(0).integers(0, 255, (800, 1400, 3), dtype=np.uint8)
    assert not ground(big, img, threshold=0.8, scales=SCALES).found
    tiny = img[600:602, 100:102]
    assert not ground(tiny, img, threshold=0.8, scales=SCALES).found
    assert not ground(np.zeros((0, 5, 3), np.uint8), img, threshold=0.8).found


def test_textured_template_on_flat_screen_scores_finite():
    screen = np.full((100, 100, 3), 50, np.uint8)
    tmpl = np.random.default_rng(1).integers(0, 255, (20, 20, 3), dtype=np.uint8)
    r = ground(tmpl, screen, threshold=0.8, scales=SCALES)
    assert not r.found and np.isfinite(r.score) and -1.0 <= r.score <= 1.0


def test_coarse_to_fine_search_finds_exact_positions():
    """The pyramid search must land on the same pixel as an exhaustive search would."""
    rng = np.random.default_rng(3)
    for trial in range(5):
        screen, _ = draw_ui(seed=trial)
        patch = rng.integers(0, 255, (40 + 8 * trial, 60, 3), dtype=np.uint8)
        patch = np.repeat(np.repeat(patch[::4, ::4], 4, axis=0), 4, axis=1)[: patch.shape[0]]
        ph, pw = patch.shape[:2]
        x, y = int(rng.integers(0, 1280 - pw)), int(rng.integers(70, 590 - ph))
        screen[y : y + ph, x : x + pw] = patch
        r = ground(patch, screen, threshold=0.8, scales=SCALES)
        assert r.found and r.bbox == (x, y, pw, ph), (trial, r)


def test_identical_elements_ground_to_one_of_them():
    img, boxes = draw_ui()
    x, y, w, h = boxes[0]
    dup = img.copy()
    dup[300 : 300 + h, 900 : 900 + w] = img[y : y + h, x : x + w]  # a second identical button
    r = ground(img[y : y + h, x : x + w], dup, threshold=0.8, scales=SCALES)
    assert r.found and r.point in ((x + w // 2, y + h // 2), (900 + w // 2, 300 + h // 2))
