"""An endpoint that is set up wrong says so in one line, and no message shows the key.

Failures that cannot fix themselves end a run whose endpoint never answered; connection
errors name their cause; replies that are not completions are said to be so, unbilled;
``$OPENAI_BASE_URL`` is the endpoint when ``brain.base_url`` is unset.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kgagent.brain import make_brain
from kgagent.brain.client import EndpointMemory
from kgagent.brain.endpoint import EndpointUnusable, Redactor, unfixable, with_v1
from kgagent.brain.offline import OfflineBrain
from kgagent.brain.vlm import VLMBrain
from kgagent.config import BrainConfig
from kgagent.errors import ConfigError

from .fake_endpoint import Reply, tool_reply
from .helpers import EVAL_OK, brain_for, offline_of, skill, transition

KEY = "sk-BAD1234567890abcdefghijklmnop"


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("KGAGENT_TEST_KEY", KEY)
    return KEY


def evaluate_raises(b: VLMBrain) -> str:
    with pytest.raises(EndpointUnusable) as e:
        b.evaluate(skill(), transition())
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------ failures that cannot fix themselves
def test_a_refused_key_on_the_first_call_stops_with_the_variable_and_no_key(endpoint, key):
    b = brain_for(endpoint, api_key_env="KGAGENT_TEST_KEY", max_retries=3)
    endpoint.default = Reply(status=401, message=f"Incorrect API key provided: {KEY}.")
    msg = evaluate_raises(b)
    assert len(endpoint.requests) == 1  # neither retried nor negotiated
    assert "refused the API key" in msg and "check the key in $KGAGENT_TEST_KEY" in msg
    assert KEY not in msg and KEY[:10] not in msg and "Incorrect API key provided: ***" in msg


def test_refused_url_credentials_are_named_and_never_shown_even_in_base64(endpoint, key):
    """A proxy that quotes the Authorization header it got: the Basic credential (base64
    of user:password) is masked, and the line names the URL's user and password."""
    url = endpoint.base_url.replace("http://", "http://alice:hunter2pass@")
    b = brain_for(endpoint, base_url=url, api_key_env="KGAGENT_TEST_KEY")
    endpoint.default = Reply(
        status=401, message="Incorrect API key provided: Basic YWxpY2U6aHVudGVyMnBhc3M="
    )
    msg = evaluate_raises(b)
    assert "refused the credentials (HTTP 401: Incorrect API key provided: Basic ***)" in msg
    assert "the user and password in brain.base_url went as HTTP basic auth" in msg
    assert "YWxpY2U6aHVudGVyMnBhc3M" not in msg and "hunter2pass" not in msg


def test_an_unset_key_is_named(endpoint):
    b = brain_for(endpoint)
    endpoint.default = Reply(status=401, message="missing bearer token")
    msg = evaluate_raises(b)
    assert "$KGAGENT_TEST_UNSET_KEY is not set, so no key was sent" in msg


def test_403_names_the_key_and_the_model(endpoint):
    b = brain_for(endpoint)
    endpoint.default = Reply(status=403, message="Project does not have access")
    msg = evaluate_raises(b)
    assert "refused access (HTTP 403: Project does not have access)" in msg
    assert "'test-model'" in msg and "brain.model" in msg


@pytest.mark.parametrize(
    "status, body",
    [
        (404, {"error": {"message": 'model "llava" not found, try pulling it first'}}),  # Ollama
        (404, {"object": "error", "message": "The model `llava` does not exist."}),  # vLLM
        (400, {"error": {"message": "Model not found", "code": "model_not_found"}}),
    ],
)
def test_an_unknown_model_stops_with_where_to_look(endpoint, status, body):
    b = brain_for(endpoint, model="llava", max_retries=3)
    endpoint.default = Reply(status=status, error_body=body)
    msg = evaluate_raises(b)
    assert len(endpoint.requests) == 1  # a 400 that names the model is no mode refusal
    assert "does not know model 'llava'" in msg
    assert f"GET {endpoint.base_url}/models" in msg


def test_a_base_url_without_v1_gets_a_hint(endpoint):
    url = endpoint.base_url.removesuffix("/v1")
    b = brain_for(endpoint, base_url=url)
    msg = evaluate_raises(b)
    assert f"{url}/chat/completions is not a chat-completions API (HTTP 404: Not Found)" in msg
    assert f"check brain.base_url: did you mean {url}/v1?" in msg
    assert with_v1("http://h:1/api/v1") is None and with_v1("http://h:1/") == "http://h:1/v1"


def test_a_pasted_chat_completions_url_gets_the_same_hint(endpoint):
    """The request URL pasted as base_url: the SDK appends /chat/completions again."""
    b = brain_for(endpoint, base_url=f"{endpoint.base_url}/chat/completions/")
    msg = evaluate_raises(b)
    assert f"{endpoint.base_url}/chat/completions/chat/completions is not a" in msg
    assert f"did you mean {endpoint.base_url}? (kgagent appends /chat/completions itself)" in msg
    assert with_v1("http://h:1/chat/completions") == "http://h:1/v1"
    assert with_v1("http://h:1/api/v1/chat/completions") == "http://h:1/api/v1"


def test_once_answered_the_same_failures_degrade(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    endpoint.default = Reply(status=404, message="The model `test-model` does not exist.")
    tr = transition()
    assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    assert len(endpoint.requests) == 2 and b.usage.failed_calls == 1


def test_a_model_without_image_input_is_said_in_one_request(endpoint):
    b = brain_for(endpoint, max_retries=3)
    msg_400 = "Invalid content type. image_url is only supported by certain models."
    endpoint.default = Reply(status=400, message=msg_400)
    msg = evaluate_raises(b)
    assert len(endpoint.requests) == 1  # not "refused tools", then "refused json_schema"
    assert "takes no images" in msg and "must be a vision model" in msg
    assert not b.test_logs  # no step down was logged
    # an endpoint that answered before: one request, an offline answer that says why
    b2 = brain_for(endpoint, max_retries=3)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b2.evaluate(skill(), transition())
    b2.evaluate(skill(), transition())
    assert len(endpoint.requests) == 3
    (note,) = b2.take_notes()
    assert note.startswith("evaluate: offline answer (the model takes no images")


def test_a_streaming_only_server_is_said(endpoint):
    b = brain_for(endpoint, max_retries=3)
    endpoint.default = Reply(status=400, message="stream=false is not supported, set stream=true")
    msg = evaluate_raises(b)
    assert len(endpoint.requests) == 1 and "streaming-only servers are not supported" in msg


def test_mode_refusals_are_not_taken_for_setup_failures():
    assert unfixable(400, "qwen2.5vl does not support tools") is None
    assert unfixable(500, "tools param requires --jinja flag") is None
    assert unfixable(400, "response_format is not supported") is None
    assert unfixable(503, "model is loading") is None
    assert unfixable(429, "Rate limit reached") is None
    assert unfixable(500, "image input is not supported - hint: provide the mmproj") == "images"


# --------------------------------------------------------------------- redaction
def test_no_message_notes_or_log_line_shows_the_key(endpoint, key):
    b = brain_for(endpoint, api_key_env="KGAGENT_TEST_KEY", max_retries=0)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    endpoint.push(Reply(status=401, message=f"Incorrect API key provided: {KEY[:12]}…"))
    endpoint.push(Reply(status=400, message=f"bad header Authorization: Bearer {KEY}"))
    endpoint.push(Reply(status=500, message=f"upstream rejected {KEY}"))
    for _ in range(3):
        b.evaluate(skill(), transition())
    said = " ".join(b.take_notes() + b.test_logs + [b.last_call.error])
    assert "Incorrect API key provided: ***" in said and "Bearer ***" in said
    assert KEY[:9] not in said  # neither the key nor a part of it


def test_a_user_in_the_url_takes_the_place_of_the_key_and_that_is_said(endpoint, key):
    """The SDK sends the URL's user and password as HTTP basic auth, in the one
    Authorization header: the key cannot go too, and the start says so once."""
    url = endpoint.base_url.replace("http://", "http://alice:Pa55word99@")
    b = brain_for(endpoint, base_url=url, api_key_env="KGAGENT_TEST_KEY")
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    assert endpoint.requests[-1]["headers"]["Authorization"].startswith("Basic ")
    (line,) = [s for s in b.test_logs if "basic auth" in s]
    assert "the key in $KGAGENT_TEST_KEY" in line and "the key is not sent" in line
    assert "alice:***@" in line and "Pa55word99" not in line and KEY not in line
    plain = brain_for(endpoint, api_key_env="KGAGENT_TEST_KEY")  # no user: no line
    assert not [s for s in plain.test_logs if "basic auth" in s]


def test_redactor():
    r = Redactor("secret-token-12345678")
    assert r("got secret-token-12345678!") == "got ***!"
    assert r("got secret…") == "got secret…"  # too short a part to be the key
    assert r("got secret-token-1234…") == "got ***"
    assert r("b'Bearer abc\\nxyz'") == "b'Bearer ***\\nxyz'"  # the token ends at the escape
    # the punctuation after a credential stays; a Basic one (base64 of user:password) goes
    assert r("for key Bearer sk-SECRET123456789; retry (Bearer tok)") == (
        "for key Bearer ***; retry (Bearer ***)"
    )
    assert r("got Basic YWxpY2U6aHVudGVyMnBhc3M=, refused") == "got Basic ***, refused"
    assert r("sent as HTTP basic auth") == "sent as HTTP basic auth"  # words stay words
    assert r("key sk-proj-abcdefgh") == "key sk-***"
    assert r("a disk-cache and a task-runner") == "a disk-cache and a task-runner"
    assert Redactor(None)("nothing to hide") == "nothing to hide"


# -------------------------------------------------------------- connection errors
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def failing(base_url: str, **kw) -> VLMBrain:
    cfg = BrainConfig(
        kind="vlm", base_url=base_url, api_key_env="KGAGENT_TEST_KEY", max_retries=0, **kw
    )
    return VLMBrain(cfg, log=lambda s: None)


def test_connection_errors_name_their_cause(endpoint, monkeypatch):
    monkeypatch.delenv("KGAGENT_TEST_KEY", raising=False)
    cases = [
        (f"http://127.0.0.1:{closed_port()}/v1", "Connection refused"),
        (endpoint.base_url.replace("http://", "https://"), "WRONG_VERSION_NUMBER"),
        (endpoint.base_url.replace("http://", "ftp://"), "unsupported protocol 'ftp://'"),
    ]
    for url, cause in cases:
        b = failing(url)
        b.cfg.on_unreachable = "offline"  # offline play chosen: the refusal is answered
        b.evaluate(skill(), transition())
        assert b.last_call.error.startswith("connection error: "), b.last_call.error
        assert cause in b.last_call.error and "Connection error." not in b.last_call.error


def never_reached(base_url: str, **kw) -> tuple[VLMBrain, list[str]]:
    cfg = BrainConfig(
        kind="vlm",
        base_url=base_url,
        api_key_env="KGAGENT_TEST_UNSET_KEY",
        max_retries=1,
        backoff_s=0.0,
        **kw,
    )
    logs: list[str] = []
    return VLMBrain(cfg, log=logs.append, endpoints=EndpointMemory()), logs


@pytest.mark.parametrize(
    "host, cause",
    [
        ("127.0.0.1:{port}", "Connection refused"),  # no server on the port
        ("no-such-host.invalid", "connection error: "),  # a host name that resolves to nothing
    ],
)
def test_a_server_never_reached_stops_the_run_in_one_line(host, cause):
    """The wrong port, a server not started, a typo in the host: after its retries the
    first call stops the run, naming the URL (its password masked) and what to check."""
    host = host.format(port=closed_port())
    b, logs = never_reached(f"http://alice:Pa55word99@{host}/v1")
    msg = evaluate_raises(b)
    assert msg.startswith(f"the run stopped: the VLM endpoint http://alice:***@{host}/v1 could ")
    assert cause in msg and "; 2 request(s)" in msg  # asked again before giving up
    where = host if ":" in host else f"{host}:80"
    assert f"is the server running, and listening on {where}? check brain.base_url" in msg
    assert "Pa55word99" not in msg + "".join(logs)
    u = b.usage
    assert (u.requests, u.retries, u.unanswered_calls, u.failed_calls) == (2, 1, 1, 0)
    strict, _ = never_reached(f"http://{host}/v1", on_failure="stop")  # its own line, as before
    msg = evaluate_raises(strict)
    assert "evaluate failed after 2 request(s): connection error: " in msg
    assert msg.endswith("(brain.on_failure=stop)")


def test_a_proxy_from_the_environment_is_named_when_nothing_is_reached(endpoint, monkeypatch):
    """http_proxy names a proxy that is not running: the local server is never asked, and
    the line says the proxy was in the way, not that the server is down."""
    for var in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    proxy = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("http_proxy", proxy)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    b, _logs = never_reached(endpoint.base_url)
    msg = evaluate_raises(b)
    assert not endpoint.requests
    assert f"could not be reached through the proxy {proxy} that the environment names" in msg
    assert "NO_PROXY=127.0.0.1" in msg


def test_a_server_that_answered_once_then_went_away_degrades(endpoint):
    """Reached once in the run, a refused connection is an outage, not a wrong URL: an
    offline answer and the circuit breaker, as before. Never reached, the run stops."""
    b = brain_for(endpoint, max_retries=1)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    assert b.evaluate(skill(), transition()).consistent is True
    endpoint.stop()  # the server goes away mid-run
    tr = transition()
    assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    assert "Connection refused" in b.last_call.error and b.usage.failed_calls == 1
    assert b.usage.unanswered_calls == 0
    dead, _ = never_reached(endpoint.base_url)  # the same URL, in a run that never reached it
    assert "could not be reached" in evaluate_raises(dead)


def test_a_server_that_replied_with_an_error_first_is_not_taken_for_a_wrong_url(endpoint):
    """A server that answered with HTTP 503 (still loading) exists: a refusal later in the
    run degrades; only a run whose requests all went unanswered by any server stops."""
    b = brain_for(endpoint, max_retries=0)
    endpoint.push(Reply(status=503, message="loading model"))
    b.evaluate(skill(), transition())
    assert b.last_call.error == "HTTP 503: loading model"
    endpoint.stop()
    b.evaluate(skill(), transition())  # no EndpointUnusable
    assert "Connection refused" in b.last_call.error and b.usage.unanswered_calls == 0
    never, _ = never_reached(endpoint.base_url)
    evaluate_raises(never)


def test_offline_play_chosen_goes_on_and_says_so_once():
    """``brain.on_unreachable = "offline"``: a server never reached is answered offline,
    and the user is told once, loudly, that the model answers nothing."""
    b, logs = never_reached(f"http://127.0.0.1:{closed_port()}/v1", on_unreachable="offline")
    tr = transition()
    for _ in range(2):
        assert b.evaluate(skill(), tr) == offline_of(b).evaluate(skill(), tr)
    (warning,) = [line for line in logs if "could not be reached" in line]
    assert warning.startswith("brain: WARNING: the VLM endpoint http://127.0.0.1:")
    assert "brain.on_unreachable=offline" in warning and "none comes from the model" in warning
    assert b.usage.unanswered_calls == 0 and b.usage.failed_calls == 2


def test_a_key_that_is_no_header_value_is_named_not_shown(endpoint, monkeypatch):
    monkeypatch.setenv("KGAGENT_TEST_KEY", KEY + "\nsecond line")
    b = failing(endpoint.base_url)
    b.evaluate(skill(), transition())
    assert "Illegal header value" in b.last_call.error and "Bearer ***" in b.last_call.error
    assert KEY[:9] not in b.last_call.error and not endpoint.requests


# ------------------------------------------------------- replies that are no completion
@pytest.mark.parametrize(
    "reply, what",
    [
        (
            Reply(
                body=b"<html><head><title>Welcome to nginx!</title></head><body>hi</body></html>",
                content_type="text/html",
            ),
            '(text/html: "Welcome to nginx!")',
        ),
        (Reply(body=b""), "(application/json, empty)"),
        (Reply(body=b"OK", content_type="text/plain"), '(text/plain: "OK")'),
        (Reply(body=b"OK"), '(application/json: "OK")'),
    ],
)
def test_a_reply_that_is_not_json_is_said_and_not_billed(endpoint, reply, what):
    b = brain_for(endpoint, max_retries=0)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    tokens = b.usage.tokens
    endpoint.push(reply)
    b.evaluate(skill(), transition())  # answered before: a passing fault, answered offline
    assert b.last_call.error == (
        f"the server's reply is not JSON {what}; is brain.base_url the API's address?"
    )
    assert b.usage.tokens == tokens and b.usage.failed_calls == 1
    assert not any("token usage" in line for line in b.test_logs)


def test_json_without_choices_is_no_completion(endpoint):
    b = brain_for(endpoint, max_retries=0)
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    endpoint.push(Reply(body=b'{"status": "ok"}'))
    b.evaluate(skill(), transition())
    assert "no chat completion" in b.last_call.error and b.usage.failed_calls == 1


@pytest.mark.parametrize(
    "reply, what",
    [
        (
            Reply(body=b"<html><title>Open WebUI</title></html>", content_type="text/html"),
            'its reply is not JSON (text/html: "Open WebUI")',
        ),
        (Reply(body=b'{"status": "ok"}'), "its reply is JSON but no chat completion"),
    ],
)
def test_a_first_reply_that_is_no_completion_stops_at_once(endpoint, reply, what):
    """A web page (or a health check) at the URL from the start: the URL names something
    else. One request, a one-line error with the fix, not a run that plays offline."""
    b = brain_for(endpoint, max_retries=3)
    endpoint.default = reply
    msg = evaluate_raises(b)
    assert len(endpoint.requests) == 1
    url = endpoint.base_url
    assert f"{url}/chat/completions is not a chat-completions API ({what}" in msg
    assert "check brain.base_url (the API's address, e.g. http://host:8000/v1)" in msg


def test_an_html_error_page_is_reduced_to_its_title(endpoint):
    page = (
        b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad "
        b"Gateway</h1></center>\n<hr><center>nginx/1.18.0</center>\n</body>\n</html>\n"
    )
    b = brain_for(endpoint, max_retries=0)
    endpoint.push(Reply(status=502, body=page, content_type="text/html"))
    b.evaluate(skill(), transition())
    assert b.last_call.error == "HTTP 502: 502 Bad Gateway"
    endpoint.push(Reply(status=503, body=b"<html><body>\n\n<p>down for <b>maintenance</b>\n"))
    b.evaluate(skill(), transition())
    assert b.last_call.error == "HTTP 503: down for"


# -------------------------------------------------------------- which endpoint
def test_openai_base_url_is_the_endpoint_and_is_named(endpoint, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.base_url)
    cfg = BrainConfig(api_key_env="KGAGENT_TEST_KEY", image_max_side=64)
    logs: list[str] = []
    b = make_brain(cfg, log=logs.append)
    assert isinstance(b, VLMBrain)
    assert f"at {endpoint.base_url} (from $OPENAI_BASE_URL)" in logs[0]
    assert cfg.base_url == endpoint.base_url  # the run header records it
    assert b.describe()["endpoint"] == endpoint.base_url
    endpoint.push(tool_reply("evaluate", EVAL_OK))
    b.evaluate(skill(), transition())
    assert len(endpoint.requests) == 1  # the requests went there
    # brain.base_url takes precedence over the variable
    cfg2 = BrainConfig(base_url="http://127.0.0.1:9/v1", api_key_env="KGAGENT_TEST_KEY")
    make_brain(cfg2, log=logs.append)
    assert "at http://127.0.0.1:9/v1 (" in logs[-1]
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(ConfigError, match=r"^\$OPENAI_BASE_URL = 'localhost:8000' is not an"):
        make_brain(BrainConfig(api_key_env="KGAGENT_TEST_KEY"), log=logs.append)


def test_the_openai_api_is_named_with_its_url(monkeypatch):
    monkeypatch.setenv("KGAGENT_TEST_KEY", KEY)
    logs: list[str] = []
    make_brain(BrainConfig(api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert "at the OpenAI API (https://api.openai.com/v1)" in logs[0]


def test_a_model_without_an_endpoint_is_a_warning(monkeypatch):
    monkeypatch.delenv("KGAGENT_TEST_KEY", raising=False)
    logs: list[str] = []
    b = make_brain(BrainConfig(model="llava", api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert isinstance(b, OfflineBrain)
    (line,) = logs
    assert line.startswith("brain: offline; warning: brain.model is 'llava' but no endpoint")
    assert "brain.base_url" in line and "$KGAGENT_TEST_KEY" in line
    logs.clear()
    make_brain(BrainConfig(api_key_env="KGAGENT_TEST_KEY"), log=logs.append)
    assert "warning" not in logs[0]  # the default model: nothing was asked for


def test_a_key_given_as_the_variable_name_is_refused_unseen(monkeypatch):
    logs: list[str] = []
    with pytest.raises(ConfigError) as e:
        make_brain(BrainConfig(api_key_env="sk-abc123secret"), log=logs.append)
    assert "sk-abc123secret" not in str(e.value) and "looks like a key" in str(e.value)
    assert not logs


class _Reset(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.connection.close()  # a server that hangs up without a reply

    def log_message(self, *args) -> None:
        pass


def test_a_server_that_hangs_up_is_a_connection_error_with_its_cause():
    srv = HTTPServer(("127.0.0.1", 0), _Reset)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        b = failing(f"http://127.0.0.1:{srv.server_address[1]}/v1")
        b.evaluate(skill(), transition())
    finally:
        srv.shutdown()
        srv.server_close()
    assert b.last_call.error.startswith("connection error: ")
    cause = b.last_call.error.lower()
    assert "disconnected" in cause or "reset by peer" in cause, cause
