"""What a hostile request gets from the view: bounded work, no file through a link, no
traceback, nothing cached that carries the memory, no frame on another site's page.

Each test was found by a security tester on a running view: a 50 MB callback body was
read whole, ``/download/skills.csv?filter=<2,500 clauses>`` (a GET any page can make a
browser send) took 19 s on 20,000 skills, a link in ``blobs/`` served a file from outside
the memory, a number where the page sends a list was a 500 with a traceback.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.view.listing import (
    FILTER_CLAUSES,
    FILTER_MAX,
    MORE,
    SEARCH_MAX,
    SEARCH_TERMS,
    SORT_MAX,
    Choices,
    Refused,
    table_rows,
)

ENC = EncoderSpec("test:v1", 64, (0.95, 0.88))
SECRET = b"kgagent-secret: not part of the memory"
PNG = b"\x89PNG\r\n\x1a\n a blob of the memory"


@pytest.fixture(scope="module")
def mem(tmp_path_factory) -> Path:
    """A small memory (built with the memory API: seconds), one real blob, one step log."""
    path = tmp_path_factory.mktemp("hardening") / "mem"
    rng = np.random.default_rng(5)
    with Memory.open(path, Config(), encoder=ENC) as m:
        ids = [m.merge_or_create_state(rng.normal(size=64)).id for _ in range(6)]
        k = m.add_skill("press enter", "a probe", [Operation("key", key="enter")])
        c = m.add_cluster("one", "a probe")
        m.add_to_cluster(k.id, c.id)
        m.upsert_skill_edge(ids[0], ids[1], k.id, 0.5, 1.0)
    blob = hashlib.sha256(PNG).hexdigest()
    (path / "blobs" / blob[:2]).mkdir(parents=True, exist_ok=True)
    (path / "blobs" / blob[:2] / f"{blob}.png").write_bytes(PNG)
    runs = path / "runs"
    runs.mkdir(exist_ok=True)
    lines = [
        {"type": "run", "env": "cardgame", "seed": 1, "started": "2026-11-28T10:00:00+00:00"},
        {"type": "step", "step": 1, "executions": []},
        {"type": "summary", "stopped": "done", "steps": 1},
    ]
    (runs / "20261128-100000-run.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.fixture(scope="module")
def client(mem):
    from kgagent.view.app import create_app

    c = create_app(mem, refresh_s=0.0).server.test_client()
    c.deps = c.get("/_dash-dependencies").get_json()
    return c


def _body(client, output: str, values: dict, changed: str | None = None) -> dict:
    """The body the browser posts for the callback whose outputs include ``output``."""
    (dep,) = [d for d in client.deps if output in d["output"].strip(".").split("...")]

    def outputs(spec: str):
        if spec.startswith(".."):
            return [
                dict(zip(("id", "property"), x.rsplit(".", 1)))
                for x in spec.strip(".").split("...")
            ]
        i, p = spec.rsplit(".", 1)
        return {"id": i, "property": p}

    return {
        "output": dep["output"],
        "outputs": outputs(dep["output"]),
        "inputs": [dict(i, value=values.get(f"{i['id']}.{i['property']}")) for i in dep["inputs"]],
        "state": [dict(s, value=values.get(f"{s['id']}.{s['property']}")) for s in dep["state"]],
        "changedPropIds": [changed or next(iter(values))],
    }


# ------------------------------------------------------------------ 1. bounded work
def test_a_request_body_beyond_the_bound_is_refused_unread(client) -> None:
    from kgagent.view.app import REQUEST_MAX

    body = _body(client, "l-shown.children", {"l-skills.filter_query": ""})
    body["padding"] = "x" * (REQUEST_MAX + 1)
    r = client.post("/_dash-update-component", json=body)
    assert r.status_code == 413
    del body["padding"]
    assert client.post("/_dash-update-component", json=body).status_code == 200


def test_a_download_beyond_the_filter_or_sort_bounds_is_a_400(client) -> None:
    def get(**args):
        return client.get("/download/skills.csv?" + urlencode(args))

    clauses = " && ".join(["{fitness} > 0"] * (FILTER_CLAUSES + 1))
    r = get(filter=clauses)
    assert r.status_code == 400 and f"more than {FILTER_CLAUSES} clauses".encode() in r.data
    r = get(filter="{name} contains " + "a" * FILTER_MAX)
    assert r.status_code == 400 and b"longer than" in r.data
    keys = [{"column_id": "fitness", "direction": "desc"}] * (SORT_MAX + 1)
    r = get(sort=json.dumps(keys))
    assert r.status_code == 400 and b"sort keys" in r.data
    # within the bounds: a key repeated, on a column the table lacks, counts once or not
    ok = [{"column_id": "fitness", "direction": "desc"}] * SORT_MAX
    r = get(sort=json.dumps(ok), filter=" && ".join(["{fitness} > -1"] * FILTER_CLAUSES))
    assert r.status_code == 200 and b"press enter" in r.data
    assert get(sort=json.dumps([[1] * 5] * 10**4)).status_code == 400  # json, not a sort


def test_sort_keys_are_deduplicated_and_limited_to_the_tables_columns() -> None:
    rows = [{"a": i % 2, "b": -i} for i in range(6)]
    keys = [{"column_id": "a"}, {"column_id": "nope"}, {"column_id": "a", "direction": "desc"}]
    keys.append({"column_id": "b"})
    got, _ = table_rows(rows, sort_by=keys, columns=["a", "b"])
    assert [(r["a"], r["b"]) for r in got] == [(0, -4), (0, -2), (0, 0), (1, -5), (1, -3), (1, -1)]
    with pytest.raises(Refused):
        table_rows(rows, sort_by=[{"column_id": "a"}] * (SORT_MAX + 1))


def test_a_table_callback_beyond_the_bounds_keeps_the_table_and_says_why(client) -> None:
    too_many = " && ".join(["{fitness} > 0"] * (FILTER_CLAUSES + 1))
    body = _body(
        client,
        "l-shown.children",
        {"l-skills.filter_query": too_many, "l-skills.page_current": 0},
        "l-skills.filter_query",
    )
    r = client.post("/_dash-update-component", json=body)
    assert r.status_code == 200
    out = r.get_json()["response"]
    assert f"filter not applied: more than {FILTER_CLAUSES} clauses" in out["l-shown"]["children"]
    assert "l-skills" not in out  # the rows on screen stay


def test_a_search_beyond_the_bounds_finds_nothing_and_says_why() -> None:
    ch = Choices([{"label": f"s{i} ×1", "value": f"v{i}"} for i in range(100)])
    assert len(ch.offer(" ".join(["s1"] * SEARCH_TERMS))) > 1
    for search in (" ".join(["s1"] * (SEARCH_TERMS + 1)), "s" * (SEARCH_MAX + 1)):
        out = ch.offer(search, "v7", fixed=[{"label": "all", "value": "all"}])
        assert [o["value"] for o in out] == ["all", "v7", MORE]
        assert out[-1]["disabled"] and "search not run" in out[-1]["label"]


# ------------------------------------------------------------------ 2. no file through a link
def test_a_link_in_blobs_or_runs_serves_nothing(mem: Path, client, tmp_path: Path) -> None:
    from kgagent.view.logs import RunLogs
    from kgagent.view.source import read_inside

    secret = tmp_path / "secret.png"
    secret.write_bytes(SECRET)
    blob = hashlib.sha256(PNG).hexdigest()
    assert client.get(f"/blob/{blob}.png").data == PNG  # a real blob is served
    link = "ab" + "c" * 62  # a link to the secret, named as a blob
    (mem / "blobs" / "ab").mkdir(exist_ok=True)
    os.symlink(secret, mem / "blobs" / "ab" / f"{link}.png")
    folder = "cd" + "e" * 62  # a linked folder holding the secret under a blob's name
    (tmp_path / "cd").mkdir()
    (tmp_path / "cd" / f"{folder}.png").write_bytes(SECRET)
    os.symlink(tmp_path / "cd", mem / "blobs" / "cd")
    fifo = "ef" + "0" * 62  # a FIFO would block the open
    (mem / "blobs" / "ef").mkdir()
    os.mkfifo(mem / "blobs" / "ef" / f"{fifo}.png")
    for name in (link, folder, fifo):
        r = client.get(f"/blob/{name}.png")
        assert r.status_code == 404 and SECRET not in r.data, name
    assert read_inside(mem, "blobs", blob[:2], f"{blob}.png") == PNG

    # a step log that is a link, or a runs folder that is one, is no log of the memory
    outside = tmp_path / "20261128-110000-other.jsonl"
    outside.write_text((mem / "runs" / "20261128-100000-run.jsonl").read_text())
    os.symlink(outside, mem / "runs" / outside.name)
    try:
        assert [p.name for p in RunLogs(mem).paths()] == ["20261128-100000-run.jsonl"]
        other = tmp_path / "other"
        other.mkdir()
        os.symlink(mem / "runs", other / "runs")
        (other / "manifest.json").write_text("{}")
        assert RunLogs(other).paths() == []
    finally:
        (mem / "runs" / outside.name).unlink()


def test_a_log_swapped_for_a_link_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch
) -> None:
    """The view lists a log, checks it is a plain file, then reads it: a link put in its
    place between the two is refused by the read itself (one open, no link followed)."""
    from kgagent.runlog_read import read_log
    from kgagent.view import logs as view_logs
    from kgagent.view.logs import RunLogs

    runs = tmp_path / "mem" / "runs"
    runs.mkdir(parents=True)
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"type": "run", "secret": SECRET.decode()}) + "\n")
    os.symlink(outside, runs / "20261128-100000-run.jsonl")
    monkeypatch.setattr(view_logs, "_plain", lambda p, kind: True)  # the check came first
    log = RunLogs(tmp_path / "mem")._parse(0, runs / "20261128-100000-run.jsonl")
    assert log.header == {} and "symbolic link" in (log.error or "")
    assert read_log(outside, plain=True)[0]["secret"] == SECRET.decode()  # a file is read
    os.mkfifo(runs / "fifo.jsonl")  # and a FIFO neither blocks nor reads
    assert "not a regular file" in RunLogs(tmp_path / "mem")._parse(1, runs / "fifo.jsonl").error


# ------------------------------------------------------------------ 3. no traceback
BAD_INPUTS = [
    ("g-cy.elements", {"g-opts.value": 5}),
    ("g-cy.elements", {"g-cluster.value": ["x"]}),
    ("g-cy.elements", {"g-cluster.value": {"x": 1}}),
    ("g-cy.elements", {"g-run.value": {"x": 1}}),
    ("g-cy.elements", {"g-opts.value": [["sim"]], "g-hops.value": [2]}),
    ("g-cy.layout", {"g-layout.value": ["x"]}),
    ("g-detail.children", {"g-cy.tapEdgeData": {"src": ["a"], "source": ["a"], "target": 1}}),
    ("g-detail.children", {"g-cy.tapEdgeData": {"source": "s-1", "target": "s-2", "weight": "x"}}),
    ("g-detail.children", {"g-cy.tapEdgeData": {"source": "s-" + "1" * 5000, "target": "s"}}),
    ("g-detail.children", {"g-cy.tapEdgeData": {"source": "a", "target": "b", "skill": "k"}}),
    ("g-detail.children", {"g-cy.tapNodeData": {"id": ["x"]}}),
    ("g-focus.options", {"g-focus.search_value": {"a": 1}, "g-focus.value": [1]}),
    ("l-shown.children", {"l-skills.sort_by": "x", "l-skills.filter_query": 7}),
    ("l-shown.children", {"l-skills.page_current": [1], "l-skills.page_size": {"a": 1}}),
    ("v-caption.children", {"v-log.value": [1], "v-window.value": "x"}),
]


def test_a_hand_made_callback_is_answered_without_a_traceback(client, caplog) -> None:
    caplog.set_level(logging.ERROR)
    for output, values in BAD_INPUTS:
        body = _body(client, output, values)
        r = client.post("/_dash-update-component", json=body)
        assert r.status_code in (200, 204, 400), (output, values, r.status_code)
        assert b"Traceback" not in r.data and b'File "' not in r.data, (output, values)
    deep = "[" * 50_000 + "]" * 50_000
    bodies = [b"[1, 2, 3]", b'{"output": 1}', b"null", deep.encode(), b"{not json"]
    for raw in bodies * 3:
        r = client.post(
            "/_dash-update-component", data=raw, headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 400, raw[:20]
        assert b"Traceback" not in r.data
    text = caplog.text
    assert "Traceback" not in text
    lines = [x for x in caplog.records if x.levelno >= logging.ERROR]
    # one line per kind of failure, not one per request
    assert all("\n" not in x.getMessage() for x in lines)
    assert len({x.getMessage() for x in lines}) == len(lines) <= 5


def test_a_bug_in_a_callback_is_one_line_on_the_terminal_once(client, caplog, monkeypatch) -> None:
    from kgagent.view import page_graph

    def broken(*a, **k):
        raise ZeroDivisionError("a bug of the view")

    monkeypatch.setattr(page_graph, "select", broken)
    caplog.set_level(logging.ERROR)
    body = _body(client, "g-cy.elements", {"g-hops.value": 1})
    for _ in range(3):
        r = client.post("/_dash-update-component", json=body)
        assert r.status_code == 400 and b"Traceback" not in r.data
    (line,) = [x.getMessage() for x in caplog.records if "ZeroDivisionError" in x.getMessage()]
    assert "a bug of the view" in line and "test_hardening.py:" in line and "\n" not in line
    assert "Traceback" not in caplog.text


# ------------------------------------------------------------------ 4. and 5. headers
def test_responses_are_not_cached_or_framed(client) -> None:
    blob = hashlib.sha256(PNG).hexdigest()
    update = _body(client, "l-shown.children", {"l-skills.filter_query": ""})
    responses = {
        "/": client.get("/"),
        "/library": client.get("/library"),
        "/_dash-layout": client.get("/_dash-layout"),
        "update": client.post("/_dash-update-component", json=update),
        "skills.csv": client.get("/download/skills.csv"),
        "rounds.csv": client.get("/download/rounds.csv"),
        "frame": client.get("/frame/0/1.png"),
        "missing blob": client.get("/blob/" + "0" * 64 + ".png"),
        "blob": client.get(f"/blob/{blob}.png"),
    }
    for name, r in responses.items():
        assert r.status_code in (200, 404), name
        assert r.headers["X-Frame-Options"] == "DENY", name
        assert r.headers["Content-Security-Policy"] == "frame-ancestors 'none'", name
        assert r.headers["X-Content-Type-Options"] == "nosniff", name
        want = "private, max-age=86400, immutable" if name == "blob" else "no-store"
        assert r.headers["Cache-Control"] == want, name
