"""How single values of a merge combine: provenance lists, skill identity, per-state statistics.

Pure functions on the columns' text (``origin``, ``operations``, ``mcts``), used by
:mod:`~kgagent.memory.merge_rules`.
"""

from __future__ import annotations

import json
from typing import Any

from kgagent.actions import Operation


def parse_origin(text: str | None) -> list[dict[str, str]]:
    """``origin`` as a list of {memory, id} (empty for a node its memory made itself)."""
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    return (
        [
            {"memory": str(d["memory"]), "id": str(d["id"])}
            for d in data
            if isinstance(d, dict) and d.get("memory") and d.get("id")
        ]
        if isinstance(data, list)
        else []
    )


def join_origin(*parts: list[dict[str, str]]) -> str:
    """Provenance lists united in order, each entry once, as the column's JSON text."""
    seen, out = set(), []
    for part in parts:
        for d in part:
            k = (d["memory"], d["id"])
            if k not in seen:
                seen.add(k)
                out.append({"memory": d["memory"], "id": d["id"]})
    return json.dumps(out, sort_keys=True) if out else ""


def operations_identity(ops: list[Operation]) -> str:
    """What makes two skills the same: their operations, object display names aside."""
    return json.dumps([op.identity() for op in ops], sort_keys=True)


def _stats_of(text: str) -> dict[str, Any] | None:
    """The per-state statistics in their current form (``kgagent.agent.state_stats``);
    None for a record of another shape, which a merge keeps as it is."""
    from kgagent.agent.state_stats import StateStats

    try:
        return StateStats(json.loads(text)).to_json()
    except (ValueError, TypeError, AttributeError):
        return None


def _remap_op_key(key: str, omap: dict[str, str]) -> str:
    """An operation key (JSON of the operation) with its object ids mapped."""
    try:
        d = json.loads(key)
    except json.JSONDecodeError:
        return key
    if not isinstance(d, dict):
        return key
    for f in ("object_id", "object_id2"):
        if d.get(f) in omap:
            d[f] = omap[d[f]]
    return json.dumps(d, sort_keys=True)


def remap_stats(text: str, maps: dict[str, dict[str, str]]) -> str:
    """A source state's statistics with prefix skill ids and object ids mapped ('' if none)."""
    if not text:
        return ""
    stats = _stats_of(text)
    if stats is None:
        return text
    kmap, omap = maps["Skill"], maps["Object"]
    tried = {}
    for prefix, ops in stats["tried"].items():
        p = kmap.get(prefix, prefix) if prefix else ""
        mine = tried.setdefault(p, {})
        for op, change in ops.items():
            mine[_remap_op_key(op, omap)] = float(change)
    stats["tried"] = tried
    return json.dumps(stats, sort_keys=True)


def combine_stats(a: str, b: str) -> str:
    """Two states' statistics as one: explores added, tried operations united (mean change)."""
    if not a or not b:
        return a or b
    x, y = _stats_of(a), _stats_of(b)
    if x is None or y is None:
        return a if x is not None or y is None else b
    x["explores"] = int(x["explores"]) + int(y["explores"])
    for prefix, ops in y["tried"].items():
        mine = x["tried"].setdefault(prefix, {})
        for op, change in ops.items():
            mine[op] = (mine[op] + change) / 2 if op in mine else change
    return json.dumps(x, sort_keys=True)
