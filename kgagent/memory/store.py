"""The memory API: one directory of experience, one small object to use it.

A memory directory holds::

    manifest.json   schema version, kgagent version, engine, encoder identity/dim, times
    graph.db        the Kùzu / LadybugDB database (source of truth for the graph)
    vectors/        the LanceDB table of state features
    blobs/          content-addressed PNGs (object crops, state thumbnails)
    runs/           JSONL step logs of `kgagent play`
    backups/        copies taken before a schema migration

Every operation is a named query from ``queries/`` with bound parameters.
See docs/memory.md for the consistency rules between the graph and the vectors.
"""

from __future__ import annotations

import json
import math
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import kgagent
from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.errors import (
    EncoderMismatchError,
    MemoryStoreError,
    QueryError,
    ReadOnlyViolation,
    SchemaVersionError,
)
from kgagent.memory import migrations, queries
from kgagent.memory.engine import GraphDB, engine_name, engine_version
from kgagent.memory.files import BlobStore, read_manifest, write_manifest
from kgagent.memory.models import (
    Cluster,
    GraphStats,
    HQCandidate,
    PruneCandidate,
    Skill,
    SkillEdge,
    StateHit,
    UIObject,
)
from kgagent.memory.vectors import VectorStore, normalize

GRAPH = "graph.db"
VECTORS = "vectors"
BLOBS = "blobs"


@dataclass(frozen=True)
class EncoderSpec:
    """What the memory must know of the state encoder."""

    identity: str
    dim: int
    thresholds: tuple[float, float]  # the encoder's default (θ_merge, θ_simi)

    @classmethod
    def of(cls, encoder: Any) -> EncoderSpec:
        return cls(encoder.identity, int(encoder.dim), tuple(encoder.default_thresholds))


def new_id(prefix: str, seq: int) -> str:
    """``prefix-<sequence>-<random>``: unique across machines, ordered by creation.

    The random part keeps keys unique when memories from different machines are
    combined; the zero-padded sequence (per memory and kind) makes ids sort in
    creation order, so every tie broken "by id" is reproducible under a seed.
    """
    return f"{prefix}-{seq:07d}-{uuid.uuid4().hex[:10]}"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class Memory:
    """The agent's persistent experience: SA-KG, procedural memory, vectors, blobs."""

    def __init__(self) -> None:  # use Memory.open
        raise TypeError("use Memory.open(path, config, encoder=...)")

    # ================================================================= open
    @classmethod
    def open(
        cls,
        path: str | Path,
        config: Config | None = None,
        *,
        encoder: EncoderSpec | None = None,
        read_only: bool = False,
        create: bool = True,
    ) -> Memory:
        self = object.__new__(cls)
        self._init(Path(path).expanduser(), config or Config(), encoder, read_only, create)
        return self

    def _init(
        self, path: Path, config: Config, encoder: EncoderSpec | None, read_only: bool, create: bool
    ) -> None:
        self.path = path
        self.config = config
        self.read_only = read_only
        self._db: GraphDB | None = None
        manifest = read_manifest(path) if path.exists() else None
        if manifest is None:
            if read_only or not create:
                raise MemoryStoreError(
                    f"no kgagent memory at {path}; run `kgagent play --memory {path}` to create one"
                )
            if path.exists() and any(path.iterdir()):
                raise MemoryStoreError(
                    f"{path} exists and is not a kgagent memory; choose an empty directory"
                )
            path.mkdir(parents=True, exist_ok=True)
            now = time.time()
            manifest = {
                "schema_version": 0,
                "kgagent_version": kgagent.__version__,
                "engine": engine_name(config.memory.engine),
                "encoder": None,
                "created": now,
                "updated": now,
            }
            write_manifest(path, manifest)
        self.manifest = manifest
        self.engine = manifest.get("engine", "kuzu")
        wanted = engine_name(config.memory.engine)
        if wanted != self.engine:
            raise MemoryStoreError(
                f"this memory was written by the {self.engine} engine, not {wanted}; "
                f"set memory.engine={self.engine} (or KGAGENT_ENGINE={self.engine}), or move it with "
                "`kgagent memory export` / `kgagent memory import`"
            )
        latest = migrations.latest_version()
        recorded = int(manifest.get("schema_version", 0))
        if recorded > latest:
            raise SchemaVersionError(
                f"this memory has schema version {recorded}, newer than this kgagent knows ({latest}); "
                "upgrade kgagent to open it"
            )
        if recorded and recorded < latest and not read_only and config.memory.backup_on_migrate:
            self._backup(f"schema-v{recorded}")
        self._db = GraphDB(
            path / GRAPH, self.engine, read_only=read_only, threads=config.memory.query_threads
        )
        try:
            self._finish_open(encoder, latest)
        except BaseException:
            # A failed open must leave the memory as it was: close the database
            # without close()'s manifest update.
            db, self._db = self._db, None
            db.close()
            raise

    def _finish_open(self, encoder: EncoderSpec | None, latest: int) -> None:
        todo = migrations.pending(self._db)
        if todo:
            if self.read_only:
                raise SchemaVersionError(
                    f"this memory needs schema migration to version {latest}; open it once "
                    "read-write (e.g. `kgagent memory info --migrate`) first"
                )
            migrations.apply(self._db, todo)
        if self.manifest.get("schema_version") != latest and not self.read_only:
            self.manifest["schema_version"] = latest
            write_manifest(self.path, self.manifest)

        recorded = self.manifest.get("encoder")
        if encoder is not None:
            if recorded is None:
                if self.read_only:
                    raise MemoryStoreError(
                        "this memory has no encoder yet; it cannot take features read-only"
                    )
                recorded = {
                    "identity": encoder.identity,
                    "dim": encoder.dim,
                    "thresholds": list(encoder.thresholds),
                }
                self.manifest["encoder"] = recorded
                write_manifest(self.path, self.manifest)
            elif recorded["identity"] != encoder.identity or int(recorded["dim"]) != encoder.dim:
                raise EncoderMismatchError(
                    f"this memory was built with encoder {recorded['identity']} ({recorded['dim']}-d); "
                    f"features from {encoder.identity} ({encoder.dim}-d) cannot join it. Use the same "
                    "perception.encoder / clip_weights, or start a new memory with --memory"
                )
        self.encoder = recorded
        default = tuple(recorded["thresholds"]) if recorded else (0.95, 0.88)
        m = self.config.memory
        self.theta_merge = m.theta_merge if m.theta_merge is not None else float(default[0])
        self.theta_simi = m.theta_simi if m.theta_simi is not None else float(default[1])
        if not self.theta_simi < self.theta_merge:
            raise MemoryStoreError(
                f"θ_simi ({self.theta_simi}) must be below θ_merge ({self.theta_merge})"
            )

        self.blobs = BlobStore(self.path / BLOBS)
        self._consistency: dict[str, int] = {}
        self._vectors_loaded = False
        self.vectors: VectorStore | None = None
        if recorded is not None:
            self.vectors = VectorStore(
                self.path / VECTORS,
                int(recorded["dim"]),
                read_only=self.read_only,
                flush_rows=self.config.memory.vector_flush_rows,
                compact_every=self.config.memory.compact_every,
            )
            if not self.read_only:  # repair crash leftovers now; readers load on first use
                self._load_vectors()
        self._skills: dict[str, Skill] = {s.id: s for s in self._load_skills()}
        self._objects: dict[str, UIObject] = {}
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._sizes = np.zeros((0, 2), dtype=np.float64)
        self._object_ids: list[str] = []
        for r in self._q("objects_all"):
            self._cache_object(self._object_from_row(r))
        counts = self.stats() if not self.read_only else None
        self._seq = (
            {
                "s": counts.nodes,
                "k": counts.skills_augmented,
                "o": counts.objects,
                "c": counts.clusters,
            }
            if counts
            else {}
        )

    def _backup(self, label: str) -> Path:
        dest = self.path / "backups" / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
        dest.mkdir(parents=True, exist_ok=True)
        for name in (GRAPH, GRAPH + ".wal", "manifest.json"):
            src = self.path / name
            if src.is_dir():
                shutil.copytree(src, dest / name)
            elif src.exists():
                shutil.copy2(src, dest / name)
        return dest

    def close(self) -> None:
        if self._db is None:
            return
        try:
            if not self.read_only:
                if self.vectors is not None:
                    self.vectors.close()
                self.manifest["updated"] = time.time()
                self.manifest["kgagent_version"] = kgagent.__version__
                write_manifest(self.path, self.manifest)
        finally:
            self._db.close()
            self._db = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ============================================================ queries
    def _q(self, query_name: str, /, **params: Any) -> list[dict[str, Any]]:
        if self._db is None:
            raise MemoryStoreError("this memory is closed")
        return self._db.execute(queries.get(query_name).text, params)

    def run_named(
        self, name: str, params: dict[str, Any] | None = None, *, write: bool = False
    ) -> list[dict[str, Any]]:
        """Run a named query (as ``kgagent query --name`` does)."""
        q = queries.get(name)
        missing = [p for p in q.params if p not in (params or {})]
        if missing:
            raise QueryError(
                f"query {name!r} needs parameter(s): {', '.join(missing)} (--param {missing[0]}=...)"
            )
        return self.cypher(q.text, params, write=write)

    def cypher(
        self, text: str, params: dict[str, Any] | None = None, *, write: bool = False
    ) -> list[dict[str, Any]]:
        """Run any Cypher. Read-only unless ``write``; a writing query is refused before it runs."""
        kw = queries.writes(text)
        if kw and not write:
            raise ReadOnlyViolation(f"this query writes ({kw}); pass --write to allow it")
        if kw and self.read_only:
            raise ReadOnlyViolation("this memory is open read-only; a writing query cannot run")
        if self._db is None:
            raise MemoryStoreError("this memory is closed")
        return self._db.execute(text, params or {})

    def _load_vectors(self) -> None:
        """Mirror the committed vectors; read-write opens also delete crash leftovers."""
        if self._vectors_loaded or self.vectors is None:
            return
        committed = {r["id"]: int(r["feature_rev"]) for r in self._q("state_revisions")}
        self._consistency = self.vectors.load(committed)
        if not self.read_only:
            self._consistency["rows_removed"] = self.vectors.reconcile(committed)
        self._vectors_loaded = True

    @property
    def consistency(self) -> dict[str, int]:
        """What the last load found inconsistent between graph and vectors (and repaired)."""
        self._load_vectors()
        return self._consistency

    # ============================================================= states
    def _need_vectors(self) -> VectorStore:
        if self.vectors is None:
            raise MemoryStoreError(
                "this memory was opened without an encoder; pass encoder=EncoderSpec(...)"
            )
        self._load_vectors()
        return self.vectors

    def merge_or_create_state(
        self, feature: np.ndarray, *, thumbnail: np.ndarray | None = None, isolated: bool = False
    ) -> StateHit:
        """Algorithm 1, line 4: merge into the most similar node or create one.

        Merge when cos > θ_merge (the merged feature is the normalised mean of
        old and new); then add/update/remove SIMILAR edges for
        θ_simi < cos ≤ θ_merge. ``isolated`` (ablation no_similarity): never
        merge and never link.
        """
        vs = self._need_vectors()
        x = normalize(feature)
        if x.shape[0] != vs.dim:
            raise EncoderMismatchError(
                f"feature has {x.shape[0]} dimensions, the memory expects {vs.dim}"
            )
        now = time.time()
        best, best_cos, near = vs.search(x, self.theta_simi) if not isolated else (None, -1.0, [])
        if best is not None and best_cos > self.theta_merge:
            merged = normalize(vs.vector(best) + x)  # normalised mean of old and new
            rev = vs.rev(best) + 1
            vs.put(best, rev, merged)
            _, _, near = vs.search(merged, self.theta_simi)
            self._db.begin()
            try:
                visits = self._q("state_merge_visit", state=best, now=now, rev=rev)[0]["visits"]
                added, removed = self._sync_similar(best, near, fresh=False)
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise
            vs.commit(best, rev, merged)
            return StateHit(best, False, best_cos, int(visits), added, removed)

        sid = self._next_id("s")
        thumb = self.blobs.put_image(_thumbnail(thumbnail)) if thumbnail is not None else ""
        vs.put(sid, 0, x)
        self._db.begin()
        try:
            self._q("state_create", state=sid, rev=0, now=now, thumbnail=thumb)
            added, _ = self._sync_similar(sid, near, fresh=True)
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        vs.commit(sid, 0, x)
        return StateHit(sid, True, 1.0, 1, added, 0)

    def _next_id(self, prefix: str) -> str:
        self._seq[prefix] = self._seq.get(prefix, 0) + 1
        return new_id(prefix, self._seq[prefix])

    def _sync_similar(
        self, sid: str, near: list[tuple[str, float]], *, fresh: bool
    ) -> tuple[int, int]:
        want = {u: c for u, c in near if u != sid and self.theta_simi < c <= self.theta_merge}
        have = (
            {} if fresh else {r["id"]: float(r["weight"]) for r in self._q("similar_of", state=sid)}
        )
        tol = self.config.memory.similar_weight_tolerance
        create = [{"id": u, "weight": float(c)} for u, c in want.items() if u not in have]
        moved = [
            {"id": u, "weight": float(c)}
            for u, c in want.items()
            if u in have and abs(have[u] - c) > tol
        ]
        gone = [u for u in have if u not in want]
        out = [r for r in create if sid < r["id"]]  # stored once per pair, smaller id first
        into = [r for r in create if r["id"] < sid]
        if out:
            self._q("similar_create_out", state=sid, rows=out)
        if into:
            self._q("similar_create_in", state=sid, rows=into)
        if moved:
            ids = [r["id"] for r in moved]
            weights = [r["weight"] for r in moved]
            self._q("similar_set_weight_out", state=sid, ids=ids, weights=weights)
            self._q("similar_set_weight_in", state=sid, ids=ids, weights=weights)
        if gone:
            self._q("similar_delete_out", state=sid, ids=gone)
            self._q("similar_delete_in", state=sid, ids=gone)
        return len(create), len(gone)

    def state_feature(self, state_id: str) -> np.ndarray:
        vs = self._need_vectors()
        if state_id not in vs:
            raise MemoryStoreError(f"no feature for state {state_id}")
        return vs.vector(state_id)

    def has_state(self, state_id: str) -> bool:
        return bool(self._q("state_get", state=state_id))

    def neighbourhood(self, state_id: str) -> list[tuple[str, float]]:
        """Eq. 2: N_E(v) = {v} ∪ {u : (v, u) ∈ E_sim}, with the edge weights (v itself: 1.0)."""
        rows = [(r["id"], float(r["weight"])) for r in self._q("neighbourhood", state=state_id)]
        return sorted(rows, key=lambda r: (-r[1], r[0]))

    def hq_candidates(self, state_id: str) -> list[HQCandidate]:
        """Eq. 3: active skills on outgoing skill edges of N_E(v), each at its best weight."""
        out: dict[str, HQCandidate] = {}
        rows = self._q("hq_candidates", state=state_id)
        rows.sort(key=lambda r: (-r["weight"], r["skill"], r["from_state"], r["to_state"]))
        for r in rows:
            k = r["skill"]
            skill = self._skills.get(k)
            if k in out or skill is None or skill.status != "active":
                continue
            out[k] = HQCandidate(k, float(r["weight"]), r["from_state"], r["to_state"])
        return sorted(out.values(), key=lambda c: (-c.weight, c.skill_id))

    def state_potential(self, state_id: str) -> float:
        """Eq. 10: V_S(v) = Σ weights of v's outgoing skill edges (0 for an unknown state)."""
        rows = self._q("state_potential", state=state_id)
        return float(rows[0]["potential"]) if rows else 0.0

    def get_mcts(self, state_id: str) -> dict[str, Any] | None:
        rows = self._q("state_mcts_get", state=state_id)
        if not rows or not rows[0]["mcts"]:
            return None
        return json.loads(rows[0]["mcts"])

    def put_mcts(self, state_id: str, tree: dict[str, Any]) -> None:
        self._q("state_mcts_put", state=state_id, tree=json.dumps(tree, sort_keys=True))

    # ============================================================= skills
    def _load_skills(self) -> list[Skill]:
        return [self._skill_from_row(r) for r in self._q("skills_all")]

    @staticmethod
    def _skill_from_row(r: dict[str, Any]) -> Skill:
        return Skill(
            id=r["id"],
            name=r["name"],
            description=r["description"],
            operations=Skill.parse_operations(r["operations"]),
            fitness=float(r["fitness"]),
            executions=int(r["executions"]),
            status=r["status"],
            parent_id=r["parent_id"] or None,
            failures=int(r["failures"]),
            low_rewards=int(r["low_rewards"]),
            created_at=float(r["created_at"]),
        )

    def add_skill(
        self,
        name: str,
        description: str,
        operations: list[Operation],
        *,
        parent_id: str | None = None,
    ) -> Skill:
        if not operations:
            raise ValueError("a skill needs at least one operation")
        skill = Skill(
            self._next_id("k"),
            name,
            description,
            list(operations),
            parent_id=parent_id,
            created_at=time.time(),
        )
        self._q(
            "skill_create",
            skill=skill.id,
            name=name,
            description=description,
            operations=skill.operations_json(),
            parent_id=parent_id or "",
            now=skill.created_at,
        )
        self._skills[skill.id] = skill
        return Skill(**{**skill.__dict__, "operations": list(skill.operations)})

    def get_skill(self, skill_id: str) -> Skill:
        s = self._skills.get(skill_id)
        if s is None:
            raise MemoryStoreError(f"no skill {skill_id}")
        return Skill(**{**s.__dict__, "operations": list(s.operations)})

    def skills(self, status: str | None = None) -> list[Skill]:
        return [
            self.get_skill(k)
            for k, s in self._skills.items()
            if status is None or s.status == status
        ]

    def update_skill(self, skill: Skill) -> None:
        if skill.id not in self._skills:
            raise MemoryStoreError(f"no skill {skill.id}")
        self._q(
            "skill_update",
            skill=skill.id,
            name=skill.name,
            description=skill.description,
            operations=skill.operations_json(),
            fitness=float(skill.fitness),
            executions=int(skill.executions),
            status=skill.status,
            failures=int(skill.failures),
            low_rewards=int(skill.low_rewards),
        )
        self._skills[skill.id] = Skill(**{**skill.__dict__, "operations": list(skill.operations)})

    def skill_edge_weight(self, change: float, fitness: float) -> float:
        """Eq. 1: w = sigmoid(α·Δ + (1 − α)·φ/(φ + C0)); the fitness term is 0 when φ + C0 ≤ 0."""
        m = self.config.memory
        return skill_edge_weight(change, fitness, m.alpha, m.c0)

    def upsert_skill_edge(
        self, src: str, dst: str, skill_id: str, change: float, r_total: float
    ) -> SkillEdge:
        """Record a successful execution of a skill from ``src`` landing in ``dst``.

        The edge keeps the mean Δ over its executions, the count and the last
        R_total; its weight is Eq. 1 at the skill's current fitness and the mean Δ.
        """
        skill = self._skills.get(skill_id)
        if skill is None:
            raise MemoryStoreError(f"no skill {skill_id}")
        m = self.config.memory
        fit_term = fitness_term(skill.fitness, m.alpha, m.c0)
        params = {
            "src": src,
            "dst": dst,
            "skill": skill_id,
            "alpha": float(m.alpha),
            "fit_term": float(fit_term),
            "change": float(change),
            "r_total": float(r_total),
            "now": time.time(),
        }
        rows = self._q("skill_edge_bump", **params) or self._q("skill_edge_create", **params)
        if not rows:
            raise MemoryStoreError(
                f"cannot write a skill edge between unknown states {src} → {dst}"
            )
        r = rows[0]
        return SkillEdge(
            src,
            dst,
            skill_id,
            float(r["weight"]),
            float(r["change"]),
            int(r["count"]),
            float(r["r_total"]),
        )

    def skill_edges(self, skill_id: str) -> list[SkillEdge]:
        return [
            SkillEdge(
                r["src"],
                r["dst"],
                skill_id,
                float(r["weight"]),
                float(r["change"]),
                int(r["count"]),
                float(r["r_total"]),
            )
            for r in self._q("skill_edges_of", skill=skill_id)
        ]

    def pruning_candidates(self, limit: int = 1) -> list[PruneCandidate]:
        """Skills executed more often than the library mean, lowest UCB score (Eq. 6) first.

        The UCB's exploration constant is ``library.prune_c`` (the appendix's C = 0.5):
        among skills that were tried more than most, the one with the lowest fitness goes.
        """
        c = float(self.config.library.prune_c)
        rows = self._q("pruning_candidates", c=c, limit=int(limit))
        return [
            PruneCandidate(
                r["skill"], r["name"], int(r["executions"]), float(r["fitness"]), float(r["ucb"])
            )
            for r in rows
        ]

    def prune_skill(self, skill_id: str) -> None:
        """Mark a skill pruned and remove every edge that names it (no dangling edges)."""
        if skill_id not in self._skills:
            raise MemoryStoreError(f"no skill {skill_id}")
        self._db.begin()
        try:
            self._q("skill_drop_edges", skill=skill_id)
            self._q("skill_drop_memberships", skill=skill_id)
            self._q("skill_drop_uses", skill=skill_id)
            self._q("skill_prune", skill=skill_id)
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        self._skills[skill_id].status = "pruned"

    # =========================================================== clusters
    def add_cluster(self, name: str, description: str) -> Cluster:
        cid = self._next_id("c")
        self._q("cluster_create", cluster=cid, name=name, description=description)
        return Cluster(cid, name, description)

    def clusters(self) -> list[Cluster]:
        return [
            Cluster(
                r["id"],
                r["name"],
                r["description"],
                int(r["selections"]),
                [k for k in r["skills"] or [] if k],
            )
            for r in self._q("clusters_all")
        ]

    def add_to_cluster(self, skill_id: str, cluster_id: str) -> None:
        self._q("cluster_add_member", skill=skill_id, cluster=cluster_id)

    def cluster_of(self, skill_id: str) -> str | None:
        rows = self._q("cluster_of", skill=skill_id)
        return rows[0]["id"] if rows else None

    def record_cluster_selection(self, cluster_id: str) -> int:
        rows = self._q("cluster_select", cluster=cluster_id)
        if not rows:
            raise MemoryStoreError(f"no cluster {cluster_id}")
        return int(rows[0]["selections"])

    def cluster_state_features(self, cluster_id: str) -> np.ndarray:
        vs = self._need_vectors()
        ids = [r["id"] for r in self._q("cluster_states", cluster=cluster_id) if r["id"] in vs]
        if not ids:
            return np.zeros((0, vs.dim), dtype=np.float32)
        return np.stack([vs.vector(i) for i in ids])

    # ============================================================ objects
    @staticmethod
    def _object_from_row(r: dict[str, Any]) -> UIObject:
        return UIObject(
            r["id"],
            r["name"],
            (int(r["x"]), int(r["y"]), int(r["w"]), int(r["h"])),
            int(r["phash"], 16),
            r["crop"],
        )

    def _cache_object(self, obj: UIObject) -> None:
        self._objects[obj.id] = obj
        self._object_ids.append(obj.id)
        self._hashes = np.append(self._hashes, np.uint64(obj.phash))
        self._sizes = np.vstack([self._sizes, [obj.bbox[2], obj.bbox[3]]])

    def find_object(self, phash: int, size: tuple[int, int]) -> UIObject | None:
        """The stored object with this perceptual hash (within tolerance) and size."""
        if not self._object_ids:
            return None
        m = self.config.memory
        dist = np.bitwise_count(np.bitwise_xor(self._hashes, np.uint64(phash))).astype(int)
        w, h = max(size[0], 1), max(size[1], 1)
        rel = np.abs(self._sizes - [w, h]) / np.maximum(self._sizes, [w, h])
        ok = (dist <= m.object_hash_distance) & (rel.max(axis=1) <= m.object_size_tolerance)
        if not ok.any():
            return None
        idx = int(np.argmin(np.where(ok, dist, 1 << 30)))
        return self._objects[self._object_ids[idx]]

    def upsert_object(
        self, crop: np.ndarray, bbox: tuple[int, int, int, int], phash: int, name: str | None = None
    ) -> UIObject:
        """The memory-wide object for this crop: an existing one (same look) or a new one."""
        bbox = tuple(int(v) for v in bbox)
        hit = self.find_object(int(phash), (bbox[2], bbox[3]))
        if hit is not None:
            return UIObject(hit.id, hit.name, hit.bbox, hit.phash, hit.crop_blob, created=False)
        oid = self._next_id("o")
        blob = self.blobs.put_image(crop)
        name = name or f"object_{len(self._object_ids) + 1}"
        self._q(
            "object_create",
            object=oid,
            name=name,
            crop=blob,
            x=bbox[0],
            y=bbox[1],
            w=bbox[2],
            h=bbox[3],
            phash=f"{int(phash) & 0xFFFFFFFFFFFFFFFF:016x}",
            now=time.time(),
        )
        obj = UIObject(oid, name, bbox, int(phash) & 0xFFFFFFFFFFFFFFFF, blob, created=True)
        self._cache_object(obj)
        return obj

    def get_object(self, object_id: str) -> UIObject:
        obj = self._objects.get(object_id)
        if obj is None:
            raise MemoryStoreError(f"no object {object_id}")
        return obj

    def object_crop(self, object_id: str) -> np.ndarray:
        return self.blobs.get_image(self.get_object(object_id).crop_blob)

    def link_state_objects(self, state_id: str, object_ids: list[str]) -> None:
        for oid in object_ids:
            self._q("state_object_link", state=state_id, object=oid)

    def state_objects(self, state_id: str) -> list[UIObject]:
        return [self._object_from_row(r) for r in self._q("state_objects", state=state_id)]

    def link_skill_objects(self, skill_id: str, object_ids: list[str]) -> None:
        for pos, oid in enumerate(object_ids):
            self._q("skill_object_link", skill=skill_id, object=oid, position=pos)

    # ============================================================== stats
    def stats(self) -> GraphStats:
        r = self._q("graph_stats")[0]
        return GraphStats(**{k: int(v or 0) for k, v in r.items()})

    def info(self) -> dict[str, Any]:
        """What `kgagent memory info` shows."""
        out: dict[str, Any] = {
            "path": str(self.path),
            "engine": f"{self.engine} {engine_version(self.engine)}",
            "schema_version": self.manifest.get("schema_version"),
            "kgagent_version": self.manifest.get("kgagent_version"),
            "encoder": (self.encoder or {}).get("identity"),
            "dim": (self.encoder or {}).get("dim"),
            "theta_merge": self.theta_merge,
            "theta_simi": self.theta_simi,
            "created": _iso(self.manifest.get("created")),
            "updated": _iso(self.manifest.get("updated")),
        }
        out.update(self.stats().as_row())
        out["vector_rows"] = self.vectors.row_count() if self.vectors is not None else 0
        out["blobs"] = len(self.blobs.all_ids())
        out["size_mb"] = round(
            sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file()) / 1e6, 2
        )
        for k, v in self.consistency.items():
            out[f"repair_{k}"] = v
        return out


def fitness_term(fitness: float, alpha: float, c0: float) -> float:
    """Eq. 1's second term, (1 − α)·φ/(φ + C0); 0 when φ + C0 ≤ 0."""
    denom = fitness + c0
    return (1.0 - alpha) * (fitness / denom if denom > 0 else 0.0)


def skill_edge_weight(change: float, fitness: float, alpha: float, c0: float) -> float:
    """Eq. 1 as a pure function (see :meth:`Memory.skill_edge_weight`)."""
    return sigmoid(alpha * change + fitness_term(fitness, alpha, c0))


def _thumbnail(image: np.ndarray, side: int = 160) -> np.ndarray:
    from PIL import Image

    im = Image.fromarray(np.ascontiguousarray(image))
    im.thumbnail((side, side))
    return np.asarray(im)


def _iso(t: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else None
