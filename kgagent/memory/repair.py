"""``kgagent memory check --repair``: bring a memory back to a state that opens.

In order:

1. finish (or undo) an import that a killed process left half swapped, and remove
   staging directories nobody owns (:func:`kgagent.memory.staging.recover`);
2. where a write-ahead log is left, open the graph read-only in a child process first
   (that replays the log in memory): a log damaged in the middle makes LadybugDB fail an
   assertion and Kùzu crash (a segmentation fault), which must not end the repair;
3. open the memory read-write once: that replays the graph engine's write-ahead log,
   cuts a torn vector-journal record and removes vector rows the graph never committed;
   then, still under that open's writer lock, remove the blobs no graph row names
   (:mod:`~kgagent.memory.unreferenced`);
4. if the log is damaged (step 2 failed, or the engine refuses the log: a disk that
   filled up in the middle of a write leaves a torn record), keep a copy of ``graph.db``
   and the log in ``backups/<time>-wal/``, then:

   * LadybugDB: replay the log *up to* the damage (``throw_on_wal_replay_failure =
     False``), in a child process, because at some byte offsets the engine crashes
     reading a damaged log. Transactions after the damage are lost; those before it
     are kept.
   * where that fails, and on Kùzu (which has no such replay; it already replays up
     to a damaged record without a word where it does not crash): put the graph back
     from the copy, remove the log (its copy stays in the backup) and check, in a child,
     that the graph opens without it: the memory is at its last checkpoint, and the
     writes after that checkpoint are lost (they are in the kept log only). The vector
     rows of the lost states are removed by the read-write open that follows.

What cannot be repaired (a graph that opens neither with its log nor without it) is
said in one line, and the memory is put back as it was (the copy stays in the backup).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import staging
from kgagent.memory.diskspace import free_bytes, mib, reserve_bytes
from kgagent.memory.engine import GraphDB, engine_name
from kgagent.memory.files import MANIFEST, read_manifest
from kgagent.memory.lifecycle import GRAPH
from kgagent.memory.lock import lock_memory
from kgagent.memory.unreferenced import remove_unreferenced

#: Seconds a child process may spend opening or replaying a damaged log.
REPLAY_TIMEOUT_S = 600

_CHILD = (
    "import sys; from pathlib import Path; from kgagent.memory.repair import replay_leniently; "
    "replay_leniently(Path(sys.argv[1]), sys.argv[2])"
)
_PROBE = (
    "import sys; from pathlib import Path; from kgagent.memory.repair import probe; "
    "probe(Path(sys.argv[1]), sys.argv[2])"
)


def repair(path: Path, config: Config, say: Callable[[str], None]) -> None:
    """Repair what can be repaired at ``path`` (see the module doc); one line per step."""
    from kgagent.memory.store import Memory

    for line in staging.recover(path):
        say(line)
    engine = engine_name(config.memory.engine)
    wal = path / (GRAPH + ".wal")
    why = None
    manifest = read_manifest(path)
    if manifest and manifest.get("engine", "kuzu") == engine and _size(wal):
        # Replay the log read-only in a child first: a log damaged in the middle makes
        # either engine fail (an assertion) or crash (a segmentation fault) on open.
        why = _run_child(_PROBE, path / GRAPH, engine)
        if why is not None and ("in use by another process" in why or "unfinished" in why):
            why = None  # not the log: the open below says what to do
    if why is None:
        try:
            mem = Memory.open(path, config, read_only=False, create=False)
        except MemoryStoreError as e:
            if "write-ahead log" not in str(e) or "damaged" not in str(e):
                raise
            why = str(e)
        else:
            _remove_unreferenced(mem, say)
            return
    held = lock_memory(path)
    try:
        _repair_log(path, engine, why, reserve_bytes(config), say)
    finally:
        held.release()
    _remove_unreferenced(Memory.open(path, config, read_only=False, create=False), say)


def _remove_unreferenced(mem: Any, say: Callable[[str], None]) -> None:
    """Remove the blobs no graph row names from ``mem`` (open read-write: its lock held,
    so no writer has stored a blob it has yet to commit), then close it."""
    try:
        count, size = remove_unreferenced(mem)
    finally:
        mem.close()
    if count:
        say(f"removed {count} blob(s) no graph row names ({size} bytes)")


def _repair_log(
    path: Path, engine: str, why: str, reserve: int, say: Callable[[str], None]
) -> None:
    """Keep a copy, then replay the log up to its damage (LadybugDB), else set the log
    aside and open the graph at its last checkpoint; the memory as it was if neither opens."""
    wal = path / (GRAPH + ".wal")
    backup = _keep_copy(path, reserve)
    say(f"the graph engine's log is damaged; a copy of the graph and its log is in {backup}")
    if engine == "ladybug":
        failed = _run_child(_CHILD, path / GRAPH, engine)
        if failed is None:
            say("replayed the log up to its damaged record; the transactions after it are lost")
            return
        why = failed
        _put_back(backup, path)  # a replay cut short may have written the graph
    kept = backup / (GRAPH + ".wal")
    if not kept.is_file() or kept.stat().st_size != _size(wal):
        raise MemoryStoreError(
            f"the graph engine cannot replay the damaged log {wal} ({_short(why)}), and its copy "
            f"in {backup} is incomplete; the memory is as it was. Restore it from an export"
        )
    wal.unlink()
    failed = _run_child(_PROBE, path / GRAPH, engine)
    if failed is not None:
        _put_back(backup, path)
        raise MemoryStoreError(
            f"the graph database at {path / GRAPH} does not open with its log ({_short(why)}) "
            f"or without it ({_short(failed)}); the memory is as it was, a copy is in {backup}. "
            "Restore it from an export"
        )
    say(
        f"the {engine} engine cannot replay the damaged log ({_short(why)}): it is kept in "
        f"{kept} and the memory now opens at its last checkpoint; the writes after that "
        "checkpoint are lost"
    )


def replay_leniently(graph: Path, engine: str) -> None:
    """Open the database replaying its log up to the damage, then close it (a checkpoint)."""
    GraphDB(graph, engine, lenient_wal=True).close()


def probe(graph: Path, engine: str) -> None:
    """Open the database read-only (which replays its log in memory) and close it; a
    refusal is the last line on stderr and exit status 1."""
    try:
        GraphDB(graph, engine, read_only=True).close()
    except MemoryStoreError as e:
        print(e, file=sys.stderr)
        sys.exit(1)


def _run_child(code: str, graph: Path, engine: str) -> str | None:
    """Run ``code`` on ``graph`` in a child process: None when it succeeded, else why not."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(graph), engine],
            capture_output=True,
            text=True,
            timeout=REPLAY_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"it did not finish in {REPLAY_TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    if proc.returncode < 0:
        return f"the engine crashed reading it, signal {-proc.returncode}"
    return (proc.stderr.strip().splitlines() or ["it failed"])[-1]


def _short(why: str) -> str:
    """An engine's reason without the path this line names anyway."""
    return why.split(": ", 1)[1] if why.startswith("cannot open the graph database at ") else why


def _size(f: Path) -> int:
    return f.stat().st_size if f.is_file() else 0


def _put_back(backup: Path, path: Path) -> None:
    """The graph and its log as they were before the repair, from its copy."""
    for name in (GRAPH, GRAPH + ".wal", GRAPH + ".shadow"):
        if (backup / name).is_file():
            shutil.copy2(backup / name, path / name)
        elif name != GRAPH:  # left by the replay cut short (a checkpoint's shadow pages)
            (path / name).unlink(missing_ok=True)


def _keep_copy(path: Path, reserve: int) -> Path:
    """A copy of the graph, its log and the manifest in ``backups/``, made only where the
    disk holds it, the replay's growth of the graph (about the log's size) and ``reserve``;
    a copy cut short is removed."""
    names = (GRAPH, GRAPH + ".wal", GRAPH + ".shadow", MANIFEST)
    files = [path / n for n in names if (path / n).is_file()]
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
