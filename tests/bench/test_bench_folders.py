"""A results folder holds one grid: another grid's `--out`, `--export` or `--report-only` is
refused before anything is written, the same grid resumes and grows in it; `--report-only`
with nothing finished writes nothing; an interrupted grid counts what cells.csv records."""

from __future__ import annotations

import csv
import os
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
    assert not (out / "bench.lock").exists()


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
    assert outcome["error"] == "interrupted: stopped by Ctrl-C, SIGTERM or SIGHUP"
    assert unfinished_state(tmp_path / "cell") == ("interrupted", outcome["error"])
    assert not (tmp_path / "cell" / "cell.json").exists()


def test_a_judge_whose_endpoint_never_answers_fails_its_cell(tmp_path: Path) -> None:
    """Its cell does not play on with offline answers reported under the judge's name."""
    import socket

    with socket.socket() as s:  # a port with nothing listening on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = tmp_path / "g.toml"
    spec.write_text(
        GRID.replace(
            'methods = ["full", "random"]', 'methods = ["full"]\njudges = ["dead"]'
        ).replace("steps = 5", "steps = 10")
        + f'[judge.dead]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        'set = ["brain.max_retries=0", "brain.timeout_s=2"]\n'
    )
    code, text = _bench(str(spec), "--out", str(tmp_path / "r"))
    assert code == 1 and "1 of 1 cell(s) failed" in text, text
    (row,) = _rows(tmp_path / "r" / "cells.csv")
    assert row["status"] == "failed"
    assert row["error"].startswith("EndpointUnusable: the run stopped: ")
    assert row["error"].endswith("(brain.on_failure=stop)")
    assert "## Failed cells" in (tmp_path / "r" / "report.md").read_text()


def _meta(folder: Path) -> dict:
    import json

    from kgagent.bench.results import RUN_META

    summary = json.loads((folder / "summary.json").read_text())
    return {k: summary[k] for k in RUN_META}


def _header(folder: Path) -> list[str]:
    return [line for line in (folder / "report.md").read_text().splitlines() if line[:2] == "- "]


def test_a_command_that_runs_no_cell_keeps_the_header(ran: Path, tmp_path: Path) -> None:
    """Running a finished grid again names the command that ran its cells, not itself."""
    out = tmp_path / "r1"
    shutil.copytree(ran / "r1", out)
    before, header = _meta(out), _header(out)
    opts = BenchOptions(out=out, plots=False, progress=False, command="kgagent bench again")
    summary = run_grid(load_grid(ran / "g1.toml"), opts)
    assert (summary["ran"], summary["finished_before"]) == (0, 2)
    assert _meta(out) == before and before["ran_before"] == 0
    assert _header(out) == header


def test_the_header_is_the_last_command_that_finished_cells(ran: Path, tmp_path: Path) -> None:
    """It counts every cell it did not run as before it, --only's others included."""
    out = tmp_path / "r1"
    shutil.copytree(ran / "r1", out)
    grown = tmp_path / "g1.toml"
    grown.write_text(GRID.replace("seeds = [0]", "seeds = [0, 1]"))
    opts = BenchOptions(
        out=out, plots=False, progress=False, command="kgagent bench grown", only=["random"]
    )
    summary = run_grid(load_grid(grown), opts)
    assert (summary["ran"], summary["not_run"]) == (1, 1)
    meta = _meta(out)
    assert (meta["command"], meta["ran_before"]) == ("kgagent bench grown", 2)
    assert any("(3 finished, of which 2 before this command;" in line for line in _header(out))


def test_no_results_folder_names_it_and_where_the_results_are(
    ran: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default folder is relative to the current directory, not the grid file's."""
    shutil.copytree(ran / "r1", ran / "bench-results" / "g1", dirs_exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, text = _bench(str(ran / "g1.toml"), "--report-only")
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    assert text.startswith(
        f"error: --report-only: there is no results folder {elsewhere / 'bench-results' / 'g1'} "
        "(the default, bench-results/g1, is relative to the current directory); "
        f"{ran / 'bench-results' / 'g1'} holds this grid's results: give --out "
    ), text
    assert not (elsewhere / "bench-results").exists()
    code, text = _bench(str(ran / "g1.toml"), "--help")
    assert "results/<grid name> in the current directory" in " ".join(text.split())


def test_list_says_what_became_of_each_cell(ran: Path, tmp_path: Path) -> None:
    """--list: interrupted with the steps played, failed, changed (finished for another spec);
    plain keys and a list of seeds."""
    import json

    out = tmp_path / "r1"
    shutil.copytree(ran / "r1", out)
    longer = tmp_path / "g1.toml"
    longer.write_text(GRID.replace("seeds = [0]", "seeds = [0, 1, 2]"))
    cells = {c.key: out / "cells" / c.key for c in load_grid(longer).cells}
    stopped, bad = (cells[k] for k in sorted(cells) if "seed0" not in k and "full" in k)
    (stopped / "runs").mkdir(parents=True)
    steps = "".join(json.dumps({"type": "step", "step": i}) + "\n" for i in (1, 2, 3))
    (stopped / "runs" / "a.jsonl").write_text('{"type": "run"}\n' + steps)
    (stopped / "error.txt").write_text("interrupted: killed after a second stop signal\n")
    bad.mkdir(parents=True)
    (bad / "error.txt").write_text("EnvironmentError: no game\n\ntraceback\n")
    random0 = next(k for k in cells if "random" in k and "seed0" in k)
    record = json.loads((cells[random0] / "cell.json").read_text())
    (cells[random0] / "cell.json").write_text(json.dumps({**record, "digest": "another"}))
    code, text = _bench(str(longer), "--out", str(out), "--list", "--format", "json")
    assert code == 0, text
    rows = {r["cell"]: r for r in json.loads(text)}
    assert all(" " not in k for r in rows.values() for k in r)
    full0 = next(k for k in cells if "full" in k and "seed0" in k)
    assert rows[full0]["run_seeds"] == [0] and rows[full0]["state"] == "finished"
    assert rows[random0]["state"] == "changed"
    assert (rows[stopped.name]["state"], rows[stopped.name]["played"]) == ("interrupted", 3)
    assert rows[stopped.name]["note"] == "interrupted: killed after a second stop signal"
    assert (rows[bad.name]["state"], rows[bad.name]["note"]) == (
        "failed",
        "EnvironmentError: no game",
    )
    assert {r["state"] for k, r in rows.items() if "random" in k and "seed0" not in k} == {"to run"}


def test_bench_md_names_every_column_of_paired_csv() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bench.md").read_text()
    section = doc[doc.index("**paired.csv**") :].split("\n\n", 1)[0]
    missing = [c for c in PAIRED_COLUMNS if f"`{c}`" not in section]
    assert not missing, f"docs/bench.md, **paired.csv**: undocumented column(s) {missing}"


def test_a_second_command_into_a_folder_being_run_is_refused(ran: Path, tmp_path: Path) -> None:
    """Two commands running cells into one folder ran the same cells at once: the second is
    refused in one line naming the first; once it ends, the folder takes cells again."""
    import os

    from kgagent.bench.grid import LOCK_FILE
    from kgagent.memory.lock import try_lock

    grown = tmp_path / "grown.toml"
    grown.write_text(GRID.replace("seeds = [0]", "seeds = [0, 1]"))
    folder = tmp_path / "r1"
    shutil.copytree(ran / "r1", folder)
    held = try_lock(folder / LOCK_FILE)
    assert held is not None
    os.write(held.fd, b"4242\n")
    before = _snapshot(folder / "cells")
    opts = BenchOptions(out=folder, plots=False, progress=False)
    with pytest.raises(BenchError, match=r"another kgagent bench \(pid 4242\) is running cells"):
        run_grid(load_grid(grown), opts)
    assert _snapshot(folder / "cells") == before
    assert (folder / LOCK_FILE).read_text() == "4242\n"  # the refused command leaves it be
    held.release()  # as a killed command's: its file stays, unlocked, and is taken over
    assert run_grid(load_grid(grown), opts)["ran"] == 2
    assert not (folder / LOCK_FILE).exists()


def test_no_lock_file_stays_after_a_run(ran: Path, tmp_path: Path) -> None:
    """Finished (the fixture's run) or failed, the command removes its bench.lock."""
    from kgagent.bench.grid import LOCK_FILE

    assert not (ran / "r1" / LOCK_FILE).exists()
    pytest.importorskip("gymnasium")
    broken = tmp_path / "broken.toml"
    broken.write_text(GRID.replace('envs = ["cardgame"]', 'envs = ["gym:Pendulum-v1"]'))
    with pytest.raises(BenchError, match="failed"):
        run_grid(load_grid(broken), BenchOptions(out=tmp_path / "r", plots=False, progress=False))
    assert (tmp_path / "r" / "cells.csv").is_file() and not (tmp_path / "r" / LOCK_FILE).exists()


def test_a_lock_file_removed_by_its_ending_holder_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that opened bench.lock just before its holder removed it and ended locks a
    file no longer in the folder: it takes the new one, as a third command would, so that
    two commands never hold the folder at once."""
    import kgagent.memory.lock as lock
    from kgagent.bench.grid import LOCK_FILE, _lock_results, _unlock_results

    real, calls = lock.try_lock, []

    def try_lock(path: Path, **kw):  # noqa: ANN003, ANN202 - try_lock's signature
        calls.append(path)
        held = real(path, **kw)
        if len(calls) == 1:
            path.unlink()  # its holder removed it meanwhile
        return held

    monkeypatch.setattr(lock, "try_lock", try_lock)
    held = _lock_results(tmp_path)
    assert len(calls) == 2
    assert os.fstat(held.fd).st_ino == (tmp_path / LOCK_FILE).stat().st_ino
    monkeypatch.setattr(lock, "try_lock", real)
    with pytest.raises(BenchError, match="another kgagent bench"):
        _lock_results(tmp_path)
    _unlock_results(held)
    assert not (tmp_path / LOCK_FILE).exists()


def test_the_header_names_the_versions_of_the_packages_installed(ran: Path) -> None:
    """Those that decide a run's figures: the games, Ray, the brain's SDK, the models."""
    import importlib.metadata

    versions = _meta(ran / "r1")["versions"]
    named = 0
    for name in ("openai", "open_clip_torch", "segment-anything", "gymnasium", "crafter", "ray"):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            assert f"{name} " not in versions, versions  # not installed: not named
            continue
        assert f", {name} {version}" in versions, (name, versions)
        named += 1
    assert named >= 2  # openai and open_clip_torch are kgagent's own dependencies
    assert any(line.startswith("- versions: ") and "openai" in line for line in _header(ran / "r1"))


def test_only_other_methods_say_why_there_is_no_paired_table(ran: Path, tmp_path: Path) -> None:
    """`--only random` into a new folder: the reference ran nothing, and the report says so."""
    out = tmp_path / "r"
    opts = BenchOptions(out=out, plots=False, progress=False, only=["random"])
    assert run_grid(load_grid(ran / "g1.toml"), opts)["ran"] == 1
    report = (out / "report.md").read_text()
    assert (
        "No paired comparison: the reference `full` has no finished runs in this folder" in report
    )
    assert "No paired comparison" not in (ran / "r1" / "report.md").read_text()
