"""benchmarks/experiments/same_memory.py: two memories built alike are the same, ids aside;
a changed property, row or blob is a difference; a missing memory is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory

from . import load_experiment

ENC = EncoderSpec("test:v1", 4, (0.95, 0.88))


def _build(path: Path, label: str = "Open") -> None:
    crop = np.full((6, 8, 3), 40, dtype=np.uint8)
    with Memory.open(path, Config(), encoder=ENC) as m:
        s = m.merge_or_create_state(np.array([1.0, 0, 0, 0]), thumbnail=crop).id
        o = m.upsert_object(crop, (1, 2, 8, 6), 0x0F0F, label=label)
        m.link_state_objects(s, [o.id])


def test_memories_built_alike_are_the_same_and_a_changed_label_is_not(
    tmp_path: Path, capsys
) -> None:
    mod = load_experiment("same_memory")
    _build(tmp_path / "a")
    _build(tmp_path / "b")  # other random id parts, other times
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1  # built at other times
    capsys.readouterr()
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "b"), "--ignore-times"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["same"] and out["tables"]["Object"] == {"old": 1, "new": 1, "same": True}
    assert out["tables"]["HAS_OBJECT"]["same"] and out["blobs"]["old"] >= 1
    _build(tmp_path / "c", label="Save")
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "c"), "--ignore-times"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["same"] and not out["tables"]["Object"]["same"]
    assert out["tables"]["State"]["same"]


def test_a_missing_memory_is_one_error_line(tmp_path: Path, capsys) -> None:
    mod = load_experiment("same_memory")
    _build(tmp_path / "a")
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
