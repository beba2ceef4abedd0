"""Bad input to `kgagent bench` and its grid file: one line, the right exit code, nothing
written, and never a results folder outside the one asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kgagent.bench import BenchError, BenchOptions, load_grid, run_grid
from kgagent.bench.grid import MAX_JOBS, cell_states
from kgagent.errors import ConfigError

from .test_bench_folders import _cli  # the bench command under the CLI's group

GRID = """
envs = ["cardgame"]
steps = 3
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]

[[experiment]]
name = "m"
methods = ["full"]
seeds = [0]
"""


def _bench(cwd: Path, *args: str) -> tuple[int, str]:
    """`kgagent bench ARGS` run from ``cwd``: (exit code, output)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        r = CliRunner().invoke(_cli(), ["bench", *args, "--no-plots"])
    return r.exit_code, r.output


def _spec(folder: Path, head: str = 'name = "t"\n', file: str = "grid.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / file
    p.write_text(head + GRID)
    return p


@pytest.mark.parametrize(
    "name",
    [
        '"../../etc"',
        '"/tmp/x"',
        '""',
        '"  "',
        '"."',
        '".."',
        '"a/b"',
        '"a\\\\b"',
        '"a\\u0000b"',
        '"a\\nb"',
        '"a\\u007fb"',
        '"' + "x" * 256 + '"',
        '"' + "é" * 128 + '"',  # 256 bytes of UTF-8
        "5",
    ],
)
def test_a_grid_name_that_is_not_a_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    """`name = "../../etc"` ran the grid into a sibling of the results folder; every name
    that is not one file name is refused as the grid is read, in one line."""
    spec = _spec(tmp_path / "a" / "b", f"name = {name}\n")
    with pytest.raises(ConfigError) as e:
        load_grid(spec)
    msg = str(e.value)
    assert "\n" not in msg and "name" in msg and len(msg) < 400


def test_a_grid_named_out_of_its_folder_writes_nothing(tmp_path: Path) -> None:
    """The tester's case, from the command line: exit 1, one line, nothing written."""
    here = tmp_path / "a" / "b"
    spec = _spec(here, 'name = "../../etc"\n')
    code, out = _bench(here, str(spec))
    assert code == 1 and out.startswith("error: ") and out.count("\n") == 1, out
    assert "not a plain name" in out and "no '/'" in out
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "grid.toml"]


def test_a_file_whose_name_is_not_a_plain_name_needs_a_name(tmp_path: Path) -> None:
    """Without `name`, the file's name names the grid: `...toml` would name it `..`."""
    spec = _spec(tmp_path, "", file="...toml")
    with pytest.raises(ConfigError, match=r"grid name '\.\.' .*give it one: name = "):
        load_grid(spec)


@pytest.mark.parametrize("name", ["t", "my grid", "grid-2.v3", "é" * 127, "x" * 255])
def test_plain_names_are_taken(tmp_path: Path, name: str) -> None:
    assert load_grid(_spec(tmp_path, f'name = "{name}"\n')).name == name


def test_a_cell_key_too_long_for_a_folder_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace('name = "m"', f'name = "{"e" * 240}"'))
    with pytest.raises(ConfigError, match="longer than 255 bytes"):
        load_grid(spec)


@pytest.mark.parametrize(
    "jobs, expect",
    [
        ("99999999999999999999", "is not in the range 1<=x<="),
        (str(MAX_JOBS + 1), "is not in the range 1<=x<="),
        ("0", "is not in the range"),
        ("-3", "is not in the range"),
        ("nan", "is not a valid integer"),
        ("inf", "is not a valid integer"),
        ("1.5", "is not a valid integer"),
    ],
)
def test_jobs_out_of_range_is_a_usage_error(tmp_path: Path, jobs: str, expect: str) -> None:
    """--jobs 99999999999999999999 ended in multiprocessing's OverflowError traceback."""
    spec = _spec(tmp_path)
    code, out = _bench(tmp_path, str(spec), "--jobs", jobs)
    assert code == 2 and expect in out and "Traceback" not in out, out
    assert not (tmp_path / "bench-results").exists()


@pytest.mark.parametrize("jobs", [0, -1, MAX_JOBS + 1, 10**20, True, 2.0])
def test_run_grid_refuses_jobs_out_of_range(tmp_path: Path, jobs: object) -> None:
    """From Python too: 0 handed out no cell and waited for ever, 10**20 overflowed."""
    opts = BenchOptions(out=tmp_path / "r", jobs=jobs, progress=False, plots=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"jobs must be a whole number from 1 to {MAX_JOBS}"):
        run_grid(load_grid(_spec(tmp_path)), opts)
    assert not (tmp_path / "r").exists()


def test_the_command_and_the_package_bound_jobs_alike() -> None:
    from kgagent.cli.bench_cmd import _MAX_JOBS

    assert _MAX_JOBS == MAX_JOBS


@pytest.mark.parametrize("extra", [[], ["--list"], ["--report-only"]])
def test_only_matching_no_cell_is_an_error(tmp_path: Path, extra: list[str]) -> None:
    """`--only zzz` ran nothing and exited 0 ("ran 0"); it says what a cell's name is."""
    spec = _spec(tmp_path)
    code, out = _bench(tmp_path, str(spec), "--only", "zzz", *extra)
    assert (
        code == 1 and out.startswith("error: --only 'zzz' matches no cell") and out.count("\n") == 1
    ), out
    assert "m.cardgame.full.offline.seed0.series0" in out and "--list" in out
    assert not (tmp_path / "bench-results").exists()


def test_only_matching_no_cell_is_an_error_from_python(tmp_path: Path) -> None:
    grid = load_grid(_spec(tmp_path))
    opts = BenchOptions(out=tmp_path / "r", only=["zzz", "yyy"], progress=False)
    for call in (run_grid, cell_states):
        with pytest.raises(BenchError, match=r"--only 'zzz' 'yyy' matches no cell of grid 't'"):
            call(grid, opts)
    opts.only = ["zzz", "full"]  # one that matches is enough
    assert [r["cell"] for r in cell_states(grid, opts)] == ["m.cardgame.full.offline.seed0.series0"]


@pytest.mark.parametrize(
    "line, expect",
    [
        ("series = 1000000000", "series must be a whole number from 1 to 100000"),
        ("rounds = 1000000000", "rounds must be a whole number from 1 to 10000"),
        ("seeds = 1000000000", r"seeds must be >= 1 \(at most 100000\)"),
        ("series = 50000\nseeds = 3", "150000 cells"),
    ],
)
def test_counts_that_would_fill_memory_are_refused(tmp_path: Path, line: str, expect: str) -> None:
    """A count with extra digits listed a billion cells or rounds before anything ran."""
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace("seeds = [0]", line))
    with pytest.raises(ConfigError, match=expect):
        load_grid(spec)


def test_a_bootstrap_that_would_fill_memory_is_refused(tmp_path: Path) -> None:
    """bootstrap = 10**12 ran every cell, then failed allocating 7 TiB for the report."""
    spec = _spec(tmp_path, 'name = "t"\nbootstrap = 1000000000000\n')
    with pytest.raises(ConfigError, match="bootstrap must be a whole number from 100 to 100000"):
        load_grid(spec)
