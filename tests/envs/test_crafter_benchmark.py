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
