"""The VLM sees what the agent read: prompts list the screens' labels, short and bounded,
and operations name objects by their text and keys by their names."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.brain import prompts
from kgagent.brain.base import View

from .fake_endpoint import tool_reply
from .helpers import brain_for, clusters, skill, transition

OPEN = Operation("click", object_id="o-1", object_name='"Open"')


def _text(endpoint, i: int = 0) -> str:
    return endpoint.requests[i]["body"]["messages"][1]["content"][0]["text"]


def test_operations_are_phrased_as_a_person_says_them():
    ops = [
        OPEN,
        Operation("key", key="1"),
        Operation("hotkey", key="ctrl+s"),
        Operation("type", text="abc"),
        Operation("double_click", object_id="o-2"),
        Operation("scroll", object_id="o-3", scroll=-3),
        Operation("drag", object_id="o-4", object_id2="o-5"),
        Operation("click", point=(10, 20)),
    ]
    assert prompts.operations_text(ops) == (
        "click \"Open\" ; press 1 ; press ctrl+s ; type 'abc' ; double-click o-2 ; "
        "scroll down on o-3 ; drag o-4 to o-5 ; click at (10, 20)"
    )
    assert prompts.skill_phrase([OPEN, Operation("key", key="1")]) == 'press 1 after click "Open"'


def test_a_drag_names_its_target_as_its_source():
    """Augmentation's drags carry both objects' names; the name is not the operation's identity."""
    from kgagent.agent.augment import op_key
    from kgagent.memory.merge_values import operations_identity

    named = Operation(
        "drag", object_id="o-4", object_name='"88"', object_id2="o-5", object_name2='"SUM"'
    )
    assert prompts.operation_phrase(named) == 'drag "88" to "SUM"'
    assert named.describe() == 'drag "88" -> "SUM"'
    assert Operation.from_dict(named.to_dict()) == named
    bare = Operation("drag", object_id="o-4", object_id2="o-5")
    assert op_key(named) == op_key(bare)
    assert operations_identity([named]) == operations_identity([bare])


def test_the_labels_line_is_bounded():
    labels = [f"Item {i} with a long descriptive label" for i in range(40)]
    line = prompts.labels_text(labels, 12)  # 12 at most, and about 400 characters
    shown = line.count('"') // 2
    assert shown <= 12 and f"+{40 - shown} more" in line
    assert len(line) <= 400 + len(", +40 more")
    assert prompts.labels_text([], 12) == "none"
    short = prompts.labels_text(["A" * 100], 12)
    assert short.startswith('"' + "A" * 39 + "…") and "more" not in short


def test_describe_and_evaluate_prompts_list_the_text_of_both_screens(endpoint):
    b = brain_for(endpoint)
    tr = transition()
    tr.before.labels = ("Menu", "Open")
    tr.after.labels = ("Menu", "Settings", "Close")
    endpoint.push(
        tool_reply("describe_skill", {"meaningful": True, "name": "n", "description": "d"})
    )
    b.describe_skill([OPEN], tr)
    text = _text(endpoint)
    assert 'Operations: click "Open"' in text
    assert 'Text on the screen before: "Menu", "Open"' in text
    assert 'Text on the screen after: "Menu", "Settings", "Close"' in text
    endpoint.push(
        tool_reply("evaluate", {"is_consistent": True, "is_progressive": True, "reason": "r"})
    )
    b.evaluate(skill(operations=[OPEN]), tr)
    assert 'Text on the screen after: "Menu", "Settings", "Close"' in _text(endpoint, 1)


def test_without_labels_the_prompts_are_as_before(endpoint):
    b = brain_for(endpoint)
    endpoint.push(
        tool_reply("describe_skill", {"meaningful": True, "name": "n", "description": "d"})
    )
    b.describe_skill([OPEN], transition())
    assert "Text on the screen" not in _text(endpoint)


def test_choose_cluster_lists_the_current_screens_labels(endpoint):
    b = brain_for(endpoint)
    cs = clusters()
    view = View(np.zeros((40, 60, 3), np.uint8), np.eye(4)[0], "s")
    view.labels = tuple(f"Button {i}" for i in range(30))
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": None}))
    b.choose_cluster(view, cs)
    text = _text(endpoint)
    line = next(x for x in text.splitlines() if x.startswith("Text on the screen:"))
    assert '"Button 0"' in line and '"Button 11"' in line and '"Button 12"' not in line
    assert "+18 more" in line
    assert text.index("Text on the screen:") < text.index("Clusters:")
