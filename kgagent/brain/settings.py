"""The brain's negotiation, circuit-breaker, prompt and pricing settings, in one object.

They are fields of :class:`~kgagent.config.BrainConfig` (``[brain]``); this reads them
into one frozen record the client, breaker and prompt builders share, and checks what
the config's own validation cannot (the price entries' syntax).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kgagent.config import BrainConfig
from kgagent.errors import ConfigError

#: How a role's answer is requested: function tools, a JSON-schema ``response_format``,
#: or JSON in the reply text (the shape stated in the prompt). ``auto`` negotiates.
MODES = ("tools", "json_schema", "text")


@dataclass(frozen=True)
class BrainSettings:
    """Negotiation, circuit breaker, prompt bounds and pricing (see docs/brains.md).

    Built by :meth:`of`; the defaults are :class:`~kgagent.config.BrainConfig`'s.
    """

    #: auto | tools | json_schema | text: auto starts with tools and steps down on refusal
    mode: str
    #: consecutive failed role calls after which the endpoint is paused (0: never)
    breaker_failures: int
    #: a paused endpoint is probed again after this many role calls ...
    breaker_cooldown_calls: int
    #: ... or this many seconds, whichever comes first
    breaker_cooldown_s: float
    #: choose_cluster / cluster_skills offer at most this many clusters (nearest first)
    prompt_clusters: int
    #: member skill names listed per cluster
    prompt_members: int
    #: characters of the listed clusters and skills in one prompt
    prompt_max_chars: int
    #: cluster_skills sends at most this many skills per request (fewer if max tokens are few)
    cluster_batch: int
    #: cluster_skills requests per call; skills beyond wait for the next round
    cluster_max_batches: int
    #: extra prices "MODEL=IN/OUT" (USD per million tokens), before the built-in table
    prices: tuple[str, ...]
    #: USD per million tokens for any model; none: from the table (the usual case)
    price_in_per_mtok: float | None
    price_out_per_mtok: float | None

    @classmethod
    def of(cls, cfg: Any) -> BrainSettings:
        """Read every field from ``cfg`` where it exists, else BrainConfig's default."""
        default = BrainConfig()
        values = {f.name: getattr(cfg, f.name, getattr(default, f.name)) for f in fields(cls)}
        values["prices"] = tuple(values["prices"] or ())
        s = cls(**values)
        if s.mode not in ("auto", *MODES):
            raise ConfigError(f"brain.mode must be one of auto, {', '.join(MODES)}, not {s.mode!r}")
        return s
