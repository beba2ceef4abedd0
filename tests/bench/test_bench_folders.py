"""A results folder holds one grid: another grid's `--out`, `--export` or `--report-only` is
refused before anything is written, the same grid resumes and grows in it; `--report-only`
with nothing finished writes nothing; an interrupted grid counts what cells.csv records."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kgagent.bench import BenchError, BenchOptions, load_grid, run_grid
from kgagent.bench.cell import run_cell, unfinished_state
from kgagent.bench.grid import check_folder
from kgagent.bench.results import PAIRED_COLUMNS

GRID = """
name = "g1"
envs = ["cardgame"]
steps = 5
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]
methods = ["full", "random"]
seeds = [0]
"""


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` with its bytes and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _cli() -> click.Group:
    from kgagent.cli.bench_cmd import bench_cmd
    from kgagent.cli.main import KGAgentGroup

    @click.group(cls=KGAgentGroup)
    def top() -> None:
        pass

    top.add_command(bench_cmd, "bench")
    return top


def _bench(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(_cli(), ["bench", *args, "--no-plots"])
    return r.exit_code, r.output


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """g1 (two 5-step card cells) run into r1 and exported to exp1."""
    root = tmp_path_factory.mktemp("folders")
    (root / "g1.toml").write_text(GRID)
    opts = BenchOptions(out=root / "r1", export=root / "exp1", plots=False, progress=False)
    run_grid(load_grid(root / "g1.toml"), opts)
    return root


@pytest.mark.parametrize(
    ("grid", "extra"),
    [
        (GRID.replace('name = "g1"\n', ""), []),  # named by its file, g2
        (GRID.replace('"g1"', '"other"'), []),
        (GRID.replace('"g1"', '"other"'), ["--report-only"]),
        (GRID.replace('"g1"', '"other"'), ["--list"]),  # it would list g1's cells as its own
    ],
)
def test_a_folder_of_another_grid_is_refused(ran: Path, grid: str, extra: list[str]) -> None:
    spec = ran / "g2.toml"
    spec.write_text(grid)
    name = load_grid(spec).name
    for folder in ("r1", "exp1"):
        before = _snapshot(ran / folder)
        code, out = _bench(str(spec), "--out", str(ran / folder), *extra)
        assert code == 1 and len(out.strip().splitlines()) == 1, out
        assert out.startswith(
            f"error: {ran / folder} holds the results of grid 'g1', not {name!r}: "
            "give --out another folder"
        ), out
        assert 'name = "g1"' in out
        assert _snapshot(ran / folder) == before


def test_an_export_folder_of_another_grid_is_refused(ran: Path, tmp_path: Path) -> None:
    spec = tmp_path / "g2.toml"
    spec.write_text(GRID.replace('"g1"', '"g2"'))
    before = _snapshot(ran / "exp1")
    code, out = _bench(str(spec), "--out", str(tmp_path / "r2"), "--export", str(ran / "exp1"))
    assert code == 1 and "holds the results of grid 'g1', not 'g2': give --export" in out, out
    assert _snapshot(ran / "exp1") == before and not (tmp_path / "r2").exists()


def test_the_same_grid_resumes_and_grows_in_its_folder(ran: Path, tmp_path: Path) -> None:
    """Another file of the same name, with one more seed: accepted; its new cells are to run."""
    grown = tmp_path / "grown.toml"
    grown.write_text(GRID.replace("seeds = [0]", "seeds = [0, 1]"))
    grid = load_grid(grown)
    check_folder(grid, ran / "r1", "--out")
    check_folder(grid, ran / "exp1", "--export")
    copy = tmp_path / "exp1"
    shutil.copytree(ran / "exp1", copy)
    summary = run_grid(grid, BenchOptions(out=copy, report_only=True, plots=False, progress=False))
    assert (summary["cells"], summary["not_run"]) == (4, 2)
    states = {r["key"]: r["status"] for r in _rows(copy / "cells.csv")}
    assert sorted(states.values()) == ["done", "done", "not run", "not run"]
    assert len(_rows(copy / "runs.csv")) == 2


@pytest.mark.parametrize("exists", [False, True])
def test_report_only_with_nothing_finished_writes_nothing(
    ran: Path, tmp_path: Path, exists: bool
) -> None:
    out = tmp_path / "nonexist_out"
    if exists:
        out.mkdir()
    code, text = _bench(str(ran / "g1.toml"), "--report-only", "--out", str(out))
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    if exists:
        assert f"error: --report-only: {out} holds no finished cell of grid 'g1'" in text
        assert list(out.iterdir()) == []
    else:
        assert f"error: --report-only: there is no results folder {out}; run the grid" in text
        assert not out.exists()


def test_one_method_finished_gives_a_paired_file_with_its_header(ran: Path, tmp_path: Path) -> None:
    out = tmp_path / "r1"
    shutil.copytree(ran / "r1", out)
    for cell in out.glob("cells/*.random.*"):
        shutil.rmtree(cell)
    for name in ("runs.csv", "summary.json"):  # which would keep the random runs' figures
        (out / name).unlink()
    run_grid(
        load_grid(ran / "g1.toml"),
        BenchOptions(out=out, report_only=True, plots=False, progress=False),
    )
    assert (out / "paired.csv").read_text() == ",".join(PAIRED_COLUMNS) + "\n"
    assert (out / "stats.csv").read_text().startswith("experiment,env,judge,round,method,metric")


def test_an_interrupted_grid_counts_what_it_recorded(
    ran: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell that finished as the grid was interrupted (its outcome never gathered) counts as
    finished in this run; a cell stopped mid-round is `interrupted` in cells.csv."""
    import kgagent.bench.local as local

    def run_local(tasks, jobs, progress):  # noqa: ANN001, ANN202 - run_local's signature
        (first, first_dir), (_, second_dir) = tasks
        run_cell(first.to_dict(), first_dir)
        second_dir.mkdir(parents=True)
        (second_dir / "error.txt").write_text("interrupted: round 0 stopped after 2 of 5 steps\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "run_local", run_local)
    spec = tmp_path / "g1.toml"
    spec.write_text(GRID)
    out = tmp_path / "r"
    with pytest.raises(BenchError) as e:
        run_grid(load_grid(spec), BenchOptions(out=out, plots=False, progress=False))
    assert str(e.value).startswith("interrupted: 1 cell(s) finished in this run, 1 interrupted;")
    rows = {r["status"]: r for r in _rows(out / "cells.csv")}
    assert set(rows) == {"done", "interrupted"}
    assert rows["interrupted"]["error"] == "interrupted: round 0 stopped after 2 of 5 steps"
    report = (out / "report.md").read_text()
    assert "(1 finished, of which 0 before this command; 0 failed, 1 interrupted)" in report


def test_a_cell_stopped_by_a_signal_is_interrupted(tmp_path: Path, monkeypatch) -> None:
    """KeyboardInterrupt in a cell (Ctrl-C, or SIGTERM in a worker) is recorded as interrupted."""
    import kgagent.bench.cell as cell_mod

    def stop(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(cell_mod, "_round", stop)
    spec = tmp_path / "g.toml"
    spec.write_text(GRID)
    cell = load_grid(spec).cells[0]
    outcome = run_cell(cell.to_dict(), tmp_path / "cell")
    assert outcome["status"] == "interrupted"
    assert outcome["error"] == "interrupted: stopped by Ctrl-C or SIGTERM"
    assert unfinished_state(tmp_path / "cell") == ("interrupted", outcome["error"])
    assert not (tmp_path / "cell" / "cell.json").exists()
