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
documented in docs/bench.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from kgagent.brain.endpoint import shown_url
from kgagent.config import Config, read_config_text
from kgagent.errors import ConfigError

#: Bumped when what a cell runs for the same spec changes (invalidates finished cells).
SPEC_VERSION = 1
#: Harness baselines that are not agent ablations: ``random_keys`` picks one of a
#: ``gym:ID`` environment's own actions uniformly per step (Hafner's random agent).
BASELINES = ("random_keys",)
#: What a judge with an endpoint does when the endpoint cannot answer, unless the grid,
#: the judge, ``--config`` or ``--set`` says: the cell fails, rather than playing on with
#: offline answers reported under the judge's name.
ENDPOINT_FAILURE = "brain.on_failure=stop"
#: Figures the statistics cover by default, in report order.
DEFAULT_METRICS = (
    "progression",
    "score",
    "err",
    "cost_per_100_steps",
    "library_size",
    "skills_augmented",
    "round_skills_augmented",
    "round_skills_pruned",
    "nodes",
    "skill_edges",
    "similarity_edges",
    "actions",
)

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
#: The longest file name, in bytes of UTF-8, that Linux and macOS file systems (ext4, XFS,
#: Btrfs, APFS) take: a grid's name and a cell's key each name one folder.
NAME_MAX = 255
#: Bounds of a grid's counts, far above any grid run (docs/bench.md's have 60 cells, 4
#: rounds, 2000 resamples): a count mistyped with extra digits is one line here, not a grid
#: read or a report drawn until memory runs out (every cell and round is listed up front,
#: and the bootstrap holds resamples × runs numbers).
MAX_CELLS = 100_000
MAX_ROUNDS = 10_000
MAX_BOOTSTRAP = 100_000
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


@dataclass(frozen=True)
class Method:
    """A method: an agent ablation (``run.ablation``) plus overrides, or a harness baseline."""

    name: str
    ablation: str = "full"
    baseline: str | None = None
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judge:
    """Who answers the brain's roles: the offline brain, or an OpenAI-compatible server."""

    name: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    overrides: tuple[str, ...] = ()

    def brain_overrides(self) -> list[str]:
        if self.base_url is None:
            return ["brain.kind=offline", *self.overrides]
        out = ["brain.kind=vlm", f"brain.base_url={self.base_url}"]
        if self.model:
            out.append(f"brain.model={self.model}")
        if self.api_key_env:
            out.append(f"brain.api_key_env={self.api_key_env}")
        return out + list(self.overrides)


@dataclass
class Cell:
    """One memory of the grid: its rounds, their seeds and the overrides of every round.

    Plain data (it travels to worker processes and Ray tasks as a dict, in memory); ``key``
    is its folder name in the results, ``digest`` the hash a finished cell records. A
    password in a URL of its overrides or ``base`` stays here, to run; the results folder
    gets :meth:`shown`, where it is masked.
    """

    experiment: str
    env: str
    method: str
    judge: str
    seed: int
    series: int
    steps: int
    run_seeds: list[int]
    overrides: list[str]  # applied after ``base``; the round's run.seed comes last
    baseline: str | None = None
    base: dict[str, Any] = field(default_factory=dict)  # a --config file's tables

    @property
    def rounds(self) -> int:
        return len(self.run_seeds)

    @property
    def key(self) -> str:
        env = re.sub(r"[^A-Za-z0-9_-]+", "-", self.env).strip("-")
        return f"{self.experiment}.{env}.{self.method}.{self.judge}.seed{self.seed}.series{self.series}"

    @property
    def digest(self) -> str:
        """A hash of everything that decides what the cell plays (not where it is stored),
        of :meth:`shown`: a URL's password neither changes it nor is hashed into it."""
        d = {"spec_version": SPEC_VERSION, **self.shown()}
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def config(self, round_index: int, extra: list[str] | None = None) -> Config:
        """The configuration of round ``round_index`` (validated)."""
        cfg = Config()
        cfg.update(self.base)
        for item in [*self.overrides, f"run.seed={self.run_seeds[round_index]}", *(extra or [])]:
            cfg.set_dotted(item)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def shown(self) -> dict[str, Any]:
        """The cell as ``cell.json`` records it: a password in any URL masked
        (``http://alice:***@host/v1``); the API key is never in it (``brain.api_key_env``
        names the variable that holds it)."""
        return shown_values(asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        return cls(**d)


@dataclass
class Experiment:
    name: str
    envs: list[str]
    methods: list[str]
    judges: list[str]
    seeds: list[int]
    series: int
    rounds: int
    steps: int
    reference: str | None
    overrides: list[str] = field(default_factory=list)  # the grid's ``set``, then its own
    series_stride: int = 100
    round_stride: int = 1
    cells: list[Cell] = field(default_factory=list)


@dataclass
class Grid:
    """A parsed grid file: experiments and their cells, and how to report them."""

    name: str
    path: Path
    text: str
    experiments: list[Experiment]
    methods: dict[str, Method]
    judges: dict[str, Judge]
    metrics: list[str]
    bootstrap: int
    confidence: float
    out: Path | None
    description: str = ""

    @property
    def cells(self) -> list[Cell]:
        return [c for e in self.experiments for c in e.cells]


def shown_values(v: Any) -> Any:
    """``v`` (strings, lists and dicts of them) with a password in any URL masked."""
    if isinstance(v, str):
        return shown_url(v)
    if isinstance(v, dict):
        return {k: shown_values(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [shown_values(x) for x in v]
    return v


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
    _known(data, _TOP | _EXPERIMENT, where)
    methods = _methods(data.get("method", {}), where)
    judges = _judges(data.get("judge", {}), where)
    metrics = _metrics(data.get("metrics", list(DEFAULT_METRICS)), f"{where}: metrics")
    bootstrap = _int(
        data.get("bootstrap", 2000), f"{where}: bootstrap", low=100, high=MAX_BOOTSTRAP
    )
    confidence = data.get("confidence", 0.95)
    if not isinstance(confidence, float) or not 0.5 <= confidence < 1:
        raise ConfigError(f"{where}: confidence must be a number in [0.5, 1), got {confidence!r}")
    name = _grid_name(data, path, where)
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
        _known(table, _EXPERIMENT, f"{where}, experiment {label}")
        merged = {**top, **table}
        if "set" in top and "set" in table:
            merged["set"] = [*_strings(top["set"], "set"), *_strings(table["set"], "set")]
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


def _grid_name(data: dict[str, Any], path: Path, where: str) -> str:
    """The grid's ``name``, else its file's name: one file name, since the default results
    folder is ``bench-results/<name>``. A name such as ``../../etc`` or ``/tmp/x`` would put
    the results outside that folder, so only a plain name is taken."""
    given = "name" in data
    name = data["name"] if given else path.stem
    if not isinstance(name, str):
        raise ConfigError(f"{where}: name must be a string, got {name!r}")
    if _bad_file_name(name):
        hint = "" if given else ' (the file\'s name); give it one: name = "NAME"'
        shown = repr(name) if len(name) <= 60 else f"{name[:60]!r}…"
        raise ConfigError(
            f"{where}: grid name {shown} is not a plain name{hint}; a grid's name names its "
            "results folder: not empty, '.' or '..', no '/' or '\\', no control characters, "
            f"at most {NAME_MAX} bytes"
        )
    return name


def _bad_file_name(name: str) -> bool:
    """Whether ``name`` is not one plain file name: empty, ``.`` or ``..``, a path (a
    separator), a control character (NUL ends the name for the OS, a newline breaks the
    output's lines), or longer than :data:`NAME_MAX`."""
    return (
        not name.strip()
        or name in (".", "..")
        or any(sep in name for sep in ("/", "\\"))
        or any(unicodedata.category(ch) == "Cc" for ch in name)
        or len(name.encode("utf-8", "surrogatepass")) > NAME_MAX
    )


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

    envs = _strings(d.get("envs"), f"{where}: envs", required=True)
    for env in envs:
        if not is_env_name(env):
            raise ConfigError(
                f"{where}: unknown environment {env!r}; known: cardgame, civgame, desktop, gym:ID"
            )
        _check_gym(env, where)
    names = _strings(d.get("methods", ["full"]), f"{where}: methods", required=True)
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
    jnames = _strings(d.get("judges", ["offline"]), f"{where}: judges", required=True)
    for j in jnames:
        if j not in judges:
            raise ConfigError(
                f"{where}: unknown judge {j!r}; known: {', '.join(judges)} "
                "(or define it in a [judge.NAME] table with base_url)"
            )
    seeds = _seeds(d.get("seeds", 3), f"{where}: seeds")
    reference = d.get("reference", "full" if "full" in names else names[0])
    if reference not in names:
        raise ConfigError(
            f"{where}: reference {reference!r} is not one of its methods ({', '.join(names)})"
        )
    for listed, what in ((envs, "environment"), (names, "method"), (jnames, "judge")):
        twice = [x for i, x in enumerate(listed) if x in listed[:i]]
        if twice:
            raise ConfigError(f"{where}: {what} {twice[0]!r} is listed twice")
    series = _int(d.get("series", 1), f"{where}: series", low=1, high=MAX_CELLS)
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
        rounds=_int(d.get("rounds", 1), f"{where}: rounds", low=1, high=MAX_ROUNDS),
        steps=_int(d.get("steps", 300), f"{where}: steps", low=1),
        reference=str(reference),
        overrides=_strings(d.get("set", []), f"{where}: set"),
        series_stride=_int(d.get("series_stride", 100), f"{where}: series_stride", low=0),
        round_stride=_int(d.get("round_stride", 1), f"{where}: round_stride", low=0),
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


def known_metrics() -> list[str]:
    """Every figure a run can have: the names a grid's ``metrics`` may give.

    A run summary's numbers (:class:`~kgagent.runlog.RunSummary`; of its flags, ``alive``
    as 0 or 1, as :func:`~kgagent.bench.figures.run_figures` keeps it), what a round itself
    added (:data:`~kgagent.bench.cell.TABLE2_ROUND`), and the achievement figures of
    environments that have them (:data:`~kgagent.bench.figures.ACHIEVEMENT_FIGURES`).
    """
    from dataclasses import fields

    from kgagent.bench.cell import TABLE2_ROUND
    from kgagent.bench.figures import ACHIEVEMENT_FIGURES, NOT_FIGURES
    from kgagent.runlog import RunSummary

    numbers = [
        f.name
        for f in fields(RunSummary)
        if str(f.type).split(" | ")[0] in ("int", "float") and f.name not in NOT_FIGURES
    ]
    names = [*DEFAULT_METRICS, *numbers, "alive", *TABLE2_ROUND.values(), *ACHIEVEMENT_FIGURES]
    return list(dict.fromkeys(names))


def _metrics(v: Any, where: str) -> list[str]:
    """``metrics``: known figure names, each once, at least one."""
    metrics = _strings(v, where, required=True)
    known = known_metrics()
    for m in metrics:
        if m not in known:
            raise ConfigError(f"{where}: unknown figure {m!r}; known: {', '.join(known)}")
    twice = [m for i, m in enumerate(metrics) if m in metrics[:i]]
    if twice:
        raise ConfigError(f"{where}: {twice[0]!r} is listed twice")
    return metrics


def _check_gym(env: str, where: str) -> None:
    """A ``gym:ID`` that Gymnasium's registry lacks is refused here, not when its cells run."""
    reason = _gym_unknown(env)
    if reason is not None:
        raise ConfigError(
            f"{where}: unknown Gymnasium environment {env!r} ({reason}); list them with "
            "python -c 'import gymnasium; gymnasium.pprint_registry()'"
        )


def _gym_unknown(env: str) -> str | None:
    """Why Gymnasium's registry lacks ``env``; None when it has it or this cannot tell.

    Crafter is the adapter's own; ``module:ID`` ids register themselves on import, which
    is left to the run; without gymnasium (or, for ``ALE/`` ids, ale-py) installed here,
    the cells may still run where it is (a Ray cluster's nodes).
    """
    from kgagent.bench.figures import CRAFTER_ENVS
    from kgagent.envs.gym import registry_gap

    env_id = env.removeprefix("gym:")
    if not env.startswith("gym:") or env.lower() in CRAFTER_ENVS or ":" in env_id:
        return None
    return registry_gap(env_id)


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
        _known(d, {"ablation", "baseline", "set"}, w)
        ablation = d.get("ablation", "full")
        if ablation not in ABLATIONS:
            raise ConfigError(f"{w}: unknown ablation {ablation!r}; known: {', '.join(ABLATIONS)}")
        baseline = d.get("baseline")
        if baseline is not None and baseline not in BASELINES:
            raise ConfigError(f"{w}: unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
        sets = tuple(_strings(d.get("set", []), f"{w}: set"))
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
        _known(d, {"base_url", "model", "api_key_env", "set"}, w)
        url = d.get("base_url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"{w}: base_url must be an OpenAI-compatible endpoint such as "
                "http://localhost:8000/v1"
            )
        sets = tuple(_strings(d.get("set", []), f"{w}: set"))
        if any(not s.startswith("brain.") for s in sets):
            raise ConfigError(f"{w}: a judge's set may change only brain.* fields")
        model, key = d.get("model"), d.get("api_key_env")
        out[name] = Judge(name, url, None if model is None else str(model), key, sets)
    return out


def _known(d: dict[str, Any], allowed: set[str], where: str) -> None:
    bad = sorted(set(d) - allowed)
    if bad:
        raise ConfigError(f"{where}: unknown key {bad[0]!r}; known: {', '.join(sorted(allowed))}")


def _strings(v: Any, where: str, *, required: bool = False) -> list[str]:
    if v is None and required:
        raise ConfigError(f"{where} is required (a list of names)")
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ConfigError(f"{where} must be a list of non-empty strings, got {v!r}")
    if required and not v:
        raise ConfigError(f"{where} must name at least one")
    return list(v)


def _int(v: Any, where: str, *, low: int, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
        bound = f">= {low}" if high is None else f"from {low} to {high}"
        raise ConfigError(f"{where} must be a whole number {bound}, got {v!r}")
    return v


def _seeds(v: Any, where: str) -> list[int]:
    """``seeds = N`` (0 … N-1) or a list of seeds."""
    if isinstance(v, int) and not isinstance(v, bool):
        if not 1 <= v <= MAX_CELLS:
            raise ConfigError(
                f"{where} must be >= 1 (at most {MAX_CELLS}) or a list of seeds, got {v}"
            )
        return list(range(v))
    if (
        isinstance(v, list)
        and v
        and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)
    ):
        if len(set(v)) != len(v):
            raise ConfigError(f"{where} lists a seed twice: {v}")
        return list(v)
    raise ConfigError(f"{where} must be a count (seeds 0 … N-1) or a list of seeds >= 0, got {v!r}")
