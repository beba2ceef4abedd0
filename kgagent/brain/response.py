"""What came back from an endpoint, read before its content: a raw SDK response as a chat
completion (or what came instead), and how long a server asked us to wait."""

from __future__ import annotations

import email.utils
import time
from typing import Any

from kgagent.brain.endpoint import body_summary


def retry_after(exc: BaseException) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms`` or ``retry-after``)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class NotACompletion(Exception):
    """A 2xx reply that is no chat completion: not JSON (an HTML page, ``OK``, nothing),
    or JSON without ``choices``. The base URL most likely names something else; ``what``
    says what came instead."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the server's reply is {what}; is brain.base_url the API's address?")
        self.what = what


def completion(raw: Any) -> Any:
    """The chat completion in a raw SDK response, or :class:`NotACompletion` saying what came."""
    ctype = raw.headers.get("content-type")
    try:
        parsed = raw.parse()
    except ValueError:  # the body is not JSON (json.JSONDecodeError)
        parsed = None
    if parsed is None or isinstance(parsed, (str, bytes)):
        raise NotACompletion(f"not JSON ({body_summary(ctype, _text(raw))})")
    if getattr(parsed, "choices", None) is None:
        raise NotACompletion("JSON but no chat completion (it has no choices)")
    return parsed


def _text(raw: Any) -> str:
    try:
        return str(raw.http_response.text)
    except Exception:  # noqa: BLE001 - a body that cannot be decoded is described as empty
        return ""
