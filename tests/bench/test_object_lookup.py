"""benchmarks/experiments/object_lookup.py: the index and the scan find the same objects."""

from __future__ import annotations

import json
from pathlib import Path

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.perception.encoders import PixelEncoder
from kgagent.perception.segmenters import OpenCVSegmenter

from . import load_experiment


def test_a_memory_of_crafter_objects_is_looked_up_both_ways(tmp_path: Path, capsys) -> None:
    mod = load_experiment("object_lookup")
    cfg = Config()
    shots = mod.frames(6, seed=3)
    segs = [s for f in shots[:3] for s in OpenCVSegmenter(cfg.perception).segment(f)]
    with Memory.open(tmp_path / "m", cfg, encoder=EncoderSpec.of(PixelEncoder())) as m:
        m.upsert_objects([(s.crop, s.bbox, s.phash, "") for s in segs])
    code = mod.main(["--memory", str(tmp_path / "m"), "--screens", "6", "--seed", "3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["same_objects"] is True
    assert out["objects"] > 0 and out["lookups"] >= 6
    assert out["found"] > 0  # the first three screens' segments are stored
    assert out["candidates_mean"] <= out["objects"]


def test_a_missing_memory_is_one_error_line(tmp_path: Path, capsys) -> None:
    mod = load_experiment("object_lookup")
    assert mod.main(["--memory", str(tmp_path / "none"), "--screens", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
