"""The exact in-process index and the LanceDB revision rules."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.memory.exact_index import PARTITION_MIN, ExactIndex
from kgagent.memory.vectors import VectorStore


def clustered(n: int, dim: int, centres: int, spread: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim))
    x = c[rng.integers(0, centres, size=n)] + spread * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def brute(m: np.ndarray, alive: np.ndarray, q: np.ndarray, low: float) -> tuple[int, set[int]]:
    sims = m @ q
    sims[~alive] = -2.0
    return int(np.argmax(sims)), {int(i) for i in np.nonzero(sims > low)[0]}


def test_exact_index_matches_brute_force_above_partition_min() -> None:
    dim, low = 32, 0.88
    data = clustered(PARTITION_MIN + 1500, dim, 60, 0.25, seed=1)
    idx = ExactIndex(dim)
    idx.add_many(data[:PARTITION_MIN])
    for v in data[PARTITION_MIN:]:  # incremental inserts after the partition build
        idx.add(v)
    assert idx._centroids is not None  # the partitioned path is the one under test
    m = data.copy()
    alive = np.ones(len(m), dtype=bool)
    rng = np.random.default_rng(2)
    # Moves (merged features) and removals keep the bounds valid.
    for row in rng.choice(len(m), size=200, replace=False):
        v = m[row] + 0.3 * rng.normal(size=dim).astype(np.float32)
        v /= np.linalg.norm(v)
        idx.update(int(row), v)
        m[row] = v
    for row in rng.choice(len(m), size=50, replace=False):
        idx.remove(int(row))
        alive[row] = False
    queries = clustered(150, dim, 60, 0.25, seed=1)  # same centres: plenty of neighbours
    queries = np.vstack([queries, clustered(50, dim, 5, 0.5, seed=9)])
    total = with_best = 0
    for q in queries:
        res = idx.search(q, low)
        best, near = brute(m, alive, q, low)
        if near:  # the best match is exact whenever it is above ``low`` (what callers use)
            assert res.best_row == best
        else:
            assert res.best_cos <= low and len(res.rows) == 0
        assert set(res.rows.tolist()) == near
        np.testing.assert_allclose(res.cos, m[res.rows] @ q, atol=1e-6)
        total += len(near)
        with_best += bool(near)
    assert total > 1000 and with_best > 140  # the comparison covered many neighbours


def test_reconcile_removes_orphans_and_uncommitted_revisions(tmp_path) -> None:
    dim = 4
    vs = VectorStore(tmp_path / "vectors", dim)
    one = np.eye(dim, dtype=np.float32)
    vs.put("s-a", 0, one[0])
    vs.put("s-b", 0, one[1])
    vs.put("s-b", 1, one[2])  # committed merge
    vs.put("s-b", 2, one[3])  # written, graph never committed (crash)
    vs.put("s-c", 0, one[3])  # orphan: the State node was never committed
    committed = {"s-a": 0, "s-b": 1, "s-d": 0}
    fresh = VectorStore(tmp_path / "vectors", dim)
    report = fresh.load(committed)
    assert report == {
        "orphan_rows": 1,
        "uncommitted_revisions": 1,
        "missing_vectors": 1,
        "journal_torn_bytes": 0,
    }
    np.testing.assert_array_equal(fresh.vector("s-b"), one[2])
    assert "s-c" not in fresh and "s-d" not in fresh
    assert fresh.reconcile(committed) == 3  # orphan, uncommitted rev 2, superseded rev 0
    tab = fresh._table.to_arrow()
    assert sorted(zip(tab.column("id").to_pylist(), tab.column("rev").to_pylist())) == [
        ("s-a", 0),
        ("s-b", 1),
    ]
    ro = VectorStore(tmp_path / "vectors", dim, read_only=True)
    assert ro.load(committed)["orphan_rows"] == 0
    assert ro.reconcile({}) == 0  # read-only never deletes
    assert ro.row_count() == 2


# ------------------------------------------------------------- the vector journal
def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _filled(tmp_path, seed: int, n: int, flush_rows: int) -> tuple[VectorStore, list[np.ndarray]]:
    """A store with ``n`` random unit vectors put as s-0 … s-(n-1), revision 0."""
    rng = np.random.default_rng(seed)
    vs = VectorStore(tmp_path / "vectors", 8, flush_rows=flush_rows)
    vecs = [_unit(rng, 8) for _ in range(n)]
    for i, v in enumerate(vecs):
        vs.put(f"s-{i}", 0, v)
    return vs, vecs


def test_journal_records_reach_lancedb_in_batches(tmp_path) -> None:
    vs, vecs = _filled(tmp_path, seed=0, n=6, flush_rows=4)
    # Four records were moved into LanceDB in one append; two wait in the journal.
    assert vs._table.count_rows() == 4 and vs.appends == 1
    assert len(vs.journal.read()) == 2
    assert vs.row_count() == 6
    vs.close()  # flushes the rest
    assert vs._table.count_rows() == 6 and len(vs.journal.read()) == 0
    fresh = VectorStore(tmp_path / "vectors", 8)
    fresh.load({f"s-{i}": 0 for i in range(6)})
    for i, v in enumerate(vecs):
        np.testing.assert_array_equal(fresh.vector(f"s-{i}"), v)


def test_journal_survives_a_crash_and_cuts_a_torn_tail(tmp_path) -> None:
    vs, vecs = _filled(tmp_path, seed=1, n=3, flush_rows=100)
    vs.put("s-0", 1, vecs[2])  # a merge's revision
    path = vs.journal.path
    good = path.stat().st_size
    with open(path, "ab") as f:  # a record cut short by kill -9
        f.write(b"\x30\x00\x00\x00\x12\x34")
    # No close: the process "died". A reader sees the records and the torn tail...
    committed = {"s-0": 1, "s-1": 0, "s-2": 0}
    ro = VectorStore(tmp_path / "vectors", 8, read_only=True)
    assert ro.load(committed)["journal_torn_bytes"] == 6
    assert path.stat().st_size == good + 6  # ...and changes nothing
    np.testing.assert_array_equal(ro.vector("s-0"), vecs[2])
    # A read-write open moves the records into LanceDB and cuts the tail.
    fresh = VectorStore(tmp_path / "vectors", 8)
    report = fresh.load(committed)
    assert report["journal_torn_bytes"] == 6 and report["missing_vectors"] == 0
    assert fresh._table.count_rows() == 4
    assert len(fresh.journal.read()) == 0 and fresh.journal.read().torn_bytes == 0
    np.testing.assert_array_equal(fresh.vector("s-0"), vecs[2])
    np.testing.assert_array_equal(fresh.vector("s-1"), vecs[1])


def test_journal_replay_after_a_crash_between_append_and_clear(tmp_path) -> None:
    """Records already in LanceDB are not appended twice."""
    vs, _ = _filled(tmp_path, seed=2, n=3, flush_rows=100)
    vs._append(vs._pending)  # the LanceDB append happened; the journal was not emptied
    fresh = VectorStore(tmp_path / "vectors", 8)
    fresh.load({f"s-{i}": 0 for i in range(3)})
    assert fresh._table.count_rows() == 3


def test_a_journal_that_lancedb_cannot_take_at_open_is_one_line_and_kept(
    tmp_path, monkeypatch
) -> None:
    """A full disk while an open moves the journal into LanceDB (``check --repair`` after a
    run stopped on a full disk): one line without LanceDB's Rust source place, saying what
    to do; the journal keeps its records for the next open."""
    from kgagent.errors import MemoryStoreError

    vs, vecs = _filled(tmp_path, seed=3, n=3, flush_rows=100)
    before = vs.journal.path.read_bytes()

    def full(self, rows):
        raise RuntimeError(
            "lance error: IO Error: Generic LocalFileSystem error: Unable to copy data to "
            "file: No space left on device (os error 28), "
            "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io/src/"
            "encodings/logical/structural.rs:191:9"
        )

    monkeypatch.setattr(VectorStore, "_append", full)
    with pytest.raises(MemoryStoreError) as info:
        VectorStore(tmp_path / "vectors", 8).load({f"s-{i}": 0 for i in range(3)})
    msg = str(info.value)
    assert "take the vector journal's records" in msg and "No space left on device" in msg
    assert ".rs:" not in msg and ".cargo" not in msg and "free some space" in msg
    assert "\n" not in msg and vs.journal.path.read_bytes() == before
    monkeypatch.undo()
    fresh = VectorStore(tmp_path / "vectors", 8)
    fresh.load({f"s-{i}": 0 for i in range(3)})
    np.testing.assert_array_equal(fresh.vector("s-2"), vecs[2])


def test_journal_with_a_foreign_header_is_refused_and_kept(tmp_path) -> None:
    from kgagent.errors import MemoryStoreError

    d = tmp_path / "vectors"
    d.mkdir()
    (d / "journal.kgv").write_bytes(b"not a journal at all")
    vs = VectorStore(d, 8)
    with pytest.raises(MemoryStoreError, match="not a kgagent vector journal"):
        vs.load({})
    assert (d / "journal.kgv").read_bytes() == b"not a journal at all"


def test_journal_of_another_dimension_is_refused(tmp_path) -> None:
    from kgagent.errors import MemoryStoreError

    vs = VectorStore(tmp_path / "vectors", 8)
    vs.put("s-0", 0, _unit(np.random.default_rng(3), 8))
    with pytest.raises(MemoryStoreError, match="8-d vectors but this memory's encoder is 4-d") as e:
        VectorStore(tmp_path / "vectors", 4).load({})
    assert str(e.value).endswith("restore the memory from backups/ or an export")


def test_a_reader_opens_lancedb_only_when_it_reads_a_vector(tmp_path) -> None:
    """Importing lancedb takes seconds; `kgagent query` reads the graph alone."""
    import subprocess
    import sys

    from kgagent.memory import EncoderSpec, Memory

    with Memory.open(tmp_path / "m", encoder=EncoderSpec("toy", 4, (0.95, 0.5))) as m:
        sid = m.merge_or_create_state(np.array([1.0, 0.0, 0.0, 0.0])).id
    code = (
        "import sys\n"
        "from kgagent.memory import Memory\n"
        f"m = Memory.open({str(tmp_path / 'm')!r}, read_only=True)\n"
        "rows = m._q('state_revisions')\n"
        "print(len(rows), 'lancedb' in sys.modules)\n"
        f"print(m.state_feature({sid!r}).tolist(), 'lancedb' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["1 False", "[1.0, 0.0, 0.0, 0.0] True"]
