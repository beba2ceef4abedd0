"""The memory API: merge/create, similarity edges, Eq. 1/2/3/10, pruning, objects, schema."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.errors import EncoderMismatchError, MemoryStoreError, SchemaVersionError
from kgagent.memory import EncoderSpec, Memory, migrations
from kgagent.memory.engine import GraphDB
from kgagent.memory.files import read_manifest, write_manifest
from kgagent.memory.vectors import normalize

from .conftest import ENC, at, e, graph_dump, key, tree_hash


def sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def similar(m: Memory, sid: str) -> dict[str, float]:
    return {r["id"]: float(r["weight"]) for r in m._q("similar_of", state=sid)}


# ------------------------------------------------------------ merge or create
def test_thresholds_create_link_merge(memory: Memory) -> None:
    a = memory.merge_or_create_state(e(0))
    assert a.created and a.visits == 1
    far = memory.merge_or_create_state(at(0.87, 0, 1))  # below θ_simi: new, no edge
    assert far.created and far.similar_added == 0
    near = memory.merge_or_create_state(at(0.94, 0, 2))  # θ_simi < cos ≤ θ_merge: new + edge
    assert near.created and near.similar_added == 1
    assert similar(memory, a.id) == {near.id: pytest.approx(0.94, abs=1e-5)}
    assert a.id not in similar(memory, far.id)
    merged = memory.merge_or_create_state(at(0.97, 0, 3))  # above θ_merge: merge into a
    assert not merged.created and merged.id == a.id and merged.visits == 2
    assert merged.cosine == pytest.approx(0.97, abs=1e-5)
    assert memory.stats().nodes == 3


def test_merge_is_normalised_mean_and_new_revision(memory: Memory) -> None:
    a = memory.merge_or_create_state(e(0)).id
    x = at(0.96, 0, 1)
    memory.merge_or_create_state(x)
    want = normalize(e(0) + x)
    np.testing.assert_allclose(memory.state_feature(a), want, atol=1e-6)
    assert memory._q("state_get", state=a)[0]["feature_rev"] == 1
    assert memory.vectors.rev(a) == 1


def test_similar_edges_follow_a_moving_feature(memory: Memory) -> None:
    a = memory.merge_or_create_state(e(0)).id
    b = memory.merge_or_create_state(at(0.90, 0, 1)).id  # linked at 0.90
    c_vec = 0.86 * e(0) - 0.3 * e(1) + math.sqrt(1 - 0.86**2 - 0.09) * e(2)  # 0.86: not linked
    c = memory.merge_or_create_state(c_vec).id
    d = memory.merge_or_create_state(at(0.92, 0, 3)).id  # linked at 0.92
    assert set(similar(memory, a)) == {b, d}
    x = 0.96 * e(0) - 0.28 * e(1)  # merges into a and moves it away from b, towards c
    hit = memory.merge_or_create_state(x)
    assert hit.id == a and not hit.created
    moved = normalize(e(0) + x).astype(np.float64)
    want = {
        c: float(moved @ normalize(c_vec)),  # ≈ 0.894: added
        d: float(moved @ normalize(at(0.92, 0, 3))),  # ≈ 0.911: updated from 0.92
    }  # b: ≈ 0.829, below θ_simi: removed
    assert hit.similar_added == 1 and hit.similar_removed == 1
    got = similar(memory, a)
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-5)
    # Stored once per pair, smaller id first.
    rows = memory.cypher("MATCH (x:State)-[:SIMILAR]->(y:State) RETURN x.id AS x, y.id AS y")
    assert all(r["x"] < r["y"] for r in rows) and len(rows) == 2
    assert b not in similar(memory, a) and a not in similar(memory, b)


def test_isolated_never_merges_or_links(memory: Memory) -> None:
    a = memory.merge_or_create_state(e(0))
    b = memory.merge_or_create_state(e(0), isolated=True)
    assert b.created and b.id != a.id and memory.stats().similarity_edges == 0


def test_a_cosine_exactly_at_theta_merge_links_and_does_not_merge(tmp_path) -> None:
    """SPEC: merge when cos > θ_merge, link when θ_simi < cos ≤ θ_merge; so a screen at
    exactly θ_merge is a new state, linked. The cosine is exact in float32: e(0) and
    (e(0) + e(1) + e(2) + e(3)) / 2 (norm 2, components 0.5) have dot product 0.5."""
    x = np.zeros(16)
    x[:4] = 1.0
    assert float(normalize(x) @ normalize(e(0))) == 0.5  # exact, not approximately
    cfg = Config.load(None, ["memory.theta_merge=0.5", "memory.theta_simi=0.25"])
    with Memory.open(tmp_path / "memory", cfg, encoder=ENC) as m:
        assert m.theta_merge == 0.5
        a = m.merge_or_create_state(e(0))
        at_merge = m.merge_or_create_state(x)
        assert at_merge.created and at_merge.id != a.id
        assert at_merge.similar_added == 1
        assert similar(m, a.id) == {at_merge.id: 0.5}
        assert m.stats().nodes == 2
        assert m.vectors.rev(a.id) == 0  # a's feature did not move


# ------------------------------------------------------------ equations
def test_eq1_skill_edge_weight_exact(memory: Memory) -> None:
    a = memory.merge_or_create_state(e(0)).id
    b = memory.merge_or_create_state(e(1)).id
    k = memory.add_skill("s", "d", key())
    edge = memory.upsert_skill_edge(a, b, k.id, 0.5, 1.0)
    # The weight is computed inside the statement (pow(e, x) for exp): same to 1e-12.
    assert edge.weight == pytest.approx(sig(0.7 * 0.5 + 0.3 * 0.0), abs=1e-12)
    skill = memory.get_skill(k.id)
    skill.fitness = 2.0
    memory.update_skill(skill)
    edge = memory.upsert_skill_edge(a, b, k.id, 0.1, 0.4)
    assert edge.count == 2 and edge.change == pytest.approx(0.3) and edge.r_total == 0.4
    assert edge.weight == pytest.approx(sig(0.7 * 0.3 + 0.3 * 2.0 / 7.0), abs=1e-12)
    # A negative fitness at or below −C0 contributes nothing, in the statement as in Python.
    skill.fitness = -6.0
    memory.update_skill(skill)
    edge = memory.upsert_skill_edge(a, b, k.id, 0.7, 0.4)
    assert edge.count == 3 and edge.weight == pytest.approx(
        sig(0.7 * (0.3 * 2 + 0.7) / 3), abs=1e-12
    )
    # φ + C0 ≤ 0: the fitness term is 0 (documented choice), also exactly at −C0.
    for phi in (-5.0, -6.0):
        assert memory.skill_edge_weight(0.2, phi) == pytest.approx(sig(0.7 * 0.2))
    assert memory.skill_edge_weight(0.2, -4.0) == pytest.approx(sig(0.14 + 0.3 * (-4.0 / 1.0)))


def test_neighbourhood_eq2_and_potential_eq10(populated) -> None:
    s, k = populated.states, populated.skills
    with Memory.open(populated.path, Config(), read_only=True) as m:
        assert m.neighbourhood(s["A"]) == [
            (s["A"], 1.0),
            (s["B"], pytest.approx(0.92, abs=1e-5)),
        ]
        assert m.neighbourhood(s["E"]) == [(s["E"], 1.0)]
        w_ac = sig(0.7 * 0.5)
        w_ad = sig(0.7 * 0.1)
        assert m.state_potential(s["A"]) == pytest.approx(w_ac + w_ad)
        assert m.state_potential(s["E"]) == 0.0  # no outgoing edge
        assert m.state_potential("s-unknown") == 0.0
        assert [e_.skill_id for e_ in m.skill_edges(k["k2"])] == [k["k2"], k["k2"]]


def test_hq_candidates_eq3_best_weight_and_status(populated) -> None:
    s, k = populated.states, populated.skills
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        hq = m.hq_candidates(s["A"])  # N_E(A) = {A, B}
        by = {c.skill_id: c for c in hq}
        assert set(by) == {k["k1"], k["k2"]}
        # k2 is on A→D (Δ 0.1) and B→D (Δ 0.6): its best weight is B→D's.
        assert by[k["k2"]].weight == pytest.approx(sig(0.7 * 0.6))
        assert by[k["k2"]].from_state == s["B"]
        assert by[k["k1"]].weight == pytest.approx(sig(0.7 * 0.5))
        assert [c.weight for c in hq] == sorted((c.weight for c in hq), reverse=True)
        assert [c.skill_id for c in m.hq_candidates(s["C"])] == [k["k3"]]
        sk = m.get_skill(k["k3"])
        sk.status = "suspended"
        m.update_skill(sk)
        assert m.hq_candidates(s["C"]) == []
        m.prune_skill(k["k1"])
        assert {c.skill_id for c in m.hq_candidates(s["A"])} == {k["k2"]}


# ------------------------------------------------------------ pruning
def set_use(m: Memory, rows: tuple[tuple[str, int, float], ...]) -> None:
    """Give each skill ``(id, executions, fitness)``."""
    for sid, n, phi in rows:
        sk = m.get_skill(sid)
        sk.executions, sk.fitness = n, phi
        m.update_skill(sk)


def test_pruning_candidates_and_prune_leaves_no_dangling_edges(populated) -> None:
    k = populated.skills
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        set_use(m, ((k["k1"], 10, 0.1), (k["k2"], 10, 0.9), (k["k3"], 1, 0.0)))
        cands = m.pruning_candidates(limit=5)
        assert [c.skill_id for c in cands] == [k["k1"], k["k2"]]  # above the mean 7
        ucb = 0.1 + Config().library.prune_c * math.sqrt(math.log(21) / 10)
        assert cands[0].ucb == pytest.approx(ucb)
        before = m.library_size()
        assert before == m.stats().library_size == 3
        m.prune_skill(k["k1"])
        assert m.get_skill(k["k1"]).status == "pruned"
        assert m.library_size() == m.stats().library_size == before - 1
        left = m.cypher(
            "MATCH ()-[e:SKILL_EDGE]->() WHERE e.skill = $k RETURN count(*) AS n", {"k": k["k1"]}
        )
        assert left[0]["n"] == 0
        assert (
            m.cypher("MATCH (s:Skill {id: $k})-[r]->() RETURN count(r) AS n", {"k": k["k1"]})[0][
                "n"
            ]
            == 0
        )
        assert m._q("check_dangling_skill_edges") == []
        st = m.stats()
        assert (st.skills_pruned, st.library_size, st.skills_augmented) == (1, 2, 3)
        assert st.skill_edges == populated.stats["skill_edges"] - 1
        assert k["k1"] not in m.clusters()[0].skill_ids
        assert [c.skill_id for c in m.pruning_candidates(limit=5)] == [k["k2"]]


def test_pruning_ranks_well_tried_skills_by_fitness_not_by_use(populated) -> None:
    """Among skills above the mean use, the weaker goes first, not the more used.

    k1 ran 100 times at fitness 0.5, k2 60 times at 0.3 (mean use 53.3). With C1 = 5
    as the exploration constant the bonus gap (0.33) outweighs the fitness gap (0.2)
    and k1 -- the better, more used skill -- would be ranked first; with the
    default ``prune_c`` (the appendix's 0.5) k2 is.
    """
    k = populated.skills
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        set_use(m, ((k["k1"], 100, 0.5), (k["k2"], 60, 0.3), (k["k3"], 0, 0.0)))
        assert [c.skill_id for c in m.pruning_candidates(limit=5)] == [k["k2"], k["k1"]]
    cfg = Config()
    cfg.library.prune_c = 5.0
    with Memory.open(populated.path, cfg, encoder=ENC) as m:
        assert [c.skill_id for c in m.pruning_candidates(limit=5)] == [k["k1"], k["k2"]]


# ------------------------------------------------------------ objects, state statistics, stats
def test_objects_dedup_across_memory(populated) -> None:
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        crop = np.zeros((10, 12, 3), dtype=np.uint8)
        first = populated.objects[0]
        again = m.upsert_object(crop, (500, 400, 12, 10), 0x0F0F0F0F | 0b1)  # 1 bit off, same size
        assert again.id == first and not again.created
        other = m.upsert_object(crop, (0, 0, 12, 10), 0xFFFF_0000_FFFF_0000)
        assert other.created and other.id not in populated.objects
        big = m.upsert_object(crop, (0, 0, 60, 50), 0x0F0F0F0F)  # same hash, other size
        assert big.created
        assert m.stats().objects == 5
        assert [o.id for o in m.state_objects(populated.states["A"])] == populated.objects[:2]
        assert m.object_crop(first).shape == (10, 12, 3)


def test_a_screens_objects_in_one_write_alike_ones_once(populated) -> None:
    crop = np.zeros((10, 12, 3), dtype=np.uint8)
    segs = [
        (crop, (0, 0, 12, 10), 0x0F0F0F0F, ""),  # a stored object
        (crop, (40, 0, 12, 10), 0xAAAA_0000_AAAA_0000, "Open"),  # new
        (crop, (80, 0, 12, 10), 0xAAAA_0000_AAAA_0001, "Open"),  # new, like the one before
        (crop, (120, 0, 12, 10), 0xAAAA_0000_AAAA_0001, "Save"),  # its look, another name
    ]
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        objs = m.upsert_objects(segs)
        assert [o.created for o in objs] == [False, True, False, True]
        assert objs[0].id == populated.objects[0] and objs[1].id == objs[2].id
        assert [o.name for o in objs[1:]] == ['"Open"', '"Open"', '"Save"']
        assert m.stats().objects == 5
    with Memory.open(populated.path, Config(), encoder=ENC) as m:  # written, and found again
        again = m.upsert_objects(segs)
        assert [o.id for o in again] == [o.id for o in objs]
        assert not any(o.created for o in again)
        assert m.get_object(objs[3].id).label == "Save"


def test_a_failed_object_write_keeps_none_of_the_screen(populated, monkeypatch) -> None:
    crop = np.zeros((10, 12, 3), dtype=np.uint8)
    segs = [(crop, (0, 0, 12, 10), 0x5555_0000_5555_0000 << i, "") for i in range(2)]
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        real_q = m._q

        def failing(name, /, **params):
            if name == "object_create":
                raise MemoryStoreError("disk full")
            return real_q(name, **params)

        monkeypatch.setattr(m, "_q", failing)
        with pytest.raises(MemoryStoreError):
            m.upsert_objects(segs)
        assert m.find_object(segs[0][2], (12, 10)) is None  # not remembered in process
        monkeypatch.setattr(m, "_q", real_q)
        objs = m.upsert_objects(segs)
        assert all(o.created for o in objs)
        assert m.stats().objects == 5
        assert [o.name for o in objs] == ["object_4", "object_5"]


def test_state_object_links_once_each_and_unknown_ids_skipped(populated) -> None:
    state, (o1, o2, o3) = populated.states["A"], populated.objects
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        # A again, with a repeat and an id of no object: one new link, nothing doubled.
        m.link_state_objects(state, [o2, o3, o3, "o-none", o1])
        m.link_state_objects(state, [])
        links = m.cypher(
            "MATCH (s:State {id: $s})-[:HAS_OBJECT]->(o:Object) RETURN o.id AS id ORDER BY id",
            {"s": state},
        )
        assert [r["id"] for r in links] == sorted([o1, o2, o3])
        assert {o.id for o in m.state_objects(state)} == {o1, o2, o3}
        assert m.state_objects(populated.states["B"]) == []


def test_state_stats_json_round_trip(populated) -> None:
    tree = {"visits": 4, "children": [{"skill": "k-x", "q": 0.25, "n": [1, 2]}], "note": "ü"}
    a = populated.states["A"]
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        assert m.state_stats(populated.states["E"]) is None
        m.put_state_stats(a, tree)
    with Memory.open(populated.path, Config(), read_only=True) as m:
        assert m.state_stats(a) == tree
        raw = m._q("state_stats_get", state=a)[0]["mcts"]
        assert json.loads(raw) == tree  # stored as JSON text, no pickle


def test_stats(populated) -> None:
    assert populated.stats == {
        "library_size": 3,
        "skills_augmented": 3,
        "skills_pruned": 0,
        "nodes": 5,
        "skill_edges": 4,
        "similarity_edges": 1,
        "objects": 3,
        "clusters": 1,
    }
    with Memory.open(populated.path, Config(), read_only=True) as m:
        info = m.info()
        # The merge into C appended revision 1; revision 0 stays until a read-write open.
        assert info["nodes"] == 5 and info["vector_rows"] == 6 and info["encoder"] == "test:v1"
        assert m.clusters()[0].selections == 1
    with Memory.open(populated.path, Config()) as m:
        assert m.consistency["rows_removed"] == 1
        assert m.info()["vector_rows"] == 5


# ------------------------------------------------------------ refusals, schema
def test_encoder_mismatch_refused(populated) -> None:
    before = tree_hash(populated.path, skip=("graph.db",))
    for enc in (EncoderSpec("other:v2", 16, (0.9, 0.8)), EncoderSpec("test:v1", 32, (0.9, 0.8))):
        with pytest.raises(EncoderMismatchError, match="test:v1"):
            Memory.open(populated.path, Config(), encoder=enc)
    # Nothing written: not the manifest, vectors or blobs (the database file is re-stamped by
    # ladybug on any read-write open, so it is compared logically in the schema tests).
    assert tree_hash(populated.path, skip=("graph.db",)) == before
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        with pytest.raises(EncoderMismatchError):
            m.merge_or_create_state(np.ones(8))


def test_newer_schema_in_manifest_refused_unchanged(populated) -> None:
    man = read_manifest(populated.path)
    man["schema_version"] = migrations.latest_version() + 1
    write_manifest(populated.path, man)
    before = tree_hash(populated.path)
    for ro in (False, True):
        with pytest.raises(SchemaVersionError, match="newer than this kgagent"):
            Memory.open(populated.path, Config(), encoder=ENC, read_only=ro)
    assert tree_hash(populated.path) == before


def test_newer_schema_in_graph_refused_unchanged(populated, config: Config) -> None:
    db = GraphDB(populated.path / "graph.db", _engine(config))
    db.execute(
        "CREATE (:_Migration {version: $v, name: 'future', applied_at: 0.0})",
        {"v": migrations.latest_version() + 1},
    )
    db.close()
    for ro in (False, True):
        with pytest.raises(SchemaVersionError, match="newer than this kgagent"):
            Memory.open(populated.path, config, encoder=ENC, read_only=ro)
    # Files other than the database are byte-identical (the manifest is not rewritten by a
    # failed open); the database's content is identical (ladybug re-stamps its file on every
    # read-write open, so its bytes are compared logically).
    before_files = tree_hash(populated.path, skip=("graph.db",))
    db = GraphDB(populated.path / "graph.db", _engine(config), read_only=True)
    before_graph = graph_dump(db)
    db.close()
    assert len(before_graph["archive_export_state"]) == 5
    with pytest.raises(SchemaVersionError):
        Memory.open(populated.path, config, encoder=ENC)
    assert tree_hash(populated.path, skip=("graph.db",)) == before_files
    db = GraphDB(populated.path / "graph.db", _engine(config), read_only=True)
    assert graph_dump(db) == before_graph
    db.close()


def _engine(config: Config) -> str:
    from kgagent.memory.engine import engine_name

    return engine_name(config.memory.engine)


def test_older_schema_migrated_after_backup(populated, config: Config, monkeypatch) -> None:
    real = migrations.available()
    extra = migrations.Migration(
        len(real) + 1, "notes", ("CREATE NODE TABLE Note(id STRING, text STRING, PRIMARY KEY(id))",)
    )
    monkeypatch.setattr(migrations, "available", lambda: [*real, extra])
    old = len(real)
    with pytest.raises(SchemaVersionError, match="read-write"):
        Memory.open(populated.path, config, read_only=True)  # needs a migration first
    with Memory.open(populated.path, config, encoder=ENC) as m:
        assert m.manifest["schema_version"] == old + 1
        # what the open did is said, naming the copy it kept (the CLI prints this line)
        said = f"migrated {populated.path} from schema version {old} to {old + 1}; "
        assert len(m.notes) == 1 and m.notes[0].startswith(said), m.notes
        assert m.notes[0].endswith(f"-schema-v{old}"), m.notes
        versions = [r["version"] for r in m._q("migrations_applied")]
        assert versions == list(range(1, old + 2))
        m.cypher("CREATE (:Note {id: 'n1', text: 'hi'})", write=True)
        assert m.stats().as_row() == populated.stats  # data kept
    backups = list((populated.path / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.endswith(f"schema-v{old}")
    assert m.notes[0].endswith(f"the memory as it was is kept in {backups[0]}")
    with Memory.open(populated.path, config, encoder=ENC) as again:  # nothing more to do
        assert again.notes == []
    assert read_manifest(backups[0])["schema_version"] == old
    assert (backups[0] / "graph.db").exists()
    assert read_manifest(populated.path)["schema_version"] == old + 1


def test_engine_mismatch_message(populated, config: Config, monkeypatch) -> None:
    man = read_manifest(populated.path)
    other = "kuzu" if _engine(config) == "ladybug" else "ladybug"
    man["engine"] = other
    write_manifest(populated.path, man)
    with pytest.raises(MemoryStoreError, match=rf"written by the {other} engine.*memory export"):
        Memory.open(populated.path, config)
    # the variable chooses over memory.engine: the message names it, not the field
    from dataclasses import replace

    monkeypatch.setenv("KGAGENT_ENGINE", _engine(config))
    asked = replace(config, memory=replace(config.memory, engine=other))
    with pytest.raises(MemoryStoreError, match=rf"KGAGENT_ENGINE={_engine(config)} in the"):
        Memory.open(populated.path, asked)


def test_not_a_memory_and_missing_memory(tmp_path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("x")
    with pytest.raises(MemoryStoreError, match="not a kgagent memory"):
        Memory.open(tmp_path / "junk", Config())
    with pytest.raises(MemoryStoreError, match="no kgagent memory"):
        Memory.open(tmp_path / "none", Config(), read_only=True)
    assert not (tmp_path / "none").exists()


def test_info_of_a_memory_from_before_ids_shows_the_id_it_is_known_by(populated) -> None:
    """`memory info` showed a blank id for a memory whose manifest predates ids, though a
    merge, an import and the next writer all know it by one derived from its manifest."""
    manifest = read_manifest(populated.path)
    del manifest["memory_id"]
    write_manifest(populated.path, manifest)
    with Memory.open(populated.path, Config(), read_only=True) as m:
        shown = m.info()["memory_id"]
    assert shown and len(shown) == 32
    with Memory.open(populated.path, Config(), encoder=ENC):  # a writer records one
        pass
    assert read_manifest(populated.path)["memory_id"] == shown


def test_a_memory_last_written_by_a_newer_kgagent_is_said_before_the_stamp_changes(
    populated,
) -> None:
    """A writer re-stamps `kgagent_version`; one older than the last writer said nothing."""
    import kgagent

    manifest = read_manifest(populated.path)
    manifest["kgagent_version"] = "99.0.1"
    write_manifest(populated.path, manifest)
    with Memory.open(populated.path, Config(), read_only=True) as reader:
        assert reader.notes == []  # a reader changes nothing
    with Memory.open(populated.path, Config(), encoder=ENC) as m:
        assert m.notes == [
            f"{populated.path} was last written by kgagent 99.0.1, newer than this one "
            f"({kgagent.__version__}); it has the schema this one knows, and its manifest "
            f"will name {kgagent.__version__} as its last writer"
        ]
    with Memory.open(populated.path, Config(), encoder=ENC) as again:
        assert again.notes == []
