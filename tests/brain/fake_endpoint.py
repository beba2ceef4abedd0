"""A local OpenAI-compatible chat-completions server for driving the real SDK in tests.

Each test scripts the replies in order (``endpoint.push(...)``); when the
script runs out, ``endpoint.default`` answers. Every request body is recorded,
so tests can count retries and inspect what the brain sent.
"""

from __future__ import annotations

import json
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
    ``status`` ≠ 200 sends an error body. ``delay_s`` sleeps before answering.
    """

    status: int = 200
    tool: str | None = None
    arguments: dict[str, Any] | str | None = None
    content: str | None = None
    usage: tuple[int, int] | None = (100, 10)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def tool_reply(tool: str, arguments: dict[str, Any] | str, usage=(100, 10)) -> Reply:
    return Reply(tool=tool, arguments=arguments, usage=usage)


class FakeEndpoint:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.default: Reply = Reply(content="I cannot help with that.")
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
                    reply = endpoint.script.popleft() if endpoint.script else endpoint.default
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404)
                payload = endpoint._payload(reply, body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
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

    @staticmethod
    def _payload(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        if reply.status != 200:
            return {"error": {"message": f"scripted {reply.status}", "type": "test", "code": None}}
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
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
        out: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool else "stop",
                }
            ],
        }
        if reply.usage is not None:
            pt, ct = reply.usage
            out["usage"] = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        return out
