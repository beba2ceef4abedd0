"""``kgagent memory forget TEXT``: take a text the agent read or typed out of its memory.

A text read from the screen (a password shown in clear, a name) is kept in several
places (docs/memory.md, "Privacy"). In one write transaction this removes:

1. the objects whose label or name holds the text, with their ``HAS_OBJECT`` and
   ``USES`` links; their crops are the pictures of it;
2. the skills whose name, description or operations hold it (the offline brain names a
   skill by the text that appeared; an operation names its object and the text it
   types), and every skill whose operations name one of those objects, so that no
   operation names an object that is gone; with their ``SKILL_EDGE``s (an edge names
   its skill by id: kept, it would dangle), ``USES`` and ``MEMBER_OF``. A skill grown
   from one of them keeps its operations and loses its parent;
3. the action clusters whose name or description holds it (a cluster is named after a
   skill); their skills are clustered again by the next run;
4. the input statistics whose key holds it (``type:<text>``) or names a removed object;
5. from each state's exploration record (``State.mcts``) the operations tried that hold
   it or name a removed object, and those tried after a removed skill.

Then, under the same writer's lock, the blobs no row names any more go
(:mod:`~kgagent.memory.unreferenced`). A text matches case-insensitively
(``str.casefold``), with its runs of white space as one space (as labels are kept), in
the text as stored: the JSON of operations and records is decoded first, so a text
with quotes or letters outside ASCII is found too.

What it cannot reach is said, not done: the step logs under ``runs/`` that hold the
text (named, to delete by hand: they are the record of runs), copies in ``backups/``,
and archives exported before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kgagent.config import Config
from kgagent.errors import KGAgentError
from kgagent.memory.unreferenced import remove_unreferenced

RUNS = "runs"
BACKUPS = "backups"


#: The JSON keys whose string values are texts read from the screen or typed (an
#: operation's typed ``text`` and its objects' names; names, labels, descriptions). Ids,
#: kinds and other keys are not texts: "0000" must not match every id that holds it.
TEXT_KEYS = frozenset({"text", "object_name", "object_name2", "name", "label", "description"})
#: A row's id inside a text (``s-0000002-ee1c81e6c2``; :func:`kgagent.memory.core.new_id`).
ROW_ID = re.compile(r"\b[a-z]-\d{7,}-[0-9a-f]{10}\b")
#: An input statistic's key that holds a typed text after it (``type:<text>``).
TYPED = "type:"
#: The prefix of the counts of inputs known before they were tried (kgagent/agent/inputs.py).
KNOWN = "known:"


class _Needle:
    """Whether a text, or a text-bearing string of a JSON value (:data:`TEXT_KEYS`), holds
    the text to forget; or whether a JSON value names one of the ids ``ids`` (objects,
    skills) that go, as a whole string."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split()).casefold()
        self.ids: set[str] = set()

    def in_text(self, value: Any) -> bool:
        """A text holds the text to forget, outside the ids it names (a description
        names states by id: "0000" is not in "state s-0000002-ee1c81e6c2")."""
        if not isinstance(value, str):
            return False
        return self.text in " ".join(ROW_ID.sub(" ", value).split()).casefold()

    def in_json(self, value: Any, key: str | None = None) -> bool:
        """A string under a text key holds the text, or any string is a removed id."""
        if isinstance(value, str):
            return value in self.ids or (key in TEXT_KEYS and self.in_text(value))
        if isinstance(value, dict):
            return any(self.in_json(v, k) for k, v in value.items())
        if isinstance(value, list):
            return any(self.in_json(v, key) for v in value)
        return False

    def in_json_text(self, text: str) -> bool:
        """:meth:`in_json` of a JSON text; a text that is not JSON is looked at as a text."""
        try:
            return self.in_json(json.loads(text))
        except ValueError:
            return self.in_text(text) or text in self.ids

    def in_input_key(self, key: str) -> bool:
        """An input statistic's key (:func:`kgagent.agent.inputs.input_levels`, maybe
        after ``known:``): the text typed (``type:<text>``), or an object that goes
        (``object:<id>:<action>``)."""
        key = key.removeprefix(KNOWN)
        if key.startswith(TYPED):
            return self.in_text(key[len(TYPED) :])
        parts = key.split(":")
        return len(parts) == 3 and parts[0] == "object" and parts[1] in self.ids


def forget(
    path: Path, config: Config, text: str, *, dry_run: bool = False, say: Callable[[str], None]
) -> dict[str, Any]:
    """Remove ``text`` from the memory at ``path`` (see the module doc); the counts.

    ``dry_run``: open the memory read-only and count what would go, changing nothing.
    """
    from kgagent.memory.store import Memory

    needle = _Needle(text)
    if len(needle.text) < 1:
        raise KGAgentError("give the text to forget (it is empty)")
    mem = Memory.open(path, config, read_only=dry_run, create=False)
    for note in mem.notes:  # a migration, with the backup it kept
        say(note)
    try:
        plan = _plan(mem, needle)
        out: dict[str, Any] = {k: len(v) for k, v in plan.items()}
        if not dry_run:
            _apply(mem, plan)
            out["blobs_removed"], out["blob_bytes"] = remove_unreferenced(mem)
    finally:
        mem.close()
    logs = step_logs_holding(path, text)
    out["step_logs"] = len(logs)
    for log, readable in logs:
        held = "holds the text" if readable else "cannot be read here, and may hold the text"
        say(f"the step log {log} {held}: delete it by hand")
    backups = path / BACKUPS
    if backups.is_dir() and any(backups.iterdir()):
        say(f"{backups} holds copies of the graph made before: they keep the text too")
    out["dry_run"] = dry_run
    return out


def _plan(mem: Any, needle: _Needle) -> dict[str, Any]:
    """What goes: ids of objects, skills, clusters; input keys; states' new records."""
    objects = [
        r["id"]
        for r in mem.run_named("forget_object_rows")
        if needle.in_text(r["label"]) or needle.in_text(r["name"])
    ]
    needle.ids = set(objects)
    skills = [
        r["id"]
        for r in mem.run_named("forget_skill_rows")
        if needle.in_text(r["name"])
        or needle.in_text(r["description"])
        or needle.in_json_text(r["operations"])
    ]
    clusters = [
        r["id"]
        for r in mem.run_named("forget_cluster_rows")
        if needle.in_text(r["name"]) or needle.in_text(r["description"])
    ]
    keys = [r["key"] for r in mem.run_named("forget_input_keys") if needle.in_input_key(r["key"])]
    needle.ids = set(objects) | set(skills)
    stats = {}
    for r in mem.run_named("forget_state_stats_rows"):
        kept = _without(r["mcts"], needle, set(skills))
        if kept != r["mcts"]:
            stats[r["id"]] = kept
    return {
        "objects": objects,
        "skills": skills,
        "clusters": clusters,
        "input_stats": keys,
        "state_stats": stats,
    }


def _without(record: str, needle: _Needle, skills: set[str]) -> str:
    """A state's exploration record (JSON, ``kgagent/agent/state_stats.py``) without the
    operations that hold the text or name a removed id, nor those tried after a removed
    skill; ``''`` (no record) when it has another form and holds either."""
    try:
        data = json.loads(record)
    except ValueError:
        data = None
    tried = data.get("tried") if isinstance(data, dict) else None
    if not isinstance(tried, dict):
        return "" if needle.in_json_text(record) else record
    rest = {k: v for k, v in data.items() if k != "tried"}
    if needle.in_json(rest):
        return ""
    kept = {
        prefix: {op: d for op, d in ops.items() if not needle.in_json_text(op)}
        for prefix, ops in tried.items()
        if prefix not in skills and isinstance(ops, dict)
    }
    if kept == tried:
        return record
    return json.dumps({**rest, "tried": kept}, sort_keys=True)


def _apply(mem: Any, plan: dict[str, Any]) -> None:
    """Remove what ``plan`` names, in one transaction (a failure leaves the memory as it was)."""
    with mem._db.transaction():
        if plan["skills"]:
            mem._q("forget_skill_edges", skills=plan["skills"])
            mem._q("forget_skills", skills=plan["skills"])
            mem._q("forget_parents", skills=plan["skills"])
        if plan["clusters"]:
            mem._q("forget_clusters", clusters=plan["clusters"])
        if plan["input_stats"]:
            mem._q("forget_input_stats", keys=plan["input_stats"])
        for state, record in plan["state_stats"].items():
            mem._q("state_stats_put", state=state, stats=record)
        if plan["objects"]:
            mem._q("forget_objects", objects=plan["objects"])


def step_logs_holding(path: Path, text: str) -> list[tuple[Path, bool]]:
    """The files under ``runs/`` with a line that holds ``text`` in one of its strings,
    each with True; those that cannot be read, with False. A step log's line is JSON,
    whose strings escape letters outside ASCII (``Caf\\u00e9``): each line is decoded
    before it is searched, and any string counts (a false find only asks the user to
    look); a line that is not JSON is searched as it is."""
    needle = _Needle(text)
    runs = path / RUNS
    if not runs.is_dir():
        return []
    found = []
    for f in sorted(p for p in runs.rglob("*") if p.is_file()):
        try:
            with f.open(encoding="utf-8", errors="replace") as fh:
                if any(_line_holds(line, needle) for line in fh):
                    found.append((f, True))
        except OSError:
            found.append((f, False))
    return found


def _line_holds(line: str, needle: _Needle) -> bool:
    try:
        value = json.loads(line)
    except ValueError:
        return needle.in_text(line)
    return any(needle.in_text(s) for s in _strings(value))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
