"""Reading a chat-completions reply: the JSON answer, refusals, truncation, server errors.

Why one module: every server family answers a little differently (a forced tool
call, JSON in ``content``, JSON wrapped in prose or a code fence, after a reasoning
model's ``<think>`` block, a tool call written as JSON text, an error body that is an
object, a string or a bare dict), and the client must tell "the server cannot do what
was asked" from "the model answered badly".
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
_THOUGHT = re.compile(r"<think>.*?</think>", re.I | re.S)
_OPEN, _CLOSE = "<think>", "</think>"
#: the keys of a tool call written as text (Llama 3: ``{"name": …, "parameters": {…}}``)
_CALL_KEYS = frozenset({"name", "parameters", "arguments", "type"})


#: OpenAI's Harmony format (gpt-oss), when a server passes its tokens through: the
#: ``analysis`` channel is thinking, the answer follows the last ``final`` header
_FINAL = "<|channel|>final<|message|>"
_ANALYSIS = "<|channel|>analysis<|message|>"
_HARMONY_END = re.compile(r"<\|(?:end|return|call)\|>")


def without_thoughts(text: str) -> tuple[str, bool]:
    """``text`` without a reasoning model's ``<think>…</think>``; True when the answer is
    at the end (the thoughts were opened and never closed, so they run up to it).

    A ``</think>`` without its opening tag (a chat template that opens the block in the
    prompt) ends thoughts that began with the reply. In Harmony's tokens, the answer is
    the ``final`` channel's message; with only an ``analysis`` channel, it runs up to it.
    """
    final = text.rfind(_FINAL)
    if final >= 0:
        return _HARMONY_END.split(text[final + len(_FINAL) :], 1)[0], False
    analysis = text.rfind(_ANALYSIS)
    if analysis >= 0:
        return _HARMONY_END.split(text[analysis + len(_ANALYSIS) :], 1)[0], True
    text = _THOUGHT.sub("", text)
    close = text.lower().rfind(_CLOSE)
    if close >= 0:
        text = text[close + len(_CLOSE) :]
    rest = text.lstrip()
    if rest.lower().startswith(_OPEN):
        return rest[len(_OPEN) :], True
    return text, False


def json_objects_in(text: str, answer_last: bool = False) -> list[dict[str, Any]]:
    """Every JSON object in ``text``, outermost only, in order (bare, in code fences,
    between prose); a reasoning model's thoughts left out, and last first when they
    run up to the answer (:func:`without_thoughts`) or ``answer_last`` says so."""
    text, last = without_thoughts(text or "")
    answer_last = answer_last or last
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found[::-1] if answer_last else found


def json_object_in(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (see :func:`json_objects_in`)."""
    found = json_objects_in(text)
    return found[0] if found else None


def unwrapped(value: dict[str, Any], tool: str) -> dict[str, Any]:
    """The arguments of a call of ``tool`` written as JSON text (``{"name": tool,
    "parameters" | "arguments": {…}}``, the way Llama 3 calls tools), else ``value``."""
    if value.get("name") != tool or not set(value) <= _CALL_KEYS:
        return value
    inner = value.get("parameters", value.get("arguments"))
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except ValueError:
            return value
    return inner if isinstance(inner, dict) else value


def answer_in(
    text: str, tool: str, schema: dict[str, Any] | None, answer_last: bool = False
) -> dict[str, Any] | None:
    """The JSON object in ``text`` that answers ``tool``: the first that validates against
    ``schema`` (a tool call written as text unwrapped), else the first; None: none.
    ``answer_last``: ``text`` is thinking that runs up to the answer (last first)."""
    found = [unwrapped(v, tool) for v in json_objects_in(text, answer_last)]
    if not found:
        return None
    if schema is not None:
        return next((v for v in found if not validate(schema, v)), found[0])
    return found[0]


def arguments(
    response: Any,
    tool: str,
    mode: str,
    content_fallback: bool,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The answer of one reply as a dict, or an :class:`InvalidReply` saying why not.

    ``mode`` is how it was asked for (``tools`` / ``json_schema`` / ``text``). A
    refusal and a cut reply are reported as such before anything is parsed. In text,
    ``schema`` (the role's) picks the answer among several JSON objects
    (:func:`answer_in`).
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
    content, last = reply_text(message)
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
        found = answer_in(content, tool, schema, last) if content_fallback else None
        raise NoToolCall(f"no {tool} tool call in the reply", found)
    found = answer_in(content, tool, schema, last)
    if found is None:
        raise InvalidReply(f"no JSON object in the reply ({one_line(content, 60) or 'empty'})")
    return found


#: Where servers put a reasoning model's thinking apart from ``content`` (vLLM's and
#: llama.cpp's reasoning parsers: ``reasoning_content``; newer vLLM: ``reasoning``)
REASONING_FIELDS = ("reasoning_content", "reasoning")


def reply_text(message: Any) -> tuple[str, bool]:
    """The text to read an answer from: ``content``; when that is empty, the thinking a
    server moved apart (:data:`REASONING_FIELDS`: a model that never closed its thinking
    leaves its answer at the end of it), with True (the answer is last)."""
    content = getattr(message, "content", None) or ""
    if content.strip():
        return content, False
    for name in REASONING_FIELDS:
        thought = getattr(message, name, None)
        if isinstance(thought, str) and thought.strip():
            return thought, True
    return content, False


def spent_thinking(response: Any) -> bool:
    """A cut reply spent its tokens thinking: the usage's ``reasoning_tokens`` are at
    least half its completion tokens, or it has no content but thinking apart from it."""
    usage = getattr(response, "usage", None)
    done = getattr(usage, "completion_tokens", None)
    details = getattr(usage, "completion_tokens_details", None)
    thinking = getattr(details, "reasoning_tokens", None)
    if isinstance(done, int) and isinstance(thinking, int) and done > 0:
        return thinking * 2 >= done
    choices = getattr(response, "choices", None) or []
    if not choices:
        return False
    text, apart = reply_text(choices[0].message)
    return apart or without_thoughts(text)[1]  # or thinking inline, never closed


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
