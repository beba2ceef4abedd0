import cv2
import numpy as np
import pytest

from kgagent.config import PerceptionConfig
from kgagent.errors import WeightsUnavailable
from kgagent.perception import OpenCVSegmenter, Segmenter, hamming, make_segmenter, phash

from .synthetic import draw_ui, iou


def test_phash_is_stable_under_resize_and_distinct_for_different_content(ui):
    img, boxes = ui
    x, y, w, h = boxes[5]
    card = img[y : y + h, x : x + w]
    h1 = phash(card)
    assert 0 <= h1 < 2**64
    assert hamming(h1, phash(cv2.resize(card, None, fx=1.3, fy=1.3))) <= 6
    other = img[600:651, 100:251]  # a button
    assert hamming(h1, phash(other)) > 12
    assert hamming(h1, h1) == 0
    assert hamming(0, 2**64 - 1) == 64


def test_opencv_finds_every_button_and_card(ui):
    img, boxes = ui
    seg = OpenCVSegmenter(PerceptionConfig())
    assert isinstance(seg, Segmenter)
    segs = seg.segment(img)
    for b in boxes:
        assert max(iou(b, s.bbox) for s in segs) > 0.8, b
    for s in segs:
        x, y, w, h = s.bbox
        assert s.crop.shape == (h, w, 3) and s.crop.dtype == np.uint8
        assert s.phash == phash(s.crop)


def test_opencv_filters_and_bounds():
    img, boxes = draw_ui()
    cfg = PerceptionConfig(sam_max_area_ratio=0.01)  # cards (120x160) are 2.1% of 1280x720
    segs = OpenCVSegmenter(cfg).segment(img)
    assert all(s.bbox[2] * s.bbox[3] <= 0.01 * 1280 * 720 for s in segs)
    assert not any(iou(boxes[5], s.bbox) > 0.8 for s in segs)
    assert len(OpenCVSegmenter(PerceptionConfig(max_objects=3)).segment(img)) == 3
    flat = np.full((200, 300, 3), 90, np.uint8)
    assert OpenCVSegmenter().segment(flat) == []


def test_dedup_keeps_one_per_centre_and_keeps_identical_elements_apart():
    img = np.full((720, 1280, 3), 30, np.uint8)
    for x in (50, 300):  # two identical buttons, far apart: two click targets
        cv2.rectangle(img, (x, 100), (x + 120, 150), (200, 120, 60), -1)
        cv2.putText(img, "Go", (x + 40, 135), cv2.FONT_HERSHEY_DUPLEX, 0.8, (255, 255, 255), 1)
    segs = OpenCVSegmenter().segment(img)
    centres = [s.center for s in segs]
    assert any(abs(cx - 110) < 5 and abs(cy - 125) < 5 for cx, cy in centres)
    assert any(abs(cx - 360) < 5 and abs(cy - 125) < 5 for cx, cy in centres)
    for i, a in enumerate(centres):
        for b in centres[i + 1 :]:
            assert (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 >= 10**2


def test_the_texture_filter_holds_on_a_screen_of_more_than_8_megapixels():
    from kgagent.perception.segmenters import _finalize_boxes

    # Sums over a bright screen this large pass 2**31 towards its bottom-right corner:
    # the textured candidate's box reaches from where they do not to where they do.
    img = np.full((2600, 3600, 3), 255, np.uint8)
    rng = np.random.default_rng(0)
    img[2000:2500, 2000:3500] = rng.integers(128, 256, (500, 1500, 3), dtype=np.uint8)
    img[200:300, 200:400] = 90
    boxes = np.array([(2000, 2000, 1500, 500), (200, 200, 200, 100)])
    cfg = PerceptionConfig(sam_max_area_ratio=0.2)  # the textured box is 8 % of the screen
    segs = _finalize_boxes(img, boxes, np.array([0.9, 1.0]), cfg)
    assert [s.bbox for s in segs] == [(2000, 2000, 1500, 500)]


def test_opencv_is_fast(ui):
    import time

    img, _ = ui
    seg = OpenCVSegmenter()
    seg.segment(img)
    t = time.perf_counter()
    for _ in range(5):
        seg.segment(img)
    assert (time.perf_counter() - t) / 5 < 0.1  # ~7 ms measured; generous for CI noise


def test_make_segmenter_auto_falls_back_once_and_sam_needs_a_checkpoint(tmp_path):
    logs: list[str] = []
    seg = make_segmenter(PerceptionConfig(segmenter="auto"), log=logs.append)
    assert isinstance(seg, OpenCVSegmenter)
    assert len(logs) == 1 and "OpenCV" in logs[0] and "sam_checkpoint" in logs[0]
    logs.clear()
    assert isinstance(
        make_segmenter(PerceptionConfig(segmenter="opencv"), log=logs.append), OpenCVSegmenter
    )
    assert logs == []
    with pytest.raises(WeightsUnavailable, match="sam_checkpoint"):
        make_segmenter(PerceptionConfig(segmenter="sam"))
    with pytest.raises(WeightsUnavailable, match="no.pth not found"):
        make_segmenter(PerceptionConfig(segmenter="sam", sam_checkpoint=str(tmp_path / "no.pth")))
    garbage = tmp_path / "sam.pth"
    garbage.write_bytes(b"not a checkpoint" * 100)
    with pytest.raises(WeightsUnavailable, match="is truncated or not a checkpoint"):
        make_segmenter(PerceptionConfig(segmenter="sam", sam_checkpoint=str(garbage)))
    logs.clear()  # a checkpoint configured for auto that does not load: no quiet OpenCV
    with pytest.raises(WeightsUnavailable, match="is truncated or not a checkpoint"):
        make_segmenter(PerceptionConfig(segmenter="auto", sam_checkpoint=str(garbage)))
    with pytest.raises(WeightsUnavailable, match=f"SAM checkpoint {tmp_path} is a directory"):
        make_segmenter(PerceptionConfig(segmenter="sam", sam_checkpoint=str(tmp_path)))


@pytest.fixture(scope="module")
def sam_vit_b(tmp_path_factory) -> str:
    """A SAM vit_b checkpoint with random weights, saved the way the released ones are."""
    import torch
    from segment_anything import sam_model_registry

    torch.manual_seed(0)
    ckpt = tmp_path_factory.mktemp("sam") / "sam_vit_b_random.pth"
    torch.save(sam_model_registry["vit_b"](checkpoint=None).state_dict(), ckpt)
    return str(ckpt)


@pytest.mark.slow
def test_a_checkpoint_of_another_sam_says_which_it_looks_like(sam_vit_b):
    with pytest.raises(WeightsUnavailable) as info:
        make_segmenter(
            PerceptionConfig(segmenter="sam", sam_model="vit_l", sam_checkpoint=sam_vit_b)
        )
    msg = str(info.value)
    assert "\n" not in msg
    assert f"SAM checkpoint {sam_vit_b} cannot be loaded as vit_l (size mismatch: " in msg
    assert "image_encoder.pos_embed [1,64,64,768] in the file vs [1,64,64,1024] for vit_l" in msg
    assert "; missing 168 keys, e.g. image_encoder.blocks.12." in msg
    assert "— the file looks like vit_b): set perception.sam_model=vit_b" in msg


@pytest.mark.slow
def test_a_loaded_sam_says_so_and_warns_of_a_large_grid_on_the_cpu(sam_vit_b):
    logs: list[str] = []
    cfg = PerceptionConfig(segmenter="auto", sam_checkpoint=sam_vit_b)
    seg = make_segmenter(cfg, log=logs.append)
    assert seg.identity.startswith("sam:vit_b:sha256-")
    assert logs[0] == f"segmenter: SAM vit_b from {sam_vit_b} on cpu ({seg.identity})"
    assert len(logs) == 2 and "SAM on the CPU is slow with a 32×32 point grid" in logs[1]
    assert "perception.sam_points_per_side=4" in logs[1]
    logs.clear()
    cfg.sam_points_per_side = 4
    make_segmenter(cfg, log=logs.append)
    assert len(logs) == 1  # a small grid: the start line only


@pytest.mark.slow
def test_sam_random_weights_end_to_end_through_a_checkpoint_file(sam_vit_b):
    """The path users take (a checkpoint file), with random weights: plumbing, not quality.

    SAM's image encoder always runs at 1024 px (36 s per screen on a 2-core CPU,
    docs/benchmarks.md), so this is the only SAM forward pass in the suite; a 4×4
    point grid keeps decoding short.
    """
    from kgagent.perception import SamSegmenter

    cfg = PerceptionConfig(segmenter="sam", sam_model="vit_b", sam_checkpoint=sam_vit_b)
    seg = SamSegmenter(cfg, points_per_side=4, pred_iou_thresh=0.0, stability_score_thresh=0.0)
    assert isinstance(seg, Segmenter)
    assert seg.identity.startswith("sam:vit_b:sha256-") and seg.points_per_side == 4
    img, _ = draw_ui(size=(320, 180))
    segs = seg.segment(img)
    assert seg.last_mask_count >= 1  # SAM proposed masks ...
    for s in segs:  # ... and whatever survived passed the filters
        x, y, w, h = s.bbox
        assert w >= cfg.sam_min_side and h >= cfg.sam_min_side
        assert s.crop.shape == (h, w, 3) and s.phash == phash(s.crop)
    assert len(segs) <= cfg.max_objects
