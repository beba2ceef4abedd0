"""benchmarks/learning.py: its methods and variants, its report, its one-line errors."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kgagent.bench.variants import Variant

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def learning() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "learning_bench", ROOT / "benchmarks" / "learning.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _row(variant: str, method: str, seed: int, progression: float, env: str = "cardgame") -> dict:
    """The fields of one run's result that the report reads."""
    return {
        "env": env,
        "ablation": method,
        "variant": variant,
        "seed": seed,
        "progression": progression,
        "score": 0.0,
        "err": 0.0,
        "executions": 4,
        "cost_per_100_steps": 0.0,
        "nodes": 3,
        "skill_edges": 2,
        "similarity_edges": 0,
        "skills_augmented": 1,
        "actions": 10,
        "duration_s": 1.0,
    }


def test_a_variant_is_paired_with_no_graph_random_and_its_method(learning: ModuleType) -> None:
    rows = (
        [_row("full", "full", s, 2.0) for s in range(3)]
        + [_row("no_graph", "no_graph", s, 4.0) for s in range(3)]
        + [_row("random", "random", s, 0.0) for s in range(3)]
        + [_row("greedy", "full", s, 3.0 + s) for s in range(3)]
    )
    greedy = Variant("greedy", "full", ("memory.c0=0.5",))
    lines = learning.verdict(rows, {}, ["cardgame"], [greedy]).splitlines()
    # three seeds are too few for any verdict but "not shown"
    assert "full 2.00 vs random 0.00 (target ≥ 3×): not shown (n = 3 < 10)" in lines[0]
    assert "full 2.00 vs no_graph 4.00 (target ≥ 1.3×): not shown (n = 3 < 10)" in lines[1]
    assert lines[2].endswith(
        "greedy 4.00 vs no_graph 4.00 (1.00×); greedy − no_graph per seed "
        "+0.00 ± 0.58 SE (t = 0.00, p = 1; 1 up, 1 even, 1 down)"
    )
    assert "greedy 4.00 vs random 0.00 (∞)" in lines[3]
    assert "greedy 4.00 vs full 2.00 (2.00×); greedy − full per seed +2.00 ± 0.58 SE" in lines[4]
    assert len(lines) == 5


def test_a_variant_of_a_baseline_is_paired_with_it_once(learning: ModuleType) -> None:
    rows = [_row("no_graph", "no_graph", s, 1.0) for s in range(2)] + [
        _row("ng_c0", "no_graph", s, 2.0) for s in range(2)
    ]
    lines = learning.verdict(rows, {}, ["cardgame"], [Variant("ng_c0", "no_graph")]).splitlines()
    assert lines == [
        "- cardgame: ng_c0 2.00 vs no_graph 1.00 (2.00×); ng_c0 − no_graph per seed "
        "+1.00 ± 0.00 SE (no spread: t undefined; 2 up, 0 even, 0 down)"
    ]


def _series(*progressions: float) -> list[dict]:
    """One series of rounds: the fields of each round's result that the report reads."""
    return [_row("full", "full", r, p) for r, p in enumerate(progressions)]


def test_rounds_from_two_series_are_not_shown_however_steady(learning: ModuleType) -> None:
    """The researcher's run: 2 series × 3 rounds, each +1 from round 0 to round 2."""
    series = [_series(1.0, 1.0, 2.0), _series(0.0, 3.0, 1.0)]
    (line,) = learning.verdict([], {"cardgame": series}, ["cardgame"]).splitlines()
    assert line == (
        "- cardgame: rounds 0.50 / 2.00 / 1.50 (mean of 2 series); round 2 vs round 0 "
        "(target: better): not shown (n = 2 < 10); per series "
        "+1.00 ± 0.00 SE (no spread: t undefined; 2 up, 0 even, 0 down)"
    )


@pytest.mark.parametrize(
    ("full", "other", "factor", "expected"),
    [
        # ten seeds, x − 1.3·y shown above 0
        ([3.0, 4.0] * 5, [1.0, 1.0] * 5, 1.3, "met (p = "),
        # a difference inside the noise: 2.1× the means, and still not shown
        ([4.0, 0.0] * 5, [0.0, 1.9] * 5, 1.3, "not shown (p = "),
        # x − y shown, but x − 1.3·y inside the noise: the ratio is not shown either way
        ([2.0, 3.0] * 5, [2.0, 2.0] * 5, 1.3, "not shown (p = "),
        # 1.4× the means and x − y shown, x − 1.3·y not: not met
        ([3.5, 2.1] * 5, [2.0, 2.0] * 5, 1.3, "not shown (p = "),
        # x − 1.3·y shown below 0: missed
        ([2.0, 2.1] * 5, [2.0, 2.0] * 5, 1.3, "missed (p = "),
        # shown the other way
        ([1.0, 2.0] * 5, [3.0, 3.0] * 5, 1.0, "missed (p = "),
    ],
)
def test_a_target_is_met_only_when_its_paired_difference_is_shown(
    learning: ModuleType, full: list[float], other: list[float], factor: float, expected: str
) -> None:
    assert learning.target(full, other, factor).startswith(expected)


def test_the_rounds_table_says_its_skill_counts_are_the_memorys_so_far(
    learning: ModuleType,
) -> None:
    rows = _series(1.0, 2.0)
    for r, (augmented, pruned) in zip(rows, [(5, 0), (9, 1)]):
        r |= {"library_size": augmented - pruned, "skills_augmented": augmented}
        r |= {"skills_pruned": pruned}
    head, _, *lines = learning.rounds_table({"cardgame": [rows]}).splitlines()
    assert "| augmented, all rounds | pruned, all rounds |" in head
    assert lines[1].startswith("| cardgame | 0 | 1 | 2.000 |")


def test_the_table_has_a_row_per_method_and_variant_in_the_commands_order(
    learning: ModuleType,
) -> None:
    rows = [_row("no_novelty", "no_novelty", 0, 1.0), _row("full", "full", 0, 2.0)]
    rows += [_row("greedy", "full", 0, 3.0)]
    table = learning.table(rows, ["cardgame"], ["full", "no_novelty", "greedy"])
    # a config ablation outside the script's default four has its row too
    assert table.index("| full |") < table.index("| no_novelty |") < table.index("| greedy |")
    assert "| cardgame | greedy | 3.00 |" in table


def test_err_is_undefined_for_runs_that_executed_nothing(learning: ModuleType) -> None:
    """A random run executes no skill: its ERR is no rate (``-``), not a 0 in the mean."""
    rows = [_row("random", "random", s, 0.0) | {"executions": 0} for s in range(2)]
    rows += [_row("full", "full", 0, 1.0) | {"err": 0.5}, _row("full", "full", 1, 1.0)]
    rows[-1] |= {"err": 0.9, "executions": 0}  # executed nothing: left out of the mean
    table = learning.table(rows, ["cardgame"], ["full", "random"])
    assert "| cardgame | full | 1.00 ± 0.00 | 0.0 ± 0.0 | 0.500 |" in table
    assert "| cardgame | random | 0.00 ± 0.00 | 0.0 ± 0.0 | - |" in table
    series = [_row("full", "full", 0, 1.0) | {"executions": 0, "library_size": 0}]
    series[0] |= {"skills_pruned": 0}
    assert "| cardgame | 0 | 0 | 1.000 | 0.000 | - |" in learning.rounds_table(
        {"cardgame": [series]}
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--methods", "full,bogus"], "unknown method(s) bogus"),
        (["--variant", "bad"], "must look like NAME=METHOD:SECTION.FIELD=VALUE"),
        (["--variant", "full=no_graph:memory.c0=1"], "is a method's name"),
        (["--variant", "x=full:memory.c0=abc"], "variant 'x': memory.c0"),
        (["--set", "memory.nope=1"], "unknown config field memory.nope"),
    ],
)
def test_a_bad_method_variant_or_setting_is_one_line_before_any_run(
    learning: ModuleType, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        learning.main(["--steps", "1", "--seeds", "1", "--rounds", "0", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert ": error: " in err[-1] and message in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_a_variant_runs_in_the_grid_under_its_own_name(tmp_path: Path) -> None:
    """The script as a user runs it, in its own interpreter: its process pool then forks
    from a clean parent, not from the test process (whose engines have threads)."""
    args = ["--steps", "4", "--seeds", "1", "--rounds", "0", "--games", "cardgame"]
    args += ["--methods", "no_graph", "--variant", "ng_c0=no_graph:memory.c0=0.5"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where the script keeps the memories
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "learning.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "× no_graph, ng_c0 × 1 seed(s)" in out
    assert "| cardgame | no_graph |" in out and "| cardgame | ng_c0 |" in out
    assert "- cardgame: ng_c0 " in out and " vs no_graph " in out
    assert "- ng_c0: no_graph with memory.c0=0.5" in out
    (kept,) = tmp_path.glob("kgagent-bench-*")
    assert sorted(p.name for p in kept.iterdir()) == ["cardgame-ng_c0-0", "cardgame-no_graph-0"]
