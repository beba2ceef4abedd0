"""``kgagent bench --merge``: one memory per group of cells, from all their memories.

Cells that differ only by seed and series (one experiment, environment, method and
judge) learned the same thing from different games; their memories are merged with
:func:`kgagent.memory.merge.merge_memories` (docs/memory.md, "Merging memories")
into ``merged/<experiment>.<env>.<method>.<judge>/`` of the results. The sources
are the cells' memory folders, or the archives Ray cells returned. A merged memory
is built anew on every run of the grid, so it holds exactly the finished cells.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kgagent.bench.cell import ARCHIVE_FILE, MEMORY_DIR
from kgagent.bench.spec_types import Cell


def merge_groups(
    cells: list[tuple[Cell, Path]], out: Path, say: Any = None
) -> list[dict[str, Any]]:
    """Merge the memories of each group of finished ``cells``; one summary row per group."""
    from kgagent.memory.merge import merge_memories

    groups: dict[str, list[tuple[Cell, Path]]] = {}
    for cell, folder in cells:
        if cell.baseline is None:
            key = cell.key.rsplit(".seed", 1)[0]
            groups.setdefault(key, []).append((cell, folder))
    rows: list[dict[str, Any]] = []
    for key, members in sorted(groups.items()):
        sources = [_memory(folder) for _, folder in members]
        sources = [s for s in sources if s is not None]
        if not sources:
            continue
        dest = out / "merged" / key
        if dest.exists():
            shutil.rmtree(dest)
        summary = merge_memories(sources, dest, members[0][0].config(0), progress=say)
        rows.append(
            {
                "group": key,
                "memory": str(dest.relative_to(out)),
                "sources": len(sources),
                **{k: v for k, v in summary.items() if isinstance(v, int | float | bool)},
            }
        )
    return rows


def _memory(folder: Path) -> Path | None:
    if (folder / MEMORY_DIR).is_dir():
        return folder / MEMORY_DIR
    if (folder / ARCHIVE_FILE).is_file():
        return folder / ARCHIVE_FILE
    return None
