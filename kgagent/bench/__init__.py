"""``kgagent bench GRID.toml``: benchmark grids as a command, in local processes or on Ray.

A grid file (:mod:`~kgagent.bench.spec`) names environments, methods, judges,
seeds, series, rounds and steps; every combination is a *cell*: one memory whose
rounds resume it, run by :mod:`~kgagent.bench.cell` in a worker process
(:mod:`~kgagent.bench.local`) or a Ray task (:mod:`~kgagent.bench.ray_exec`).
Finished cells are skipped on the next run. The results folder
(:mod:`~kgagent.bench.results`) holds every run's figures as CSV, the statistics
(:mod:`~kgagent.bench.stats`: mean ± SE, paired t, IQM with bootstrap CIs), plots
and a Markdown report. docs/bench.md is the user's guide.
"""

from kgagent.bench.grid import BenchError, BenchOptions, run_grid
from kgagent.bench.spec import load_grid
from kgagent.bench.spec_types import Cell, Grid

__all__ = ["BenchError", "BenchOptions", "Cell", "Grid", "load_grid", "run_grid"]
