"""Checks of config values that need more than a range or a choice (``param(check=...)``)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from kgagent.errors import ConfigError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The torch devices CLIP and SAM can run on, with an optional index (``cuda:1``).
_TORCH_DEVICE = re.compile(r"(cpu|cuda|mps|xpu)(:[0-9]+)?")


#: what ``run.ablation`` takes: Table 3's ablations, no_graph (the Bottom-Up Agent) and random
ABLATIONS = (
    "full",
    "no_similarity",
    "no_novelty",
    "no_state_reward",
    "no_vlm_rewards",
    "no_graph",
    "random",
)


#: Pairs of fields whose order is part of their meaning, checked by ``Config.validate``:
#: (lower, higher, strict, why). The wrong order leaves one of the two without effect,
#: so it is refused in one line naming both.
ORDERED = (
    (
        "memory.theta_simi",
        "memory.theta_merge",
        True,
        "a similar state is less alike than a merged one",
    ),
    (
        "invocation.tau_min",
        "invocation.tau_start",
        False,
        "the temperature starts at tau_start and decays to tau_min; a floor above the start "
        "would hold it there, leaving tau_start and tau_decay without effect",
    ),
)


def positive_size(region: Any) -> bool:
    """A region (x, y, w, h) of positive size, or none."""
    return region is None or (region[2] > 0 and region[3] > 0)


def http_url(url: Any) -> bool:
    """An ``http://`` or ``https://`` URL with a host (brain.base_url: the SDK cannot send
    anything else)."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def torch_device(name: Any) -> bool:
    """perception.device, checked when the config is read (torch is not imported for it):
    a bad name would otherwise fail only once CLIP or SAM is built, with torch's error."""
    return isinstance(name, str) and _TORCH_DEVICE.fullmatch(name) is not None


def env_name(name: Any) -> bool:
    """brain.api_key_env: a variable's name. Anything else may be the key itself, pasted
    into the wrong field, so the refusal is raised here, without the value that the
    generic refusal would print (and the start line and step log would keep)."""
    if _ENV_NAME.fullmatch(name):
        return True
    if name.strip().startswith("sk-") or len(name.strip()) >= 20:
        raise ConfigError(
            "brain.api_key_env names the environment variable that holds the key, and the "
            "value given looks like a key itself (so it is not shown): put the key in that "
            "variable instead (export OPENAI_API_KEY=...) and set brain.api_key_env to the "
            "variable's name (OPENAI_API_KEY by default)"
        )
    raise ConfigError(
        "brain.api_key_env must be the name of an environment variable (letters, digits "
        "and _, not starting with a digit); the value given is not one (it is not shown, "
        "as it may be a key)"
    )
