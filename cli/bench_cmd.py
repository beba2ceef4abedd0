"""`kgagent bench GRID.toml`: run a benchmark grid here or on a Ray cluster, and report it;
`kgagent bench-docs DOC.md`: regenerate the docs' tables from committed results.

No logic lives here: they read the options and call :func:`kgagent.bench.run_grid` and
:mod:`kgagent.bench.docs`. The grid file's format, the results folder and the blocks
of the docs are described in docs/bench.md. `bench-docs` is a command of its own, not
`bench docs`: `bench` takes a grid file as its argument, and a group cannot tell a
subcommand from a grid file named like one.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click
import tomllib
from kgagent.cli.common import NonEmptyPath, common_options, mark_writes, read_input
from kgagent.cli.output import emit, emit_record

from kgagent.config import Config
from kgagent.errors import ConfigError

#: kgagent.bench.grid.MAX_JOBS (why that bound is there), not imported: this module loads
#: for every command, the bench package only when a grid runs.
_MAX_JOBS = 256


def _runtime_env(value: str | None) -> dict[str, Any] | None:
    """``--ray-runtime-env``: a JSON object, or a JSON file holding one."""
    if not value:
        return None
    text = value
    if not value.lstrip().startswith("{"):
        text = read_input(Path(value), "runtime_env file", ConfigError)
    try:
        env = json.loads(text)
    except ValueError:
        raise ConfigError("--ray-runtime-env must be a JSON object or a JSON file") from None
    if not isinstance(env, dict):
        raise ConfigError("--ray-runtime-env must be a JSON object")
    return env


def _command(grid_file: Path) -> str:
    """The command line as typed (for the report), or its gist when run from Python."""
    if Path(sys.argv[0]).name == "kgagent" and "bench" in sys.argv:
        return "kgagent " + shlex.join(sys.argv[1:])
    return f"kgagent bench {shlex.quote(str(grid_file))}"


@click.command("bench")
@click.argument("grid_file", type=NonEmptyPath(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    help="Results folder. Default: the grid's `out` (relative to the grid file), else "
    "bench-results/<grid name> in the current directory (run from elsewhere, name it). "
    "A folder holding another grid's results is refused.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1, max=_MAX_JOBS),
    default=1,
    help=f"Cells at once (local processes, 1 to {_MAX_JOBS}).",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="auto|ADDRESS",
    help="Run every cell as a Ray task: `auto` joins $RAY_ADDRESS or a local cluster (or "
    "starts one); ADDRESS joins that cluster (ray://HOST:10001).",
)
@click.option(
    "--ray-runtime-env",
    default=None,
    metavar="JSON|FILE",
    help="Ray runtime_env for the workers (a JSON object or file), e.g. "
    '\'{"py_modules": ["dist/kgagent-0.1.0-py3-none-any.whl"]}\'.',
)
@click.option(
    "--merge", is_flag=True, help="Merge each group's memories (seeds and series) into one."
)
@click.option("--fresh", is_flag=True, help="Run finished cells again.")
@click.option(
    "--only",
    multiple=True,
    metavar="TEXT",
    help="Run only cells whose name has TEXT (repeatable; see --list). None matching is an error.",
)
@click.option(
    "--list",
    "list_cells",
    is_flag=True,
    help="List the cells and their state (finished, to run, failed, interrupted, changed); "
    "run nothing.",
)
@click.option(
    "--report-only", is_flag=True, help="Write the results from the finished cells; run nothing."
)
@click.option("--no-plots", is_flag=True, help="Skip the matplotlib plots.")
@click.option(
    "--export",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Also write the results to DIR without cells, memories, step logs or plots: "
    "small enough to commit (docs/results/<name>), and what `kgagent bench-docs` reads.",
)
@common_options(memory=False)
def bench_cmd(
    grid_file: Path,
    out: Path | None,
    jobs: int,
    ray_address: str | None,
    ray_runtime_env: str | None,
    merge: bool,
    fresh: bool,
    only: tuple[str, ...],
    list_cells: bool,
    report_only: bool,
    no_plots: bool,
    export: Path | None,
    config: Config,
    fmt: str,
) -> None:
    """Run the benchmark grid GRID_FILE: every environment × method × judge × seed × series.

    Each cell plays its rounds in its own memory and step logs; a cell whose
    results exist for the same spec is skipped, so running the command again
    resumes a grid. --config/--set apply to every cell. The results folder gets
    every run's figures (runs.csv), the statistics (stats.csv, paired.csv), plots
    and report.md; --report-only writes them again, also from a folder written by
    --export (which keeps no cells). A failed cell is recorded (cells/<cell>/error.txt)
    and the others go on; the command then exits with 1.
    """
    mark_writes()
    from kgagent.bench import BenchOptions, load_grid, run_grid
    from kgagent.bench.grid import cell_states, check_folder, results_folder

    ctx = click.get_current_context()
    base: dict[str, Any] = {}
    config_file = ctx.params.get("config_file")
    if config_file is not None:
        base = tomllib.loads(read_input(Path(config_file), "config file", ConfigError))
    overrides = list(ctx.params.get("overrides") or ())
    grid = load_grid(grid_file, base=base, overrides=overrides)
    folder = results_folder(grid, out)
    opts = BenchOptions(
        out=folder,
        jobs=jobs,
        ray=ray_address,
        runtime_env=_runtime_env(ray_runtime_env),
        merge=merge,
        fresh=fresh,
        report_only=report_only,
        plots=not no_plots,
        export=export,
        progress=True,
        only=list(only),
        command=_command(grid_file),
    )
    if list_cells:
        check_folder(grid, folder, "--out")
        emit(cell_states(grid, opts), fmt)
        return
    summary = run_grid(grid, opts)
    emit_record(summary, fmt)


@click.command("bench-docs")
@click.argument(
    "docs", nargs=-1, required=True, type=NonEmptyPath(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; exit 1 naming the first block that differs from its results.",
)
@click.option(
    "--root",
    type=NonEmptyPath(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The folder the blocks' results paths are relative to. Default: the repository "
    "that holds the doc (the nearest folder with pyproject.toml or .git).",
)
@common_options(memory=False, config=False)
def bench_docs_cmd(docs: tuple[Path, ...], check: bool, root: Path | None, fmt: str) -> None:
    """Regenerate the bench blocks of the Markdown files DOCS from the results they name.

    A block is `<!-- bench: FOLDER SECTION [experiment=…] [env=…] [judge=…] [round=…] -->`
    … `<!-- /bench -->`; what lies between is one section of FOLDER's report (header,
    methods, paired, figures, crafter, rounds), rendered as report.md renders it.
    FOLDER is a results folder (`kgagent bench GRID --export FOLDER`), relative to the
    repository. See docs/bench.md, "Tables in the docs".
    """
    from kgagent.bench.docs import check_docs, update_docs

    if check:
        counts = check_docs(list(docs), root)
        emit([{"doc": str(d), "blocks": n, "stale": 0} for d, n in counts.items()], fmt)
        return
    rendered = update_docs(list(docs), root)
    emit([{"doc": str(r.doc), "blocks": r.blocks, "updated": len(r.stale)} for r in rendered], fmt)
