"""Cells in local worker processes (``--jobs N``): N at a time, each in a fresh process.

Workers are spawned (not forked), so a cell starts from a clean interpreter as
``kgagent play`` does. At most ``jobs`` cells are handed out at once, so "running"
on the bar is exact. A worker that dies (killed, out of memory) fails its cell
with one line and the pool is started again for the cells that remain.

Stopping. Ctrl-C or SIGTERM to ``kgagent bench`` reaches the parent as
KeyboardInterrupt (:func:`kgagent.bench.grid.run_grid` turns SIGTERM into one); the
parent sends SIGTERM to its workers, each running cell finishes its current step and
records itself as interrupted (it will run again), and the parent writes the results of
the cells that finished. A worker takes SIGTERM (and Ctrl-C) as one interruption of the
cell it runs, or ignores it between cells. A worker whose parent dies without that
(SIGKILL) sends itself SIGTERM within a second: stopping ``kgagent bench`` stops its
cells, instead of leaving them to run to their end unseen.
"""

from __future__ import annotations

import multiprocessing
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


def spawn_pool(jobs: int, **kwargs: Any) -> ProcessPoolExecutor:
    """A pool of ``jobs`` (at least 1) spawned worker processes.

    Spawned, not forked: a fork copies a process whose memory engines and ONNX Runtime
    have started threads, and a forked worker can die or hang on a lock one of them
    held. The benchmark scripts use it too; what they submit must be importable (a
    function at the top of the script, which runs under ``if __name__ == "__main__"``).
    """
    return ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn"), **kwargs)


def run_local(
    tasks: list[tuple[Cell, Path]], jobs: int, progress: GridProgress
) -> list[dict[str, Any]]:
    """Run ``tasks`` (cell, folder) in ``jobs`` processes; returns every cell's outcome."""
    pending = deque(tasks)
    outcomes: list[dict[str, Any]] = []
    while pending:
        pool = spawn_pool(jobs, initializer=_follow_parent, initargs=(os.getpid(),))
        inflight: dict[Future, tuple[Cell, Path]] = {}
        broken = False
        try:
            while (pending or inflight) and not broken:
                while pending and len(inflight) < jobs:
                    cell, folder = pending.popleft()
                    fut = pool.submit(_run_in_worker, cell.to_dict(), str(folder))
                    inflight[fut] = (cell, folder)
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
        except KeyboardInterrupt:
            _interrupt_workers(progress, len(inflight))
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return outcomes


def _interrupt_workers(progress: GridProgress, running: int) -> None:
    """In the parent: ask every worker to stop its cell after the current step."""
    if running:
        progress.write(
            f"stopping: {running} running cell(s) finish their current step "
            "and are recorded as interrupted"
        )
    for child in multiprocessing.active_children():  # the pool's workers: nothing else here
        try:
            os.kill(child.pid, signal.SIGTERM)
        except (OSError, TypeError):  # gone already, or never started
            pass


PARENT_POLL_S = 1.0


_IN_CELL = False  # in a worker: a cell is running
_INTERRUPTED = False  # in a worker: that cell was interrupted already


def _run_in_worker(cell_data: dict[str, Any], folder: str) -> dict[str, Any]:
    """In a worker: one cell, interruptible (once) by SIGINT or SIGTERM."""
    global _IN_CELL, _INTERRUPTED
    _IN_CELL, _INTERRUPTED = True, False
    try:
        return run_cell(cell_data, folder)
    finally:
        _IN_CELL = False


def _on_signal(signum: int, frame: Any) -> None:
    """In a worker, outside the runner's own handlers: interrupt the running cell, once.

    The step loop of :class:`~kgagent.agent.runner.Runner` puts its own handlers in
    place while it runs, which finish the current step first; this one covers the rest
    of a cell (opening the memory, between rounds). Between cells a signal is ignored:
    the pool's shutdown ends the worker.
    """
    global _INTERRUPTED
    if _IN_CELL and not _INTERRUPTED:
        _INTERRUPTED = True
        raise KeyboardInterrupt


def _follow_parent(parent: int) -> None:
    """In a worker: take stop signals as interruptions of the cell, and end this process
    soon after ``parent`` is gone (re-parented)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # as ignored as the parent's, if so
            signal.signal(sig, _on_signal)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        if not _IN_CELL:
            os._exit(1)
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
