"""The VLM roles of Algorithm 1 and how a run picks who fills them.

``make_brain`` is the one place that decides between the model endpoint and
the offline brain, so that ``kgagent play`` works unchanged on a machine with
an endpoint and on a fresh one without.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from kgagent.brain.base import (
    Brain,
    ClusterAssignment,
    ClusterView,
    Judgement,
    SkillText,
    SkillView,
    Transition,
    Usage,
    View,
)
from kgagent.config import BrainConfig
from kgagent.errors import ConfigError

__all__ = [
    "Brain",
    "ClusterAssignment",
    "ClusterView",
    "Judgement",
    "SkillText",
    "SkillView",
    "Transition",
    "Usage",
    "View",
    "make_brain",
]

KINDS = ("auto", "vlm", "offline")


def make_brain(cfg: BrainConfig, *, seed: int = 0, log: Callable[[str], None] = print) -> Brain:
    """The brain ``cfg.kind`` asks for; ``"auto"`` uses an endpoint only if one is configured.

    An endpoint counts as configured when ``cfg.base_url`` is set (a local
    server needs no key) or the key variable ``cfg.api_key_env`` is non-empty
    (the SDK's default OpenAI URL is used). ``log`` hears once which brain runs,
    and later what a user should know about the endpoint (a refused answer mode,
    estimated tokens, a pause of the circuit breaker).
    """
    if cfg.kind not in KINDS:
        raise ConfigError(f"brain.kind must be one of {', '.join(KINDS)}, not {cfg.kind!r}")
    has_key = bool(os.environ.get(cfg.api_key_env))
    configured = bool(cfg.base_url) or has_key
    if cfg.kind == "vlm" and not configured:
        raise ConfigError(
            f"brain.kind='vlm' needs an endpoint: set brain.base_url (e.g. "
            f"http://localhost:8000/v1) or the ${cfg.api_key_env} environment variable"
        )
    if cfg.kind == "vlm" or (cfg.kind == "auto" and configured):
        from kgagent.brain.vlm import VLMBrain  # the openai SDK only when it is used

        where = cfg.base_url or "the OpenAI API"
        brain = VLMBrain(cfg, log=log)
        price = brain.chat
        log(
            f"brain: vlm, model {cfg.model} at {where} (${price.price_in:g} / "
            f"${price.price_out:g} per million tokens in / out, from {price.price_source})"
        )
        return brain
    from kgagent.brain.offline import OfflineBrain

    if cfg.kind == "auto":
        log(
            "brain: offline (no endpoint configured; set brain.base_url or "
            f"${cfg.api_key_env} to use a VLM)"
        )
    else:
        log("brain: offline")
    return OfflineBrain(cfg, seed=seed)
