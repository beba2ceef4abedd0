"""Reading: the text a UI object shows, as a label for memory, names and grounding.

Without a language model the agent cannot read, so its memory would name objects
``object_88``. A :class:`TextReader` turns object crops into :class:`Reading`\\ s
(text, confidence). Two readers:

* :class:`OcrReader` (``ocr``): RapidOCR's pretrained PP-OCR recogniser (ONNX Runtime,
  CPU; its models ship inside the ``rapidocr-onnxruntime`` wheel). Recognition only,
  on the one text line that matters in each crop, batched, cached by crop content.
* :class:`NoReader` (``none``): reads nothing; every label stays ``""`` and the agent
  behaves as it does without text.

A reader of one's own (``Runner(reader=...)``) is held to :data:`READER_CONTRACT`
(:func:`check_reader` when the run starts, :func:`read_checked` at each read), so that
one that breaks it is told so in one line naming it.

Why recognition only: a text detector over a whole 1280×720 screen costs seconds on a
CPU, recognition of a small line tens of milliseconds. The line is found classically
(:mod:`~kgagent.perception.textline`: glyph-like connected components grouped into
rows); a crop with no such row is not text and costs no recognition at all. The same
components give the word gaps, which put back the spaces the recogniser drops.

With ``perception.reader_whole_lines`` on (experimental, off by default) the observer
reads the whole line that a piece of a label lies in
(:func:`~kgagent.perception.textline.line_around`) and names the piece by it when the
line's reading contains the piece's.

What is kept (the sanity filter): a confidence of at least
``perception.reader_min_confidence`` and at least one letter or digit. Everything here
is about glyphs, never about a program: no word lists, no language, no game.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from kgagent.errors import ConfigError, KGAgentError, WeightsUnavailable
from kgagent.perception.textline import TextLine, text_lines
from kgagent.records import label_key, names_control

__all__ = [
    "NoReader",
    "OcrReader",
    "Reading",
    "ReaderSettings",
    "TextReader",
    "READER_CONTRACT",
    "check_reader",
    "read_checked",
    "label_key",
    "make_reader",
    "names_control",
]

Log = Callable[[str], None]

#: The recogniser's input (channels, height, minimum width). Height 48 is PP-OCR's own:
#: at 32 the CTC frames get too few per letter and double letters collapse ("Setings").
#: The minimum width is 96 instead of RapidOCR's 320: a short word is not padded to a
#: long line, which made recognition about five times slower (docs/perception.md,
#: "Reading", the measurement).
REC_SHAPE = (3, 48, 96)
REC_BATCH = 8
#: Labels are names, not paragraphs: longer text is cut (with an ellipsis).
MAX_LABEL_CHARS = 48


@dataclass(frozen=True)
class Reading:
    """What a reader made of one crop: ``text`` ("" when it saw none) and its confidence."""

    text: str = ""
    confidence: float = 0.0


NOTHING = Reading()


@runtime_checkable
class TextReader(Protocol):
    """Object crops (RGB uint8) to readings, one per crop, in order."""

    identity: str

    def read(self, crops: Sequence[np.ndarray]) -> list[Reading]: ...


#: What a reader is, as the one-line errors about a reader of one's own state it.
READER_CONTRACT = (
    "a reader has an identity string and read(crops) -> list[Reading], one Reading per "
    "crop, in order"
)


def check_reader(reader: Any) -> TextReader:
    """``reader`` when it has what the agent uses of one: a non-empty ``identity`` (the
    step log's header names the reader that made the labels by it: an unnamed one would
    leave a run's labels of unknown origin) and a ``read`` method. A reader of one's own
    that lacks either is refused in one line when the run starts."""
    identity = getattr(reader, "identity", None)
    if not isinstance(identity, str) or not identity.strip():
        lacks = "no identity" if identity is None else f"the identity {identity!r}"
        raise ConfigError(f"reader {type(reader).__name__} has {lacks}: {READER_CONTRACT}")
    if not callable(getattr(reader, "read", None)):
        raise ConfigError(f"reader {identity!r} has no read() method: {READER_CONTRACT}")
    return reader


def read_checked(reader: TextReader, crops: Sequence[np.ndarray]) -> list[Reading]:
    """``reader.read(crops)`` when it is what a reader returns (:data:`READER_CONTRACT`);
    a reader of one's own that returns anything else is told so in one line, not by a
    failure where its readings are used; so is an exception it raises (its type and
    message, the traceback kept for ``--debug``)."""
    try:
        out = reader.read(crops)
    except (KGAgentError, MemoryError):
        raise
    except Exception as e:
        name = getattr(reader, "identity", type(reader).__name__)
        raise ConfigError(
            f"reader {name!r} failed in read(): {type(e).__name__}: {' '.join(str(e).split())}"
        ) from e
    if isinstance(out, (list, tuple)) and len(out) == len(crops):
        wrong = next((r for r in out if not isinstance(r, Reading)), None)
        if wrong is None:
            return list(out)
        what = f"a {type(out).__name__} holding a {type(wrong).__name__}"
    elif isinstance(out, (list, tuple)):
        what = f"{len(out)} readings"
    else:
        what = "None" if out is None else f"a {type(out).__name__}"
    raise ConfigError(
        f"reader {reader.identity!r} returned {what} for {len(crops)} crops: {READER_CONTRACT}"
    )


@dataclass(frozen=True)
class ReaderSettings:
    """The reader's settings, read from ``cfg.perception`` with these defaults when absent."""

    reader: str = "auto"  # auto | ocr | none
    min_confidence: float = 0.8
    cache: int = 4096

    @classmethod
    def of(cls, perception: Any) -> ReaderSettings:
        return cls(
            reader=str(getattr(perception, "reader", cls.reader)),
            min_confidence=float(getattr(perception, "reader_min_confidence", cls.min_confidence)),
            cache=int(getattr(perception, "reader_cache", cls.cache)),
        )


# ------------------------------------------------------------------------------ labels
def _clean(text: str) -> str:
    s = " ".join(unicodedata.normalize("NFKC", text).split())
    if len(s) > MAX_LABEL_CHARS:
        s = s[: MAX_LABEL_CHARS - 1].rstrip() + "…"
    return s


def _spaced(text: str, columns: Sequence[float], gaps: Sequence[float]) -> str:
    """``text`` with a space at each word gap that falls between two of its characters.

    ``columns``: each character's x in the line image, from the recogniser's CTC frames.
    """
    if not gaps or len(columns) != len(text):
        return text
    out = [text[0]] if text else []
    for i in range(1, len(text)):
        if text[i] != " " and text[i - 1] != " ":
            if any(columns[i - 1] < g < columns[i] for g in gaps):
                out.append(" ")
        out.append(text[i])
    return "".join(out)


# ------------------------------------------------------------------------------ readers
def _crop_key(crop: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(crop.shape).encode())
    h.update(np.ascontiguousarray(crop).tobytes())
    return h.digest()


class NoReader:
    """Reads nothing: labels stay empty (``perception.reader=none``)."""

    identity = "none"

    def read(self, crops: Sequence[np.ndarray]) -> list[Reading]:
        return [NOTHING for _ in crops]


class OcrReader:
    """RapidOCR recognition on each crop's text line (see the module docstring).

    The engine loads on the first crop that has a text line, so a run that never
    reads pays nothing. ``engine`` may be passed in (tests). ``calls`` and ``lines``
    count recogniser batches and lines, ``seconds`` the time spent in :meth:`read`.
    """

    identity = "ocr:rapidocr-ppocr-v4-rec"

    def __init__(self, settings: ReaderSettings | None = None, *, engine: Any = None) -> None:
        self.settings = settings or ReaderSettings()
        self._engine = engine
        self._cache: OrderedDict[bytes, Reading] = OrderedDict()
        self.calls = 0
        self.lines = 0
        self.seconds = 0.0

    @staticmethod
    def available() -> bool:
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except Exception:
            return False
        return True

    def _recognizer(self) -> Any:
        if self._engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except Exception as e:  # ImportError, or onnxruntime failing to load
                raise WeightsUnavailable(_missing(e)) from None
            engine = RapidOCR()
            engine.text_rec.rec_image_shape = list(REC_SHAPE)
            engine.text_rec.rec_batch_num = REC_BATCH
            self._engine = engine
        return self._engine.text_rec

    def read(self, crops: Sequence[np.ndarray]) -> list[Reading]:
        t0 = time.perf_counter()
        out: list[Reading | None] = [None] * len(crops)
        todo: list[tuple[int, bytes, list[np.ndarray], list[TextLine]]] = []
        for i, crop in enumerate(crops):
            if crop is None or crop.size == 0 or crop.ndim != 3:
                out[i] = NOTHING
                continue
            key = _crop_key(crop)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                out[i] = hit
                continue
            lines = text_lines(crop)
            if not lines:
                self._remember(key, NOTHING)
                out[i] = NOTHING
                continue
            images = [
                np.ascontiguousarray(crop[y : y + h, x : x + w, :3])
                for x, y, w, h in (ln.box for ln in lines)
            ]
            todo.append((i, key, images, lines))
        if todo:
            rec = self._recognizer()
            flat = [img for _, _, images, _ in todo for img in images]
            self.calls += 1
            self.lines += len(flat)
            results, _ = rec(flat, return_word_box=True)
            pos = 0
            for i, key, images, lines in todo:
                reading = NOTHING
                for img, line, res in zip(
                    images, lines, results[pos : pos + len(images)], strict=True
                ):
                    reading = self._reading(res, img.shape[1], line)
                    if reading.text:
                        break
                pos += len(images)
                self._remember(key, reading)
                out[i] = reading
        self.seconds += time.perf_counter() - t0
        return [r if r is not None else NOTHING for r in out]

    def _reading(self, res: Any, width: int, line: TextLine) -> Reading:
        text, conf = str(res[0]), float(res[1])
        if conf < self.settings.min_confidence or not any(ch.isalnum() for ch in text):
            return NOTHING
        columns: list[float] = []
        info = res[2] if len(res) > 2 else None
        if info and info[0]:
            span = float(info[0])  # CTC frames covering the line image (padding excluded)
            columns = [(c + 0.5) / span * width for word in info[2] for c in word]
        text = _clean(_spaced(text, columns, line.gaps))
        return Reading(text, round(conf, 4)) if text else NOTHING

    def _remember(self, key: bytes, reading: Reading) -> None:
        self._cache[key] = reading
        while len(self._cache) > max(1, self.settings.cache):
            self._cache.popitem(last=False)


def _missing(e: BaseException) -> str:
    return (
        f"perception.reader=ocr needs rapidocr-onnxruntime ({type(e).__name__}: {e}); "
        "install it (pip install rapidocr-onnxruntime) or set perception.reader=none"
    )


def make_reader(perception: Any, *, log: Log = print) -> TextReader:
    """The reader ``perception.reader`` names: ``ocr``, ``none`` or ``auto`` (the default).

    ``ocr`` raises :class:`WeightsUnavailable` (one line) when RapidOCR cannot be
    imported; ``auto`` then says once, through ``log``, that the agent does not read.
    """
    s = ReaderSettings.of(perception)
    if s.reader == "none":
        return NoReader()
    if s.reader == "ocr":
        if not OcrReader.available():
            try:
                import rapidocr_onnxruntime  # noqa: F401
            except Exception as e:
                raise WeightsUnavailable(_missing(e)) from None
        return OcrReader(s)
    if s.reader != "auto":
        raise ConfigError(f"perception.reader={s.reader!r}; use auto, ocr or none")
    if OcrReader.available():
        return OcrReader(s)
    log(
        "reader: rapidocr-onnxruntime is not installed; objects get no text labels "
        "(pip install rapidocr-onnxruntime, or set perception.reader=none to silence this)"
    )
    return NoReader()
