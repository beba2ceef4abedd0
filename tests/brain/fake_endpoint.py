"""A local OpenAI-compatible chat-completions server for driving the real SDK in tests.

Two ways to answer:

* scripted — a test pushes replies in order (``endpoint.push(...)``); when the
  script runs out, ``endpoint.default`` answers;
* a server profile — ``endpoint.profile = PROFILES["ollama"]``: a small fake model
  answers every role from the request's text, and the profile decides how the
  server behaves around it, as the real servers do:

  - ``openai``: tools, ``response_format`` and ``usage``; now and then a refusal
    (``message.refusal``, as structured outputs report one);
  - ``vllm``: named ``tool_choice`` through guided decoding, ``response_format``,
    ``usage``; errors as a bare ``{"object": "error", "message": ...}`` body;
  - ``ollama``: a vision model without a tool template: ``tools`` → HTTP 400
    ``{"error": {"message": "<model> does not support tools", ...}}``;
    ``response_format`` and ``usage`` work;
  - ``llamacpp``: ``llama-server`` without ``--jinja``: ``tools`` → HTTP 500
    ``tools param requires --jinja flag``; ``response_format`` works; a little slow;
  - ``lmstudio``: tools work; errors are a string body; a reply is sometimes cut
    at ``max_tokens`` (``finish_reason: "length"``);
  - ``plain``: a bare proxy: ignores ``tools`` and ``response_format`` and answers
    in text with its own keys unless the prompt states the shape; no ``usage``;
    sometimes 429 with ``Retry-After``;
  - ``garbage``: answers prose, never JSON;
  - ``slow``: answers after longer than the client waits;
  - ``reasoning``: a reasoning model on llama.cpp without ``--jinja`` or a grammar: its
    answer comes after ``<think>…</think>`` thoughts that hold JSON-like braces, in a
    code fence;
  - ``llama3``: ignores ``tools`` and ``response_format`` and writes the tool call as
    JSON text (``{"name": <tool>, "parameters": {…}}``), as Llama 3 on Ollama does;
  - ``cutting``: every reply cut at ``max_tokens`` 512 or less, whole above;
  - ``ratelimited``: every second request is a 429 with ``Retry-After``.

  (A dead server is a closed port: see the tests.)

A path other than ``/v1/chat/completions`` gets a 404 ``{"detail": "Not Found"}``, as
vLLM's server answers a base URL without ``/v1``. ``Reply.body`` sends raw bytes with
any content type (an HTML page, an empty body, ``OK``).

Every request body is recorded, so tests can count retries and inspect what was sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply.

    ``tool``/``arguments``: a tool call (``arguments`` a dict is JSON-encoded, a
    string is sent verbatim). ``content``: plain assistant text instead.
    ``status`` ≠ 200 sends an error body (``error_body`` if given, else an
    OpenAI-style one with ``message``). ``delay_s`` sleeps before answering.
    """

    status: int = 200
    tool: str | None = None
    arguments: dict[str, Any] | str | None = None
    content: str | None = None
    usage: tuple[int, int] | None = (100, 10)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    refusal: str | None = None
    finish_reason: str | None = None
    message: str | None = None
    error_body: Any = None
    #: raw bytes sent as they are, with ``content_type`` (instead of a JSON payload)
    body: bytes | None = None
    content_type: str = "application/json"
    #: a reasoning parser's thinking apart from ``content`` (vLLM, llama.cpp)
    reasoning_content: str | None = None
    #: the same, under the name newer servers give it
    reasoning: str | None = None
    #: ``usage.completion_tokens_details.reasoning_tokens``
    reasoning_tokens: int | None = None
    #: ``usage.total_tokens`` when not prompt + completion tokens
    total_tokens: int | None = None


def tool_reply(tool: str, arguments: dict[str, Any] | str, usage=(100, 10)) -> Reply:
    return Reply(tool=tool, arguments=arguments, usage=usage)


# ---------------------------------------------------------------- server profiles
@dataclass(frozen=True)
class Profile:
    """How a server family behaves (see the module docstring)."""

    name: str
    tools: str = "ok"  # ok | reject | ignore
    tools_status: int = 400
    tools_error: Any = None
    response_format: str = "ok"  # ok | reject | ignore
    usage: bool = True
    error_style: str = "openai"  # openai | bare | string
    refuse_every: int = 0  # every Nth request is refused
    truncate_every: int = 0  # every Nth request is cut unless max_tokens > 512
    rate_limit_every: int = 0  # every Nth request is a 429 with Retry-After
    delay_s: float = 0.0
    prose_only: bool = False
    retry_after: str = "0.05"  # the Retry-After of a 429
    think: bool = False  # the answer after <think> thoughts, in a code fence
    tool_as_text: bool = False  # {"name": <tool>, "parameters": answer} as the text
    #: of each reply's completion tokens, this share is said to be thinking
    thinking_share: float = 0.0


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("openai", refuse_every=9),
        Profile("vllm", error_style="bare"),
        Profile(
            "ollama",
            tools="reject",
            tools_error={
                "error": {
                    "message": "qwen2.5vl does not support tools",
                    "type": "api_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        Profile(
            "llamacpp",
            tools="reject",
            tools_status=500,
            tools_error={
                "error": {
                    "code": 500,
                    "message": "tools param requires --jinja flag",
                    "type": "server_error",
                }
            },
            delay_s=0.02,
        ),
        Profile("lmstudio", error_style="string", truncate_every=4),
        Profile("plain", tools="ignore", response_format="ignore", usage=False, rate_limit_every=7),
        Profile("garbage", prose_only=True),
        Profile("slow", delay_s=1.0),
        Profile(
            "reasoning",
            tools="reject",
            tools_status=500,
            tools_error={"error": {"code": 500, "message": "Unsupported param: tools"}},
            response_format="reject",
            think=True,
        ),
        Profile("llama3", tools="ignore", response_format="ignore", tool_as_text=True),
        Profile("cutting", truncate_every=1),
        Profile("ratelimited", rate_limit_every=2),
    )
}

#: a reasoning model's thoughts, with braces that parse as JSON objects
THOUGHTS = (
    '<think>\nThe user wants a JSON like {"name": ...}. Let me look at the screenshot. '
    'Something like {"meaningful": false} maybe? No.\n</think>\n\nHere is my answer:\n'
)


def _section(text: str, start: str, end: str | None) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i) if end else -1
    return text[i : j if j >= 0 else len(text)]


_ID = re.compile(r"^- id='([^']+)'", re.M)


class FakeModel:
    """Answers each role from the prompt text alone, in the role's schema."""

    def __init__(self) -> None:
        self.n = 0

    def answer(self, role: str, text: str) -> dict[str, Any]:
        self.n += 1
        if role == "describe_skill":
            ops = re.search(r"Operations: (.*)", text)
            what = ops.group(1).strip() if ops else "act"
            return {
                "meaningful": True,
                "name": f"do {what}"[:60],
                "description": f"Performs {what} and changes the screen.",
            }
        if role == "evaluate":
            new = "never seen" in text or "not seen earlier" in text
            return {"is_consistent": True, "is_progressive": new, "reason": "looked at it"}
        if role == "choose_cluster":
            ids = _ID.findall(_section(text, "Clusters:", None))
            return {"cluster_id": ids[0] if ids else None, "reason": "first fits"}
        if role == "refine_skill":
            name = re.search(r"Current name: (.*)", text)
            return {
                "name": json.loads(name.group(1)) if name else "skill",  # a JSON string
                "description": f"Refined after {self.n} answers.",
            }
        if role == "cluster_skills":
            skills = _ID.findall(_section(text, "New skills:", "Existing clusters"))
            clusters = _ID.findall(_section(text, "Existing clusters", None))
            return {
                "assignments": [
                    {
                        "skill_id": sid,
                        "cluster_id": clusters[0] if clusters else None,
                        "new_name": "" if clusters else "first group",
                        "new_description": "" if clusters else "Everything so far.",
                    }
                    for sid in skills
                ]
            }
        return {"answer": "unknown role"}


_ROLE_IN_TEXT = re.compile(r"Answer \((\w+)\) with one JSON object")


class FakeEndpoint:
    def __init__(self, profile: Profile | None = None) -> None:
        self.script: deque[Reply] = deque()
        self.default: Reply = Reply(content="I cannot help with that.")
        self.profile = profile
        self.model = FakeModel()
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with endpoint._lock:
                    endpoint.requests.append(
                        {"path": self.path, "body": body, "headers": dict(self.headers)}
                    )
                    endpoint.request_times.append(time.monotonic())
                    n = len(endpoint.requests)
                    if endpoint.script:
                        reply = endpoint.script.popleft()
                    elif endpoint.profile is not None:
                        reply = endpoint._profile_reply(endpoint.profile, body, n)
                        share = endpoint.profile.thinking_share
                        if share and reply.usage is not None:
                            reply.reasoning_tokens = int(reply.usage[1] * share)
                    else:
                        reply = endpoint.default
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, error_body={"detail": "Not Found"})
                if reply.body is not None:
                    data = reply.body
                else:
                    data = json.dumps(endpoint._payload(reply, body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    # ------------------------------------------------------------ profiles
    def _profile_reply(self, p: Profile, body: dict[str, Any], n: int) -> Reply:
        usage = None  # filled by _payload from the text when the profile reports usage
        delay = p.delay_s
        if p.rate_limit_every and n % p.rate_limit_every == 0:
            return self._error(p, 429, "Rate limit reached", {"Retry-After": p.retry_after}, delay)
        text = _user_text(body)
        if "tools" in body and p.tools == "reject":
            return Reply(status=p.tools_status, error_body=p.tools_error, delay_s=delay)
        if "response_format" in body and p.response_format == "reject":
            return self._error(p, 400, "response_format is not supported", {}, delay)
        if p.prose_only:
            return Reply(content="The screen changed, it seems fine to me.", delay_s=delay)
        if p.refuse_every and n % p.refuse_every == 0:
            return Reply(refusal="I can't help with that request.", usage=(50, 5), delay_s=delay)
        role = None
        if "tools" in body and p.tools == "ok":
            role = body["tool_choice"]["function"]["name"]
        elif "response_format" in body and p.response_format == "ok":
            role = body["response_format"]["json_schema"]["name"]
        m = _ROLE_IN_TEXT.search(text)
        stated = m.group(1) if m else None
        if p.tool_as_text and "tools" in body:
            stated = body["tools"][0]["function"]["name"]  # the model sees the tool
        if role is None and stated is None:
            # no tool used and no shape stated: the model answers with keys of its own
            answer: dict[str, Any] = {"answer": "yes", "explanation": "the screen changed"}
        else:
            answer = self.model.answer(role or stated or "", text)
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or 10**6
        if p.truncate_every and n % p.truncate_every == 0 and limit <= 512:
            cut = json.dumps(answer)[: len(json.dumps(answer)) // 2]
            return Reply(content=cut, finish_reason="length", delay_s=delay)
        if p.usage:
            usage = (100 + len(text) // 4, len(json.dumps(answer)) // 4 + 1)
        if "tools" in body and p.tools == "ok":
            return Reply(tool=role, arguments=answer, usage=usage, delay_s=delay)
        if p.tool_as_text:
            return Reply(content=json.dumps({"name": stated, "parameters": answer}), usage=usage)
        if p.think:
            fenced = f"```json\n{json.dumps(answer, indent=2)}\n```"
            return Reply(content=THOUGHTS + fenced, usage=usage, delay_s=delay)
        prefix = "Here is my answer: " if p.tools == "ignore" else ""
        return Reply(content=prefix + json.dumps(answer), usage=usage, delay_s=delay)

    @staticmethod
    def _error(p: Profile, status: int, msg: str, headers: dict[str, str], delay: float) -> Reply:
        if p.error_style == "bare":
            body: Any = {
                "object": "error",
                "message": msg,
                "type": "BadRequestError",
                "code": status,
            }
        elif p.error_style == "string":
            body = {"error": msg}
        else:
            body = {"error": {"message": msg, "type": "invalid_request_error", "code": None}}
        return Reply(status=status, error_body=body, headers=headers, delay_s=delay)

    # ------------------------------------------------------------- payloads
    @staticmethod
    def _payload(reply: Reply, body: dict[str, Any]) -> Any:
        if reply.status != 200:
            if reply.error_body is not None:
                return reply.error_body
            msg = reply.message or f"scripted {reply.status}"
            return {"error": {"message": msg, "type": "test", "code": None}}
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        if reply.reasoning is not None:
            message["reasoning"] = reply.reasoning
        if reply.tool is not None:
            args = reply.arguments
            message["tool_calls"] = [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {
                        "name": reply.tool,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool else "stop")
        out: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage is not None:
            pt, ct = reply.usage
            total = pt + ct if reply.total_tokens is None else reply.total_tokens
            out["usage"] = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": total}
            if reply.reasoning_tokens is not None:
                out["usage"]["completion_tokens_details"] = {
                    "reasoning_tokens": reply.reasoning_tokens
                }
        return out


def _user_text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        else:
            parts.extend(p.get("text", "") for p in c or [] if p.get("type") == "text")
    return "\n".join(parts)
