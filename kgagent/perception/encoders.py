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

import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kgagent.config import PerceptionConfig
from kgagent.errors import ConfigError, WeightsUnavailable
from kgagent.perception.device import model_libraries, torch_device
from kgagent.perception.weights import (
    file_tag,
    mismatch,
    one_line,
    path_problem,
    quiet_open_clip,
    shapes,
    tensor_tag,
    unreadable,
)

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
    or ``.safetensors``; the whole model, or its image tower alone, with or without the
    ``visual.`` prefix) or an open_clip pretrained tag such as ``"openai"``
    (downloaded by open_clip, so it needs internet once). Anything that cannot
    be loaded raises :class:`WeightsUnavailable` in one line saying what is wrong;
    there are no random weights behind the user's back.

    The identity of weights from a file is a hash of the image tower's tensors as
    loaded (``clip:<model>:visual-sha256-…``), so a ``.pt`` and a ``.safetensors`` of
    the same weights, or the tower exported alone, are one encoder. ``aliases`` holds
    the identity earlier versions gave a whole-model file (a hash of its bytes), so
    memories built with it still open.

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
        # lazy: the offline path must not pay for torch (nor need it installed)
        torch, open_clip = model_libraries("perception.encoder=clip", "torch", "open_clip")

        self._torch = torch
        self.device = torch_device(cfg.device)
        self.model_name = name = cfg.clip_model
        #: What the manifest records to say how to rebuild this encoder: a path or a tag.
        self.weights: str | None = None
        #: Where the weights came from, for the start line.
        self.source = "an in-memory model"
        self.aliases: tuple[str, ...] = ()
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
            return self._load_file(open_clip, name, Path(weights).expanduser())
        return self._load_tag(open_clip, name, weights)

    def _load_file(self, open_clip: Any, name: str, path: Path) -> tuple[Any, str]:
        """The model with the file's weights, whole or its image tower, and its identity tag."""
        problem = path_problem(path, "CLIP weights file")
        if problem:
            raise WeightsUnavailable(_clip_hint(name, problem))
        with quiet_open_clip():
            model = open_clip.create_model(name, pretrained=None, device="cpu")
        part = _load_clip_file(open_clip, model, name, path)
        self.weights = str(path.absolute())
        self.source = str(path) + (" (image tower only)" if part == "visual" else "")
        if part == "whole":  # the identity earlier versions gave it: its bytes' hash
            self.aliases = (f"clip:{name}:{file_tag(path)}",)
        return model, "visual-" + tensor_tag(model.visual)

    def _load_tag(self, open_clip: Any, name: str, tag: str) -> tuple[Any, str]:
        """The model with open_clip's pretrained ``tag``: from the local cache, else downloaded."""
        tags = open_clip.list_pretrained_tags_by_model(name)
        if tag not in tags:
            raise WeightsUnavailable(
                _clip_hint(
                    name,
                    f"{tag!r} is neither a file nor a pretrained tag of "
                    f"{name} (tags: {', '.join(tags) or 'none'})",
                )
            )
        problem = _tag_unreachable(open_clip, name, tag)
        if problem:
            raise WeightsUnavailable(_clip_hint(name, problem, tag_failed=True))
        try:
            with quiet_open_clip():
                model, _, _ = open_clip.create_model_and_transforms(
                    name, pretrained=tag, device="cpu", weights_only=True
                )
        except Exception as e:  # noqa: BLE001 - any failure means "these weights are unusable"
            why = f"cannot load open_clip tag {tag!r} ({type(e).__name__}: {one_line(e, 160)})"
            raise WeightsUnavailable(_clip_hint(name, why, tag_failed=True)) from None
        self.weights = tag
        self.source = f"open_clip tag {tag!r}"
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


def _clip_hint(model: str, why: str, *, tag_failed: bool = False, fits: str | None = None) -> str:
    """``why``, then how to give CLIP weights that load (never the kind that just failed)."""
    other = (
        f"perception.clip_model={fits} to use this file, or perception.clip_weights to a "
        f"{model} state-dict file"
        if fits
        else f"perception.clip_weights to a local {model} state-dict file (.pt/.bin/.safetensors)"
    )
    if not tag_failed and not fits:
        other += " or to an open_clip tag such as 'openai' (needs internet once)"
    return f"{why}: set {other}, or use perception.encoder=pixel"


def _load_clip_file(open_clip: Any, model: Any, name: str, path: Path) -> str:
    """Load ``path`` into ``model``: ``"whole"``, or ``"visual"`` for an image tower alone.

    A whole model goes through open_clip's own loader (its format conversions); only
    when that fails is the file read again, to load an image tower or to say what differs.
    """
    try:
        with quiet_open_clip():
            open_clip.load_checkpoint(model, str(path), strict=True, weights_only=True)
        return "whole"
    except Exception as e:  # noqa: BLE001 - explained below from the file's own tensors
        failure = e
    try:
        state = open_clip.factory.load_state_dict(str(path), weights_only=True)
    except Exception as e:  # noqa: BLE001 - not a state dict at all
        why = f"CLIP weights file {path} is {unreadable(e)}"
        raise WeightsUnavailable(_clip_hint(name, why)) from None
    visual = _visual_part(model, state)
    if visual is not None:
        expected, found, prefix = model.visual.state_dict(), visual, "visual."
    else:
        expected, found, prefix = model.state_dict(), state, ""
    want = {prefix + k: s for k, s in shapes(expected).items()}
    have = {prefix + k: s for k, s in shapes(found).items()}
    diff = mismatch(want, have, name)
    if diff is None and visual is not None:
        try:
            model.visual.load_state_dict(visual, strict=True)
            return "visual"
        except Exception as e:  # noqa: BLE001 - reported below
            failure = e
    guess = _guess_clip_model(open_clip, have)
    fits = guess if guess and guess != name else None
    why = diff or f"{type(failure).__name__}: {one_line(failure, 160)}"
    if fits:
        why += f" — the file looks like {fits}"
    raise WeightsUnavailable(
        _clip_hint(name, f"cannot load CLIP weights {str(path)!r} as {name} ({why})", fits=fits)
    )


def _visual_part(model: Any, state: dict[str, Any]) -> dict[str, Any] | None:
    """The image tower's state dict when ``state`` holds nothing else (``visual.*`` keys, or
    the tower's own keys); None for a whole model (or something else)."""
    if state and all(k.startswith("visual.") for k in state):
        return {k[len("visual.") :]: v for k, v in state.items()}
    keys = state.keys()
    in_tower = len(keys & model.visual.state_dict().keys())
    in_model = len(keys & model.state_dict().keys())
    return dict(state) if in_tower > in_model else None


_RESBLOCK = re.compile(r"^visual\.transformer\.resblocks\.(\d+)\.")


def _guess_clip_model(open_clip: Any, found: dict[str, tuple[int, ...]]) -> str | None:
    """The open_clip ViT whose image tower has the file's width, patch, depth, input size and
    embedding size (the shortest name of those that fit); None when the file does not say."""
    conv, pos = found.get("visual.conv1.weight"), found.get("visual.positional_embedding")
    if not conv or len(conv) != 4 or not pos:
        return None
    width, patch = int(conv[0]), int(conv[-1])
    grid = math.isqrt(max(0, int(pos[0]) - 1))
    layers = len({int(m.group(1)) for k in found if (m := _RESBLOCK.match(k))})
    proj = found.get("visual.proj")
    want = {"width": width, "patch_size": patch, "layers": layers, "image_size": grid * patch}
    fits = []
    for m in open_clip.list_models():
        c = open_clip.get_model_config(m) or {}
        vision = c.get("vision_cfg", {})
        if all(vision.get(k) == v for k, v in want.items()) and (
            proj is None or c.get("embed_dim") == int(proj[-1])
        ):
            fits.append(m)
    return min(fits, key=lambda m: (len(m), m)) if fits else None


def _tag_unreachable(open_clip: Any, name: str, tag: str) -> str | None:
    """Why the weights of ``tag`` cannot be had now, or None (cached, or the hub answers).

    huggingface_hub retries an unreachable hub for about a minute per file, printing
    every retry; one probe without retries tells the same in seconds. Tags that
    open_clip fetches from a URL, not the hub, fail fast by themselves.
    """
    pretrained = open_clip.get_pretrained_cfg(name, tag)
    hub_id = pretrained.get("hf_hub", "")
    if not hub_id or "file" in pretrained:
        return None
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url, try_to_load_from_cache
    from huggingface_hub.errors import HfHubHTTPError

    repo, filename = os.path.split(hub_id)
    filename = filename or open_clip.pretrained.HF_WEIGHTS_NAME
    names = [*open_clip.pretrained._get_safe_alternatives(filename), filename]
    if any(isinstance(try_to_load_from_cache(repo, f), str) for f in names):
        return None
    where = f"not in the Hugging Face cache ({constants.HF_HUB_CACHE})"
    if constants.HF_HUB_OFFLINE:
        return f"open_clip tag {tag!r} is {where} and HF_HUB_OFFLINE is set"
    try:
        get_hf_file_metadata(hf_hub_url(repo, names[0]), timeout=10)
    except HfHubHTTPError:
        return None  # the hub answered: open_clip will try the file names it knows
    except Exception as e:  # noqa: BLE001 - no answer at all: offline, DNS, proxy, timeout
        return (
            f"open_clip tag {tag!r} is {where} and {constants.ENDPOINT} cannot be reached "
            f"({type(e).__name__}: {one_line(e, 100)})"
        )
    return None


# --------------------------------------------------------------------------------------- factory


def make_encoder(cfg: PerceptionConfig, *, log: Log = print) -> Any:
    """The encoder ``cfg.encoder`` names.

    ``"clip"`` raises :class:`WeightsUnavailable` when weights cannot be loaded.
    ``"auto"`` uses CLIP when ``cfg.clip_weights`` is set (weights that cannot be
    loaded are the same error: a memory made with the pixel encoder instead would
    refuse CLIP's features once the path is mended); without weights it says once,
    through ``log``, that it uses the pixel encoder and why. A loaded CLIP says so
    in one ``log`` line: its model, where the weights came from, its identity. The
    returned encoder's ``identity`` is what memory records, so a memory built
    with one encoder refuses features from the other.
    """
    kind = cfg.encoder
    if kind == "pixel":
        return PixelEncoder(cfg)
    if kind not in ("clip", "auto"):
        raise ConfigError(f"perception.encoder={kind!r}; use auto, clip or pixel")
    if kind == "clip" or cfg.clip_weights:
        enc = ClipEncoder(cfg)
        log(f"encoder: CLIP {enc.model_name} from {enc.source} ({enc.identity})")
        return enc
    log(
        "encoder: no CLIP weights configured (perception.clip_weights); using the pixel "
        "encoder (pixel:v1). Set perception.clip_weights=PATH or a tag to use CLIP ViT-B/32."
    )
    return PixelEncoder(cfg)
