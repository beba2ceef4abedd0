"""A small populated memory with a fake 16-d encoder and deterministic features.

Features are built from an orthonormal basis so that every cosine in the tests is
known exactly: ``at(cos, a, b)`` is a unit vector at cosine ``cos`` from basis
vector ``a``, leaning towards basis vector ``b``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory

ENC = EncoderSpec("test:v1", 16, (0.95, 0.88))
DIM = 16


def e(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float64)
    v[i] = 1.0
    return v


def at(cos: float, a: int, b: int) -> np.ndarray:
    """Unit vector with cosine ``cos`` to e(a), the rest along e(b)."""
    return cos * e(a) + math.sqrt(1.0 - cos * cos) * e(b)


def tree_hash(path: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under ``path`` (relative names), to prove nothing changed.

    ``writer.lock`` is left out: it is the lock a writer holds (and names its pid in),
    runtime state rather than memory.
    """
    skip = (*skip, "writer.lock")
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not any(str(p.relative_to(path)).startswith(s) for s in skip)
    }


def graph_dump(db) -> dict[str, list]:
    """Every row of every table (archive export queries): the logical graph content.

    ``db`` is an open Memory or a GraphDB."""
    from kgagent.memory import queries

    run = db._q if isinstance(db, Memory) else (lambda n: db.execute(queries.get(n).text))
    return {name: run(name) for name in queries.load_all() if name.startswith("archive_export_")}


@dataclass
class Populated:
    path: Path
    states: dict[str, str] = field(default_factory=dict)  # label -> id
    skills: dict[str, str] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)
    cluster: str = ""
    stats: dict[str, int] = field(default_factory=dict)


def key(k: str = "enter") -> list[Operation]:
    return [Operation("key", key=k)]


def populate(path: Path, config: Config | None = None) -> Populated:
    """States A..E (A–B similar at 0.92), skills k1..k3 with edges, objects, a cluster, state stats."""
    out = Populated(path)
    rng = np.random.default_rng(7)
    with Memory.open(path, config or Config(), encoder=ENC) as m:
        thumb = lambda i: np.full((24, 32, 3), 20 * i, dtype=np.uint8)  # noqa: E731
        out.states["A"] = m.merge_or_create_state(e(0), thumbnail=thumb(1)).id
        out.states["B"] = m.merge_or_create_state(at(0.92, 0, 3), thumbnail=thumb(2)).id
        out.states["C"] = m.merge_or_create_state(e(1), thumbnail=thumb(3)).id
        out.states["D"] = m.merge_or_create_state(e(2)).id
        out.states["E"] = m.merge_or_create_state(e(5)).id
        # An observation that merges into C (cos 0.97 > θ_merge).
        m.merge_or_create_state(at(0.97, 1, 6))
        k1 = m.add_skill("open menu", "opens the menu", key("enter"))
        k2 = m.add_skill("close", "closes it", key("escape"))
        k3 = m.add_skill("tab", "next field", key("tab"), parent_id=k1.id)
        out.skills = {"k1": k1.id, "k2": k2.id, "k3": k3.id}
        s = out.states
        m.upsert_skill_edge(s["A"], s["C"], k1.id, 0.5, 1.0)
        m.upsert_skill_edge(s["A"], s["D"], k2.id, 0.1, 0.2)
        m.upsert_skill_edge(s["B"], s["D"], k2.id, 0.6, 0.9)
        m.upsert_skill_edge(s["C"], s["E"], k3.id, 0.3, 0.5)
        for i in range(3):
            crop = rng.integers(0, 255, size=(10, 12, 3), dtype=np.uint8)
            o = m.upsert_object(crop, (10 * i, 5, 12, 10), 0x0F0F0F0F << (8 * i))
            out.objects.append(o.id)
        m.link_state_objects(s["A"], out.objects[:2])
        m.link_skill_objects(k1.id, out.objects[:2])
        c = m.add_cluster("menus", "menu handling")
        m.add_to_cluster(k1.id, c.id)
        m.add_to_cluster(k2.id, c.id)
        m.record_cluster_selection(c.id)
        out.cluster = c.id
        m.put_state_stats(s["A"], {"visits": 3, "children": [{"skill": k1.id, "q": 0.5}]})
        out.stats = m.stats().as_row()
    return out


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def memory(tmp_path: Path, config: Config):
    m = Memory.open(tmp_path / "memory", config, encoder=ENC)
    yield m
    m.close()


@pytest.fixture
def populated(tmp_path: Path) -> Populated:
    return populate(tmp_path / "populated")
