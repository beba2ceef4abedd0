"""What one role call of the VLM client cost and how it ended (:class:`CallRecord`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CallRecord:
    """What one role call cost and how it ended."""

    role: str
    ok: bool = False
    attempts: int = 0  # counted tries (retries spend them)
    requests: int = 0  # HTTP requests, steps down and the truncation retry included
    mode: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    reasoning_tokens: int = 0  # of completion_tokens, spent thinking (as the server says)
    cost_usd: float = 0.0
    error: str = ""
    #: the kind of a failure that asking again cannot fix (endpoint.unfixable), or ""
    unfixable: str = ""
    #: the call ended because the run is stopping (no request, or one abandoned)
    stopped: bool = False
    #: its last request, and every request of the run before it, reached no server
    #: (connection refused, unknown host, no route: endpoint.not_reached)
    unreached: bool = False
    #: requests sent again after a failed one (backoff retries) ...
    retries: int = 0
    #: ... of them after HTTP 429, and the seconds waited before those
    rate_limited: int = 0
    rate_limit_wait_s: float = 0.0
