"""The ``[brain]`` section of :class:`kgagent.config.Config` (the VLM endpoint and how it
is asked), declared like the others in :mod:`kgagent.config_sections`; docs/config.md is
generated from it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgagent.config_checks import env_name, http_url
from kgagent.config_fields import Section, param


@dataclass
class BrainConfig(Section):
    """The VLM roles: an OpenAI-compatible endpoint or the offline brain."""

    kind: str = param(
        "auto",
        "ours",
        "auto: a VLM if base_url, $OPENAI_BASE_URL or a key is set",
        "auto | vlm | offline",
    )
    base_url: str | None = param(
        None,
        "ours",
        "OpenAI-compatible endpoint (…/v1, without /chat/completions); none: "
        "$OPENAI_BASE_URL if set, else OpenAI's; a password in it is masked in messages and logs",
        "starting with http:// or https://, e.g. http://localhost:8000/v1",
        check=http_url,
    )
    model: str = param("gpt-4o-mini", "ours", "the papers used GPT-4o; mini costs a sixteenth")
    api_key_env: str = param(
        "OPENAI_API_KEY",
        "ours",
        "the key comes from the environment, never from a file",
        "naming an environment variable: letters, digits and _, not starting with a digit",
        check=env_name,
    )
    timeout_s: float = param(
        60.0, "ours", "seconds per request: a hung server must not stall a run", "> 0"
    )
    max_retries: int = param(
        3, "ours", "retries after a failed request (rate limits, server errors)", ">= 0"
    )
    backoff_s: float = param(1.0, "ours", "base delay (s) of the exponential backoff", ">= 0")
    image_max_side: int = param(
        512, "ours", "screenshots downscaled to this side: fewer image tokens", ">= 1"
    )
    budget_usd: float | None = param(None, "ours", "spending cap of a run; none: no cap", ">= 0")
    price_in_per_mtok: float | None = param(
        None,
        "ours",
        "USD per million input tokens for any model; none: the model's list price",
        ">= 0",
    )
    price_out_per_mtok: float | None = param(
        None, "ours", "USD per million output tokens for any model; none: the list price", ">= 0"
    )
    prices: tuple[str, ...] = param(
        (), "ours", "prices of models the built-in table lacks: 'MODEL=IN/OUT' (USD per Mtok)"
    )
    mode: str = param(
        "auto",
        "ours",
        "how answers are asked for; auto: tool calls, then JSON schema, then JSON in text",
        "auto | tools | json_schema | text",
    )
    on_failure: str = param(
        "offline",
        "ours",
        "a role call the endpoint cannot answer after its retries: offline answers it and the "
        "run goes on; stop ends the run (exit 1), so that every answer came from the model",
        "offline | stop",
    )
    on_unreachable: str = param(
        "stop",
        "ours",
        "an endpoint that no request of the run has reached (connection refused, unknown host, "
        "no route) after the first call's retries: stop ends the run in one line (exit 1), as a "
        "wrong URL or a server not started would otherwise play a whole run on offline answers; "
        "offline plays on with offline answers and says so once (a server started later is "
        "found by the breaker's probes)",
        "stop | offline",
    )
    breaker_failures: int = param(
        3,
        "ours",
        "failed calls in a row that pause the endpoint (answered offline); 0: never",
        ">= 0",
    )
    breaker_cooldown_calls: int = param(
        20, "ours", "a paused endpoint is probed again after this many role calls …", ">= 1"
    )
    breaker_cooldown_s: float = param(
        120.0, "ours", "… or this many seconds, whichever comes first", ">= 0"
    )
    prompt_clusters: int = param(
        8,
        "ours",
        "clusters offered per prompt, nearest to the screen first: bounded prompts",
        ">= 1",
    )
    prompt_members: int = param(5, "ours", "skill names listed per offered cluster", ">= 0")
    prompt_max_chars: int = param(
        6000, "ours", "cap on the clusters and skills listed in one prompt", ">= 200"
    )
    cluster_batch: int = param(
        8, "ours", "skills per cluster_skills request, so the answers fit max_tokens", ">= 1"
    )
    cluster_max_batches: int = param(
        4, "ours", "cluster_skills requests per call; the rest wait for the next round", ">= 1"
    )
    retry_after_cap_s: float = param(
        30.0, "ours", "a server's Retry-After is honoured up to this", ">= 0"
    )
    image_format: str = param(
        "png", "ours", "lossless screenshots in data URLs", "png | jpeg | jpg"
    )
    jpeg_quality: int = param(85, "ours", "JPEG quality when image_format is jpeg", "[1, 100]")
    image_detail: str | None = param(
        None, "ours", "OpenAI image detail; none: not sent (others reject it)", "low | high | auto"
    )
    temperature: float | None = param(
        0.0, "ours", "repeatable judgements; none: not sent (reasoning models reject it)", ">= 0"
    )
    max_output_tokens: int | None = param(512, "ours", "sent as max_tokens; none: not sent", ">= 1")
    content_json_fallback: bool = param(
        True, "ours", "accept a correctly shaped JSON answer in the text of a tools reply"
    )
    offline_min_change: float = param(
        0.0002, "ours", "offline brain: Δ above this is 'something changed'", "[0, 1]"
    )
    offline_consistency_cos: float = param(
        0.3, "ours", "offline brain: cos(effect, mean past effect) for R_semantic", "[-1, 1]"
    )
    offline_cluster_cos: float = param(
        0.85, "ours", "offline brain: least cos(state, cluster states) to pick a cluster", "[-1, 1]"
    )
    offline_effect_window: int = param(
        10, "ours", "offline brain: newest past effects averaged for consistency", ">= 1"
    )
    offline_text_progress: bool = param(
        False,
        "ours",
        "offline brain, experimental: progress also needs the screen's text to change "
        "(docs/benchmarks.md 'Reading' has its figures)",
    )
