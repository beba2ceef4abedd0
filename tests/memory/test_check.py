"""Memory.check(): the eight consistency checks of `kgagent memory check`."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kgagent.config import Config
from kgagent.memory import Memory

from .conftest import ENC, e, tree_hash

CHECKS = [
    "states_without_vector",
    "orphan_vector_rows",
    "uncommitted_revisions",
    "torn_journal_tail",
    "dangling_skill_edges",
    "missing_blobs",
    "damaged_blobs",
    "unreferenced_blobs",
]
REPAIRABLE = {"orphan_vector_rows", "uncommitted_revisions", "torn_journal_tail"}


def check(path: Path) -> dict[str, dict]:
    with Memory.open(path, Config(), read_only=True) as m:
        rows = m.check()
    assert [r["check"] for r in rows] == CHECKS
    assert all(set(r) == {"check", "status", "count", "detail"} for r in rows)
    return {r["check"]: r for r in rows}


def bad(rows: dict[str, dict]) -> dict[str, tuple[str, int]]:
    return {k: (r["status"], r["count"]) for k, r in rows.items() if r["status"] != "ok"}


def test_a_sound_memory_passes_every_check(populated) -> None:
    rows = check(populated.path)
    assert bad(rows) == {}
    assert all(r["count"] == 0 and r["detail"] for r in rows.values())


def test_crash_leftovers_are_repairable_and_a_read_only_check_changes_nothing(populated) -> None:
    a = populated.states["A"]
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        m.vectors.put("s-never-committed", 0, e(7))  # the graph never committed this state
        m.vectors.put(a, m.vectors.rev(a) + 1, e(8))  # nor this merge
    journal = populated.path / "vectors" / "journal.kgv"
    with open(journal, "ab") as f:  # a record cut short by kill -9
        f.write(b"\x30\x00\x00\x00\x12\x34")
    before = tree_hash(populated.path, skip=("graph.db",))
    assert bad(check(populated.path)) == {
        "orphan_vector_rows": ("repairable", 1),
        "uncommitted_revisions": ("repairable", 1),
        "torn_journal_tail": ("repairable", 6),
    }
    assert tree_hash(populated.path, skip=("graph.db",)) == before
    Memory.open(populated.path, Config(), encoder=ENC).close()  # a read-write open repairs
    assert bad(check(populated.path)) == {}


def test_beside_a_live_writer_repairable_counts_are_its_writes_in_flight(populated) -> None:
    """`kgagent memory check` beside a running `kgagent play` sees that run's vector rows
    before its graph commits them: the writer's own, not a crash's leftovers."""
    from kgagent.memory.lock import lock_memory

    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        m.vectors.put("s-not-committed-yet", 0, e(7))
    held = lock_memory(populated.path)  # a writer holds the memory now
    try:
        rows = check(populated.path)
        with Memory.open(populated.path, Config(), read_only=True) as m:
            writer = m.info()["writer"]
    finally:
        held.release()
    assert bad(rows) == {"orphan_vector_rows": ("in flight", 1)}
    assert "writing this memory now" in rows["orphan_vector_rows"]["detail"]
    assert writer == f"pid {os.getpid()}"
    assert bad(check(populated.path)) == {"orphan_vector_rows": ("repairable", 1)}  # none now


def test_graph_and_blob_problems(populated) -> None:
    s = populated.states
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        m.cypher(
            "MATCH (a:State {id: $a}), (b:State {id: $b}) "
            "CREATE (a)-[:SKILL_EDGE {skill: 'k-gone', weight: 0.5, change: 0.1, count: 1, "
            "r_total: 0.0, updated: 0.0}]->(b)",
            {"a": s["D"], "b": s["E"]},
            write=True,
        )
        m.prune_skill(populated.skills["k3"])  # pruning leaves no dangling edge behind
        m.cypher(
            "CREATE (:State {id: 's-no-vector', feature_rev: 0, visits: 1, first_seen: 0.0, "
            "last_seen: 0.0, thumbnail: '', mcts: ''})",
            write=True,
        )
        crops = [m.get_object(o).crop_blob for o in populated.objects[:2]]
    blobs = populated.path / "blobs"
    (blobs / crops[0][:2] / f"{crops[0]}.png").unlink()
    (blobs / crops[1][:2] / f"{crops[1]}.png").write_bytes(b"not the png it was")
    rows = check(populated.path)
    assert bad(rows) == {
        "states_without_vector": ("problem", 1),
        "dangling_skill_edges": ("problem", 1),
        "missing_blobs": ("problem", 1),
        "damaged_blobs": ("problem", 1),
    }
    assert not REPAIRABLE & set(bad(rows))


def test_a_memory_without_an_encoder_has_no_vector_for_any_state(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with Memory.open(path, Config()) as m:  # no encoder: no vector store at all
        assert m.vectors is None
        for i in range(2):
            m.cypher(
                "CREATE (:State {id: $id, feature_rev: 0, visits: 1, first_seen: 0.0, "
                "last_seen: 0.0, thumbnail: '', mcts: ''})",
                {"id": f"s-{i}"},
                write=True,
            )
    assert bad(check(path)) == {"states_without_vector": ("problem", 2)}


def test_check_on_a_read_write_memory_reports_what_its_open_repaired(populated) -> None:
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        m.vectors.put("s-never-committed", 0, np.eye(16)[9])
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        rows = {r["check"]: r for r in m.check()}
        assert rows["orphan_vector_rows"]["count"] == 1  # found by this open ...
        assert m.consistency["rows_removed"] == 1  # ... and already removed
    assert bad(check(populated.path)) == {}
