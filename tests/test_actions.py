"""Operations (skill steps) and Actions (concrete) validate and round-trip through JSON."""

from __future__ import annotations

import json

import pytest

from kgagent.actions import Action, Operation


def test_operation_json_round_trip():
    ops = [
        Operation("click", object_id="o-1", object_name="Play"),
        Operation("drag", object_id="o-1", object_id2="o-2"),
        Operation("click", point=(10, 20)),
        Operation("key", key="enter"),
        Operation("hotkey", key="ctrl+s"),
        Operation("type", text="hello"),
        Operation("scroll", point=(5, 5), scroll=-3),
    ]
    back = [Operation.from_dict(d) for d in json.loads(json.dumps([o.to_dict() for o in ops]))]
    assert back == ops
    assert ops[1].object_ids() == ["o-1", "o-2"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "click"},
        {"kind": "drag", "object_id": "o-1"},
        {"kind": "key"},
        {"kind": "type"},
        {"kind": "teleport", "point": (1, 1)},
    ],
)
def test_invalid_operations_are_refused(kwargs):
    with pytest.raises(ValueError):
        Operation(**kwargs)


def test_action_points_and_validation():
    a = Action("drag", x=1, y=2, x2=3, y2=4)
    assert a.points() == [(1, 2), (3, 4)]
    assert Action.from_dict(a.to_dict()) == a
    with pytest.raises(ValueError):
        Action("click", x=1)
    with pytest.raises(ValueError):
        Operation.from_dict({"object_id": "o-1"})


@pytest.mark.parametrize(
    "action",
    [
        Action("click", x=0, y=0),
        Action("drag", x=10, y=10, x2=0, y2=40),
        Action("scroll", x=0, y=5, scroll=-1),
    ],
)
def test_a_coordinate_at_the_targets_edge_survives_the_step_log(action):
    d = json.loads(json.dumps(action.to_dict()))
    assert Action.from_dict(d) == action
    assert "scroll" not in Action("click", x=0, y=0).to_dict()
