"""kill -9 in the middle of writing steps: the memory reopens consistent, nothing committed lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.memory.vectors import VectorStore

from .conftest import ENC

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from kgagent.actions import Operation
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory

    path, seed = sys.argv[1], int(sys.argv[2])
    enc = EncoderSpec("test:v1", 16, (0.95, 0.88))
    rng = np.random.default_rng(seed)
    bases = rng.normal(size=(6, 16))
    m = Memory.open(path, Config(), encoder=enc)
    prev = m.merge_or_create_state(bases[0]).id
    print(json.dumps({"state": prev}), flush=True)
    i = 0
    while True:
        i += 1
        x = bases[rng.integers(0, 6)] + rng.normal(size=16) * rng.choice([0.05, 0.3, 0.6])
        hit = m.merge_or_create_state(x)
        k = m.add_skill(f"s{seed}-{i}", "d", [Operation("key", key="enter")])
        e = m.upsert_skill_edge(prev, hit.id, k.id, float(rng.random()), 1.0)
        print(json.dumps({"state": hit.id, "skill": k.id, "edge": [prev, hit.id, k.id],
                          "count": e.count}), flush=True)
        prev = hit.id
    """
)


def run_and_kill(path: Path, seed: int, after: int) -> list[dict]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        while len(lines) < after:
            line = proc.stdout.readline()
            assert line, f"child died early: {proc.stderr.read()[-2000:]}"
            lines.append(json.loads(line))
        # The child is busy writing the next step: kill it without warning.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return lines


def stored_rows(path: Path) -> tuple[int, int]:
    """(rows in LanceDB, records in the journal) of a memory, read without changing it."""
    vs = VectorStore(path / "vectors", ENC.dim, read_only=True)
    table = 0 if vs._table is None else vs._table.count_rows()
    return table, len(vs.journal.read())


def test_kill9_mid_write_reopens_consistent(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    rnd = random.Random(1234)
    reported: list[dict] = []
    flush_rows = Config().memory.vector_flush_rows
    for round_ in range(2):
        # Round 0 dies with every vector still in the journal; round 1 after at least
        # one batch of memory.vector_flush_rows went into LanceDB.
        after = rnd.randint(6, 20) if round_ == 0 else rnd.randint(70, 140)
        table_before = stored_rows(path)[0] if round_ else 0
        reported += run_and_kill(path, seed=round_, after=after)
        table, journal = stored_rows(path)
        if round_ == 0:
            assert table == 0 and journal >= after  # nothing flushed yet
        else:
            assert table - table_before >= flush_rows  # at least one batch was flushed
        with Memory.open(path, Config(), encoder=ENC) as m:  # read-write: reconcile runs
            committed = {r["id"]: int(r["feature_rev"]) for r in m._q("state_revisions")}
            assert m.consistency["missing_vectors"] == 0
            # Graph and vectors agree: every state has exactly its committed vector ...
            assert all(sid in m.vectors for sid in committed)
            assert len(m.vectors) == len(committed)
            for sid, rev in committed.items():
                assert m.vectors.rev(sid) == rev
            # ... and after reconcile LanceDB holds nothing else.
            tab = m.vectors._table.to_arrow()
            rows = sorted(zip(tab.column("id").to_pylist(), tab.column("rev").to_pylist()))
            assert rows == sorted(committed.items())
            # Nothing the child reported committed is lost.
            skills = {s.id for s in m.skills()}
            for r in reported:
                assert r["state"] in committed
                if "skill" in r:
                    assert r["skill"] in skills
                    src, dst, k = r["edge"]
                    got = m._q("skill_edge_get", src=src, dst=dst, skill=k)
                    assert got and got[0]["count"] >= r["count"]
            assert m._q("check_dangling_skill_edges") == []
