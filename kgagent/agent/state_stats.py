"""Per-state exploration statistics, kept as JSON on each ``State`` node.

The papers "evaluate the skill cluster with MCTS" (Algorithm 1, line 28); the selector
they describe is a UCT score over skill-wide counts, which is Eq. 6
(:mod:`kgagent.agent.invocation`). What a decision needs *per state* is smaller, and
that is all this record holds:

* how often the explore arm (augmentation) ran from the state: Eq. 6's ``n`` for the
  explore arm, so familiar states explore less than states where augmentation was
  rarely tried;
* which atomic operations augmentation already tried from the state, after which
  prefix skill, with the change Δ they caused, so that a state's dead clicks are not
  tried again before its untried ones.

Serialised as plain JSON (never pickled). The column is named ``mcts`` in the schema
for compatibility; a record written with per-skill children (format 1) is read, and
those children, which no decision used, are dropped.
"""

from __future__ import annotations

from typing import Any

#: Arm id of the exploration option in cluster invocation (Eq. 6-7).
EXPLORE = "explore"


class StateStats:
    """Exploration visits and tried operations of one state (see the module docstring)."""

    VERSION = 2

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data if isinstance(data, dict) else {}
        if "children" in data:  # format 1: {"children": {"explore": {"n", "w", "tried"}, ...}}
            children = data.get("children")
            data = children.get(EXPLORE) if isinstance(children, dict) else None
            data = data if isinstance(data, dict) else {}
            explores = data.get("n", 0)
        else:
            explores = data.get("explores", 0)
        self.explores: int = int(explores)
        self._tried: dict[str, dict[str, float]] = {}
        tried = data.get("tried")
        if isinstance(tried, dict):
            self._tried = {
                str(k): {str(op): float(d) for op, d in v.items()}
                for k, v in tried.items()
                if isinstance(v, dict)
            }

    def to_json(self) -> dict[str, Any]:
        return {"version": self.VERSION, "explores": self.explores, "tried": self._tried}

    def record_explore(self) -> None:
        """The explore arm (augmentation) ran once more from this state."""
        self.explores += 1

    def tried(self, prefix: str = "") -> dict[str, float]:
        """Atomic operations already tried by augmentation after ``prefix`` (skill id, '' = none)."""
        return self._tried.setdefault(prefix, {})

    def mark_tried(self, prefix: str, op_key: str, change: float) -> None:
        self.tried(prefix)[op_key] = float(change)
