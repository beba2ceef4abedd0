"""The report's tables: header, rule and rows have as many cells, whatever the grid's
metrics (bench-docs blocks render the same sections), and files with no rows keep a header;
a comparison of the first metric carries its verdict, "not shown" below ten pairs."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kgagent.bench.report import SECTIONS, Where, render_report, render_section
from kgagent.bench.results import PAIRED_COLUMNS, STATS_COLUMNS, collect, write_results
from kgagent.bench.spec import load_grid

GRID = """
name = "r"
envs = ["cardgame"]
steps = 5
rounds = 2
methods = ["full", "random"]
seeds = [0, 1]
"""


#: The researcher's g2.toml: one seed, two series of three rounds.
SERIES_GRID = """
name = "g2"
envs = ["cardgame"]
steps = 5
rounds = 3
series = 2
methods = ["full"]
seeds = [0]
"""


def _results(
    tmp_path: Path,
    metrics: list[str] | None,
    text: str = GRID,
    progression: Callable[..., float] = lambda cell, rnd: cell.seed + rnd,
):
    spec = tmp_path / "grid.toml"
    extra = "" if metrics is None else f"metrics = {metrics!r}\n".replace("'", '"')
    spec.write_text(extra + text)
    grid = load_grid(spec)
    records = []
    for cell in grid.cells:
        runs = []
        for rnd in range(cell.rounds):
            figures = {"progression": progression(cell, rnd), "score": 2.0 * cell.seed}
            figures |= {"err": 0.5}
            figures |= {"nodes": 3 + rnd, "skill_edges": 1, "curve": [0.0, 1.0]}
            ids = {"experiment": cell.experiment, "env": cell.env, "method": cell.method}
            ids |= {"judge": cell.judge, "seed": cell.seed, "series": cell.series}
            runs.append({**ids, "round": rnd, "run_seed": cell.run_seeds[rnd], "figures": figures})
        records.append({"digest": cell.digest, "key": cell.key, "runs": runs})
    res = collect(grid, records)
    res.cells = [{"key": c.key, "status": "done"} for c in grid.cells]
    return res


def _tables(markdown: str) -> list[list[str]]:
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def _cells(line: str) -> int:
    assert line.startswith("|") and line.endswith("|"), line
    return line.count("|") - 1


@pytest.mark.parametrize(
    "metrics",
    [
        None,  # the default metrics: ERR, nodes and skill edges beside the first
        ["score", "progression"],  # no side columns at all
        ["progression", "err"],
        ["err"],
    ],
)
def test_tables_have_as_many_cells_in_every_line(tmp_path: Path, metrics: list[str] | None) -> None:
    res = _results(tmp_path, metrics)
    exp = res.grid.experiments[0]
    markdown = [render_report(res, {})]
    markdown += [render_section(res, name, Where(exp, "cardgame", "offline")) for name in SECTIONS]
    tables = [t for text in markdown for t in _tables(text)]
    assert len(tables) >= 5
    for table in tables:
        assert table[1].replace("|", "").strip("-") == "", table  # the rule
        assert {_cells(line) for line in table} == {_cells(table[0])}, table


def test_methods_table_without_err(tmp_path: Path) -> None:
    res = _results(tmp_path, ["score", "progression"])
    text = render_section(res, "methods", Where(res.grid.experiments[0], "cardgame", "offline"))
    head, rule, *rows = text.splitlines()
    assert head == "| method | score per seed | mean ± sd | mean ± SE | IQM [95% CI] |"
    assert rule == "|---|---|---|---|---|"
    assert rows[0].startswith("| full | 0 2 |") and _cells(rows[0]) == 5


def test_files_without_rows_hold_their_header(tmp_path: Path) -> None:
    res = _results(tmp_path, None)
    empty = collect(res.grid, [])
    write_results(empty, tmp_path / "out", plots=False)
    assert (tmp_path / "out" / "stats.csv").read_text() == ",".join(STATS_COLUMNS) + "\n"
    assert (tmp_path / "out" / "paired.csv").read_text() == ",".join(PAIRED_COLUMNS) + "\n"
    cells = (tmp_path / "out" / "cells.csv").read_text()
    assert cells.startswith("key,experiment,env,method,judge,seed,series,") and "none" not in cells
    full = tmp_path / "full"
    write_results(res, full, plots=False)
    assert (full / "stats.csv").read_text().splitlines()[0] == ",".join(STATS_COLUMNS)
    assert (full / "paired.csv").read_text().splitlines()[0] == ",".join(PAIRED_COLUMNS)


def test_two_steady_series_show_no_spread_and_no_verdict_but_not_shown(tmp_path: Path) -> None:
    """g2.toml's rounds: +1 in each series from round 0 to round 2, so no spread."""
    res = _results(tmp_path, None, SERIES_GRID, lambda cell, rnd: cell.series + rnd // 2)
    exp = res.grid.experiments[0]
    lines = render_section(res, "rounds", Where(exp, "cardgame", "offline")).splitlines()
    head, row, rule = lines[0], lines[2], lines[-1]
    assert head == (
        "| method | progression, rounds 0 / 1 / 2, per series | mean per round "
        "| round 2 − round 0 | verdict (higher progression) |"
    )
    assert row == (
        "| full | 0/0/1 · 1/1/2 | 0.50 / 0.50 / 1.50 | +1.00 ± 0.00 SE (no spread: t undefined; "
        "2 up, 0 even, 0 down) | not shown (n = 2 < 10) |"
    )
    assert rule.startswith("Verdict: met with ≥ 10 pairs and p < 0.05 in the better direction")
    methods = render_section(res, "methods", Where(exp, "cardgame", "offline", 2))
    assert methods.startswith("| method | progression per series |")
    write_results(res, tmp_path / "out", plots=False)
    with (tmp_path / "out" / "paired.csv").open() as f:
        (steady,) = [r for r in csv.DictReader(f) if r["metric"] == "progression"]
    assert (steady["se"], steady["t"], steady["p"]) == ("0.0", "", "")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {(p["t"], p["p"]) for p in summary["paired"] if p["metric"] == "progression"} == {
        (None, None)
    }


def test_a_paired_comparison_of_two_seeds_is_not_shown(tmp_path: Path) -> None:
    """Not in the verdict's column only: a small p of another column is no claim either."""
    res = _results(tmp_path, None)
    text = render_section(res, "paired", Where(res.grid.experiments[0], "cardgame", "offline"))
    intro, _, head, _, row, _, note = text.splitlines()
    assert intro.endswith("in the better direction, missed in the other, otherwise not shown):")
    assert head == "| comparison | progression | score | ERR | verdict (higher progression) |"
    assert row.startswith("| full − random |") and row.endswith("| not shown (n = 2 < 10) |")
    assert note == (
        "Fewer than 10 pairs (n = 2): no difference in this table is shown, in any column, "
        "whatever its p."
    )


def test_a_first_metric_without_a_verdict_still_has_the_note_below_ten_pairs(
    tmp_path: Path,
) -> None:
    res = _results(tmp_path, ["nodes", "score"])
    text = render_section(res, "paired", Where(res.grid.experiments[0], "cardgame", "offline"))
    assert "verdict" not in text
    assert text.splitlines()[-1].startswith("Fewer than 10 pairs (n = 2): no difference")


def test_ten_pairs_have_no_note(tmp_path: Path) -> None:
    res = _results(tmp_path, None, GRID.replace("seeds = [0, 1]", "seeds = 10"))
    text = render_section(res, "paired", Where(res.grid.experiments[0], "cardgame", "offline"))
    assert "| full − random |" in text and "Fewer than" not in text


def test_a_reference_without_runs_says_why_there_is_no_paired_table(tmp_path: Path) -> None:
    """`--only random`: the reference `full` ran nothing, and the report says so in one line."""
    res = _results(tmp_path, None)
    res.runs = [r for r in res.runs if r["method"] != "full"]
    res.paired = []
    where = Where(res.grid.experiments[0], "cardgame", "offline")
    assert render_section(res, "paired", where) == (
        "No paired comparison: the reference `full` has no finished runs in this folder "
        "(run its cells: the grid without `--only`, or again where they failed).\n"
    )
    assert "No paired comparison" in render_report(res, {})
    res.runs = []  # nothing ran: no table, no line
    assert render_section(res, "paired", where) == ""


def test_a_first_metric_without_a_better_way_has_no_verdict(tmp_path: Path) -> None:
    res = _results(tmp_path, ["nodes", "progression"])
    where = Where(res.grid.experiments[0], "cardgame", "offline")
    assert "verdict" not in render_section(res, "paired", where)
    assert "verdict" not in render_section(res, "rounds", where).lower()
