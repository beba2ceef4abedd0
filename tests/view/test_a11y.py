"""The view for keyboard and screen-reader users (WCAG 2.1 AA).

Without a browser: what the pages' markup and callbacks carry (the language, a main
landmark and a heading, a polite status line on the live page, text colours that reach
4.5:1, a message for a number "draw at most" refuses, a state's or a skill's panel opened
from a dropdown). In headless Chromium (skipped without it): Tab leaves the library's
tables and their sort arrows are buttons, a filter the table cannot read is said in words,
every control has a name, every page a title, and a state's and a skill's details open
from the keyboard.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.view import a11y
from kgagent.view.figures import PATH_COLOURS

from .test_bounded import call, page


@pytest.fixture(scope="module")
def client(played: Path):
    from kgagent.view.app import create_app

    app = create_app(played, refresh_s=0.0)
    c = app.server.test_client()
    c.deps = c.get("/_dash-dependencies").get_json()
    return c


def _walk(tree):
    """Every component in a layout (dicts with a type and props)."""
    if isinstance(tree, dict):
        if "type" in tree and isinstance(tree.get("props"), dict):
            yield tree
        for v in tree.values():
            yield from _walk(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _walk(v)


def _text(tree) -> str:
    return json.dumps(tree, ensure_ascii=False)


# ------------------------------------------------------------------ without a browser
def test_the_shell_says_its_language_and_holds_a_main_landmark_and_a_heading(client) -> None:
    html = client.get("/").get_data(as_text=True)
    assert '<html lang="en">' in html
    layout = client.get("/_dash-layout").get_json()
    kinds = [c["type"] for c in _walk(layout)]
    assert kinds.count("Main") == 1 and kinds.count("Header") == 1
    h1 = [c for c in _walk(layout) if c["type"] == "H1"]
    assert [c["props"]["id"] for c in h1] == ["page-title"]


def test_text_on_badges_and_marks_reaches_4_5_to_1() -> None:
    from kgagent.view.page_live import INVALID, VALID, _badge

    assert a11y.contrast("#ffffff", "#000000") == pytest.approx(21.0)
    for path in PATH_COLOURS:
        style = _badge(path).style
        assert a11y.contrast(style["color"], style["background"]) >= 4.5, path
    # the tester's failures: white on the cluster and augment colours
    assert a11y.contrast("#ffffff", PATH_COLOURS["cluster"]) < 4.5
    assert _badge("cluster").style["color"] != "#ffffff"
    for mark in (VALID, INVALID):
        assert a11y.contrast(mark, "#ffffff") >= 4.5


def test_draw_at_most_says_in_words_why_a_number_is_not_taken(client) -> None:
    controls = {"g-run.value": "all", "g-cluster.value": "all", "g-opts.value": ["merge"]}

    def drawn(cap):
        got = call(client, "g-cap-error.children", {"g-cap.value": cap, **controls}, "g-cap.value")
        states = [e for e in got["g-cy"]["elements"] if "source" not in e["data"]]
        return got["g-cap-error"]["children"], len(states)

    message, n = drawn(-5)
    assert message.startswith("“-5” is not a whole number from 1 to 20,000") and n > 1
    assert "is not a whole number" in drawn(2.5)[0]
    assert "is not a whole number" in drawn(10**9)[0]
    assert drawn(1) == ("", 1)
    assert drawn(None)[0] == ""


def _most_visited(played: Path) -> tuple[str, str]:
    with Memory.open(played, Config(), read_only=True) as m:
        states = list(m.run_named("view_states"))
        # the first options of "neighbourhood of" and "details of skill"
        best = min(states, key=lambda r: (-int(r.get("visits") or 0), r["id"]))
        skill = min(m.skills(), key=lambda k: (-k.fitness, k.id))
    return best["id"], skill.name


def test_a_state_or_a_skill_chosen_from_a_dropdown_shows_its_panel(client, played) -> None:
    from kgagent.view.graphview import short_id

    sid, _ = _most_visited(played)
    got = call(client, "g-detail.children", {"g-focus.value": sid}, "g-focus.value")
    assert f"State {short_id(sid)}" in _text(got["g-detail"]) and got["g-selected"]["data"] == sid
    # "Show its neighbourhood" chooses the state its panel shows: the panel stays as it is
    same = {"g-focus.value": sid, "g-selected.data": sid}
    assert call(client, "g-detail.children", same, "g-focus.value") is None
    graph = page(client, "/")
    first = next(o for o in graph["g-skill"]["options"] if not o.get("disabled"))
    got = call(client, "g-detail.children", {"g-skill.value": first["value"]}, "g-skill.value")
    title = next(c for c in _walk(got["g-detail"]) if c["props"].get("id") == "g-detail-title")
    assert title["props"]["children"] == first["label"].rsplit(" (φ", 1)[0]
    assert "fitness φ" in _text(got["g-detail"])


def test_the_live_step_line_is_a_polite_status_region(client) -> None:
    live = page(client, "/live")
    status = live["v-status"]
    assert status["role"] == "status" and status["aria-live"] == "polite"
    got = call(client, "v-status.children", {"v-log.value": "follow", "v-window.value": 200})
    line = _text(got["v-status"]["children"])
    assert '"step "' in line and "of run R" in line
    assert "of run R" not in _text(got["v-info"]["children"])  # said once, in the region


def test_every_labelled_control_names_its_control(client) -> None:
    """Each visible label on the graph and live pages is a <label for=…> with an id: the
    browser (or kgagent.view.a11y's script, for what Dash draws) ties them."""
    for path, controls in (
        (
            "/",
            ("g-run", "g-cluster", "g-weight", "g-opts", "g-focus", "g-hops", "g-cap", "g-skill"),
        ),
        ("/live", ("v-log", "v-window")),
    ):
        labels = {
            c["props"].get("htmlFor"): c["props"].get("id")
            for c in _walk(call(client, "page.children", {"url.pathname": path}))
            if c["type"] == "Label"
        }
        for control in controls:
            assert labels.get(control) == f"{control}-label", (path, control)


# ------------------------------------------------------------------ in a browser
@pytest.fixture(scope="module")
def site(played):
    from .conftest import serve

    s = serve(played)
    yield s
    s.stop()


def _active(driver) -> dict:
    return driver.execute_script(
        "const e = document.activeElement;"
        "return {tag: e.tagName, id: e.id, inSkills: !!e.closest('#l-skills'),"
        " label: e.getAttribute('aria-label') || ''};"
    )


def _keys(driver, *keys, shift: bool = False) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    chain = ActionChains(driver)
    if shift:
        chain.key_down(Keys.SHIFT)
    for k in keys:
        chain.send_keys(k)
    if shift:
        chain.key_up(Keys.SHIFT)
    chain.perform()
    time.sleep(0.1)


def test_in_the_browser_tab_leaves_the_library_table_and_sorting_needs_no_mouse(
    site, browser
) -> None:
    from selenium.webdriver.common.keys import Keys

    from .test_browser import _wait

    browser.get(site.url + "/library")
    _wait(browser, "document.querySelector('#l-skills td')", "the skills table")
    _wait(browser, "document.querySelector('#l-skills .column-header--sort[tabindex]')", "mended")
    browser.execute_script("document.querySelector('#l-skills th.dash-filter input').focus()")
    assert _active(browser)["label"] == "filter skill"
    seen = []
    for _ in range(40):  # a filter box and its "Aa" button per column, then out
        _keys(browser, Keys.TAB)
        seen.append(_active(browser))
        if not seen[-1]["inSkills"]:
            break
    assert not seen[-1]["inSkills"], f"Tab stayed in the table: {seen[-3:]}"
    assert seen[-2]["label"] == "match case in the filter of id"  # the table's last control
    _keys(browser, Keys.TAB, shift=True)
    assert _active(browser)["inSkills"]  # and Shift+Tab goes back in
    # a sort arrow is a button: Enter sorts, and the heading says how
    heading = "#l-skills th[data-dash-column=executions]"
    assert browser.execute_script(f"return document.querySelector('{heading}').ariaSort") == "none"
    fitness = "#l-skills th[data-dash-column=fitness]"
    assert browser.execute_script(f"return document.querySelector('{fitness}').ariaSort") == (
        "descending"
    )
    browser.execute_script(f"document.querySelector('{heading} .column-header--sort').focus()")
    assert _active(browser)["label"] == "sort by executions n"
    _keys(browser, Keys.ENTER)
    _wait(
        browser,
        f"document.querySelector('{heading}').getAttribute('aria-sort') === 'ascending'",
        "the table sorted by executions",
    )
    runs = browser.execute_script(
        "return [...document.querySelectorAll('#l-skills td[data-dash-column=executions]')]"
        ".map(e => Number(e.textContent))"
    )
    assert runs == sorted(runs)


def _rgb(css: str) -> str:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def test_in_the_browser_a_filter_the_table_cannot_read_is_said_in_words(site, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from .test_browser import _text, _wait

    browser.get(site.url + "/library")
    _wait(browser, "document.querySelector('#l-skills td')", "the skills table")
    cell = "#l-skills th.dash-filter[data-dash-column=name]"
    box = browser.find_element(By.CSS_SELECTOR, f"{cell} input[type=text]")
    box.click()
    box.send_keys(">>> bad((" + Keys.ENTER)
    said = _wait(
        browser,
        "document.getElementById('l-skills-filter-error').textContent",
        "the message",
    )
    assert said.startswith("Filter not understood, so not applied (skill: “>>> bad((”)")
    assert box.get_attribute("aria-invalid") == "true"
    assert box.get_attribute("aria-describedby") == "l-skills-filter-error"
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE, Keys.ENTER)
    _wait(browser, "!document.getElementById('l-skills-filter-error').textContent", "no message")
    assert box.get_attribute("aria-invalid") is None
    assert "none of the" not in _text(browser, "l-shown")
    # the "Aa" button is readable (Dash draws it at 1.09:1) and says whether it is on
    aa = browser.find_element(By.CSS_SELECTOR, f"{cell} input.dash-filter--case")
    fg, bg, opacity = browser.execute_script(
        "const s = getComputedStyle(arguments[0]), t = getComputedStyle(arguments[0].closest('th'));"
        "return [s.color, t.backgroundColor, s.opacity];",
        aa,
    )
    assert opacity == "1" and a11y.contrast(_rgb(fg), _rgb(bg)) >= 4.5
    pressed = aa.get_attribute("aria-pressed")
    toggled = {"true": "false", "false": "true"}[pressed]
    browser.execute_script("arguments[0].focus()", aa)
    _keys(browser, Keys.ENTER)  # a button: Enter presses it (the table took Enter before)
    _wait(
        browser,
        f"document.querySelector('{cell} input.dash-filter--case').ariaPressed === '{toggled}'",
        "the case button pressed",
    )


PAGES = {"/": "SA-KG", "/library": "Library", "/live": "Live run", "/rounds": "Rounds"}
#: What a keyboard reaches or a screen reader reads as a control.
CONTROLS = (
    "input:not([type=hidden]), button, select, textarea, [role=slider], [role=listbox],"
    " [role=radiogroup], [role=group], [role=button], [role=combobox]"
)


def test_in_the_browser_every_page_has_a_title_a_heading_and_named_controls(site, browser) -> None:
    from .test_browser import _wait

    for path, name in PAGES.items():
        browser.get(site.url + path)
        _wait(browser, f"document.title === {json.dumps(name + ' · kgagent view')}", "the title")
        _wait(browser, "document.querySelector('#page > *')", "the page")
        time.sleep(1.0 if path != "/" else 3.0)  # the page's controls drawn
        lang, h1, mains = browser.execute_script(
            "return [document.documentElement.lang,"
            " [...document.querySelectorAll('h1')].map(h => h.textContent),"
            " document.querySelectorAll('main').length];"
        )
        assert (lang, h1, mains) == ("en", [name], 1), path
        controls = browser.execute_script(
            f"return [...document.querySelectorAll({json.dumps(CONTROLS)})].filter(e =>"
            " !e.closest('[aria-hidden=true]') && e.getClientRects().length > 0)"
        )
        assert controls, path
        nameless = [
            (c.tag_name, c.get_attribute("id"), c.get_attribute("class"))
            for c in controls
            if not (c.accessible_name or "").strip()
        ]
        assert not nameless, (path, nameless)
    # the graph page's labels name what Dash draws for their controls
    browser.get(site.url + "/")
    _wait(browser, "document.querySelector('#g-weight [role=slider][aria-labelledby]')", "named")
    names = browser.execute_script(
        "return ['#g-weight [role=slider]', '#g-hops [role=slider]', '#g-opts', '#g-cap',"
        " '#g-focus'].map(s => document.querySelector(s))"
    )
    got = [e.accessible_name.lower() for e in names]
    assert got[0] == "skill edges of weight ≥ (eq. 1)" and got[1] == "hops"
    assert got[2] == "show" and got[3] == "draw at most (states)"
    assert got[4].startswith("neighbourhood of")
    assert browser.execute_script("return document.getElementById('g-opts').role") == "group"


def test_in_the_browser_the_keyboard_opens_a_state_and_a_skill(site, browser, played) -> None:
    from selenium.webdriver.common.keys import Keys

    from kgagent.view.graphview import short_id

    from .test_browser import CY, _text, _wait

    sid, skill = _most_visited(played)
    browser.get(site.url + "/")
    _wait(browser, f"(() => {{ {CY} return cy.nodes().length; }})()", "the graph")
    assert "Nothing selected" in _text(browser, "g-detail")
    for control, expect in (("g-focus", f"State {short_id(sid)}"), ("g-skill", skill)):
        browser.execute_script(f"document.getElementById('{control}').focus()")
        _keys(browser, Keys.ENTER)  # opens the list, its search box focused
        _wait(browser, "document.querySelector('.dash-dropdown-option')", "the options")
        _keys(browser, Keys.ARROW_DOWN)  # the first option: the most visited, the fittest
        _keys(browser, Keys.ENTER)
        _wait(
            browser,
            f"document.getElementById('g-detail').textContent.includes({json.dumps(expect)})",
            f"the panel of {expect}",
        )
    assert "fitness φ" in _text(browser, "g-detail")
