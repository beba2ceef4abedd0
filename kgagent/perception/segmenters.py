"""Segmenters: screenshots to candidate interactable UI objects (the papers use Segment Anything).

Two implementations behind one protocol (:class:`~kgagent.perception.base.Segmenter`):

* :class:`SamSegmenter` -- Segment Anything's automatic mask generator, as in
  the Bottom-Up Agent, when a checkpoint is available.
* :class:`OpenCVSegmenter` -- a classical, weight-free default so that a fresh
  machine (no checkpoint, no GPU) still finds buttons, cards, icons and text.

Both pass their raw candidates through the same filters (the Bottom-Up Agent's:
too large, too thin, too flat) and the same de-duplication, so the objects
memory receives look alike whichever segmenter produced them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kgagent.config import PerceptionConfig
from kgagent.errors import ConfigError, WeightsUnavailable
from kgagent.perception.base import Segment
from kgagent.perception.change import to_gray
from kgagent.perception.device import model_libraries, torch_device
from kgagent.perception.weights import (
    file_tag,
    guess_sam_model,
    mismatch,
    one_line,
    path_problem,
    shapes,
    unreadable,
)

__all__ = [
    "OpenCVSegmenter",
    "SamSegmenter",
    "hamming",
    "make_segmenter",
    "phash",
]

Log = Callable[[str], None]

# ---------------------------------------------------------------------------------------- hashing


def phash(image: np.ndarray) -> int:
    """64-bit DCT perceptual hash (the classic pHash: 32×32 grey, DCT, 8×8 low band > median).

    Robust to small rescaling and compression, so the same button seen on two
    screens hashes within a few bits; memory uses the Hamming distance to
    recognise a known object.
    """
    gray = to_gray(image)
    if gray.size == 0:
        return 0
    small = cv2.resize(gray, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    dct = cv2.dct(small)
    low = dct[:8, :8].flatten()
    # The median of the 63 terms after the DC term (which only says how bright the crop
    # is): the 32nd smallest, exactly np.median's answer for an odd count, in a
    # fraction of its time.
    med = np.partition(low[1:], 31)[31]
    # First coefficient is the most significant bit.
    return int.from_bytes(np.packbits(low > med).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit hashes."""
    return int((int(a) ^ int(b)) & 0xFFFFFFFFFFFFFFFF).bit_count()


# ------------------------------------------------------------------------- shared filtering/dedup


@dataclass
class _Candidate:
    bbox: tuple[int, int, int, int]
    score: float
    mask: np.ndarray | None = None  # full-screen boolean mask (SAM), else None


def _finalize(
    image: np.ndarray, cands: Iterable[_Candidate], cfg: PerceptionConfig
) -> list[Segment]:
    """:func:`_finalize_boxes` of candidates that may carry masks (SAM's)."""
    cands = list(cands)
    boxes = np.array([c.bbox for c in cands], dtype=np.int64).reshape(-1, 4)
    scores = np.array([c.score for c in cands], dtype=np.float64)
    return _finalize_boxes(image, boxes, scores, cfg, masks=[c.mask for c in cands])


def _finalize_boxes(
    image: np.ndarray,
    boxes: np.ndarray,
    scores: np.ndarray,
    cfg: PerceptionConfig,
    *,
    masks: list[np.ndarray | None] | None = None,
) -> list[Segment]:
    """The Bottom-Up Agent's filters, then de-duplication, then ranking and the count bound.

    ``boxes``: one (x, y, w, h) row per candidate; ``scores``: their own scores (mask
    quality, or rectangularity); ``masks``: a full-screen boolean mask per candidate
    (SAM's; None where a candidate has none), or None when no candidate has one.

    Filters: larger than ``sam_max_area_ratio`` of the screen (panels and
    backgrounds are not click targets), thinner than ``sam_min_side`` px,
    near-constant texture (grey std < ``sam_min_texture_std``).

    De-duplication keeps the higher-ranked of two candidates when their centres
    are closer than ``dedup_center_distance`` (a button and its own label, the
    two outlines of one border), or when their boxes overlap substantially
    (IoU ≥ 0.3) and their pHashes are within ``dedup_hash_distance`` bits (two
    masks of one thing). Identical-looking elements at separate places (two
    identical cards in hand) are kept: they are distinct click targets. Two
    candidates without masks with the same box (the same box from both edge passes)
    are one.

    Ranking: the candidate's own score divided by the square root of how many kept
    segments share its size. Why: elements that tile the screen by the hundred (map
    cells, texture) are background far more often than controls, and without this
    they crowd the few real buttons out of the ``max_objects`` bound. The final
    ``Segment.score`` is this ranking score.

    Ties keep the candidates' order: candidates of equal score in the order given,
    then (among equal ranking scores) the order the centre pass kept them in.
    """
    img = np.asarray(image)
    gray = to_gray(img)
    hgt, wid = gray.shape
    screen_area = float(hgt * wid)
    n = len(boxes)
    if n == 0:
        return []
    # Vectorised filters: a textured screen yields thousands of contours.
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    sc = np.asarray(scores, dtype=np.float64)
    x0 = np.clip(b[:, 0], 0, wid)
    y0 = np.clip(b[:, 1], 0, hgt)
    x1 = np.clip(b[:, 0] + b[:, 2], 0, wid)
    y1 = np.clip(b[:, 1] + b[:, 3], 0, hgt)
    w, h = x1 - x0, y1 - y0
    ok = (w >= cfg.sam_min_side) & (h >= cfg.sam_min_side)
    area = (w * h).astype(np.float64)
    masked = (
        np.array([m is not None for m in masks], dtype=bool)
        if masks is not None
        else np.zeros(n, dtype=bool)
    )
    for i in np.nonzero(masked & ok)[0]:
        area[i] = float(masks[i].sum())
    ok &= area <= cfg.sam_max_area_ratio * screen_area
    # Sums in 32-bit integers where they cannot overflow (screens up to 8.4 Mpx): OpenCV
    # computes those 2-20 times faster than in doubles (the squares stay doubles), exactly.
    sdepth = cv2.CV_32S if gray.size * 255 < 2**31 else cv2.CV_64F
    integ, integ_sq = cv2.integral2(gray, sdepth=sdepth, sqdepth=cv2.CV_64F)
    npx = np.maximum((w * h).astype(np.float64), 1.0)
    s1 = integ[y1, x1].astype(np.float64) - integ[y0, x1] - integ[y1, x0] + integ[y0, x0]
    s2 = integ_sq[y1, x1] - integ_sq[y0, x1] - integ_sq[y1, x0] + integ_sq[y0, x0]
    std = np.sqrt(np.maximum(0.0, s2 / npx - (s1 / npx) ** 2))  # O(1) per box
    for i in np.nonzero(masked & ok)[0]:
        m = masks[i][y0[i] : y1[i], x0[i] : x1[i]]
        std[i] = float(gray[y0[i] : y1[i], x0[i] : x1[i]][m].std()) if m.any() else 0.0
    ok &= std >= cfg.sam_min_texture_std
    # The same box from both edge passes is one candidate (the first); masked ones stay.
    plain = np.nonzero(ok & ~masked)[0]
    if len(plain):
        clipped = np.stack([x0[plain], y0[plain], w[plain], h[plain]], axis=1)
        _, first = np.unique(clipped, axis=0, return_index=True)
        ok &= masked
        ok[plain[first]] = True
    kept = np.nonzero(ok)[0]  # in the order given
    # Best score first, then the larger area; ties in the order given (a stable sort).
    kept = kept[np.lexsort((-area[kept], -sc[kept]))]

    # 1. Centre de-duplication, greedy in score order. Centres live in a grid of
    #    cells one dedup distance wide: a candidate meets only the 3×3 cells around it.
    cell = max(1.0, float(cfg.dedup_center_distance))
    min_d2 = cfg.dedup_center_distance**2
    grid: dict[tuple[int, int], list[tuple[int, int]]] = {}
    spread: list[int] = []
    for i, cx, cy in zip(
        kept.tolist(), (x0 + w // 2)[kept].tolist(), (y0 + h // 2)[kept].tolist(), strict=True
    ):
        gx, gy = int(cx // cell), int(cy // cell)
        if _near_any(grid, gx, gy, cx, cy, min_d2):
            continue
        grid.setdefault((gx, gy), []).append((cx, cy))
        spread.append(i)

    # 2. Repetition-aware ranking: the score over √(kept segments of its size, in 4 px).
    sp = np.array(spread, dtype=np.int64)
    size_key = (w[sp] // 4) * (1 << 32) + (h[sp] // 4)
    _, which, count = np.unique(size_key, return_inverse=True, return_counts=True)
    rank = sc[sp] / np.sqrt(count[which.reshape(-1)])
    order = np.lexsort((np.arange(len(sp)), -rank))

    # 3. Overlap + pHash de-duplication while filling the bound.
    segments: list[Segment] = []
    placed = np.zeros((cfg.max_objects, 4), dtype=np.float64)
    for j in order.tolist():
        if len(segments) >= cfg.max_objects:
            break
        i = int(sp[j])
        x, y, bw, bh = int(x0[i]), int(y0[i]), int(w[i]), int(h[i])
        ph = phash(gray[y : y + bh, x : x + bw])  # == phash of the crop: the same luma
        if segments:
            ob = placed[: len(segments)]
            ix = np.clip(np.minimum(ob[:, 0] + ob[:, 2], x + bw) - np.maximum(ob[:, 0], x), 0, None)
            iy = np.clip(np.minimum(ob[:, 1] + ob[:, 3], y + bh) - np.maximum(ob[:, 1], y), 0, None)
            inter = ix * iy
            iou = inter / (ob[:, 2] * ob[:, 3] + bw * bh - inter)
            if any(
                hamming(segments[int(k)].phash, ph) <= cfg.dedup_hash_distance
                for k in np.nonzero(iou >= 0.3)[0]
            ):
                continue
        placed[len(segments)] = (x, y, bw, bh)
        segments.append(
            Segment(
                bbox=(x, y, bw, bh),
                crop=_crop_rgb(img, (x, y, bw, bh)),
                phash=ph,
                score=float(rank[j]),
            )
        )
    return segments


def _near_any(
    grid: dict[tuple[int, int], list[tuple[int, int]]],
    gx: int,
    gy: int,
    cx: int,
    cy: int,
    min_d2: float,
) -> bool:
    """Whether a centre kept in the 3×3 cells around (gx, gy) is nearer than √min_d2."""
    for nx in (gx - 1, gx, gx + 1):
        for ny in (gy - 1, gy, gy + 1):
            for kx, ky in grid.get((nx, ny), ()):
                if (kx - cx) ** 2 + (ky - cy) ** 2 < min_d2:
                    return True
    return False


def _crop_rgb(img: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x, y, w, h = box
    if img.ndim == 2:
        return np.ascontiguousarray(np.repeat(img[y : y + h, x : x + w, None], 3, axis=2))
    return np.ascontiguousarray(img[y : y + h, x : x + w, :3])


# ---------------------------------------------------------------------------------------- OpenCV


class OpenCVSegmenter:
    """Classical UI-element finder: colour edges → closed regions → boxes.

    Why this works on GUIs: interactable elements are drawn as regions that
    contrast with their surroundings (filled buttons, framed cards, icons,
    runs of text). A per-channel morphological gradient catches borders that
    differ in hue but not in brightness; a small horizontal closing joins the
    letters of a label into one block; contours of the result give one box per
    element (and one per label, which de-duplication folds into its button).
    Weight-free and a few milliseconds per 1280×720 screen.
    """

    identity = "opencv:v1"

    def __init__(self, cfg: PerceptionConfig | None = None) -> None:
        self.cfg = cfg or PerceptionConfig()

    def segment(self, image: np.ndarray) -> list[Segment]:
        img = np.asarray(image)
        if img.ndim == 2:
            img = np.repeat(img[:, :, None], 3, axis=2)
        img = np.ascontiguousarray(img[:, :, :3], dtype=np.uint8)
        cfg = self.cfg
        grad = cv2.morphologyEx(img, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
        # cv2.max, not ndarray.max(axis=2): the latter is ~20x slower on HxWx3.
        edge = cv2.max(cv2.max(grad[:, :, 0], grad[:, :, 1]), grad[:, :, 2])
        _, binary = cv2.threshold(edge, cfg.opencv_edge_threshold, 255, cv2.THRESH_BINARY)
        # Two passes: the raw edge map keeps adjacent elements apart (cards in a
        # row, buttons in a toolbar); the closed map joins letters into labels.
        passes = [binary]
        k = max(1, int(cfg.opencv_text_join))
        if k > 1:
            passes.append(cv2.morphologyEx(binary, cv2.MORPH_CLOSE, np.ones((3, k), np.uint8)))
        boxes: list[tuple[int, int, int, int]] = []
        scores: list[float] = []
        for b in passes:
            contours, _ = cv2.findContours(b, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
            for cnt in contours:
                x, y, w, h = cv2.boundingRect(cnt)
                if w < cfg.sam_min_side or h < cfg.sam_min_side:
                    continue
                # Rectangularity: UI elements are boxes; ragged outlines are clutter.
                fill = float(cv2.contourArea(cnt)) / float(w * h)
                boxes.append((x, y, w, h))
                scores.append(round(min(1.0, fill), 1))
        return _finalize_boxes(
            img,
            np.array(boxes, dtype=np.int64).reshape(-1, 4),
            np.array(scores, dtype=np.float64),
            cfg,
        )


# ------------------------------------------------------------------------------------------- SAM


class SamSegmenter:
    """Segment Anything's automatic mask generator with the Bottom-Up Agent's filters.

    ``model`` may be passed in (tests build ``sam_model_registry["vit_b"](checkpoint=None)``
    with random weights); otherwise it is built from ``cfg.sam_model`` and
    ``cfg.sam_checkpoint``. Checkpoints are loaded with ``torch.load(weights_only=True)``:
    nothing is unpickled. ``points_per_side`` and other generator arguments can be
    overridden, because SAM on a CPU costs seconds per grid point batch.
    """

    def __init__(
        self,
        cfg: PerceptionConfig | None = None,
        *,
        model: Any | None = None,
        points_per_side: int | None = None,
        **generator_kwargs: Any,
    ) -> None:
        # lazy: importing kgagent.perception must stay torch-free (nor need it installed)
        (torch,) = model_libraries("perception.segmenter=sam", "torch")

        self.cfg = cfg = cfg or PerceptionConfig()
        self.device = device = torch_device(cfg.device)
        #: Where the weights came from, for the start line.
        self.source = "an in-memory model"
        if model is None:
            model, tag = _load_sam(cfg)
            self.source = str(Path(cfg.sam_checkpoint).expanduser())
        else:
            tag = "in-memory"
        model.to(device)
        model.eval()
        self.model = model
        self.identity = f"sam:{cfg.sam_model}:{tag}"
        self.points_per_side = int(points_per_side or cfg.sam_points_per_side)
        kwargs: dict[str, Any] = {
            "points_per_side": self.points_per_side,
            "output_mode": "binary_mask",
        }
        kwargs.update(generator_kwargs)
        if cfg.sam_model == "vit_t":
            from mobile_sam import SamAutomaticMaskGenerator  # type: ignore[import-not-found]
        else:
            (sam,) = model_libraries("perception.segmenter=sam", "segment_anything")
            SamAutomaticMaskGenerator = sam.SamAutomaticMaskGenerator
        self._torch = torch
        self.last_mask_count = 0
        self.generator = SamAutomaticMaskGenerator(model, **kwargs)

    def segment(self, image: np.ndarray) -> list[Segment]:
        img = np.asarray(image)
        if img.ndim == 2:
            img = np.repeat(img[:, :, None], 3, axis=2)
        img = np.ascontiguousarray(img[:, :, :3], dtype=np.uint8)
        with self._torch.inference_mode():
            masks = self.generator.generate(img)
        # Kept for diagnostics and benchmarks: how many masks SAM proposed
        # before the filters and de-duplication.
        self.last_mask_count = len(masks)
        cands = []
        for m in masks:
            x, y, w, h = (int(round(v)) for v in m["bbox"])  # XYWH
            cands.append(
                _Candidate(
                    (x, y, w, h),
                    score=float(m.get("predicted_iou", 1.0)),
                    mask=np.asarray(m["segmentation"], dtype=bool),
                )
            )
        return _finalize(img, cands, self.cfg)


_SAM_HINT = (
    "download a Segment Anything checkpoint (e.g. sam_vit_b_01ec64.pth) and set "
    "perception.sam_checkpoint=PATH, or use perception.segmenter=opencv"
)


def _load_sam(cfg: PerceptionConfig) -> tuple[Any, str]:
    """Build ``cfg.sam_model`` and load ``cfg.sam_checkpoint`` without unpickling."""
    if not cfg.sam_checkpoint:
        raise WeightsUnavailable(f"no SAM checkpoint configured: {_SAM_HINT}")
    path = Path(cfg.sam_checkpoint).expanduser()
    problem = path_problem(path, "SAM checkpoint")
    if problem:
        raise WeightsUnavailable(f"{problem}: {_SAM_HINT}")
    registry = _sam_registry(cfg.sam_model)
    state = _read_sam_state(path)
    _refuse_misfit(registry, cfg.sam_model, path, state)
    model = registry[cfg.sam_model](checkpoint=None)
    try:
        model.load_state_dict(state, strict=True)
    except Exception as e:  # noqa: BLE001 - any failure means "these weights are unusable"
        raise WeightsUnavailable(
            f"SAM checkpoint {path} cannot be loaded as {cfg.sam_model} "
            f"({type(e).__name__}: {one_line(e, 160)}): {_SAM_HINT}"
        ) from None
    return model, file_tag(path)


def _sam_registry(name: str) -> Any:
    """segment_anything's (or mobile_sam's, for vit_t) model builders, checked to know ``name``."""
    if name == "vit_t":
        try:
            from mobile_sam import sam_model_registry  # type: ignore[import-not-found]
        except ImportError:
            raise WeightsUnavailable(
                "sam_model=vit_t needs the mobile_sam package; install it or use vit_b/vit_l/vit_h"
            ) from None
    else:
        (sam,) = model_libraries("perception.segmenter=sam", "segment_anything")
        sam_model_registry = sam.sam_model_registry
    if name not in sam_model_registry:
        raise ConfigError(f"perception.sam_model={name!r}; known: vit_b, vit_l, vit_h, vit_t")
    return sam_model_registry


def _read_sam_state(path: Path) -> dict[str, Any]:
    """The checkpoint's state dict (``{"model": ...}`` unwrapped), read before a model is built."""
    import torch

    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - truncated, not a checkpoint, or not plain tensors
        raise WeightsUnavailable(f"SAM checkpoint {path} is {unreadable(e)}: {_SAM_HINT}") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    if not isinstance(state, dict):
        raise WeightsUnavailable(
            f"SAM checkpoint {path} holds a {type(state).__name__}, not a state dict: {_SAM_HINT}"
        )
    return state


def _refuse_misfit(registry: Any, name: str, path: Path, state: dict[str, Any]) -> None:
    """Refuse, in one line, a checkpoint whose tensors do not fit ``name``, saying which SAM
    it looks like. The model compared against is built without memory (on torch's meta
    device), so a wrong file costs no full model build."""
    import torch

    with torch.device("meta"):
        expected = shapes(registry[name](checkpoint=None).state_dict())
    found = shapes(state)
    diff = mismatch(expected, found, name)
    if diff is None:
        return
    guess = guess_sam_model(found)
    fix = _SAM_HINT
    if guess and guess != name:
        diff += f" — the file looks like {guess}"
        fix = f"set perception.sam_model={guess}, or use a {name} checkpoint"
    raise WeightsUnavailable(f"SAM checkpoint {path} cannot be loaded as {name} ({diff}): {fix}")


# --------------------------------------------------------------------------------------- factory


def make_segmenter(cfg: PerceptionConfig, *, log: Log = print) -> Any:
    """The segmenter ``cfg.segmenter`` names.

    ``"sam"`` fails with :class:`WeightsUnavailable` when the checkpoint cannot
    be loaded; ``"auto"`` uses SAM when a checkpoint is configured (one that cannot be
    loaded is the same error: the user asked for SAM), and otherwise says once,
    through ``log``, that it uses the OpenCV segmenter and why. A loaded SAM says so in
    one ``log`` line (model, checkpoint, device, identity), and in a second when it will
    take minutes per screen on the CPU.
    """
    kind = cfg.segmenter
    if kind == "opencv":
        return OpenCVSegmenter(cfg)
    if kind not in ("sam", "auto"):
        raise ConfigError(f"perception.segmenter={kind!r}; use auto, sam or opencv")
    if kind == "sam" or cfg.sam_checkpoint:
        seg = SamSegmenter(cfg)
        log(f"segmenter: SAM {cfg.sam_model} from {seg.source} on {seg.device} ({seg.identity})")
        slow = _slow_on_cpu(seg)
        if slow:
            log(slow)
        return seg
    log(
        "segmenter: no SAM checkpoint configured (perception.sam_checkpoint); "
        "using the OpenCV segmenter"
    )
    return OpenCVSegmenter(cfg)


#: Up to this many points per side SAM on a CPU needs no warning (36 s per screen at 4,
#: docs/benchmarks.md); more, and it is slower still.
CPU_POINTS_PER_SIDE = 4


def _slow_on_cpu(seg: SamSegmenter) -> str | None:
    """A note that SAM on the CPU with more than a few points per side is very slow, or None."""
    n = seg.points_per_side
    if seg.device.type != "cpu" or n <= CPU_POINTS_PER_SIDE:
        return None
    return (
        f"segmenter: SAM on the CPU is slow with a {n}×{n} point grid (36 s per screen at 4×4 "
        "on a 2-core CPU, docs/benchmarks.md; minutes at 32×32); set "
        f"perception.device=cuda, perception.sam_points_per_side={CPU_POINTS_PER_SIDE} "
        "or perception.segmenter=opencv"
    )
