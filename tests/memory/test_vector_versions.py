"""LanceDB's old table versions do not pile up, and dropping them never fails a reader."""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.memory import Memory, vectors
from kgagent.memory.vectors import TABLE, VectorStore

from .conftest import ENC


def _on_disk(directory: Path) -> tuple[int, int]:
    """(table versions, data files) of the vector table, as its folder holds them."""
    lance = directory / f"{TABLE}.lance"
    versions = list((lance / "_versions").glob("*.manifest"))
    return len(versions), len(list((lance / "data").iterdir()))


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.normal(size=dim)
    return v / np.linalg.norm(v)


@pytest.fixture
def drop_at_once(monkeypatch):
    """Every superseded version is old enough to drop (as it is a minute after the writes)."""
    monkeypatch.setattr(vectors, "KEEP_SUPERSEDED_S", 0.0, raising=False)
    monkeypatch.setattr(vectors, "_CLOCK_MARGIN_S", 0.0, raising=False)


def test_versions_and_files_stay_bounded_over_many_runs(tmp_path, drop_at_once) -> None:
    """Fifteen runs, each creating states and merging into old ones (new revisions),
    with small flushes and compactions between: each close leaves one version and one
    data file, and every state's committed vector reads back."""
    path = tmp_path / "m"
    cfg = Config()
    cfg.memory.vector_flush_rows, cfg.memory.compact_every = 3, 2
    rng = np.random.default_rng(0)
    seen: list[np.ndarray] = []
    for run in range(15):
        with Memory.open(path, cfg, encoder=ENC) as m:
            for _ in range(4):
                v = _unit(rng, ENC.dim)
                seen.append(v)
                m.merge_or_create_state(v)
            for v in seen[-8:-4]:  # revisit: a merge appends a new revision of a state
                m.merge_or_create_state(0.999 * v + 0.001 * _unit(rng, ENC.dim))
            want = {r["id"]: m.state_feature(r["id"]) for r in m._q("state_revisions")}
        versions, files = _on_disk(path / "vectors")
        assert (versions, files) == (1, 1), f"after run {run}: {versions} versions, {files} files"
    with Memory.open(path, cfg, read_only=True) as m:
        assert not any(m.consistency.values())
        assert len(want) == 15 * 4  # the revisits merged
        for s, v in want.items():
            np.testing.assert_array_equal(m.state_feature(s), v)


def test_a_memory_with_piled_up_versions_shrinks_on_its_next_close(tmp_path, drop_at_once) -> None:
    """A memory written before versions were dropped: an open and a close that write
    nothing drop them."""
    d = tmp_path / "vectors"
    rng = np.random.default_rng(1)
    vs = VectorStore(d, 8, flush_rows=1, compact_every=0)
    vecs = [_unit(rng, 8) for _ in range(20)]
    for i, v in enumerate(vecs):
        vs.put(f"s-{i}", 0, v)  # one append each, never compacted
    vs.journal.close()  # the process ended without compacting (no close())
    before = _on_disk(d)
    assert before[0] >= 20 and before[1] >= 20
    again = VectorStore(d, 8)
    again.load({f"s-{i}": 0 for i in range(20)})
    assert again.appends == 0  # nothing to write
    again.close()
    assert _on_disk(d) == (1, 1)
    fresh = VectorStore(d, 8, read_only=True)
    fresh.load({f"s-{i}": 0 for i in range(20)})
    for i, v in enumerate(vecs):
        np.testing.assert_allclose(fresh.vector(f"s-{i}"), v, rtol=1e-6)


def _versions(vs: VectorStore) -> list[int]:
    return sorted(int(v["version"]) for v in vs._table.list_versions())


def test_a_version_made_long_ago_but_superseded_just_now_is_kept(tmp_path) -> None:
    """What a reader may have just opened stays: the cut is by when a version was
    superseded, not by when it was made."""
    # the product's clock margin (1 s): LanceDB measures its own cut a moment after ours,
    # and a loaded machine's moment must not take the version a reader holds
    assert vectors._CLOCK_MARGIN_S >= 1.0
    rng = np.random.default_rng(2)
    vs = VectorStore(tmp_path / "vectors", 8, flush_rows=1, compact_every=0)
    vs.keep_superseded_s = 1.0
    for i in range(4):
        vs.put(f"s-{i}", 0, _unit(rng, 8))  # versions made now, superseded at once
    time.sleep(2.0)  # more than the margin, so that these go
    vs.put("s-4", 0, _unit(rng, 8))  # made, and the latest until the next put
    latest_then = vs._table.version
    time.sleep(2.0)  # made 2 s ago: older than keep_superseded_s
    vs.put("s-5", 0, _unit(rng, 8))  # superseded it just now
    vs.compact()
    kept = _versions(vs)
    assert latest_then in kept  # a reader that opened it a moment ago can still read it
    assert min(kept) == latest_then  # the versions superseded > 1 s ago went
    ro = VectorStore(tmp_path / "vectors", 8, read_only=True)
    ro.load({f"s-{i}": 0 for i in range(6)})
    assert len(ro) == 6


def test_a_reader_whose_version_was_dropped_reads_the_latest(tmp_path, drop_at_once) -> None:
    """A reader stopped between opening the table and reading it, for longer than the
    writer keeps a superseded version: it reads again at the latest version."""
    rng = np.random.default_rng(3)
    d = tmp_path / "vectors"
    vs = VectorStore(d, 8, flush_rows=2, compact_every=1)
    vecs = {f"s-{i}": _unit(rng, 8) for i in range(4)}
    for sid, v in vecs.items():
        vs.put(sid, 0, v)
    reader = VectorStore(d, 8, read_only=True)
    opened = reader._table.version  # the reader opens the table (here: its first read)
    again = []
    latest = reader._table.checkout_latest
    reader._table.checkout_latest = lambda: (again.append(1), latest())[1]
    for i in range(4, 8):
        vecs[f"s-{i}"] = _unit(rng, 8)
        vs.put(f"s-{i}", 0, vecs[f"s-{i}"])  # the writer appends and compacts
    assert opened not in _versions(vs)  # the reader's version is gone
    report = reader.load(dict.fromkeys(vecs, 0))
    assert again == [1] and report["missing_vectors"] == 0  # its first read failed
    for sid, v in vecs.items():
        np.testing.assert_allclose(reader.vector(sid), v, rtol=1e-6)


def test_readers_beside_a_writer_that_drops_versions_never_fail(tmp_path, drop_at_once) -> None:
    """Readers open and read the table while a writer appends, compacts and drops every
    superseded version at once (the worst case): every read succeeds, and gets every
    row the writer had flushed before the reader read the journal."""
    rng = np.random.default_rng(4)
    d = tmp_path / "vectors"
    vs = VectorStore(d, 8, flush_rows=2, compact_every=1)
    written: dict[str, np.ndarray] = {}
    for i in range(2):
        written[f"s-{i}"] = _unit(rng, 8)
        vs.put(f"s-{i}", 0, written[f"s-{i}"])
    done = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def read() -> None:
        try:
            while not done.is_set():
                known = dict(written)  # committed before the read starts
                ro = VectorStore(d, 8, read_only=True)
                assert ro._table is not None  # opened: at the version then the latest
                time.sleep(0.02)  # a slow reader: the writer may drop that version meanwhile
                ro.load(dict.fromkeys(known, 0))
                for sid, v in known.items():
                    np.testing.assert_allclose(ro.vector(sid), v, rtol=1e-6)
                reads[0] += 1
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=read) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            for i in range(2, 60, 2):
                pair = {f"s-{i}": _unit(rng, 8), f"s-{i + 1}": _unit(rng, 8)}
                for sid, v in pair.items():
                    vs.put(sid, 0, v)  # the second put flushes: both rows are in LanceDB
                written.update(pair)
                if errors:
                    break
        finally:
            done.set()
            for t in threads:
                t.join(timeout=60)
    assert not errors, errors[0]
    assert reads[0] >= 5
    assert len(_versions(vs)) <= 2  # the writer did drop versions as it went
