"""`kgagent view` in a real headless Chromium: every page renders what the memory holds.

Every page is screenshotted by the browser. The screenshots go to a temporary folder,
or, with ``KGAGENT_DOCS_SCREENSHOTS=1`` (``make docs-screenshots``), to docs/img/, which
docs/view.md shows. Skipped when Chromium or chromedriver is missing (see conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from command_lines import play_command

from kgagent.config import Config
from kgagent.memory import Memory

from .conftest import serve

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture(autouse=True)
def _shots(tmp_path_factory, monkeypatch):
    """Where _shot writes: docs/img when asked to refresh the docs, else a temporary folder."""
    if os.environ.get("KGAGENT_DOCS_SCREENSHOTS") != "1":
        monkeypatch.setattr(sys.modules[__name__], "DOCS_IMG", tmp_path_factory.mktemp("shots"))


WAIT_S = 30

#: The Cytoscape instance behind the graph page (Cytoscape.js registers it on its container).
CY = (
    "const el = [...document.querySelectorAll('#g-cy, #g-cy *')].find(e => e._cyreg && e._cyreg.cy);"
    " const cy = el._cyreg.cy;"
)


def _wait(driver, js: str, what: str, timeout: float = WAIT_S):
    """Poll ``js`` (an expression) in the page until it is truthy; its value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = driver.execute_script(f"return ({js});")
        except Exception:  # the page is still loading
            v = None
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _shot(driver, name: str, *, full: bool = False) -> None:
    """docs/img/view-NAME.png: the viewport, or with ``full`` the whole page's height."""
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    if full:
        w, h = driver.execute_script(
            "return [window.innerWidth, document.documentElement.scrollHeight]"
        )
        metrics = {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        time.sleep(0.8)  # let Plotly redraw at the new size
    try:
        driver.save_screenshot(str(DOCS_IMG / f"view-{name}.png"))
    finally:
        if full:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _text(driver, element_id: str) -> str:
    return driver.execute_script(
        f"const e = document.getElementById('{element_id}'); return e ? e.textContent : '';"
    )


@pytest.fixture(scope="module")
def site(played):
    s = serve(played)
    yield s
    s.stop()


def _stats(memory: Path):
    with Memory.open(memory, Config(), read_only=True) as m:
        return m.stats()


def test_graph_page_draws_every_state_and_clicking_one_shows_its_screenshot(site, browser, played):
    stats = _stats(played)
    browser.get(site.url + "/")
    n = _wait(browser, f"(() => {{ {CY} return cy.nodes().length; }})()", "the graph's nodes")
    assert n == stats.nodes
    drawn_edges = browser.execute_script(CY + " return cy.edges('.similar').length")
    assert drawn_edges == stats.similarity_edges
    # every skill edge is drawn (parallel ones merged into one arrow that lists its skills)
    skills = browser.execute_script(
        CY
        + " return cy.edges('.skill').map(e => (e.data('skills') || [1]).length).reduce((a, b) => a + b, 0)"
    )
    assert skills == stats.skill_edges
    # click the most visited state where it is drawn
    target = browser.execute_script(
        CY + " const n = cy.nodes().sort((a, b) => b.data('visits') - a.data('visits'))[0];"
        "const p = n.renderedPosition(); const r = cy.container().getBoundingClientRect();"
        "return [n.id(), p.x, p.y, r.width, r.height];"
    )
    sid, x, y, w, h = target
    from selenium.webdriver.common.action_chains import ActionChains

    container = browser.find_element("id", "g-cy")
    ActionChains(browser).move_to_element_with_offset(
        container, x - w / 2, y - h / 2
    ).click().perform()
    src = _wait(
        browser,
        "(() => { const i = document.getElementById('g-shot'); "
        "return i && i.complete && i.naturalWidth > 0 ? i.getAttribute('src') : null; })()",
        "the state's screenshot",
    )
    assert src.startswith(f"/state/{sid}.png")
    with urllib.request.urlopen(site.url + src) as r:
        shown = r.read()
    assert shown[:8] == b"\x89PNG\r\n\x1a\n"
    assert sid[:9] in _text(browser, "g-detail") or sid in _text(browser, "g-detail")
    assert "potential V_S" in _text(browser, "g-detail")
    time.sleep(0.5)
    _shot(browser, "graph")


def test_library_page_lists_every_skill_sortably(site, browser, played):
    with Memory.open(played, Config(), read_only=True) as m:
        names = {k.name for k in m.skills()}
    browser.get(site.url + "/library")
    _wait(browser, "document.querySelector('#l-skills td')", "the skills table")
    summary = _text(browser, "l-summary")
    assert summary.startswith(f"{len(names)} skills")
    first = _text(browser, "l-skills")
    assert any(n in first for n in names)
    # sorting by executions (click the heading's sort arrow) reorders the rows
    before = browser.execute_script(
        "return [...document.querySelectorAll('#l-skills td[data-dash-column=executions]')].map(e => e.textContent)"
    )
    browser.execute_script(
        "document.querySelector('#l-skills th[data-dash-column=executions] .column-header--sort').click()"
    )
    after = _wait(
        browser,
        "(() => { const v = [...document.querySelectorAll('#l-skills td[data-dash-column=executions]')]"
        ".map(e => Number(e.textContent)); return v.join() !== "
        + repr(",".join(before))
        + " ? v : null; })()",
        "the table to sort",
    )
    assert after == sorted(after) or after == sorted(after, reverse=True)
    _shot(browser, "library")


def test_rounds_page_shows_table2_per_round(site, browser, played):
    from kgagent.rounds import memory_rounds

    rounds = memory_rounds(played)
    browser.get(site.url + "/rounds")
    _wait(browser, "document.querySelectorAll('#r-table tbody tr').length > 1", "the rounds table")
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#r-table tbody tr')].slice(1).map("
        "tr => [...tr.querySelectorAll('td')].map(td => td.textContent))"
    )
    assert len(rows) == len(rounds) == 2
    # the table's skills-augmented column holds this round's count, not the memory's total
    heads = browser.execute_script(
        "return [...document.querySelectorAll('#r-table th')].map(th => th.getAttribute('data-dash-column'))"
    )
    col = heads.index("skills_augmented")
    assert [int(r[col]) for r in rows] == [r.skills_augmented for r in rounds]
    _wait(
        browser, "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 5", "the figures"
    )
    with urllib.request.urlopen(site.url + "/download/rounds.csv") as r:
        assert r.read().decode().splitlines()[0].startswith("round,log,")
    time.sleep(0.5)
    _shot(browser, "rounds", full=True)


@pytest.mark.skipif(
    (os.environ.get("KGAGENT_ENGINE") or "ladybug") == "kuzu",
    reason="Kùzu lets one process open a memory at a time: no reader beside a running agent",
)
def test_live_page_follows_a_running_play(site, browser, played, tmp_path):
    browser.get(site.url + "/live")
    _wait(browser, "document.getElementById('v-step')", "the live page")
    before = int(_text(browser, "v-step"))
    # the step line is read out politely: it lives in a status region the updates keep
    region = browser.execute_script(
        "const r = document.getElementById('v-status'); r.dataset.kept = '1';"
        "return [r.getAttribute('role'), r.getAttribute('aria-live'), r.contains("
        "document.getElementById('v-step'))];"
    )
    assert region == ["status", "polite", True]
    record = tmp_path / "rec"
    cmd = play_command(
        played, "--seed", "2", "--record", str(record), "--set", "brain.kind=offline", steps=80
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen: list[int] = []
        end = time.monotonic() + 120
        while time.monotonic() < end and proc.poll() is None:
            # one read of the page: the step and the status of the same render
            text, info = browser.execute_script(
                "const s = document.getElementById('v-step'), i = document.getElementById('v-status');"
                "return [s ? s.textContent : '', i ? i.textContent : ''];"
            )
            if text.isdigit() and "running" in info:
                if not seen:  # a reader's place stays put as the steps come in
                    place = browser.execute_script(
                        "document.getElementById('v-csv').focus(); window.scrollTo(0, 200);"
                        "return [document.activeElement.id, window.scrollY];"
                    )
                if not seen or int(text) != seen[-1]:
                    seen.append(int(text))
                if len(seen) >= 3:
                    break
            time.sleep(0.2)
        assert len(seen) >= 3, (
            f"the live page did not follow the run (saw steps {seen}, before {before})"
        )
        assert seen == sorted(seen)
        assert place[1] > 0  # scrolled: the focused control and the scroll are kept
        assert browser.execute_script("return [document.activeElement.id, window.scrollY]") == place
        assert browser.execute_script("return document.getElementById('v-status').dataset.kept")
        caption = _wait(
            browser,
            "(() => { const c = document.getElementById('v-caption'); "
            "return c && c.textContent.includes('recorded') ? c.textContent : null; })()",
            "the recorded screenshot",
        )
        assert "recorded screenshot" in caption
        _wait(browser, "document.getElementById('v-frame').naturalWidth > 0", "the live picture")
        time.sleep(1.0)
        _shot(browser, "live", full=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # as Ctrl-C: the step ends, the log gets its summary
        _, err = proc.communicate(timeout=180)
    assert proc.returncode == 128 + signal.SIGINT, err  # stopped cleanly by the Ctrl-C
