"""A step's `decision`: what its path was chosen from, checked against what it did."""

from __future__ import annotations

import pytest

from kgagent.agent.decision import TOP, hq_decision
from kgagent.agent.runner import Runner
from kgagent.records import HQCandidate
from kgagent.runlog_read import read_log


def test_stage_one_lists_candidates_by_eq4_probability() -> None:
    cands = [HQCandidate(f"k{i}", w, "s", "t") for i, w in enumerate([1.0, 3.0, 0.0])]
    d = hq_decision(cands, stale=2)
    assert (d["candidates"], d["stale"]) == (3, 2)
    assert d["top"] == [["k1", 3.0, 0.75], ["k0", 1.0, 0.25], ["k2", 0.0, 0.0]]
    many = [HQCandidate(f"k{i}", 1.0, "s", "t") for i in range(3 * TOP)]
    assert len(hq_decision(many, 0)["top"]) == TOP  # bounded; the count says how many


def test_every_step_says_what_its_path_was_chosen_from(cfg, tmp_path) -> None:
    cfg.run.env, cfg.run.seed = "cardgame", 1
    s = Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda m: None).run(60)
    _, steps, _ = read_log(s.log_path)
    seen = set()
    for r in steps:
        d = r["decision"]
        hq = d["hq"]
        ran = [e["skill_id"] for e in r["executions"] if e["path"] == "hq"]
        assert hq["ran"] == ran, r["step"]
        assert len(hq["top"]) <= min(TOP, hq["candidates"])
        assert sum(hq["skipped"].values()) + len(ran) <= hq["candidates"]
        by_cluster = [e for e in r["executions"] if e["path"] == "cluster"]
        if by_cluster:  # stage 2 ran a skill: the one picked, from the chosen cluster
            c = d["cluster"]
            assert c["chosen"] == r["cluster_id"] and c["picked"] == by_cluster[0]["skill_id"]
            assert not c["pure_exploration"] and c["top"][-1][0] == "explore"
            assert sum(q for _, _, q in c["top"]) == pytest.approx(1.0, abs=1e-3) or (
                c["arms"] > TOP + 1
            )
            seen.add("cluster")
        elif "cluster" in d and d["cluster"]["chosen"] is not None:
            assert d["cluster"]["picked"] == "explore"  # the explore arm sent it to augment
            seen.add("explore")
        if ran:
            seen.add("hq")
    assert {"hq", "cluster"} <= seen, seen


def test_an_evaluated_execution_carries_the_judgement_behind_its_rewards(cfg, tmp_path) -> None:
    cfg.run.env, cfg.run.seed = "civgame", 2
    s = Runner(cfg, memory_path=tmp_path / "m", progress=False, log=lambda m: None).run(25)
    _, steps, _ = read_log(s.log_path)
    judged = [e for r in steps for e in r["executions"] if e["judgement"] is not None]
    assert judged and all(e["evaluated"] for e in judged)
    for e in judged:
        j = e["judgement"]
        assert j["reason"].startswith("change=") and len(j["reason"]) <= 300
        # the offline brain's terms follow its judgement (docs/brains.md)
        assert (e["r_semantic"] > 0) == bool(j["consistent"]) or e["echo"]
