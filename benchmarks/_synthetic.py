"""Synthetic GUI-like experience for the memory benchmark (see memory_scale.py).

States are unit features clustered around "screen types": each type is a random
unit centroid, each state of it is ``centroid + sqrt(s2) * g / sqrt(dim)`` with
``g`` standard normal and ``s2`` drawn per state from ``[S2_LOW, s2_high]``,
then normalised. Two states of one type then have cosine ≈
``1 / sqrt((1 + s2_i)(1 + s2_j))``, i.e. mostly in (0.85, 0.94]; ``s2_high`` is
calibrated so that the requested number of pairs fall in (θ_simi, θ_merge].
States of different types have cosine ≈ 0 (random centroids in 512-d).

Similarity edges are computed exactly (blockwise per type), so the graph
agrees with the vectors. Skill edges follow screen types: every skill has a
home type and a target type, and its edges go from states of the first to
states of the second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PER_TYPE = 50  # states per screen type (100k states → 2000 types)
S2_LOW = 0.07  # smallest noise: keeps same-type pairs below θ_merge = 0.95
OPERATIONS = json.dumps([{"kind": "click", "point": [100, 200]}], sort_keys=True)


@dataclass
class Synthetic:
    ids: list[str]
    vecs: np.ndarray  # (n, dim) float32, unit rows
    type_of: np.ndarray  # (n,) int
    centroids: np.ndarray  # (types, dim)
    members: list[np.ndarray]  # state rows of each type
    sim_a: np.ndarray  # similarity edges: rows a < b, weight w
    sim_b: np.ndarray
    sim_w: np.ndarray
    skill_ids: list[str]
    skill_active: np.ndarray  # bool
    skill_exec: np.ndarray
    skill_fit: np.ndarray
    edge_src: np.ndarray  # skill edges: state rows, skill index
    edge_dst: np.ndarray
    edge_skill: np.ndarray
    edge_w: np.ndarray
    edge_change: np.ndarray
    edge_count: np.ndarray
    edge_r: np.ndarray


def hex_ids(prefix: str, n: int, rng: np.random.Generator) -> list[str]:
    """``prefix-<16 hex>`` keys, unique (the store makes ``prefix-<seq>-<hex>``; any string works)."""
    raw = rng.integers(0, 2**63 - 1, size=int(n * 1.01) + 16, dtype=np.int64)
    uniq = np.unique(raw)
    rng.shuffle(uniq)
    if len(uniq) < n:
        raise RuntimeError("id collision; change the seed")
    return [f"{prefix}-{int(v):016x}" for v in uniq[:n]]


def _type_states(c: np.ndarray, n: int, s2_high: float, rng: np.random.Generator) -> np.ndarray:
    dim = len(c)
    s2 = rng.uniform(S2_LOW, s2_high, n).astype(np.float32)
    x = c[None, :] + np.sqrt(s2)[:, None] * rng.standard_normal(
        (n, dim), dtype=np.float32
    ) / np.sqrt(dim)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def _unit(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    c = rng.standard_normal((n, dim), dtype=np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def calibrate(
    dim: int, per_type: int, edges_per_state: float, lo: float, hi: float, seed: int = 1
) -> float:
    """Bisect ``s2_high`` so that pairs in (lo, hi] ≈ edges_per_state per state."""
    rng = np.random.default_rng(seed)
    cents = _unit(100, dim, rng)
    noise_seed = int(rng.integers(1 << 30))

    def rate(s2_high: float) -> float:
        r = np.random.default_rng(noise_seed)
        tot = 0
        for c in cents:
            x = _type_states(c, per_type, s2_high, r)
            s = (x @ x.T)[np.triu_indices(per_type, 1)]
            tot += int(((s > lo) & (s <= hi)).sum())
        return tot / (len(cents) * per_type)

    a, b = S2_LOW + 0.01, 1.0
    for _ in range(18):
        m = 0.5 * (a + b)
        if rate(m) > edges_per_state:
            a = m  # too many edges: more noise
        else:
            b = m
    return 0.5 * (a + b)


def similar_pairs(
    vecs: np.ndarray, members: list[np.ndarray], lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a < b) of one type with lo < cos ≤ hi, exactly."""
    A, B, W = [], [], []
    for rows in members:
        x = vecs[rows]
        s = x @ x.T
        i, j = np.nonzero(np.triu((s > lo) & (s <= hi), 1))
        A.append(rows[i])
        B.append(rows[j])
        W.append(s[i, j])
    return np.concatenate(A), np.concatenate(B), np.concatenate(W).astype(np.float64)


def build(
    n_states: int,
    n_similar: int,
    n_skill_edges: int,
    n_skills: int,
    *,
    dim: int = 512,
    theta_merge: float = 0.95,
    theta_simi: float = 0.88,
    alpha: float = 0.7,
    c0: float = 5.0,
    seed: int = 0,
) -> Synthetic:
    rng = np.random.default_rng(seed)
    n_types = max(1, n_states // PER_TYPE)
    s2_high = calibrate(dim, PER_TYPE, n_similar / n_states, theta_simi, theta_merge, seed + 1)
    centroids = _unit(n_types, dim, rng)
    type_of = np.sort(np.arange(n_states) % n_types)
    vecs = np.empty((n_states, dim), dtype=np.float32)
    # type_of is sorted: the members of a type are one contiguous range
    bounds = np.searchsorted(type_of, np.arange(n_types + 1))
    members = [np.arange(bounds[t], bounds[t + 1]) for t in range(n_types)]
    for t, rows in enumerate(members):
        vecs[rows] = _type_states(centroids[t], len(rows), s2_high, rng)
    sim_a, sim_b, sim_w = similar_pairs(vecs, members, theta_simi, theta_merge)
    ids = hex_ids("s", n_states, rng)

    # Skills: 95% active (these label edges), 5% pruned (no edges, as prune_skill leaves it).
    skill_ids = hex_ids("k", n_skills, rng)
    skill_active = rng.random(n_skills) >= 0.05
    skill_exec = rng.poisson(8, n_skills).astype(np.int64)
    skill_fit = np.round(rng.normal(0.5, 1.0, n_skills), 4)
    active = np.nonzero(skill_active)[0]
    home = rng.integers(0, n_types, len(active))
    target = rng.integers(0, n_types, len(active))
    draw = int(n_skill_edges * 1.02) + 16  # a few duplicates are dropped below
    pick = rng.integers(0, len(active), draw)
    size = np.diff(bounds)
    h, t = home[pick], target[pick]
    src = bounds[h] + (rng.random(draw) * size[h]).astype(np.int64)
    dst = bounds[t] + (rng.random(draw) * size[t]).astype(np.int64)
    skill = active[pick]
    key = np.stack([src, dst, skill], axis=1)
    key = np.unique(key, axis=0)  # MERGE semantics: one edge per (src, dst, skill)
    key = key[np.sort(rng.choice(len(key), size=min(n_skill_edges, len(key)), replace=False))]
    src, dst, skill = key[:, 0], key[:, 1], key[:, 2]
    m = len(src)
    change = np.round(rng.uniform(0.0, 1.0, m), 4)
    count = rng.integers(1, 6, m)
    r_total = np.round(rng.normal(0.3, 0.5, m), 4)
    fit = skill_fit[skill]
    denom = fit + c0
    fit_term = np.where(denom > 0, fit / np.where(denom > 0, denom, 1.0), 0.0)
    w = 1.0 / (1.0 + np.exp(-(alpha * change + (1 - alpha) * fit_term)))
    return Synthetic(
        ids, vecs, type_of, centroids, members, sim_a, sim_b, sim_w,
        skill_ids, skill_active, skill_exec, skill_fit,
        src, dst, skill, w, change, count, r_total,
    )  # fmt: skip


def write_parquet(
    syn: Synthetic, folder: Path, now: float, schema: dict[str, list[tuple[str, str]]]
) -> dict[str, Path]:
    """One parquet file per table, columns in the order of the memory's ``schema``.

    ``schema``: per table, its properties (name, type) as the engine lists them
    (:func:`table_schema`). A property the synthetic data does not fill (one a later
    migration added, such as ``origin``) gets the empty value of its type.
    """
    folder.mkdir(parents=True, exist_ok=True)
    n = len(syn.ids)
    ids = pa.array(syn.ids, pa.string())
    rng = np.random.default_rng(7)
    visits = rng.integers(1, 40, n)
    first = now - rng.uniform(0, 30 * 86400, n)
    tables = {
        "State": pa.table(
            {
                "id": ids,
                "feature_rev": pa.array(np.zeros(n, np.int64)),
                "visits": pa.array(visits.astype(np.int64)),
                "first_seen": pa.array(first),
                "last_seen": pa.array(first + rng.uniform(0, 86400, n)),
                "thumbnail": pa.array([""] * n, pa.string()),
                "mcts": pa.array([""] * n, pa.string()),
            }
        ),
        "Skill": pa.table(
            {
                "id": pa.array(syn.skill_ids, pa.string()),
                "name": pa.array([f"skill_{i}" for i in range(len(syn.skill_ids))], pa.string()),
                "description": pa.array(
                    ["click the button that opens the next screen"] * len(syn.skill_ids)
                ),
                "operations": pa.array([OPERATIONS] * len(syn.skill_ids), pa.string()),
                "fitness": pa.array(syn.skill_fit.astype(np.float64)),
                "executions": pa.array(syn.skill_exec),
                "status": pa.array(
                    np.where(syn.skill_active, "active", "pruned").tolist(), pa.string()
                ),
                "parent_id": pa.array([""] * len(syn.skill_ids), pa.string()),
                "failures": pa.array(np.zeros(len(syn.skill_ids), np.int64)),
                "low_rewards": pa.array(np.zeros(len(syn.skill_ids), np.int64)),
                "created_at": pa.array(np.full(len(syn.skill_ids), now - 86400.0)),
            }
        ),
        "SIMILAR": pa.table(
            {
                "from": ids.take(pa.array(syn.sim_a)),
                "to": ids.take(pa.array(syn.sim_b)),
                "weight": pa.array(syn.sim_w),
            }
        ),
        "SKILL_EDGE": pa.table(
            {
                "from": ids.take(pa.array(syn.edge_src)),
                "to": ids.take(pa.array(syn.edge_dst)),
                "skill": pa.array(syn.skill_ids, pa.string()).take(pa.array(syn.edge_skill)),
                "weight": pa.array(syn.edge_w),
                "change": pa.array(syn.edge_change),
                "count": pa.array(syn.edge_count.astype(np.int64)),
                "r_total": pa.array(syn.edge_r),
                "updated": pa.array(np.full(len(syn.edge_src), now)),
            }
        ),
    }
    out = {}
    for name, tab in tables.items():
        p = folder / f"{name}.parquet"
        pq.write_table(_fit(tab, schema[name], name), p)
        out[name] = p
    return out


_EMPTY = {
    "STRING": ("", pa.string()),
    "INT64": (0, pa.int64()),
    "DOUBLE": (0.0, pa.float64()),
    "BOOL": (False, pa.bool_()),
}


def table_schema(mem, tables: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """Each table's properties (name, type) in the engine's order, from ``table_info``.

    A relationship table's rows start with its two end points (``from``, ``to``), which
    ``table_info`` does not list.
    """
    out = {}
    for t in tables:
        rows = mem.cypher(f"CALL table_info('{t}') RETURN *")
        props = [(r["name"], r["type"]) for r in rows]
        if rows and "storage_direction" in rows[0]:
            props = [("from", "STRING"), ("to", "STRING"), *props]
        out[t] = props
    return out


def _fit(tab: pa.Table, props: list[tuple[str, str]], name: str) -> pa.Table:
    cols, n = [], tab.num_rows
    for prop, typ in props:
        if prop in tab.column_names:
            cols.append(tab.column(prop))
        elif typ in _EMPTY:
            value, arrow_type = _EMPTY[typ]
            cols.append(pa.array([value] * n, arrow_type))
        else:
            raise SystemExit(f"{name}.{prop}: no synthetic value for a {typ} property")
    extra = set(tab.column_names) - {p for p, _ in props}
    if extra:
        raise SystemExit(f"{name}: the memory has no property {sorted(extra)}")
    return pa.table(cols, names=[p for p, _ in props])
