"""Grid files: what a grid expands to, and one clear line for every kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgagent.bench.spec import load_grid
from kgagent.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _grid(tmp_path: Path, text: str):
    p = tmp_path / "grid.toml"
    p.write_text(text)
    return load_grid(p)


def test_default_grid_is_learning_py_default() -> None:
    """benchmarks/grids/learning.toml: 2 games × 4 methods × 3 seeds, and 4 rounds per game."""
    g = load_grid(REPO / "benchmarks" / "grids" / "learning.toml")
    methods, rounds = g.experiments
    assert len(methods.cells) == 2 * 4 * 3
    assert {c.method for c in methods.cells} == {"full", "no_graph", "no_similarity", "random"}
    assert sorted({c.run_seeds[0] for c in methods.cells}) == [0, 1, 2]
    assert all(c.steps == 300 for c in g.cells) and all(c.rounds == 1 for c in methods.cells)
    assert [c.run_seeds for c in rounds.cells] == [[0, 1, 2, 3], [0, 1, 2, 3]]
    cfg = methods.cells[0].config(0)
    assert (cfg.perception.encoder, cfg.perception.segmenter, cfg.brain.kind) == (
        "pixel",
        "opencv",
        "offline",
    )


def test_crafter_grid() -> None:
    g = load_grid(REPO / "benchmarks" / "grids" / "crafter.toml")
    keys = [c for c in g.cells if c.method == "random_keys"]
    assert len(keys) == 3 and all(c.baseline == "random_keys" for c in keys)
    assert g.metrics[0] == "achievements"


def test_series_and_round_seeds(tmp_path: Path) -> None:
    g = _grid(
        tmp_path,
        'envs = ["cardgame"]\nmethods = ["full"]\nseeds = [0, 5]\nseries = 3\nrounds = 2\n'
        "round_stride = 1000\n",
    )
    seeds = {(c.seed, c.series): c.run_seeds for c in g.cells}
    assert seeds[(0, 0)] == [0, 1000]
    assert seeds[(0, 2)] == [200, 1200]  # seed + 100·series + 1000·round
    assert seeds[(5, 1)] == [105, 1105]
    assert len(g.cells) == 6


def test_experiments_inherit_and_extend_set(tmp_path: Path) -> None:
    g = _grid(
        tmp_path,
        'envs = ["civgame"]\nsteps = 50\nset = ["memory.theta_simi=0.8"]\n'
        '[[experiment]]\nname = "a"\nmethods = ["full"]\nseeds = 1\nset = ["run.episode_limit=40"]\n'
        '[[experiment]]\nname = "b"\nmethods = ["no_graph"]\nseeds = 1\nsteps = 70\n',
    )
    a, b = g.cells
    assert a.config(0).memory.theta_simi == 0.8 and a.config(0).run.episode_limit == 40
    assert b.steps == 70 and b.config(0).run.ablation == "no_graph"


def test_named_methods_and_judges(tmp_path: Path) -> None:
    g = _grid(
        tmp_path,
        'envs = ["cardgame"]\nmethods = ["full", "strict"]\njudges = ["offline", "local"]\nseeds = 1\n'
        '[method.strict]\nablation = "full"\nset = ["memory.theta_simi=0.85"]\n'
        '[judge.local]\nbase_url = "http://localhost:8000/v1"\nmodel = "qwen"\n',
    )
    by = {(c.method, c.judge): c.config(0) for c in g.cells}
    assert by[("strict", "offline")].memory.theta_simi == 0.85
    vlm = by[("full", "local")].brain
    assert (vlm.kind, vlm.base_url, vlm.model) == ("vlm", "http://localhost:8000/v1", "qwen")
    assert by[("full", "offline")].brain.kind == "offline"


JUDGED = (
    'envs = ["cardgame"]\nmethods = ["full"]\njudges = ["offline", "local"]\nseeds = 1\n'
    '[judge.local]\nbase_url = "http://localhost:8000/v1"\n'
)


@pytest.mark.parametrize(
    ("text", "base", "cli", "expect"),
    [
        (JUDGED, {}, [], "stop"),  # a judge with an endpoint: every answer from it, or none
        (JUDGED + 'set = ["brain.on_failure=offline"]\n', {}, [], "offline"),  # the judge's
        ('set = ["brain.on_failure=offline"]\n' + JUDGED, {}, [], "offline"),  # the grid's
        (JUDGED, {"brain": {"on_failure": "offline"}}, [], "offline"),
        (JUDGED, {}, ["brain.on_failure=offline"], "offline"),
    ],
)
def test_a_judge_with_an_endpoint_stops_on_failure_unless_told(
    tmp_path: Path, text: str, base: dict, cli: list[str], expect: str
) -> None:
    (tmp_path / "grid.toml").write_text(text)
    g = load_grid(tmp_path / "grid.toml", base=base, overrides=cli)
    by = {c.judge: c.config(0).brain for c in g.cells}
    assert by["local"].on_failure == expect
    assert by["offline"].on_failure == "offline"  # the offline brain has no endpoint to fail


def test_digest_follows_the_cell_not_the_grid(tmp_path: Path) -> None:
    base = 'envs = ["cardgame"]\nmethods = ["full"]\nsteps = 20\nseeds = [0]\n'
    one = _grid(tmp_path, base).cells[0]
    more = _grid(tmp_path, base.replace("[0]", "[0, 1]")).cells[0]
    longer = _grid(tmp_path, base.replace("20", "30")).cells[0]
    assert one.digest == more.digest  # adding seeds leaves finished cells finished
    assert one.digest != longer.digest


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("envs = [", "not valid TOML"),
        ('envs = ["cardgame"]\nstep = 5\n', "unknown key 'step'"),
        ('envs = ["nogame"]\n', "unknown environment 'nogame'"),
        ("methods = ['full']\n", "envs is required"),
        ('envs = ["cardgame"]\nmethods = ["fulll"]\n', "unknown method 'fulll'"),
        ('envs = ["cardgame"]\nmethods = ["random_keys"]\n', "gym:ID"),
        ('envs = ["cardgame"]\nseeds = 0\n', "seeds must be >= 1"),
        ('envs = ["cardgame"]\nseeds = [1, 1]\n', "lists a seed twice"),
        ('envs = ["cardgame"]\nsteps = 0\n', "steps must be a whole number >= 1"),
        ('envs = ["cardgame"]\nrounds = "4"\n', "rounds must be a whole number"),
        ('envs = ["cardgame"]\nset = ["memory.nope=1"]\n', "unknown config field memory.nope"),
        ('envs = ["cardgame"]\nset = ["memory.theta_simi=2"]\n', "memory.theta_simi"),
        ('envs = ["cardgame"]\njudges = ["gpt"]\n', "unknown judge 'gpt'"),
        ('envs = ["cardgame"]\n[judge.gpt]\nmodel = "x"\n', "base_url must be"),
        ('envs = ["cardgame"]\nmethods = ["full"]\nreference = "random"\n', "reference 'random'"),
        ('envs = ["cardgame"]\n[method.x]\nablation = "nope"\n', "unknown ablation 'nope'"),
        (
            'envs = ["cardgame"]\n[[experiment]]\nname="a"\n[[experiment]]\nname="a"\n',
            "two experiments",
        ),
        ('envs = ["cardgame"]\nconfidence = 2.0\n', "confidence"),
        ('envs = ["cardgame"]\nmethods = ["full", "full"]\n', "method 'full' is listed twice"),
        ('envs = ["cardgame", "cardgame"]\n', "environment 'cardgame' is listed twice"),
        (
            'envs = ["cardgame"]\nmetrics = ["nosuchmetric", "score"]\n',
            "metrics: unknown figure 'nosuchmetric'; known: progression, score, err,",
        ),
        ('envs = ["cardgame"]\nmetrics = []\n', "metrics must name at least one"),
        ('envs = ["cardgame"]\nmetrics = ["score", "score"]\n', "'score' is listed twice"),
        # an experiment is named by its name wherever the error is found, by its index without
        (
            'envs = ["cardgame"]\n[[experiment]]\nname = "tiny"\nrefernce = "full"\n',
            "experiment 'tiny': unknown key 'refernce'",
        ),
        (
            'envs = ["cardgame"]\n[[experiment]]\nname = "tiny"\nsteps = 0\n',
            "experiment 'tiny': steps must be",
        ),
        (
            'envs = ["cardgame"]\n[[experiment]]\nname = "a"\n[[experiment]]\nrefernce = "x"\n',
            "experiment 2: unknown key 'refernce'",
        ),
    ],
)
def test_bad_grid_is_one_line(tmp_path: Path, text: str, expect: str) -> None:
    with pytest.raises(ConfigError) as e:
        _grid(tmp_path, text)
    msg = str(e.value)
    assert expect in msg
    assert "\n" not in msg and str(tmp_path / "grid.toml") in msg


def test_cli_options_apply_to_every_cell(tmp_path: Path) -> None:
    p = tmp_path / "grid.toml"
    p.write_text('envs = ["cardgame"]\nmethods = ["full", "no_graph"]\nseeds = 1\n')
    g = load_grid(p, base={"memory": {"theta_simi": 0.75}}, overrides=["run.episode_limit=33"])
    for c in g.cells:
        cfg = c.config(0)
        assert cfg.memory.theta_simi == 0.75 and cfg.run.episode_limit == 33
    with pytest.raises(ConfigError, match="unknown config section"):
        load_grid(p, overrides=["nosection.x=1"])


def test_experiment_names(tmp_path: Path) -> None:
    one = _grid(tmp_path, 'name = "g1"\nenvs = ["cardgame"]\nseeds = 1\n')
    assert [e.name for e in one.experiments] == ["g1"]
    two = _grid(
        tmp_path, 'name = "g2"\nenvs = ["cardgame"]\nseeds = 1\n[[experiment]]\n[[experiment]]\n'
    )
    assert [e.name for e in two.experiments] == ["experiment1", "experiment2"]


def test_metrics_are_the_figures_of_a_run(tmp_path: Path) -> None:
    """Every figure runs.csv can hold is a metric a grid may name (the committed results')."""
    from kgagent.bench.results import ID_COLUMNS, read_runs
    from kgagent.bench.spec_values import known_metrics

    known = set(known_metrics())
    for folder in (REPO / "docs" / "results").iterdir():
        columns = {k for row in read_runs(folder) for k in row} - set(ID_COLUMNS)
        assert columns <= known, (folder.name, columns - known)
    g = _grid(tmp_path, 'envs = ["cardgame"]\nmetrics = ["score", "achievements", "nodes_added"]\n')
    assert g.metrics == ["score", "achievements", "nodes_added"]


def test_gym_ids_are_looked_up_when_the_grid_is_read(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    with pytest.raises(ConfigError) as e:
        _grid(tmp_path, 'envs = ["gym:NoSuchEnv-v0"]\n')
    msg = str(e.value)
    assert "unknown Gymnasium environment 'gym:NoSuchEnv-v0' (" in msg and "NoSuchEnv" in msg
    assert "\n" not in msg and "pprint_registry" in msg
    with pytest.raises(ConfigError, match="version `v9`"):
        _grid(tmp_path, 'envs = ["gym:CartPole-v9"]\n')
    # known ids, an id without its version (the latest), and Crafter (the adapter's own)
    g = _grid(tmp_path, 'envs = ["gym:CartPole-v1", "gym:CartPole", "gym:crafter"]\n')
    assert g.experiments[0].envs == ["gym:CartPole-v1", "gym:CartPole", "gym:crafter"]


def test_error_line_names_the_error_cleanly() -> None:
    from kgagent.bench.cell import error_line
    from kgagent.errors import EnvironmentError_

    err = EnvironmentError_("gym:X has a Box action space;\n keys map only to Discrete actions")
    assert error_line(err) == (
        "EnvironmentError: gym:X has a Box action space; keys map only to Discrete actions"
    )
    assert error_line(ValueError("bad")) == "ValueError: bad"
