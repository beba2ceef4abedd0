"""`kgagent memory forget TEXT`: every row that holds a text, and every row that would
name what was removed, goes; the rest stays; the memory passes `memory check`; the
crops go with their objects; the step logs that hold the text are named."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.actions import Operation
from kgagent.agent.augment import op_key
from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.memory.forget import forget

from .conftest import ENC, e, graph_dump, tree_hash

SECRET = "hunter2"


@dataclass
class Built:
    path: Path
    ids: dict[str, str] = field(default_factory=dict)


def crop(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, size=(10, 12, 3), dtype=np.uint8)


def build(path: Path) -> Built:
    """Two states; objects "hunter2" (o1), "Login" (o2), "CAFÉ" (o3); skills that name the
    secret by name (k1), by the text they type (k3) and by object only (k4), and others
    that do not (k2, k5 grown from k1, k6); a cluster named after k1; input statistics; an
    exploration record; a step log with the secret and one without."""
    b = Built(path)
    with Memory.open(path, Config(), encoder=ENC) as m:
        thumb = np.full((24, 32, 3), 40, dtype=np.uint8)
        a = m.merge_or_create_state(e(0), thumbnail=thumb).id
        s = m.merge_or_create_state(e(1), thumbnail=thumb + 1).id
        o1 = m.upsert_object(crop(1), (0, 0, 12, 10), 0x0F0F0F0F, label=SECRET).id
        o2 = m.upsert_object(crop(2), (20, 0, 12, 10), 0x0F0F0F0F << 16, label="Login").id
        o3 = m.upsert_object(crop(3), (40, 0, 12, 10), 0x0F0F0F0F << 32, label="CAFÉ").id
        m.link_state_objects(a, [o1, o2, o3])
        click1 = Operation("click", object_id=o1, object_name=f'"{SECRET}"')
        typed = Operation("type", text="HUNTER2 !")
        k1 = m.add_skill(f'click "{SECRET}"', "clicks it", [click1])
        k2 = m.add_skill('press enter -> "Welcome"', "enters", [Operation("key", key="enter")])
        k3 = m.add_skill("type a word", "types", [typed])
        k4 = m.add_skill(
            "click object_9", "clicks", [Operation("click", object_id=o1, object_name="object_9")]
        )
        k5 = m.add_skill("tab", "next", [Operation("key", key="tab")], parent_id=k1.id)
        k6 = m.add_skill(
            'click "Login"',
            "logs in",
            [
                Operation("key", key="enter"),
                Operation("click", object_id=o2, object_name='"Login"'),
            ],
        )
        k7 = m.add_skill("type coffee", "types", [Operation("type", text="Café au lait")])
        m.link_skill_objects(k1.id, [o1])
        m.link_skill_objects(k4.id, [o1])
        m.link_skill_objects(k6.id, [o2])
        m.upsert_skill_edge(a, s, k1.id, 0.5, 1.0)
        m.upsert_skill_edge(a, s, k2.id, 0.4, 1.0)
        m.upsert_skill_edge(s, a, k3.id, 0.3, 1.0)
        m.upsert_skill_edge(s, a, k6.id, 0.3, 1.0)
        c1 = m.add_cluster(f'group: click "{SECRET}"', "named after k1")
        c2 = m.add_cluster("menus", "menu handling")
        for k in (k1, k2):
            m.add_to_cluster(k.id, c1.id)
        m.add_to_cluster(k6.id, c2.id)
        m.add_input_counts(
            {
                "type:HUNTER2 !": ("input", 2, 1),
                f"object:{o1}:click": ("input", 3, 2),
                "known:type:HUNTER2 !": ("known", 1, 0),
                "key:enter": ("input", 5, 4),
            }
        )
        key_enter = op_key(Operation("key", key="enter"))
        tried = {
            "": {op_key(click1): 0.1, key_enter: 0.2, op_key(typed): 0.0},
            k1.id: {op_key(Operation("key", key="tab")): 0.3},
        }
        m.put_state_stats(a, {"version": 2, "explores": 2, "tried": tried})
        m.put_state_stats(s, {"version": 2, "explores": 1, "tried": {"": {key_enter: 0.5}}})
        b.ids = {"a": a, "s": s, "o1": o1, "o2": o2, "o3": o3, "key_enter": key_enter}
        b.ids.update({f"k{i}": k.id for i, k in enumerate((k1, k2, k3, k4, k5, k6, k7), 1)})
        b.ids.update(c1=c1.id, c2=c2.id)
    runs = path / "runs"
    runs.mkdir()
    (runs / "with.jsonl").write_text(json.dumps({"label": "Hunter2"}) + "\n")
    (runs / "without.jsonl").write_text(json.dumps({"label": "Login"}) + "\n")
    return b


@pytest.fixture
def built(tmp_path: Path) -> Built:
    return build(tmp_path / "memory")


def check_is_clean(path: Path) -> None:
    with Memory.open(path, Config(), read_only=True) as m:
        bad = {r["check"]: r["count"] for r in m.check() if r["status"] != "ok"}
    assert bad == {}


def test_forget_removes_every_row_that_holds_the_text_or_names_what_went(built: Built) -> None:
    ids = built.ids
    with Memory.open(built.path, Config(), read_only=True) as m:
        crop1 = m.get_object(ids["o1"]).crop_blob
    said: list[str] = []
    out = forget(built.path, Config(), "  HUNTER2 ", say=said.append)
    assert out == {
        "objects": 1,
        "skills": 3,  # k1 by name, k3 by the text it types, k4 by its object
        "clusters": 1,
        "input_stats": 3,
        "state_stats": 1,
        "blobs_removed": 1,
        "blob_bytes": out["blob_bytes"],
        "step_logs": 1,
        "dry_run": False,
    }
    assert out["blob_bytes"] > 0
    assert said == [
        f"the step log {built.path / 'runs' / 'with.jsonl'} holds the text: delete it by hand"
    ]
    check_is_clean(built.path)
    with Memory.open(built.path, Config(), encoder=ENC) as m:  # opens for the agent
        dump = json.dumps(graph_dump(m), default=str)
        assert SECRET not in dump.casefold() and ids["o1"] not in dump
        assert ids["k1"] not in dump and ids["k3"] not in dump and ids["k4"] not in dump
        assert not m.blobs.path(crop1).exists()
        skills = {k.id: k for k in m.skills()}
        assert set(skills) == {ids["k2"], ids["k5"], ids["k6"], ids["k7"]}
        assert skills[ids["k5"]].parent_id is None  # grown from a skill that went
        assert [c.id for c in m.clusters()] == [ids["c2"]]
        assert set(m.input_counts()) == {"key:enter"}
        assert m.state_stats(ids["a"]) == {
            "version": 2,
            "explores": 2,
            "tried": {"": {ids["key_enter"]: 0.2}},
        }
        assert m.state_stats(ids["s"])["tried"] == {"": {ids["key_enter"]: 0.5}}  # untouched
        assert {o["id"] for o in m.run_named("forget_object_rows")} == {ids["o2"], ids["o3"]}


def test_a_text_outside_ascii_is_found_in_json_too(built: Built) -> None:
    """Operations are JSON with its escapes (``"Caf\\u00e9"``): found all the same."""
    out = forget(built.path, Config(), "café", say=lambda _: None)
    assert (out["objects"], out["skills"]) == (1, 1)  # "CAFÉ"; k7 types "Café au lait"
    check_is_clean(built.path)
    with Memory.open(built.path, Config(), read_only=True) as m:
        assert built.ids["k7"] not in {k["id"] for k in m.run_named("forget_skill_rows")}


def test_a_dry_run_counts_and_changes_nothing(built: Built) -> None:
    before = tree_hash(built.path)
    out = forget(built.path, Config(), SECRET, dry_run=True, say=lambda _: None)
    assert (out["objects"], out["skills"], out["clusters"], out["dry_run"]) == (1, 3, 1, True)
    assert "blobs_removed" not in out
    assert tree_hash(built.path) == before


def test_a_text_nothing_holds_changes_no_row(built: Built) -> None:
    with Memory.open(built.path, Config(), read_only=True) as m:
        before = graph_dump(m)
    out = forget(built.path, Config(), "no such text", say=lambda _: None)
    assert {k: v for k, v in out.items() if v and k != "dry_run"} == {}
    with Memory.open(built.path, Config(), read_only=True) as m:
        assert graph_dump(m) == before


def test_the_cli_forgets_and_names_the_step_log(built: Built) -> None:
    mem = str(built.path)
    res = CliRunner().invoke(
        cli, ["memory", "forget", SECRET, "--memory", mem, "--format", "json"], prog_name="kgagent"
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)[0]["objects"] == 1
    assert "with.jsonl holds the text: delete it by hand" in res.stderr
    empty = CliRunner().invoke(cli, ["memory", "forget", " ", "--memory", mem], prog_name="kgagent")
    assert empty.exit_code == 1 and len(empty.output.strip().splitlines()) == 1
    assert "give the text to forget" in empty.output


def test_a_text_in_ids_or_json_keys_is_not_forgotten(built: Built) -> None:
    """Every string used to count: "0000" is in every id (``o-0000001-…``) and "in" in the
    key ``kind``, so they took skills, input statistics and records that hold no such text."""
    with Memory.open(built.path, Config(), read_only=True) as m:
        before = graph_dump(m)
    for text in ("0000", "kind", "object_id", "explores", "tried"):
        out = forget(built.path, Config(), text, say=lambda _: None)
        assert {k: v for k, v in out.items() if v and k != "dry_run"} == {}, text
    with Memory.open(built.path, Config(), read_only=True) as m:
        assert graph_dump(m) == before


def test_a_step_log_holding_the_text_outside_ascii_is_named(built: Built) -> None:
    """A step log writes "CAFÉ" as "CAF\\u00c9": the escaped text was searched lower-cased,
    whose hex digits are not, and "café" found nothing there."""
    runs = built.path / "runs"
    (runs / "cafe.jsonl").write_text(json.dumps({"label": "CAFÉ", "typed": "Straße"}) + "\n")
    said: list[str] = []
    forget(built.path, Config(), "café", dry_run=True, say=said.append)
    assert any("cafe.jsonl holds the text" in s for s in said)
    said.clear()
    forget(built.path, Config(), "STRASSE", dry_run=True, say=said.append)
    assert any("cafe.jsonl holds the text" in s for s in said)
