"""Grounding: find an object's reference crop on the current screen.

To execute "click object 24", the object's reference crop is template-matched
against the current screen and the centre of the best match is clicked; a match
below threshold means the object is absent (the papers' grounding). So this module never returns a point for a
match it does not believe in. Callers turn ``found=False`` into a
:class:`kgagent.errors.GroundingError` (see :func:`ground_or_raise`).

When the crop no longer matches but the object shows text, the agent looks for the text
instead (:class:`TextGround`, made by ``kgagent.agent.observation.Observer.ground_text``
from the screen's segments and their labels, :mod:`kgagent.perception.reader`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from kgagent.errors import GroundingError
from kgagent.perception.base import GroundResult
from kgagent.perception.change import to_gray

#: Below this grey-level standard deviation a template has no structure, and
#: TM_CCOEFF_NORMED is undefined (0/0). Such a crop could match any flat patch
#: of the same colour, so it is reported as not found rather than guessed.
FLAT_TEMPLATE_STD = 1.0
#: Smallest template side (px) after scaling; below it a match is meaningless.
MIN_TEMPLATE_SIDE = 3
#: Coarse-to-fine search (see ``_match``): smallest coarse template side, how
#: many coarse peaks are re-scored, and how far below the threshold a coarse
#: score may be and still be re-scored. Internal accuracy/speed settings, not
#: tunables: the benchmark (docs/benchmarks.md (Perception)) pins their effect.
COARSE_MIN_SIDE = 12
COARSE_PEAKS = 3
COARSE_MARGIN = 0.2


@dataclass
class TextGround(GroundResult):
    """A grounding by the object's text label instead of its crop (the crop no longer
    matched): ``text`` is the label looked for; ``found`` only where a segment of the
    screen shows it. ``point`` is that segment's centre; ``scale`` its width relative to
    the object's reference crop."""

    text: str = ""


def ground(
    template: np.ndarray,
    screen: np.ndarray,
    *,
    threshold: float = 0.8,
    scales: Sequence[float] = (1.0,),
) -> GroundResult:
    """Best multi-scale TM_CCOEFF_NORMED match of ``template`` on ``screen`` (both RGB or grey).

    Scales are tried in order and the best score wins; a score equal to 1 at an
    earlier scale stops the search early (the common case: the object did not
    move in size). Templates larger than the screen at some scale skip that
    scale; if no scale fits, the object is not found. The returned score is
    always finite and in [-1, 1].
    """
    tmpl = to_gray(template)
    scr = to_gray(screen)
    th, tw = tmpl.shape
    sh, sw = scr.shape
    if th == 0 or tw == 0 or sh == 0 or sw == 0:
        return GroundResult(found=False, score=0.0)
    if float(tmpl.std()) < FLAT_TEMPLATE_STD:
        return GroundResult(found=False, score=0.0)

    best: GroundResult | None = None
    pyramid: dict[int, np.ndarray] = {1: scr}
    for scale in scales:
        w = int(round(tw * scale))
        h = int(round(th * scale))
        if w < MIN_TEMPLATE_SIDE or h < MIN_TEMPLATE_SIDE or w > sw or h > sh:
            continue
        t = tmpl if (w, h) == (tw, th) else cv2.resize(tmpl, (w, h), interpolation=_interp(scale))
        if float(t.std()) < FLAT_TEMPLATE_STD:
            continue
        score, (x, y) = _match(scr, t, pyramid, threshold)
        if best is None or score > best.score:
            best = GroundResult(
                found=False,
                score=float(score),
                point=(int(x + w // 2), int(y + h // 2)),
                bbox=(int(x), int(y), int(w), int(h)),
                scale=float(scale),
            )
        if score >= 0.999:
            break
    if best is None:
        return GroundResult(found=False, score=0.0)
    if best.score < threshold:
        # Keep the score for diagnostics, but no point: never a blind click.
        return GroundResult(found=False, score=best.score, scale=best.scale)
    best.found = True
    return best


def ground_or_raise(
    template: np.ndarray,
    screen: np.ndarray,
    *,
    threshold: float = 0.8,
    scales: Sequence[float] = (1.0,),
    name: str = "object",
) -> GroundResult:
    """:func:`ground`, raising :class:`GroundingError` when the object is absent."""
    r = ground(template, screen, threshold=threshold, scales=scales)
    if not r.found:
        raise GroundingError(
            f"{name} not found on screen (best match {r.score:.2f} < threshold {threshold:.2f})"
        )
    return r


def _scores(screen: np.ndarray, t: np.ndarray) -> np.ndarray:
    res = cv2.matchTemplate(screen, t, cv2.TM_CCOEFF_NORMED)
    # Flat screen windows give 0/0; OpenCV then writes arbitrary or non-finite
    # values. A flat window cannot match a textured template.
    res = np.nan_to_num(res, nan=-1.0, posinf=-1.0, neginf=-1.0)
    np.clip(res, -1.0, 1.0, out=res)
    return res


def _match(
    scr: np.ndarray, t: np.ndarray, pyramid: dict[int, np.ndarray], threshold: float
) -> tuple[float, tuple[int, int]]:
    """Best full-resolution TM_CCOEFF_NORMED score and its top-left corner.

    Coarse to fine, because a full-resolution search of a 1280×720 screen costs
    tens of milliseconds per scale and memory checks many objects per step: the
    screen and template are first reduced by ``f`` (4 or 2, keeping the
    template at least ``COARSE_MIN_SIDE`` px), the ``COARSE_PEAKS`` best coarse
    positions are re-scored at full resolution in a small window, and the best
    of those is returned. A coarse score below ``threshold - COARSE_MARGIN``
    ends the search: the object is not there at this scale. Small templates are
    matched at full resolution directly.
    """
    h, w = t.shape
    f = next((f for f in (4, 2) if min(w, h) // f >= COARSE_MIN_SIDE), 1)
    if f == 1:
        res = _scores(scr, t)
        _, score, _, loc = cv2.minMaxLoc(res)
        return float(score), loc
    if f not in pyramid:
        sh, sw = scr.shape
        pyramid[f] = cv2.resize(scr, (sw // f, sh // f), interpolation=cv2.INTER_AREA)
    small = pyramid[f]
    ts = cv2.resize(t, (w // f, h // f), interpolation=cv2.INTER_AREA)
    if (
        float(ts.std()) < FLAT_TEMPLATE_STD
        or ts.shape[0] > small.shape[0]
        or ts.shape[1] > small.shape[1]
    ):
        res = _scores(scr, t)
        _, score, _, loc = cv2.minMaxLoc(res)
        return float(score), loc
    coarse = _scores(small, ts)
    best_score, best_loc = -1.0, (0, 0)
    for _ in range(COARSE_PEAKS):
        _, cscore, _, (cx, cy) = cv2.minMaxLoc(coarse)
        if cscore < threshold - COARSE_MARGIN:
            break
        # Suppress this peak's neighbourhood before looking for the next one.
        coarse[
            max(0, cy - h // (2 * f)) : cy + h // (2 * f) + 1,
            max(0, cx - w // (2 * f)) : cx + w // (2 * f) + 1,
        ] = -1.0
        sh, sw = scr.shape
        x0, y0 = max(0, cx * f - f), max(0, cy * f - f)
        x1, y1 = min(sw, cx * f + w + 2 * f), min(sh, cy * f + h + 2 * f)
        res = _scores(scr[y0:y1, x0:x1], t)
        _, score, _, (lx, ly) = cv2.minMaxLoc(res)
        if score > best_score:
            best_score, best_loc = float(score), (x0 + lx, y0 + ly)
    if best_score < -0.5:  # no coarse peak was good enough: report the coarse evidence
        _, cscore, _, (cx, cy) = cv2.minMaxLoc(_scores(small, ts))
        return float(cscore), (cx * f, cy * f)
    return best_score, best_loc


def _interp(scale: float) -> int:
    return cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
