"""The grid file of ``kgagent bench``: what to run, read from TOML and checked before anything runs.

A grid names environments, methods, judges, seeds, series, rounds and steps; each
``[[experiment]]`` table is one sub-grid (its keys override the file's top-level
ones), and a file without experiments is one experiment. Every combination
environment × method × judge × seed × series is a :class:`Cell`: one memory, whose
``rounds`` runs resume it. Round ``r`` of series ``s`` of seed ``k`` plays
``run.seed = k + series_stride·s + round_stride·r`` (defaults 100 and 1, the
series and round seeds of ``benchmarks/learning.py``).

Everything is checked here, before the first cell starts, so a typo costs one line
and no compute: unknown keys, unknown environments (a ``gym:ID`` in Gymnasium's
registry), methods, judges and figures (``metrics``), bad seeds, and every cell's
configuration (``Config.load`` of its overrides). The format is
documented in docs/bench.md. The grid's data types are :mod:`~kgagent.bench.spec_types`'s,
the checks of its single values :mod:`~kgagent.bench.spec_values`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import tomllib

from kgagent.bench.spec_types import Cell, Experiment, Grid, Judge, Method
from kgagent.bench.spec_values import (
    DEFAULT_METRICS,
    MAX_BOOTSTRAP,
    MAX_CELLS,
    MAX_ROUNDS,
    NAME_MAX,
    check_gym,
    check_keys,
    grid_name,
    metric_list,
    seed_list,
    str_list,
    whole,
)
from kgagent.config import read_config_text
from kgagent.errors import ConfigError

#: Harness baselines that are not agent ablations: ``random_keys`` picks one of a
#: ``gym:ID`` environment's own actions uniformly per step (Hafner's random agent).
BASELINES = ("random_keys",)
#: What a judge with an endpoint does when the endpoint cannot answer, unless the grid,
#: the judge, ``--config`` or ``--set`` says: the cell fails, rather than playing on with
#: offline answers reported under the judge's name.
ENDPOINT_FAILURE = "brain.on_failure=stop"

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_TOP = {
    "name",
    "description",
    "out",
    "metrics",
    "bootstrap",
    "confidence",
    "method",
    "judge",
    "experiment",
}
_EXPERIMENT = {
    "name",
    "envs",
    "methods",
    "judges",
    "seeds",
    "series",
    "rounds",
    "steps",
    "set",
    "reference",
    "series_stride",
    "round_stride",
}


def load_grid(
    path: str | Path, *, base: dict[str, Any] | None = None, overrides: list[str] | None = None
) -> Grid:
    """Read and check the grid file at ``path``; one :class:`ConfigError` line if it is wrong.

    ``base`` (tables of a config file) and ``overrides`` (``section.field=value``,
    from the command line) apply to every cell, the overrides after the grid's own.
    """
    p = Path(path)
    text = read_config_text(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"grid file {p} is not valid TOML: {e}") from None
    return parse_grid(data, p, text, base=base or {}, overrides=list(overrides or []))


def parse_grid(
    data: dict[str, Any],
    path: Path,
    text: str = "",
    *,
    base: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
) -> Grid:
    """A :class:`Grid` from the TOML tables of a grid file (see :func:`load_grid`)."""
    where = f"grid file {path}"
    check_keys(data, _TOP | _EXPERIMENT, where)
    methods = _methods(data.get("method", {}), where)
    judges = _judges(data.get("judge", {}), where)
    metrics = metric_list(data.get("metrics", list(DEFAULT_METRICS)), f"{where}: metrics")
    bootstrap = whole(
        data.get("bootstrap", 2000), f"{where}: bootstrap", low=100, high=MAX_BOOTSTRAP
    )
    confidence = data.get("confidence", 0.95)
    if not isinstance(confidence, float) or not 0.5 <= confidence < 1:
        raise ConfigError(f"{where}: confidence must be a number in [0.5, 1), got {confidence!r}")
    name = grid_name(data, path, where)
    raw = data.get("experiment")
    if raw is None:  # the file is one experiment, named like the grid
        tables = [{"name": str(data.get("name") or "grid")}]
    elif isinstance(raw, list) and raw and all(isinstance(t, dict) for t in raw):
        tables = raw
    else:
        raise ConfigError(f"{where}: experiment must be one or more [[experiment]] tables")
    top = {k: v for k, v in data.items() if k in _EXPERIMENT and k != "name"}
    experiments: list[Experiment] = []
    for i, table in enumerate(tables):
        label = repr(str(table["name"])) if table.get("name") else str(i + 1)
        check_keys(table, _EXPERIMENT, f"{where}, experiment {label}")
        merged = {**top, **table}
        if "set" in top and "set" in table:
            merged["set"] = [*str_list(top["set"], "set"), *str_list(table["set"], "set")]
        exp = _experiment(merged, i, methods, judges, where)
        if exp.name in {e.name for e in experiments}:
            raise ConfigError(f"{where}: two experiments are named {exp.name!r}")
        experiments.append(exp)
    grid = Grid(
        name=name,
        path=path,
        text=text,
        experiments=experiments,
        methods=methods,
        judges=judges,
        metrics=metrics,
        bootstrap=bootstrap,
        confidence=confidence,
        out=(path.parent / str(data["out"])) if data.get("out") else None,
        description=str(data.get("description", "")),
    )
    for exp in experiments:
        at = f"{where}, experiment {exp.name!r}"
        exp.cells = _cells(exp, grid, dict(base or {}), list(overrides or []), at)
    return grid


def _experiment(
    d: dict[str, Any],
    i: int,
    methods: dict[str, Method],
    judges: dict[str, Judge],
    where: str,
) -> Experiment:
    name = str(d.get("name") or f"experiment{i + 1}")
    where = f"{where}, experiment {name!r}"
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a name may hold only letters, digits, '_' and '-'")
    from kgagent.envs.registry import is_env_name

    envs = str_list(d.get("envs"), f"{where}: envs", required=True)
    for env in envs:
        if not is_env_name(env):
            raise ConfigError(
                f"{where}: unknown environment {env!r}; known: cardgame, civgame, desktop, gym:ID"
            )
        check_gym(env, where)
    names = str_list(d.get("methods", ["full"]), f"{where}: methods", required=True)
    for m in names:
        if m not in methods:
            raise ConfigError(
                f"{where}: unknown method {m!r}; known: {', '.join(methods)} "
                "(or define it in a [method.NAME] table)"
            )
        if methods[m].baseline == "random_keys" and any(not e.startswith("gym:") for e in envs):
            raise ConfigError(
                f"{where}: method {m!r} (random_keys) plays a gym:ID environment's own actions; "
                "put it in an experiment whose envs are all gym:ID"
            )
    jnames = str_list(d.get("judges", ["offline"]), f"{where}: judges", required=True)
    for j in jnames:
        if j not in judges:
            raise ConfigError(
                f"{where}: unknown judge {j!r}; known: {', '.join(judges)} "
                "(or define it in a [judge.NAME] table with base_url)"
            )
    seeds = seed_list(d.get("seeds", 3), f"{where}: seeds")
    reference = d.get("reference", "full" if "full" in names else names[0])
    if reference not in names:
        raise ConfigError(
            f"{where}: reference {reference!r} is not one of its methods ({', '.join(names)})"
        )
    for listed, what in ((envs, "environment"), (names, "method"), (jnames, "judge")):
        twice = [x for i, x in enumerate(listed) if x in listed[:i]]
        if twice:
            raise ConfigError(f"{where}: {what} {twice[0]!r} is listed twice")
    series = whole(d.get("series", 1), f"{where}: series", low=1, high=MAX_CELLS)
    count = len(envs) * len(names) * len(jnames) * len(seeds) * series
    if count > MAX_CELLS:
        raise ConfigError(
            f"{where}: {count} cells (envs × methods × judges × seeds × series); "
            f"an experiment has at most {MAX_CELLS}"
        )
    return Experiment(
        name=name,
        envs=envs,
        methods=names,
        judges=jnames,
        seeds=seeds,
        series=series,
        rounds=whole(d.get("rounds", 1), f"{where}: rounds", low=1, high=MAX_ROUNDS),
        steps=whole(d.get("steps", 300), f"{where}: steps", low=1),
        reference=str(reference),
        overrides=str_list(d.get("set", []), f"{where}: set"),
        series_stride=whole(d.get("series_stride", 100), f"{where}: series_stride", low=0),
        round_stride=whole(d.get("round_stride", 1), f"{where}: round_stride", low=0),
    )


def _cells(
    exp: Experiment, grid: Grid, base: dict[str, Any], cli: list[str], where: str
) -> list[Cell]:
    cells: list[Cell] = []
    checked: set[tuple[str, str, str]] = set()
    for env in exp.envs:
        for m in exp.methods:
            method = grid.methods[m]
            for j in exp.judges:
                overrides = [
                    *exp.overrides,
                    *method.overrides,
                    *grid.judges[j].brain_overrides(),
                    *cli,
                    f"run.env={env}",
                    f"run.ablation={method.ablation}",
                ]
                if grid.judges[j].base_url is not None and not _sets(
                    "brain.on_failure", overrides, base
                ):
                    overrides.insert(0, ENDPOINT_FAILURE)
                for k in exp.seeds:
                    for s in range(exp.series):
                        seeds = [
                            k + exp.series_stride * s + exp.round_stride * r
                            for r in range(exp.rounds)
                        ]
                        cell = Cell(exp.name, env, m, j, k, s, exp.steps, seeds, overrides)
                        cell.baseline, cell.base = method.baseline, base
                        if (env, m, j) not in checked:
                            _check_config(cell, where)
                            checked.add((env, m, j))
                        cells.append(cell)
    keys = [c.key for c in cells]
    long = next((k for k in keys if len(k.encode()) > NAME_MAX), None)
    if long is not None:
        raise ConfigError(
            f"{where}: cell {long[:60]!r}… names a folder longer than {NAME_MAX} bytes: "
            "give the experiment (or method, judge) a shorter name"
        )
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{where}: two cells share a folder name (a seed is listed twice?)")
    return cells


def _sets(name: str, overrides: list[str], base: dict[str, Any]) -> bool:
    """Whether ``overrides`` or the config file's tables ``base`` set the field ``name``."""
    section, _, field_name = name.partition(".")
    if field_name in (base.get(section) or {}):
        return True
    return any(o.partition("=")[0].strip() == name for o in overrides)


def _check_config(cell: Cell, where: str) -> None:
    try:
        cell.config(0)
    except ConfigError as e:
        raise ConfigError(f"{where}: {cell.env} / {cell.method} / {cell.judge}: {e}") from None


def _methods(table: Any, where: str) -> dict[str, Method]:
    from kgagent.config_sections import ABLATIONS

    out: dict[str, Method] = {a: Method(a, ablation=a) for a in ABLATIONS}
    out["random_keys"] = Method("random_keys", ablation="random", baseline="random_keys")
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: method must be a table of [method.NAME] tables")
    for name, d in table.items():
        w = f"{where}, method {name!r}"
        if not _NAME.match(name) or not isinstance(d, dict):
            raise ConfigError(f"{w}: define it as [method.NAME] with letters, digits, '_', '-'")
        check_keys(d, {"ablation", "baseline", "set"}, w)
        ablation = d.get("ablation", "full")
        if ablation not in ABLATIONS:
            raise ConfigError(f"{w}: unknown ablation {ablation!r}; known: {', '.join(ABLATIONS)}")
        baseline = d.get("baseline")
        if baseline is not None and baseline not in BASELINES:
            raise ConfigError(f"{w}: unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
        sets = tuple(str_list(d.get("set", []), f"{w}: set"))
        out[name] = Method(name, ablation=ablation, baseline=baseline, overrides=sets)
    return out


def _judges(table: Any, where: str) -> dict[str, Judge]:
    out = {"offline": Judge("offline")}
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: judge must be a table of [judge.NAME] tables")
    for name, d in table.items():
        w = f"{where}, judge {name!r}"
        if not _NAME.match(name) or not isinstance(d, dict):
            raise ConfigError(f"{w}: define it as [judge.NAME] with letters, digits, '_', '-'")
        check_keys(d, {"base_url", "model", "api_key_env", "set"}, w)
        url = d.get("base_url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"{w}: base_url must be an OpenAI-compatible endpoint such as "
                "http://localhost:8000/v1"
            )
        sets = tuple(str_list(d.get("set", []), f"{w}: set"))
        if any(not s.startswith("brain.") for s in sets):
            raise ConfigError(f"{w}: a judge's set may change only brain.* fields")
        model, key = d.get("model"), d.get("api_key_env")
        out[name] = Judge(name, url, None if model is None else str(model), key, sets)
    return out
