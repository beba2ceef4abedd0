"""benchmarks/experiments/action_latency.py: per-input times from step logs, each input counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import load_experiment


def _load():
    return load_experiment("action_latency")


def _step(times: dict[str, float], kinds: list[str]) -> dict:
    grounding = [{"action": {"kind": k}} for k in kinds]
    return {
        "type": "step",
        "times_ms": times,
        "executions": [{"actions": len(kinds), "grounding": grounding}],
    }


def test_a_step_time_is_shared_by_its_inputs_and_every_input_counts_once(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    rows = [
        {"type": "run"},
        _step({"settle": 300.0, "memory": 30.0}, ["key", "key", "click"]),  # 110 ms an input
        _step({"settle": 40.0, "memory": 10.0}, ["key"]),  # 50 ms
        _step({"settle": 5.0}, []),  # no input: not counted
        {"type": "summary"},
    ]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = _load().per_input([str(log)])
    assert out["inputs"] == 4
    assert out["p50_ms"] == 110.0  # three inputs at 110, one at 50
    assert out["mean_ms"] == 95.0
    assert out["part_median_ms"] == {"settle": 100.0, "memory": 10.0}
    assert out["input_kinds"] == {"key": 3, "click": 1}
    # by kind: only the steps whose inputs were all of one kind (the second step)
    assert out["by_kind"] == {
        "key": {"inputs": 1, "p50_ms": 50.0, "p95_ms": 50.0, "settle_median_ms": 40.0}
    }


def test_by_kind_separates_steps_of_keys_from_steps_of_drags(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    rows = [
        _step({"settle": 200.0, "input": 2.0}, ["key", "key"]),  # 101 ms an input
        _step({"settle": 100.0, "input": 1.0}, ["key"]),  # 101 ms
        _step({"settle": 100.0, "input": 200.0}, ["drag"]),  # 300 ms
        _step({"settle": 100.0, "input": 200.0}, ["drag", "key"]),  # mixed: left out
    ]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = _load().per_input([str(log)])
    assert out["inputs"] == 6 and out["input_kinds"] == {"key": 4, "drag": 2}
    assert list(out["by_kind"]) == ["key", "drag"]  # most inputs first
    assert out["by_kind"]["key"] == {
        "inputs": 3,
        "p50_ms": 101.0,
        "p95_ms": 101.0,
        "settle_median_ms": 100.0,
    }
    assert out["by_kind"]["drag"]["p50_ms"] == 300.0


def test_logs_without_an_input_are_a_clear_error(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text(json.dumps(_step({"settle": 5.0}, [])) + "\n")
    with pytest.raises(SystemExit, match="no step with an input"):
        _load().per_input([str(log)])


def test_a_file_that_is_not_a_step_log_is_one_error_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("not json\nnor this\n")
    assert _load().main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "is not JSON" in err and "\n" not in err


def test_globs_that_match_nothing_are_one_error_line(tmp_path: Path, capsys) -> None:
    assert _load().main([f"{tmp_path}/none-*.jsonl", f"{tmp_path}/x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: no step log matches {tmp_path}/none-*.jsonl {tmp_path}/x"


def test_presses_that_changed_nothing_are_counted_for_the_named_keys(tmp_path: Path) -> None:
    def press(key: str, change: float) -> dict:
        g = {"action": {"kind": "key", "key": key}, "change": change}
        return {"type": "step", "times_ms": {}, "executions": [{"actions": 1, "grounding": [g]}]}

    click = {"action": {"kind": "click"}, "change": 0.0}
    rows = [
        press("w", 0.0),
        press("a", 0.0),
        press("q", 0.0),  # not named: not counted
        {"type": "step", "times_ms": {}, "executions": [{"actions": 1, "grounding": [click]}]},
        press("s", 0.02),
        press("d", 0.0),
        press("w", 0.01),
    ]
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = _load().no_change([str(log)], {"w", "a", "s", "d"})
    assert out == {
        "keys": ["a", "d", "s", "w"],
        "presses": 5,
        "no_change": 3,
        "second_half": {"presses": 3, "no_change": 1},  # s, d, w
    }


def test_changes_after_an_action_had_settled_are_counted(tmp_path: Path) -> None:
    rows = [_step({}, ["key"]), {**_step({}, ["key"]), "late_changes": 2}, _step({}, [])]
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert _load().late_changes([str(log)]) == {"steps": 3, "changes": 2, "steps_with_one": 1}


def test_runs_wall_time_episodes_and_steps_that_would_not_settle(tmp_path: Path) -> None:
    rows = [
        {"type": "run"},
        _step({"settle": 2500.0}, ["key", "key"]),  # 1,250 ms an input: slow
        _step({"settle": 1800.0}, ["key", "key"]),  # 900 ms an input
        _step({"settle": 5000.0}, []),  # no input: not counted
        {"type": "summary", "duration_s": 61.5, "episodes": 3},
    ]
    logs = []
    for name in ("a", "b"):
        log = tmp_path / f"{name}.jsonl"
        log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        logs.append(str(log))
    totals = _load().run_totals(logs, 1000.0)
    assert totals == {"wall_s": 123.0, "episodes": 6, "slow_steps": 2}
    assert _load().run_totals(logs, 800.0)["slow_steps"] == 4
