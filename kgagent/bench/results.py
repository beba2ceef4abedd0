"""The results folder of a grid: every run's figures as CSV, the statistics, plots and a report.

Written from the finished cells' ``cell.json`` files alone, so it can be written
again at any time (``kgagent bench GRID --report-only``) and is the same for cells
run here or on Ray. Files::

    grid.toml        the grid file as it was run
    cells.csv        one row per cell: status (done, failed, interrupted, not run),
                     error line, duration
    runs.csv         one row per run (cell × round): every figure
    stats.csv        per experiment, environment, judge, round and method, per figure:
                     n, mean, sd, SE, IQM and its bootstrap CI, median, min, max
    paired.csv       paired t tests: reference − method (same seed and series), and
                     last round − round 0 for experiments with rounds
    summary.json     all of the above, the command, versions and machine
    report.md        the tables for people (docs/benchmarks.md is generated from it)
    plots/*.png|svg  learning curves and bar charts

The files above but the plots are a *kept* folder (``kgagent bench GRID --export
DIR`` writes one): small enough to commit, and enough to write the results again
(:func:`kept_records`) and to render the docs' tables (:func:`load_results`); the
step-by-step curves, and so the plots, are not kept.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomllib

from kgagent.bench import stats
from kgagent.bench.figures import ACHIEVEMENT_FIGURES
from kgagent.bench.spec_types import Grid
from kgagent.brain.endpoint import shown_url

#: Figures the grid reports when present, after the grid's own metrics.
EXTRA_METRICS = ACHIEVEMENT_FIGURES
#: Identifying columns of a run.
ID_COLUMNS = ("experiment", "env", "method", "judge", "seed", "series", "round", "run_seed")
#: What summary.json says of the command that ran the grid (the report's header).
RUN_META = ("command", "date", "wall_min", "executor", "ran_before", "machine", "versions")
#: Identifying fields of a run's episodes in summary.json (the key of ``Results.episodes``).
EPISODE_KEY = ("experiment", "env", "judge", "method", "seed", "series", "round")
#: The columns of cells.csv (:func:`kgagent.bench.grid._cell_row`'s keys).
CELL_COLUMNS = (
    "key",
    "experiment",
    "env",
    "method",
    "judge",
    "seed",
    "series",
    "rounds",
    "steps",
    "digest",
    "status",
    "error",
    "duration_s",
)
#: The columns of stats.csv and paired.csv: where, then the statistic's fields.
STATS_COLUMNS = (
    *("experiment", "env", "judge", "round", "method", "metric"),
    *(f.name for f in fields(stats.Summary)),
)
PAIRED_COLUMNS = (
    *("experiment", "env", "judge", "round", "kind", "comparison", "metric", "mean_a", "mean_b"),
    *(f.name for f in fields(stats.Paired)),
    "text",
)


@dataclass
class Results:
    """Everything a report and the plots are made from."""

    grid: Grid
    runs: list[dict[str, Any]]  # flat rows: ID_COLUMNS + scalar figures
    curves: dict[tuple, list[float]]  # (experiment, env, judge, method, seed, series, round)
    episodes: dict[tuple, list[list[str]]]  # same key: achievements per episode (Crafter)
    metrics: list[str]
    stats: list[dict[str, Any]] = field(default_factory=list)
    paired: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def group(self, experiment: str, env: str, judge: str, rnd: int, method: str) -> list[dict]:
        """The runs of one method in one round, ordered by seed and series."""
        rows = [
            r
            for r in self.runs
            if (r["experiment"], r["env"], r["judge"], r["round"], r["method"])
            == (experiment, env, judge, rnd, method)
        ]
        return sorted(rows, key=lambda r: (r["seed"], r["series"]))

    def stat(self, experiment: str, env: str, judge: str, rnd: int, method: str, metric: str):
        for s in self.stats:
            if (s["experiment"], s["env"], s["judge"], s["round"], s["method"], s["metric"]) == (
                experiment,
                env,
                judge,
                rnd,
                method,
                metric,
            ):
                return s
        return None


def collect(grid: Grid, records: list[dict[str, Any]]) -> Results:
    """Rows, curves and statistics from the finished cells' records."""
    runs: list[dict[str, Any]] = []
    curves: dict[tuple, list[float]] = {}
    episodes: dict[tuple, list[list[str]]] = {}
    for rec in records:
        for run in rec["runs"]:
            figures = run["figures"]
            row = {k: run[k] for k in ID_COLUMNS}
            row.update(
                {k: v for k, v in figures.items() if isinstance(v, int | float) and k != "curve"}
            )
            runs.append(row)
            key = _run_key(run)
            curves[key] = list(figures.get("curve") or [])
            if "episodes" in figures:
                episodes[key] = figures["episodes"]
    present = set().union(*(r.keys() for r in runs)) if runs else set()
    metrics = [m for m in grid.metrics if m in present]
    metrics += [m for m in EXTRA_METRICS if m in present and m not in metrics]
    res = Results(grid, runs, curves, episodes, metrics)
    res.stats = _stats(res)
    res.paired = _paired(res)
    return res


def _run_key(run: dict[str, Any]) -> tuple:
    return tuple(
        run[k] for k in ("experiment", "env", "judge", "method", "seed", "series", "round")
    )


def _stats(res: Results) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in res.runs:
        groups[(r["experiment"], r["env"], r["judge"], r["round"], r["method"])].append(r)
    out = []
    for (exp, env, judge, rnd, method), rows in sorted(
        groups.items(), key=lambda kv: _order(res, kv[0])
    ):
        for metric in res.metrics:
            values = [float(r[metric]) for r in rows if metric in r]
            if not values:
                continue
            s = stats.summarise(values, reps=res.grid.bootstrap, confidence=res.grid.confidence)
            out.append(
                {
                    "experiment": exp,
                    "env": env,
                    "judge": judge,
                    "round": rnd,
                    "method": method,
                    "metric": metric,
                    **s.as_row(),
                }
            )
    return out


def _order(res: Results, key: tuple) -> tuple:
    """Experiments, environments, judges and methods in the grid file's order."""
    exp, env, judge, rnd, method = key
    for i, e in enumerate(res.grid.experiments):
        if e.name == exp:
            return (
                i,
                e.envs.index(env) if env in e.envs else 99,
                e.judges.index(judge) if judge in e.judges else 99,
                rnd,
                e.methods.index(method) if method in e.methods else 99,
            )
    return (99, 0, 0, rnd, 0)


def _paired(res: Results) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for exp in res.grid.experiments:
        for env in exp.envs:
            for judge in exp.judges:
                for rnd in range(exp.rounds):
                    ref = {_pair(r): r for r in res.group(exp.name, env, judge, rnd, exp.reference)}
                    for m in exp.methods:
                        if m == exp.reference:
                            continue
                        other = {_pair(r): r for r in res.group(exp.name, env, judge, rnd, m)}
                        label = f"{exp.reference} − {m}"
                        out += _pairs(
                            res, (exp.name, env, judge, rnd), label, "methods", ref, other
                        )
                if exp.rounds > 1:
                    last = exp.rounds - 1
                    for m in exp.methods:
                        first = {_pair(r): r for r in res.group(exp.name, env, judge, 0, m)}
                        end = {_pair(r): r for r in res.group(exp.name, env, judge, last, m)}
                        label = f"{m}: round {last} − round 0"
                        out += _pairs(
                            res, (exp.name, env, judge, last), label, "rounds", end, first
                        )
    return out


def _pair(r: dict[str, Any]) -> tuple[int, int]:
    return (r["seed"], r["series"])


def _pairs(res: Results, where: tuple, label: str, kind: str, a: dict, b: dict) -> list[dict]:
    keys = sorted(set(a) & set(b))
    if not keys:
        return []
    exp, env, judge, rnd = where
    rows = []
    for metric in res.metrics:
        x = [float(a[k][metric]) for k in keys if metric in a[k] and metric in b[k]]
        y = [float(b[k][metric]) for k in keys if metric in a[k] and metric in b[k]]
        if not x:
            continue
        p = stats.paired_t(x, y)
        rows.append(
            {
                "experiment": exp,
                "env": env,
                "judge": judge,
                "round": rnd,
                "kind": kind,
                "comparison": label,
                "metric": metric,
                "mean_a": sum(x) / len(x),
                "mean_b": sum(y) / len(y),
                **p.as_row(),
                "text": p.text(3 if metric in ("err", "cost_per_100_steps") else 2),
            }
        )
    return rows


def write_results(res: Results, out: Path, *, plots: bool = True) -> dict[str, Path]:
    """Write every file of the results folder; returns the main ones by name."""
    from kgagent.bench.report import render_report

    out.mkdir(parents=True, exist_ok=True)
    files = {
        "grid": out / "grid.toml",
        "cells": out / "cells.csv",
        "runs": out / "runs.csv",
        "stats": out / "stats.csv",
        "paired": out / "paired.csv",
        "summary": out / "summary.json",
        "report": out / "report.md",
    }
    files["grid"].write_text(shown_url(res.grid.text))  # a password in a URL masked
    _csv(files["cells"], res.cells, CELL_COLUMNS)
    figure_cols = sorted({k for r in res.runs for k in r} - set(ID_COLUMNS))
    ordered = [m for m in res.metrics if m in figure_cols]
    ordered += [c for c in figure_cols if c not in ordered]
    _csv(files["runs"], res.runs, [*ID_COLUMNS, *ordered])
    _csv(files["stats"], res.stats, STATS_COLUMNS)
    _csv(files["paired"], res.paired, PAIRED_COLUMNS)
    if res.merges:
        files["merged"] = out / "merged.csv"
        _csv(files["merged"], res.merges, list(dict.fromkeys(k for r in res.merges for k in r)))
    images: dict[tuple, list[str]] = {}
    if plots and res.runs and not any(res.curves.values()):
        res.meta["plots"] = "none: no step-by-step curves (a folder written by --export keeps none)"
    elif plots and res.runs:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            res.meta["plots"] = "none: matplotlib is not installed (pip install 'kgagent[bench]')"
        else:
            from kgagent.bench.plots import draw_plots

            images = draw_plots(res, out / "plots")
    summary = {
        "grid": res.grid.name,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **res.meta,
        "metrics": res.metrics,
        "cells": res.cells,
        "stats": res.stats,
        "paired": res.paired,
        "merged": res.merges,
        "episodes": [{**dict(zip(EPISODE_KEY, k)), "episodes": v} for k, v in res.episodes.items()],
    }
    files["summary"].write_text(json.dumps(summary, indent=1, default=str) + "\n")
    files["report"].write_text(render_report(res, images))
    return files


def _csv(path: Path, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """``rows`` under the header ``columns`` (a header alone when there are none)."""
    names = list(columns)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if r.get(k) is None else r.get(k) for k in names})
    path.write_text(buf.getvalue())


def load_results(folder: Path) -> Results:
    """The results a folder holds, as written: grid.toml, runs.csv and summary.json.

    No cell folders are needed (a kept folder is enough) and nothing is recomputed:
    a doc's tables show the statistics the folder holds. The curves are not kept.
    """
    from kgagent.bench.spec import load_grid

    summary = _summary(folder)
    grid = load_grid(folder / "grid.toml")
    grid.name = summary.get("grid", grid.name)
    metrics = list(summary.get("metrics", []))
    res = Results(grid, read_runs(folder), {}, _episodes(summary), metrics)
    res.stats = summary.get("stats", [])
    res.paired = summary.get("paired", [])
    res.cells = summary.get("cells", [])
    res.merges = summary.get("merged", [])
    res.meta = _run_meta(summary)
    return res


def kept_records(folder: Path) -> dict[str, dict[str, Any]]:
    """The finished cells' records as a kept folder holds them, by the cell's digest.

    Rebuilt from runs.csv and summary.json (no curves), so that the results can be
    written again from a folder without ``cells/``; empty when the folder has none.
    """
    if not (folder / "runs.csv").is_file() or not (folder / "summary.json").is_file():
        return {}
    summary = _summary(folder)
    episodes = _episodes(summary)
    runs: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in read_runs(folder):
        ids = {k: row[k] for k in ID_COLUMNS}
        figures = {k: v for k, v in row.items() if k not in ID_COLUMNS}
        key = tuple(row[k] for k in EPISODE_KEY)
        if key in episodes:
            figures["episodes"] = episodes[key]
        runs[_cell_of(row)].append({**ids, "figures": figures})
    records = {}
    for c in summary.get("cells", []):
        if c.get("status") == "done" and runs.get(_cell_of(c)):
            records[c["digest"]] = {
                "digest": c["digest"],
                "key": c["key"],
                "duration_s": c.get("duration_s"),
                "runs": sorted(runs[_cell_of(c)], key=lambda r: r["round"]),
            }
    return records


def read_runs(folder: Path) -> list[dict[str, Any]]:
    """runs.csv's rows as written: numbers as numbers, an empty field left out."""
    with (folder / "runs.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [
        {
            k: (v if k in ("experiment", "env", "method", "judge") else _number(v))
            for k, v in row.items()
            if v != "" or k in ID_COLUMNS
        }
        for row in rows
    ]


def held_grid(folder: Path) -> str | None:
    """The name of the grid whose results ``folder`` holds: summary.json's, else grid.toml's
    ``name``; None when the folder holds no results or does not say."""
    try:
        summary = _summary(folder)
    except ValueError:
        summary = {}
    name = summary.get("grid") if isinstance(summary, dict) else None
    if isinstance(name, str) and name:
        return name
    try:
        name = tomllib.loads((folder / "grid.toml").read_text()).get("name")
    except (OSError, ValueError):  # no grid.toml, or not TOML
        return None
    return str(name) if name else None


def run_meta(folder: Path) -> dict[str, Any]:
    """The header of the command that wrote ``folder``'s results; empty when it has none."""
    try:
        return _run_meta(_summary(folder))
    except ValueError:
        return {}


def _run_meta(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: summary[k] for k in RUN_META if k in summary}


def _summary(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {folder / 'summary.json'}: {e}") from None


def _episodes(summary: dict[str, Any]) -> dict[tuple, list[list[str]]]:
    return {tuple(e[k] for k in EPISODE_KEY): e["episodes"] for e in summary.get("episodes", [])}


def _cell_of(row: dict[str, Any]) -> tuple:
    return tuple(row[k] for k in ("experiment", "env", "method", "judge", "seed", "series"))


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)
