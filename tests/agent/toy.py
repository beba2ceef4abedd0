"""A tiny, fully known program for the agent tests (not a game: three widgets).

* button A (textured, left): toggles a large panel — a new screen;
* button B (textured, middle): first click selects it (a thin ring around it),
  a click on target T after that "fires" (the panel colour changes) — a
  two-step skill;
* target T (right): does nothing on its own;
* key "enter": does nothing; everything else: nothing.

``FramedEnv`` also draws a frame around T while B is selected, as programs
highlight the targets of a selection.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.envs.base import Env, GroundTruth
from kgagent.perception.base import Segment
from kgagent.perception.segmenters import phash

W, H = 240, 160
A = (20, 110, 40, 30)
B = (100, 110, 40, 30)
T = (180, 110, 40, 30)


def _texture(seed: int, w: int, h: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 255, (h, w, 3), dtype=np.uint8)


TEX = {"A": _texture(1, A[2], A[3]), "B": _texture(2, B[2], B[3]), "T": _texture(3, T[2], T[3])}


def _frame(img: np.ndarray, box: tuple[int, int, int, int], pad: int, width: int, colour) -> None:
    """Draw a frame ``width`` px wide, ``pad`` px outside ``box`` (a highlight around it)."""
    x, y, w, h = box
    f = img[y - pad : y + h + pad, x - pad : x + w + pad]
    for edge in (f[:width], f[-width:], f[:, :width], f[:, -width:]):
        edge[...] = colour


def _inside(x: int, y: int, box: tuple[int, int, int, int]) -> bool:
    bx, by, bw, bh = box
    return bx <= x < bx + bw and by <= y < by + bh


class ToyEnv(Env):
    name = "toy"

    def __init__(self) -> None:
        self.panel = False
        self.selected = False
        self.fired = 0
        self.steps = 0

    @property
    def size(self) -> tuple[int, int]:
        return (W, H)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.panel = self.selected = False
        self.fired = self.steps = 0
        return self.observe(), {}

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        if action.kind == "click":
            x, y = action.x, action.y
            if _inside(x, y, A):
                self.panel = not self.panel
            elif _inside(x, y, B):
                self.selected = True
            elif _inside(x, y, T) and self.selected:
                self.selected = False
                self.fired += 1
        return self.observe(), 0.0, False, False, {}

    def observe(self) -> np.ndarray:
        img = np.full((H, W, 3), 40, dtype=np.uint8)
        if self.panel:
            img[10:100, 10:230] = (200, 200, 60)
        img[10:30, 10 : 10 + 20 * (self.fired % 10)] = (220, 60, 60)
        for key, box in (("A", A), ("B", B), ("T", T)):
            x, y, w, h = box
            img[y : y + h, x : x + w] = TEX[key]
        if self.selected:  # a ring around B: the selection is marked on the element
            _frame(img, B, 4, 2, (255, 255, 255))
        return img

    def ground_truth(self) -> GroundTruth:
        return GroundTruth(progression=float(self.fired), score=float(self.fired))


class FramedEnv(ToyEnv):
    """The toy, but selecting B also frames the target T (as programs highlight targets)."""

    def observe(self):
        img = super().observe()
        if self.selected:
            _frame(img, T, 6, 3, (255, 255, 0))
        return img


class ToySegmenter:
    """Returns the three widgets as segments (what a perfect segmenter would see)."""

    identity = "toy"

    def segment(self, image: np.ndarray) -> list[Segment]:
        out = []
        for box in (A, B, T):
            x, y, w, h = box
            crop = image[y : y + h, x : x + w].copy()
            out.append(Segment(box, crop, phash(crop)))
        return out


CHIP = (60, 60, 6, 6)
TEX["chip"] = _texture(4, CHIP[2], CHIP[3])


class ChipEnv(ToyEnv):
    """The toy with a small chip that the key "delete" removes.

    Removing it changes a few pixels: the screen stays in its state (the
    feature barely moves), but the chip is gone from it.
    """

    def reset(self, seed: int | None = None):
        self.chip = True
        return super().reset(seed)

    def step(self, action: Action):
        if action.kind == "key" and action.key == "delete":
            self.chip = False
        return super().step(action)

    def observe(self) -> np.ndarray:
        img = super().observe()
        if getattr(self, "chip", True):
            x, y, w, h = CHIP
            img[y : y + h, x : x + w] = TEX["chip"]
        return img


class ChipSegmenter(ToySegmenter):
    """The toy's widgets, and the chip while it is on screen."""

    def segment(self, image: np.ndarray) -> list[Segment]:
        out = super().segment(image)
        x, y, w, h = CHIP
        crop = image[y : y + h, x : x + w]
        if np.array_equal(crop, TEX["chip"]):
            out.append(Segment(CHIP, crop.copy(), phash(crop)))
        return out


class ArmEnv(ToyEnv):
    """The toy, but A is a command whose effect shows elsewhere: it frames T, and T then fires.

    A itself does not change (no panel): the program reacted away from where the
    agent acted, as a button that ends a turn redraws the board and not itself.
    """

    def reset(self, seed: int | None = None):
        self.armed = False
        return super().reset(seed)

    def step(self, action: Action):
        if action.kind == "click" and _inside(action.x, action.y, A):
            self.armed = True
            self.steps += 1
            return self.observe(), 0.0, False, False, {}
        if action.kind == "click" and _inside(action.x, action.y, T) and self.armed:
            self.armed = False
            self.fired += 1
            self.steps += 1
            return self.observe(), 0.0, False, False, {}
        return super().step(action)

    def observe(self) -> np.ndarray:
        img = super().observe()
        if getattr(self, "armed", False):
            _frame(img, T, 6, 3, (255, 255, 0))
        return img


class KnownObjects:
    """A fixed set of remembered objects, as the executor and augmentation look them up.

    ``crop`` comes from memory; there is no position hint; "segmenting" any screen
    gives the same objects (the toy's widgets never move).
    """

    def __init__(self, memory, objects) -> None:
        self.memory = memory
        self.objects = list(objects)

    def crop(self, object_id: str) -> np.ndarray:
        return self.memory.object_crop(object_id)

    def hint(self, object_id: str):
        return None

    def segment(self, image: np.ndarray) -> list:
        return list(self.objects)


def observation(image: np.ndarray, objects, present=lambda oid: True):
    """An Observation of ``image`` with ``objects`` (state and feature are not used)."""
    from kgagent.agent.observation import Observation
    from kgagent.records import StateHit

    return Observation(image, StateHit("s-test", True, 1.0, 1), np.zeros(1), list(objects), present)


class KeysEnv(Env):
    """A keyboard-only toy: three letter keys do something, one two-key sequence scores.

    ``j`` toggles a lamp, ``k`` arms (a marker shows), ``l`` fires when armed (the score
    bar grows and the marker goes) and otherwise does nothing; every other key and every
    click does nothing. Ground truth: how often it fired.
    """

    name = "keys-toy"

    def __init__(self) -> None:
        self.lamp = self.armed = False
        self.fired = self.steps = 0

    @property
    def size(self) -> tuple[int, int]:
        return (W, H)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.lamp = self.armed = False
        self.fired = self.steps = 0
        return self.observe(), {}

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        if action.kind == "key":
            if action.key == "j":
                self.lamp = not self.lamp
            elif action.key == "k":
                self.armed = True
            elif action.key == "l" and self.armed:
                self.armed = False
                self.fired += 1
        return self.observe(), 0.0, False, False, {}

    def observe(self) -> np.ndarray:
        img = np.full((H, W, 3), 30, dtype=np.uint8)
        img[20:50, 20:50] = TEX["A"][:30, :30]  # a static picture: nothing to click
        if self.lamp:
            img[20:50, 190:220] = (250, 230, 80)
        if self.armed:
            img[70:90, 110:130] = (80, 200, 250)
        img[130:150, 10 : 10 + 11 * min(self.fired, 20)] = (220, 60, 60)
        return img

    def ground_truth(self) -> GroundTruth:
        return GroundTruth(progression=float(self.fired), score=float(self.fired))


def toy_runner(cfg: Any, path: Any, env: Env | None = None, log: Any = None, **parts: Any) -> Any:
    """A quiet ``Runner`` into ``path`` with the toy's perception (the pixel encoder, the
    toy's segmenter) and the offline brain; ``parts`` replace or add Runner arguments."""
    from kgagent.agent.runner import Runner
    from kgagent.brain.offline import OfflineBrain
    from kgagent.perception.encoders import PixelEncoder

    kw: dict[str, Any] = {
        "encoder": PixelEncoder(),
        "segmenter": ToySegmenter(),
        "brain": OfflineBrain(),
        "progress": False,
        "log": log or (lambda m: None),
        **parts,
    }
    return Runner(cfg, memory_path=path, env=env, **kw)
