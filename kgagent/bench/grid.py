"""Run a grid: skip the finished cells, run the others here or on Ray, then write the results.

The order of work: the grid is read and checked (:mod:`~kgagent.bench.spec`); a
results folder that holds another grid's results is refused (:func:`check_folder`);
cells whose ``cell.json`` records their digest are skipped; the rest run, the
longest first (rounds × steps), on local worker processes or as Ray tasks; a failed
cell is recorded and the grid goes on; with ``merge`` each group's memories are
merged; and the results folder is written from every finished cell, those run
before included (with ``export``, also a copy without cells or plots, to commit).
Ctrl-C, SIGTERM or SIGHUP stops the grid after the running cells' current steps (a second one
ends them now); what finished is kept and written, and the next run resumes.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgagent.bench.cell import CELL_FILE, cell_state, finished, steps_played, unfinished_state
from kgagent.bench.meta import machine, versions
from kgagent.bench.progress import GridProgress
from kgagent.bench.results import collect, held_grid, kept_records, run_meta, write_results
from kgagent.bench.spec_types import Cell, Grid
from kgagent.brain.endpoint import Redactor
from kgagent.errors import ConfigError, KGAgentError
from kgagent.terminal import tell

if TYPE_CHECKING:
    from kgagent.memory.lock import HeldLock


class BenchError(KGAgentError):
    """Cells of a grid failed, or the grid was interrupted (the results are written)."""

    #: the command's exit code: 1, or the shell's code for the signal that stopped the grid
    exit_code = 1


class BenchInterrupted(BenchError):
    """Ctrl-C, SIGTERM or SIGHUP stopped the grid (the results so far are written); exits
    with the shell's code for the signal (130, 143, 129), as ``kgagent play`` does."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum


@dataclass
class BenchOptions:
    """How to run a grid (the command line's options)."""

    out: Path
    jobs: int = 1
    ray: str | None = None  # "auto" or a cluster address
    runtime_env: dict[str, Any] | None = None
    merge: bool = False
    fresh: bool = False  # run finished cells again
    report_only: bool = False  # write the results from finished cells, run nothing
    export: Path | None = None  # also write the kept results (no cells, no plots) here
    progress: bool = True
    plots: bool = True
    command: str = ""
    only: list[str] = field(default_factory=list)  # substrings of cell keys to run


#: The most cells run at once locally (``--jobs``). Each is a spawned interpreter of its
#: own with its memory engines and models (hundreds of MB): a few hundred at once is past
#: what one machine runs, and its workers' pipes near the default limit of 1024 open files;
#: a bound makes a mistyped count one line, not a pool that fails to start (a count past a
#: C int overflows multiprocessing's semaphore) or that swamps the machine.
MAX_JOBS = 256


def check_jobs(jobs: int) -> None:
    """Refuse a count of local processes outside 1 … :data:`MAX_JOBS` (0 would hand out no
    cell and wait for ever)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise ConfigError(f"jobs must be a whole number from 1 to {MAX_JOBS}, got {jobs!r}")


def default_folder(grid: Grid) -> Path:
    """The results folder of a grid without ``out``: ``bench-results/<name>``, relative to the
    current directory (a grid's ``out`` is relative to its file)."""
    return Path("bench-results") / grid.name


def results_folder(grid: Grid, out: Path | None = None) -> Path:
    """``out`` (``--out``), else the grid's ``out``, else :func:`default_folder`."""
    return out or grid.out or default_folder(grid)


def results_elsewhere(grid: Grid, out: Path) -> Path | None:
    """The default folder beside the grid file when it holds this grid's results and ``out``,
    the default folder of another directory, does not exist: the grid ran from there."""
    other = grid.path.parent / default_folder(grid)
    if out != default_folder(grid) or out.exists() or other.absolute() == out.absolute():
        return None
    return other if held_grid(other) == grid.name else None


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / "cells" / cell.key


def plan(grid: Grid, opts: BenchOptions) -> tuple[list[tuple[Cell, Path]], list[Cell]]:
    """(cells to run with their folders, longest first; cells already finished)."""
    todo: list[tuple[Cell, Path]] = []
    done: list[Cell] = []
    for cell in selected(grid, opts.only):
        folder = cell_dir(opts.out, cell)
        if not opts.fresh and finished(folder, cell.digest) is not None:
            done.append(cell)
        else:
            todo.append((cell, folder))
    todo.sort(key=lambda t: -(t[0].rounds * t[0].steps))
    return todo, done


def selected(grid: Grid, only: list[str]) -> list[Cell]:
    """The cells whose key holds one of ``only`` (``--only``), every cell without it.

    None is an error, not a run of nothing that exits 0: a typo in ``--only`` would
    otherwise look like a grid already finished. The error names what a key is made of."""
    cells = [c for c in grid.cells if not only or any(s in c.key for s in only)]
    if cells:
        return cells
    keys = [c.key.split(".") for c in grid.cells]
    parts = [", ".join(dict.fromkeys(k[i] for k in keys)) for i in range(4)]
    raise BenchError(
        f"--only {' '.join(map(repr, only))} matches no cell of grid {grid.name!r}: a cell's "
        f"name is EXPERIMENT.ENV.METHOD.JUDGE.seedK.seriesS, e.g. {grid.cells[0].key} "
        f"(experiments: {parts[0]}; envs: {parts[1]}; methods: {parts[2]}; judges: "
        f"{parts[3]}); --list (without --only) lists them"
    )


def cell_states(grid: Grid, opts: BenchOptions) -> list[dict[str, Any]]:
    """The cells ``opts`` selects and their state (``kgagent bench --list``), one row each:
    ``state`` is ``finished``, ``to run``, ``failed``, ``interrupted`` or ``changed``
    (:func:`~kgagent.bench.cell.cell_state`); an unfinished cell's ``played`` is the steps
    its step logs hold, ``note`` its error line."""
    todo, done = plan(grid, opts)
    waiting = {c.key for c, _ in todo}
    rows = []
    for c in grid.cells:
        if c.key not in waiting and c not in done:
            continue
        folder = cell_dir(opts.out, c)
        state, note = cell_state(folder, c.digest)
        if state == "finished" and c.key in waiting:  # --fresh
            state = "to run"
        unfinished = state in ("failed", "interrupted")
        rows.append(
            {
                "cell": c.key,
                "rounds": c.rounds,
                "steps": c.steps,
                "run_seeds": list(c.run_seeds),
                "state": state,
                "played": steps_played(folder) if unfinished else None,
                "note": note,
            }
        )
    return rows


def run_grid(grid: Grid, opts: BenchOptions) -> dict[str, Any]:
    """Run what is not finished, write the results folder; returns a summary of the command.

    Raises :class:`BenchError` (after writing the results) when a cell failed or the grid
    was interrupted, and before writing anything when a folder holds another grid's
    results or ``report_only`` finds no finished cell.
    """
    out = opts.out
    check_jobs(opts.jobs)
    check_folder(grid, out, "--out")
    if opts.export is not None:
        check_folder(grid, opts.export, "--export")
    todo, before = plan(grid, opts)
    t0 = time.time()
    outcomes: list[dict[str, Any]] = []
    stopped_by: int | None = None  # the signal that interrupted the grid
    if todo and not opts.report_only:
        other = results_elsewhere(grid, out)
        if other is not None and opts.progress:
            tell(
                f"note: {out.absolute()} does not exist, {other} holds this grid's results: "
                f"the grid starts afresh here (give --out {other} to resume there)"
            )
        out.mkdir(parents=True, exist_ok=True)
        held = _lock_results(out)
        try:
            outcomes, stopped_by = _run_cells(grid, opts, todo, len(before))
        finally:
            _unlock_results(held)
    wall = time.time() - t0
    records, rows, finished_cells = _gather(grid, out, outcomes)
    if opts.report_only and not records:
        raise BenchError(_nothing_to_report(grid, out))
    res = collect(grid, records)
    res.cells = rows
    if opts.merge and finished_cells:
        from kgagent.bench.merging import merge_groups

        res.merges = merge_groups(finished_cells, out)
    finished_now = 0 if opts.report_only else _finished_since(todo, t0)
    res.meta = _header(opts, out, wall, finished_now, len(records))
    files = write_results(res, out, plots=opts.plots)
    if opts.export is not None:
        meta = {k: v for k, v in res.meta.items() if k != "plots"}
        write_results(replace(res, meta=meta), opts.export, plots=False)
    summary = {
        "results": str(out),
        "report": str(files["report"]),
        "cells": len(grid.cells),
        "ran": len(outcomes),
        "finished_before": len(before),
        "failed": sum(r["status"] == "failed" for r in rows),
        "not_run": sum(r["status"] == "not run" for r in rows),
        "wall_min": round(wall / 60.0, 2),
    }
    if stopped_by is not None or any(o.get("status") == "interrupted" for o in outcomes):
        stopped = sum(r["status"] == "interrupted" for r in rows)
        raise BenchInterrupted(
            f"interrupted: {finished_now} cell(s) finished in this run, "
            f"{stopped} interrupted; results so far in {out}; "
            "run the same command again to resume",
            stopped_by or signal.SIGINT,
        )
    failed = [o for o in outcomes if o.get("status") == "failed"]
    if failed:
        first = failed[0]
        raise BenchError(
            f"{len(failed)} of {len(todo)} cell(s) failed (first: {first['key']}: "
            f"{first.get('error', '')}); the others' results are in {out}, tracebacks in "
            f"{out}/cells/<cell>/error.txt"
        )
    return summary


#: held by the command that runs cells into a results folder
LOCK_FILE = "bench.lock"


def _lock_results(out: Path) -> HeldLock:
    """The results folder's lock: two commands running cells into one folder would run
    the same cells at once and overwrite each other's records.

    An exclusive ``flock`` on ``bench.lock``, which the operating system drops when its
    process dies (a killed run's file is taken over as it is). Its holder removes the file
    as it ends (:func:`_unlock_results`), still holding the lock: a command that opened the
    file before then locks a file no longer in the folder, sees it, and locks the new one."""
    from kgagent.memory.lock import lock_holder, try_lock

    path = out / LOCK_FILE
    for _ in range(_LOCK_TRIES):
        held = try_lock(path)
        if held is None:
            raise BenchError(
                f"another kgagent bench{lock_holder(path)} is running cells into {out}: wait "
                "for it to finish (or stop it), or give another --out"
            )
        if _is_file_at(held.fd, path):
            break
        held.release()  # its holder ended and removed it meanwhile
    else:
        raise BenchError(f"cannot lock {path}: it keeps being replaced; try again")
    try:
        os.ftruncate(held.fd, 0)
        os.write(held.fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass
    return held


#: Files :func:`_lock_results` locks before one stays in the folder (each one removed by
#: a command that ended meanwhile).
_LOCK_TRIES = 20


def _is_file_at(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is the one at ``path`` (not removed nor replaced)."""
    try:
        there, mine = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _unlock_results(held: HeldLock) -> None:
    """Remove the lock file, then drop the lock: no ``bench.lock`` stays in the folder."""
    try:
        if _is_file_at(held.fd, held.path):
            held.path.unlink()
    except OSError:
        pass
    held.release()


def _header(
    opts: BenchOptions, out: Path, wall: float, finished_now: int, finished: int
) -> dict[str, Any]:
    """The report's header: the last command that finished cells in ``out``.

    A command that finished none (everything was finished, ``--report-only``, its cells
    failed or were interrupted) keeps the header already written, so that the command,
    date, wall time, machine and versions stay those of the command whose figures the
    report shows; ``ran_before`` counts the finished cells it did not run itself.
    """
    kept = run_meta(out)
    if not finished_now and kept:
        return kept
    # the command as written, less secrets: a URL's password, keys, Ray's env_vars values
    env_vars = (opts.runtime_env or {}).get("env_vars") or {}
    redact = Redactor(*(v for v in env_vars.values() if isinstance(v, str)))
    return {
        "command": redact(opts.command),
        "date": time.strftime("%Y-%m-%d"),
        "wall_min": wall / 60.0,
        "executor": f"ray ({opts.ray})" if opts.ray else f"local, {opts.jobs} process(es)",
        "ran_before": finished - finished_now,
        "machine": machine(),
        "versions": versions(),
    }


def check_folder(grid: Grid, folder: Path, option: str) -> None:
    """Refuse ``folder`` when it holds the results of a grid of another name.

    A grid is known by its name (``name``, by default its file's name): the same grid
    resumes, and grows (more seeds, methods, experiments; cells whose spec changed run
    again), in its folder; another grid would overwrite its cells and files.
    """
    held = held_grid(folder)
    if held is not None and held != grid.name:
        raise BenchError(
            f"{folder} holds the results of grid {held!r}, not {grid.name!r}: give {option} "
            f"another folder (or, if {grid.path} is that grid grown, keep its name: "
            f'name = "{held}")'
        )


def _run_cells(
    grid: Grid, opts: BenchOptions, todo: list[tuple[Cell, Path]], skipped: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Run ``todo`` here or on Ray: (the outcomes gathered, the signal that interrupted
    the grid: SIGINT for Ctrl-C; None when nothing did)."""
    progress = GridProgress(
        len(todo), skipped=skipped, label=f"bench {grid.name}", show=opts.progress
    )
    outcomes: list[dict[str, Any]] = []
    seen: list[int] = []  # the stop signals, in order
    try:
        with _stop_signals_interrupt(seen):
            if opts.ray:
                from kgagent.bench.ray_exec import run_ray

                outcomes = run_ray(todo, opts.ray, progress, runtime_env=opts.runtime_env)
            else:
                from kgagent.bench.local import run_local

                outcomes = run_local(todo, opts.jobs, progress)
    except KeyboardInterrupt:
        return outcomes, seen[0] if seen else signal.SIGINT
    finally:
        progress.close()
    return outcomes, seen[0] if seen else None


def _gather(
    grid: Grid, out: Path, outcomes: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[Cell, Path]]]:
    """(the finished cells' records, every cell's row of cells.csv, the finished cells
    that have their folder), from ``out`` and this run's ``outcomes``."""
    unfinished = {
        o["key"]: (o["status"], o.get("error", "")) for o in outcomes if o.get("status") != "done"
    }
    kept = kept_records(out)  # a kept folder (--export) has no cells/ but its runs
    records, rows, finished_cells = [], [], []
    for cell in grid.cells:
        folder = cell_dir(out, cell)
        rec = finished(folder, cell.digest)
        if rec is None and not folder.exists():
            rec = kept.get(cell.digest)
        if rec is not None:
            records.append(rec)
            if folder.exists():
                finished_cells.append((cell, folder))
            rows.append(_cell_row(cell, "done", "", rec.get("duration_s")))
            continue
        status, error = unfinished_state(folder) or unfinished.get(cell.key) or ("not run", "")
        rows.append(_cell_row(cell, status, error, None))
    return records, rows, finished_cells


def _nothing_to_report(grid: Grid, out: Path) -> str:
    if not out.is_dir():
        where = f"there is no results folder {out.absolute()}"
        if out == default_folder(grid):
            where += f" (the default, {out}, is relative to the current directory)"
        other = results_elsewhere(grid, out)
        if other is not None:
            return f"--report-only: {where}; {other} holds this grid's results: give --out {other}"
        return (
            f"--report-only: {where}; run the grid first (without --report-only), or give "
            "--out the folder that holds its results"
        )
    return (
        f"--report-only: {out} holds no finished cell of grid {grid.name!r}; run the grid "
        "first (without --report-only)"
    )


def _finished_since(todo: list[tuple[Cell, Path]], t0: float) -> int:
    """How many cells of ``todo`` finished since ``t0`` (their ``cell.json`` is as new),
    gathered or not: a cell may finish as the grid is interrupted."""
    n = 0
    for cell, folder in todo:
        try:
            new = (folder / CELL_FILE).stat().st_mtime >= t0
        except OSError:
            continue
        n += new and finished(folder, cell.digest) is not None
    return n


@contextmanager
def _stop_signals_interrupt(seen: list[int]) -> Iterator[None]:
    """While cells run: SIGTERM and SIGHUP (the terminal closed) interrupt as Ctrl-C does.
    The first lets the running cells finish their step; a second ends them now
    (:mod:`kgagent.bench.local`). A SIGHUP ignored when the command began (``nohup``)
    stays ignored. Each of these signals is appended to ``seen``; Ctrl-C is Python's own
    KeyboardInterrupt and appends nothing (an interrupt with ``seen`` empty is SIGINT)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_stop(signum: int, frame: Any) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if sig == signal.SIGHUP and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        old[sig] = signal.signal(sig, on_stop)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _cell_row(cell: Cell, status: str, error: str, duration: float | None) -> dict[str, Any]:
    return {
        "key": cell.key,
        "experiment": cell.experiment,
        "env": cell.env,
        "method": cell.method,
        "judge": cell.judge,
        "seed": cell.seed,
        "series": cell.series,
        "rounds": cell.rounds,
        "steps": cell.steps,
        "digest": cell.digest,
        "status": status,
        "error": error,
        "duration_s": None if duration is None else round(float(duration), 1),
    }
