"""Do two memories hold the same graph and files: every table's rows, ids without their random part.

Two versions of a command that writes a memory (a merge, an import, a run of one seed) can be
compared by what they wrote. Ids are ``prefix-<sequence>-<random>``; the random part differs
between any two runs, so it is dropped before comparing, and so are the times a migration was
applied. ``--ignore-times`` drops every time the graph records (when a node was created, first
and last seen, updated), for memories written at different times rather than copied from the
same sources. Per node and relationship table: the rows of each memory and whether they are
the same; then the blob files (content-addressed: the same images give the same names).

    .venv/bin/python benchmarks/experiments/same_memory.py OLD_MEMORY NEW_MEMORY [--ignore-times]

Prints one JSON object; exits 0 when everything is the same, 1 when something differs, 2 on
an error (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kgagent.errors import KGAgentError
from kgagent.memory.core import without_random_part

#: properties that record when, not what: always dropped, and with --ignore-times
_APPLIED = {"applied_at"}
_TIMES = {"created_at", "first_seen", "last_seen", "updated"}


def _row(values: dict[str, Any], drop: set[str]) -> str:
    kept = {k: v for k, v in values.items() if not k.startswith("_") and k not in drop}
    return without_random_part(json.dumps(kept, sort_keys=True, default=str))


def contents(path: str, drop: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Every table's rows (normalised, without the properties in ``drop``, sorted) and the blob
    file names of the memory at ``path``."""
    from kgagent.config import Config
    from kgagent.memory import Memory

    tables: dict[str, list[str]] = {}
    with Memory.open(path, Config(), read_only=True) as m:
        for t in m.cypher("CALL show_tables() RETURN *"):
            name = t["name"]
            if t["type"] == "NODE":
                rows = [_row(r["n"], drop) for r in m.cypher(f"MATCH (n:{name}) RETURN n")]
            else:
                rows = [
                    _row({"from": r["a"], "to": r["b"], **r["e"]}, drop)
                    for r in m.cypher(f"MATCH (a)-[e:{name}]->(b) RETURN a.id AS a, b.id AS b, e")
                ]
            tables[name] = sorted(rows)
    blobs = sorted(p.name for p in (Path(path) / "blobs").rglob("*") if p.is_file())
    return tables, blobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="a memory folder (opened read-only)")
    ap.add_argument("new", help="another memory folder (opened read-only)")
    ap.add_argument(
        "--ignore-times", action="store_true", help="drop every recorded time before comparing"
    )
    args = ap.parse_args(argv)
    drop = _APPLIED | (_TIMES if args.ignore_times else set())
    try:
        a, blobs_a = contents(args.old, drop)
        b, blobs_b = contents(args.new, drop)
    except KGAgentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tables = {
        t: {"old": len(a.get(t, [])), "new": len(b.get(t, [])), "same": a.get(t) == b.get(t)}
        for t in sorted(set(a) | set(b))
    }
    out = {
        "tables": tables,
        "blobs": {"old": len(blobs_a), "new": len(blobs_b), "same": blobs_a == blobs_b},
    }
    out["same"] = all(v["same"] for v in tables.values()) and out["blobs"]["same"]
    print(json.dumps(out, indent=1))
    return 0 if out["same"] else 1


if __name__ == "__main__":
    sys.exit(main())
