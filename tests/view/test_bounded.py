"""Every part of the view stays bounded whatever the memory's size.

A memory of 100,046 states put all of them into the graph page's "neighbourhood of"
dropdown (6.5 MB of options in one layout) and 20,000 skills into the library table (4.3
MB); headless Chromium never finished the page. Here a memory with more states, skills,
clusters and runs than the caps (built in seconds with the memory API) is served, and
the callbacks are called over HTTP as the browser calls them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.view.graphview import short_id
from kgagent.view.listing import OPTION_LIMIT, PAGE_SIZE, Choices, parse_filter, table_page

STATES, SKILLS, CLUSTERS, RUNS = 130, 60, 60, 60
ENC = EncoderSpec("test:v1", 64, (0.95, 0.88))


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """130 states (s1-s60 visited three times, the others once: s120 is not among the 50
    most visited), 60 skills (executions rising as fitness falls), 60 clusters and 60
    runs: more of each than a page or a dropdown holds."""
    path = tmp_path_factory.mktemp("bounded") / "mem"
    rng = np.random.default_rng(3)
    with Memory.open(path, Config(), encoder=ENC) as m:
        ids = []
        for i in range(STATES):
            x = rng.normal(size=64)  # random 64-d directions: cosines far below θ_simi
            hit = m.merge_or_create_state(x)
            for _ in range(2 if i < 60 else 0):  # the first 60 are visited three times
                m.merge_or_create_state(x)
            ids.append(hit.id)
        skills = []
        for i in range(SKILLS):
            k = m.add_skill(f"skill {i:02d}", "a probe", [Operation("key", key="enter")])
            k.fitness, k.executions = 1.0 - i / SKILLS, i  # the best skill is the least used
            m.update_skill(k)
            skills.append(k.id)
        for i in range(CLUSTERS):
            c = m.add_cluster(f"cluster {i:02d}", "a probe")
            m.add_to_cluster(skills[i % SKILLS], c.id)
        m.upsert_skill_edge(ids[119], ids[0], skills[0], 0.5, 1.0)
    runs = path / "runs"
    runs.mkdir()
    for i in range(RUNS):
        lines = [
            {
                "type": "run",
                "env": "cardgame",
                "seed": i,
                "started": f"2026-11-28T10:{i:02d}:00+00:00",
            },
            {"type": "step", "step": 1, "executions": []},
            {"type": "summary", "stopped": "done", "steps": 1},
        ]
        (runs / f"20261128-10{i:02d}00-run{i}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
    return path


@pytest.fixture(scope="module")
def client(big):
    from kgagent.view.app import create_app

    app = create_app(big, refresh_s=0.0)
    c = app.server.test_client()
    c.deps = c.get("/_dash-dependencies").get_json()
    return c


def _outputs(spec: str):
    if spec.startswith(".."):
        return [
            dict(zip(("id", "property"), x.rsplit(".", 1))) for x in spec.strip(".").split("...")
        ]
    i, p = spec.rsplit(".", 1)
    return {"id": i, "property": p}


def call(client, output: str, values: dict, changed: str | None = None):
    """Call the callback whose outputs include ``output`` (``id.prop``) as the browser
    does: {id: {prop: value}} of its outputs, or None when it updated nothing (204)."""
    (dep,) = [d for d in client.deps if output in d["output"].strip(".").split("...")]
    body = {
        "output": dep["output"],
        "outputs": _outputs(dep["output"]),
        "inputs": [dict(i, value=values.get(f"{i['id']}.{i['property']}")) for i in dep["inputs"]],
        "state": [dict(s, value=values.get(f"{s['id']}.{s['property']}")) for s in dep["state"]],
        "changedPropIds": [changed or next(iter(values))],
    }
    r = client.post("/_dash-update-component", json=body)
    if r.status_code == 204:
        return None
    assert r.status_code == 200, r.data[:500]
    return r.get_json()["response"]


def _props(tree) -> dict[str, dict]:
    """Every component with an id in a layout: id -> its props."""
    out: dict[str, dict] = {}

    def walk(x):
        if isinstance(x, dict):
            p = x.get("props")
            if isinstance(p, dict) and isinstance(p.get("id"), str):
                out[p["id"]] = p
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(tree)
    return out


def page(client, path: str) -> dict[str, dict]:
    return _props(call(client, "page.children", {"url.pathname": path}))


def _real(options) -> list[dict]:
    return [o for o in options if not o.get("disabled")]


def test_the_pages_hold_bounded_lists_and_say_how_many_of_how_many(client) -> None:
    graph = page(client, "/")
    focus = graph["g-focus"]["options"]
    assert len(_real(focus)) == OPTION_LIMIT < STATES
    assert (
        focus[-1]["disabled"]
        and f"showing {OPTION_LIMIT} of {STATES} states" in (focus[-1]["label"])
    )
    assert len(_real(graph["g-cluster"]["options"])) == 1 + OPTION_LIMIT  # "all clusters" too
    assert f"of {CLUSTERS} clusters" in graph["g-cluster"]["options"][-1]["label"]
    assert len(_real(graph["g-run"]["options"])) == 1 + OPTION_LIMIT
    assert len(_real(graph["g-skill"]["options"])) == OPTION_LIMIT < SKILLS
    assert f"of {SKILLS} skills" in graph["g-skill"]["options"][-1]["label"]
    assert len(_real(page(client, "/live")["v-log"]["options"])) == 1 + OPTION_LIMIT
    lib = page(client, "/library")
    assert len(lib["l-skills"]["data"]) == PAGE_SIZE < SKILLS
    assert lib["l-skills"]["page_count"] == 3 and lib["l-skills"]["page_action"] == "custom"
    assert lib["l-summary"]["children"].startswith(f"{SKILLS} skills ({SKILLS} active)")
    assert lib["l-shown"]["children"] == f"showing {PAGE_SIZE} of {SKILLS} skills (rows 1–25)"
    assert len(lib["l-clusters"]["data"]) == 15 < CLUSTERS
    assert lib["l-cshown"]["children"].startswith(f"showing 15 of {CLUSTERS} clusters")
    # the options callbacks that follow the memory stay bounded too
    sig = call(client, "g-focus.options", {"g-sig.data": "x"}, "g-sig.data")
    assert len(_real(sig["g-focus"]["options"])) == OPTION_LIMIT


def _state(memory: Path, number: int) -> str:
    with Memory.open(memory, Config(), read_only=True) as m:
        return next(
            r["id"] for r in m.run_named("view_states") if short_id(r["id"]) == f"s{number}"
        )


def test_searching_the_focus_dropdown_finds_a_state_beyond_the_first_options(client, big) -> None:
    first = {o["value"] for o in _real(page(client, "/")["g-focus"]["options"])}
    s120 = _state(big, 120)
    assert s120 not in first  # the first options are the most visited states
    found = call(client, "g-focus.options", {"g-focus.search_value": "s120"})["g-focus"]
    assert [o["value"] for o in found["options"]] == [s120]
    # s12 first, then the states whose short id begins with s12, within the bound
    found = call(client, "g-focus.options", {"g-focus.search_value": "s12"})["g-focus"]["options"]
    assert [o["label"].split()[0] for o in found[:3]] == ["s12", "s120", "s121"]
    assert len(found) <= OPTION_LIMIT
    # chosen (the search cleared): the options keep it, and the graph draws its neighbourhood
    kept = call(
        client,
        "g-focus.options",
        {"g-focus.search_value": None, "g-focus.value": s120},
        "g-focus.value",
    )["g-focus"]["options"]
    assert s120 in {o["value"] for o in kept} and len(_real(kept)) == OPTION_LIMIT + 1
    controls = {"g-run.value": "all", "g-cluster.value": "all", "g-opts.value": ["merge"]}
    drawn = call(client, "g-cy.elements", {"g-focus.value": s120, **controls}, "g-focus.value")
    nodes = [e["data"]["id"] for e in drawn["g-cy"]["elements"] if "source" not in e["data"]]
    assert s120 in nodes and len(nodes) == 2  # s120 and the state its skill edge leads to
    assert "neighbourhood of s120" in drawn["g-notes"]["children"]


def test_the_library_sorts_filters_and_pages_every_skill_on_the_server(client) -> None:
    def skills(**kw):
        values = {
            "l-skills.page_current": kw.get("page", 0),
            "l-skills.page_size": PAGE_SIZE,
            "l-skills.sort_by": kw.get("sort", [{"column_id": "fitness", "direction": "desc"}]),
            "l-skills.filter_query": kw.get("filter", ""),
        }
        return call(client, "l-skills.data", values, kw.get("changed", "l-skills.sort_by"))

    first = skills()
    assert [r["name"] for r in first["l-skills"]["data"]][:2] == ["skill 00", "skill 01"]
    # sorted by executions, most first: the most used skill is on the first page's top,
    # although it is on the last page by fitness (a sort of the whole library)
    by_use = skills(sort=[{"column_id": "executions", "direction": "desc"}])
    assert by_use["l-skills"]["data"][0]["name"] == f"skill {SKILLS - 1}"
    last = skills(page=2, changed="l-skills.page_current")
    assert len(last["l-skills"]["data"]) == SKILLS - 2 * PAGE_SIZE
    assert last["l-shown"]["children"] == f"showing 10 of {SKILLS} skills (rows 51–60)"
    # the filter row's language, over every skill
    few = skills(
        filter="{executions} >= 50 && {name} scontains skill", changed="l-skills.filter_query"
    )
    assert sorted(r["executions"] for r in few["l-skills"]["data"]) == list(range(50, 60))
    assert few["l-shown"]["children"] == "showing 10 of 10 skills that match the filter"
    assert few["l-skills"]["page_count"] == 1 and few["l-skills"]["page_current"] == 0
    # the CSV link carries the filter and the order, and downloads every row they keep
    href = few["l-skills-csv"]["href"]
    csv = client.get(href).data.decode().splitlines()
    assert csv[0].startswith("skill,status,fitness") and len(csv) == 11
    assert len(client.get("/download/skills.csv").data.decode().splitlines()) == SKILLS + 1


def test_choices_rank_whole_words_first_and_keep_the_chosen_one() -> None:
    c = Choices([{"label": f"s{i} ×1", "value": f"s-{i:07d}-x"} for i in range(1, 300)])
    got = c.offer("s12", limit=5)
    assert [o["label"] for o in got[:5]] == ["s12 ×1", "s120 ×1", "s121 ×1", "s122 ×1", "s123 ×1"]
    assert got[-1]["disabled"] and got[-1]["label"].startswith("showing 5 of ")
    assert got[-1]["search"] == "s12"  # so the browser's own filter keeps that line
    chosen = c.offer(None, "s-0000250-x", limit=3)
    assert [o["value"] for o in chosen[:4]] == [
        "s-0000001-x",
        "s-0000002-x",
        "s-0000003-x",
        "s-0000250-x",
    ]
    assert c.offer("nothing like it") == []


def test_the_filter_language_is_the_tables_own() -> None:
    rows = [
        {"name": "open menu", "status": "active", "fitness": 0.75, "created_step": None},
        {"name": "close", "status": "pruned", "fitness": -0.2, "created_step": 4},
        {"name": "Open door", "status": "suspended", "fitness": 0.5, "created_step": 9},
    ]

    def names(q, **kw):
        return [r["name"] for r in table_page(rows, filter_query=q, **kw).rows]

    assert names("{fitness} > 0.5") == ["open menu"]
    assert names("{fitness} s>= 0.5 && {status} scontains sus") == ["Open door"]
    assert names("{name} icontains open") == ["open menu", "Open door"]
    assert names("{name} scontains open") == ["open menu"]
    assert names('{name} = "open menu"') == ["open menu"]
    assert names("{fitness} = 0.5") == ["Open door"]
    assert names("{created_step} is blank") == ["open menu"]
    assert names("{status} ne pruned") == ["open menu", "Open door"]
    by = [{"column_id": "created_step", "direction": "desc"}]
    assert names("", sort_by=by) == ["Open door", "close", "open menu"]  # empty cells last
    clauses, ignored = parse_filter("{fitness} > 0.5 && nonsense")
    assert len(clauses) == 1 and ignored == ["nonsense"]
    assert "filter not understood, ignored: nonsense" in table_page(
        rows, filter_query="nonsense"
    ).note("skills")


def test_in_the_browser_a_state_found_by_typing_is_drawn_with_its_neighbourhood(big, browser):
    """Dash's dropdown clears a value that is not among its options: the state chosen by
    typing, or by "Show its neighbourhood", must stay chosen after the search is over."""
    from selenium.webdriver.common.by import By

    from .conftest import serve
    from .test_browser import CY, _text, _wait

    s120, s125 = _state(big, 120), _state(big, 125)
    site = serve(big)
    try:
        browser.get(site.url + "/")
        _wait(browser, f"(() => {{ {CY} return cy.nodes().length; }})()", "the graph")
        assert "showing" not in _text(browser, "g-notes")  # 130 states: all drawn
        browser.find_element(By.ID, "g-focus").click()
        box = _wait(browser, "document.querySelector('.dash-dropdown-search')", "the search box")
        shown = _wait(
            browser,
            "(() => { const o = [...document.querySelectorAll('.dash-dropdown-option')]"
            ".map(o => o.textContent.trim()); return o.length && o; })()",
            "the first options",
        )
        assert len(shown) == OPTION_LIMIT + 1  # the most visited, then how many of how many
        assert shown[-1] == f"showing {OPTION_LIMIT} of {STATES} states: type to find others"
        assert not any(o.startswith("s120 ") for o in shown)
        box.send_keys("s120")
        option = _wait(
            browser,
            "[...document.querySelectorAll('.dash-dropdown-option')]"
            ".find(o => o.textContent.trim().startsWith('s120 '))",
            "s120 among the options",
        )
        option.click()
        _wait(
            browser,
            "document.getElementById('g-notes').textContent.includes('neighbourhood of s120')",
            "the neighbourhood of s120",
        )
        n = _wait(browser, f"(() => {{ {CY} return cy.nodes().length == 2 && 2; }})()", "2 nodes")
        assert n == 2
        assert browser.execute_script(CY + " return cy.nodes('.focus').map(n => n.id())") == [s120]
        time.sleep(1.0)  # the options that follow the choice have come back: still chosen
        assert _text(browser, "g-focus").strip().startswith("s120 ")
        assert "neighbourhood of s120" in _text(browser, "g-notes")
        # "Show its neighbourhood" of a state that the options do not hold
        browser.execute_script(
            "document.querySelector('#g-focus').parentElement.querySelector('.dash-dropdown-clear').click()"
        )
        _wait(browser, f"(() => {{ {CY} return cy.nodes().length == {STATES}; }})()", "all")
        browser.execute_script(CY + f" cy.getElementById('{s125}').emit('tap');")
        # s120's panel (shown when it was chosen) is there until s125's comes
        _wait(
            browser,
            "document.getElementById('g-detail-title').textContent === 'State s125'",
            "the state panel of s125",
        )
        browser.find_element(By.ID, "g-focus-here").click()
        _wait(
            browser,
            "document.getElementById('g-notes').textContent.includes('neighbourhood of s125')",
            "the neighbourhood of s125",
        )
        time.sleep(1.0)
        assert _text(browser, "g-focus").strip().startswith("s125 ")
        assert "neighbourhood of s125" in _text(browser, "g-notes")
    finally:
        site.stop()


def test_in_the_browser_the_library_pages_and_sorts_on_the_server(big, browser):
    from .conftest import serve
    from .test_browser import _text, _wait

    site = serve(big)
    try:
        browser.get(site.url + "/library")
        _wait(browser, "document.querySelector('#l-skills td')", "the skills table")
        assert _text(browser, "l-shown") == f"showing {PAGE_SIZE} of {SKILLS} skills (rows 1–25)"
        rows = browser.execute_script(
            "return document.querySelectorAll('#l-skills tbody tr').length"
        )
        assert rows <= PAGE_SIZE + 2  # the header and filter rows, then one page
        # the heading's arrow cycles the order: one of its states puts the most used skill
        # (the last of the library by fitness, not on this page) first
        first = []
        for _ in range(3):
            browser.execute_script(
                "document.querySelector('#l-skills th[data-dash-column=executions]"
                " .column-header--sort').click()"
            )
            time.sleep(2.0)
            first.append(
                browser.execute_script(
                    "return document.querySelector('#l-skills td[data-dash-column=name]').textContent"
                )
            )
            if first[-1] == f"skill {SKILLS - 1}":
                break
        assert first[-1] == f"skill {SKILLS - 1}", first
        browser.find_element("css selector", "#l-skills .next-page").click()
        _wait(
            browser,
            "document.getElementById('l-shown').textContent.includes('rows 26–50')",
            "page 2",
        )
    finally:
        site.stop()


def test_a_drawing_and_a_state_panel_hold_at_most_their_bounds() -> None:
    """Skill edges among the drawn states are bounded as similarity edges are (the
    strongest kept), and a state's panel lists at most PANEL_ROWS of each kind."""
    from kgagent.view.details import PANEL_ROWS, state_panel
    from kgagent.view.graphview import Filters, select
    from kgagent.view.source import Snapshot

    ids = [f"s-{i:07d}-x" for i in range(1, 201)]
    states = {s: {"id": s, "visits": 1, "thumbnail": ""} for s in ids}
    edges = [
        {"src": ids[0], "dst": s, "skill": "k", "weight": i / 200, "change": 0.0, "count": 1}
        for i, s in enumerate(ids[1:], 1)
    ]
    snap = Snapshot((), 0.0, {}, states, edges, [], {"k": {"name": "k"}}, {}, {}, 0.8)
    v = select(snap, Filters(skill_limit=20, merge_parallel=False))
    assert v.skill_edges == 20 and "showing 20 of 199 skill edges (the strongest)" in v.notes
    drawn = sorted(e["data"]["weight"] for e in v.elements if "source" in e["data"])
    assert drawn[0] == 180 / 200  # the 20 strongest
    detail = {
        "id": ids[0],
        "out_edges": [dict(e, r_total=0.0) for e in edges],
        "similar": [(s, 0.9) for s in ids[1:]],
        "objects": [
            {"id": f"o{i}", "name": "", "bbox": [0, 0, 1, 1], "crop": ""} for i in range(80)
        ],
    }
    panel = str(state_panel(detail, snap, None))
    assert f"showing {PANEL_ROWS} of 199 (the strongest)" in panel
    assert f"showing {PANEL_ROWS} of 199 (the most similar)" in panel
    assert f"showing {PANEL_ROWS} of 80 (the first)" in panel
