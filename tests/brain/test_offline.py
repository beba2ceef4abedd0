"""OfflineBrain: each role on hand-made features, with exact expected outputs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import kgagent.brain.offline as offline_mod
import kgagent.brain.prompts as prompts_mod
from kgagent.actions import Operation
from kgagent.brain.base import (
    ClusterAssignment,
    ClusterView,
    Judgement,
    SkillText,
    SkillView,
    Transition,
    View,
)
from kgagent.brain.offline import OfflineBrain
from kgagent.config import BrainConfig

from .game_words import GAME_WORDS

E = np.eye(4)
IMG = np.zeros((8, 8, 3), np.uint8)
CLICK = [Operation("click", object_id="obj-3")]


def unit(*v: float) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def tr(
    before=E[0], after=E[1], change=0.25, new_ep=True, new_graph=True, sb="s1", sa="s2"
) -> Transition:
    return Transition(View(IMG, before, sb), View(IMG, after, sa), change, new_ep, new_graph)


def skill(past=(), source=None, **kw) -> SkillView:
    base = dict(
        id="k1",
        name="click obj-3",
        description="old text",
        operations=CLICK,
        past_effects=[np.asarray(p, dtype=np.float64) for p in past],
        source_features=source,
    )
    base.update(kw)
    return SkillView(**base)


@pytest.fixture
def brain() -> OfflineBrain:
    return OfflineBrain(BrainConfig(), seed=0)


# --------------------------------------------------------------- describe_skill
def test_describe_skill_exact(brain):
    out = brain.describe_skill(CLICK, tr())
    assert out == SkillText(
        "click obj-3",
        "click obj-3: changes 25.0% of the screen and leads to the new screen (state s2).",
    )
    known = brain.describe_skill(CLICK, tr(new_graph=False))
    assert known.name == "click obj-3"
    assert "leads to the known screen" in known.description
    same = brain.describe_skill(
        [Operation("key", key="enter")], tr(new_graph=False, new_ep=False, sa="s1")
    )
    assert same.name == "press enter"
    assert "leads to the same screen" in same.description


def test_skills_are_named_from_what_they_act_on(brain):
    """Objects by their names (quoted text when they show text), keys by theirs; the last
    operation first, after the ones before it."""
    wood = Operation("click", object_id="o-7", object_name='"Open"')
    one = Operation("key", key="1")
    assert brain.describe_skill([wood, one], tr()).name == 'press 1 after click "Open"'
    end = Operation("click", object_id="o-9", object_name='"Save"')
    assert brain.describe_skill([end], tr()).name == 'click "Save"'
    three = [wood, Operation("right_click", object_id="o-2"), Operation("hotkey", key="ctrl+s")]
    assert (
        brain.describe_skill(three, tr()).name == 'press ctrl+s after click "Open", right-click o-2'
    )
    at = Operation("click", point=(640, 360))
    assert brain.describe_skill([at], tr()).name == "click at (640, 360)"
    # two different operands give two different names
    a = brain.describe_skill(CLICK, tr()).name
    b = brain.describe_skill([Operation("click", object_id="obj-4")], tr()).name
    assert a != b


def test_text_read_on_the_screens_names_what_an_unlabelled_operation_shows(brain):
    """With the labels of both screens (View.labels), what appeared names a key press and
    goes into the description; an operand that shows text keeps its own name."""
    t = tr()
    t.before.labels = ("Menu", "Total 3")
    t.after.labels = ("Menu", "Settings", "Close")
    key = brain.describe_skill([Operation("key", key="e")], t)
    assert key.name == 'press e -> "Settings"'
    assert 'Shows "Settings", "Close".' in key.description
    assert 'Hides "Total 3".' in key.description
    menu = Operation("click", object_id="o-1", object_name='"Menu"')
    assert brain.describe_skill([menu], t).name == 'click "Menu"'
    after_menu = [menu, Operation("key", key="e")]
    assert brain.describe_skill(after_menu, t).name == 'press e after click "Menu" -> "Settings"'
    # nothing appeared (or no labels passed): the plain name
    t.after.labels = ("menu",)
    assert brain.describe_skill([Operation("key", key="e")], t).name == "press e"
    assert brain.describe_skill([Operation("key", key="e")], tr()).name == "press e"


def test_an_echo_is_no_progress_and_its_text_names_nothing(brain):
    """A text field's echo (Transition.echo): the program did nothing, however new the
    screen; the typed text that appeared is not what the key "shows"."""
    t = tr()
    t.before.labels, t.after.labels = ("Name",), ("Name", "hello")
    assert brain.evaluate(skill(), t).progressive is True
    t.echo = True
    j = brain.evaluate(skill(), t)
    assert j.progressive is False and j.reason.endswith(" echo")
    d = brain.describe_skill([Operation("type", text="hello")], t)
    assert d.name == "type 'hello'" and "Only a text field shows what was typed." in d.description


def test_describe_skill_meaningless_when_nothing_changed(brain):
    below = BrainConfig().offline_min_change / 2
    nothing = tr(change=below, new_ep=False, new_graph=False, sa="s1")
    assert brain.describe_skill(CLICK, nothing) is None
    # a changed counter is an effect: ending a civgame turn changes 0.08 % of the screen
    assert brain.describe_skill(CLICK, tr(change=0.0008, new_graph=False, sa="s1")) is not None
    # the same state id but a visible change is meaningful; and so is a new state with Δ≈0
    assert brain.describe_skill(CLICK, tr(change=0.01, new_graph=False, sa="s1")) is not None
    assert brain.describe_skill(CLICK, tr(change=0.0, new_graph=False, sa="s9")) is not None


# --------------------------------------------------------------------- evaluate
def test_evaluate_progress_is_new_in_episode_and_changed(brain):
    assert brain.evaluate(skill(), tr(new_ep=True)).progressive is True
    assert brain.evaluate(skill(), tr(new_ep=False, new_graph=False)).progressive is False
    still = tr(change=0.0, new_ep=True, new_graph=False, sa="s1")
    assert brain.evaluate(skill(), still).progressive is False


def test_evaluate_progress_counts_a_new_screen_of_a_known_state(brain):
    """Only numbers changed: the screen merged into a visited state, yet it is a new one."""
    same_state = dict(new_ep=False, new_graph=False, sa="s1", after=E[0] + 0.01 * E[1])
    numbers = Transition(
        View(IMG, E[0], "s1"), View(IMG, same_state["after"], "s1"), 0.004, False, False, True
    )
    assert numbers.new_screen_in_episode is True
    assert brain.evaluate(skill(), numbers).progressive is True
    # the default is False: a known state and a known screen is not progress
    assert tr(**same_state, change=0.004).new_screen_in_episode is False
    assert brain.evaluate(skill(), tr(**same_state, change=0.004)).progressive is False
    # a "new screen" that changed nothing (Δ below offline_min_change, same state) is not progress
    still = Transition(View(IMG, E[0], "s1"), View(IMG, E[0], "s1"), 0.0, False, False, True)
    assert brain.evaluate(skill(), still).progressive is False


def test_evaluate_consistency_from_past_effects(brain):
    d = E[1] - E[0]
    agree = brain.evaluate(skill(past=[d, d + 0.1 * E[2]]), tr())
    assert agree == Judgement(
        True,
        True,
        "change=0.2500 new_in_episode=True new_screen_in_episode=False "
        "effect_cos=0.999 over 2 past effect(s)",
    )
    assert brain.evaluate(skill(past=[-d]), tr()).consistent is False
    # orthogonal effect: cos 0 < 0.3
    assert brain.evaluate(skill(past=[E[3] - E[2]]), tr()).consistent is False
    # no past effects: consistent iff something changed
    assert brain.evaluate(skill(), tr()).consistent is True
    nothing = tr(after=E[0], change=0.0, new_ep=False, new_graph=False, sa="s1")
    assert brain.evaluate(skill(), nothing) == Judgement(
        False,
        False,
        "change=0.0000 new_in_episode=False new_screen_in_episode=False "
        "effect_cos=n/a over 0 past effect(s)",
    )
    # a skill known to move the features that did not move them this time
    assert brain.evaluate(skill(past=[d]), tr(after=E[0])).consistent is False


def test_evaluate_threshold_and_window_are_config():
    d = E[1] - E[0]
    past = [-d, -d, -d, d, d]
    wide = OfflineBrain(BrainConfig(offline_effect_window=10))
    narrow = OfflineBrain(BrainConfig(offline_effect_window=2))
    assert wide.evaluate(skill(past=past), tr()).consistent is False  # mean points to −d
    assert narrow.evaluate(skill(past=past), tr()).consistent is True  # newest two agree
    half = E[1] - E[0] + (E[3] - E[2])  # cos with d = 0.707
    assert (
        OfflineBrain(BrainConfig(offline_consistency_cos=0.7))
        .evaluate(skill(past=[half]), tr())
        .consistent
    )
    assert (
        not OfflineBrain(BrainConfig(offline_consistency_cos=0.75))
        .evaluate(skill(past=[half]), tr())
        .consistent
    )


def test_evaluate_ignores_past_effects_of_another_dimension(brain):
    out = brain.evaluate(skill(past=[np.ones(7)]), tr())
    assert out.consistent is True and "over 0 past" in out.reason


# --------------------------------------------------------------- choose_cluster
def clusters() -> list[ClusterView]:
    return [
        ClusterView("c1", "a", "", [], np.stack([E[0], E[1]])),
        ClusterView("c2", "b", "", [], np.stack([unit(0, 0, 1, 0.1)])),
        ClusterView("c3", "c", "", [], None),
        ClusterView("c4", "d", "", [], np.ones((2, 7))),  # other encoder: ignored
    ]


def test_choose_cluster_max_cosine_over_states(brain):
    view = View(IMG, unit(0, 0.05, 1, 0), "s")
    assert brain.choose_cluster(view, clusters()) == "c2"
    assert brain.choose_cluster(View(IMG, E[1], "s"), clusters()) == "c1"  # its 2nd state
    assert brain.choose_cluster(View(IMG, E[3], "s"), clusters()) is None  # none close
    assert brain.choose_cluster(View(IMG, E[1], "s"), clusters()[2:]) is None  # no features
    assert brain.choose_cluster(View(IMG, E[1], "s"), []) is None


def test_choose_cluster_threshold_and_ties():
    view = View(IMG, unit(1, 1, 0, 0), "s")  # cos 0.707 with E[0] and E[1]
    twins = [
        ClusterView("cB", "", "", [], E[:1]),
        ClusterView("cA", "", "", [], E[1:2]),
    ]
    assert OfflineBrain(BrainConfig(offline_cluster_cos=0.7)).choose_cluster(view, twins) == "cA"
    assert OfflineBrain(BrainConfig(offline_cluster_cos=0.8)).choose_cluster(view, twins) is None


# ----------------------------------------------------------------- refine_skill
def test_refine_skill_exact(brain):
    d = E[1] - E[0]
    out = brain.refine_skill(skill(past=[d]), tr())
    assert out == SkillText(
        "click obj-3",
        "click obj-3: changes about 25% of the screen and leads to the new screen; "
        "effect agrees with 1 past execution(s) (cos 1.00).",
    )
    first = brain.refine_skill(skill(), tr(new_graph=False))
    assert first.description == (
        "click obj-3: changes about 25% of the screen and leads to the known screen; "
        "first measured effect."
    )
    # already says that: nothing to improve
    assert brain.refine_skill(skill(description=first.description), tr(new_graph=False)) is None
    nothing = tr(after=E[0], change=0.0, new_ep=False, new_graph=False, sa="s1")
    assert brain.refine_skill(skill(past=[d]), nothing) is None


# --------------------------------------------------------------- cluster_skills
def test_cluster_skills_exact(brain):
    existing = [ClusterView("c1", "a", "", [], np.stack([E[0], E[1]]))]
    skills = [
        skill(id="k1", name="go", source=np.stack([E[1], unit(0, 1, 0.1, 0)])),  # near c1
        skill(id="k2", name="open", source=np.stack([E[3]])),  # far: opens a group
        skill(id="k3", name="close", source=unit(0, 0, 0.1, 1)),  # joins k2's new group
        skill(id="k4", name="mystery"),  # nothing known
        skill(id="k5", name="other", source=E[2]),  # far from everything
    ]
    out = brain.cluster_skills(skills, existing)
    assert out == [
        ClusterAssignment("k1", "c1"),
        ClusterAssignment("k2", None, "group: open", "Skills used on the same screens as 'open'."),
        ClusterAssignment("k3", None, "group: open", "Skills used on the same screens as 'open'."),
        ClusterAssignment(
            "k4", None, "group: mystery", "Skills used on the same screens as 'mystery'."
        ),
        ClusterAssignment(
            "k5", None, "group: other", "Skills used on the same screens as 'other'."
        ),
    ]
    assert brain.cluster_skills([], existing) == []


def test_new_clusters_of_one_name_are_told_apart(brain):
    """Two far-apart skills of one name open two clusters, and an existing cluster's
    name is not taken again: the name is what groups the call's new clusters."""
    existing = [ClusterView("c1", "group: open", "", [], np.stack([E[0]]))]
    skills = [
        skill(id="k2", name="open", source=np.stack([E[3]])),
        skill(id="k3", name="open", source=np.stack([E[2]])),
    ]
    names = [a.new_name for a in brain.cluster_skills(skills, existing)]
    assert names == ["group: open (2)", "group: open (3)"]


# ------------------------------------------------------------ general properties
def run_all(b: OfflineBrain) -> list:
    d = E[1] - E[0]
    return [
        b.describe_skill(CLICK, tr()),
        b.evaluate(skill(past=[d]), tr()),
        b.choose_cluster(View(IMG, E[1], "s"), clusters()),
        b.refine_skill(skill(past=[d]), tr()),
        b.cluster_skills([skill(source=E[:2]), skill(id="k2")], clusters()),
    ]


def test_deterministic_across_instances_and_seeds():
    a = run_all(OfflineBrain(BrainConfig(), seed=0))
    assert a == run_all(OfflineBrain(BrainConfig(), seed=0))
    assert a == run_all(OfflineBrain(BrainConfig(), seed=123))


def test_usage_counts_calls_but_costs_nothing(brain):
    mark = brain.usage.copy()
    run_all(brain)
    assert brain.usage.calls == 5
    assert brain.usage.tokens == 0 and brain.usage.cost_usd == 0.0
    assert (brain.usage - mark).calls == 5


def test_no_game_knowledge_in_sources():
    for mod in (offline_mod, prompts_mod):
        text = Path(mod.__file__).read_text().lower()
        for word in GAME_WORDS:
            assert not re.search(rf"\b{word}s?\b", text), (mod.__name__, word)
