"""`kgagent config`: every field's effective value and where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch) -> None:
    """The figures below are the config's own (the Kùzu pass of the suite sets
    KGAGENT_ENGINE, which `kgagent config` shows winning: the last test)."""
    monkeypatch.delenv("KGAGENT_ENGINE", raising=False)
    monkeypatch.delenv("KGAGENT_MEMORY", raising=False)


def run(*args: str):
    return CliRunner().invoke(cli, ["config", *args], prog_name="kgagent")


def _file(tmp_path: Path) -> Path:
    p = tmp_path / "my config.toml"
    p.write_text('[memory]\nalpha = 0.5\ntheta_merge = 0.97\n[augment]\ntexts = ["记忆", "a"]\n')
    return p


SETS = ["--set", "memory.alpha=0.6", "--set", "memory.alpha=0.65", "--set", "run.ablation=no_graph"]


def test_table_shows_each_value_and_its_source(tmp_path: Path) -> None:
    p = _file(tmp_path)
    res = run("--config", str(p), *SETS)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["field", "value", "source"]
    rows = {line.split()[0]: line for line in lines[2:]}
    assert len(rows) == len(Config.specs())
    assert rows["memory.alpha"].split(None, 2)[1:] == ["0.65", "--set (last of 2; over the file)"]
    assert rows["memory.theta_merge"].endswith(f"file {p}")
    assert rows["memory.engine"].split(None, 2)[1:] == ['"ladybug"', "default (ours)"]
    assert rows["memory.c0"].endswith("default (paper: Eq. 1, §4)")
    assert rows["rewards.use_novelty"].split(None, 2)[1:] == ["false", "run.ablation = no_graph"]
    assert rows["memory.path"].split()[1] == "none"


def test_json_lists_field_value_and_source(tmp_path: Path) -> None:
    res = run("--config", str(_file(tmp_path)), *SETS, "--format", "json")
    assert res.exit_code == 0, res.output
    by = {r["field"]: r for r in json.loads(res.stdout)}
    assert by["memory.alpha"] == {
        "field": "memory.alpha",
        "value": 0.65,
        "source": "--set (last of 2; over the file)",
    }
    assert by["augment.texts"]["value"] == ["记忆", "a"] and by["memory.path"]["value"] is None


def test_toml_loads_back_as_a_config_file_with_the_same_values(tmp_path: Path) -> None:
    p = _file(tmp_path)
    extra = ["--set", "brain.temperature=none", "--set", "desktop.region=1,2,3,4"]
    res = run("--config", str(p), *SETS, *extra, "--format", "toml")
    assert res.exit_code == 0, res.output
    out = tmp_path / "effective.toml"
    out.write_text(res.stdout, encoding="utf-8")
    expected = Config.load(p, [s for s in SETS + extra if s != "--set"]).effective()
    assert Config.load(out).to_dict() == expected.to_dict()
    assert "alpha = 0.65  # --set (last of 2; over the file)" in res.stdout.splitlines()
    again = run("--config", str(out), "--format", "json")  # and its sources are the file
    assert {r["source"] for r in json.loads(again.stdout)} == {f"file {out}"}


def test_a_bad_setting_is_one_line_with_the_closest_field() -> None:
    res = run("--set", "memory.thetamerge=0.9")
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.startswith(
        "error: unknown config field memory.thetamerge; did you mean memory.theta_merge?"
    )
    assert len(res.stderr.splitlines()) == 1


def test_the_environment_that_wins_is_shown_winning(tmp_path: Path, monkeypatch) -> None:
    """KGAGENT_ENGINE and KGAGENT_MEMORY beat the config: `config` shows what a run uses."""
    monkeypatch.setenv("KGAGENT_ENGINE", "kuzu")
    monkeypatch.setenv("KGAGENT_MEMORY", str(tmp_path / "m3"))
    res = run("--set", "memory.engine=ladybug", "--set", f"memory.path={tmp_path / 'other'}")
    assert res.exit_code == 0, res.output
    rows = {r["field"]: r for r in json.loads(run("--format", "json").output)}
    assert rows["memory.engine"]["value"] == "kuzu"
    assert rows["memory.engine"]["source"].startswith("$KGAGENT_ENGINE (the environment wins")
    assert rows["memory.path"]["value"] == str(tmp_path / "m3")
    monkeypatch.setenv("KGAGENT_ENGINE", "bogus")
    res = run()
    assert res.exit_code == 1
    assert res.output.startswith("error: KGAGENT_ENGINE (in the environment): memory.engine")


def test_a_base_url_from_the_environment_is_shown_where_the_field_is_unset(monkeypatch) -> None:
    """$OPENAI_BASE_URL is where requests go while brain.base_url is unset (`play` says so):
    `config` showed `none`, the default."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://bob:secret@127.0.0.1:9/v1")
    rows = {r["field"]: r for r in json.loads(run("--format", "json").output)}
    assert rows["brain.base_url"] == {
        "field": "brain.base_url",
        "value": "http://bob:***@127.0.0.1:9/v1",  # the password masked, as everywhere
        "source": "$OPENAI_BASE_URL (brain.base_url is unset)",
    }
    rows = {
        r["field"]: r
        for r in json.loads(run("--set", "brain.base_url=http://y:1/v1", "--format", "json").output)
    }
    assert rows["brain.base_url"]["value"] == "http://y:1/v1"  # the field wins over it
    assert rows["brain.base_url"]["source"] == "--set"
