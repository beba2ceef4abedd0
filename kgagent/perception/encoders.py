"""State encoders: screenshots to unit-normalised feature vectors (a state node's feature x_i).

* :class:`ClipEncoder` -- open_clip (ViT-B/32 by default, the papers' encoder),
  weights from a local state-dict file or an open_clip pretrained tag.
* :class:`PixelEncoder` -- weight-free and a few milliseconds per screen, so a
  machine without weights (or internet) can still build an SA-KG. Its
  thresholds are calibrated separately (docs/perception.md): cosines of
  different encoders mean different things.

Features of different encoders are never mixed: each encoder has an
``identity`` that memory records, and :func:`make_encoder` never switches
encoder silently.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kgagent.config import PerceptionConfig
from kgagent.errors import ConfigError, WeightsUnavailable
from kgagent.perception.device import torch_device

__all__ = ["ClipEncoder", "PixelEncoder", "make_encoder"]

Log = Callable[[str], None]

_WEIGHT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt")


def _as_rgb(image: np.ndarray) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    elif img.ndim != 3 or img.shape[2] not in (1, 3, 4):
        raise ValueError(f"expected an (H, W) or (H, W, 3|4) image, got {img.shape}")
    elif img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if img.shape[0] == 0 or img.shape[1] == 0:
        raise ValueError("cannot encode an empty image")
    return np.ascontiguousarray(img[:, :, :3], dtype=np.uint8)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


# ---------------------------------------------------------------------------------------- pixels


class PixelEncoder:
    """A fixed, weight-free screen descriptor: where the UI detail is, and in which colours.

    Four blocks, each unit-normalised and then weighted so the total is unit
    length; the cosine of two features is therefore the weighted sum of the
    blocks' cosines (the squared weights ``_W2`` sum to 1):

    * structure, centred (0.4) -- a 16×9 grid of edge density minus its mean:
      which parts of the screen carry detail (a card row, a side panel, a
      dialog in the middle). The most discriminative block on the games
      (docs/perception.md);
    * structure, raw (0.3) -- the same grid without centring: how much detail
      overall, tolerant of scrolling a textured view;
    * palette (0.2) -- a 4×4×4 RGB histogram, square-rooted (the cosine is
      then the Bhattacharyya coefficient): the colour scheme of a screen,
      unchanged by scrolling or by different content in the same frame;
    * layout (0.1) -- a 32×18 grey thumbnail, mean-centred: where bright and
      dark regions are. Kept small because it is not shift-tolerant.

    The weights were chosen on the built-in games by maximising how well
    "same screen, other content" pairs separate from "other screen" pairs
    (benchmarks/experiments/calibrate_pixel.py), then rounded.

    A 1280×720 screen is first reduced once to 160×90 (area interpolation,
    which averages away text and numbers that change without changing the
    state's function), and every block is computed from that.
    """

    identity = "pixel:v1"
    #: (θ_merge, θ_simi) calibrated on the built-in games -- docs/perception.md.
    default_thresholds: tuple[float, float] = (0.985, 0.70)

    _BASE = (160, 90)
    _THUMB = (32, 18)
    _GRID = (16, 9)
    _BINS = 4
    # Squared block weights (sum to 1): structure centred, structure raw, palette, layout.
    _W2 = (0.4, 0.3, 0.2, 0.1)

    def __init__(self, cfg: PerceptionConfig | None = None) -> None:
        self.cfg = cfg or PerceptionConfig()
        tw, th = self._THUMB
        gw, gh = self._GRID
        self.dim = 2 * gw * gh + self._BINS**3 + tw * th
        self._w = np.sqrt(np.asarray(self._W2, dtype=np.float64))

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray:
        out = np.empty((len(images), self.dim), dtype=np.float32)
        for i, im in enumerate(images):
            out[i] = self._one(_as_rgb(im))
        return out

    def _one(self, rgb: np.ndarray) -> np.ndarray:
        base = cv2.resize(rgb, self._BASE, interpolation=cv2.INTER_AREA)
        gray = cv2.cvtColor(base, cv2.COLOR_RGB2GRAY).astype(np.float32)

        gx = cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(gray, cv2.CV_32F, 0, 1, ksize=3)
        # The gradient magnitude, correctly rounded. cv2.magnitude is not: its result differs
        # in the last bits from one process to another (a SIMD path chosen at run time), which
        # made runs under one seed diverge now and then.
        mag = np.sqrt(np.square(gx, dtype=np.float64) + np.square(gy, dtype=np.float64))
        grid = cv2.resize(mag.astype(np.float32), self._GRID, interpolation=cv2.INTER_AREA).ravel()
        grid_centred = _unit(grid - grid.mean())
        grid_raw = _unit(grid)

        q = (base >> 6).astype(np.int32)  # 4 levels per channel
        idx = (q[:, :, 0] * self._BINS + q[:, :, 1]) * self._BINS + q[:, :, 2]
        hist = np.bincount(idx.ravel(), minlength=self._BINS**3).astype(np.float64)
        hist = _unit(np.sqrt(hist))

        thumb = cv2.resize(gray, self._THUMB, interpolation=cv2.INTER_AREA).ravel()
        thumb = _unit(thumb - thumb.mean())

        w = self._w
        v = np.concatenate([w[0] * grid_centred, w[1] * grid_raw, w[2] * hist, w[3] * thumb])
        return _unit(v).astype(np.float32)


# ------------------------------------------------------------------------------------------ CLIP


class ClipEncoder:
    """open_clip image tower; features unit-normalised, float32, batched.

    ``cfg.clip_weights`` is either a local file (a state dict saved from the same
    architecture: ``.pt``/``.pth``/``.bin`` read with ``torch.load(weights_only=True)``,
    or ``.safetensors``) or an open_clip pretrained tag such as ``"openai"``
    (downloaded by open_clip, so it needs internet once). Anything that cannot
    be loaded raises :class:`WeightsUnavailable`; there are no random weights
    behind the user's back.

    Screens are squashed to the model's square input rather than centre-cropped:
    a GUI state is the whole screen, and a crop would drop side panels.
    """

    default_thresholds: tuple[float, float] = (0.95, 0.88)  # the papers' values

    def __init__(
        self,
        cfg: PerceptionConfig | None = None,
        *,
        model: Any | None = None,
        tag: str = "in-memory",
    ) -> None:
        """Load ``cfg.clip_weights``; or wrap an already built open_clip ``model``.

        The ``model`` form is for tests and benchmarks (random weights); its
        identity carries ``tag`` so such features never pass for real ones.
        """
        self.cfg = cfg = cfg or PerceptionConfig()
        import open_clip
        import torch  # lazy: the offline path must not pay for torch

        self._torch = torch
        self.device = torch_device(cfg.device)
        name = cfg.clip_model
        if model is None:
            model, tag = self._load(open_clip, name, cfg.clip_weights)
        model.to(self.device)
        model.eval()
        self.model = model
        visual = model.visual
        size = getattr(visual, "image_size", 224)
        self.image_size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
        pcfg = getattr(visual, "preprocess_cfg", {}) or {}
        mean = pcfg.get("mean", open_clip.OPENAI_DATASET_MEAN)
        std = pcfg.get("std", open_clip.OPENAI_DATASET_STD)
        self._mean = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1) * 255.0
        self._std = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1) * 255.0
        with torch.inference_mode():
            probe = torch.zeros(1, 3, *self.image_size, device=self.device)
            self.dim = int(model.encode_image(probe).shape[-1])
        self.identity = f"clip:{name}:{tag}"

    def _load(self, open_clip: Any, name: str, weights: str | None) -> tuple[Any, str]:
        """Build ``name`` with ``weights`` (a file or a pretrained tag), or raise WeightsUnavailable."""
        if name not in open_clip.list_models():
            raise ConfigError(f"perception.clip_model={name!r} is not an open_clip model")
        if not weights:
            raise WeightsUnavailable(_clip_hint(name, "no CLIP weights configured"))
        looks_like_file = (
            os.sep in weights or weights.endswith(_WEIGHT_SUFFIXES) or Path(weights).exists()
        )
        if looks_like_file:
            path = Path(weights).expanduser()
            if not path.is_file():
                raise WeightsUnavailable(_clip_hint(name, f"CLIP weights file {path} not found"))
            tag = _file_tag(path)
            pretrained = str(path)
        else:
            tags = open_clip.list_pretrained_tags_by_model(name)
            if weights not in tags:
                raise WeightsUnavailable(
                    _clip_hint(
                        name,
                        f"{weights!r} is neither a file nor a pretrained tag of "
                        f"{name} (tags: {', '.join(tags) or 'none'})",
                    )
                )
            tag = weights
            pretrained = weights
        try:
            model, _, _ = open_clip.create_model_and_transforms(
                name, pretrained=pretrained, device=self.device, weights_only=True
            )
        except Exception as e:  # noqa: BLE001 - any failure means "these weights are unusable"
            first = str(e).splitlines()[0][:160] if str(e) else ""
            raise WeightsUnavailable(
                _clip_hint(
                    name, f"cannot load CLIP weights {weights!r} ({type(e).__name__}: {first})"
                )
            ) from None
        return model, tag

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray:
        torch = self._torch
        h, w = self.image_size
        bs = max(1, int(self.cfg.clip_batch_size))
        out = np.empty((len(images), self.dim), dtype=np.float32)
        for start in range(0, len(images), bs):
            chunk = images[start : start + bs]
            arr = np.stack(
                [cv2.resize(_as_rgb(im), (w, h), interpolation=cv2.INTER_AREA) for im in chunk]
            )
            x = torch.from_numpy(arr).permute(0, 3, 1, 2).float()
            x = ((x - self._mean) / self._std).to(self.device)
            with torch.inference_mode():
                f = self.model.encode_image(x).float()
                f = torch.nn.functional.normalize(f, dim=-1)
            out[start : start + len(chunk)] = f.cpu().numpy()
        return out


def _clip_hint(model: str, why: str) -> str:
    return (
        f"{why}: set perception.clip_weights to a local {model} state-dict file "
        "(.pt/.bin/.safetensors) or to an open_clip tag such as 'openai' (needs internet once), "
        "or use perception.encoder=pixel"
    )


def _file_tag(path: Path) -> str:
    """Short content hash of a weights file, so identities change when weights do."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256-" + h.hexdigest()[:12]


# --------------------------------------------------------------------------------------- factory


def make_encoder(cfg: PerceptionConfig, *, log: Log = print) -> Any:
    """The encoder ``cfg.encoder`` names.

    ``"clip"`` raises :class:`WeightsUnavailable` when weights cannot be loaded.
    ``"auto"`` uses CLIP when ``cfg.clip_weights`` is set (weights that cannot be
    loaded are the same error: a memory made with the pixel encoder instead would
    refuse CLIP's features once the path is mended); without weights it says once,
    through ``log``, that it uses the pixel encoder and why. The
    returned encoder's ``identity`` is what memory records, so a memory built
    with one encoder refuses features from the other.
    """
    kind = cfg.encoder
    if kind == "pixel":
        return PixelEncoder(cfg)
    if kind == "clip":
        return ClipEncoder(cfg)
    if kind != "auto":
        raise ConfigError(f"perception.encoder={kind!r}; use auto, clip or pixel")
    if cfg.clip_weights:
        return ClipEncoder(cfg)
    log(
        "encoder: no CLIP weights configured (perception.clip_weights); using the pixel "
        "encoder (pixel:v1). Set perception.clip_weights=PATH or a tag to use CLIP ViT-B/32."
    )
    return PixelEncoder(cfg)
