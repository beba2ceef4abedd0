"""`kgagent bench` end to end on a few 15-step card cells: the results folder, a failing
cell recorded while the others finish, resuming, and the same figures on a local Ray cluster."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kgagent.bench import BenchError, BenchOptions, load_grid, run_grid
from kgagent.bench.grid import plan

GRID = """
name = "t"
envs = ["cardgame"]
steps = 15
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]

[[experiment]]
name = "m"
methods = ["full", "no_graph"]
seeds = [0, 1]
"""
#: A cell that cannot start: Pendulum is a Gymnasium id, but its actions are not keys.
BROKEN = """
[[experiment]]
name = "broken"
envs = ["gym:Pendulum-v1"]
methods = ["full"]
seeds = [0]
"""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The grid (with one cell that cannot start) run once in two local processes."""
    root = tmp_path_factory.mktemp("bench")
    spec = root / "grid.toml"
    spec.write_text(GRID + BROKEN)
    out = root / "results"
    with pytest.raises(BenchError) as e:
        run_grid(load_grid(spec), BenchOptions(out=out, jobs=2, progress=False))
    return {"root": root, "spec": spec, "out": out, "error": str(e.value)}


def test_results_folder(ran: dict) -> None:
    out: Path = ran["out"]
    for name in ("grid.toml", "cells.csv", "runs.csv", "stats.csv", "paired.csv", "report.md"):
        assert (out / name).is_file(), name
    runs = _rows(out / "runs.csv")
    assert sorted((r["method"], r["seed"]) for r in runs) == [
        ("full", "0"),
        ("full", "1"),
        ("no_graph", "0"),
        ("no_graph", "1"),
    ]
    assert all(r["steps"] == "15" for r in runs)
    stats = _rows(out / "stats.csv")
    prog = [s for s in stats if s["metric"] == "progression"]
    assert {s["method"] for s in prog} == {"full", "no_graph"} and all(s["n"] == "2" for s in prog)
    for s in prog:
        assert float(s["iqm_lo"]) <= float(s["iqm"]) <= float(s["iqm_hi"])
    paired = _rows(out / "paired.csv")
    assert {p["comparison"] for p in paired} == {"full − no_graph"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid"] == "t" and "versions" in summary and "machine" in summary
    report = (out / "report.md").read_text()
    assert "full − no_graph" in report and "IQM" in report
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in report
    else:
        plots = {p.name for p in (out / "plots").iterdir()}
        assert {"m-cardgame-curves.png", "m-cardgame-curves.svg", "m-cardgame-bars.png"} <= plots
        assert "m-cardgame-bars.png" in report
    cell = out / "cells" / "m.cardgame.full.offline.seed1.series0"
    record = json.loads((cell / "cell.json").read_text())
    assert record["runs"][0]["run_seed"] == 1 and record["runs"][0]["summary"]["steps"] == 15
    assert len(record["runs"][0]["figures"]["curve"]) == 15
    assert (cell / "round-0.json").is_file() and (cell / "memory" / "manifest.json").is_file()
    assert len(list((cell / "runs").glob("*.jsonl"))) == 1


def test_failed_cell_is_recorded_and_the_grid_goes_on(ran: dict) -> None:
    out: Path = ran["out"]
    assert "1 of 5 cell(s) failed" in ran["error"] and "\n" not in ran["error"]
    assert "Pendulum" in ran["error"]
    cells = {c["key"]: c for c in _rows(out / "cells.csv")}
    bad = cells["broken.gym-Pendulum-v1.full.offline.seed0.series0"]
    assert bad["status"] == "failed" and "Pendulum" in bad["error"]
    assert bad["error"].startswith("EnvironmentError: gym:Pendulum-v1 ")  # no stray underscore
    assert sum(c["status"] == "done" for c in cells.values()) == 4
    error = (out / "cells" / bad["key"] / "error.txt").read_text()
    assert error.splitlines()[0] == bad["error"] and "Traceback" in error
    assert not (out / "cells" / bad["key"] / "cell.json").exists()
    assert "## Failed cells" in (out / "report.md").read_text()


def test_second_run_skips_finished_cells(ran: dict) -> None:
    out: Path = ran["out"]
    grid = load_grid(ran["spec"])
    todo, done = plan(grid, BenchOptions(out=out))
    assert [c.key for c, _ in todo] == ["broken.gym-Pendulum-v1.full.offline.seed0.series0"]
    assert len(done) == 4
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("cells/m.*/cell.json")}
    spec = ran["root"] / "good.toml"
    spec.write_text(GRID)
    summary = run_grid(load_grid(spec), BenchOptions(out=out, jobs=1, progress=False))
    assert (summary["ran"], summary["finished_before"], summary["failed"]) == (0, 4, 0)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_changed_spec_runs_the_cell_again(ran: dict) -> None:
    spec = ran["root"] / "longer.toml"
    spec.write_text(GRID.replace("steps = 15", "steps = 16"))
    todo, done = plan(load_grid(spec), BenchOptions(out=ran["out"]))
    assert len(todo) == 4 and not done


def test_cli_lists_cells_and_refuses_a_bad_grid(ran: dict) -> None:
    from kgagent.cli.bench_cmd import bench_cmd
    from kgagent.cli.main import KGAgentGroup

    @click.group(cls=KGAgentGroup)
    def top() -> None:
        pass

    top.add_command(bench_cmd, "bench")
    r = CliRunner().invoke(
        top, ["bench", str(ran["spec"]), "--out", str(ran["out"]), "--list", "--format", "csv"]
    )
    assert r.exit_code == 0, r.output
    rows = {row["cell"]: row for row in csv.DictReader(r.output.splitlines())}
    assert rows["m.cardgame.full.offline.seed0.series0"]["state"] == "finished"
    broken = rows["broken.gym-Pendulum-v1.full.offline.seed0.series0"]
    assert broken["state"] == "failed" and broken["note"].startswith("EnvironmentError: ")
    bad = ran["root"] / "bad.toml"
    bad.write_text('envs = ["cardgame"]\nmethods = ["ful"]\n')
    r = CliRunner().invoke(top, ["bench", str(bad)])
    assert r.exit_code == 1
    assert r.output.startswith("error: ") and "unknown method 'ful'" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_ray_local_cluster_gives_the_same_figures(ran: dict) -> None:
    """The same cells as Ray tasks on a local 2-CPU cluster: the same runs, figure for figure;
    memories come back as archives and --merge folds each method's seeds into one memory."""
    ray = pytest.importorskip("ray")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as e:  # noqa: BLE001 - a machine where Ray cannot start skips
        pytest.skip(f"Ray cannot start a local cluster here: {e}")
    try:
        spec = ran["root"] / "good.toml"
        spec.write_text(GRID)
        out = ran["root"] / "ray-results"
        summary = run_grid(
            load_grid(spec), BenchOptions(out=out, ray="auto", merge=True, progress=False)
        )
    finally:
        ray.shutdown()
    assert (summary["ran"], summary["failed"]) == (4, 0)
    ignore = {"duration_s"}
    local = {(r["method"], r["seed"]): r for r in _rows(ran["out"] / "runs.csv")}
    remote = {(r["method"], r["seed"]): r for r in _rows(out / "runs.csv")}
    assert local.keys() == remote.keys()
    for key, row in local.items():
        assert {k: v for k, v in row.items() if k not in ignore} == {
            k: v for k, v in remote[key].items() if k not in ignore
        }, key
    cell = out / "cells" / "m.cardgame.full.offline.seed0.series0"
    assert (cell / "memory.kgmem.tar.gz").is_file() and not (cell / "memory").exists()
    merged = {r["group"]: r for r in _rows(out / "merged.csv")}
    assert set(merged) == {"m.cardgame.full.offline", "m.cardgame.no_graph.offline"}
    assert merged["m.cardgame.full.offline"]["sources"] == "2"
    assert (out / "merged" / "m.cardgame.full.offline" / "manifest.json").is_file()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_killing_the_grid_stops_its_cells(tmp_path: Path) -> None:
    """SIGKILL on `kgagent bench` runs no cleanup of its own: its workers end themselves."""
    import os
    import signal
    import subprocess
    import sys
    import time

    spec = tmp_path / "grid.toml"
    spec.write_text(
        'name = "long"\nenvs = ["cardgame"]\nsteps = 5000\nmethods = ["random"]\nseeds = [0]\n'
    )
    bench = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kgagent.cli.main",
            "bench",
            str(spec),
            "--out",
            str(tmp_path / "r"),
            "--jobs",
            "1",
            "--no-plots",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and not workers:
            time.sleep(0.5)
            workers = [
                p
                for p in _children(bench.pid)
                if "spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
            ]
        assert workers, "no worker process started"
        time.sleep(2.0)  # the cell is running
        bench.send_signal(signal.SIGKILL)
        bench.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        assert not any(_alive(p) for p in workers), "a worker outlived the killed grid"
    finally:
        try:
            os.killpg(bench.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
