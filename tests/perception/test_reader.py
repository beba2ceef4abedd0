"""The text reader: rendered text of known content is read, non-text is not, and the
reader is switchable, cached and bounded (kgagent.perception.reader, .textline)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from kgagent.config import Config
from kgagent.errors import ConfigError, KGAgentError, WeightsUnavailable
from kgagent.perception import reader as rd
from kgagent.perception import textline as tl
from kgagent.perception.reader import NoReader, OcrReader, Reading, make_reader
from kgagent.perception.textline import text_line
from kgagent.records import control_key, label_key, names_control

WORDS = ["Open", "Close", "Settings", "Cancel", "Next page", "Apply", "Save as", "Quit"]
DARK, LIGHT = (60, 70, 90), (235, 225, 200)


def cv2_word(word: str, font: int, scale: float, dark: bool = True) -> np.ndarray:
    """A button-like crop: the word centred on a flat fill with some margin."""
    (tw, th), base = cv2.getTextSize(word, font, scale, 1)
    img = np.empty((th + base + 24, tw + 40, 3), np.uint8)
    img[:] = DARK if dark else LIGHT
    cv2.putText(img, word, (20, th + 12), font, scale, LIGHT if dark else DARK, 1, cv2.LINE_AA)
    return img


def pil_word(word: str, size: int, dark: bool = True) -> np.ndarray:
    """The same with a TrueType font (Pillow's bundled one): anti-aliased, proportional."""
    font = ImageFont.load_default(size=size)
    x0, y0, x1, y1 = font.getbbox(word)
    img = Image.new("RGB", (x1 - x0 + 40, y1 - y0 + 24), DARK if dark else LIGHT)
    ImageDraw.Draw(img).text((20 - x0, 12 - y0), word, font=font, fill=LIGHT if dark else DARK)
    return np.asarray(img).copy()


@pytest.fixture(scope="module")
def reader() -> OcrReader:
    return OcrReader()


class FakeRecognizer:
    """RapidOCR's recogniser shape: (text, confidence, word-box info) per line image."""

    def __init__(self, text: str = "Fake", conf: float = 0.99) -> None:
        self.text, self.conf = text, conf
        self.lines: list[np.ndarray] = []

    def __call__(self, images, return_word_box=False):  # noqa: ANN001
        self.lines.extend(images)
        return [(self.text, self.conf, [0, [], [], [], []]) for _ in images], 0.0


class FakeEngine:
    def __init__(self, rec: FakeRecognizer) -> None:
        self.text_rec = rec


# ------------------------------------------------------------------ rendered text
@pytest.mark.parametrize(
    ("font", "scale"),
    [
        (cv2.FONT_HERSHEY_DUPLEX, 0.5),
        (cv2.FONT_HERSHEY_DUPLEX, 0.8),
        (cv2.FONT_HERSHEY_SIMPLEX, 0.7),
        (cv2.FONT_HERSHEY_COMPLEX, 0.5),
        (cv2.FONT_HERSHEY_TRIPLEX, 1.0),
    ],
)
def test_rendered_words_in_opencv_fonts_are_read(reader, font, scale):
    crops = [cv2_word(w, font, scale, dark=i % 2 == 0) for i, w in enumerate(WORDS)]
    got = reader.read(crops)
    exact = [label_key(g.text) == label_key(w) for g, w in zip(got, WORDS, strict=True)]
    # a miss is allowed (one word of eight); a wrong read is not
    assert sum(exact) >= len(WORDS) - 1, [g.text for g in got]
    assert all(e or not g.text for e, g in zip(exact, got, strict=True)), [g.text for g in got]
    assert all(0.0 <= g.confidence <= 1.0 for g in got)


@pytest.mark.parametrize("size", [12, 16, 24, 36])
def test_rendered_words_in_a_truetype_font_are_read(reader, size):
    crops = [pil_word(w, size, dark=i % 2 == 1) for i, w in enumerate(WORDS)]
    got = reader.read(crops)
    exact = [label_key(g.text) == label_key(w) for g, w in zip(got, WORDS, strict=True)]
    assert sum(exact) >= len(WORDS) - 1, [g.text for g in got]
    assert all(e or not g.text for e, g in zip(exact, got, strict=True)), [g.text for g in got]


def test_the_most_prominent_line_is_read_a_title_over_its_body(reader):
    img = np.full((120, 220, 3), 40, np.uint8)
    cv2.putText(img, "Options", (20, 35), cv2.FONT_HERSHEY_DUPLEX, 0.9, (240, 240, 240), 1)
    for i, line in enumerate(["change how the", "screen looks"]):
        y = 70 + 22 * i
        cv2.putText(img, line, (20, y), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (200, 200, 200), 1)
    cv2.circle(img, (190, 90), 14, (200, 80, 60), -1)  # a filled icon is not text
    assert label_key(reader.read([img])[0].text) == "options"


def test_words_of_a_line_keep_their_spaces(reader):
    got = reader.read([cv2_word("Next page", cv2.FONT_HERSHEY_DUPLEX, 0.9)])[0]
    assert got.text == "Next page"


# ------------------------------------------------------------------ no text
def _no_text() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    flat = np.full((40, 120, 3), 90, np.uint8)
    grad = np.repeat(np.linspace(0, 255, 120, dtype=np.uint8)[None, :, None], 40, 0).repeat(3, 2)
    icon = np.full((64, 64, 3), 30, np.uint8)
    cv2.circle(icon, (32, 32), 20, (220, 60, 60), -1)
    tri = np.full((60, 60, 3), (60, 120, 60), np.uint8)
    cv2.fillPoly(tri, [np.array([(30, 8), (52, 50), (8, 50)], np.int32)], (30, 80, 30))
    frame = np.full((50, 160, 3), 40, np.uint8)
    cv2.rectangle(frame, (2, 2), (157, 47), (200, 200, 200), 2)
    hexes = np.full((69, 59, 3), (110, 140, 70), np.uint8)
    for cx in (0, 59):
        for cy in (0, 69):
            cv2.circle(hexes, (cx, cy), 22, (80, 100, 50), -1)
    tiny = np.full((4, 30, 3), 200, np.uint8)
    noise = rng.integers(0, 255, (30, 30, 3), dtype=np.uint8)
    return [flat, grad, icon, tri, frame, hexes, tiny, noise]


def test_crops_without_text_are_not_sent_to_the_recogniser():
    rec = FakeRecognizer()
    r = OcrReader(engine=FakeEngine(rec))
    crops = _no_text()[:6] + [_no_text()[6]]
    assert [text_line(c) for c in crops] == [None] * len(crops)
    assert r.read(crops) == [Reading()] * len(crops)
    assert rec.lines == [] and r.calls == 0  # no recognition at all


def test_no_text_reads_as_nothing_with_the_real_model(reader):
    got = reader.read(_no_text())
    assert [g.text for g in got] == [""] * len(got)


def test_a_low_confidence_or_a_reading_without_letters_or_digits_is_nothing():
    low = OcrReader(engine=FakeEngine(FakeRecognizer("Open", 0.5)))
    assert low.read([cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)]) == [Reading()]
    marks = OcrReader(engine=FakeEngine(FakeRecognizer("--·", 0.99)))
    assert marks.read([cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)]) == [Reading()]
    floor = OcrReader(
        rd.ReaderSettings(min_confidence=0.4), engine=FakeEngine(FakeRecognizer("Open", 0.5))
    )
    assert floor.read([cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)])[0].text == "Open"


def test_readings_are_cached_by_content_and_batched():
    rec = FakeRecognizer()
    r = OcrReader(rd.ReaderSettings(cache=2), engine=FakeEngine(rec))
    a = cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)
    b = cv2_word("Close", cv2.FONT_HERSHEY_DUPLEX, 0.8)
    c = cv2_word("Apply", cv2.FONT_HERSHEY_DUPLEX, 0.8)
    r.read([a, b])
    assert r.calls == 1 and len(rec.lines) == 2  # one batch for both
    r.read([a.copy(), b])  # same content, another array: cached
    assert r.calls == 1
    r.read([c])  # the cache holds two: a is dropped
    r.read([a])
    assert r.calls == 3 and len(rec.lines) == 4


def test_a_long_label_is_cut():
    r = OcrReader(engine=FakeEngine(FakeRecognizer("x" * 200)))
    got = r.read([cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)])[0].text
    assert len(got) == rd.MAX_LABEL_CHARS and got.endswith("…")


# ------------------------------------------------------------------ switching
def test_make_reader_modes(monkeypatch):
    cfg = Config().perception
    logs: list[str] = []
    assert isinstance(make_reader(cfg, log=logs.append), (OcrReader, NoReader))
    monkeypatch.setattr(cfg, "reader", "none", raising=False)
    assert isinstance(make_reader(cfg, log=logs.append), NoReader)
    monkeypatch.setattr(cfg, "reader", "ocr", raising=False)
    assert isinstance(make_reader(cfg, log=logs.append), OcrReader)
    monkeypatch.setattr(cfg, "reader", "easyocr", raising=False)
    with pytest.raises(ConfigError, match="perception.reader='easyocr'"):
        make_reader(cfg, log=logs.append)
    assert logs == []


def test_a_missing_package_is_one_line_only_when_ocr_was_asked_for(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_rapidocr(name, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if name.startswith("rapidocr_onnxruntime"):
            raise ImportError("No module named 'rapidocr_onnxruntime'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_rapidocr)
    cfg = Config().perception
    logs: list[str] = []
    monkeypatch.setattr(cfg, "reader", "auto", raising=False)
    assert isinstance(make_reader(cfg, log=logs.append), NoReader)
    assert len(logs) == 1 and "rapidocr-onnxruntime" in logs[0] and "\n" not in logs[0]
    monkeypatch.setattr(cfg, "reader", "ocr", raising=False)
    with pytest.raises(WeightsUnavailable) as info:
        make_reader(cfg, log=logs.append)
    assert isinstance(info.value, KGAgentError) and "\n" not in str(info.value)
    assert "perception.reader=none" in str(info.value)


def test_no_reader_reads_nothing():
    crops = [cv2_word("Open", cv2.FONT_HERSHEY_DUPLEX, 0.8)]
    assert NoReader().read(crops) == [Reading()]


# ------------------------------------------------------------------ label keys
def test_label_keys():
    assert label_key("Deck  （10）") == label_key("deck(10)") == "deck(10)"
    assert control_key("Level 12") == control_key("level 3") == "level"
    assert control_key("Save") != control_key("Sell")
    assert names_control("Go") and not names_control("12/80") and not names_control("x2")


# ------------------------------------------------------------------ whole lines
def test_a_piece_of_a_label_finds_its_whole_line_and_neighbours_stay_apart():
    from kgagent.envs import render as R

    img = R.canvas(640, 240)
    R.button(img, (40, 40, 180, 44), "End turn")
    R.button(img, (240, 40, 120, 44), "Yes")
    R.button(img, (370, 40, 120, 44), "No")
    R.button(img, (40, 120, 300, 44), "Start new game")
    (tw, th), _ = cv2.getTextSize("End turn", R.FONT, 0.6, 1)
    (ew, _), _ = cv2.getTextSize("End", R.FONT, 0.6, 1)
    left = 40 + (180 - tw) // 2  # the label's ink starts about here
    piece = (left - 2, 62 - th // 2 - 2, ew + 4, th + 4)  # the box of "End" alone
    box = tl.line_around(img, piece)
    assert box is not None
    x, y, w, h = box
    assert x <= piece[0] and x + w >= left + tw - 2  # the whole "End turn"
    assert x > 40 and x + w < 220  # not past its button
    # A box that holds its whole line, a box without text, and buttons side by side.
    assert tl.line_around(img, (left - 4, 62 - th // 2 - 4, tw + 8, th + 8)) is None
    assert tl.line_around(img, (560, 180, 40, 30)) is None
    (yw, yh), _ = cv2.getTextSize("Yes", R.FONT, 0.6, 1)
    yes = (240 + (120 - yw) // 2 - 2, 62 - yh // 2 - 2, yw + 4, yh + 4)
    assert tl.line_around(img, yes) is None


def test_the_line_cache_answers_by_the_band_of_rows_around_the_box(monkeypatch):
    img = np.zeros((100, 300, 3), np.uint8)
    calls = []
    monkeypatch.setattr(tl, "line_around", lambda image, box: calls.append(box) or (1, 2, 3, 4))
    cache = tl.LineCache(8)
    assert cache.around(img, (10, 40, 30, 12)) == (1, 2, 3, 4)
    img[90:, :] = 255  # outside the band: the same answer, not computed again
    assert cache.around(img, (10, 40, 30, 12)) == (1, 2, 3, 4) and len(calls) == 1
    img[45, 200] = 255  # inside the band, far from the box: computed again
    cache.around(img, (10, 40, 30, 12))
    assert len(calls) == 2
