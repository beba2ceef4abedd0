"""The values of an archive's rows, checked before they are loaded.

Why: the engine loads any string into a STRING column, so a hand-edited or
damaged archive (a perceptual hash that is not hexadecimal, skill operations
that are not JSON, a NaN weight) would import, and every later command that
reads the row would fail. Each such value is refused here, in one line, before
anything is written at the target.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from kgagent.errors import ArchiveError
from kgagent.records import Skill

_BLOB = re.compile(r"[0-9a-f]{64}")
_PHASH = re.compile(r"[0-9a-f]{16}")
SKILL_STATUSES = ("active", "suspended", "pruned")


def _blob(v: Any) -> bool:
    return v is None or v == "" or bool(_BLOB.fullmatch(v))


def _phash(v: Any) -> bool:
    return isinstance(v, str) and bool(_PHASH.fullmatch(v))


def _operations(v: Any) -> bool:
    try:
        return bool(Skill.parse_operations(v))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return False


def _json_object(v: Any) -> bool:
    if v is None or v == "":
        return True
    try:
        return isinstance(json.loads(v), dict)
    except (ValueError, RecursionError):
        return False


#: (table, column) → the test every value must pass, and what it should be.
RULES: dict[tuple[str, str], tuple[Callable[[Any], bool], str]] = {
    ("State", "thumbnail"): (_blob, "a blob id (64 hex digits) or empty"),
    ("State", "mcts"): (_json_object, "a JSON object or empty"),
    ("Object", "crop"): (_blob, "a blob id (64 hex digits) or empty"),
    ("Object", "phash"): (_phash, "a perceptual hash of 16 hex digits"),
    ("Skill", "operations"): (_operations, "a JSON list of operations"),
    ("Skill", "status"): (lambda v: v in SKILL_STATUSES, "one of " + ", ".join(SKILL_STATUSES)),
}

#: Counts (and sizes): a negative one would enter the equations (UCB's visits, fitness
#: over executions, Thompson sampling's tried/changed) as nonsense.
COUNTS = {
    "State": ("visits",),
    "Skill": ("executions", "failures", "low_rewards"),
    "Object": ("w", "h"),
    "SkillCluster": ("selections",),
    "InputStat": ("tried", "changed"),
    "SKILL_EDGE": ("count",),
}


def _count(v: Any) -> bool:
    return v is None or v >= 0


for _table, _columns in COUNTS.items():
    for _column in _columns:
        RULES[(_table, _column)] = (_count, "a count of 0 or more")


def check_rows(table: str, tab: pa.Table) -> None:
    """Refuse the first value of ``tab`` that later reads could not use."""
    for col in tab.column_names:
        rule = RULES.get((table, col))
        field = tab.schema.field(col)
        if rule is not None:
            ok, want = rule
            for i, v in enumerate(tab.column(col).to_pylist()):
                if not ok(v):
                    raise ArchiveError(
                        f"table {table}, row {i + 1}: {col} is {_short(v)}, not {want}; refusing"
                    )
        elif pa.types.is_floating(field.type):
            for i, v in enumerate(tab.column(col).to_pylist()):
                if v is not None and not math.isfinite(v):
                    raise ArchiveError(
                        f"table {table}, row {i + 1}: {col} is {v}, not a finite number; refusing"
                    )


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
