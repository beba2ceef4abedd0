"""Cells in local worker processes (``--jobs N``): N at a time, each in a fresh process.

Workers are spawned (not forked), so a cell starts from a clean interpreter as
``kgagent play`` does. At most ``jobs`` cells are handed out at once, so "running"
on the bar is exact. A worker that dies (killed, out of memory) fails its cell
with one line and the pool is started again for the cells that remain.

A worker whose parent dies (the grid killed by SIGTERM or SIGKILL, which no ``finally``
sees) sends itself SIGTERM within a second: stopping ``kgagent bench`` stops its cells,
instead of leaving them to run to their end unseen.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from kgagent.bench.cell import ERROR_FILE, run_cell
from kgagent.bench.progress import GridProgress
from kgagent.bench.spec import Cell


def run_local(
    tasks: list[tuple[Cell, Path]], jobs: int, progress: GridProgress
) -> list[dict[str, Any]]:
    """Run ``tasks`` (cell, folder) in ``jobs`` processes; returns every cell's outcome."""
    pending = deque(tasks)
    outcomes: list[dict[str, Any]] = []
    ctx = get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(
            max_workers=max(1, jobs),
            mp_context=ctx,
            initializer=_follow_parent,
            initargs=(os.getpid(),),
        )
        inflight: dict[Future, tuple[Cell, Path]] = {}
        broken = False
        try:
            while (pending or inflight) and not broken:
                while pending and len(inflight) < jobs:
                    cell, folder = pending.popleft()
                    inflight[pool.submit(run_cell, cell.to_dict(), str(folder))] = (cell, folder)
                    progress.start(cell.key)
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    cell, folder = inflight.pop(fut)
                    try:
                        out = fut.result()
                    except BrokenProcessPool as e:
                        broken = True
                        out = _lost(cell, folder, e)
                    outcomes.append(out)
                    progress.finish(out)
            for fut, (cell, folder) in inflight.items():  # the rest of a broken pool's cells
                out = _lost(cell, folder, fut.exception() or RuntimeError("worker lost"))
                outcomes.append(out)
                progress.finish(out)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return outcomes


PARENT_POLL_S = 1.0


def _follow_parent(parent: int) -> None:
    """In a worker: end this process soon after ``parent`` is gone (re-parented)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)  # the cell's own handlers may clean up
        time.sleep(10 * PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="kgagent-follow-parent", daemon=True).start()


def _lost(cell: Cell, folder: Path, e: BaseException) -> dict[str, Any]:
    """A cell whose worker process died: recorded like any failed cell."""
    line = " ".join(f"worker process died: {type(e).__name__}: {e}".split())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        (folder / ERROR_FILE).write_text(line + "\n\n" + text)
    except OSError:
        pass
    return {"key": cell.key, "status": "failed", "error": line}
