"""benchmarks/experiments/memory_calls.py: a kgagent command with its memory calls counted."""

from __future__ import annotations

from pathlib import Path

from kgagent.agent import timing

from . import load_experiment


def test_a_run_prints_its_memory_calls_by_method(tmp_path: Path, capsys, monkeypatch) -> None:
    # The counting wraps a class attribute: monkeypatch puts the original back after.
    monkeypatch.setattr(timing.Timed, "__getattr__", timing.Timed.__getattr__)
    mod = load_experiment("memory_calls")
    code = mod.main(
        ["play", "--env", "cardgame", "--steps", "3", "--memory", str(tmp_path / "m"), "--quiet"]
    )
    err = capsys.readouterr().err
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in err.splitlines() if line.strip()}
    assert int(rows["merge_or_create_state"][0]) >= 1
    assert int(rows["upsert_objects"][0]) >= 1
    assert float(rows["all"][1]) > 0


def test_a_failing_command_keeps_its_exit_code(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(timing.Timed, "__getattr__", timing.Timed.__getattr__)
    mod = load_experiment("memory_calls")
    assert mod.main(["play", "--env", "nosuch", "--memory", str(tmp_path / "m")]) != 0
    assert "memory call" in capsys.readouterr().err
