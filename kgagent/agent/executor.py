"""Execute a skill's operations on a :class:`~kgagent.envs.base.Screen`.

A pointer operation on a UI object is grounded first: the object's reference
crop is template-matched on the *current* screen and the centre of the best
match is used. A match below threshold means the object is absent and the
skill is aborted right there with a grounding error; it is never clicked
blindly at a remembered position (SPEC: Environment IO).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgagent.actions import Action, Operation
from kgagent.config import Config
from kgagent.envs.base import Screen
from kgagent.errors import ActionRefused, GroundingError
from kgagent.perception.base import GroundResult
from kgagent.perception.change import visual_change
from kgagent.perception.grounding import ground

#: Returns an object's reference crop (RGB); the loop passes a cached ``Memory.object_crop``.
CropLookup = Callable[[str], np.ndarray]
#: Returns where an object was last seen (x, y, w, h), or None: a place to look first.
HintLookup = Callable[[str], "tuple[int, int, int, int] | None"]


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
            "grounding": [
                {"found": g.found, "score": round(g.score, 4), "point": g.point}
                for g in self.grounding
            ],
            "change": round(self.change, 6),
            "error": self.error,
        }


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

    @property
    def actions(self) -> int:
        """How many concrete actions reached the program."""
        return sum(1 for r in self.ops if r.action is not None and r.error is None)


def _pointer_target(
    op_object: str | None,
    point: tuple[int, int] | None,
    image: np.ndarray,
    crop_of: CropLookup,
    cfg: Config,
    name: str | None,
    hint_of: HintLookup | None,
) -> tuple[tuple[int, int], GroundResult | None]:
    """Pixel position of an operand: grounded object centre, or the residual raw point."""
    if op_object is not None:
        try:
            crop = crop_of(op_object)
        except Exception as e:  # a crop missing from memory is an absent object
            raise GroundingError(f"object {name or op_object} has no reference crop: {e}") from e
        g = ground_object(crop, image, cfg, hint_of(op_object) if hint_of else None)
        if not g.found or g.point is None:
            raise _Ungrounded(g, name or op_object, cfg.perception.grounding_threshold)
        return g.point, g
    assert point is not None  # Operation validates that one of the two is set
    return (int(point[0]), int(point[1])), None


class _Ungrounded(GroundingError):
    def __init__(self, result: GroundResult, name: str, threshold: float) -> None:
        super().__init__(
            f"{name} not found on screen (best match {result.score:.2f} < {threshold:.2f})"
        )
        self.result = result


def to_action(
    op: Operation,
    image: np.ndarray,
    crop_of: CropLookup,
    cfg: Config,
    hint_of: HintLookup | None = None,
) -> tuple[Action, list[GroundResult]]:
    """Ground ``op`` on ``image`` and return the concrete action (raises GroundingError)."""
    grounds: list[GroundResult] = []
    if op.kind in ("key", "hotkey"):
        return Action(op.kind, key=op.key), grounds
    if op.kind == "type":
        return Action("type", text=op.text), grounds
    (x, y), g = _pointer_target(
        op.object_id, op.point, image, crop_of, cfg, op.object_name, hint_of
    )
    if g is not None:
        grounds.append(g)
    if op.kind == "drag":
        (x2, y2), g2 = _pointer_target(
            op.object_id2, op.point2, image, crop_of, cfg, op.object_id2, hint_of
        )
        if g2 is not None:
            grounds.append(g2)
        return Action("drag", x=x, y=y, x2=x2, y2=y2), grounds
    if op.kind == "scroll":
        return Action("scroll", x=x, y=y, scroll=op.scroll), grounds
    return Action(op.kind, x=x, y=y), grounds


def execute(
    operations: Sequence[Operation],
    screen: Screen,
    crop_of: CropLookup,
    cfg: Config,
    hint_of: HintLookup | None = None,
) -> Execution:
    """Run ``operations`` in order; stop at the first grounding failure or refused action.

    Operations executed before a failure stay executed (the program cannot be
    rolled back); ``after`` is the screen as it is when execution stopped, so
    the caller always evaluates what really happened.
    """
    before = screen.observe()
    current = before
    results: list[OpResult] = []
    ok = True
    error: str | None = None
    grounding_failed = False
    for op in operations:
        if screen.done:
            ok, error = False, "the program ended during the skill"
            break
        res = OpResult(operation=op)
        results.append(res)
        try:
            action, grounds = to_action(op, current, crop_of, cfg, hint_of)
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
            ok, error = False, str(e)
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
    )


def object_present(
    object_id: str,
    image: np.ndarray,
    crop_of: CropLookup,
    cfg: Config,
    hint_of: HintLookup | None = None,
) -> bool:
    """Whether an object's reference crop grounds on ``image`` (Eq. 6's penalty, prefixes).

    Only the native scale is searched: this is asked for every object of
    every candidate skill, and a rescaled UI is the exception. Execution
    itself (:func:`execute`) still searches every configured scale.
    """
    try:
        crop = crop_of(object_id)
    except Exception:
        return False
    hint = hint_of(object_id) if hint_of else None
    return bool(ground_object(crop, image, cfg, hint, scales=(1.0,)).found)
