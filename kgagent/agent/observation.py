"""Observation: a screenshot becomes a state node, a feature and the objects on screen.

Algorithm 1, lines 3-4: observe ``X_i``, extract ``x_i``, merge it into a state node
``v_i`` or create one (the memory does the merge and the similarity edges). The
:class:`Observer` also segments the screen into UI objects, keeps the caches that make
this cheap (reference crops, the screens a state was segmented from), and answers
"is this object on the screen?" for the pre-filters of both stages and augmentation.
It grounds objects for the executor (:class:`~kgagent.agent.executor.ObjectLookup`).

Reading (docs/perception.md, "Reading"): an object's text is read once, when memory
first registers it, and stored as its label. Every screen the observer segments gets a
text index (each segment's label and its box on that screen), so an object whose crop no
longer matches (re-rendered, resized, moved) is found again by its text
(:meth:`Observer.ground_text`); a label that is not on the screen is absent.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import cv2
import numpy as np

from kgagent.actions import KEY_KINDS, Operation, text_entry
from kgagent.brain.base import View
from kgagent.config import Config
from kgagent.errors import EncoderMismatchError, KGAgentError
from kgagent.perception.base import Segment, Segmenter, StateEncoder
from kgagent.perception.change import to_gray, visual_change
from kgagent.perception.echo import Fields, echo
from kgagent.perception.grounding import TextGround
from kgagent.perception.reader import (
    NoReader,
    TextReader,
    check_reader,
    make_reader,
    read_checked,
)
from kgagent.perception.textline import LineCache
from kgagent.records import StateHit, UIObject, control_key, label_key, names_control

from .episode import Episode
from .executor import object_present
from .protocols import MemoryAPI
from .screen import Screen
from .timing import PartTimes

T = TypeVar("T")

#: Whether an object is on the screen an :class:`Observation` was made of.
Presence = Callable[[str], bool]

_logger = logging.getLogger(__name__)

#: Text indexes kept (screens, newest last): the current screen, the one before an
#: action and a few a multi-step skill passed through. Not a tuning knob: a screen
#: older than that is not grounded on again.
TEXT_INDEX_SCREENS = 8
#: Grounding by text accepts the label on a segment at most this far from the object's
#: size (relative difference of width or height): a control re-rendered at up to twice
#: or half its size. Beyond it the same word is another element (a heading, a title).
TEXT_RESIZE = 0.5
#: A text box this many times larger than a matched box is a container around it (a
#: panel and its title), not the text of what was matched.
CONTAINER_AREA = 2.0


@dataclass(frozen=True)
class TextBox:
    """A label on one screen: its key (:func:`~kgagent.records.control_key`), its text and
    the segment's box there."""

    key: str
    text: str
    bbox: tuple[int, int, int, int]


@dataclass
class Observation:
    """One screen as the agent knows it: ``X_i``, ``v_i``, ``x_i`` and its objects."""

    image: np.ndarray
    state: StateHit
    feature: np.ndarray
    objects: list[UIObject]
    present: Presence


@dataclass
class _Merged:
    """The last merge: reused when the very same screen is observed again."""

    image: np.ndarray
    hit: StateHit
    feature: np.ndarray
    new_screen: bool  # a configuration new in this episode


class Observer:
    """Screens to observations, over one memory (see the module docstring)."""

    def __init__(
        self,
        cfg: Config,
        memory: MemoryAPI,
        encoder: StateEncoder,
        segmenter: Segmenter,
        episode: Episode,
        reader: TextReader | None = None,
    ) -> None:
        self.cfg = cfg
        self.mem = memory
        self.encoder = encoder
        self.segmenter = segmenter
        self.episode = episode
        self.reader = check_reader(
            reader if reader is not None else make_reader(cfg.perception, log=_logger.info)
        )
        self.reads = not isinstance(self.reader, NoReader)
        self._lines = LineCache(cfg.perception.reader_cache)  # whole lines of cut labels
        self.fields = Fields()  # text fields found by their echo (kgagent.perception.echo)
        self._echo: tuple[Any, bool] = (None, False)  # the last answer: (its question, it)
        #: the brain's roles that are shown the screen's text (``Brain.label_roles``)
        self.brain_roles: frozenset[str] = frozenset()
        #: seconds spent reading (recognition, and segmenting screens only to read them)
        self.reading_s = 0.0
        #: the step's part times (the agent's); template matching counts as ``ground``
        self.times: PartTimes | None = None
        # id(image) -> (image, its text boxes); the image is held so its id stays its own
        self._texts: OrderedDict[int, tuple[np.ndarray, list[TextBox]]] = OrderedDict()
        self._state_texts: dict[str, list[TextBox]] = {}  # state -> boxes of its last segmentation
        self._segs: tuple[np.ndarray | None, list[Segment]] = (None, [])  # last screen segmented
        self._last: _Merged | None = None
        self._state_objects: dict[str, list[UIObject]] = {}
        # state id -> the grey screen its objects were last segmented from (newest last)
        self._segmented: OrderedDict[str, np.ndarray] = OrderedDict()
        self._crops: OrderedDict[str, np.ndarray] = OrderedDict()
        self._current: set[str] = set()  # ids of the objects on the current screen
        self._presence: tuple[np.ndarray | None, dict[str, bool]] = (None, {})

    # ------------------------------------------------------------------ observations
    def observe(self, screen: Screen) -> Observation:
        """Lines 3-4 of Algorithm 1 for the screen as it is now."""
        image = screen.observe()
        hit, feat = self.merge(image)
        self.episode.visited.add(hit.id)
        return self._with_objects(image, hit, feat, hit.created)

    def look_again(self, screen: Screen, state: StateHit, feature: np.ndarray) -> Observation:
        """The current screen of a known state: its objects as they are now (after an action)."""
        return self._with_objects(screen.observe(), state, feature, False)

    def _with_objects(
        self, image: np.ndarray, hit: StateHit, feat: np.ndarray, created: bool
    ) -> Observation:
        objects = self.objects_for(hit.id, image, created)
        self._current = {o.id for o in objects}
        if self.reads and id(image) not in self._texts and hit.id in self._state_texts:
            # Not segmented again (it differs from the state's segmented screen by at most
            # augment.min_change): that screen's labels are where they were.
            self._keep_texts(image, self._state_texts[hit.id])
        return Observation(image, hit, feat, objects, self.presence(image))

    def merge(self, image: np.ndarray) -> tuple[StateHit, np.ndarray]:
        """Merge-or-create the state of ``image``; reuse the last result for an identical screen.

        Re-merging the very same screenshot (the screen after the previous step's last
        execution) would count a visit twice and nudge the node's mean feature towards
        itself.
        """
        last = self._last
        if last is not None and (
            last.image is image
            or (last.image.shape == image.shape and np.array_equal(last.image, image))
        ):
            last.new_screen = False  # the very same screen: not new
            return StateHit(last.hit.id, False, last.hit.cosine, last.hit.visits), last.feature
        feat = self._encode(image)
        hit = self.mem.merge_or_create_state(
            feat,
            thumbnail=self._thumbnail(image),
            isolated=not self.cfg.memory.similarity_edges,
        )
        self._last = _Merged(image, hit, feat, self.episode.screens.register(hit.id, image))
        return hit, feat

    def _encode(self, image: np.ndarray) -> np.ndarray:
        """``image``'s feature ``x_i``. An encoder (one's own) whose feature is not one row
        of the ``dim`` it declares is told so here, by its identity: the memory, sized by
        that ``dim``, could only say that the feature does not fit it."""
        out = np.asarray(self.encoder.encode([image]))
        dim = self.encoder.dim
        if out.ndim == 2 and out.shape == (1, dim):
            return out[0].astype(np.float32, copy=False)
        got = f"{out.shape[1]} values" if out.ndim == 2 and len(out) == 1 else f"{out.shape}"
        name = getattr(self.encoder, "identity", type(self.encoder).__name__)
        raise EncoderMismatchError(
            f"encoder {name!r} returned {got} for one screen but declares dim {dim}: "
            "encode(images) returns an (n, dim) array, one row per image"
        )

    @property
    def last_screen_new(self) -> bool:
        """Whether the screen merged last was a configuration new in this episode."""
        return self._last.new_screen if self._last is not None else False

    def forget_last(self) -> None:
        """A new episode: the next screen is merged afresh."""
        self._last = None

    def _thumbnail(self, image: np.ndarray) -> np.ndarray:
        h, w = image.shape[:2]
        s = self.cfg.perception.thumbnail_side / max(h, w)
        if s >= 1:
            return image
        size = (max(1, int(w * s)), max(1, int(h * s)))
        return cv2.resize(image, size, interpolation=cv2.INTER_AREA)

    # ------------------------------------------------------------------ objects
    def objects_for(self, state_id: str, image: np.ndarray, created: bool) -> list[UIObject]:
        """The UI objects on this screen of ``state_id``, linked to the state in memory.

        Segmented when the state is first seen in this run. With
        ``perception.resegment`` a later screen of the same state that differs from the
        one segmented (Δ above ``augment.min_change``) is segmented again, so the
        objects are the ones on screen now; without it a state's objects are segmented
        once and then reused (or loaded from memory).
        """
        resegment = self.cfg.perception.resegment
        gray = to_gray(image) if resegment else None
        objs = self._state_objects.get(state_id)
        if objs is not None:
            seen = self._segmented.get(state_id)
            if gray is None or (
                seen is not None
                and seen.shape == gray.shape
                and visual_change(seen, gray, self.cfg.perception.change_threshold)
                <= self.cfg.augment.min_change
            ):
                return objs
        elif not (created or resegment):
            objs = list(self.mem.state_objects(state_id))
            if objs:
                self._state_objects[state_id] = objs
                return objs
        objs = self.segment(image)
        if objs:
            self.mem.link_state_objects(state_id, [o.id for o in objs])
        self._state_objects[state_id] = objs
        if self.reads and id(image) in self._texts:
            self._state_texts[state_id] = self._texts[id(image)][1]
        if gray is not None:
            self._segmented[state_id] = gray
            self._segmented.move_to_end(state_id)
            if len(self._segmented) > self.cfg.perception.resegment_screens:
                self._segmented.popitem(last=False)
        return objs

    def segment(self, image: np.ndarray) -> list[UIObject]:
        """Segment ``image`` and register its objects in memory (one per look, or per label).

        A segment is read when memory does not know its look, or knows it as a labelled
        object (two buttons of one style look alike; their text tells them apart); the
        reading goes with the crop to memory, which stores it as a new object's label.
        """
        segs = self._segment(image)
        labels = self._read_new(segs, image)
        out: list[UIObject] = []
        seen: set[str] = set()
        boxes: list[TextBox] = []
        objs = self.mem.upsert_objects(
            [
                (seg.crop, seg.bbox, seg.phash, label)
                for seg, label in zip(segs, labels, strict=True)
            ]
        )
        for seg, label, obj in zip(segs, labels, objs, strict=True):
            self._index(boxes, label or getattr(obj, "label", "") or "", seg.bbox)
            if obj.id not in seen:
                seen.add(obj.id)
                out.append(obj)
        if self.reads:
            self._keep_texts(image, boxes)
        return out

    def _segment(self, image: np.ndarray) -> list[Segment]:
        """The segmenter's segments of ``image``; the last screen's are reused (a screen read
        for a brain or for grounding is often the next one the observer registers)."""
        if self._segs[0] is image:
            return self._segs[1]
        segs = self.segmenter.segment(image)
        self._segs = (image, segs)
        return segs

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _index(boxes: list[TextBox], label: str, bbox: Sequence[int]) -> None:
        if names_control(label):
            boxes.append(TextBox(control_key(label), label, tuple(int(v) for v in bbox)))

    def _read_new(self, segs: Sequence[Segment], image: np.ndarray | None = None) -> list[str]:
        """Labels for ``segs``, "" where not read: a segment is read unless memory knows
        its look as an object without text (crops already read are cached by content)."""
        labels = [""] * len(segs)
        if not self.reads or not segs:
            return labels
        find = getattr(self.mem, "find_object", None)
        todo = []
        for i, s in enumerate(segs):
            known = find(int(s.phash), (int(s.bbox[2]), int(s.bbox[3]))) if find else None
            if known is None or names_control(getattr(known, "label", "") or ""):
                todo.append(i)
        if todo:
            t0 = time.perf_counter()
            readings = read_checked(self.reader, [segs[i].crop for i in todo])
            for i, r in zip(todo, readings, strict=True):
                labels[i] = r.text
            if image is not None and self.cfg.perception.reader_whole_lines:
                self._whole_lines(image, segs, labels, todo)
            self.reading_s += time.perf_counter() - t0
        return labels

    def _whole_lines(
        self, image: np.ndarray, segs: Sequence[Segment], labels: list[str], todo: list[int]
    ) -> None:
        """A label that is a piece of a longer text line on the screen becomes that line.

        The segmenter can cut one label at its word gaps; the reader then names a
        control by half its text. The line is followed on the screen by glyph geometry
        (:func:`kgagent.perception.textline.line_around`) and read; its reading replaces
        the piece's only when it contains the piece (a line that reads as something else
        is not trusted). Only with ``perception.reader_whole_lines`` on."""
        if image.ndim != 3:
            return
        pieces, crops = [], []
        for i in todo:
            if not labels[i]:
                continue
            box = self._lines.around(image, segs[i].bbox)
            if box is not None:
                x, y, w, h = box
                pieces.append(i)
                crops.append(np.ascontiguousarray(image[y : y + h, x : x + w, :3]))
        if not crops:
            return
        for i, r in zip(pieces, read_checked(self.reader, crops), strict=True):
            if r.text and label_key(labels[i]) in label_key(r.text):
                labels[i] = r.text

    def _keep_texts(self, image: np.ndarray, boxes: list[TextBox]) -> None:
        self._texts[id(image)] = (image, boxes)
        self._texts.move_to_end(id(image))
        while len(self._texts) > TEXT_INDEX_SCREENS:
            self._texts.popitem(last=False)

    def texts(self, image: np.ndarray) -> list[TextBox]:
        """The labels on ``image`` and where they are (segmenting it now if it never was).

        A screen the observer segmented has its index already; another one (a screen a
        multi-step skill passed through) is segmented here, and the crops memory does
        not know are read. Cached for the last few screens.
        """
        if not self.reads:
            return []
        hit = self._texts.get(id(image))
        if hit is not None and hit[0] is image:
            self._texts.move_to_end(id(image))
            return hit[1]
        r0, t0 = self.reading_s, time.perf_counter()
        segs = self._segment(image)
        labels = self._read_new(segs, image)
        find = getattr(self.mem, "find_object", None)
        boxes: list[TextBox] = []
        for seg, label in zip(segs, labels, strict=True):
            if not label and find is not None:
                known = find(int(seg.phash), (int(seg.bbox[2]), int(seg.bbox[3])))
                label = getattr(known, "label", "") if known is not None else ""
            self._index(boxes, label, seg.bbox)
        self._keep_texts(image, boxes)
        self.reading_s = r0 + (time.perf_counter() - t0)  # segmenting to read is reading
        return boxes

    def view(self, image: np.ndarray, feature: np.ndarray, state_id: str, role: str) -> View:
        """The screen as the brain's ``role`` sees it: with its text when the brain
        uses text in that role (``Brain.label_roles``) and the agent reads."""
        text = tuple(self.labels(image)) if self.reads and role in self.brain_roles else ()
        return View(image, feature, state_id, text)

    def echoes(
        self, before: np.ndarray, after: np.ndarray, operations: Sequence[Operation]
    ) -> bool:
        """Whether the keys that end ``operations`` only changed a text field from
        ``before`` to ``after`` (:func:`kgagent.perception.echo.echo`); always ``False``
        for a skill that ends with the pointer, with ``perception.field_echo`` off or
        without a reader. The last answer is kept: augmentation and evaluation ask about
        the same screens."""
        if not operations or operations[-1].kind not in KEY_KINDS:
            return False
        if not (self.reads and self.cfg.perception.field_echo):
            return False
        entry = text_entry(operations)
        asked, known = self._echo
        ops = tuple(operations)
        if asked is not None and asked[0] is before and asked[1] is after and asked[2] == ops:
            return known
        t0 = time.perf_counter()
        found = echo(
            before,
            after,
            entry[0] if entry is not None else "",
            self.fields,
            threshold=self.cfg.perception.change_threshold,
            around=self._lines.around,
            read=lambda crops: [r.text for r in read_checked(self.reader, list(crops))],
        )
        self.reading_s += time.perf_counter() - t0
        self._echo = ((before, after, ops), found)
        return found

    def labels(self, image: np.ndarray, limit: int = 24) -> list[str]:
        """The distinct labels on ``image``, top to bottom, left to right (at most ``limit``):
        what a brain may be told is on the screen."""
        seen: set[str] = set()
        out: list[str] = []
        for b in sorted(self.texts(image), key=lambda b: (b.bbox[1], b.bbox[0])):
            if b.key not in seen:
                seen.add(b.key)
                out.append(b.text)
                if len(out) >= limit:
                    break
        return out

    def _label_of(self, object_id: str) -> str:
        try:
            obj = self.mem.get_object(object_id)
        except KGAgentError:
            return ""
        label = getattr(obj, "label", "") or ""
        return label if names_control(label) else ""

    def contradicts(self, object_id: str, image: np.ndarray, bbox: Sequence[int]) -> bool:
        """Whether the text at ``bbox`` on ``image`` names another control than the object.

        A crop matched on a button of the same style (same frame, same fill, another
        word) scores high: most of the crop is the frame. The labels there tell the two
        apart. No label there, or an object without one, contradicts nothing.
        """
        label = self._label_of(object_id) if self.reads else ""
        if not label:
            return False
        key = control_key(label)
        x, y, w, h = (int(v) for v in bbox)
        there = [
            b
            for b in self.texts(image)
            if x <= b.bbox[0] + b.bbox[2] / 2 < x + w
            and y <= b.bbox[1] + b.bbox[3] / 2 < y + h
            and b.bbox[2] * b.bbox[3] <= CONTAINER_AREA * w * h
        ]
        return bool(there) and not any(b.key in key or key in b.key for b in there)

    def ground_text(self, object_id: str, image: np.ndarray) -> TextGround | None:
        """Find a labelled object on ``image`` by its text, or say it is absent.

        ``None`` when the object has no label that names a control (nothing to look
        for). Otherwise a :class:`TextGround`, ``found`` only when a segment of ``image``
        shows the same label (by :func:`~kgagent.records.control_key`) at no more than
        twice or half the object's size (``TEXT_RESIZE``). Among several: one of the
        object's own size (within ``memory.object_size_tolerance``, the rule that makes
        two crops one object) before a resized one, then the nearest to where the object
        was first seen.
        """
        label = self._label_of(object_id) if self.reads else ""
        if not label:
            return None
        key = control_key(label)
        x, y, w, h = self.mem.get_object(object_id).bbox
        tol = self.cfg.memory.object_size_tolerance
        best: tuple[tuple[bool, float], TextBox] | None = None
        for b in self.texts(image):
            if b.key != key:
                continue
            bw, bh = b.bbox[2], b.bbox[3]
            rel = max(abs(bw - w) / max(bw, w, 1), abs(bh - h) / max(bh, h, 1))
            if rel > TEXT_RESIZE:
                continue
            d = float(np.hypot(b.bbox[0] + bw / 2 - x - w / 2, b.bbox[1] + bh / 2 - y - h / 2))
            rank = (rel > tol, d)  # its own size first (a heading is larger), then the nearest
            if best is None or rank < best[0]:
                best = (rank, b)
        if best is None:
            return TextGround(found=False, score=0.0, text=label)
        bx, by, bw, bh = best[1].bbox
        return TextGround(
            found=True,
            score=1.0,
            point=(bx + bw // 2, by + bh // 2),
            bbox=(bx, by, bw, bh),
            scale=round(bw / max(w, 1), 3),
            text=label,
        )

    # ------------------------------------------------------------------ grounding
    def crop(self, object_id: str) -> np.ndarray:
        crop = self._crops.get(object_id)
        if crop is None:
            crop = self.mem.object_crop(object_id)
            self._crops[object_id] = crop
            if len(self._crops) > self.cfg.perception.crop_cache:
                self._crops.popitem(last=False)
        else:
            self._crops.move_to_end(object_id)
        return crop

    def hint(self, object_id: str) -> tuple[int, int, int, int] | None:
        """Where the object was first seen: grounding looks there first."""
        try:
            return self.mem.get_object(object_id).bbox
        except KGAgentError:
            return None

    def timed_ground(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, its time counted as the step's ``ground`` part (template
        matching: where a step's time grows with the library, as presence is asked of
        every object of every candidate skill)."""
        if self.times is None:
            return fn(*args, **kwargs)
        return self.times.run("ground", fn, *args, **kwargs)

    def presence(self, image: np.ndarray) -> Presence:
        """Whether an object is on ``image``: segmented on it, else template-matched (cached)."""
        if self._presence[0] is not image:
            # Keyed by the array itself (held, so its id cannot be reused by another screen).
            self._presence = (image, {})
        cache = self._presence[1]
        known = self._current

        def present(object_id: str) -> bool:
            if object_id in known:
                return True
            if object_id not in cache:
                cache[object_id] = self.timed_ground(
                    object_present, object_id, image, self, self.cfg
                )
            return cache[object_id]

        return present
