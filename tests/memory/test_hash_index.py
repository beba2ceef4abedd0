"""The exact Hamming index behind object look-ups: it names every stored hash within the
distance (never misses one a scan would find), and memory's look-ups give what a scan of
every object gives."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.memory.hash_index import HammingIndex
from kgagent.records import control_key, names_control

from .conftest import ENC


def _near(rng: np.random.Generator, base: int, flips: int) -> int:
    for bit in rng.choice(64, size=flips, replace=False):
        base ^= 1 << int(bit)
    return base


def _hashes(rng: np.random.Generator, n: int) -> list[int]:
    """Clustered like a screen's textures: a few looks, each drawn with a few bits flipped."""
    looks = [int(v) for v in rng.integers(0, 2**63, size=8)] + [0, 2**64 - 1]
    return [
        _near(rng, looks[int(rng.integers(len(looks)))], int(rng.integers(0, 12))) for _ in range(n)
    ]


def _within(values: list[int], q: int, d: int) -> set[int]:
    return {i for i, v in enumerate(values) if (v ^ q).bit_count() <= d}


@pytest.mark.parametrize("distance", [0, 1, 6, 13, 63, 64, 80])
def test_every_hash_within_the_distance_is_a_candidate(distance: int) -> None:
    rng = np.random.default_rng(distance)
    values = _hashes(rng, 600)
    index = HammingIndex(distance)
    assert [index.add(v) for v in values] == list(range(len(values)))
    for q in _hashes(rng, 200) + values[:50]:
        cand = index.candidates(q)
        assert list(cand) == sorted(set(cand.tolist()))  # ascending, each once
        assert _within(values, q, distance) <= set(cand.tolist())
    if distance <= 13:  # the index narrows the search (the scan names every position)
        sizes = [len(index.candidates(q)) for q in _hashes(rng, 50)]
        assert np.mean(sizes) < len(values)


def test_truncate_forgets_the_last_positions_only() -> None:
    rng = np.random.default_rng(1)
    values = _hashes(rng, 300)
    index = HammingIndex(6)
    for v in values:
        index.add(v)
    index.truncate(200, values[200:])
    assert len(index) == 200
    for q in values:
        cand = set(index.candidates(q).tolist())
        assert all(p < 200 for p in cand)
        assert _within(values[:200], q, 6) <= cand
    assert index.add(values[250]) == 200  # positions go on from where they stopped


def test_memory_finds_what_a_scan_of_every_object_finds(tmp_path) -> None:
    """Many look-alike objects of several sizes and labels: each look-up returns the
    object the definition names (the nearest hash within the distance, of a size within
    the tolerance and no other label; the first stored on ties)."""
    rng = np.random.default_rng(7)
    cfg = Config()
    m_cfg = cfg.memory
    crop = np.zeros((4, 4, 3), dtype=np.uint8)
    values = _hashes(rng, 400)
    sizes = [(int(rng.choice([10, 12, 14, 20])), int(rng.choice([8, 10]))) for _ in values]
    labels = [str(rng.choice(["", "", "Open", "Save", "x"])) for _ in values]
    with Memory.open(tmp_path / "m", cfg, encoder=ENC) as m:
        stored = m.upsert_objects(
            [
                (crop, (0, 0, w, h), v, lab)
                for v, (w, h), lab in zip(values, sizes, labels, strict=True)
            ]
        )
        objs = {o.id: o for o in stored}
        order = list(dict.fromkeys(o.id for o in stored))  # storage order

        def scan(q: int, size: tuple[int, int], label: str) -> str | None:
            best = None
            for oid in order:
                o = objs[oid]
                d = (o.phash ^ q).bit_count()
                w, h = max(size[0], 1), max(size[1], 1)
                rel = max(
                    abs(o.bbox[2] - w) / max(o.bbox[2], w), abs(o.bbox[3] - h) / max(o.bbox[3], h)
                )
                key = control_key(label) if names_control(label) else ""
                mine = control_key(o.label) if names_control(o.label) else ""
                if d > m_cfg.object_hash_distance or rel > m_cfg.object_size_tolerance:
                    continue
                if key and mine and mine != key:
                    continue
                if best is None or d < best[0]:
                    best = (d, oid)
            return None if best is None else best[1]

        for q, size, label in zip(
            _hashes(rng, 300),
            [(int(rng.choice([9, 12, 16, 25])), 10) for _ in range(300)],
            [str(rng.choice(["", "Open", "Save"])) for _ in range(300)],
            strict=True,
        ):
            hit = m.find_object(q, size, label)
            assert (hit.id if hit is not None else None) == scan(q, size, label)


def _scan(objs: list, q: int, size: tuple[int, int], label: str, cfg: Config) -> str | None:
    """The definition of find_object, as a scan of ``objs`` in storage order."""
    best = None
    w, h = max(size[0], 1), max(size[1], 1)
    key = control_key(label) if names_control(label) else ""
    for o in objs:
        d = (o.phash ^ q).bit_count()
        rel = max(abs(o.bbox[2] - w) / max(o.bbox[2], w), abs(o.bbox[3] - h) / max(o.bbox[3], h))
        mine = control_key(o.label) if names_control(o.label) else ""
        if d > cfg.memory.object_hash_distance or rel > cfg.memory.object_size_tolerance:
            continue
        if key and mine and mine != key:
            continue
        if best is None or d < best[0]:
            best = (d, o.id)
    return None if best is None else best[1]


def test_a_look_asked_again_after_objects_were_added_gets_the_answer_of_a_full_scan(
    tmp_path, monkeypatch
) -> None:
    """Answers are remembered per look and only newer objects are tested on a repeat: the
    same queries, asked between batches of stored objects (and after a batch whose write
    failed), always name what a scan of every object names, including a newer, nearer one."""
    rng = np.random.default_rng(11)
    cfg = Config()
    crop = np.zeros((4, 4, 3), dtype=np.uint8)
    queries = [
        (q, (int(rng.choice([10, 12, 20])), 10), str(rng.choice(["", "Open", "Save"])))
        for q in _hashes(rng, 120)
    ]
    stored: list = []
    with Memory.open(tmp_path / "m", cfg, encoder=ENC) as m:
        real_q = m._q

        def failing(name, /, **params):
            if name == "object_create":
                raise RuntimeError("disk full")
            return real_q(name, **params)

        for batch in range(6):
            values = _hashes(rng, 60)
            if batch == 3:  # a newer object exactly at a query's hash: it must win
                values[0] = queries[0][0]
            rows = [
                (crop, (0, 0, int(rng.choice([10, 12, 20])), 10), v, str(rng.choice(["", "Open"])))
                for v in values
            ]
            if batch == 4:  # a write that fails forgets its objects, and their answers
                monkeypatch.setattr(m, "_q", failing)
                with pytest.raises(RuntimeError):
                    m.upsert_objects(rows)
                monkeypatch.setattr(m, "_q", real_q)
                queries += [(v, (b[2], b[3]), lab) for _, b, v, lab in rows]
            else:
                for o in m.upsert_objects(rows):
                    if o.created:
                        stored.append(o)
            for q, size, label in queries:
                hit = m.find_object(q, size, label)
                assert (hit.id if hit is not None else None) == _scan(stored, q, size, label, cfg)
        assert m.find_object(queries[0][0], queries[0][1], queries[0][2]) is not None
