"""Blobs that no graph row names: counted by ``memory check``, removed by ``--repair``.

A blob (a state's thumbnail, an object's crop) loses its last reference when the row that
named it is deleted (``kgagent query --write "… DETACH DELETE o"``, ``kgagent memory
forget``), and a blob is named by no row at all when the transaction that was to name it
failed or its writer was killed in between: a writer stores the blob *before* that
transaction commits (:mod:`~kgagent.memory.states`, :mod:`~kgagent.memory.objects`).
Kept, such a blob would stay on disk for ever, and go into every export, with whatever
its pixels show.

Removing one is safe only where no writer is between those two steps. A writer holds
the memory's lock (:mod:`~kgagent.memory.lock`) from its read-write open to its close,
so :func:`remove_unreferenced` runs only on a memory open read-write, whose lock its own
process holds: then every blob is named by a committed row or by nobody who can still
commit. It lists the blobs before it reads the references, so that even a blob stored
and committed between the two would count as named. Each blob goes by one ``unlink``:
a process killed in the middle leaves the others for the next repair, and never a row
without its blob.
"""

from __future__ import annotations

import re
from typing import Any

from kgagent.errors import MemoryStoreError

#: a blob's name: the SHA-256 of its bytes (a file of another name in ``blobs/`` is not
#: kgagent's, and stays)
BLOB_ID = re.compile(r"[0-9a-f]{64}")


def blob_refs(mem: Any) -> set[str]:
    """Every blob id a committed graph row names (``check_blob_refs``)."""
    return {r["blob"] for r in mem.run_named("check_blob_refs")}


def unreferenced(mem: Any) -> list[str]:
    """The blobs of ``mem`` that no graph row names, listed before the references are read."""
    have = [b for b in mem.blobs.all_ids() if BLOB_ID.fullmatch(b)]
    refs = blob_refs(mem)
    return [b for b in have if b not in refs]


def blob_bytes(mem: Any, ids: list[str]) -> int:
    """The apparent size of the blobs ``ids`` (one removed meanwhile counts nothing)."""
    total = 0
    for b in ids:
        try:
            total += mem.blobs.path(b).stat().st_size
        except OSError:
            continue
    return total


def remove_unreferenced(mem: Any) -> tuple[int, int]:
    """Remove the blobs no graph row names from ``mem``, open read-write (its lock held);
    (blobs removed, their bytes)."""
    if mem.read_only:
        raise MemoryStoreError(
            "unreferenced blobs are removed only under the writer's lock: open the memory "
            "read-write"
        )
    ids = unreferenced(mem)
    size = blob_bytes(mem, ids)
    for b in ids:
        mem.blobs.path(b).unlink(missing_ok=True)
    return len(ids), size
