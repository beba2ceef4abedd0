"""Prompts stay bounded as the library grows: nearest clusters only, batches that fit."""

from __future__ import annotations

import re

import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import ClusterView, SkillView, View
from kgagent.brain.relevance import batch_size, rank_clusters, within

from .fake_endpoint import PROFILES, tool_reply
from .helpers import brain_for


def big_library(n_clusters: int = 40, members: int = 25, dim: int = 16):
    rng = np.random.default_rng(3)
    clusters = []
    for i in range(n_clusters):
        states = rng.normal(size=(4, dim))
        clusters.append(
            ClusterView(
                f"c{i:02d}",
                f"cluster number {i}",
                "does a family of things " * 8,
                [f"skill {i}-{j} with a rather long descriptive name" for j in range(members)],
                states,
            )
        )
    return clusters


def test_choose_cluster_offers_the_nearest_few_under_a_cap(endpoint):
    clusters = big_library()
    target = clusters[17]
    view = View(np.zeros((40, 60, 3), np.uint8), target.state_features[2], "s")
    b = brain_for(endpoint)
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": "c17"}))
    assert b.choose_cluster(view, clusters) == "c17"
    text = endpoint.requests[0]["body"]["messages"][1]["content"][0]["text"]
    listed = re.findall(r"^- id='(c\d+)'", text, re.M)
    assert listed[0] == "c17"  # the cluster whose states hold this screen comes first
    assert len(listed) == b.settings.prompt_clusters == 8
    assert "+20 more" in text and "(32 less relevant cluster(s) not listed.)" in text
    listing = text[text.index("Clusters:") :]
    assert len(listing) <= b.settings.prompt_max_chars + 100
    # an id that was not offered is not accepted (asked again)
    unlisted = next(c.id for c in clusters if c.id not in listed)
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": unlisted}))
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": None}))
    assert b.choose_cluster(view, clusters) is None
    assert len(endpoint.requests) == 3 and b.usage.failed_calls == 0


def test_char_cap_limits_the_listing(endpoint):
    b = brain_for(endpoint, prompt_max_chars=900)
    clusters = big_library()
    view = View(np.zeros((40, 60, 3), np.uint8), clusters[0].state_features[0], "s")
    endpoint.push(tool_reply("choose_cluster", {"cluster_id": None}))
    b.choose_cluster(view, clusters)
    text = endpoint.requests[0]["body"]["messages"][1]["content"][0]["text"]
    lines = re.findall(r"^- id=.*$", text, re.M)
    assert 1 <= len(lines) < 8 and sum(len(x) + 1 for x in lines) <= 900


def test_ranking_helpers():
    a = ClusterView("a", "", "", [], np.array([[1.0, 0.0]]))
    b = ClusterView("b", "", "", [], np.array([[0.0, 1.0]]))
    c = ClusterView("c", "", "", [], None)
    assert [x.id for x in rank_clusters([np.array([0.1, 1.0])], [c, a, b])] == ["b", "a", "c"]
    assert [x.id for x in rank_clusters([None], [b, c, a])] == ["a", "b", "c"]  # by id
    assert within(["x" * 50] * 5, 3, 120) == ["x" * 50] * 2
    assert within(["x" * 500], 3, 120) == ["x" * 500]  # one line always goes
    assert batch_size(8, 512) == 6 and batch_size(8, None) == 8 and batch_size(8, 60) == 1


def new_skills(n: int, dim: int = 16) -> list[SkillView]:
    rng = np.random.default_rng(5)
    return [
        SkillView(
            f"k{i:02d}",
            f"skill {i}",
            "does something",
            [Operation("click", object_id=f"obj-{i}")],
            source_features=rng.normal(size=(2, dim)),
        )
        for i in range(n)
    ]


def test_cluster_skills_in_batches_that_fit(endpoint):
    endpoint.profile = PROFILES["vllm"]
    b = brain_for(endpoint, max_output_tokens=512, cluster_max_batches=4)
    skills = new_skills(30)
    out = b.cluster_skills(skills, [])
    per_request = [
        re.findall(r"^- id='(k\d+)'", r["body"]["messages"][1]["content"][0]["text"], re.M)
        for r in endpoint.requests
    ]
    assert [len(x) for x in per_request] == [6, 6, 6, 6]  # 512 tokens hold 6 answers
    assert [a.skill_id for a in out] == [s.id for s in skills[:24]]  # the rest: next round
    # the first batch opened a cluster; later batches were offered it and joined it
    later = endpoint.requests[1]["body"]["messages"][1]["content"][0]["text"]
    assert "id='new-cluster-1' name=\"first group\"" in later
    assert {(a.cluster_id, a.new_name) for a in out} == {(None, "first group")}
    assert b.usage.calls == 4 and b.usage.failed_calls == 0
