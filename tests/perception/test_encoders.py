import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kgagent.config import PerceptionConfig
from kgagent.errors import WeightsUnavailable
from kgagent.perception import PixelEncoder, StateEncoder, make_encoder
from kgagent.perception.weights import file_tag

from .synthetic import draw_ui


def test_importing_perception_does_not_import_torch():
    code = (
        "import sys, kgagent.perception as p; "
        "bad = [m for m in ('torch', 'open_clip', 'segment_anything') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


#: ``kgagent`` in a process where the models extra is not installed (its imports fail).
_WITHOUT_MODELS = """
import sys
for name in ("torch", "torchvision", "open_clip", "segment_anything"):
    sys.modules[name] = None  # `import name` fails as for a package not installed
from kgagent.cli.main import main
sys.argv = ["kgagent", *sys.argv[1:]]
main()
"""


def _without_models(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_MODELS, *args], capture_output=True, text=True, timeout=300
    )


def test_without_the_models_extra_the_default_plays_and_clip_or_sam_say_what_to_install(
    tmp_path,
):
    """torch, open_clip and segment_anything are the ``models`` extra (gigabytes that the
    default perception never imports); asking for CLIP or SAM without them is one line."""
    mem = tmp_path / "m"
    ok = _without_models("play", "--memory", str(mem), "--steps", "3", "--quiet")
    assert ok.returncode == 0, ok.stderr
    for setting, missing in (("perception.encoder=clip", "torch"),
                             ("perception.segmenter=sam", "torch")):  # fmt: skip
        res = _without_models("play", "--memory", str(tmp_path / "x"), "--steps", "1",
                              "--quiet", "--set", setting)  # fmt: skip
        assert res.returncode == 1, res.stderr
        lines = res.stderr.strip().splitlines()
        assert lines[-1] == (
            f"error: {setting} needs the {missing} package, which is not installed: "
            "pip install 'kgagent[models]'"
        ), res.stderr
        assert "Traceback" not in res.stderr


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
    assert isinstance(enc, StateEncoder)
    # The identity hashes the image tower's tensors; the alias is the file's hash that
    # earlier versions used, under which older memories were recorded.
    assert enc.identity.startswith("clip:ViT-B-32:visual-sha256-")
    assert enc.aliases == (f"clip:ViT-B-32:{file_tag(Path(clip_weights))}",)
    assert logs == [f"encoder: CLIP ViT-B-32 from {clip_weights} ({enc.identity})"]
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
    with pytest.raises(WeightsUnavailable, match="is truncated or not a checkpoint"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights=str(garbage)))
    # The right file for the wrong architecture.
    with pytest.raises(WeightsUnavailable, match="cannot load CLIP weights .* as RN50 .*missing"):
        make_encoder(PerceptionConfig(encoder="clip", clip_model="RN50", clip_weights=clip_weights))
    with pytest.raises(WeightsUnavailable, match="neither a file nor a pretrained tag"):
        make_encoder(PerceptionConfig(encoder="clip", clip_weights="no-such-tag"))


def _clip_error(**kw) -> str:
    with pytest.raises(WeightsUnavailable) as info:
        make_encoder(PerceptionConfig(encoder="clip", **kw))
    msg = str(info.value)
    assert "\n" not in msg and "…" not in msg
    return msg


@pytest.mark.slow
def test_a_file_for_another_model_says_what_differs_and_which_model_it_is(clip_weights):
    msg = _clip_error(clip_model="ViT-B-16", clip_weights=clip_weights)
    assert (
        f"cannot load CLIP weights '{clip_weights}' as ViT-B-16 (size mismatch: 2 tensors " in msg
    )
    assert "in the file vs [" in msg and "for ViT-B-16 — the file looks like ViT-B-32)" in msg
    assert "set perception.clip_model=ViT-B-32 to use this file" in msg


@pytest.mark.slow
def test_truncated_files_and_directories_are_said_as_such(tmp_path, clip_weights):
    cut = tmp_path / "cut.pt"
    with open(clip_weights, "rb") as f:
        cut.write_bytes(f.read(1 << 20))
    msg = _clip_error(clip_weights=str(cut))
    assert f"{cut} is truncated or not a checkpoint (PytorchStreamReader failed" in msg
    assert f"{tmp_path} is a directory" in _clip_error(clip_weights=str(tmp_path))


@pytest.fixture(scope="module")
def clip_exports(clip_weights, tmp_path_factory) -> dict[str, str]:
    """The same weights as .safetensors, and the image tower alone with and without ``visual.``."""
    import torch
    from safetensors.torch import save_file

    state = torch.load(clip_weights, weights_only=True)
    out = tmp_path_factory.mktemp("exports")
    paths = {k: str(out / k) for k in ("whole.safetensors", "visual.pt", "tower.pt")}
    save_file({k: v.contiguous() for k, v in state.items()}, paths["whole.safetensors"])
    visual = {k: v for k, v in state.items() if k.startswith("visual.")}
    torch.save(visual, paths["visual.pt"])
    torch.save({k[len("visual.") :]: v for k, v in visual.items()}, paths["tower.pt"])
    return paths


@pytest.mark.slow
def test_the_image_tower_alone_and_other_formats_are_the_same_encoder(clip_weights, clip_exports):
    imgs = [draw_ui(seed=s)[0] for s in range(2)]
    whole = make_encoder(PerceptionConfig(encoder="clip", clip_weights=clip_weights))
    f = whole.encode(imgs)
    for name, path in clip_exports.items():
        logs: list[str] = []
        enc = make_encoder(PerceptionConfig(encoder="clip", clip_weights=path), log=logs.append)
        assert enc.identity == whole.identity, name  # a hash of what was loaded, not of bytes
        assert np.allclose(enc.encode(imgs), f, atol=1e-6), name
        assert enc.weights == path
        tower = name != "whole.safetensors"
        assert ("(image tower only)" in logs[0]) is tower, logs
        # Only a whole-model file had an identity before (its bytes' hash).
        assert enc.aliases == (() if tower else (f"clip:ViT-B-32:{file_tag(Path(path))}",))


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    """An empty Hugging Face cache and a hub that refuses connections (a port nobody holds)."""
    from huggingface_hub import constants

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        endpoint + "/{repo_id}/resolve/{revision}/{filename}",
    )
    return constants


def test_a_tag_without_internet_fails_at_once_in_one_line(no_hub, capfd, monkeypatch):
    t = time.perf_counter()
    msg = _clip_error(clip_weights="openai")
    assert time.perf_counter() - t < 20  # huggingface_hub's own retries took ~55 s
    assert f"open_clip tag 'openai' is not in the Hugging Face cache ({no_hub.HF_HUB_CACHE})" in msg
    assert "cannot be reached (ConnectError" in msg
    assert "such as 'openai'" not in msg  # the kind of weights that just failed is not advised
    assert "set perception.clip_weights to a local ViT-B-32 state-dict file" in msg
    assert "Retrying" not in capfd.readouterr().err
    monkeypatch.setattr(no_hub, "HF_HUB_OFFLINE", True)
    assert "and HF_HUB_OFFLINE is set" in _clip_error(clip_weights="openai")


def test_a_cached_tag_is_not_refused_offline(no_hub):
    import open_clip

    from kgagent.perception.encoders import _tag_unreachable

    snap = Path(no_hub.HF_HUB_CACHE) / "models--timm--vit_base_patch32_clip_224.openai"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text("0" * 40)
    (snap / "snapshots" / ("0" * 40)).mkdir(parents=True)
    assert "cannot be reached" in _tag_unreachable(open_clip, "ViT-B-32", "openai")
    (snap / "snapshots" / ("0" * 40) / "open_clip_model.safetensors").write_bytes(b"x")
    assert _tag_unreachable(open_clip, "ViT-B-32", "openai") is None


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
