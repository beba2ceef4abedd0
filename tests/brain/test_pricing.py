"""Prices per model, token estimates without usage, and the budget cap on estimates."""

from __future__ import annotations

import pytest

from kgagent.brain import pricing
from kgagent.brain.settings import BrainSettings
from kgagent.config import BrainConfig
from kgagent.errors import BudgetExceeded, ConfigError

from .fake_endpoint import Reply
from .helpers import EVAL_OK, brain_for, skill, transition


def test_price_lookup_order():
    local, remote = "http://127.0.0.1:8000/v1", None
    assert pricing.price_for("gpt-4o", remote)[:2] == (2.50, 10.00)
    # a dated name takes its family's price; the longest prefix wins (not gpt-4o's)
    assert pricing.price_for("gpt-4o-mini-2024-07-18", remote)[:2] == (0.15, 0.60)
    assert pricing.price_for("gpt-4.1-nano", remote)[:2] == (0.10, 0.40)
    assert pricing.price_for("o4-mini", remote)[:2] == (1.10, 4.40)
    # the user's table first, then explicit prices, then the built-in table
    assert pricing.price_for("gpt-4o", remote, ("gpt-4o=1/2",))[:3] == (1.0, 2.0, "brain.prices")
    assert pricing.price_for("gpt-4o", remote, (), 3.0, None)[:2] == (3.0, 10.0)
    # a local server costs nothing unless the model is priced; an unknown remote model
    # is priced like gpt-4o so that a budget cap still fires
    assert pricing.price_for("Qwen/Qwen2.5-VL-7B-Instruct", local)[:2] == (0.0, 0.0)
    assert pricing.price_for("qwen2.5vl", "http://192.168.1.20:11434/v1")[:2] == (0.0, 0.0)
    p_in, p_out, source = pricing.price_for("mystery-vl", "https://api.example.com/v1")
    assert (p_in, p_out) == (2.50, 10.00) and "brain.prices" in source


def test_bad_price_entries_are_one_line_errors():
    for bad in ("gpt-4o", "gpt-4o=1", "=1/2", "m=a/b", "m=-1/2"):
        with pytest.raises(ConfigError, match="MODEL=IN/OUT"):
            pricing.parse_prices((bad,))
    assert pricing.parse_prices(("m=0.5/1.5", "n=1,2")) == {"m": (0.5, 1.5), "n": (1.0, 2.0)}


def test_legacy_default_prices_mean_unset():
    cfg = BrainConfig(model="gpt-4o")
    s = BrainSettings.of(cfg)
    if getattr(cfg, "price_in_per_mtok", None) is not None:
        assert (cfg.price_in_per_mtok, cfg.price_out_per_mtok) == (0.15, 0.60)
    assert s.price_in_per_mtok is None and s.price_out_per_mtok is None


def test_image_token_rule():
    assert pricing.image_tokens(4000, 3000, "low") == 85
    assert pricing.image_tokens(512, 288, None) == 85 + 170  # one tile
    assert pricing.image_tokens(1024, 1024, "high") == 85 + 170 * 4  # 768 x 768: 2 x 2
    assert pricing.image_tokens(2048, 4096, "high") == 85 + 170 * 6  # 768 x 1536: 2 x 3


def test_estimate_counts_text_tools_and_images():
    req = {
        "messages": [
            {"role": "system", "content": "x" * 400},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "y" * 40},
                    {"type": "image_url", "image_url": {"url": "data:..." + "z" * 9999}},
                ],
            },
        ]
    }
    base = pricing.prompt_tokens(req, [(64, 43)])
    assert base == 2 * 4 + 100 + 10 + 255  # the data URL is not text the model reads
    req["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert pricing.prompt_tokens(req, [(64, 43)]) > base


def test_budget_stops_on_estimated_tokens(endpoint):
    # a priced model on a server that sends no usage: the estimate is billed
    b = brain_for(endpoint, model="gpt-4o", price_in_per_mtok=None, price_out_per_mtok=None)
    endpoint.default = Reply(tool="evaluate", arguments=EVAL_OK, usage=None)
    b.evaluate(skill(), transition())
    one = b.usage.cost_usd
    assert one > 0 and b.usage.estimated_tokens == b.usage.tokens
    assert one == pytest.approx(
        (b.usage.prompt_tokens * 2.5 + b.usage.completion_tokens * 10.0) / 1e6
    )
    b.cfg.budget_usd = one * 2.5
    b.evaluate(skill(), transition())
    with pytest.raises(BudgetExceeded, match="budget"):
        b.evaluate(skill(), transition())
    assert len(endpoint.requests) == 2 and b.usage.cost_usd <= b.cfg.budget_usd


def test_first_request_is_checked_against_its_own_estimate(endpoint):
    b = brain_for(endpoint, model="gpt-4o", price_in_per_mtok=None, price_out_per_mtok=None)
    b.cfg.budget_usd = 1e-7  # less than any prompt with two images
    with pytest.raises(BudgetExceeded):
        b.evaluate(skill(), transition())
    assert endpoint.requests == []
