"""Per-round Table 2 (kgagent/rounds.py): per-round counts, end-of-round totals, odd logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kgagent.errors import ConfigError
from kgagent.rounds import (
    TABLE2,
    compute_rounds,
    format_rounds,
    library_before,
    log_order,
    memory_rounds,
    rounds_csv,
    step_series,
)


def _log(path: Path, steps: list[dict], summary: dict | None, env: str = "cardgame") -> Path:
    lines = [{"type": "run", "log_version": 2, "env": env, "seed": 1, "ablation": "full"}]
    for i, s in enumerate(steps, 1):
        lines.append({"type": "step", "step": i, "r_total": 1.0, **s})
    if summary is not None:
        lines.append({"type": "summary", **summary})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _execs(valid: int, invalid: int) -> list[dict]:
    return [{"path": "hq", "valid_transition": True}] * valid + [
        {"path": "hq", "valid_transition": False}
    ] * invalid


def _summary(lib: int, aug: int, pruned: int, nodes: int, skill_edges: int, sim: int) -> dict:
    return {
        "library_size": lib,
        "skills_augmented": aug,
        "skills_pruned": pruned,
        "nodes": nodes,
        "skill_edges": skill_edges,
        "similarity_edges": sim,
        "progression": 3.0,
        "score": 9.0,
        "stopped": "steps",
    }


def test_per_round_counts_and_end_totals_follow_the_papers_table2(tmp_path: Path) -> None:
    # Round 0 adds 3 skills and prunes 1; round 1 adds 2 (cumulative summaries: 3 then 5 augmented).
    a = _log(
        tmp_path / "20261124-010000-cardgame-1.jsonl",
        [
            {"skills_added": ["k1", "k2"], "executions": _execs(1, 1), "truth": {"progression": 1}},
            {"skills_added": ["k3"], "skills_pruned": ["k1"], "executions": _execs(2, 0)},
        ],
        _summary(2, 3, 1, 10, 12, 30),
    )
    b = _log(
        tmp_path / "20261124-020000-cardgame-1.jsonl",
        [{"skills_added": ["k4", "k5"], "executions": _execs(1, 3)}],
        _summary(4, 5, 1, 14, 20, 25),
    )
    r0, r1 = compute_rounds([a, b])
    assert (r0.round, r1.round) == (0, 1)
    assert (r0.skills_augmented, r0.skills_pruned) == (3, 1)
    assert (r1.skills_augmented, r1.skills_pruned) == (2, 0)  # per round, not the summary's 5
    assert (r1.library_size, r1.nodes, r1.skill_edges, r1.similarity_edges) == (4, 14, 20, 25)
    assert (r1.nodes_added, r1.skill_edges_added, r1.similarity_edges_added) == (4, 8, -5)
    assert r0.nodes_added == 10  # the memory started empty (library 2 = 0 + 3 - 1)
    assert r0.err == pytest.approx(3 / 4) and r1.err == pytest.approx(1 / 4)
    assert r0.mismatch == [] and r1.mismatch == []
    assert library_before([r0, r1], 0) == 0 and library_before([r0, r1], 1) == 2
    text = format_rounds([r0, r1])
    head, _, first, second = text.splitlines()[:4]
    assert "skills augmented" in head and "library size" in head
    assert first.split()[:7] == ["0", "2", "3", "1", "10", "12", "30"]
    assert second.split()[:7] == ["1", "4", "2", "0", "14", "20", "25"]
    csv = rounds_csv([r0, r1], TABLE2).splitlines()
    assert csv[0] == "round,log," + ",".join(TABLE2)
    assert csv[2].startswith(f"1,{b.name},4,2,0,14,20,25,")


def test_a_round_without_summary_has_no_totals_and_a_mismatch_is_named(tmp_path: Path) -> None:
    a = _log(
        tmp_path / "20261124-010000-x-1.jsonl",
        [{"skills_added": ["k1"]}],
        _summary(1, 1, 0, 2, 1, 0),
    )
    killed = _log(tmp_path / "20261124-020000-x-1.jsonl", [{"skills_added": ["k2", "k3"]}], None)
    odd = _log(
        tmp_path / "20261124-030000-x-1.jsonl",
        [{"skills_added": ["k4"]}],
        _summary(9, 9, 0, 5, 5, 5),
    )
    odd2 = _log(
        tmp_path / "20261124-040000-x-1.jsonl",
        [{"skills_added": ["k5"]}],
        _summary(12, 12, 0, 5, 5, 5),
    )
    r = compute_rounds([a, killed, odd, odd2])
    assert not r[1].complete and r[1].stopped == "incomplete"
    assert r[1].library_size == 3  # estimated: 1 + 2 added
    assert r[1].nodes is None and r[2].nodes_added is None
    assert r[3].mismatch == ["library_size"]  # 9 + 1 != 12: something else changed the memory
    text = format_rounds(r)
    assert "round 1 (" in text and "no summary line" in text and "round 3: library_size" in text
    assert " - " in text.splitlines()[3]


def test_log_order_and_bad_logs(tmp_path: Path) -> None:
    later = _log(tmp_path / "20261124-010000-cardgame-1-1.jsonl", [], _summary(0, 0, 0, 0, 0, 0))
    first = _log(tmp_path / "20261124-010000-cardgame-1.jsonl", [], _summary(0, 0, 0, 0, 0, 0))
    os.utime(first, ns=(1, 1_000_000_000))
    os.utime(later, ns=(1, 2_000_000_000))
    assert log_order([later, first]) == [
        first,
        later,
    ]  # same second: the file written last is later
    (tmp_path / "junk.jsonl").write_text("not json\n{}\n")
    with pytest.raises(ConfigError, match="not JSON"):
        compute_rounds([tmp_path / "junk.jsonl"])
    # valid JSON that is no object, and bytes that are no text: one line, as any bad log
    (tmp_path / "list.jsonl").write_text('{"type": "run"}\n[1, 2, 3]\n')
    with pytest.raises(ConfigError, match="list.jsonl:2 is not a JSON object"):
        compute_rounds([tmp_path / "list.jsonl"])
    (tmp_path / "bytes.jsonl").write_bytes(b'{"type": "run"}\n\xff\n')
    with pytest.raises(ConfigError, match="bytes.jsonl is not UTF-8 text"):
        compute_rounds([tmp_path / "bytes.jsonl"])
    assert memory_rounds(tmp_path / "nowhere") == []
    assert format_rounds([]) == "no rounds (no step logs)"


def test_step_series_counts_library_and_err() -> None:
    steps = [
        {"step": 1, "skills_added": ["a"], "executions": _execs(1, 0), "truth": {"progression": 1}},
        {"step": 2, "skills_pruned": ["a"], "executions": _execs(0, 1), "r_total": -1.0},
    ]
    s = step_series(steps, library_start=5)
    assert s["library_size"] == [6.0, 5.0]
    assert s["err"] == [1.0, 0.5]
    assert s["progression"] == [1.0, 0.0]
    assert s["r_total"] == [0.0, -1.0]


def test_rounds_of_real_plays_match_what_the_runs_did(played: Path) -> None:
    from kgagent.runlog_read import read_log

    rounds = memory_rounds(played)
    assert len(rounds) >= 2
    summaries = [read_log(played / "runs" / r.log)[2] for r in rounds]
    for prev, r, s in zip([None, *summaries], rounds, summaries):
        before = prev["skills_augmented"] if prev else 0
        assert r.skills_augmented == s["skills_augmented"] - before  # per round from the steps
        assert r.nodes == s["nodes"] and r.library_size == s["library_size"]
        assert r.mismatch == []


def test_a_log_is_live_only_while_its_run_holds_the_memory(tmp_path: Path) -> None:
    from kgagent.memory.lock import lock_memory
    from kgagent.view.logs import RunLogs

    runs = tmp_path / "runs"
    runs.mkdir()
    older = _log(runs / "20261124-010000-cardgame-1.jsonl", [{}], None)
    os.utime(older, ns=(1, 1_000_000_000))
    _log(runs / "20261124-020000-cardgame-2.jsonl", [{}, {}], None)
    logs = RunLogs(tmp_path)
    first, newest = logs.all()
    # no summary line and no process writing the memory: a run that was killed
    assert newest.unfinished and newest.status == "incomplete" and not logs.live(newest)
    held = lock_memory(tmp_path)
    try:
        assert logs.live(newest)
        assert not logs.live(first)  # only the newest log can be the run going on
    finally:
        held.release()
    assert not logs.live(newest)


def test_a_round_that_executed_nothing_has_no_err(tmp_path: Path) -> None:
    """A run stopped at its first request executed nothing: its ERR is "-", not 0.000."""
    a = _log(tmp_path / "20261124-010000-cardgame-1.jsonl", [{"executions": _execs(1, 1)}], None)
    b = _log(tmp_path / "20261124-020000-cardgame-1.jsonl", [], _summary(0, 0, 0, 1, 0, 0))
    first, second = compute_rounds([a, b])
    assert first.err == 0.5 and second.err is None
    table = format_rounds([first, second]).splitlines()
    assert table[0].split()[-3:] == ["ERR", "cost", "$"]
    row = next(line for line in table if line.split()[:1] == ["1"])
    assert row.split()[-2] == "-"
