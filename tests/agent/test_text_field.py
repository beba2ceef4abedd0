"""A form with a text field (kgagent.perception.echo in the loop): what the agent types
into the field shows up there and nowhere else. That is no answer of the program: no
input's response, no skill from augmentation, no reward; the real text reader reads the
field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kgagent.actions import Action
from kgagent.agent.runner import Runner
from kgagent.brain.offline import OfflineBrain
from kgagent.envs.base import Env, GroundTruth
from kgagent.memory import EncoderSpec, Memory
from kgagent.perception.base import Segment
from kgagent.perception.encoders import PixelEncoder
from kgagent.perception.segmenters import phash
from kgagent.runlog_read import read_log

W, H = 320, 160
FIELD = (20, 30, 280, 32)
SEND = (200, 100, 90, 36)
FONT = cv2.FONT_HERSHEY_SIMPLEX


def _inside(x: int, y: int, box: tuple[int, int, int, int]) -> bool:
    bx, by, bw, bh = box
    return bx <= x < bx + bw and by <= y < by + bh


class FormEnv(Env):
    """A field that shows what is typed (its last 24 characters: it scrolls) and a "Send"
    button that sends the form and empties the field (the program's reaction)."""

    name = "form"

    def __init__(self) -> None:
        self.text, self.sent = "", 0

    @property
    def size(self) -> tuple[int, int]:
        return (W, H)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.text, self.sent = "", 0
        return self.observe(), {}

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if action.kind == "key" and action.key and len(action.key) == 1:
            self.text += action.key
        elif action.kind == "key" and action.key == "space":
            self.text += " "
        elif action.kind == "key" and action.key == "backspace":
            self.text = self.text[:-1]
        elif action.kind == "type" and action.text:
            self.text += action.text
        elif action.kind == "click" and _inside(action.x, action.y, SEND):
            self.sent += 1
            self.text = ""
        return self.observe(), 0.0, False, False, {}

    def observe(self) -> np.ndarray:
        img = np.full((H, W, 3), 235, np.uint8)
        x, y, w, h = FIELD
        cv2.rectangle(img, (x, y), (x + w, y + h), (120, 120, 120), 1)
        cv2.putText(img, self.text[-24:], (x + 6, y + 22), FONT, 0.6, (20, 20, 20), 1, cv2.LINE_AA)
        x, y, w, h = SEND
        img[y : y + h, x : x + w] = (60, 90, 160)
        cv2.putText(img, "Send", (x + 20, y + 24), FONT, 0.6, (255, 255, 255), 1, cv2.LINE_AA)
        # what was sent shows as a row of marks: the program's answer
        for i in range(min(self.sent, 20)):
            img[80:90, 20 + 8 * i : 26 + 8 * i] = (200, 60, 60)
        return img

    def ground_truth(self) -> GroundTruth:
        return GroundTruth(progression=float(self.sent), score=float(self.sent))


class FormSegmenter:
    """The field and the button, as a perfect segmenter would see them."""

    identity = "form"

    def segment(self, image: np.ndarray) -> list[Segment]:
        out = []
        for x, y, w, h in (FIELD, SEND):
            crop = image[y : y + h, x : x + w].copy()
            out.append(Segment((x, y, w, h), crop, phash(crop)))
        return out


def _run(cfg, path: Path, steps: int):
    cfg.run.seed = 1
    return Runner(
        cfg,
        memory_path=path,
        env=FormEnv(),
        encoder=PixelEncoder(),
        segmenter=FormSegmenter(),
        brain=OfflineBrain(),
        progress=False,
        log=lambda m: None,
    ).run(steps)


def test_typing_into_a_field_is_no_answer_of_the_program(cfg, tmp_path) -> None:
    s = _run(cfg, tmp_path / "m", 40)
    _, steps, _ = read_log(s.log_path)
    executions = [e for r in steps for e in r["executions"]]
    echoes = [e for e in executions if e["echo"]]
    assert echoes, "the field was found by its echo"
    assert all(e["r_total"] == 0.0 for e in echoes)  # no reward for an echo
    assert all(e["operations"][-1]["kind"] in ("key", "hotkey", "type") for e in echoes)
    # augmentation notes the echo and goes on: no skill is made of it
    notes = [e["note"] for e in executions if "a field's echo" in (e.get("note") or "")]
    assert notes
    mem = Memory.open(tmp_path / "m", cfg, encoder=EncoderSpec.of(PixelEncoder()))
    try:
        counts = mem.input_counts()
    finally:
        mem.close()
    # every key typed shows up in the field; echoes are not answers, so few keys "answer"
    groups = ("letters", "digits", "punctuation", "texts")
    tried = sum(counts[f"group:{g}"][1] for g in groups if f"group:{g}" in counts)
    answered = sum(counts[f"group:{g}"][2] for g in groups if f"group:{g}" in counts)
    assert tried >= 10 and answered < tried / 2


def test_with_field_echo_off_typing_counts_as_before(cfg, tmp_path) -> None:
    cfg.perception.field_echo = False
    s = _run(cfg, tmp_path / "m", 20)
    _, steps, _ = read_log(s.log_path)
    assert not any(e["echo"] for r in steps for e in r["executions"])
