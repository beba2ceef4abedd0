"""benchmarks/text_fields.py: what a step log says about typing into a field, paired by seed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "text_fields.py"


def _script():
    spec = importlib.util.spec_from_file_location("text_fields_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _memory(path: Path, ops: list[dict], *, echoes: int, episodes: int, alive: bool) -> None:
    """A memory with one step log: one step per operation, one execution each."""
    steps = [
        {
            "type": "step",
            "step": i + 1,
            "state_id": f"s{i % 3}",
            "executions": [
                {
                    "to_state": f"s{(i + 1) % 3}",
                    "echo": i < echoes,
                    "grounding": [{"op": op, "action": {"kind": op["kind"]}, "error": None}],
                }
            ],
        }
        for i, op in enumerate(ops)
    ]
    summary = {"type": "summary", "episodes": episodes, "alive": alive}
    (path / "runs").mkdir(parents=True)
    lines = [{"type": "run"}, *steps, summary]
    (path / "runs" / "r.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")


KEY = {"kind": "key", "key": "a"}
CLICK = {"kind": "click", "object_id": "o-1"}


def test_typed_share_program_ends_states_and_echoes_of_a_log(tmp_path: Path) -> None:
    ops = [KEY, {"kind": "type", "text": "hi"}, {"kind": "key", "key": "backspace"}, CLICK]
    ops += [{"kind": "key", "key": "enter"}, {"kind": "hotkey", "key": "ctrl+a"}]
    _memory(tmp_path / "m", ops, echoes=2, episodes=3, alive=False)
    got = _script().measure(tmp_path / "m" / "runs" / "r.jsonl")
    assert got == {"typed": 0.5, "ended": 3.0, "states": 3.0, "echoes": 2.0}


def test_memories_of_two_arms_are_paired_by_seed(tmp_path: Path, capsys) -> None:
    for seed in (1, 2, 3):
        _memory(tmp_path / f"old-{seed}", [KEY] * 4, echoes=0, episodes=1, alive=True)
        typed = [KEY] * (seed - 1) + [CLICK] * (5 - seed)
        _memory(tmp_path / f"new-{seed}", typed, echoes=seed, episodes=2, alive=True)
    mod = _script()
    assert (
        mod.main(["--memories", str(tmp_path / "old"), str(tmp_path / "new"), "--seeds", "3"]) == 0
    )
    out = capsys.readouterr().out
    assert "typed   without 1.00 ± 0.00  with 0.25 ± 0.14  diff -0.75 ± 0.14" in out
    assert "(0 up, 0 even, 3 down)" in out
    assert "ended   without 0.00 ± 0.00  with 1.00 ± 0.00  diff +1.00" in out
    with pytest.raises(SystemExit):  # one of the two ways, not both, not none
        mod.main(["--seeds", "3"])
