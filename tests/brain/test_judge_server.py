"""The ground-truth judge (benchmarks/judge_server.py) behind the normal VLM path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgagent.actions import Action, Operation
from kgagent.brain import prompts
from kgagent.brain.base import SkillView, Transition, View
from kgagent.brain.client import EndpointMemory
from kgagent.brain.vlm import VLMBrain
from kgagent.config import BrainConfig
from kgagent.envs.base import Env, GroundTruth

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


js = _load("judge_server")


class Counter(Env):
    """'right' advances a counter (progress), 'left' changes the screen only."""

    name = "counter"

    def __init__(self) -> None:
        self.count = 0
        self.shade = 0

    @property
    def size(self) -> tuple[int, int]:
        return (120, 80)

    def _img(self) -> np.ndarray:
        img = np.full((80, 120, 3), 40 * self.shade % 255, np.uint8)
        img[10:20, 10 : 10 + 10 * self.count] = 255
        return img

    def reset(self, seed: int | None = None):
        self.count = self.shade = 0
        return self._img(), {}

    def step(self, action: Action):
        if action.key == "right":
            self.count += 1
        else:
            self.shade += 1
        return self._img(), 0.0, False, False, {}

    def observe(self) -> np.ndarray:
        return self._img()

    def ground_truth(self) -> GroundTruth:
        return GroundTruth(progression=float(self.count), score=0.0)


def tr_of(a: np.ndarray, b: np.ndarray) -> Transition:
    return Transition(View(a, np.ones(4), "a"), View(b, np.ones(4) * 2, "b"), 0.1, True, False)


@pytest.fixture
def judged():
    env = js.TruthRecorder(Counter(), BrainConfig(image_max_side=64))
    judge = js.GroundTruthJudge(env, BrainConfig())
    server = js.JudgeServer(judge).start()
    cfg = BrainConfig(
        kind="vlm",
        base_url=server.base_url,
        model="judge",
        api_key_env="KGAGENT_TEST_UNSET_KEY",
        image_max_side=64,
        max_retries=0,
    )
    brain = VLMBrain(cfg, log=lambda s: None, endpoints=EndpointMemory())
    yield env, judge, brain
    server.stop()


def test_evaluate_answers_from_the_environment(judged):
    env, judge, brain = judged
    skill = SkillView("k", "press right", "", [Operation("key", key="right")])
    s0, _ = env.reset()
    s1 = env.step(Action("key", key="right"))[0]
    s2 = env.step(Action("key", key="left"))[0]
    assert brain.evaluate(skill, tr_of(s0, s1)).progressive is True
    assert brain.evaluate(skill, tr_of(s1, s2)).progressive is False  # changed, no progress
    assert brain.evaluate(skill, tr_of(s2, s0)).progressive is False  # back: no progress
    assert judge.judged == 3 and judge.misses == 0 and judge.progressive == 1
    # a screen the environment never showed is a miss, judged by the offline rule
    odd = np.full((80, 120, 3), 7, np.uint8)
    brain.evaluate(skill, tr_of(s2, odd))
    assert judge.misses == 1
    assert brain.usage.failed_calls == 0 and judge.requests["evaluate"] == 4


def test_other_roles_follow_the_offline_rules(judged):
    env, judge, brain = judged
    s0, _ = env.reset()
    s1 = env.step(Action("key", key="left"))[0]
    ops = [Operation("key", key="left")]
    text = brain.describe_skill(ops, tr_of(s0, s1))
    assert text is not None and text.name.startswith("press left -> known screen #")
    assert judge.sources[text.name]  # the server saw where the skill was used
    assert brain.usage.failed_calls == 0


def test_prompt_parsing_round_trip():
    text = prompts.evaluate_text("n", "d", [Operation("key", key="x")], 0.0003, True, False)
    assert js.measured(text) == (pytest.approx(0.0003), True, False)
    text = prompts.describe_skill_text([], 0.25, True, True)
    assert js.measured(text) == (pytest.approx(0.25), True, True)
    line = prompts.cluster_line("c1", "moves", "desc (with parens)", ["a -> b #1", "c"] * 4, 5)
    assert js.listed(prompts.choose_cluster_text([line]), "Clusters:") == [
        ("c1", "moves", ["a -> b #1", "c", "a -> b #1", "c", "a -> b #1"])
    ]


def test_progress_signal_per_environment():
    assert js.progress_signal(GroundTruth(2.0, 40.0)) == (2.0, 40.0)
    crafter = GroundTruth(3.0, 2.9, extra={"achievements": ["a", "b", "c"], "env_steps": 9})
    assert js.progress_signal(crafter) == (3.0,)  # achievements only
    other = GroundTruth(120.0, 5.0, extra={"env_steps": 120})
    assert js.progress_signal(other) == (5.0,)  # steps are not progress
    assert js.progressed((1.0, 5.0), (1.0, 6.0)) and not js.progressed((1.0, 5.0), (0.0, 5.0))


def _result(
    variant: str, method: str, seed: int, progression: float, env: str, requests: int = 50
) -> dict:
    """One run's result as benchmarks/judges.py's ``one_run`` returns it (the fields its
    report reads); ``requests`` evaluate calls, each sent to the endpoint once."""
    return {
        "judge": "truth",
        "env": env,
        "ablation": method,
        "variant": variant,
        "seed": seed,
        "progression": progression,
        "score": 0.0,
        "library_size": 3,
        "steps": 100,
        "role_calls": {"evaluate": requests},
        "requests": {"evaluate": requests},
        "tokens": 0,
        "estimated_tokens": 0,
        "cost_usd": 0.0,
        "judged": 0,
        "judged_progressive": 0,
        "misses": 0,
    }


def test_the_judge_report_compares_crafter_by_distinct_achievements() -> None:
    judges = _load("judges")

    def row(method: str, seed: int, progression: float, achievements: int | None) -> dict:
        r = _result(method, method, seed, progression, env="gym:crafter")
        if achievements is not None:
            r["achievements"] = achievements
        return r

    # progression (this episode's count at the end) says no_graph; the run says full
    rows = [row("full", s, 0.0, 6) for s in range(3)] + [
        row("no_graph", s, 2.0, 4) for s in range(3)
    ]
    verdict = judges.verdicts(rows)
    assert "distinct achievements full 6.00 vs no_graph 4.00 (1.50×" in verdict
    assert "(achievements)" in judges.table(rows)
    # games without achievements keep their progression
    plain = [{**r, "env": "civgame"} for r in rows]
    for r in plain:
        r.pop("achievements")
    assert "progression full 0.00 vs no_graph 2.00" in judges.verdicts(plain)


def test_a_variant_is_paired_with_no_graph_and_with_the_method_it_varies() -> None:
    judges = _load("judges")
    from kgagent.bench.variants import Variant

    def row(variant: str, method: str, seed: int, progression: float) -> dict:
        requests = 40 if method != "no_graph" else 80
        return _result(variant, method, seed, progression, env="cardgame", requests=requests)

    rows = (
        [row("full", "full", s, 2.0) for s in range(3)]
        + [row("no_graph", "no_graph", s, 4.0) for s in range(3)]
        + [row("greedy", "full", s, 3.0 + s) for s in range(3)]
    )
    lines = judges.verdicts(rows, [Variant("greedy", "full", ("memory.c0=0.5",))]).splitlines()
    assert len(lines) == 3
    assert "progression full 2.00 vs no_graph 4.00 (0.50×" in lines[0]
    assert "greedy 4.00 vs no_graph 4.00 (1.00×" in lines[1] and "VLM requests 50 %" in lines[1]
    assert "greedy 4.00 vs full 2.00 (2.00×)" in lines[2]
    assert "greedy − full per seed +2.00 ± 0.58 SE" in lines[2] and "target" not in lines[2]
    table = judges.table(rows)
    assert table.index("| full |") < table.index("| no_graph |") < table.index("| greedy |")
