"""benchmarks/experiments/step_times.py: one part of a step's time, two versions paired by step."""

from __future__ import annotations

import json
from pathlib import Path

from . import load_experiment


def _log(path: Path, seed: int, memory: list[float], skill: str = "k-0000001-0123456789") -> str:
    rows = [{"type": "run", "seed": seed}]
    rows += [
        {
            "type": "step",
            "step": i,
            "skill_id": skill,
            "times_ms": {"memory": m, "settle": 10.0},
            "duration_s": (m + 10.0) / 1000,
        }
        for i, m in enumerate(memory)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def test_a_part_per_step_and_two_versions_paired_by_step(tmp_path: Path, capsys) -> None:
    old = [_log(tmp_path / "o1.jsonl", 1, [100.0, 120.0, 140.0])]
    old.append(_log(tmp_path / "o2.jsonl", 2, [50.0, 50.0]))
    # seed 1: the same decisions (ids differ only in their random part); seed 2 parted
    new = [_log(tmp_path / "n1.jsonl", 1, [60.0, 70.0, 80.0], skill="k-0000001-abcdefabcd")]
    new.append(_log(tmp_path / "n2.jsonl", 2, [40.0, 40.0], skill="k-0000002-abcdefabcd"))
    mod = load_experiment("step_times")
    groups = [f"old={tmp_path}/o*.jsonl", f"new={tmp_path}/n*.jsonl"]
    assert mod.main([*groups, "--part", "memory"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = json.loads(lines[0])
    assert first["group"] == "old" and first["steps"] == 5
    assert first["memory p50_ms"] == 100.0 and first["memory mean_ms"] == 92.0
    assert first["step p50_ms"] == 110.0 and first["steps_s"] == 0.5
    assert lines[2].startswith("seed 1: new − old, memory per step: -50.0 ± 5.8 SE")
    assert (
        lines[3] == "seed 2: new − old, memory per step: not paired: the runs made other decisions"
    )


def test_no_matching_log_is_one_error_line(tmp_path: Path, capsys) -> None:
    assert load_experiment("step_times").main([f"x={tmp_path}/none*.jsonl"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
