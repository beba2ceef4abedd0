"""`kgagent runs show`: a killed round's library size says it is an estimate."""

from __future__ import annotations

import json
from pathlib import Path

from kgagent.rounds import compute_rounds, format_rounds


def _log(path: Path, added: list[str], summary: dict | None) -> Path:
    lines = [{"type": "run", "env": "toy", "seed": 0, "ablation": "full"}]
    lines.append({"type": "step", "step": 1, "skills_added": added, "skills_pruned": []})
    if summary is not None:
        lines.append({"type": "summary", "stopped": "steps", **summary})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_killed_rounds_library_size_is_marked_as_estimated(tmp_path: Path) -> None:
    totals = {"library_size": 1, "nodes": 2, "skill_edges": 1, "similarity_edges": 0}
    a = _log(tmp_path / "20261124-010000-toy-0.jsonl", ["k1"], totals)
    killed = _log(tmp_path / "20261124-020000-toy-0.jsonl", ["k2", "k3"], None)
    text = format_rounds(compute_rounds([a, killed]))
    row = text.splitlines()[3].split()
    assert row[:2] == ["1", "~3"] and row[4:7] == ["-", "-", "-"]
    assert "round 1 (20261124-020000-toy-0.jsonl): no summary line (killed, or died)" in text
    assert "~library size: the previous round's plus this round's additions" in text
    assert "nodes and edges unknown" in text
