"""``perception.device``: CLIP and SAM on a CUDA device, through the paths users take.

The GPU tests run only where torch sees a CUDA device (CI has none; they ran on an
H100, see docs/benchmarks.md, "Latency on a GPU"). The error for asking for CUDA where
there is none runs everywhere else.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.config import PerceptionConfig
from kgagent.errors import ConfigError
from kgagent.perception import make_encoder, make_segmenter

from .synthetic import draw_ui


def _has_cuda() -> bool:
    torch = pytest.importorskip("torch")
    return bool(torch.cuda.is_available())


@pytest.fixture
def cuda() -> str:
    if not _has_cuda():
        pytest.skip("needs a CUDA device")
    return "cuda"


def test_asking_for_cuda_without_one_is_a_clear_error(tmp_path):
    if _has_cuda():
        pytest.skip("this machine has a CUDA device")
    import open_clip
    import torch

    path = tmp_path / "clip.pt"
    torch.save(open_clip.create_model("ViT-B-32", pretrained=None).state_dict(), path)
    with pytest.raises(ConfigError, match="no CUDA device is available"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(path), device="cuda"))


@pytest.mark.slow
def test_clip_on_cuda_gives_the_cpu_features(tmp_path, cuda):
    import open_clip
    import torch

    torch.manual_seed(0)
    path = tmp_path / "clip.pt"
    torch.save(open_clip.create_model("ViT-B-32", pretrained=None).state_dict(), path)
    imgs = [draw_ui(seed=s)[0] for s in range(4)]
    on_cpu = make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(path)))
    on_gpu = make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(path), device=cuda))
    assert next(on_gpu.model.parameters()).device.type == "cuda"
    assert on_gpu.identity == on_cpu.identity  # the device does not change what a feature means
    f_gpu, f_cpu = on_gpu.encode(imgs), on_cpu.encode(imgs)
    assert f_gpu.dtype == np.float32 and f_gpu.shape == f_cpu.shape == (4, 512)
    # Same direction up to float noise (TF32/cuDNN kernels differ from the CPU's).
    assert np.min(np.sum(f_gpu * f_cpu, axis=1)) > 0.999
    # Merging needs the features of different screens to stay apart in the same way.
    assert np.allclose(f_gpu @ f_gpu.T, f_cpu @ f_cpu.T, atol=2e-3)


@pytest.mark.slow
def test_sam_on_cuda_from_a_checkpoint_file(tmp_path, cuda):
    import torch
    from segment_anything import sam_model_registry

    torch.manual_seed(0)
    ckpt = tmp_path / "sam_vit_b_random.pth"
    torch.save(sam_model_registry["vit_b"](checkpoint=None).state_dict(), ckpt)
    cfg = PerceptionConfig(
        segmenter="sam", sam_model="vit_b", sam_checkpoint=str(ckpt), device=cuda
    )
    seg = make_segmenter(cfg)
    assert next(seg.model.parameters()).device.type == "cuda"
    seg.generator.pred_iou_thresh = 0.0  # random weights: keep whatever SAM proposes
    seg.generator.stability_score_thresh = 0.0
    img, _ = draw_ui(size=(320, 180))
    segs = seg.segment(img)
    assert seg.last_mask_count >= 1
    for s in segs:
        x, y, w, h = s.bbox
        assert 0 <= x and 0 <= y and x + w <= 320 and y + h <= 180
        assert s.crop.shape == (h, w, 3)


@pytest.mark.parametrize(
    "name, cuda_count, message",
    [
        ("cuda:3", 1, r"has 1 CUDA device\(s\), cuda:0 to cuda:0; use one of them or 'cpu'"),
        ("cuda", 0, "no CUDA device is available"),
        ("mps", 0, "MPS .* is not available"),
    ],
)
def test_a_device_this_machine_lacks_is_one_line(monkeypatch, name, cuda_count, message):
    """Known to torch, absent here: refused before any model is moved there (torch would
    fail later, with a traceback)."""
    torch = pytest.importorskip("torch")
    from kgagent.perception.device import torch_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: cuda_count)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=message) as e:
        torch_device(name)
    assert "\n" not in str(e.value)
    assert torch_device("cpu").type == "cpu"
