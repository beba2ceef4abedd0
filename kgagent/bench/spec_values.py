"""The checks of a grid file's values (:mod:`~kgagent.bench.spec`), each refused in one
:class:`ConfigError` line: keys, lists of names, whole numbers within bounds, seeds, the
grid's name, figure names and ``gym:ID`` environments."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

from kgagent.errors import ConfigError

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


def check_keys(d: dict[str, Any], allowed: set[str], where: str) -> None:
    """A table's keys: only those ``allowed``."""
    bad = sorted(set(d) - allowed)
    if bad:
        raise ConfigError(f"{where}: unknown key {bad[0]!r}; known: {', '.join(sorted(allowed))}")


def str_list(v: Any, where: str, *, required: bool = False) -> list[str]:
    """A list of non-empty strings (one string is a list of one); ``required``: at least one."""
    if v is None and required:
        raise ConfigError(f"{where} is required (a list of names)")
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ConfigError(f"{where} must be a list of non-empty strings, got {v!r}")
    if required and not v:
        raise ConfigError(f"{where} must name at least one")
    return list(v)


def whole(v: Any, where: str, *, low: int, high: int | None = None) -> int:
    """A whole number (not a bool) from ``low`` to ``high``."""
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
        bound = f">= {low}" if high is None else f"from {low} to {high}"
        raise ConfigError(f"{where} must be a whole number {bound}, got {v!r}")
    return v


def seed_list(v: Any, where: str) -> list[int]:
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


def grid_name(data: dict[str, Any], path: Path, where: str) -> str:
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


def metric_list(v: Any, where: str) -> list[str]:
    """``metrics``: known figure names, each once, at least one."""
    metrics = str_list(v, where, required=True)
    known = known_metrics()
    for m in metrics:
        if m not in known:
            raise ConfigError(f"{where}: unknown figure {m!r}; known: {', '.join(known)}")
    twice = [m for i, m in enumerate(metrics) if m in metrics[:i]]
    if twice:
        raise ConfigError(f"{where}: {twice[0]!r} is listed twice")
    return metrics


def check_gym(env: str, where: str) -> None:
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
    from kgagent.envs.gym_ids import registry_gap

    env_id = env.removeprefix("gym:")
    if not env.startswith("gym:") or env.lower() in CRAFTER_ENVS or ":" in env_id:
        return None
    return registry_gap(env_id)
