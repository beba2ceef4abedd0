"""Text lines: where the text of a crop, or of a piece of a label on the screen, lies.

The reader (:mod:`~kgagent.perception.reader`) recognises only, so the line it reads is
found here, classically (:func:`text_line`, :func:`text_lines`): connected components of
the crop's two Otsu classes that look like glyphs (thin strokes, letter-sized, not a
frame or a filled shape), grouped into rows; a row of at least two glyphs is a text line,
and the most prominent one (the tallest glyphs; among near-equals the top-most: a title
over its body text) is read. A crop with no such row is not text and costs no
recognition at all. The same components give the word gaps (:attr:`TextLine.gaps`),
which put back the spaces the recogniser drops.

A segmenter may cut one label at its word gaps (``End`` and ``Turn`` of one button).
:func:`line_around` follows such a piece along its row on the screen, with the same glyph
rules, to the whole line (:class:`LineCache` remembers it by the band of screen rows it
looks at). Everything here is about glyphs, never about a program: no word lists, no
language, no game.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

__all__ = [
    "LineCache",
    "TextLine",
    "line_around",
    "text_line",
    "text_lines",
]

#: Glyph geometry (pixels and ratios). Not tuning knobs: they describe what a printed
#: glyph looks like at screen resolution, and tests pin them on rendered text.
MIN_GLYPH_H = 5  # below this no recogniser reads a letter
MAX_GLYPH_H = 96  # a headline; anything taller is a picture
MAX_GLYPH_ASPECT = 12.0  # w / h: touching letters (serif fonts, small sizes) make wide glyphs
MIN_WORD_ASPECT = 1.8  # ... a row of one such glyph is a word only if this wide
MIN_WORD_FILL = 0.2  # ... and this dense (an outlined box is wide, thin and sparse)
MIN_FILL = 0.08  # ink share of the glyph's box: thin rings (frames, outlines) are not glyphs
MAX_STROKE = 0.42  # thickest stroke / height: letters are drawn with strokes, icons filled
WORD_GAP = 0.45  # a gap wider than this × glyph height, and twice the row's median gap,
#: separates words (measured on rendered text: letter gaps reach 0.33 × height)
WORD_GAP_RATIO = 2.0
COUNTER_SCALE = 3.0  # a glyph inside one at most this much taller is its counter or mark
LINE_GAP = 1.6  # ... wider than this × glyph height separates two texts on one row
PROMINENCE = 0.85  # rows whose glyphs are this tall relative to the tallest compete
LINE_MARGIN = 0.3  # context kept around the line, × glyph height (the recogniser wants some)
CANDIDATE_LINES = 2  # lines tried per crop, the most prominent first (see text_lines)


@dataclass
class TextLine:
    """The most prominent text line of a crop: its box in the crop and its word gaps."""

    box: tuple[int, int, int, int]  # x, y, w, h in the crop (margin included)
    glyph_height: float
    gaps: list[float] = field(default_factory=list)  # x of word gaps, in the box's frame
    glyphs: int = 0


def _glyphs(gray: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Glyph-like connected components (x, y, w, h) of both Otsu classes of ``gray``."""
    H, W = gray.shape
    _, mask = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    out: list[tuple[int, int, int, int]] = []
    for m in (mask, cv2.bitwise_not(mask)):
        n, lab, st, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
        if n <= 1:
            continue
        keep = []
        for i in range(1, n):
            x, y, w, h, a = (int(v) for v in st[i])
            if not (MIN_GLYPH_H <= h <= MAX_GLYPH_H) or w > MAX_GLYPH_ASPECT * h:
                continue
            if (x == 0 and x + w >= W) or (y == 0 and y + h >= H):
                continue  # spans the crop: a frame or the background
            if a < MIN_FILL * w * h:
                continue
            keep.append(i)
        if not keep:
            continue
        # Thickest stroke per component: twice the largest distance to the background.
        dist = cv2.distanceTransform(m, cv2.DIST_L2, 3)
        thick = np.zeros(n, np.float32)
        np.maximum.at(thick, lab.ravel(), dist.ravel())
        for i in keep:
            x, y, w, h, _a = (int(v) for v in st[i])
            if 2.0 * float(thick[i]) <= MAX_STROKE * h + 1.0:
                if w < MIN_WORD_ASPECT * h or int(st[i][4]) >= MIN_WORD_FILL * w * h:
                    out.append((x, y, w, h))
    return out


def _rows(glyphs: list[tuple[int, int, int, int]]) -> list[list[tuple[int, int, int, int]]]:
    """Glyphs grouped into rows, then split where a horizontal gap says that two texts
    share a row.

    A glyph inside another one's box, and not much smaller, is its counter (the hole of an
    "A") or a mark on it, and is dropped (a letter inside a frame is kept). Tall glyphs are placed first, so that capitals and ascenders set the
    rows and lower-case letters join them: a glyph joins a row it overlaps vertically by
    half its height, if its height is within a factor of two of the row's.
    """
    inside = {
        i
        for i, (x, y, w, h) in enumerate(glyphs)
        for j, (X, Y, W, H) in enumerate(glyphs)
        if i != j
        and X <= x
        and Y <= y
        and x + w <= X + W
        and y + h <= Y + H
        and w * h < W * H
        and H <= COUNTER_SCALE * h  # a letter's counter; not a letter inside a frame
    }
    kept = [g for i, g in enumerate(glyphs) if i not in inside]
    rows: list[list[tuple[int, int, int, int]]] = []
    for g in sorted(kept, key=lambda g: (-g[3], g[1], g[0])):
        for row in rows:
            top = min(r[1] for r in row)
            bottom = max(r[1] + r[3] for r in row)
            med = float(np.median([r[3] for r in row]))
            overlap = min(bottom, g[1] + g[3]) - max(top, g[1])
            if overlap >= 0.5 * g[3] and 0.5 * med <= g[3] <= 2.0 * med:
                row.append(g)
                break
        else:
            rows.append([g])
    out = []
    for row in rows:
        row.sort(key=lambda g: g[0])
        med = float(np.median([g[3] for g in row]))
        cur, right = [row[0]], row[0][0] + row[0][2]
        for g in row[1:]:
            if g[0] - right > LINE_GAP * med:
                out.append(cur)
                cur = [g]
            else:
                cur.append(g)
            right = max(right, g[0] + g[2])
        out.append(cur)
    return out


def _columns(row: list[tuple[int, int, int, int]]) -> list[tuple[int, int]]:
    """The row's horizontal ink runs (glyphs overlapping in x are one: an i and its dot)."""
    runs: list[tuple[int, int]] = []
    for x, _y, w, _h in sorted(row):
        if runs and x <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], x + w))
        else:
            runs.append((x, x + w))
    return runs


def text_line(crop: np.ndarray) -> TextLine | None:
    """The crop's most prominent line of at least two glyphs, or ``None`` (no text)."""
    lines = text_lines(crop, 1)
    return lines[0] if lines else None


def text_lines(crop: np.ndarray, limit: int = CANDIDATE_LINES) -> list[TextLine]:
    """Up to ``limit`` text lines of the crop, the most prominent first.

    Prominence: rows whose glyphs are at least ``PROMINENCE`` × the tallest row's come
    first, top-most first (a title over its body); then the others, tallest first. More
    than one is returned because a picture can pass for a row of glyphs (the corners
    around a round button, an icon of two strokes); the reader keeps the first line it
    can read.
    """
    if crop.ndim == 3:
        gray = cv2.cvtColor(np.ascontiguousarray(crop[..., :3]), cv2.COLOR_RGB2GRAY)
    else:
        gray = np.ascontiguousarray(crop)
    H, W = gray.shape[:2]
    if H < MIN_GLYPH_H or W < 2 * MIN_GLYPH_H:
        return []

    def corner(g: tuple[int, int, int, int]) -> bool:
        x, y, w, h = g
        return (x == 0 or x + w >= W) and (y == 0 or y + h >= H)

    # A row made only of shapes in the crop's corners is the background around a round
    # or hexagonal control, not text.
    rows = [r for r in _rows(_glyphs(gray)) if _is_text(r) and not all(corner(g) for g in r)]
    if not rows:
        return []
    height = {id(r): float(np.median([g[3] for g in r])) for r in rows}
    tallest = max(height.values())

    def rank(r: list[tuple[int, int, int, int]]) -> tuple[int, float, int, int]:
        top, left = min(g[1] for g in r), min(g[0] for g in r)
        if height[id(r)] >= PROMINENCE * tallest:
            return (0, 0.0, top, left)
        return (1, -height[id(r)], top, left)

    return [_line(r, height[id(r)], W, H) for r in sorted(rows, key=rank)[:limit]]


def _line(row: list[tuple[int, int, int, int]], med: float, W: int, H: int) -> TextLine:
    x0, y0 = min(g[0] for g in row), min(g[1] for g in row)
    x1, y1 = max(g[0] + g[2] for g in row), max(g[1] + g[3] for g in row)
    m = int(round(LINE_MARGIN * med)) + 1
    bx, by = max(0, x0 - m), max(0, y0 - m)
    bw, bh = min(W, x1 + m) - bx, min(H, y1 + m) - by
    runs = _columns(row)
    widths = [b[0] - a[1] for a, b in zip(runs, runs[1:])]
    typical = float(np.median(widths)) if len(widths) >= 3 else 0.0
    gaps = [
        (a[1] + b[0]) / 2 - bx
        for (a, b), g in zip(zip(runs, runs[1:]), widths)
        if g > WORD_GAP * med and g >= WORD_GAP_RATIO * typical
    ]
    return TextLine((bx, by, bw, bh), med, gaps, len(runs))


def line_around(image: np.ndarray, box: Sequence[int]) -> tuple[int, int, int, int] | None:
    """The whole text line that the text in ``box`` is a piece of, as a box of ``image``;
    ``None`` when ``box`` holds no text or already holds its whole line.

    Why: a segmenter may cut a label at its word gaps (``End`` and ``Turn`` of one
    button), and a piece read alone names the control by half its text. The line is
    followed on the screen with the same glyph rules that find a line in a crop: along
    the box's rows, glyphs of the row's height closer than ``LINE_GAP`` × their height
    belong to one text. The strip around the box widens until the line ends inside it.
    """
    x, y, w, h = (int(v) for v in box)
    H, W = image.shape[:2]
    if w <= 0 or h < MIN_GLYPH_H:
        return None
    y0, y1 = _band(y, h, H)
    reach = 4 * h
    while True:
        x0, x1 = max(0, x - reach), min(W, x + w + reach)  # rows y0:y1 only (LineCache)
        strip = image[y0:y1, x0:x1]
        gray = (
            cv2.cvtColor(np.ascontiguousarray(strip[..., :3]), cv2.COLOR_RGB2GRAY)
            if strip.ndim == 3
            else np.ascontiguousarray(strip)
        )
        rows = [r for r in _rows(_glyphs(gray)) if _is_text(r)]
        bx0, bx1 = x - x0, x + w - x0
        ink = [_ink_between(r, bx0, bx1) for r in rows]  # each row's ink inside the box
        if not ink or max(ink) == 0:
            return None
        best = rows[int(np.argmax(ink))]
        lx0 = min(g[0] for g in best)
        lx1 = max(g[0] + g[2] for g in best)
        med = float(np.median([g[3] for g in best]))
        open_left = x0 > 0 and lx0 <= LINE_GAP * med
        open_right = x1 < W and lx1 >= (x1 - x0) - LINE_GAP * med
        if (open_left or open_right) and reach < W:
            reach *= 2  # the line may go on past the strip: look further
            continue
        break
    if lx0 >= bx0 - med / 2 and lx1 <= bx1 + med / 2:
        return None  # the box holds its whole line
    ly0 = min(g[1] for g in best)
    ly1 = max(g[1] + g[3] for g in best)
    m = int(round(LINE_MARGIN * med)) + 1
    left, top = max(0, x0 + lx0 - m), max(0, y0 + ly0 - m)
    right, bottom = min(W, x0 + lx1 + m), min(H, y0 + ly1 + m)
    return (left, top, right - left, bottom - top)


def _band(y: int, h: int, height: int) -> tuple[int, int]:
    """The screen rows :func:`line_around` looks at for a box at ``y`` of height ``h``."""
    pad = max(2, int(round(LINE_MARGIN * h)))
    return max(0, y - pad), min(height, y + h + pad)


def _ink_between(row: list[tuple[int, int, int, int]], x0: int, x1: int) -> int:
    return sum(max(0, min(g[0] + g[2], x1) - max(g[0], x0)) for g in row)


class LineCache:
    """:func:`line_around`, remembered: a labelled control is read again on every screen
    that shows it, and following its line costs about a millisecond. The answer depends
    only on the band of screen rows around the box, so the band's content is the key."""

    def __init__(self, size: int = 4096) -> None:
        self.size = max(1, size)
        self._cache: OrderedDict[bytes, tuple[int, int, int, int] | None] = OrderedDict()

    def around(self, image: np.ndarray, box: Sequence[int]) -> tuple[int, int, int, int] | None:
        x, y, w, h = (int(v) for v in box)
        y0, y1 = _band(y, h, image.shape[0])
        band = image[y0:y1]
        d = hashlib.blake2b(digest_size=16)
        d.update(repr((x, y, w, h, image.shape)).encode())
        d.update(np.ascontiguousarray(band).tobytes())
        key = d.digest()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        found = line_around(image, box)
        self._cache[key] = found
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return found


def _is_text(row: list[tuple[int, int, int, int]]) -> bool:
    """At least two glyphs side by side, or one glyph as wide as a word (touching letters)."""
    runs = _columns(row)
    if len(runs) >= 2:
        return True
    x0, x1 = runs[0]
    h = max(g[3] for g in row)
    return x1 - x0 >= MIN_WORD_ASPECT * h
