import subprocess
import sys

import numpy as np
import pytest

from kgagent.config import PerceptionConfig
from kgagent.errors import WeightsUnavailable
from kgagent.perception import PixelEncoder, StateEncoder, make_encoder

from .synthetic import draw_ui


def test_importing_perception_does_not_import_torch():
    code = (
        "import sys, kgagent.perception as p; "
        "bad = [m for m in ('torch', 'open_clip', 'segment_anything') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------ pixel encoder


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_pixel_encoder_shape_norm_identity():
    enc = PixelEncoder()
    assert isinstance(enc, StateEncoder)
    assert enc.identity == "pixel:v1"
    theta_merge, theta_simi = enc.default_thresholds
    assert -1 < theta_simi < theta_merge < 1
    imgs = [draw_ui(seed=s)[0] for s in range(3)] + [np.zeros((90, 160), np.uint8)]
    f = enc.encode(imgs)
    assert f.shape == (4, enc.dim) and f.dtype == np.float32
    assert np.allclose(np.linalg.norm(f[:3], axis=1), 1.0, atol=1e-5)
    assert enc.encode([]).shape == (0, enc.dim)


def test_pixel_encoder_identical_merge_different_apart():
    enc = PixelEncoder()
    theta_merge, theta_simi = enc.default_thresholds
    a, _ = draw_ui(seed=0)
    same = enc.encode([a, a.copy()])
    assert _cos(same[0], same[1]) == pytest.approx(1.0, abs=1e-6)
    # A different screen: another layout and palette.
    other = np.full_like(a, (180, 200, 230))
    other[100:600, 200:1100] = (30, 60, 30)
    f = enc.encode([a, other])
    assert _cos(f[0], f[1]) < theta_simi
    # A small change (a number in the status bar) stays mergeable.
    b, _ = draw_ui(seed=0, hp=37)
    g = enc.encode([a, b])
    assert _cos(g[0], g[1]) > theta_merge


def test_pixel_encoder_is_fast():
    import time

    enc = PixelEncoder()
    img, _ = draw_ui()
    enc.encode([img])
    t = time.perf_counter()
    for _ in range(20):
        enc.encode([img])
    assert (time.perf_counter() - t) / 20 < 0.02  # ~1.3 ms measured; generous for CI noise


# ------------------------------------------------------------------------------- CLIP encoder


@pytest.fixture(scope="module")
def clip_weights(tmp_path_factory) -> str:
    """A real open_clip ViT-B-32 with random weights, saved the way a user's file would be."""
    import open_clip
    import torch

    torch.manual_seed(0)
    model = open_clip.create_model("ViT-B-32", pretrained=None)
    path = tmp_path_factory.mktemp("clip") / "vit_b_32_random.pt"
    torch.save(model.state_dict(), path)
    return str(path)


@pytest.mark.slow
def test_clip_from_file_shapes_norm_determinism(clip_weights):
    logs: list[str] = []
    enc = make_encoder(PerceptionConfig(encoder="auto", clip_weights=clip_weights), log=logs.append)
    assert logs == []  # CLIP loaded: nothing to say
    assert isinstance(enc, StateEncoder)
    assert enc.identity.startswith("clip:ViT-B-32:sha256-")
    assert enc.dim == 512 and enc.default_thresholds == (0.95, 0.88)
    imgs = [draw_ui(seed=s)[0] for s in range(3)]
    f = enc.encode(imgs)
    assert f.shape == (3, 512) and f.dtype == np.float32
    assert np.allclose(np.linalg.norm(f, axis=1), 1.0, atol=1e-5)
    assert np.allclose(enc.encode(imgs), f, atol=1e-5)  # deterministic
    # Batching does not change features.
    enc.cfg.clip_batch_size = 2
    assert np.allclose(enc.encode(imgs), f, atol=1e-4)


@pytest.mark.slow
def test_clip_weights_missing_garbage_or_wrong(tmp_path, clip_weights):
    with pytest.raises(WeightsUnavailable, match="no CLIP weights"):
        make_encoder(PerceptionConfig(encoder="clip"))
    with pytest.raises(WeightsUnavailable, match="not found"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(tmp_path / "none.pt")))
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(WeightsUnavailable, match="cannot load CLIP weights"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(garbage)))
    # The right file for the wrong architecture.
    with pytest.raises(WeightsUnavailable, match="cannot load CLIP weights"):
        make_encoder(PerceptionConfig(encoder="clip", clip_model="RN50", clip_weights=clip_weights))
    with pytest.raises(WeightsUnavailable, match="neither a file nor a pretrained tag"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights="no-such-tag"))


def test_auto_falls_back_to_pixel_and_says_so_once(tmp_path):
    logs: list[str] = []
    enc = make_encoder(PerceptionConfig(encoder="auto"), log=logs.append)
    assert isinstance(enc, PixelEncoder)
    assert len(logs) == 1 and "pixel" in logs[0] and "clip_weights" in logs[0]
    logs.clear()  # weights configured that do not load: an error, not a pixel memory
    with pytest.raises(WeightsUnavailable, match="not found.*perception.encoder=pixel"):
        make_encoder(
            PerceptionConfig(encoder="auto", clip_weights=str(tmp_path / "missing.pt")),
            log=logs.append,
        )
    assert logs == []
    assert isinstance(
        make_encoder(PerceptionConfig(encoder="pixel"), log=logs.append), PixelEncoder
    )
    assert logs == []
