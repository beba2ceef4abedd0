"""Atomic operations: what a skill is made of, and what an environment executes.

Two layers, one vocabulary:

* :class:`Operation` is a step of a skill as stored in memory. A pointer
  operation names the UI *object* it acts on (``object_id``); a point is used
  only for residual actions on unrecognised regions (augmentation's residual actions, A3).
* :class:`Action` is a concrete operation in the target's pixel coordinates,
  after grounding. Environments execute Actions and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

POINTER_KINDS = ("click", "double_click", "right_click", "drag", "scroll")
KEY_KINDS = ("key", "hotkey", "type")
KINDS = POINTER_KINDS + KEY_KINDS


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown operation kind {kind!r}; known: {', '.join(KINDS)}")


@dataclass(frozen=True)
class Action:
    """A concrete operation at target-relative pixel coordinates."""

    kind: str
    x: int | None = None
    y: int | None = None
    x2: int | None = None  # drag end
    y2: int | None = None
    scroll: int = 0  # wheel clicks, positive = up
    key: str | None = None  # "enter"; for hotkey "ctrl+s"
    text: str | None = None  # for "type"

    def __post_init__(self) -> None:
        _check_kind(self.kind)
        if self.kind in POINTER_KINDS and (self.x is None or self.y is None):
            raise ValueError(f"{self.kind} needs x and y")
        if self.kind == "drag" and (self.x2 is None or self.y2 is None):
            raise ValueError("drag needs x2 and y2")
        if self.kind in ("key", "hotkey") and not self.key:
            raise ValueError(f"{self.kind} needs key")
        if self.kind == "type" and self.text is None:
            raise ValueError("type needs text")

    def points(self) -> list[tuple[int, int]]:
        pts = []
        if self.x is not None and self.y is not None:
            pts.append((self.x, self.y))
        if self.x2 is not None and self.y2 is not None:
            pts.append((self.x2, self.y2))
        return pts

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set; a coordinate of 0 (the target's left or top edge) is kept."""
        return {
            k: v
            for k in self.__dataclass_fields__
            if (v := getattr(self, k)) is not None and not (k == "scroll" and v == 0)
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Operation:
    """One step of a skill, as kept in memory (JSON, never pickled)."""

    kind: str
    object_id: str | None = None  # the UI object acted on (pointer kinds)
    object_name: str | None = None
    point: tuple[int, int] | None = None  # residual action at a raw point (A3)
    object_id2: str | None = None  # drag target object
    point2: tuple[int, int] | None = None
    scroll: int = 0
    key: str | None = None
    text: str | None = None
    object_name2: str | None = None  # the drag target's name, as object_name

    def __post_init__(self) -> None:
        _check_kind(self.kind)
        if self.kind in POINTER_KINDS and self.object_id is None and self.point is None:
            raise ValueError(f"{self.kind} needs an object_id or a point")
        if self.kind == "drag" and self.object_id2 is None and self.point2 is None:
            raise ValueError("drag needs a second object_id2 or point2")
        if self.kind in ("key", "hotkey") and not self.key:
            raise ValueError(f"{self.kind} needs key")
        if self.kind == "type" and self.text is None:
            raise ValueError("type needs text")

    def object_ids(self) -> list[str]:
        return [o for o in (self.object_id, self.object_id2) if o]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            if k != "kind" and v is not None and v != 0:
                out[k] = list(v) if isinstance(v, tuple) else v
        return out

    def identity(self) -> dict[str, Any]:
        """:meth:`to_dict` without the objects' display names: what the operation does."""
        d = self.to_dict()
        d.pop("object_name", None)
        d.pop("object_name2", None)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Operation:
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError(f"not an operation: {d!r}")
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        for k in ("point", "point2"):
            if kw.get(k) is not None:
                kw[k] = tuple(int(v) for v in kw[k])
        return cls(**kw)

    def describe(self) -> str:
        target = self.object_name or self.object_id or (str(self.point) if self.point else "")
        if self.kind == "drag":
            return f"drag {target} -> {self.object_name2 or self.object_id2 or self.point2}"
        if self.kind in ("key", "hotkey"):
            return f"{self.kind} {self.key}"
        if self.kind == "type":
            return f"type {self.text!r}"
        return f"{self.kind} {target}".strip()


#: Keys that enter a character other than their name, and keys that erase one.
_ENTERED = {"space": " "}
_ERASING = frozenset({"backspace", "delete"})


def text_entry(operations: Sequence[Operation]) -> tuple[str, int] | None:
    """``(text entered, characters erased)`` by the text entry that ends a skill: its
    trailing presses of one-character keys (``space`` too), typed strings, or erasing
    keys. ``None`` when the skill does not end so, or when its end both enters and
    erases (the text it leaves is not known)."""
    text, erased = "", 0
    for op in reversed(operations):
        if op.kind == "type" and op.text:
            text = op.text + text
        elif op.kind == "key" and op.key and (len(op.key) == 1 or op.key in _ENTERED):
            text = _ENTERED.get(op.key, op.key) + text
        elif op.kind == "key" and op.key in _ERASING:
            erased += 1
        else:
            break
    if bool(text) == bool(erased):
        return None
    return text, erased
