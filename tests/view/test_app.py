"""The view without a browser: what it reads, what it serves, what it refuses."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from command_lines import play_command
from PIL import Image

from kgagent.config import Config
from kgagent.errors import ConfigError
from kgagent.memory import Memory
from kgagent.view.frames import actions_of, compose, extent
from kgagent.view.graphview import Filters, select, short_id
from kgagent.view.source import MemorySource, Snapshot, is_blob_id


def _snap() -> Snapshot:
    states = {
        f"s-000000{i}-x": {"id": f"s-000000{i}-x", "visits": 10 - i, "thumbnail": ""}
        for i in range(1, 7)
    }

    def e(a, b, k, w):
        return {
            "src": f"s-000000{a}-x",
            "dst": f"s-000000{b}-x",
            "skill": k,
            "weight": w,
            "change": 0.1,
            "count": 1,
            "r_total": 1.0,
        }

    skill_edges = [
        e(1, 2, "k1", 0.9),
        e(1, 2, "k2", 0.4),
        e(2, 3, "k1", 0.7),
        e(3, 4, "k3", 0.2),
        e(5, 5, "k2", 0.6),
    ]
    similar = [{"src": "s-0000004-x", "dst": "s-0000006-x", "weight": 0.9}]
    skills = {k: {"name": f"skill {k}"} for k in ("k1", "k2", "k3")}
    clusters = {
        "c1": {"id": "c1", "name": "one", "skills": ["k3"], "selections": 0, "description": ""}
    }
    return Snapshot(
        (), 0.0, {}, states, skill_edges, similar, skills, clusters, {"k3": ["c1"]}, 0.8
    )


def test_select_filters_neighbourhood_cap_and_merging() -> None:
    snap = _snap()
    v = select(snap, Filters())
    assert v.states == 6 and v.skill_edges == 5 and v.similar_edges == 1
    arrows = [el for el in v.elements if "skill" in el.get("classes", "")]
    assert len(arrows) == 4  # k1 and k2 on s1 -> s2 share one arrow
    merged = next(
        el for el in v.elements if el["data"].get("skills") and len(el["data"]["skills"]) == 2
    )
    assert merged["data"]["skills"] == ["k1", "k2"] and merged["data"]["weight"] == 0.9
    assert "(+1)" in merged["data"]["label"]
    assert select(snap, Filters(min_weight=0.5)).skill_edges == 3
    assert select(snap, Filters(similarity=False)).similar_edges == 0
    c = select(snap, Filters(cluster_skills={"k3"}))
    assert c.states == 2 and c.skill_edges == 1
    n = select(snap, Filters(focus="s-0000001-x", hops=1))
    assert {el["data"]["id"] for el in n.elements if "source" not in el["data"]} == {
        "s-0000001-x",
        "s-0000002-x",
    }
    assert select(snap, Filters(focus="s-0000001-x", hops=3)).states == 4
    capped = select(snap, Filters(cap=2))
    assert capped.states == 2 and "showing 2 of 6 states" in capped.notes[0]
    ids = {el["data"]["id"] for el in capped.elements if "source" not in el["data"]}
    assert ids == {"s-0000001-x", "s-0000002-x"}  # the most visited
    run = select(
        snap,
        Filters(
            run_edges={("s-0000002-x", "s-0000003-x", "k1")},
            run_states={"s-0000002-x", "s-0000003-x"},
        ),
    )
    assert run.states == 2 and run.skill_edges == 1
    assert select(snap, Filters(hide_isolated=True, similarity=False)).states == 5
    assert short_id("s-0000012-ab12") == "s12"


def test_a_near_clique_of_similarity_edges_is_thinned_to_each_states_strongest() -> None:
    """Screens that all look alike link every state to every other; beyond the limit the
    page draws each state's strongest links (all states stay), and the chosen state's."""
    ids = [f"s-{i:07d}-x" for i in range(1, 41)]
    states = {s: {"id": s, "visits": 1, "thumbnail": ""} for s in ids}
    rng = np.random.default_rng(0)
    similar = [
        {"src": a, "dst": b, "weight": float(rng.uniform(0.7, 0.98))}
        for i, a in enumerate(ids)
        for b in ids[i + 1 :]
    ]
    snap = Snapshot((), 0.0, {}, states, [], similar, {}, {}, {}, 0.7)
    full = select(snap, Filters(similar_limit=len(similar)))
    assert full.similar_edges == 780 and not full.notes
    thin = select(snap, Filters(similar_limit=100, similar_per_state=2))
    assert thin.states == 40 and thin.similar_edges <= 80
    assert "of 780 similarity edges (each state's 2 strongest)" in thin.notes[0]
    drawn = {
        (e["data"]["source"], e["data"]["target"]) for e in thin.elements if "source" in e["data"]
    }
    for s in ids:  # every state keeps its two strongest links
        mine = sorted((e for e in similar if s in (e["src"], e["dst"])), key=lambda e: -e["weight"])
        assert {(e["src"], e["dst"]) for e in mine[:2]} <= drawn
    focus = select(snap, Filters(similar_limit=100, similar_per_state=1, focus=ids[5]))
    assert focus.states == 40  # all within one similarity hop
    mine = {(e["src"], e["dst"]) for e in similar if ids[5] in (e["src"], e["dst"])}
    drawn = {
        (e["data"]["source"], e["data"]["target"]) for e in focus.elements if "source" in e["data"]
    }
    assert mine <= drawn and "and s6's strongest" in focus.notes[-1]


def test_blob_ids_are_only_hex_sha256() -> None:
    assert is_blob_id("a" * 64)
    for bad in ("A" * 64, "a" * 63, "../" + "a" * 61, "a" * 63 + "/", "", "g" * 64):
        assert not is_blob_id(bad)


def test_frame_draws_actions_at_scaled_positions() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (64, 36), (255, 255, 255)).save(buf, "PNG")
    step = {"executions": [{"grounding": [{"action": {"kind": "click", "x": 640, "y": 360}}]}]}
    acts = actions_of(step)
    assert acts == [{"kind": "click", "x": 640, "y": 360}]
    out = Image.open(io.BytesIO(compose(buf.getvalue(), acts, (1280, 720), width=640)))
    assert out.size == (640, 360)
    assert out.getpixel((320, 180))[1] < 100  # the red mark sits at the scaled centre
    assert out.getpixel((20, 20)) == (255, 255, 255)
    assert extent([{"kind": "drag", "x": 5, "y": 6, "x2": 99, "y2": 7}], [[0, 0, 10, 50]]) == (
        100,
        50,
    )


@pytest.fixture(scope="module")
def client(played):
    from kgagent.view.app import create_app

    app = create_app(played, refresh_s=0.0)
    return app.server.test_client()


def test_routes_serve_memory_files_only(client, played: Path) -> None:
    with Memory.open(played, Config(), read_only=True) as m:
        thumb = m.run_named("view_states")[0]["thumbnail"]
        sid = m.run_named("view_states")[0]["id"]
    r = client.get(f"/blob/{thumb}.png")
    assert r.status_code == 200 and hashlib.sha256(r.data).hexdigest() == thumb
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    for bad in (
        "/blob/..%2Fmanifest.png",
        "/blob/" + "A" * 64 + ".png",
        "/blob/%2e%2e.png",
        "/state/nope.png",
        "/state/..%2F..%2Fetc%2Fpasswd.png",
        "/frame/99/1.png",
        "/download/..%2Fmanifest.csv",
        "/download/passwd.csv",
        "/manifest.json",
        "/runs/",
    ):
        r = client.get(bad)
        # 404, or the app's own page (Dash answers unknown paths with it): never a file
        assert r.status_code == 404 or (r.mimetype == "text/html" and b"_dash-config" in r.data), (
            bad
        )
        assert b"kgagent-memory" not in r.data and b"root:" not in r.data, bad
    r = client.get(f"/state/{sid}.png")
    assert r.status_code == 200 and r.data[:4] == b"\x89PNG"
    r = client.get("/frame/0/3.png")
    assert r.status_code == 200 and Image.open(io.BytesIO(r.data)).width == 960
    csv = client.get("/download/rounds.csv").data.decode()
    from kgagent.rounds import memory_rounds, rounds_csv

    assert csv == rounds_csv(memory_rounds(played))
    for name in ("library", "graph", "outcome", "curves", "growth", "live-0"):
        r = client.get(f"/download/{name}.csv")
        assert r.status_code == 200 and r.data.count(b"\n") >= 2, name


def test_source_reads_read_only_and_follows_writes(played: Path, tmp_path: Path) -> None:
    import shutil

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)
    before = (mem / "manifest.json").read_bytes()
    src = MemorySource(mem, refresh_s=0.0, read_share=0.0)
    snap = src.snapshot()
    with Memory.open(mem, Config(), read_only=True) as m:
        stats = m.stats()
    assert len(snap.states) == stats.nodes and len(snap.skill_edges) == stats.skill_edges
    assert len(snap.similar_edges) == stats.similarity_edges
    sid = next(iter(snap.states))
    d = src.state_detail(sid)
    assert d["id"] == sid and "potential" in d and isinstance(d["hq"], list)
    assert src.state_detail("s-nope") is None
    assert (mem / "manifest.json").read_bytes() == before  # a reader writes nothing
    # a write by an agent shows on the next snapshot
    with Memory.open(mem, Config()) as m:
        from kgagent.actions import Operation

        m.add_skill("probe", "added after the view's first read", [Operation("key", key="enter")])
    assert len(src.snapshot().skills) == len(snap.skills) + 1


def test_a_snapshot_that_took_long_to_read_is_kept_longer(played: Path, tmp_path: Path) -> None:
    """Beside a writing run, a memory that takes long to read is reread at most a fifth of
    the time (read_share 4): a write shows once four read-times have passed, or on force."""
    import shutil

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)
    src = MemorySource(mem, refresh_s=0.0)
    snap = src.snapshot()
    src._read_s = 3600.0  # as if the read had taken an hour
    with Memory.open(mem, Config()) as m:
        from kgagent.actions import Operation

        m.add_skill("probe", "added after the view's read", [Operation("key", key="enter")])
    assert src.snapshot() is snap  # kept: four read-times have not passed
    fresh = src.snapshot(force=True)
    assert len(fresh.skills) == len(snap.skills) + 1
    src._read_s = 3600.0
    src._snap.taken -= 4 * 3600.0 + 1  # ... and now they have
    with Memory.open(mem, Config()) as m:
        m.add_skill("probe 2", "added later", [Operation("key", key="tab")])
    assert len(src.snapshot().skills) == len(snap.skills) + 2


def test_create_app_refuses_a_folder_that_is_no_memory(tmp_path: Path) -> None:
    from kgagent.view.app import create_app

    with pytest.raises(ConfigError, match="no kgagent memory"):
        create_app(tmp_path)


def test_view_command_binds_loopback_by_default() -> None:
    from kgagent.cli.view_cmd import view_cmd

    opts = {p.name: p for p in view_cmd.params}
    assert opts["host"].default == "127.0.0.1" and opts["port"].default == 8050


def test_the_view_binds_before_it_says_it_serves(played: Path) -> None:
    from kgagent.view.app import create_app, listen

    app = create_app(played, refresh_s=0.2)
    server = listen(app, "127.0.0.1", 0)  # 0: a free port, and the server says which
    try:
        port = server.port
        assert port != 0
        with pytest.raises(ConfigError, match="another program uses it: pick another --port"):
            listen(app, "127.0.0.1", port)
    finally:
        server.server_close()
    with pytest.raises(ConfigError, match="--host is empty"):
        listen(app, " ", 0)
    with pytest.raises(ConfigError, match="cannot serve on 'no-such-host.invalid'"):
        listen(app, "no-such-host.invalid", 0)


def test_view_queries_only_read() -> None:
    from kgagent.memory import queries

    mine = [q for q in queries.load_all().values() if q.source == "view.cypher"]
    assert len(mine) >= 5 and not [q.name for q in mine if q.writes]


@pytest.mark.skipif(
    (__import__("os").environ.get("KGAGENT_ENGINE") or "ladybug") == "kuzu",
    reason="Kùzu lets one process open a memory at a time: no reader beside a running agent",
)
def test_snapshots_follow_a_play_in_another_process(played: Path, tmp_path: Path) -> None:
    import shutil
    import subprocess
    import time

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)
    src = MemorySource(mem, refresh_s=0.0)
    first = src.snapshot()
    cmd = play_command(mem, "--seed", "3", "--set", "brain.kind=offline", steps=25)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        while proc.poll() is None:
            snap = src.snapshot()
            seen.append(sum(int(k["executions"]) for k in snap.skills.values()))
            time.sleep(0.3)
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    # a snapshot may be kept for read_share read-times (the view's bounded staleness), so
    # the one asked right after the run may predate its last write: read afresh to compare
    last = src.snapshot(force=True)
    assert last.error is None
    executions = sum(int(k["executions"]) for k in last.skills.values())
    assert executions > sum(int(k["executions"]) for k in first.skills.values())
    # read while the agent wrote: the view saw the library's use grow step by step
    assert len(set(seen)) >= 3 and seen == sorted(seen)
    with Memory.open(mem, Config(), read_only=True) as m:
        assert len(last.states) == m.stats().nodes


def test_a_hand_made_callback_value_updates_nothing() -> None:
    from dash.exceptions import PreventUpdate

    from kgagent.view.pages import request_value

    assert request_value(int, None, 1) == 1 and request_value(int, "", 1) == 1
    assert request_value(int, "3", 1) == 3 and request_value(float, 0.5, 0.0) == 0.5
    for bad in ("../../etc", "abc", [1], {"id": 1}, float("inf")):
        with pytest.raises(PreventUpdate):
            request_value(int, bad, 1)


def test_state_thumbnails_are_shown_whole() -> None:
    """A tall window's thumbnail in a wide node: "cover" cut it to its middle rows (the
    display of a calculator, which tells its states apart, was cut off)."""
    from kgagent.view.graphview import stylesheet

    (node,) = [s for s in stylesheet(labels=True) if s["selector"] == "node"]
    assert node["style"]["background-fit"] == "contain"


def test_the_view_refuses_a_memory_of_the_other_engine(played: Path) -> None:
    """Every page would say "0 states" for ever: one line at start, naming what to set."""
    import os
    import subprocess
    import sys

    other = "kuzu" if (os.environ.get("KGAGENT_ENGINE") or "ladybug") != "kuzu" else "ladybug"
    p = subprocess.run(
        [sys.executable, "-m", "kgagent.cli.main", "view", "--memory", str(played)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KGAGENT_ENGINE": other},
    )
    assert p.returncode == 1, p.stderr
    (line,) = [x for x in p.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: cannot read the memory at ") and f"not {other}" in line


def test_a_memory_held_by_a_writer_costs_one_quick_try_per_refresh(
    played: Path, tmp_path: Path, monkeypatch
) -> None:
    """Kùzu lets no reader in while `kgagent play` writes: each page callback asked again,
    with the retries' waits (1.5 s), and the live page never caught up. Now one try, with
    no wait before or after it, then the older snapshot until the refresh."""
    import os
    import shutil
    import time
    from types import SimpleNamespace

    from kgagent.errors import MemoryStoreError

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)
    src = MemorySource(mem, refresh_s=0.5, read_share=0.0)
    first = src.snapshot()
    tries = []

    def held(*a, **k):
        tries.append(1)
        raise MemoryStoreError("the memory is in use by another process (could not set lock)")

    monkeypatch.setattr(Memory, "open", held)
    os.utime(mem / "manifest.json")  # a write by the agent: the signature changes
    time.sleep(0.6)
    waits: list[float] = []  # the retries' waits the source would sleep
    clock = SimpleNamespace(monotonic=time.monotonic, sleep=waits.append)
    monkeypatch.setattr("kgagent.view.source.time", clock)
    snap = src.snapshot()
    assert len(tries) == 1 and waits == []  # quick: one open, no retry wait
    assert snap.error and snap.states == first.states  # the older snapshot, said to be
    for _ in range(5):
        src.snapshot()
    assert len(tries) == 1 and waits == []  # not asked again before the refresh


def test_a_failed_read_is_asked_again_after_the_refresh_not_after_four_read_times(
    played: Path, tmp_path: Path, monkeypatch
) -> None:
    """A read that met a writer's checkpoint cost one refused open: the next snapshot after
    ``refresh_s`` reads again, although a good read of this memory took long (read_share
    keeps those for four read-times). The view beside a run that just ended showed the
    checkpoint's error for seconds after it was over."""
    import os
    import shutil

    from kgagent.errors import MemoryStoreError

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)
    src = MemorySource(mem, refresh_s=0.0)
    first = src.snapshot()
    src._read_s = 3600.0  # as if the read had taken an hour
    first.taken -= 4 * 3600.0 + 1  # ... and four hours have passed
    opened = Memory.open

    def checkpointing(*a, **k):
        raise MemoryStoreError(
            "Cannot open database in read-only mode while checkpoint recovery is pending"
        )

    monkeypatch.setattr(Memory, "open", checkpointing)
    os.utime(mem / "manifest.json", ns=(1, 1))  # a write by the agent: the signature changes
    assert "checkpoint" in (src.snapshot().error or "")
    monkeypatch.setattr(Memory, "open", opened)
    again = src.snapshot()
    assert again.error is None and again is not first and len(again.states) == len(first.states)


def test_a_table_download_from_a_memory_it_cannot_read_says_so(
    played: Path, tmp_path: Path, monkeypatch
) -> None:
    """A Kùzu memory a `play` holds: the skills CSV was a header alone, 200, which reads as
    an empty library. It is a 503 that says why, and the rounds (from the logs) still come."""
    import shutil

    from kgagent.errors import MemoryStoreError
    from kgagent.view.app import create_app

    mem = tmp_path / "copy"
    shutil.copytree(played, mem)

    def held(*a, **k):
        raise MemoryStoreError("the memory is in use by another process (pid 7) that writes it")

    monkeypatch.setattr(Memory, "open", held)
    client = create_app(mem, refresh_s=0.0).server.test_client()  # started during the play
    for name in ("skills", "clusters"):
        r = client.get(f"/download/{name}.csv")
        assert r.status_code == 503
        assert "cannot be read now" in r.data.decode() and "pid 7" in r.data.decode()
    assert client.get("/download/rounds.csv").status_code == 200


def test_times_carry_their_offset(monkeypatch) -> None:
    """A skill's "created" in the library (and its CSV) and a state's first and last seen
    were local times without a zone, unlike `memory info` and `runs list`."""
    import time
    from datetime import datetime

    from kgagent.view.details import when

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        shown = when(1_700_000_000)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert shown == "2023-11-15 03:43:20+05:30"
    assert datetime.fromisoformat(shown).timestamp() == 1_700_000_000
    assert when(None) == when("x") == "-"
