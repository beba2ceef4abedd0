"""`kgagent runs`: the step logs that `kgagent play` wrote.

``runs list`` shows the logs in a memory's ``runs/`` folder, ``runs show LOG``
summarises one log (its summary line, or one rebuilt from the step lines when
the run was killed before writing it), and ``runs show`` without a log prints the
memory's rounds as the papers' Table 2 (:mod:`kgagent.rounds`). Reading is :mod:`kgagent.runlog`'s job.
"""

from __future__ import annotations

import math
import os
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from kgagent.config import Config
from kgagent.errors import ConfigError
from kgagent.paths import read_refused
from kgagent.rounds import NO_LOGS_WHY

from .common import NonEmptyPath, common_options
from .output import emit, emit_record


@click.group("runs")
def runs_group() -> None:
    """Step logs of past runs."""


def _summary_of(path: Path) -> dict[str, Any]:
    from kgagent.rounds import RUNNING, running_log
    from kgagent.runlog import executions_by_path, summarise
    from kgagent.runlog_read import brain_of_header, read_episodes, read_log

    if not path.exists():
        raise ConfigError(f"no step log at {path}")
    if not path.is_file():
        raise ConfigError(f"{path} is not a file; give a step log (.jsonl)")
    header, steps, summary = read_log(path)
    if summary is not None:
        d = {k: v for k, v in summary.items() if k != "type"}
        d.setdefault("executions_by_path", executions_by_path(steps))  # logs without it
        if d.get("target") is None and isinstance((header or {}).get("target"), str):
            d["target"] = header["target"]  # summaries written before they kept it
        return d
    h = header or {}
    truth = steps[-1].get("truth", {}) if steps else {}
    # no summary line: a run going on now (its memory's newest log, the writer's lock held)
    live = running_log(path.parent.parent) if path.parent.name == "runs" else None
    going_on = live is not None and live.resolve() == path.resolve()
    ends, episodes = read_episodes(path)
    rebuilt = summarise(
        steps,
        env=h.get("env", "?"),
        seed=int(h.get("seed", 0)),
        ablation=h.get("ablation", "?"),
        stats=None,  # the graph is counted in the summary line this run has not written
        truth=truth,
        stopped=RUNNING if going_on else "incomplete",
        duration_s=float(sum(s.get("duration_s", 0.0) for s in steps)),
        brain=brain_of_header(h),
        ends=ends,
        episodes=episodes,
    )
    rebuilt.log_path = str(path)
    rebuilt.target = h.get("target") if isinstance(h.get("target"), str) else None
    rebuilt.memory_path = h.get("memory") if isinstance(h.get("memory"), str) else None
    return rebuilt.to_dict()


def _rounds(logs: list[Path]) -> list:
    """The rounds of the step logs that read as step logs; a warning on stderr for each
    other one (the rounds table leaves it out, as ``runs list`` shows it with its error)."""
    from kgagent.rounds import compute_rounds

    def bad(e: ConfigError) -> None:
        click.echo(f"warning: left out of the rounds: {e}", err=True)

    rounds = compute_rounds(logs, on_bad=bad)
    if logs and not rounds:
        raise ConfigError(f"no readable step log in {logs[0].parent}")
    return rounds


def _readable(folder: Path) -> None:
    """A one-line error when the step-log folder ``folder`` exists but cannot be listed.

    A glob passes over such a folder without a word, so it would read as one without
    step logs, and "run `kgagent play` first" is not the fix; ``Path.is_dir`` of a path
    inside it raises, naming that path rather than the folder."""
    try:
        with os.scandir(folder):
            pass
    except (FileNotFoundError, NotADirectoryError):
        return  # said elsewhere: no such folder, or not one
    except OSError as e:
        raise ConfigError(_unreadable(folder, e)) from None


def _unreadable(folder: Path, e: OSError) -> str:
    """The line for a step-log folder that cannot be read, with the fix for its cause."""
    why, fix = read_refused(e, folder)
    return f"the step log folder {folder} cannot be read ({why}); {fix}"


def _find_log(log: Path, memory: Path) -> Path:
    """LOG as given, else a file of that name in the memory's runs folder."""
    if log.exists() or log.parent != Path("."):
        return log
    _readable(memory / "runs")
    in_memory = memory / "runs" / log.name
    if not in_memory.exists():
        raise ConfigError(f"no step log at {log} or {in_memory}")
    return in_memory


@runs_group.command("show")
@click.argument("log", type=NonEmptyPath(path_type=Path), required=False)
@common_options()
def show_cmd(log: Path | None, memory: Path, config: Config, fmt: str) -> None:
    """Summarise the step log LOG: a .jsonl file written by `kgagent play`, given as a path
    or as its name in the memory's runs folder. Without LOG: the memory's rounds, one per
    run, as the papers' Table 2 (skills augmented and pruned per round, not cumulative);
    LOG a folder of step logs (play's --log-dir, a bench cell's runs/): its rounds."""
    from kgagent.runlog import RunSummary

    if log is None or log.is_dir():
        from kgagent.rounds import (
            TABLE2,
            format_rounds,
            log_order,
            mark_running,
            require_logs,
            rounds_rows,
        )

        if log is None:
            _readable(memory / "runs")
            logs = require_logs(memory)
            rounds = _rounds(logs)
            mark_running(rounds, memory, logs)
        else:
            _readable(log)
            logs = log_order(log.glob("*.jsonl"))
            if not logs:
                raise ConfigError(f"no step logs in {log}; give a folder of step logs (.jsonl)")
            rounds = _rounds(logs)
        if fmt == "table":
            click.echo(format_rounds(rounds))
        else:
            emit(rounds_rows(rounds, TABLE2), fmt)
        return
    path = _find_log(log, memory)
    d = _summary_of(path)
    known = RunSummary.__dataclass_fields__
    try:
        table = RunSummary(**{k: v for k, v in d.items() if k in known}).format_table()
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{path}: its summary line is not a kgagent run summary ({e})") from None
    emit_record(d, fmt, table=table)


def _number(v: Any, table: bool) -> Any:
    """A whole float as the summary table writes it (``0``, not ``0.0``); the value as the
    log holds it in the formats for programs (a column keeps one type)."""
    return int(v) if table and isinstance(v, float) and v.is_integer() else v


def _err(d: dict[str, Any], table: bool) -> float | None:
    """ERR (to three places in the table); none for a run that executed nothing (as
    `runs show` says)."""
    if not d.get("executions"):
        return None
    err = float(d.get("err", 0.0))
    return round(err, 3) if table else err


def _cost(usd: float, table: bool) -> float:
    return round(usd, 4) if table else usd


def _brain(d: dict[str, Any]) -> str | None:
    """``offline``, or the model a VLM run asked (runs on one memory may switch brains)."""
    if d.get("brain") == "vlm" and d.get("brain_model"):
        return f"vlm:{d['brain_model']}"
    return d.get("brain")


def _local_time(t: float) -> str | None:
    """``t`` (seconds since the epoch) in this machine's time zone, with its offset."""
    if not math.isfinite(t):
        return None
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


@runs_group.command("list")
@click.argument("folder", type=NonEmptyPath(path_type=Path), required=False)
@common_options()
def list_cmd(folder: Path | None, memory: Path, config: Config, fmt: str) -> None:
    """List the step logs in FOLDER (one given to `kgagent play --log-dir`), else in the
    memory's runs folder, oldest first."""
    if folder is not None:
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise ConfigError(f"{folder} {what}; give a folder of step logs (play's --log-dir)")
    elif not memory.exists():
        raise ConfigError(
            f"no memory at {memory}; run `kgagent play --memory {shlex.quote(str(memory))}` first"
        )
    from kgagent.rounds import log_order, run_start

    folder = folder if folder is not None else memory / "runs"
    _readable(folder)
    rows = []
    table = fmt.lower() == "table"  # rounded for people; as logged for programs
    for p in log_order(folder.glob("*.jsonl")) if folder.is_dir() else []:
        try:
            d = _summary_of(p)
        except ConfigError as e:
            rows.append(
                {"log": p.name, "started": _local_time(run_start(p)), "env": "?", "error": str(e)}
            )
            continue
        rows.append(
            {
                "log": p.name,
                "env": d.get("env"),
                "seed": d.get("seed"),
                "ablation": d.get("ablation"),
                "steps": d.get("steps"),
                "episodes": d.get("episodes", 1),
                "stopped": d.get("stopped"),
                # the last episode's; score_total: summed over the run's episodes
                "progression": _number(d.get("progression"), table),
                "score": _number(d.get("score"), table),
                "score_total": _number(d.get("score_total"), table),
                "err": _err(d, table),
                "brain": _brain(d),
                "cost_usd": _cost(float(d.get("cost_usd", 0.0)), table),
                # what the rows are ordered by; last, so that the columns before keep
                # their places for scripts that read them by position
                "started": _local_time(run_start(p)),
            }
        )
    if not rows and fmt == "table":
        hint = ""
        if (folder / "runs").is_dir() or (folder / "manifest.json").is_file():
            hint = (
                f" (a memory? its step logs: kgagent runs list --memory {shlex.quote(str(folder))})"
            )
        elif folder.name == "runs" and (folder.parent / "manifest.json").is_file():
            hint = (
                f" ({NO_LOGS_WHY}; a run played with --log-dir wrote its log there: "
                "kgagent runs list LOG_DIR)"
            )
        click.echo(f"no step logs in {folder}{hint}")
        return
    emit(rows, fmt)
