"""Reading a chat-completions reply: the JSON answer, refusals, truncation, server errors.

Why one module: every server family answers a little differently (a forced tool
call, JSON in ``content``, JSON wrapped in prose or a code fence, an error body
that is an object, a string or a bare dict), and the client must tell "the
server cannot do what was asked" from "the model answered badly".
"""

from __future__ import annotations

import html
import json
import re
from typing import Any


class InvalidReply(Exception):
    """A reply that arrived but cannot be used; the call may try again."""


class Refused(InvalidReply):
    """The model declined to answer (``message.refusal``); asking again will not help."""


class Truncated(InvalidReply):
    """The reply was cut at ``max_tokens`` (``finish_reason == "length"``)."""


class NoToolCall(InvalidReply):
    """A tools request came back without the tool call: the server may ignore tools.

    ``found``: a JSON object in the reply text, which may still be a usable answer.
    """

    def __init__(self, message: str, found: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.found = found


# ------------------------------------------------------------------ validation
def validate(schema: dict[str, Any], value: Any, path: str = "$") -> list[str]:
    """Errors of ``value`` against the subset of JSON Schema that :mod:`prompts` uses.

    Hand-written rather than a dependency: the schemas use only ``type`` (one or
    a list), ``properties``, ``required``, ``items`` and ``minLength``. Unknown
    extra keys are tolerated because small models often add a stray field and
    the answer is still usable.
    """
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, t) for t in allowed):
            return [f"{path}: expected {'/'.join(allowed)}, got {type(value).__name__}"]
    errors: list[str] = []
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors.extend(validate(sub, value[key], f"{path}.{key}"))
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{path}[{i}]"))
    elif isinstance(value, str) and len(value.strip()) < schema.get("minLength", 0):
        errors.append(f"{path}: empty")
    return errors


def _is_type(value: Any, t: str) -> bool:
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return False


# --------------------------------------------------------------------- replies
def json_object_in(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (bare, in a code fence, or after some prose)."""
    if not text or "{" not in text:
        return None
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def arguments(response: Any, tool: str, mode: str, content_fallback: bool) -> dict[str, Any]:
    """The answer of one reply as a dict, or an :class:`InvalidReply` saying why not.

    ``mode`` is how it was asked for (``tools`` / ``json_schema`` / ``text``). A
    refusal and a cut reply are reported as such before anything is parsed.
    """
    choices = getattr(response, "choices", None)
    if not choices:
        raise InvalidReply("reply has no choices")
    choice = choices[0]
    message = choice.message
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise Refused(f"the model refused: {one_line(refusal, 160)}")
    finish = getattr(choice, "finish_reason", None)
    if finish == "length":
        raise Truncated("reply cut at max_tokens")
    if finish == "content_filter":
        raise Refused("the reply was withheld by the server's content filter")
    content = getattr(message, "content", None) or ""
    if mode == "tools":
        for call in getattr(message, "tool_calls", None) or []:
            fn = getattr(call, "function", None)
            if fn is None or fn.name != tool:
                continue
            raw = fn.arguments
            if isinstance(raw, dict):
                return raw
            try:
                args = json.loads(raw or "")
            except (TypeError, ValueError) as e:
                raise InvalidReply(f"tool arguments are not JSON: {e}") from None
            if not isinstance(args, dict):
                raise InvalidReply("tool arguments are not a JSON object")
            return args
        found = json_object_in(content) if content_fallback else None
        raise NoToolCall(f"no {tool} tool call in the reply", found)
    found = json_object_in(content)
    if found is None:
        raise InvalidReply(f"no JSON object in the reply ({one_line(content, 60) or 'empty'})")
    return found


# ---------------------------------------------------------------------- errors
def one_line(text: Any, limit: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def server_message(exc: Any) -> str:
    """The server's own words from an ``openai.APIStatusError``, on one line.

    The SDK keeps the body's ``error`` member (OpenAI, Ollama: an object with
    ``message``; LM Studio: a string) or the whole body (vLLM: ``{"message": ...}``).
    A body that is an HTML page (a proxy's 502) is reduced to its title.
    """
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        msg = body.get("message") or body.get("detail") or body.get("error")
        if isinstance(msg, dict):
            msg = msg.get("message") or json.dumps(msg)
        if msg is None and body:
            msg = json.dumps(body)
    elif isinstance(body, str):
        msg = html_text(body) if is_html(body) else body
    if not msg:
        msg = getattr(exc, "message", None) or str(exc)
    return one_line(msg)


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")


def is_html(text: str) -> bool:
    """The text is an HTML page (or starts like one)."""
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<title" in head


def html_text(text: str, limit: int = 120) -> str:
    """An HTML page in a few words: its ``<title>``, else its first line of text."""
    m = _TITLE.search(text)
    if m and m.group(1).strip():
        return one_line(html.unescape(m.group(1)), limit)
    for line in _TAG.sub("\n", text).splitlines():
        if line.strip():
            return one_line(html.unescape(line), limit)
    return "an empty page"
