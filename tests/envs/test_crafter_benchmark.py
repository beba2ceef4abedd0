"""benchmarks/crafter.py's harness arithmetic: the Crafter score and the GUI log reader."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "crafter.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("crafter_benchmark", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NAMES = [f"a{i}" for i in range(22)]


def test_crafter_score_is_hafners_geometric_mean(bench) -> None:
    assert bench.crafter_score([], NAMES) == 0.0
    assert bench.crafter_score([[]] * 3, NAMES) == 0.0
    assert bench.crafter_score([NAMES] * 2, NAMES) == pytest.approx(100.0)
    # one achievement in half the episodes: s = 50 % for it, 0 % for the 21 others
    expected = math.exp(math.log(51.0) / 22) - 1
    assert bench.crafter_score([["a3"], []], NAMES) == pytest.approx(expected)


def test_gui_log_episodes_follow_starts_and_deaths(bench) -> None:
    log = "\n".join(
        [
            "--- kgagent: start 1 of python -m crafter.run_gui on :5 at 2026-11-24T10:00:00",
            "Actions:",
            "Achievement (1/22): collect_wood",
            "Episode done!",
            "",
            "Starting a new episode.",
            "Achievement (1/22): wake_up",
            "Achievement (2/22): collect_sapling",
            "--- kgagent: start 2 of python -m crafter.run_gui on :5 at 2026-11-24T10:01:00",
        ]
    )
    assert bench.parse_gui_log(log) == [["collect_wood"], ["wake_up", "collect_sapling"], []]


def test_a_variant_is_reported_and_paired_with_the_baselines_and_its_method(bench) -> None:
    from kgagent.bench.variants import Variant

    def run(method: str, seed: int, got: list[str]) -> dict:
        return {"method": method, "seed": seed, "round": 0, "steps": 100, "episodes": [got]}

    results = [run("full", s, ["a0"]) for s in (1, 2)]
    results += [run("random", s, []) for s in (1, 2)]
    results += [run("greedy", s, ["a0", "a1"][:s]) for s in (1, 2)]
    for r in results:
        r["world_steps"] = 100
    text = bench.report(
        results, ["full", "random"], NAMES, [Variant("greedy", "full", ("memory.c0=0.5",))]
    )
    assert "| greedy | 0 | 1 / 2 | 1.50 ± 0.50 |" in text
    assert "- full − random (round 0), n = 2: +1.00" in text
    assert "- greedy − random (round 0), n = 2: +1.50 ± 0.50 SE (t = 3.00" in text
    assert "- greedy − full (round 0), n = 2: +0.50 ± 0.50 SE (t = 1.00" in text
    assert "- variant greedy: full with memory.c0=0.5" in text


def test_every_learning_arm_that_resumed_its_memory_gets_its_rounds_line(bench) -> None:
    from kgagent.bench.variants import Variant

    def run(method: str, seed: int, rnd: int, n: int) -> dict:
        got = [f"a{i}" for i in range(n)]
        return {"method": method, "seed": seed, "round": rnd, "steps": 100, "episodes": [got]}

    results = [run("full", s, r, 1 + r) for s in (1, 2) for r in (0, 1)]
    results += [run("greedy", s, r, 1 + r * s) for s in (1, 2) for r in (0, 1)]
    results += [run("random", s, 0, 0) for s in (1, 2)]
    for r in results:
        r["world_steps"] = 100
    text = bench.report(results, ["full", "random"], NAMES, [Variant("greedy", "full", ())])
    assert "- full round 1 − round 0, n = 2: +1.00 ± 0.00 SE (no spread: t undefined; 2 up" in text
    assert "- greedy round 1 − round 0, n = 2: +1.50 ± 0.50 SE (t = 3.00, p = 0.205" in text
    assert "random round" not in text


def test_the_window_frame_rate_reaches_the_launched_command(bench, capsys) -> None:
    assert bench.GUI.format(fps=5, seed=3).endswith("--fps 5 --seed 3")
    with pytest.raises(SystemExit) as e:
        bench.main(["--window", "--fps", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().endswith("error: need --fps >= 1 (got 0)")


def test_every_round_is_paired_with_round_0_and_with_a_learning_baseline(bench) -> None:
    def run(method: str, seed: int, rnd: int, n: int) -> dict:
        got = [f"a{i}" for i in range(n)]
        return {"method": method, "seed": seed, "round": rnd, "steps": 100, "episodes": [got]}

    # full: 1, 2, 3 achievements in rounds 0-2 (seed 1), 1, 3, 1 (seed 2); no_graph: 1 always
    per_seed = {1: (1, 2, 3), 2: (1, 3, 1)}
    results = [run("full", s, r, n) for s, ns in per_seed.items() for r, n in enumerate(ns)]
    results += [run("no_graph", s, r, 1) for s in (1, 2) for r in (0, 1, 2)]
    results += [run("random", s, 0, 0) for s in (1, 2)]
    for r in results:
        r["world_steps"] = 100
    text = bench.report(results, ["full", "no_graph", "random"], NAMES)
    assert (
        "- full round 1 − round 0, n = 2: +1.50 ± 0.50 SE (t = 3.00, p = 0.205; 2 up, 0 even, "
        "0 down)" in text
    )
    assert (
        "- full round 2 − round 0, n = 2: +1.00 ± 1.00 SE (t = 1.00, p = 0.5; 1 up, 1 even, "
        "0 down)" in text
    )
    assert "- full − no_graph (round 0), n = 2: +0.00" in text
    assert "- full − no_graph (round 1), n = 2: +1.50" in text
    assert "- full − no_graph (round 2), n = 2: +1.00" in text
    assert "- full − random (round 0), n = 2: +1.00" in text
    assert "full − random (round 1)" not in text
