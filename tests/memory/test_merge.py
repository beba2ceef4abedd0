"""`kgagent memory merge`: the merge rules, refusals, idempotence, provenance, kill -9, archives."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from command_lines import KGAGENT

from kgagent.actions import Operation
from kgagent.agent.augment import op_key
from kgagent.config import Config
from kgagent.errors import KGAgentError
from kgagent.memory import EncoderSpec, Memory, skill_edge_weight
from kgagent.memory.archive import export_memory
from kgagent.memory.engine import engine_name
from kgagent.memory.files import read_manifest, write_manifest
from kgagent.memory.merge import merge_memories
from kgagent.memory.merge_place import lock_path, recover, work_prefix
from kgagent.memory.merge_values import operations_identity
from kgagent.records import Skill

from .conftest import ENC, at, e, tree_hash

PH_X = 0x0F0F_3C3C_5A5A_9999
PH_Z = 0xF0F0_0000_FFFF_1234


def thumb(i: int) -> np.ndarray:
    return np.full((24, 32, 3), 20 * i, dtype=np.uint8)


def crop(i: int) -> np.ndarray:
    return np.random.default_rng(i).integers(0, 255, size=(10, 12, 3), dtype=np.uint8)


def click(obj) -> list[Operation]:
    return [Operation("click", object_id=obj.id, object_name=obj.name)]


def add_stat(m: Memory, key: str, tried: int, changed: int) -> None:
    params = {"key": key, "kind": "key", "tried": tried, "changed": changed, "updated": 1.0}
    m.run_named("merge_input_stat_add", params, write=True)


def build_a(path: Path) -> dict:
    """a0 (2 visits), a1; object X; skill kx = click X (φ 1.0, n 2) on edge a0→a1 twice."""
    with Memory.open(path, Config(), encoder=ENC) as m:
        a0 = m.merge_or_create_state(e(0), thumbnail=thumb(1)).id
        m.merge_or_create_state(e(0))
        a1 = m.merge_or_create_state(e(1), thumbnail=thumb(2)).id
        ox = m.upsert_object(crop(1), (10, 10, 12, 10), PH_X, name="button")
        kx = m.add_skill("press button", "presses it", click(ox))
        m.link_skill_objects(kx.id, [ox.id])
        kx.fitness, kx.executions = 1.0, 2
        m.update_skill(kx)
        m.upsert_skill_edge(a0, a1, kx.id, 0.4, 1.0)
        m.upsert_skill_edge(a0, a1, kx.id, 0.4, 1.0)
        c = m.add_cluster("buttons", "pressing buttons")
        m.add_to_cluster(kx.id, c.id)
        m.record_cluster_selection(c.id)
        m.link_state_objects(a0, [ox.id])
        op = op_key(click(ox)[0])
        m.put_state_stats(a0, {"version": 2, "explores": 1, "tried": {"": {op: 0.5}}})
        add_stat(m, "key:enter", 3, 1)
        return {
            "id": m.manifest["memory_id"],
            "states": [a0, a1],
            "a0": a0,
            "a1": a1,
            "ox": ox.id,
            "kx": kx.id,
            "c": c.id,
            "v_a0": m.state_feature(a0),
        }


def build_b(path: Path) -> dict:
    """b0 ≈ a0 (cos 0.97), b1 ≈ a1 (0.99), b3 near a1 (0.90), b2 new; object Y ≈ X, Z new;
    kx_b = click Y (φ 0, n 3) on b0→b1 three times; ky = escape on b0→b3; cluster {kx_b, ky}."""
    with Memory.open(path, Config(), encoder=ENC) as m:
        b0 = m.merge_or_create_state(at(0.97, 0, 6), thumbnail=thumb(3)).id
        b1 = m.merge_or_create_state(at(0.99, 1, 8)).id
        b3 = m.merge_or_create_state(at(0.90, 1, 7), thumbnail=thumb(4)).id
        b2 = m.merge_or_create_state(e(2), thumbnail=thumb(5)).id
        oy = m.upsert_object(crop(2), (40, 12, 12, 10), PH_X ^ 0b11, name="object_7")
        oz = m.upsert_object(crop(3), (80, 12, 20, 20), PH_Z, name="icon")
        kx = m.add_skill("hit the button", "other words", click(oy))
        m.link_skill_objects(kx.id, [oy.id])
        kx.executions = 3
        m.update_skill(kx)
        ky = m.add_skill("close", "escape", [Operation("key", key="escape")])
        for _ in range(3):
            m.upsert_skill_edge(b0, b1, kx.id, 0.1, 0.5)
        m.upsert_skill_edge(b0, b3, ky.id, 0.3, 0.7)
        c = m.add_cluster("controls", "buttons and keys")
        m.add_to_cluster(kx.id, c.id)
        m.add_to_cluster(ky.id, c.id)
        m.record_cluster_selection(c.id)
        m.record_cluster_selection(c.id)
        m.link_state_objects(b0, [oy.id, oz.id])
        tried = {"": {op_key(click(oy)[0]): 0.3}, kx.id: {op_key(click(oz)[0]): 0.1}}
        m.put_state_stats(b0, {"version": 2, "explores": 2, "tried": tried})
        add_stat(m, "key:enter", 2, 2)
        add_stat(m, "key:tab", 1, 0)
        return {
            "id": m.manifest["memory_id"],
            "states": [b0, b1, b2, b3],
            "b0": b0,
            "b3": b3,
            "oz": oz.id,
            "kx": kx.id,
            "ky": ky.id,
            "v_b0": m.state_feature(b0),
        }


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, dict, Path, dict]:
    return tmp_path / "a", build_a(tmp_path / "a"), tmp_path / "b", build_b(tmp_path / "b")


def origin_of(m: Memory, query: str, **params) -> set[tuple[str, str]]:
    rows = m.run_named(query, params)
    return {(d["memory"], d["id"]) for d in json.loads(rows[0]["origin"] or "[]")}


def find(rows: list[dict], memory: str, node: str) -> dict:
    """The merged row whose origin names ``node`` of ``memory``."""
    hits = [r for r in rows if {"memory": memory, "id": node} in json.loads(r["origin"] or "[]")]
    assert len(hits) == 1, (node, rows)
    return hits[0]


def test_merge_rules(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    dest = tmp_path / "ab"
    s = merge_memories([pa, pb], dest)
    assert s["changed"] and s["states_created"] == 2 + 2 and s["states_merged"] == 2
    with Memory.open(dest, Config(), read_only=True) as m:
        states = m.run_named("archive_export_state")
        assert len(states) == 4  # a0+b0, a1+b1, b2, b3
        s0 = find(states, a["id"], a["a0"])
        assert find(states, b["id"], b["b0"]) == s0
        assert s0["visits"] == 2 + 1  # visit counts added
        # The observation rule: the normalised mean of the two features.
        want = a["v_a0"] + b["v_b0"]
        assert np.allclose(m.state_feature(s0["id"]), want / np.linalg.norm(want), atol=1e-6)
        assert s0["thumbnail"] == m.blobs.put_image(thumb(1))  # the destination's kept
        s3 = find(states, b["id"], b["b3"])
        s1 = find(states, a["id"], a["a1"])
        assert s1["id"] in {r["id"] for r in m.run_named("similar_of", {"state": s3["id"]})}
        assert s3["thumbnail"] == m.blobs.put_image(thumb(4))  # copied by content hash
        # Objects: Y is X (pHash within tolerance, same size); Z is new.
        objects = m.run_named("archive_export_object")
        assert len(objects) == 2
        ox = find(objects, a["id"], a["ox"])
        assert len(json.loads(ox["origin"])) == 2  # X from A, and Y from B
        assert ox["crop"] == m.blobs.put_image(crop(1)) and ox["name"] == "button"
        assert origin_of(m, "state_origin", state=s0["id"]) == {
            (a["id"], a["a0"]),
            (b["id"], b["b0"]),
        }
        # Skills: click Y is click X once Y is X; fitness by executions, counts added.
        skills = {k.id: k for k in m.skills()}
        assert len(skills) == 2
        kx = skills[find(m.run_named("archive_export_skill"), a["id"], a["kx"])["id"]]
        assert find(m.run_named("archive_export_skill"), b["id"], b["kx"])["id"] == kx.id
        assert kx.executions == 5 and kx.fitness == pytest.approx((1.0 * 2 + 0.0 * 3) / 5)
        assert kx.operations[0].object_id == ox["id"]
        # Skill edges by (from, to, skill): counts added, weight by Eq. 1 at the merged fitness.
        cfg = Config().memory
        edges = {
            (r["src"], r["dst"], r["skill"]): r for r in m.run_named("archive_export_skill_edge")
        }
        e01 = edges[(s0["id"], s1["id"], kx.id)]
        assert e01["count"] == 5 and e01["change"] == pytest.approx((0.4 * 2 + 0.1 * 3) / 5)
        assert e01["weight"] == pytest.approx(
            skill_edge_weight(e01["change"], kx.fitness, cfg.alpha, cfg.c0)
        )
        ky = find(m.run_named("archive_export_skill"), b["id"], b["ky"])["id"]
        assert (s0["id"], s3["id"], ky) in edges and len(edges) == 2
        # Clusters by members: B's cluster joins A's (they share kx); selections added.
        (c,) = m.clusters()
        assert sorted(c.skill_ids) == sorted([kx.id, ky]) and c.selections == 3
        # Per-state statistics: explores added, tried united, ids remapped.
        oz = find(objects, b["id"], b["oz"])["id"]
        st = m.state_stats(s0["id"])
        assert st["explores"] == 3
        op_x = op_key(Operation("click", object_id=ox["id"]))
        op_z = op_key(Operation("click", object_id=oz))
        assert st["tried"] == {"": {op_x: pytest.approx(0.4)}, kx.id: {op_z: 0.1}}
        # HAS_OBJECT links mapped.
        assert {o.id for o in m.state_objects(s0["id"])} == {ox["id"], oz}
        # Input statistics summed.
        stats = {r["key"]: r for r in m.run_named("archive_export_inputstat")}
        assert (stats["key:enter"]["tried"], stats["key:enter"]["changed"]) == (5, 3)
        assert stats["key:tab"]["tried"] == 1
        # Provenance of every node; the manifest lists the memories merged.
        for r in states + objects:
            assert r["origin"]
        assert {m_["memory"] for m_ in m.manifest["merged"]} == {a["id"], b["id"]}
        assert all(r["status"] == "ok" for r in m.check())


def test_equal_skills_of_one_source_fold_into_one(tmp_path: Path) -> None:
    """Two skills of one memory that become equal (their objects merge) keep both origins."""
    src = tmp_path / "src"
    with Memory.open(src, Config(), encoder=ENC) as m:
        o1 = m.upsert_object(crop(1), (10, 10, 12, 10), PH_X, name="ok")
        o2 = m.upsert_object(crop(2), (10, 10, 12, 10), PH_X ^ 0xFF, name="ok again")
        k1 = m.add_skill("ok", "press ok", click(o1))
        k2 = m.add_skill("ok 2", "press ok", click(o2))
        k3 = m.add_skill("ok then enter", "refined", [*click(o1), *key_ops()], parent_id=k1.id)
        for k, n in ((k1, 2), (k2, 3)):
            k.executions = n
            m.update_skill(k)
        mid = m.manifest["memory_id"]
    # A destination whose objects tolerate the two hashes as one object.
    cfg = Config()
    cfg.memory.object_hash_distance = 10
    merge_memories([src], tmp_path / "d", cfg)
    with Memory.open(tmp_path / "d", cfg, read_only=True) as m:
        rows = m.run_named("archive_export_skill")
        assert len(rows) == 2 and len(m.run_named("archive_export_object")) == 1
        one = find(rows, mid, k1.id)
        assert find(rows, mid, k2.id) == one and one["executions"] == 5
        assert find(rows, mid, k3.id)["parent_id"] == one["id"]


@pytest.mark.parametrize("chunk", [1, 512])
def test_labels_keep_look_alike_controls_apart_through_a_merge(
    tmp_path: Path, monkeypatch, chunk: int
) -> None:
    """Two buttons of one style ("Open", "Save") are two objects in their memory and stay two
    in the merge; an unlabelled crop of the same look from another memory joins one of
    them. The same whether the objects go in chunks of one or all together."""
    from kgagent.memory import merge_rules

    monkeypatch.setattr(merge_rules, "OBJECT_CHUNK", chunk)
    a, b = tmp_path / "a", tmp_path / "b"
    with Memory.open(a, Config(), encoder=ENC) as m:
        o_open = m.upsert_object(crop(1), (10, 10, 40, 12), PH_X, label="Open")
        o_save = m.upsert_object(crop(2), (60, 10, 40, 12), PH_X ^ 0b1, label="Save")
        assert o_open.id != o_save.id
        ka = m.manifest["memory_id"]
    with Memory.open(b, Config(), encoder=ENC) as m:
        o_plain = m.upsert_object(crop(3), (10, 10, 40, 12), PH_X ^ 0b100)
        kb = m.manifest["memory_id"]
    merge_memories([a, b], tmp_path / "d")
    with Memory.open(tmp_path / "d", Config(), read_only=True) as m:
        rows = m.run_named("archive_export_object")
        assert sorted(r["label"] for r in rows) == ["Open", "Save"]
        assert find(rows, ka, o_open.id)["label"] == "Open"
        assert find(rows, ka, o_save.id)["label"] == "Save"
        assert find(rows, kb, o_plain.id)["label"] in ("Open", "Save")


def key_ops() -> list[Operation]:
    return [Operation("key", key="enter")]


def _query(dest: Path, *args: str) -> list[dict]:
    """`kgagent query` in a process of its own, as a user runs it: the command forks the
    query's child (tests/cli/test_security_query.py, `run_process`)."""
    res = subprocess.run(
        [*KGAGENT, "query", "--memory", str(dest), *args, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_provenance_through_kgagent_query(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    dest = tmp_path / "ab"
    merge_memories([pa, pb], dest)
    rows = _query(dest, "--name", "merged_skills")
    by_name = {r["name"]: json.loads(r["origin"]) for r in rows}
    assert {"memory": b["id"], "id": b["ky"]} in by_name["close"]  # learned by agent B
    assert {"memory": a["id"], "id": a["kx"]} in by_name["press button"]
    assert {"memory": b["id"], "id": b["kx"]} in by_name["press button"]  # and by B
    q = f"MATCH (s:State) WHERE s.origin CONTAINS '{a['id']}' RETURN count(*) AS n"
    assert _query(dest, q)[0]["n"] == 2


def test_merging_again_changes_nothing(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    dest = tmp_path / "ab"
    first = merge_memories([pa, pb], dest)
    assert first["memories_recorded"] == 2
    before = tree_hash(dest)
    for again in ([pa], [pb], [pa, pb], [dest]):
        s = merge_memories(again, dest)
        assert not s["changed"] and s["states_created"] == s["states_merged"] == 0
        assert list(s) == list(first)  # the same keys in the same order: a script's columns
        assert s["memories_recorded"] == 0
        assert tree_hash(dest) == before  # byte for byte
    # B merged into A itself, then A (now A ∪ B) again: nothing new either.
    merge_memories([pb], pa)
    into_a = tree_hash(pa)
    assert not merge_memories([pb], pa)["changed"]
    assert tree_hash(pa) == into_a
    # A ∪ B merged into a third memory, then B alone: B's nodes are already there.
    merge_memories([dest], tmp_path / "c")
    c = tree_hash(tmp_path / "c")
    assert not merge_memories([pb], tmp_path / "c")["changed"]
    assert tree_hash(tmp_path / "c") == c
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(work_prefix(dest))]


def test_archives_merge_like_directories(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    archive = tmp_path / "a.kgmem.tar.gz"
    export_memory(pa, archive)
    from_dirs = merge_memories([pa, pb], tmp_path / "d1")
    from_archive = merge_memories([archive, pb], tmp_path / "d2")
    keys = ("nodes", "skill_edges", "similarity_edges", "objects", "skills_augmented")
    assert {k: from_archive[k] for k in keys} == {k: from_dirs[k] for k in keys}
    with Memory.open(tmp_path / "d2", Config(), read_only=True) as m:
        # Provenance names the exported memory, not the staging copy.
        find(m.run_named("archive_export_state"), a["id"], a["a0"])
    assert not merge_memories([pa], tmp_path / "d2")["changed"]  # the same memory


def test_an_imported_copy_is_the_same_memory_to_a_merge(two, tmp_path: Path) -> None:
    """A colleague imports my archive, then merges it where my memory went already: the
    copy keeps my memory's id (and its ``merged`` list), so nothing is counted twice."""
    from kgagent.memory.archive import import_memory

    pa, a, pb, b = two
    merge_memories([pb], pa)  # A's manifest now lists B as merged
    archive = tmp_path / "a.kgmem.tar.gz"
    export_memory(pa, archive)
    copy = tmp_path / "copy"
    import_memory(archive, copy)
    original, imported = read_manifest(pa), read_manifest(copy)
    assert imported["memory_id"] == original["memory_id"]
    assert [m["memory"] for m in imported["merged"]] == [m["memory"] for m in original["merged"]]
    dest = tmp_path / "team"
    merge_memories([pa], dest)
    before = tree_hash(dest)
    assert not merge_memories([copy], dest)["changed"]
    assert tree_hash(dest) == before


def test_refusals_leave_the_destination_as_it_was(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    dest = tmp_path / "ab"
    merge_memories([pa], dest)
    before = tree_hash(dest)
    other = tmp_path / "other"
    with Memory.open(other, Config(), encoder=EncoderSpec("pixel:v9", 16, (0.9, 0.8))) as m:
        m.merge_or_create_state(e(3))
    newer = tmp_path / "newer"
    build_a(newer)
    write_manifest(newer, {**read_manifest(newer), "schema_version": 99})
    engine = engine_name(Config().memory.engine)
    foreign = tmp_path / "foreign"
    build_a(foreign)
    write_manifest(
        foreign, {**read_manifest(foreign), "engine": "kuzu" if engine == "ladybug" else "ladybug"}
    )
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("not a memory")
    cases = [
        ([pb, other], dest, "only memories of one encoder merge"),
        ([newer], dest, "newer than this kgagent"),
        ([foreign], dest, "export it"),
        ([tmp_path / "plain"], dest, "not a kgagent memory"),
        ([tmp_path / "nothing"], dest, "no memory or archive"),
        ([pb], tmp_path / "plain", "not a kgagent memory"),
        ([], dest, "at least one"),
    ]
    for sources, into, msg in cases:
        with pytest.raises(KGAgentError, match=msg) as info:
            merge_memories(sources, into)
        assert "\n" not in str(info.value)
        assert tree_hash(dest) == before
    assert (tmp_path / "plain" / "notes.txt").read_text() == "not a memory"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(work_prefix(dest))]


def test_older_schema_source_is_migrated_in_a_copy(two, tmp_path: Path) -> None:
    """A source without the provenance column and memory id merges; the source stays as it was."""
    pa, a, pb, b = two
    old = tmp_path / "old"
    with Memory.open(old, Config(), encoder=ENC) as m:
        m.merge_or_create_state(e(9))
        m.cypher("ALTER TABLE State DROP origin", write=True)
        m.cypher("ALTER TABLE Skill DROP origin", write=True)
        m.cypher("ALTER TABLE Object DROP origin", write=True)
        m.cypher("ALTER TABLE SkillCluster DROP origin", write=True)
        m.cypher("DROP TABLE InputStat", write=True)
        m.cypher("MATCH (x:_Migration) WHERE x.version >= 3 DELETE x", write=True)
    manifest = read_manifest(old)
    manifest.pop("memory_id")
    write_manifest(old, {**manifest, "schema_version": 2})
    before = tree_hash(old)
    s = merge_memories([old, pb], tmp_path / "d")
    assert s["states_created"] == 1 + 4 and tree_hash(old) == before  # e(9), and B's four
    assert not merge_memories([old], tmp_path / "d")["changed"]  # its derived id is stable


def test_a_memory_from_before_ids_keeps_the_id_a_merge_knew_it_by(two, tmp_path: Path) -> None:
    """Opened to write after a merge, it records the id derived at the merge: merging it
    again adds nothing (a new random id made it another memory, counted twice)."""
    pa, a, pb, b = two
    manifest = read_manifest(pa)
    manifest.pop("memory_id")
    write_manifest(pa, manifest)
    dest = tmp_path / "team"
    merge_memories([pa], dest)
    Memory.open(pa, Config(), create=False).close()  # records its id
    assert [m["memory"] for m in read_manifest(dest)["merged"]] == [read_manifest(pa)["memory_id"]]
    before = tree_hash(dest)
    assert not merge_memories([pa], dest)["changed"]
    assert tree_hash(dest) == before


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from kgagent.memory import merge_place, store
    from kgagent.memory.merge import merge_memories

    point, dest, *sources = sys.argv[1:]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def say(msg):
        if point == "copied" and msg.startswith("merging"):
            die()
        if point == "before_place" and msg.startswith("putting"):
            die()

    if point == "mid_states":
        real = store.Memory.merge_or_create_state
        calls = []
        def merge_or_create_state(self, *a, **k):
            calls.append(1)
            if len(calls) == 3:
                die()
            return real(self, *a, **k)
        store.Memory.merge_or_create_state = merge_or_create_state
    if point in ("between_renames", "after_renames"):
        merge_place.staging.exchange = lambda a, b: False  # the two-rename fallback
        real_replace = os.replace
        n = []
        def replace(a, b):  # the renames of the destination: aside, then the new one in
            ours = os.path.abspath(dest) in (os.path.abspath(a), os.path.abspath(b))
            n.extend([1] if ours else [])
            if ours and point == "between_renames" and len(n) == 2:
                die()
            real_replace(a, b)
            if ours and point == "after_renames" and len(n) == 2:
                die()
        os.replace = replace
    merge_memories(sources, dest, progress=say)
    print("finished")
    """
)


def killed_merge(point: str, dest: Path, *sources: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, point, str(dest), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


@pytest.mark.parametrize(
    "point", ["copied", "mid_states", "before_place", "between_renames", "after_renames"]
)
def test_kill9_leaves_the_destination_as_it_was(two, tmp_path: Path, point: str) -> None:
    pa, a, pb, b = two
    dest = tmp_path / "dest"
    merge_memories([pa], dest)
    before = tree_hash(dest)
    killed_merge(point, dest, pb)
    if point == "after_renames":  # killed once the new memory was in place
        assert tree_hash(dest) != before
    elif point == "between_renames":  # the old memory is aside; the next merge puts it back
        assert not dest.exists()
        recover(dest, lambda m: None)
        assert tree_hash(dest) == before
    else:
        assert tree_hash(dest) == before
    # The next merge cleans up after the killed one and merges.
    s = merge_memories([pb], dest)
    assert s["changed"] == (point != "after_renames") and s["nodes"] == 4
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(work_prefix(dest))]
    assert not lock_path(dest).exists()  # removed when the merge ended


HOLDER = textwrap.dedent(
    """
    import sys, time
    from kgagent.config import Config
    from kgagent.memory import Memory
    m = Memory.open(sys.argv[1], Config())
    print("open", flush=True)
    sys.stdin.readline()
    m.close()
    """
)


def test_a_destination_being_written_is_refused(two, tmp_path: Path) -> None:
    pa, a, pb, b = two
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pa)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "open"
        before = tree_hash(pa, skip=("graph.db.wal",))
        with pytest.raises(KGAgentError, match="in use by"):  # the writer lock refuses it
            merge_memories([pb], pa)
        assert tree_hash(pa, skip=("graph.db.wal",)) == before
        # As a source, a memory being written is read through an export (a snapshot);
        # kuzu lets no second process read it at all.
        if engine_name(Config().memory.engine) == "kuzu":
            with pytest.raises(KGAgentError, match="in use"):
                merge_memories([pa], tmp_path / "d")
        else:
            assert merge_memories([pa], tmp_path / "d")["nodes"] == 2
    finally:
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=60)


def _play(tmp_path: Path, name: str, seed: int, steps: int):
    from kgagent.agent.runner import Runner

    cfg = Config()
    cfg.perception.encoder = "pixel"
    cfg.perception.segmenter = "opencv"
    cfg.brain.kind = "offline"
    cfg.run.env = "cardgame"
    cfg.run.seed = seed
    return Runner(cfg, memory_path=tmp_path / name, progress=False, log=lambda m: None).run(steps)


def test_merged_agents_memory_holds_both_and_plays(tmp_path: Path) -> None:
    s1 = _play(tmp_path, "m1", 1, 25)
    s2 = _play(tmp_path, "m2", 2, 25)
    out = merge_memories([tmp_path / "m1", tmp_path / "m2"], tmp_path / "merged")
    assert out["nodes"] <= s1.nodes + s2.nodes and out["nodes"] >= max(s1.nodes, s2.nodes) // 2
    with Memory.open(tmp_path / "merged", Config(), read_only=True) as m:
        assert all(r["status"] == "ok" for r in m.check())
        merged_skills = m.run_named("archive_export_skill")
        objects = m.run_named("archive_export_object")
        ops_of = {r["id"]: r["operations"] for r in merged_skills}
        for name in ("m1", "m2"):
            with Memory.open(tmp_path / name, Config(), read_only=True) as src:
                mid = src.manifest["memory_id"]
                omap = {}
                for o in src.run_named("archive_export_object"):
                    omap[o["id"]] = find(objects, mid, o["id"])["id"]
                for k in src.skills():
                    # Present, or merged into a skill whose operations are equal.
                    hit = find(merged_skills, mid, k.id)
                    mapped = [
                        Operation.from_dict(
                            {
                                **op.to_dict(),
                                **{
                                    f: omap[getattr(op, f)]
                                    for f in ("object_id", "object_id2")
                                    if getattr(op, f)
                                },
                            }
                        )
                        for op in k.operations
                    ]
                    assert operations_identity(mapped) == operations_identity(
                        Skill.parse_operations(ops_of[hit["id"]])
                    )
    s3 = _play(tmp_path, "merged", 3, 10)  # a round from the merged memory runs
    assert s3.steps == 10 and s3.nodes >= out["nodes"]
    assert math.isfinite(s3.progression)


def test_cli_merge_command(two, tmp_path: Path) -> None:
    from kgagent.cli.merge_cmd import merge_cmd

    pa, a, pb, b = two
    dest = tmp_path / "ab"
    res = CliRunner().invoke(merge_cmd, [str(pa), str(pb), "--into", str(dest), "--format", "json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)[0]
    assert row["nodes"] == 4 and row["changed"] is True
    res = CliRunner().invoke(merge_cmd, [str(pa), "--into", str(dest), "--format", "json"])
    assert json.loads(res.stdout)[0]["changed"] is False
    assert os.path.isdir(dest)


def test_merge_through_a_symlink_merges_into_the_directory_it_points_to(
    two, tmp_path: Path
) -> None:
    pa, a, pb, b = two
    real = tmp_path / "real"
    merge_memories([pa], real)
    link = tmp_path / "link"
    link.symlink_to(real.name)
    s = merge_memories([pb], link)
    assert s["changed"] and s["memory"] == str(real)
    assert link.is_symlink() and os.readlink(link) == real.name  # the link stays
    with Memory.open(real, Config(), read_only=True) as m:
        assert m.stats().nodes == 4
    dangling = tmp_path / "dangling"
    dangling.symlink_to("nowhere")
    with pytest.raises(KGAgentError, match="symbolic link to nowhere, which does not exist") as e:
        merge_memories([pb], dangling)
    assert "\n" not in str(e.value) and dangling.is_symlink()
    assert not (tmp_path / "nowhere").exists()


def test_a_damaged_blob_of_a_source_is_refused(two, tmp_path: Path) -> None:
    """Copied by content hash, a damaged blob would be stored under a new name and pass
    `memory check` in the merged memory; the merge refuses it like `memory export`."""
    pa, a, pb, b = two
    dest = tmp_path / "dest"
    merge_memories([pa], dest)
    before = tree_hash(dest)
    with Memory.open(pb, Config(), read_only=True) as m:
        crop_blob = m.get_object(b["oz"]).crop_blob
        m.blobs.path(crop_blob).write_bytes(b"corrupt\n")
        assert {r["check"]: r["count"] for r in m.check()}["damaged_blobs"] == 1
    with pytest.raises(KGAgentError, match=f"blob {crop_blob} of {pb} is damaged") as e:
        merge_memories([pb], dest)
    assert "\n" not in str(e.value) and "memory check" in str(e.value)
    assert tree_hash(dest) == before
    with pytest.raises(KGAgentError, match="is damaged"):
        merge_memories([pb], tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
    assert not [p for p in tmp_path.iterdir() if ".merge-" in p.name]


def test_a_destination_whose_folder_cannot_be_written_is_named(
    two, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.memory import merge_place

    pa, a, pb, b = two
    (tmp_path / "file").write_text("")
    with pytest.raises(KGAgentError) as e:
        merge_memories([pa], tmp_path / "file" / "dest")
    assert (
        str(e.value)
        == f"cannot merge into {tmp_path / 'file' / 'dest'}: {tmp_path / 'file'} is not a folder"
    )

    real_open = os.open

    def refused(path, *args, **kw):  # a folder this user may not write (root may write any)
        if str(path).endswith(".merge.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(merge_place.os, "open", refused)
    with pytest.raises(KGAgentError) as e:
        merge_memories([pa], tmp_path / "dest")
    assert str(e.value) == (
        f"cannot merge into {tmp_path / 'dest'}: its folder {tmp_path} is not writable "
        "(Permission denied)"
    )


def test_memory_check_reports_and_repair_removes_a_killed_merges_work(two, tmp_path: Path) -> None:
    from kgagent.cli.memory_cmd import memory_group

    pa, a, pb, b = two
    dest = tmp_path / "dest"
    merge_memories([pa], dest)
    assert not lock_path(dest).exists()
    killed_merge("copied", dest, pb)  # leaves its work directory and its lock file
    left = [p for p in tmp_path.iterdir() if p.name.startswith(work_prefix(dest))]
    assert len(left) == 1 and lock_path(dest).exists()

    def check(*extra: str) -> dict:
        res = CliRunner().invoke(
            memory_group, ["check", "--memory", str(dest), "--format", "json", *extra]
        )
        assert res.exit_code == 0, res.output
        return {r["check"]: r for r in json.loads(res.stdout)}["merge_leftovers"]

    row = check()
    assert (row["status"], row["count"]) == ("repairable", 1) and left[0].exists()
    info = CliRunner().invoke(memory_group, ["info", "--memory", str(dest)])
    assert info.exit_code == 0, info.output
    (warning,) = [line for line in info.stderr.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: a killed merge left 1 work directory (")
    assert warning.endswith(f"({work_prefix(dest)}*): `kgagent memory check --repair` removes it")
    row = check("--repair")
    assert (row["status"], row["count"]) == ("ok", 0)
    assert not left[0].exists() and not lock_path(dest).exists()
    info = CliRunner().invoke(memory_group, ["info", "--memory", str(dest)])
    assert info.exit_code == 0 and "warning" not in info.stderr
    with Memory.open(dest, Config(), read_only=True) as m:  # the memory is as it was
        assert m.stats().nodes == 2


def test_the_merge_lock_is_one_at_a_time_and_removed_after(tmp_path: Path) -> None:
    from kgagent.memory.merge_place import MergeError, merge_lock

    dest = tmp_path / "dest"
    with merge_lock(dest):
        assert lock_path(dest).exists()
        with pytest.raises(MergeError, match="another merge into"), merge_lock(dest):
            pass
        assert lock_path(dest).exists()  # the refused one leaves the holder's file
    assert not lock_path(dest).exists()
    with pytest.raises(KGAgentError):  # refused: no lock file stays beside it either
        merge_memories([tmp_path / "nothing"], dest)
    assert list(tmp_path.iterdir()) == []


def add_user_tables(path: Path, state: str) -> None:
    """A node table and a rel table of the user's (`kgagent query --write`), with rows."""
    with Memory.open(path, Config()) as m:
        m.cypher("CREATE NODE TABLE Note(id STRING PRIMARY KEY, text STRING)", write=True)
        m.cypher("CREATE REL TABLE Tagged(FROM State TO Note)", write=True)
        m.cypher("CREATE (:Note {id: 'n1', text: 'the save dialog hides'})", write=True)
        m.cypher(
            "MATCH (s:State {id: $s}), (n:Note {id: 'n1'}) CREATE (s)-[:Tagged]->(n)",
            {"s": state},
            write=True,
        )


def test_a_source_holding_the_users_tables_is_refused_before_anything_is_written(
    two, tmp_path: Path
) -> None:
    """The merged memory would lack them: refused in one line naming them and the way on."""
    from kgagent.cli.main import cli

    pa, a, pb, b = two
    dest = tmp_path / "ab"
    merge_memories([pb], dest)
    before = tree_hash(dest)
    add_user_tables(pa, a["a0"])
    source_before = tree_hash(pa)
    for into in (dest, tmp_path / "new"):
        with pytest.raises(KGAgentError) as info:
            merge_memories([pb, pa], into)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(f"{pa} holds table(s) Tagged, Note ")
        assert f'"DROP TABLE Tagged" --memory {pa}' in msg and '"DROP TABLE Note"' in msg
    assert tree_hash(dest) == before and not (tmp_path / "new").exists()
    assert tree_hash(pa) == source_before
    assert not [p for p in tmp_path.iterdir() if ".merge" in p.name]
    res = CliRunner().invoke(cli, ["memory", "merge", str(pa), "--into", str(dest)])
    (line,) = res.stderr.splitlines()
    assert res.exit_code != 0 and "not kgagent's" in line and tree_hash(dest) == before
    with Memory.open(pa, Config()) as m:  # dropped as the message says, it merges
        m.cypher("DROP TABLE Tagged", write=True)
        m.cypher("DROP TABLE Note", write=True)
    s = merge_memories([pa], dest)
    assert s["changed"] and s["nodes"] == 4  # A and B merge into four states


@pytest.mark.skipif(
    engine_name(Config().memory.engine) == "kuzu", reason="kuzu lets no second process read it"
)
def test_a_source_being_written_with_the_users_tables_is_refused_as_a_merge(
    two, tmp_path: Path
) -> None:
    """Read through an export, it is refused by the merge (not with the export's advice)."""
    pa, a, pb, b = two
    add_user_tables(pa, a["a0"])
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pa)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "open"
        with pytest.raises(KGAgentError, match=r"holds table\(s\) Tagged, Note .* merge again$"):
            merge_memories([pa], tmp_path / "d")
        assert not (tmp_path / "d").exists()
    finally:
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=60)


def test_the_destinations_own_tables_are_kept_through_a_merge(two, tmp_path: Path) -> None:
    """The destination's graph is copied whole and folded into: the user's tables stay."""
    pa, a, pb, b = two
    add_user_tables(pb, b["b0"])
    s = merge_memories([pa], pb)
    assert s["changed"] and s["nodes"] == 4
    with Memory.open(pb, Config(), read_only=True) as m:
        rows = m.cypher("MATCH (s:State)-[:Tagged]->(n:Note) RETURN s.id AS s, n.text AS t")
        assert [(r["s"], r["t"]) for r in rows] == [(b["b0"], "the save dialog hides")]
        assert all(r["status"] == "ok" for r in m.check())
