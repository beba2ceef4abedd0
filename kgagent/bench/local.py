"""Cells in local worker processes (``--jobs N``): N at a time, each in a fresh process.

Workers are spawned (not forked), so a cell starts from a clean interpreter as
``kgagent play`` does. At most ``jobs`` cells are handed out at once, so "running"
on the bar is exact. A worker that dies (killed, out of memory) fails its cell
with one line and the pool is started again for the cells that remain.

Stopping. Ctrl-C, SIGTERM or SIGHUP to ``kgagent bench`` reaches the parent as
KeyboardInterrupt (:func:`kgagent.bench.grid.run_grid` turns SIGTERM and SIGHUP into one); the
parent sends SIGTERM to its workers, each running cell finishes its current step and
records itself as interrupted (it will run again), and the parent writes the results of
the cells that finished. A second Ctrl-C or SIGTERM ends the running cells now, for a
step that never ends: the workers get SIGINT (the runner abandons the step, writes its
summary and closes the memory), and those still running :data:`ABORT_GRACE_S` later are
killed, their cells recorded as interrupted by the parent. A worker takes SIGTERM (and
Ctrl-C, and the SIGHUP of a closed terminal) as one interruption of the cell it runs, or
ignores it between cells. A worker
whose parent dies without that (SIGKILL) sends itself SIGTERM within a second: stopping
``kgagent bench`` stops its cells, instead of leaving them to run to their end unseen.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from kgagent.bench.cell import ERROR_FILE, INTERRUPTED, run_cell, unfinished_state
from kgagent.bench.progress import GridProgress
from kgagent.bench.spec_types import Cell


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
            _stop_cells(inflight, progress)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return outcomes


#: After a second stop signal: the seconds a running cell has to abandon its step before
#: its worker is killed.
ABORT_GRACE_S = 5.0


def _stop_cells(inflight: dict[Future, tuple[Cell, Path]], progress: GridProgress) -> None:
    """In the parent, at the first stop signal: the running cells finish their current step
    (SIGTERM to the workers); a second signal while they do ends them now (:func:`_end_cells`)."""
    if inflight:
        progress.write(
            f"stopping: {len(inflight)} running cell(s) finish their current step "
            "and are recorded as interrupted (stop again to end them now)"
        )
    _signal_workers(signal.SIGTERM)
    try:
        _gather(inflight, progress)
    except KeyboardInterrupt:
        _end_cells(inflight, progress)


def _end_cells(inflight: dict[Future, tuple[Cell, Path]], progress: GridProgress) -> None:
    """In the parent, at a second stop signal: SIGINT to the workers (the runner abandons
    the step at once where Python can), then SIGKILL to those whose cells have not ended
    :data:`ABORT_GRACE_S` later (a step stuck in native code); their cells are recorded
    here as interrupted. Further signals are ignored meanwhile: this ends in seconds."""
    with _signals_ignored():
        if inflight:
            progress.write(f"ending {len(inflight)} running cell(s) now")
        _signal_workers(signal.SIGINT)
        _gather(inflight, progress, timeout=ABORT_GRACE_S, killing=True)
        if inflight:
            _signal_workers(signal.SIGKILL)
        for cell, folder in inflight.values():
            progress.finish(_killed(cell, folder))
        inflight.clear()


def _gather(
    inflight: dict[Future, tuple[Cell, Path]],
    progress: GridProgress,
    timeout: float | None = None,
    killing: bool = False,
) -> None:
    """Wait for the running cells (at most ``timeout`` seconds), counting each that ends;
    those that ended leave ``inflight``. A lost worker fails its cell, or, ``killing``,
    interrupts it."""
    done, _ = wait(inflight, timeout=timeout)
    for fut in done:
        cell, folder = inflight.pop(fut)
        e = fut.exception()
        if e is None:
            progress.finish(fut.result())
        else:
            progress.finish(_killed(cell, folder) if killing else _lost(cell, folder, e))


def _signal_workers(signum: int) -> None:
    """In the parent: send ``signum`` to every worker of the pool."""
    for child in multiprocessing.active_children():  # the pool's workers: nothing else here
        try:
            os.kill(child.pid, signum)
        except (OSError, TypeError):  # gone already, or never started
            pass


@contextmanager
def _signals_ignored() -> Iterator[None]:
    """In the parent's main thread: Ctrl-C and SIGTERM ignored for the duration."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _killed(cell: Cell, folder: Path) -> dict[str, Any]:
    """A cell whose worker was killed to stop it: interrupted, as its error.txt says (the
    cell's own line when it wrote one before it was killed)."""
    state = unfinished_state(folder)
    if state is not None and state[0] == "interrupted":
        return {"key": cell.key, "status": "interrupted", "error": state[1]}
    line = (
        INTERRUPTED
        + f"killed after a second stop signal (its step did not end in {ABORT_GRACE_S:g} s)"
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ERROR_FILE).write_text(line + "\n")
    except OSError:
        pass
    return {"key": cell.key, "status": "interrupted", "error": line}


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
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
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
