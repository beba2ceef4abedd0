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
from kgagent.brain.endpoint import BASE_URL_ENV, EndpointUnusable, endpoint_url, shown_url
from kgagent.config import BrainConfig
from kgagent.config_fields import refusal, spec_of
from kgagent.errors import ConfigError

__all__ = [
    "Brain",
    "ClusterAssignment",
    "ClusterView",
    "EndpointUnusable",
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

    An endpoint counts as configured when ``cfg.base_url`` is set (a local server needs
    no key), or ``$OPENAI_BASE_URL`` is (the openai SDK's own variable, used when
    ``base_url`` is unset), or the key variable ``cfg.api_key_env`` is non-empty (the
    OpenAI API). With ``$OPENAI_BASE_URL`` in use, its URL is written into
    ``cfg.base_url``, so a run header records the endpoint requests went to. ``log``
    hears once which brain runs, and later what a user should know about the endpoint
    (a refused answer mode, estimated tokens, a pause of the circuit breaker).
    """
    if cfg.kind not in KINDS:
        raise ConfigError(f"brain.kind must be one of {', '.join(KINDS)}, not {cfg.kind!r}")
    for name in ("api_key_env", "base_url"):  # a config built in code was never validated
        spec = spec_of(BrainConfig, "brain", name)
        if why := refusal(spec, getattr(cfg, name)):
            raise ConfigError(why)
    has_key = bool(os.environ.get(cfg.api_key_env))
    url, source = endpoint_url(cfg) if cfg.kind != "offline" else ("", "")
    configured = source != "the OpenAI API" or has_key
    if cfg.kind == "vlm" and not configured:
        raise ConfigError(
            f"brain.kind='vlm' needs an endpoint: set brain.base_url (--brain-url, e.g. "
            f"http://localhost:8000/v1), ${BASE_URL_ENV}, or ${cfg.api_key_env} for the "
            "OpenAI API"
        )
    if cfg.kind == "vlm" or (cfg.kind == "auto" and configured):
        from kgagent.brain.vlm import VLMBrain  # the openai SDK only when it is used

        if source == f"${BASE_URL_ENV}":
            cfg.base_url = url
        brain = VLMBrain(cfg, log=log)
        price = brain.chat
        shown = shown_url(url)
        where = {
            "brain.base_url": shown,
            "the OpenAI API": f"the OpenAI API ({shown})",
        }.get(source, f"{shown} (from {source})")
        log(
            f"brain: vlm, model {cfg.model} at {where} (${price.price_in:g} / "
            f"${price.price_out:g} per million tokens in / out, from {price.price_source})"
        )
        return brain
    from kgagent.brain.offline import OfflineBrain

    if cfg.kind == "auto":
        if cfg.model != BrainConfig().model:
            log(
                f"brain: offline; warning: brain.model is {cfg.model!r} but no endpoint is "
                f"configured, so no model is asked: set brain.base_url (--brain-url, e.g. "
                f"http://localhost:11434/v1) or ${cfg.api_key_env} to use it"
            )
        else:
            log(
                "brain: offline (no endpoint configured; set brain.base_url or "
                f"${cfg.api_key_env} to use a VLM)"
            )
    else:
        log("brain: offline")
    return OfflineBrain(cfg, seed=seed)
