"""Shared helpers of the brain tests: configs and views for the fake endpoint."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import ClusterView, SkillView, Transition, View
from kgagent.brain.client import EndpointMemory
from kgagent.brain.offline import OfflineBrain
from kgagent.brain.vlm import VLMBrain
from kgagent.config import BrainConfig

from .fake_endpoint import FakeEndpoint

PRICE_IN, PRICE_OUT = 2.5, 10.0


def make_cfg(endpoint: FakeEndpoint, **kw) -> BrainConfig:
    """A config for the fake endpoint; fields BrainConfig does not declare (yet) are set
    as attributes, which is how :class:`BrainSettings` reads them."""
    base = dict(
        kind="vlm",
        base_url=endpoint.base_url,
        model="test-model",
        api_key_env="KGAGENT_TEST_UNSET_KEY",
        timeout_s=5.0,
        max_retries=2,
        backoff_s=0.01,
        image_max_side=64,
        price_in_per_mtok=PRICE_IN,
        price_out_per_mtok=PRICE_OUT,
    )
    base.update(kw)
    declared = set(BrainConfig.__dataclass_fields__)
    cfg = BrainConfig(**{k: v for k, v in base.items() if k in declared})
    for k, v in base.items():
        if k not in declared:
            setattr(cfg, k, v)
    return cfg


def brain_for(endpoint: FakeEndpoint, **kw) -> VLMBrain:
    logs: list[str] = []
    b = VLMBrain(make_cfg(endpoint, **kw), log=logs.append, endpoints=EndpointMemory())
    b.test_logs = logs  # type: ignore[attr-defined]
    return b


def offline_of(b: VLMBrain) -> OfflineBrain:
    return OfflineBrain(b.cfg)


def transition(w: int = 300, h: int = 200) -> Transition:
    rng = np.random.default_rng(0)
    before = View(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), np.eye(4)[0], "s1")
    after = View(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), np.eye(4)[1], "s2")
    return Transition(before, after, change=0.25, new_in_episode=True, new_in_graph=True)


def skill(**kw) -> SkillView:
    base = dict(
        id="k1",
        name="open panel",
        description="opens the side panel",
        operations=[Operation("click", object_id="obj-3")],
    )
    base.update(kw)
    return SkillView(**base)


def clusters() -> list[ClusterView]:
    return [
        ClusterView("c1", "navigation", "moves between screens", ["open panel"]),
        ClusterView("c2", "confirm", "accepts dialogs", ["press enter"]),
    ]


EVAL_OK = {"is_consistent": True, "is_progressive": False, "reason": "panel opened"}
