"""What a request costs: prices per model, and tokens when the server does not say.

Prices: a model's price is found, in this order, in ``brain.prices`` (the user's
``"MODEL=IN/OUT"`` entries), in ``price_in_per_mtok``/``price_out_per_mtok`` when
they are set, in :data:`PRICES` (OpenAI's published list), and otherwise it is 0
for a server on this machine or the local network, or gpt-4o's price for any other
unknown model: a budget cap should fire too early rather than never. A model
matches an entry exactly or by prefix (``gpt-4o-mini-2024-07-18`` is
``gpt-4o-mini``); the longest prefix wins.

Tokens: a reply's ``usage`` is exact. When a server sends none, the brain estimates,
and marks the estimate (``Usage.estimated_tokens``): text at 4 characters per token
(the usual figure for English with OpenAI's tokenizers; no tokenizer is installed
because tiktoken downloads its tables at first use), 4 tokens per message, and per
image OpenAI's rule for its vision models: 85 tokens at ``detail=low``, otherwise
85 + 170 per 512-pixel tile after the image is fitted into 2048 × 2048 and its short
side into 768. Other servers count image tokens their own way; the estimate is
the order of magnitude, and it is what the budget cap sees.
"""

from __future__ import annotations

import ipaddress
import json
import math
from typing import Any
from urllib.parse import urlparse

from kgagent.brain.reply import REASONING_FIELDS
from kgagent.errors import ConfigError

#: USD per million (input, output) tokens, OpenAI's standard-tier list prices as
#: published on platform.openai.com/docs/pricing (checked 2026-11-24). Extend or
#: override with ``brain.prices``.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}

#: the price of a model found nowhere, on a server that is not local
UNKNOWN_REMOTE = "gpt-4o"

CHARS_PER_TOKEN = 4.0
TOKENS_PER_MESSAGE = 4
IMAGE_LOW_TOKENS = 85
IMAGE_TILE_TOKENS = 170


def parse_prices(entries: tuple[str, ...] | list[str]) -> dict[str, tuple[float, float]]:
    """``["my-model=0.5/1.5", ...]`` as a table; a malformed entry is one ConfigError line."""
    table: dict[str, tuple[float, float]] = {}
    for raw in entries:
        model, sep, pair = str(raw).partition("=")
        parts = pair.replace(",", "/").split("/")
        try:
            if not sep or not model.strip() or len(parts) != 2:
                raise ValueError
            p_in, p_out = float(parts[0]), float(parts[1])
            if p_in < 0 or p_out < 0 or not (math.isfinite(p_in) and math.isfinite(p_out)):
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"brain.prices entry {raw!r} must look like MODEL=IN/OUT "
                "(USD per million tokens, e.g. my-model=0.5/1.5)"
            ) from None
        table[model.strip()] = (p_in, p_out)
    return table


def _lookup(model: str, table: dict[str, tuple[float, float]]) -> tuple[float, float] | None:
    if model in table:
        return table[model]
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def is_local(base_url: str | None) -> bool:
    """A server on this machine or a private network (``None`` is OpenAI's API)."""
    if not base_url:
        return False
    host = (urlparse(base_url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def price_for(
    model: str,
    base_url: str | None,
    user_prices: tuple[str, ...] = (),
    price_in: float | None = None,
    price_out: float | None = None,
) -> tuple[float, float, str]:
    """(USD per Mtok in, out, where the price came from) for ``model`` at ``base_url``."""
    found = _lookup(model, parse_prices(user_prices))
    if found is not None:
        return found[0], found[1], "brain.prices"
    table = _lookup(model, PRICES)
    if price_in is not None or price_out is not None:
        fallback = table or (0.0, 0.0)
        p_in = price_in if price_in is not None else fallback[0]
        p_out = price_out if price_out is not None else fallback[1]
        return p_in, p_out, "brain.price_in_per_mtok/price_out_per_mtok"
    if table is not None:
        return table[0], table[1], "the built-in price table"
    if is_local(base_url):
        return 0.0, 0.0, "a local server"
    p_in, p_out = PRICES[UNKNOWN_REMOTE]
    return p_in, p_out, f"no price known: {UNKNOWN_REMOTE}'s (set brain.prices)"


# ------------------------------------------------------------------ estimates
def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def image_tokens(width: int, height: int, detail: str | None) -> int:
    """OpenAI's vision rule (see the module docstring)."""
    if detail == "low":
        return IMAGE_LOW_TOKENS
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return IMAGE_LOW_TOKENS + IMAGE_TILE_TOKENS * tiles


def prompt_tokens(request: dict[str, Any], image_sizes: list[tuple[int, int]]) -> int:
    """Estimated input tokens of a chat-completions request.

    ``image_sizes``: (width, height) of the images sent, in order (the data URLs
    themselves are not text the model reads).
    """
    n = 0
    for m in request.get("messages", []):
        n += TOKENS_PER_MESSAGE
        content = m.get("content")
        if isinstance(content, str):
            n += text_tokens(content)
            continue
        for part in content or []:
            if part.get("type") == "text":
                n += text_tokens(part.get("text", ""))
    detail = None
    for m in request.get("messages", []):
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            if part.get("type") == "image_url":
                detail = part["image_url"].get("detail")
    n += sum(image_tokens(w, h, detail) for w, h in image_sizes)
    for key in ("tools", "response_format"):
        if key in request:
            n += text_tokens(json.dumps(request[key], separators=(",", ":")))
    return n


def completion_tokens(message: Any) -> int:
    """Estimated output tokens of a reply message: its text, the thinking its server put
    apart (billed as output too), and its tool calls' names and arguments."""
    n = text_tokens(getattr(message, "content", None) or "")
    thoughts = (getattr(message, key, None) for key in REASONING_FIELDS)
    # the first only: a server in a transition sends the same text under both names
    n += text_tokens(next((t for t in thoughts if isinstance(t, str) and t), ""))
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        args = getattr(fn, "arguments", "") if fn is not None else ""
        n += text_tokens(args if isinstance(args, str) else json.dumps(args))
        n += text_tokens(getattr(fn, "name", "") or "")
    return n


def billed_completion(usage: Any, prompt: int, completion: int) -> int:
    """A reply's output tokens to bill: ``completion_tokens``, or more where the server's
    ``total_tokens`` holds output it counts nowhere else (a proxy that reports a model's
    thinking only in the total and in ``reasoning_tokens``: ``completion_tokens`` 0)."""
    total = getattr(usage, "total_tokens", None)
    if isinstance(total, int) and not isinstance(total, bool) and total - prompt > completion:
        return total - prompt
    return completion


def reasoning_tokens(usage: Any, completion: int) -> int:
    """Of a reply's ``completion`` tokens, those its server says were thinking
    (``usage.completion_tokens_details.reasoning_tokens``, OpenAI's and vLLM's field);
    0 where it does not say."""
    details = getattr(usage, "completion_tokens_details", None)
    n = getattr(details, "reasoning_tokens", None)
    if not isinstance(n, int) or isinstance(n, bool):
        return 0
    return max(0, min(n, completion))
