"""Execute a skill's operations on a :class:`~kgagent.envs.base.Screen`.

A pointer operation on a UI object is grounded first: the object's reference
crop is template-matched on the *current* screen and the centre of the best
match is used. A match below threshold means the object is absent and the
skill is aborted right there with a grounding error; it is never clicked
blindly at a remembered position (docs/agent.md, "Grounding").

An object that shows text (a label) and whose crop no longer matches (re-rendered,
resized, moved) is looked for by its text on the current screen instead, when the
lookup can (:meth:`~kgagent.agent.observation.Observer.ground_text`); a label that is
not on the screen is absent too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kgagent.actions import Action, Operation
from kgagent.config import Config
from kgagent.errors import ActionRefused, GroundingError
from kgagent.perception.base import GroundResult
from kgagent.perception.change import visual_change
from kgagent.perception.grounding import TextGround, ground

from .screen import Screen


class ObjectLookup(Protocol):
    """What grounding needs to know of a remembered UI object."""

    def crop(self, object_id: str) -> np.ndarray:
        """The object's reference crop (RGB); raises if memory has none."""
        ...

    def hint(self, object_id: str) -> tuple[int, int, int, int] | None:
        """Where the object was first seen (x, y, w, h): grounding looks there first."""
        ...


def ground_by_text(objects: ObjectLookup, object_id: str, image: np.ndarray) -> TextGround | None:
    """The lookup's grounding by text (``ground_text``), when it has one and the object a label.

    Optional on purpose: a lookup that cannot read (a test double, a reader switched
    off) grounds by crop alone, as without text.
    """
    by_text = getattr(objects, "ground_text", None)
    if by_text is None:
        return None
    return by_text(object_id, image)


def _contradicted(
    objects: ObjectLookup, object_id: str, image: np.ndarray, g: GroundResult
) -> bool:
    """Whether the text where the crop matched names another control (``contradicts``)."""
    check = getattr(objects, "contradicts", None)
    return bool(check is not None and g.bbox is not None and check(object_id, image, g.bbox))


def ground_operand(
    object_id: str,
    crop: np.ndarray,
    image: np.ndarray,
    objects: ObjectLookup,
    cfg: Config,
    *,
    scales: Sequence[float] | None = None,
    by_text: bool = True,
) -> tuple[GroundResult, TextGround | None]:
    """The object's crop matched on ``image``, checked and completed by its text.

    A crop match where the screen shows another control's text is no match (two buttons
    of one style); when the crop does not match and ``by_text``, the object's label is
    looked for instead. Returns the crop's result and the text's (``None`` when not
    consulted).
    """
    g = ground_object(crop, image, cfg, objects.hint(object_id), scales=scales)
    if g.found and not _contradicted(objects, object_id, image, g):
        return g, None
    if g.found:  # matched another control: the crop's evidence is void
        g = GroundResult(False, g.score, scale=g.scale)
    return g, ground_by_text(objects, object_id, image) if by_text else None


def ground_object(
    crop: np.ndarray,
    image: np.ndarray,
    cfg: Config,
    hint: tuple[int, int, int, int] | None = None,
    *,
    scales: Sequence[float] | None = None,
) -> GroundResult:
    """Template-match ``crop`` on ``image``, looking first around ``hint``.

    Matching a 1280×720 screen costs tens of milliseconds per scale; most
    objects have not moved, so a window around their last box (native scale)
    answers first. TM_CCOEFF_NORMED is local, so a match found in the window
    has exactly the score it has on the full screen; only when the window
    fails does the full, multi-scale search run. Below threshold nothing is
    returned to click.
    """
    threshold = cfg.perception.grounding_threshold
    all_scales = tuple(scales) if scales is not None else tuple(cfg.perception.grounding_scales)
    if hint is not None:
        x, y, w, h = (int(v) for v in hint)
        ih, iw = image.shape[:2]
        m = max(w, h) // 2 + 8
        x0, y0, x1, y1 = max(0, x - m), max(0, y - m), min(iw, x + w + m), min(ih, y + h + m)
        if x1 - x0 >= crop.shape[1] and y1 - y0 >= crop.shape[0]:
            g = ground(crop, image[y0:y1, x0:x1], threshold=threshold, scales=(1.0,))
            if g.found and g.point is not None and g.bbox is not None:
                bx, by, bw, bh = g.bbox
                return GroundResult(
                    True,
                    g.score,
                    (g.point[0] + x0, g.point[1] + y0),
                    (bx + x0, by + y0, bw, bh),
                    g.scale,
                )
    return ground(crop, image, threshold=threshold, scales=all_scales)


@dataclass
class OpResult:
    """One operation as executed: its grounding, the concrete action, and the change it caused."""

    operation: Operation
    action: Action | None = None
    grounding: list[GroundResult] = field(default_factory=list)  # one per object operand
    change: float = 0.0  # Δ between the screens before and after this operation
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.operation.to_dict(),
            "action": self.action.to_dict() if self.action else None,
            "grounding": [_ground_dict(g) for g in self.grounding],
            "change": round(self.change, 6),
            "error": self.error,
        }


def _ground_dict(g: GroundResult) -> dict[str, Any]:
    d: dict[str, Any] = {"found": g.found, "score": round(g.score, 4), "point": g.point}
    if isinstance(g, TextGround):
        d["text"] = g.text  # found (or not) by its label, not its crop
    return d


@dataclass
class Execution:
    """A whole skill execution: first and last screenshots, per-op results, total Δ."""

    before: np.ndarray
    after: np.ndarray
    ops: list[OpResult]
    change: float  # Δ between ``before`` and ``after``
    ok: bool  # every operation grounded and executed
    error: str | None = None
    grounding_failed: bool = False
    refused: bool = False  # the environment refused an operation before sending it

    @property
    def actions(self) -> int:
        """How many concrete actions reached the program."""
        return sum(1 for r in self.ops if r.action is not None and r.error is None)


def _pointer_target(
    op_object: str | None,
    point: tuple[int, int] | None,
    image: np.ndarray,
    objects: ObjectLookup,
    cfg: Config,
    name: str | None,
) -> tuple[tuple[int, int], GroundResult | None]:
    """Pixel position of an operand: grounded object centre, or the residual raw point."""
    if op_object is not None:
        try:
            crop = objects.crop(op_object)
        except Exception as e:  # a crop missing from memory is an absent object
            raise GroundingError(f"object {name or op_object} has no reference crop: {e}") from e
        timed = getattr(objects, "timed_ground", None)
        if timed is None:  # a lookup without part times (a test double)
            g, t = ground_operand(op_object, crop, image, objects, cfg)
        else:
            g, t = timed(ground_operand, op_object, crop, image, objects, cfg)
        if g.found and g.point is not None:
            return g.point, g
        if t is not None and t.found and t.point is not None:
            return t.point, t
        raise _Ungrounded(g, name or op_object, cfg.perception.grounding_threshold, t)
    assert point is not None  # Operation validates that one of the two is set
    return (int(point[0]), int(point[1])), None


class _Ungrounded(GroundingError):
    def __init__(
        self, result: GroundResult, name: str, threshold: float, text: TextGround | None = None
    ) -> None:
        if result.score >= threshold:  # the crop matched where the screen reads another label
            why = f"its best match ({result.score:.2f}) shows another control's text"
        else:
            why = f"best match {result.score:.2f} < {threshold:.2f}"
        if text is not None:
            why += f"; its text {text.text!r} is not on screen"
        super().__init__(f"{name} not found on screen ({why})")
        self.result = result


def to_action(
    op: Operation, image: np.ndarray, objects: ObjectLookup, cfg: Config
) -> tuple[Action, list[GroundResult]]:
    """Ground ``op`` on ``image`` and return the concrete action (raises GroundingError)."""
    grounds: list[GroundResult] = []
    if op.kind in ("key", "hotkey"):
        return Action(op.kind, key=op.key), grounds
    if op.kind == "type":
        return Action("type", text=op.text), grounds
    (x, y), g = _pointer_target(op.object_id, op.point, image, objects, cfg, op.object_name)
    if g is not None:
        grounds.append(g)
    if op.kind == "drag":
        (x2, y2), g2 = _pointer_target(
            op.object_id2, op.point2, image, objects, cfg, op.object_name2 or op.object_id2
        )
        if g2 is not None:
            grounds.append(g2)
        return Action("drag", x=x, y=y, x2=x2, y2=y2), grounds
    if op.kind == "scroll":
        return Action("scroll", x=x, y=y, scroll=op.scroll), grounds
    return Action(op.kind, x=x, y=y), grounds


def execute(
    operations: Sequence[Operation], screen: Screen, objects: ObjectLookup, cfg: Config
) -> Execution:
    """Run ``operations`` in order; stop at the first grounding failure or refused action.

    Operations executed before a failure stay executed (the program cannot be
    rolled back); ``after`` is the screen as it is when execution stopped, so
    the caller always evaluates what really happened. ``before`` is the screen as it
    is now: a live target's change since the last action settled is not this
    execution's (:meth:`Screen.catch_up`).
    """
    screen.catch_up()
    before = screen.observe()
    current = before
    results: list[OpResult] = []
    ok = True
    error: str | None = None
    grounding_failed = refused = False
    for op in operations:
        if screen.done:
            ok, error = False, "the program ended during the skill"
            break
        res = OpResult(operation=op)
        results.append(res)
        try:
            action, grounds = to_action(op, current, objects, cfg)
        except _Ungrounded as e:
            res.grounding.append(e.result)
            res.error = str(e)
            ok, error, grounding_failed = False, str(e), True
            break
        except GroundingError as e:
            res.error = str(e)
            ok, error, grounding_failed = False, str(e), True
            break
        res.action = action
        res.grounding = grounds
        try:
            new = screen.act(action)
        except ActionRefused as e:
            res.error = str(e)
            ok, error, refused = False, str(e), True
            break
        res.change = visual_change(current, new, cfg.perception.change_threshold)
        current = new
    change = visual_change(before, current, cfg.perception.change_threshold)
    return Execution(
        before=before,
        after=current,
        ops=results,
        change=change,
        ok=ok,
        error=error,
        grounding_failed=grounding_failed,
        refused=refused,
    )


def object_present(object_id: str, image: np.ndarray, objects: ObjectLookup, cfg: Config) -> bool:
    """Whether an object's reference crop grounds on ``image`` (Eq. 6's penalty, prefixes),
    where the text there does not name another control (:func:`ground_operand`).

    Only the native scale is searched: this is asked for every object of
    every candidate skill, and a rescaled UI is the exception. Execution
    itself (:func:`execute`) still searches every configured scale, and the text.

    Not by text alone: an object's look carries its state (a highlighted, a greyed
    control), and the same text on a control in another state is not where the skill
    that learned it can start (measured: docs/perception.md, "Reading").
    """
    try:
        crop = objects.crop(object_id)
    except Exception:
        return False
    g, _ = ground_operand(object_id, crop, image, objects, cfg, scales=(1.0,), by_text=False)
    return g.found
