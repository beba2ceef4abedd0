"""The live page's picture: a screen with the step's actions drawn on it.

The screen is the one the agent acted on. When the run was recorded
(``kgagent play --record``), that is the screenshot saved after the previous
step, at full size; otherwise it is the thumbnail the memory keeps of the state
the step started from, enlarged. The page says which.

Action coordinates are in the target's pixels. A recording has that size; a
thumbnail is scaled by the screen size the log header records, or else by the
largest extent seen among the step's actions and the state's objects, which can
only be too small: the page then says positions are approximate.
"""

from __future__ import annotations

import io
from typing import Any

from PIL import Image, ImageDraw, ImageFont

WIDTH = 960  # width of the picture the page shows
RING = (230, 25, 75)  # action marks: a red a reader finds on any screen
HALO = (255, 255, 255)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def actions_of(step: dict[str, Any], index: int = -1) -> list[dict[str, Any]]:
    """The concrete actions of one execution of a step (default: its last), in order."""
    execs = step.get("executions") or []
    if execs:
        grounding = execs[index if -len(execs) <= index < len(execs) else -1].get("grounding") or []
    else:
        grounding = step.get("grounding") or []
    out = []
    for g in grounding:
        a = g.get("action") if isinstance(g, dict) else None
        if isinstance(a, dict) and a.get("kind"):
            out.append(a)
    return out


def extent(actions: list[dict[str, Any]], boxes: list[list[int]]) -> tuple[int, int]:
    """The smallest screen that holds every action point and object box seen."""
    w = h = 1
    for a in actions:
        for kx, ky in (("x", "y"), ("x2", "y2")):
            if a.get(kx) is not None and a.get(ky) is not None:
                w, h = max(w, int(a[kx]) + 1), max(h, int(a[ky]) + 1)
    for x, y, bw, bh in boxes:
        w, h = max(w, x + bw), max(h, y + bh)
    return w, h


def compose(
    image_png: bytes,
    actions: list[dict[str, Any]],
    screen: tuple[int, int] | None,
    *,
    width: int = WIDTH,
) -> bytes:
    """The PNG the live page shows: ``image_png`` resized to ``width``, actions drawn on it.

    ``screen`` is the target's (width, height) that the action coordinates refer to;
    None means the image itself has the target's size.
    """
    with Image.open(io.BytesIO(image_png)) as im:
        base = im.convert("RGB")
    sw, sh = screen or base.size
    height = max(1, round(width * base.height / max(base.width, 1)))
    out = base.resize((width, height), Image.Resampling.LANCZOS)
    sx, sy = width / max(sw, 1), height / max(sh, 1)
    draw = ImageDraw.Draw(out)
    font = _font(max(12, width // 60))
    r = max(10, width // 55)
    keys: list[str] = []
    for n, a in enumerate(actions, 1):
        kind = a.get("kind")
        if a.get("x") is not None and a.get("y") is not None:
            x, y = a["x"] * sx, a["y"] * sy
            if kind == "drag" and a.get("x2") is not None and a.get("y2") is not None:
                _arrow(draw, (x, y), (a["x2"] * sx, a["y2"] * sy), r)
            elif kind == "scroll":
                up = int(a.get("scroll", 0)) > 0
                _arrow(draw, (x, y), (x, y + (-3 if up else 3) * r), r)
            _ring(draw, x, y, r, double=kind == "double_click")
            tx = min(
                x + r * 0.8, width - getattr(font, "size", 12) - 8
            )  # keep the number inside the picture
            ty = y - r * 1.9 if y - r * 1.9 > 6 else y + r * 1.2
            _tag(draw, (tx, ty), str(n), font)
        elif kind in ("key", "hotkey"):
            keys.append(f"{n}. {kind} {a.get('key')}")
        elif kind == "type":
            keys.append(f"{n}. type {str(a.get('text'))[:40]!r}")
    if keys:
        _tag(
            draw,
            (8, height - 8 - (getattr(font, "size", 12) + 8) * len(keys)),
            "\n".join(keys),
            font,
        )
    buf = io.BytesIO()
    out.save(buf, format="PNG", compress_level=1)  # fast: a new picture every second
    return buf.getvalue()


def _ring(draw: ImageDraw.ImageDraw, x: float, y: float, r: float, *, double: bool) -> None:
    for rr, colour, w in ((r + 2, HALO, 6), (r, RING, 3)):
        draw.ellipse((x - rr, y - rr, x + rr, y + rr), outline=colour, width=w)
    if double:
        draw.ellipse((x - r * 1.5, y - r * 1.5, x + r * 1.5, y + r * 1.5), outline=RING, width=2)
    draw.ellipse((x - 3, y - 3, x + 3, y + 3), fill=RING, outline=HALO)


def _arrow(
    draw: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float], r: float
) -> None:
    import math

    for colour, w in ((HALO, 7), (RING, 3)):
        draw.line([a, b], fill=colour, width=w)
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    head = [
        b,
        (b[0] - r * math.cos(ang - 0.45), b[1] - r * math.sin(ang - 0.45)),
        (b[0] - r * math.cos(ang + 0.45), b[1] - r * math.sin(ang + 0.45)),
    ]
    draw.polygon(head, fill=RING, outline=HALO)


def _tag(draw: ImageDraw.ImageDraw, at: tuple[float, float], text: str, font: Any) -> None:
    box = draw.multiline_textbbox(at, text, font=font)
    pad = 4
    draw.rounded_rectangle(
        (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad), radius=4, fill=(20, 20, 20)
    )
    draw.multiline_text(at, text, fill=(255, 255, 255), font=font)
