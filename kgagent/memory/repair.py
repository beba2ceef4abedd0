"""``kgagent memory check --repair``: bring a memory back to a state that opens.

In order:

1. finish (or undo) an import that a killed process left half swapped, and remove
   staging directories nobody owns (:func:`kgagent.memory.staging.recover`);
2. open the memory read-write once: that replays the graph engine's write-ahead log,
   cuts a torn vector-journal record and removes vector rows the graph never committed;
3. if the engine refuses its log as damaged (a disk that filled up in the middle of a
   write leaves a torn record; LadybugDB then refuses the whole log), keep a copy of
   ``graph.db`` and the log in ``backups/<time>-wal/`` and replay the log *up to* the
   damage (LadybugDB's ``throw_on_wal_replay_failure = False``), in a child process,
   because at some byte offsets the engine crashes reading a torn log instead of
   refusing it. Transactions after the damage are lost; those before it are kept.
   Kùzu 0.11 already replays up to the first damaged record on every open, without
   a word, so a Kùzu memory never reaches this step.

What cannot be repaired is said in one line, and the memory is left as it was.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import staging
from kgagent.memory.diskspace import free_bytes, mib, reserve_bytes
from kgagent.memory.engine import GraphDB, engine_name
from kgagent.memory.files import MANIFEST
from kgagent.memory.lifecycle import GRAPH
from kgagent.memory.lock import lock_memory

#: Seconds the child process may spend replaying a damaged log.
REPLAY_TIMEOUT_S = 600

_CHILD = (
    "import sys; from pathlib import Path; from kgagent.memory.repair import replay_leniently; "
    "replay_leniently(Path(sys.argv[1]), sys.argv[2])"
)


def repair(path: Path, config: Config, say: Callable[[str], None]) -> None:
    """Repair what can be repaired at ``path`` (see the module doc); one line per step."""
    from kgagent.memory.store import Memory

    for line in staging.recover(path):
        say(line)
    try:
        Memory.open(path, config, read_only=False, create=False).close()
        return
    except MemoryStoreError as e:
        if "write-ahead log" not in str(e) or "damaged" not in str(e):
            raise
    engine = engine_name(config.memory.engine)
    held = lock_memory(path)
    try:
        backup = _keep_copy(path, reserve_bytes(config))
        say(f"the graph engine's log is damaged; a copy of it is in {backup}")
        if engine != "ladybug":
            raise MemoryStoreError(
                f"the {engine} engine cannot replay a damaged log in part; the memory is as it "
                f"was (a copy is in {backup}). Restore it from an export, or move "
                f"{path / GRAPH}.wal away to fall back to the last checkpoint (losing the steps "
                "after it)"
            )
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path / GRAPH), engine],
            capture_output=True,
            text=True,
            timeout=REPLAY_TIMEOUT_S,
        )
        if proc.returncode != 0:
            why = (
                f"it crashed (signal {-proc.returncode})"
                if proc.returncode < 0
                else (proc.stderr.strip().splitlines() or ["it failed"])[-1]
            )
            raise MemoryStoreError(
                f"the graph engine could not replay the damaged log ({why}); the memory is as "
                f"it was, a copy is in {backup}. Restore it from an export, or move "
                f"{path / GRAPH}.wal away to fall back to the last checkpoint (losing the "
                "steps after it)"
            )
        say("replayed the log up to its damaged record; the transactions after it are lost")
    finally:
        held.release()
    Memory.open(path, config, read_only=False, create=False).close()


def replay_leniently(graph: Path, engine: str) -> None:
    """Open the database replaying its log up to the damage, then close it (a checkpoint)."""
    GraphDB(graph, engine, lenient_wal=True).close()


def _keep_copy(path: Path, reserve: int) -> Path:
    """A copy of the graph, its log and the manifest in ``backups/``, made only where the
    disk holds it, the replay's growth of the graph (about the log's size) and ``reserve``;
    a copy cut short is removed."""
    files = [path / n for n in (GRAPH, GRAPH + ".wal", MANIFEST) if (path / n).is_file()]
    copy = sum(f.stat().st_size for f in files)
    wal = path / (GRAPH + ".wal")
    need = copy + (wal.stat().st_size if wal.is_file() else 0) + reserve
    free = free_bytes(path)
    if free < need:
        raise MemoryStoreError(
            f"repairing keeps a copy of the graph database and its damaged log ({mib(copy)}) "
            f"and replays the log, which needs {mib(need)} free on the file system of {path}; "
            f"{mib(free)} are free. Free some space, or copy the memory to a larger disk and "
            "repair it there; nothing was changed"
        )
    dest = path / "backups" / f"{time.strftime('%Y%m%d-%H%M%S')}-wal"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for src in files:
            shutil.copy2(src, dest / src.name)
    except OSError as e:
        shutil.rmtree(dest, ignore_errors=True)
        raise MemoryStoreError(
            f"could not keep a copy of the damaged log in {dest} ({e.strerror or e}); nothing "
            "was changed. Free some space, or copy the memory to a larger disk and repair it there"
        ) from None
    return dest
