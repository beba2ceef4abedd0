"""A password in an endpoint's URL, and the API key, stay out of the results folder.

Results folders are shared: ``grid.toml``, ``cell.json``, the step logs, ``summary.json``
and ``report.md`` keep the URL with its password masked (``http://alice:***@host/v1``),
enough to run the grid again, while the cells still run with the real URL.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kgagent.bench import BenchOptions, load_grid, run_grid

PASSWORD = "Hunter2Secret"
CLI_PASSWORD = "CliPassword77"
CONFIG_PASSWORD = "CfgFilePass99"
KEY = "sk-BenchKeyValue0123456789"
RAY_KEY = "PlainRayKey0123"  # not sk-…: masked as a value of Ray's env_vars
URL = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
SHOWN = "http://alice:***@127.0.0.1:9/v1"

GRID = f"""
name = "secrets"
envs = ["cardgame"]
steps = 3
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]

[judge.remote]
base_url = "{URL}"
model = "m"
api_key_env = "BENCH_SECRET_KEY"
set = ["brain.timeout_s=1", "brain.max_retries=0", "brain.on_failure=offline"]

[[experiment]]
name = "e"
judges = ["remote"]
methods = ["full"]
seeds = [0]
"""
#: A harness baseline writes a step log of its own (its header holds the configuration).
KEYS = """
[[experiment]]
name = "keys"
envs = ["gym:CartPole-v1"]
judges = ["remote"]
methods = ["random_keys"]
seeds = [0]
"""


def _grid(tmp_path: Path, text: str = GRID, **kwargs):
    p = tmp_path / "grid.toml"
    p.write_text(text)
    return load_grid(p, **kwargs)


def test_cell_runs_with_the_password_and_records_it_masked(tmp_path: Path) -> None:
    base = {"brain": {"base_url": f"http://bob:{CONFIG_PASSWORD}@127.0.0.1:9/v1"}}
    cli = [f"brain.base_url=http://carol:{CLI_PASSWORD}@127.0.0.1:9/v1"]
    (cell,) = _grid(tmp_path, base=base, overrides=cli).cells
    assert cell.config(0).brain.base_url.endswith(f"{CLI_PASSWORD}@127.0.0.1:9/v1")
    assert URL in str(cell.to_dict())  # what a worker gets, in memory, to run
    shown = str(cell.shown())
    for secret in (PASSWORD, CLI_PASSWORD, CONFIG_PASSWORD):
        assert secret not in shown
    assert SHOWN in shown and "http://bob:***@127.0.0.1:9/v1" in shown


def test_digest_does_not_hold_or_depend_on_the_password(tmp_path: Path) -> None:
    """The digest a finished cell records is of the masked spec: another password (or the
    masked grid.toml of a results folder) is the same cell, and no hash of it is written."""
    (a,) = _grid(tmp_path).cells
    (b,) = _grid(tmp_path, GRID.replace(PASSWORD, "AnotherPass42")).cells
    (c,) = _grid(tmp_path, GRID.replace(URL, SHOWN)).cells
    assert a.digest == b.digest == c.digest
    (d,) = _grid(tmp_path, GRID.replace("127.0.0.1:9", "127.0.0.1:10")).cells
    assert d.digest != a.digest


def test_results_folder_holds_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A grid run end to end (the endpoint unreachable: offline answers) with a password in
    the judge's URL, in --config and in --set, and a key in the environment."""
    monkeypatch.setenv("BENCH_SECRET_KEY", KEY)
    gym = importlib.util.find_spec("gymnasium") is not None
    base = {"brain": {"timeout_s": 1.0, "base_url": f"http://bob:{CONFIG_PASSWORD}@h:9/v1"}}
    cli = [f"brain.base_url=http://carol:{CLI_PASSWORD}@127.0.0.1:9/v1"]
    grid = _grid(tmp_path, GRID + (KEYS if gym else ""), base=base, overrides=cli)
    out = tmp_path / "results"
    ray_env = {"env_vars": {"OTHER_KEY": RAY_KEY}}
    command = f"kgagent bench grid.toml --set {cli[0]} --ray-runtime-env '{json.dumps(ray_env)}'"
    opts = BenchOptions(
        out=out, jobs=1, progress=False, plots=False, command=command, runtime_env=ray_env
    )
    summary = run_grid(grid, opts)
    assert summary["ran"] == len(grid.cells) and not summary["failed"]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "cell.json" for p in written)
    if gym:
        assert any(p.suffix == ".jsonl" and "random_keys" in p.name for p in written)
    for p in written:
        data = p.read_bytes()
        for secret in (PASSWORD, CLI_PASSWORD, CONFIG_PASSWORD, KEY, RAY_KEY):
            assert secret.encode() not in data, f"{secret} in {p.relative_to(out)}"
    assert SHOWN in (out / "grid.toml").read_text()
    assert "carol:***@" in (out / "summary.json").read_text()
    assert "--set brain.base_url=http://carol:***@" in (out / "report.md").read_text()

    again = load_grid(out / "grid.toml", base=base, overrides=cli)  # the masked copy re-runs
    assert [c.digest for c in again.cells] == [c.digest for c in grid.cells]
    assert run_grid(grid, opts)["ran"] == 0  # finished cells are recognised
