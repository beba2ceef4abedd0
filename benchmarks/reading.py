"""Reading benchmark: what reading costs per step, which skills get readable names, and
how often an object is found again by its text when its crop no longer matches.

Three parts (each can be skipped):

* ``runs`` — the full agent (offline brain, pixel encoder, OpenCV segmenter) on the
  built-in games, ``--steps`` steps per seed, with the reader on, and (``--paired``) the
  same seeds with it off. Per step: the time spent reading (recognition, and segmenting
  screens only to read them; ``Observer.reading_s``), p50 and p95. Per run: the share of
  stored skills whose name contains a label read from the screen (a quoted string) and
  whether those labels are right. The truth is the text the games draw (every call of
  ``kgagent.envs.render.text``, recorded by this harness): a label is *right* when it is
  one drawn string (compared by ``label_key``), *part* when it is a piece of one (the
  segmenter cut a word off), else *wrong*. The loop gives the brain the text of
  the screens its ``label_roles`` see (``View.labels``); ``--brain-labels`` adds it to
  ``describe_skill`` for any brain.
* ``grounding`` — synthetic screens drawn with the games' renderer: a panel of labelled
  buttons is registered (segmented, read, stored in a fresh memory), then the same buttons
  are drawn moved (shuffled into a list), resized (0.8–1.25), re-rendered (other fill,
  border and text colour), all three, and with the target button absent. Each stored object
  of each button is grounded by the executor's path with the reader off (crop only) and on
  (crop, then text). Success: the point lies in the target's box; a false ground: a point
  anywhere else, or any point when the target is absent.
* ``rendered`` — the reader alone on words drawn with OpenCV's fonts and Pillow's bundled
  TrueType font at several sizes, light on dark and dark on light: exact reads (by
  ``label_key``), misses and wrong reads, ms per line.
* ``shapes`` (only when named) — the recogniser's input shape on words with double
  letters: RapidOCR's default (48 px high, padded to 320 px), 48 px padded to 96, 32 px.

    python benchmarks/reading.py                       # runs (1 seed) + grounding + rendered
    python benchmarks/reading.py --parts shapes        # the recogniser's input shape
    python benchmarks/reading.py --seeds 10 --paired --parts runs --games cardgame,civgame
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

# benchmarks/ last: its crafter.py is named like the game, which `gym:crafter` imports
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

DEBUG = False
QUOTED = re.compile(r'"([^"]+)"')
WORDS = (
    "Open", "Close", "Save", "Load", "Next", "Back", "Cancel", "Apply", "Help", "Options",
    "Start game", "Quit", "Continue", "Settings", "Accept", "Decline", "Buy", "Sell", "Upgrade",
    "Attack", "Defend", "Build", "Explore", "Map", "Inventory", "Skip", "Retry", "Rename",
)  # fmt: skip


def _versions() -> str:
    parts = [f"python {platform.python_version()}"]
    for name in ("numpy", "opencv-python", "rapidocr-onnxruntime", "onnxruntime", "ladybug"):
        try:
            parts.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


# ------------------------------------------------------------------------------ truth
class DrawnText:
    """Every string the built-in games draw (benchmark-only truth: the agent never sees it)."""

    def __init__(self) -> None:
        from kgagent.envs import render

        self.keys: set[str] = set()
        self._render = render
        self._orig = render.text

    def __enter__(self) -> DrawnText:
        from kgagent.records import label_key

        orig, keys = self._orig, self.keys

        def text(img, s, *a, **k):  # noqa: ANN001, ANN002, ANN003 - same signature as render.text
            if s:
                keys.add(label_key(str(s)))
            return orig(img, s, *a, **k)

        self._render.text = text
        return self

    def __exit__(self, *exc: object) -> None:
        self._render.text = self._orig

    def judge(self, label: str) -> str:
        from kgagent.records import label_key

        k = label_key(label)
        if k in self.keys:
            return "right"
        if len(k) >= 2 and any(k in d for d in self.keys):
            return "part"
        return "wrong"


# ------------------------------------------------------------------------------ runs
def one_run(
    game: str,
    seed: int,
    steps: int,
    reader: bool,
    brain_labels: bool,
    text_progress: bool = False,
    sets: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One fresh-memory run; the harness watches the observer's reading time per step."""
    import kgagent.agent.observation as observation
    from kgagent.agent.loop import Agent
    from kgagent.agent.runner import Runner
    from kgagent.brain.offline import OfflineBrain
    from kgagent.config import Config
    from kgagent.memory import Memory
    from kgagent.perception.reader import NoReader

    cfg = Config.load(
        None,
        [
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
            f"run.env={game}",
            f"run.seed={seed}",
            *sets,
        ],
    )
    observers: list[Any] = []
    per_step: list[float] = []
    ocr_step: list[float] = []
    step_s: list[float] = []
    orig_init, orig_step, orig_make = observation.Observer.__init__, Agent.step, None

    def init(self, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if not reader:
            k["reader"] = NoReader()
        orig_init(self, *a, **k)
        observers.append(self)

    def step(self, screen):  # noqa: ANN001
        ocr = lambda: getattr(self.observer.reader, "seconds", 0.0)  # noqa: E731
        r0, o0, t0 = self.observer.reading_s, ocr(), time.perf_counter()
        rec = orig_step(self, screen)
        per_step.append(self.observer.reading_s - r0)
        ocr_step.append(ocr() - o0)
        step_s.append(time.perf_counter() - t0)
        return rec

    if text_progress:
        cfg.brain.offline_text_progress = True  # experimental, off by default
    brain = OfflineBrain(cfg.brain, seed=seed)
    if brain_labels or text_progress:
        roles = ("describe_skill", "evaluate") if text_progress else ("describe_skill",)
        orig_make = _label_views(brain, observers, roles)
    observation.Observer.__init__, Agent.step = init, step
    memory = tempfile.mkdtemp(prefix=f"kgagent-reading-{game}-{seed}-")
    try:
        with DrawnText() as drawn:
            t0 = time.perf_counter()
            s = Runner(
                cfg, memory_path=memory, brain=brain, progress=False, log=lambda m: None
            ).run(steps)
            wall = time.perf_counter() - t0
    finally:
        observation.Observer.__init__, Agent.step = orig_init, orig_step
        if orig_make is not None:
            orig_make()
    mem = Memory.open(memory, cfg)
    try:
        skills = mem.skills()
        objects = list(mem._objects.values())  # noqa: SLF001 - a benchmark may look inside
    finally:
        mem.close()
    verdicts: Counter[str] = Counter()
    named = 0
    for k in skills:
        labels = QUOTED.findall(k.name)
        named += bool(labels)
        for lab in labels:
            verdicts[drawn.judge(lab)] += 1
    obs = observers[0] if observers else None
    return {
        "game": game,
        "seed": seed,
        "reader": reader,
        "text_progress": text_progress,
        "progression": s.progression,
        "skills": len(skills),
        "named": named,
        "labels": dict(verdicts),
        "objects": len(objects),
        "labelled_objects": sum(1 for o in objects if o.label),
        "lines": getattr(getattr(obs, "reader", None), "lines", 0),
        "reading_ms": [1000 * x for x in per_step],
        "ocr_ms": [1000 * x for x in ocr_step],
        "step_ms": [1000 * x for x in step_s],
        "wall_s": wall,
        "names": [k.name for k in skills],
    }


def _label_views(brain: Any, observers: list[Any], roles: tuple[str, ...]) -> Any:
    """Give the brain the text of the screens it judges in ``roles``, as ``View.labels``
    (the loop's job once ``View`` has the field): naming needs it for describe_skill."""
    originals = {n: getattr(brain, n) for n in roles}

    def wrap(fn):  # noqa: ANN001, ANN202
        def call(first, tr):  # noqa: ANN001, ANN202
            if observers:
                ob = observers[0]
                tr.before.labels = tuple(ob.labels(tr.before.image))
                tr.after.labels = tuple(ob.labels(tr.after.image))
            return fn(first, tr)

        return call

    for n, fn in originals.items():
        setattr(brain, n, wrap(fn))

    def restore() -> None:
        for n, fn in originals.items():
            setattr(brain, n, fn)

    return restore


def runs_report(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| game | reader | seeds | progression | skills | named from text | labels right / part / wrong | objects (labelled) | OCR lines | reading ms/step p50 / p95 / mean | of which recognition p50 / p95 / mean | step ms p50 |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for game in sorted({r["game"] for r in rows}):
        for arm in ARMS:
            rs = [r for r in rows if r["game"] == game and _arm(r) == arm]
            if not rs:
                continue
            reading = [x for r in rs for x in r["reading_ms"]]
            ocr = [x for r in rs for x in r["ocr_ms"]]
            steps = [x for r in rs for x in r["step_ms"]]
            skills = sum(r["skills"] for r in rs)
            named = sum(r["named"] for r in rs)
            v: Counter[str] = Counter()
            for r in rs:
                v.update(r["labels"])
            prog = [r["progression"] for r in rs]
            out.append(
                f"| {game} | {arm} | {len(rs)} | "
                f"{statistics.fmean(prog):.2f} | {skills} | "
                f"{named} ({100 * named / max(1, skills):.0f} %) | "
                f"{v['right']} / {v['part']} / {v['wrong']} | "
                f"{sum(r['objects'] for r in rs)} ({sum(r['labelled_objects'] for r in rs)}) | "
                f"{sum(r['lines'] for r in rs)} | "
                f"{_pct(reading, 50):.1f} / {_pct(reading, 95):.1f} / "
                f"{statistics.fmean(reading) if reading else float('nan'):.1f} | "
                f"{_pct(ocr, 50):.1f} / {_pct(ocr, 95):.1f} / "
                f"{statistics.fmean(ocr) if ocr else float('nan'):.1f} | "
                f"{_pct(steps, 50):.0f} |"
            )
    paired = _paired(rows)
    return out + paired


ARMS = ("ocr", "none", "ocr + text progress")


def _arm(r: dict[str, Any]) -> str:
    if not r["reader"]:
        return "none"
    return "ocr + text progress" if r.get("text_progress") else "ocr"


def _paired(rows: list[dict[str, Any]]) -> list[str]:
    from kgagent.bench.stats import paired_t

    out = []
    for game in sorted({r["game"] for r in rows}):
        by = {
            arm: {r["seed"]: r["progression"] for r in rows if r["game"] == game and _arm(r) == arm}
            for arm in ARMS
        }
        for a, b, what in (
            ("none", "ocr", "with − without the reader"),
            ("ocr", "ocr + text progress", "with − without the text-progress signal"),
        ):
            seeds = sorted(set(by[a]) & set(by[b]))
            if not seeds:
                continue
            test = paired_t([by[b][s] for s in seeds], [by[a][s] for s in seeds])
            out.append(
                f"- {game}: progression {what}, paired by seed ({len(seeds)} seeds): "
                f"{test.text()}; per seed " + " ".join(f"{by[a][s]:g}→{by[b][s]:g}" for s in seeds)
            )
    return out


# ------------------------------------------------------------------------------ grounding
def _panel(labels: list[str], boxes: list[tuple[int, int, int, int]], style: int, scale: float):
    from kgagent.envs import render as R

    img = R.vgradient(1280, 720, (40, 44, 52), (22, 24, 30))
    R.panel(img, (40, 40, 1200, 640), (54, 58, 70), (90, 94, 110), 10)
    fills = [(60, 70, 90), (110, 60, 50), (50, 100, 60), (90, 80, 40)]
    borders = [(200, 200, 210), (240, 200, 120), (160, 230, 160), None]
    texts = [R.WHITE, (250, 240, 200), (230, 250, 230), (20, 20, 20)]
    for label, box in zip(labels, boxes, strict=True):
        fill = fills[style % 4] if style % 4 != 3 else (220, 210, 180)
        R.button(img, box, label, fill, texts[style % 4], borders[style % 4], 0.6 * scale)
    return img


def _layout(
    n: int, rng: np.random.Generator, scale: float, kind: str
) -> list[tuple[int, int, int, int]]:
    w, h = int(round(170 * scale)), int(round(44 * scale))
    if kind == "grid":
        cells = [(80 + c * 280, 80 + r * 100) for r in range(6) for c in range(4)]
    else:  # a list down the middle: the controls moved into a menu
        cells = [(555 - w // 2 + 60 * (i % 2), 70 + i * int(h * 1.3)) for i in range(n)]
    cells = cells[:]
    if kind == "grid":
        rng.shuffle(cells)
    return [(x, y, w, h) for x, y in cells[:n]]


def grounding_bench(trials: int, seed: int) -> dict[str, dict[str, int]]:
    """See the module docstring; returns counts per variant and mode."""
    from kgagent.actions import Operation
    from kgagent.agent.episode import Episode
    from kgagent.agent.executor import to_action
    from kgagent.agent.observation import Observer
    from kgagent.config import Config
    from kgagent.errors import GroundingError
    from kgagent.memory import EncoderSpec, Memory
    from kgagent.perception import OpenCVSegmenter, PixelEncoder
    from kgagent.perception.reader import NoReader, OcrReader

    cfg = Config.load(None, ["perception.encoder=pixel", "perception.segmenter=opencv"])
    rng = np.random.default_rng(seed)
    seg, enc = OpenCVSegmenter(cfg.perception), PixelEncoder(cfg.perception)
    reader = OcrReader()
    variants = ("moved", "resized", "re-rendered", "all three", "absent")
    res: dict[str, dict[str, int]] = {
        f"{v}/{m}/{k}": Counter()
        for k in ("labelled", "no label")
        for v in variants
        for m in ("crop", "crop+text")
    }
    for t in range(trials):
        labels = list(rng.choice(WORDS, size=8, replace=False))
        a_boxes = _layout(8, rng, 1.0, "grid")
        a = _panel(labels, a_boxes, 0, 1.0)
        with tempfile.TemporaryDirectory() as d:
            mem = Memory.open(Path(d) / "m", cfg, encoder=EncoderSpec.of(enc))
            try:
                on = Observer(cfg, mem, enc, seg, Episode(cfg), reader=reader)
                off = Observer(cfg, mem, enc, seg, Episode(cfg), reader=NoReader())
                objs = on.segment(a)
                for v in variants:
                    scale = (
                        float(rng.choice([0.8, 0.9, 1.1, 1.25]))
                        if v in ("resized", "all three")
                        else 1.0
                    )
                    style = int(rng.integers(1, 4)) if v in ("re-rendered", "all three") else 0
                    kind = "list" if v in ("moved", "all three", "absent") else "grid"
                    order = list(rng.permutation(8))
                    b_labels = [labels[i] for i in order]
                    if v == "resized":  # same places, another size
                        b_boxes = [
                            (a_boxes[i][0], a_boxes[i][1], int(170 * scale), int(44 * scale))
                            for i in order
                        ]
                    else:
                        b_boxes = _layout(8, rng, scale, kind)
                    gone = int(rng.integers(8)) if v == "absent" else -1
                    shown = [
                        (lab, box)
                        for j, (lab, box) in enumerate(zip(b_labels, b_boxes))
                        if j != gone
                    ]
                    b = _panel([x[0] for x in shown], [x[1] for x in shown], style, scale)
                    where = dict(shown)
                    for o in objs:
                        owner = _owner(o.bbox, labels, a_boxes)
                        if owner is None:
                            continue
                        target = where.get(owner)
                        for mode, ob in (("crop", off), ("crop+text", on)):
                            c = res[f"{v}/{mode}/{'labelled' if o.label else 'no label'}"]
                            c["objects"] += 1
                            c["labelled"] += bool(o.label)
                            try:
                                act, gs = to_action(Operation("click", object_id=o.id), b, ob, cfg)
                                pt = (act.x, act.y)
                            except GroundingError:
                                pt, gs = None, []
                            if (
                                DEBUG
                                and mode == "crop+text"
                                and pt is not None
                                and (target is None or not _inside(pt, target))
                            ):
                                print(
                                    "false",
                                    v,
                                    o.name,
                                    o.bbox,
                                    owner,
                                    target,
                                    pt,
                                    gs,
                                    file=sys.stderr,
                                )
                            if target is None:
                                c["absent"] += 1
                                c["absent_false"] += pt is not None
                            elif pt is None:
                                c["missed"] += 1
                            elif _inside(pt, target):
                                c["found"] += 1
                            else:
                                c["false"] += 1
            finally:
                mem.close()
        print(f"grounding: trial {t + 1}/{trials}", file=sys.stderr)
    return {k: dict(v) for k, v in res.items()}


def _inside(pt: tuple[int, int], box: tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return x <= pt[0] < x + w and y <= pt[1] < y + h


def _owner(
    bbox: tuple[int, int, int, int], labels: list[str], boxes: list[tuple[int, int, int, int]]
) -> str | None:
    cx, cy = bbox[0] + bbox[2] / 2, bbox[1] + bbox[3] / 2
    for lab, box in zip(labels, boxes, strict=True):
        if _inside((int(cx), int(cy)), box):
            return lab
    return None


def grounding_report(res: dict[str, dict[str, int]]) -> list[str]:
    out = ["| objects | screen B | grounding | objects | found in target | missed | false grounds |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for key, c in res.items():
        v, mode, kind = key.split("/")
        if not c:
            continue
        present = c.get("objects", 0) - c.get("absent", 0)
        if v == "absent":
            n, bad = c.get("absent", 0), c.get("absent_false", 0)
            out.append(
                f"| {kind} | {v}: the target | {mode} | {n} | – | {n - bad} said absent | {bad} |"
            )
            v = "absent: the others"
        out.append(
            f"| {kind} | {v} | {mode} | {present} | "
            f"{c.get('found', 0)} ({100 * c.get('found', 0) / max(1, present):.1f} %) | "
            f"{c.get('missed', 0)} | {c.get('false', 0)} |"
        )
    return out


# ------------------------------------------------------------------------------ rendered
def rendered_bench() -> list[str]:
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    from kgagent.envs import render as R
    from kgagent.perception.reader import OcrReader
    from kgagent.records import label_key

    dark, light = (60, 70, 90), (235, 225, 200)

    def cv2_crop(word: str, font: int, scale: float, i: int) -> np.ndarray:
        tw, th = R.text_size(word, scale, 1, font)
        img = R.canvas(tw + 40, th + 30, dark if i % 2 == 0 else light)
        R.text(img, word, 20, (th + 30) // 2, scale, light if i % 2 == 0 else dark, 1, "lm", font)
        return img

    def pil_crop(word: str, size: int, i: int) -> np.ndarray:
        font = ImageFont.load_default(size=size)  # Pillow's bundled TrueType font
        x0, y0, x1, y1 = font.getbbox(word)
        img = Image.new("RGB", (x1 - x0 + 40, y1 - y0 + 24), dark if i % 2 == 0 else light)
        ink = light if i % 2 == 0 else dark
        ImageDraw.Draw(img).text((20 - x0, 12 - y0), word, font=font, fill=ink)
        return np.asarray(img).copy()

    cases: list[tuple[str, str, Any]] = []
    for fname, font in (
        ("OpenCV duplex", cv2.FONT_HERSHEY_DUPLEX),
        ("OpenCV simplex", cv2.FONT_HERSHEY_SIMPLEX),
        ("OpenCV complex", cv2.FONT_HERSHEY_COMPLEX),
        ("OpenCV triplex", cv2.FONT_HERSHEY_TRIPLEX),
    ):
        for scale in (0.45, 0.6, 0.8, 1.1):
            cases.append(
                (fname, f"scale {scale}", lambda w, i, f=font, s=scale: cv2_crop(w, f, s, i))
            )
    for size in (11, 14, 18, 28):
        cases.append(("Pillow Aileron", f"{size} px", lambda w, i, s=size: pil_crop(w, s, i)))
    out = ["| font | size | words | exact | missed | wrong |", "|---|---|---|---|---|---|"]
    reader = OcrReader()
    wrong_reads: list[str] = []
    for fname, size, draw in cases:
        crops = [draw(w, i) for i, w in enumerate(WORDS)]
        got = reader.read(crops)
        exact = sum(label_key(g.text) == label_key(t) for g, t in zip(got, WORDS))
        missed = sum(not g.text for g in got)
        wrong_reads += [
            f"{t!r}→{g.text!r}"
            for g, t in zip(got, WORDS)
            if g.text and label_key(g.text) != label_key(t)
        ]
        out.append(
            f"| {fname} | {size} | {len(WORDS)} | {exact} | {missed} | {len(WORDS) - exact - missed} |"
        )
    ms = 1000 * reader.seconds / max(1, reader.lines)
    out.append(f"\nwrong reads: {', '.join(wrong_reads) or 'none'}")
    out.append(
        f"{reader.lines} lines recognised in {reader.calls} batches of {len(WORDS)} crops, "
        f"{ms:.1f} ms per line (finding the line included)"
    )
    return out


DOUBLE = (
    "Settings", "Apply", "Warrior", "Skill", "Cancel", "Attack", "Bulletin", "Coffee", "Success",
    "Off", "Add", "Letter", "Balloon", "Hello", "Free", "Open", "Close", "Next page", "Quit", "Keep",
)  # fmt: skip


def shapes_bench() -> list[str]:
    """The recogniser's input shape: exact reads and cost per line on words with double
    letters (which CTC decoding collapses when a letter gets too few frames)."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    from kgagent.perception import reader as rd
    from kgagent.records import label_key

    crops, truth = [], []
    for font, scale in (
        (cv2.FONT_HERSHEY_DUPLEX, 0.45),
        (cv2.FONT_HERSHEY_DUPLEX, 0.5),
        (cv2.FONT_HERSHEY_SIMPLEX, 0.6),
        (cv2.FONT_HERSHEY_COMPLEX, 0.5),
        (cv2.FONT_HERSHEY_TRIPLEX, 0.8),
    ):
        for i, w in enumerate(DOUBLE):
            (tw, th), base = cv2.getTextSize(w, font, scale, 1)
            img = np.full(
                (th + base + 24, tw + 40, 3), (60, 70, 90) if i % 2 else (235, 225, 200), np.uint8
            )
            ink = (235, 225, 200) if i % 2 else (60, 70, 90)
            cv2.putText(img, w, (20, th + 12), font, scale, ink, 1, cv2.LINE_AA)
            crops.append(img)
            truth.append(w)
    for size in (12, 14, 16, 24):
        for w in DOUBLE:
            f = ImageFont.load_default(size=size)
            x0, y0, x1, y1 = f.getbbox(w)
            im = Image.new("RGB", (x1 - x0 + 40, y1 - y0 + 24), (60, 70, 90))
            ImageDraw.Draw(im).text((20 - x0, 12 - y0), w, font=f, fill=(235, 225, 200))
            crops.append(np.asarray(im).copy())
            truth.append(w)
    out = [
        "| input (c, h, min w) | exact | missed | wrong | ms per line |",
        "|---|---|---|---|---|",
    ]
    default = rd.REC_SHAPE
    try:
        for shape in ((3, 32, 96), (3, 48, 96), (3, 48, 320)):
            rd.REC_SHAPE = shape
            r = rd.OcrReader()
            r.read(crops[:1])  # load the model outside the timing
            r._cache.clear()  # noqa: SLF001
            r.seconds, r.lines = 0.0, 0
            got = r.read(crops)
            exact = sum(label_key(g.text) == label_key(t) for g, t in zip(got, truth))
            missed = sum(not g.text for g in got)
            ms = 1000 * r.seconds / max(1, r.lines)
            out.append(
                f"| {shape} | {exact} / {len(truth)} | {missed} | {len(truth) - exact - missed} | {ms:.1f} |"
            )
    finally:
        rd.REC_SHAPE = default
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="runs,grounding,rendered")
    ap.add_argument("--games", default="cardgame,civgame")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--paired", action="store_true", help="also run each seed with the reader off")
    ap.add_argument("--brain-labels", action="store_true", help="pass screen text to the brain")
    ap.add_argument(
        "--text-progress",
        action="store_true",
        help="pair reader-on runs with runs that use the offline brain's text-progress signal",
    )
    ap.add_argument(
        "--arms",
        default=None,
        help="runs to play per seed: ocr (reader on), none (off), signal (on + text progress)",
    )
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="runs: a config override for every run, e.g. perception.reader_whole_lines=true",
    )
    ap.add_argument("--trials", type=int, default=10, help="grounding: screens per variant")
    ap.add_argument("--names", action="store_true", help="print every stored skill's name")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    print(f"versions: {_versions()}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores"
    )
    print(f"command: python benchmarks/reading.py {' '.join(sys.argv[1:])}\n")
    if "runs" in parts:
        rows = []
        for game in args.games.split(","):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                names = args.arms.split(",") if args.arms else ["ocr"]
                if args.paired:
                    names.append("none")
                if args.text_progress:
                    names.append("signal")
                known = {"ocr": (True, False), "none": (False, False), "signal": (True, True)}
                arms = [known[n] for n in dict.fromkeys(names)]
                for reader, signal in arms:
                    r = one_run(
                        game, seed, args.steps, reader, args.brain_labels, signal, tuple(args.sets)
                    )
                    rows.append(r)
                    print(
                        f"{game} seed {seed} reader={'ocr' if reader else 'none'}"
                        f"{' text-progress' if signal else ''}: progression "
                        f"{r['progression']}, {r['named']}/{r['skills']} skills named from text, "
                        f"{r['wall_s']:.0f} s",
                        file=sys.stderr,
                    )
                    if args.names and reader:
                        for n in r["names"]:
                            print(f"  {n}", file=sys.stderr)
        print("\n".join(runs_report(rows)) + "\n")
    if "grounding" in parts:
        print("\n".join(grounding_report(grounding_bench(args.trials, args.first_seed))) + "\n")
    if "rendered" in parts:
        print("\n".join(rendered_bench()) + "\n")
    if "shapes" in parts:
        print("\n".join(shapes_bench()))


if __name__ == "__main__":
    main()
