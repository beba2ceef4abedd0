"""Cells on a Ray cluster (``--ray auto`` or ``--ray ADDRESS``): one task per cell.

Ray schedules the tasks (one CPU each by default); a task runs the cell in a
temporary folder on its node and returns the cell's files: its records, step logs
and error file, and its memory as an archive (``kgagent memory export``), since a
cluster's nodes share no folder with the machine that runs ``kgagent bench``. The
files are written into the results folder here, ``cell.json`` last, so a cell is
finished here only when all of it arrived.

``--ray auto`` calls ``ray.init()``: it joins the cluster ``$RAY_ADDRESS`` names or
one started on this machine by ``ray start``, and otherwise starts a local one
for the grid. ``--ray ADDRESS`` joins that cluster (``ray://HOST:10001`` through
Ray Client, or ``HOST:6379`` from a node of the cluster). The workers must be
able to import kgagent: the same environment on every node, or a
``runtime_env`` (docs/bench.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

from kgagent.bench.cell import ARCHIVE_FILE, CELL_FILE, ERROR_FILE, MEMORY_DIR, run_cell
from kgagent.bench.progress import GridProgress
from kgagent.bench.spec_types import Cell
from kgagent.errors import KGAgentError


class RayUnavailable(KGAgentError):
    """Ray is not installed, or the cluster cannot be reached."""


def cell_task(cell_data: dict[str, Any]) -> dict[str, Any]:
    """Run one cell on a Ray worker; returns its outcome and its files (path → bytes)."""
    tmp = Path(tempfile.mkdtemp(prefix="kgagent-bench-"))
    try:
        folder = tmp / "cell"
        outcome = run_cell(cell_data, folder)
        memory = folder / MEMORY_DIR
        if outcome["status"] == "done" and memory.is_dir():
            from kgagent.memory.archive import export_memory

            cell = Cell.from_dict(cell_data)
            export_memory(memory, folder / ARCHIVE_FILE, cell.config(0))
        if memory.is_dir():
            shutil.rmtree(memory)
        files = {
            str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()
        }
        outcome.pop("record", None)  # cell.json travels among the files
        outcome["node"] = os.uname().nodename
        return {"outcome": outcome, "files": files}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_ray(
    tasks: list[tuple[Cell, Path]],
    address: str,
    progress: GridProgress,
    *,
    runtime_env: dict[str, Any] | None = None,
    cpus_per_cell: float = 1.0,
) -> list[dict[str, Any]]:
    """Submit every cell as a Ray task and gather them as they finish."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "--ray needs the ray package: pip install 'ray[default]' (or kgagent[bench])"
        ) from None
    started_here = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"runtime_env": runtime_env} if runtime_env else {}
        if address != "auto":
            kwargs["address"] = address
        # ray.init puts in its own SIGTERM handler (exit at once): the grid's, which stops
        # the cells and writes the results, is put back.
        on_term = signal.getsignal(signal.SIGTERM)
        try:
            ray.init(log_to_driver=False, **kwargs)
        except Exception as e:  # noqa: BLE001 - Ray raises many kinds; one line for the user
            raise RayUnavailable(
                f"cannot start or join a Ray cluster ({address}): {' '.join(str(e).split())}"
            ) from None
        started_here = True
        if on_term is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
    refs: dict[Any, tuple[Cell, Path]] = {}
    try:
        remote = ray.remote(num_cpus=cpus_per_cell, max_retries=0)(cell_task)
        refs = {remote.remote(cell.to_dict()): (cell, folder) for cell, folder in tasks}
        progress.start("", len(refs))
        outcomes: list[dict[str, Any]] = []
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=5.0)
            for ref in ready:
                cell, folder = refs.pop(ref)
                try:
                    out = _unpack(ray.get(ref), folder)
                except Exception as e:  # noqa: BLE001 - a lost task or worker fails its cell
                    out = _failed(cell, folder, e)
                outcomes.append(out)
                progress.finish(out)
        return outcomes
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a cluster that stays up must not go on
        for ref in refs:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - finished or lost meanwhile
                pass
        raise
    finally:
        if started_here:
            ray.shutdown()


def _unpack(result: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Write a task's files into the cell's folder (``cell.json`` last); its outcome."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files: dict[str, bytes] = result["files"]
    for rel, data in sorted(files.items(), key=lambda kv: kv[0] == CELL_FILE):
        path = (folder / rel).resolve()
        if folder.resolve() not in path.parents:
            raise RayUnavailable(f"a task returned a file outside its cell folder: {rel}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return result["outcome"]


def _failed(cell: Cell, folder: Path, e: BaseException) -> dict[str, Any]:
    line = " ".join(f"Ray task failed: {type(e).__name__}: {e}".split())
    first = line.splitlines()[0] if line else "Ray task failed"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ERROR_FILE).write_text(first[:500] + "\n\n" + str(e))
    except OSError:
        pass
    return {"key": cell.key, "status": "failed", "error": first[:500]}
