"""One cell of a grid: its rounds in one memory, their figures, and the file that says it finished.

A cell's folder (``cells/<key>/`` in the results) holds::

    cell.json            written last: the cell, its digest, every round's figures
    round-<r>.json       one run's summary and figures (written as each round ends)
    runs/*.jsonl         the step logs, one per round
    memory/              the memory the rounds resumed (a Ray cell: memory.kgmem.tar.gz)
    notes.txt            what the runner said (notes, warnings), if anything
    error.txt            a failed cell's traceback (its first line is the error)

A cell is *finished* when ``cell.json`` exists and records the digest of the
cell as the grid now specifies it (:func:`finished`); anything else in the folder
is a cell that did not finish, and running it again starts it afresh (its rounds
resume one memory, so a half-played cell cannot be continued). A run stopped by
Ctrl-C, SIGTERM or SIGHUP is not a finished round: the cell is *interrupted* (``error.txt``'s
first line says ``interrupted: …``) and will be run again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

from kgagent.bench.figures import run_figures
from kgagent.bench.spec_types import Cell
from kgagent.errors import KGAgentError

CELL_FILE = "cell.json"
ERROR_FILE = "error.txt"
MEMORY_DIR = "memory"
ARCHIVE_FILE = "memory.kgmem.tar.gz"


#: The first words of an interrupted cell's error line (:func:`unfinished_state`).
INTERRUPTED = "interrupted: "


class CellInterrupted(KGAgentError):
    """A round of the cell was interrupted (Ctrl-C, SIGTERM): the cell did not finish."""


def finished(cell_dir: Path, digest: str) -> dict[str, Any] | None:
    """The finished cell's record, or None (absent, unreadable, or of another spec)."""
    try:
        record = json.loads((cell_dir / CELL_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("digest") != digest:
        return None
    return record


def unfinished_state(cell_dir: Path) -> tuple[str, str] | None:
    """(``failed`` or ``interrupted``, the error line) of a cell that wrote ``error.txt``;
    None when it wrote none (never run, or stopped before it could)."""
    try:
        lines = (cell_dir / ERROR_FILE).read_text().splitlines()
    except OSError:
        return None
    line = lines[0] if lines else ""
    return ("interrupted" if line.startswith(INTERRUPTED) else "failed"), line


def cell_state(cell_dir: Path, digest: str) -> tuple[str, str]:
    """(state, what is known of it) of a cell in the results, as ``--list`` shows it:
    ``finished``; ``failed`` or ``interrupted`` with its error line; ``changed`` (it
    finished for another spec, and runs again); ``to run`` (never run, or stopped before
    it could record why)."""
    if finished(cell_dir, digest) is not None:
        return "finished", ""
    state = unfinished_state(cell_dir)
    if state is not None:
        return state
    if (cell_dir / CELL_FILE).is_file():
        return "changed", "finished for another spec of the cell (steps, seeds, overrides)"
    return "to run", ""


def steps_played(cell_dir: Path) -> int:
    """The steps in the step logs of a cell's folder (an unfinished cell: how far it got)."""
    from kgagent.bench.figures import read_lines

    n = 0
    for log in sorted((cell_dir / "runs").glob("*.jsonl")):
        try:
            n += sum(d.get("type") == "step" for d in read_lines(log))
        except (OSError, ValueError):
            continue
    return n


def error_line(e: BaseException) -> str:
    """``Kind: message`` on one line (``EnvironmentError_`` is named ``EnvironmentError``)."""
    return " ".join(f"{type(e).__name__.rstrip('_')}: {e}".split())


def run_cell(cell_data: dict[str, Any], cell_dir: str | Path) -> dict[str, Any]:
    """Play every round of the cell in ``cell_dir``; never raises for the cell's own errors.

    Returns the outcome: ``status`` ``done`` (with the runs' figures), ``failed`` or
    ``interrupted`` (with ``error``, one line; the traceback is in ``error.txt``).
    """
    cell = Cell.from_dict(cell_data)
    folder = Path(cell_dir)
    t0 = time.perf_counter()
    notes: list[str] = []
    try:
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished cell: its memory may be half a round on
        folder.mkdir(parents=True)
        runs = [_round(cell, r, folder, notes) for r in range(cell.rounds)]
        _table2(runs, folder)
        record = {
            "digest": cell.digest,
            "key": cell.key,
            "cell": cell.shown(),
            "runs": runs,
            "duration_s": time.perf_counter() - t0,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        _write_json(folder / CELL_FILE, record)
        return {"key": cell.key, "status": "done", "record": record}
    except BaseException as e:  # noqa: BLE001 - a cell's failure is recorded, the grid goes on
        status, line = _failure(e)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ERROR_FILE).write_text(line + "\n\n" + traceback.format_exc())
        except OSError:
            pass
        return {"key": cell.key, "status": status, "error": line}
    finally:
        if notes:
            try:
                (folder / "notes.txt").write_text("\n".join(notes) + "\n")
            except OSError:
                pass


def _failure(e: BaseException) -> tuple[str, str]:
    """(status, error line) of a cell that raised ``e``."""
    if isinstance(e, KeyboardInterrupt):
        e = CellInterrupted("stopped by Ctrl-C, SIGTERM or SIGHUP")
    if isinstance(e, CellInterrupted):
        return "interrupted", INTERRUPTED + " ".join(str(e).split())
    return "failed", error_line(e)


def _round(cell: Cell, r: int, folder: Path, notes: list[str]) -> dict[str, Any]:
    """Round ``r``: one run on the cell's memory; writes ``round-<r>.json``."""
    runs = folder / "runs"
    cfg = cell.config(r, [f"run.log_dir={runs}"])
    if cell.baseline == "random_keys":
        from kgagent.bench.baselines import run_random_keys

        summary = run_random_keys(cfg, cell.steps, runs)
    else:
        from kgagent.agent.runner import Runner

        runner = Runner(cfg, memory_path=folder / MEMORY_DIR, progress=False, log=notes.append)
        summary = runner.run(cell.steps)
    if summary.stopped == "interrupted":
        raise CellInterrupted(f"round {r} stopped after {summary.steps} of {cell.steps} steps")
    s = summary.to_dict()
    log = Path(s["log_path"]) if s.get("log_path") else None
    run = {
        "experiment": cell.experiment,
        "env": cell.env,
        "method": cell.method,
        "judge": cell.judge,
        "seed": cell.seed,
        "series": cell.series,
        "round": r,
        "run_seed": cell.run_seeds[r],
        "log": f"runs/{log.name}" if log else None,
        "summary": s,
        "figures": run_figures(s, log),
    }
    _write_json(folder / f"round-{r}.json", run)
    return run


#: Per-round Table 2 columns (kgagent.rounds) added to each run's figures: what the round
#: itself added and pruned, and how much the graph grew over it (the summary's are totals).
TABLE2_ROUND = {
    "skills_augmented": "round_skills_augmented",
    "skills_pruned": "round_skills_pruned",
    "nodes_added": "nodes_added",
    "skill_edges_added": "skill_edges_added",
    "similarity_edges_added": "similarity_edges_added",
}


def _table2(runs: list[dict[str, Any]], folder: Path) -> None:
    """Add the rounds' own Table 2 figures (from their step logs, in order) to ``runs``."""
    from kgagent.rounds import compute_rounds

    if any(not r["log"] for r in runs):
        return
    for run, rnd in zip(runs, compute_rounds([folder / r["log"] for r in runs])):
        for src, name in TABLE2_ROUND.items():
            value = getattr(rnd, src)
            if value is not None:
                run["figures"][name] = value
        _write_json(folder / f"round-{run['round']}.json", run)


def _write_json(path: Path, data: Any) -> None:
    """Write whole or not at all: a killed writer leaves no half file for :func:`finished`."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
