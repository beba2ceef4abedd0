"""The endpoint as the user set it up, and its failures as the user can act on them.

* Where requests go (:func:`endpoint_url`): ``brain.base_url``, else ``$OPENAI_BASE_URL``
  (the variable the openai SDK reads), else the OpenAI API. The client passes the URL
  to the SDK itself, so the URL kgagent names is the one it uses.
* Secrets stay out of messages (:class:`Redactor`): a server may quote the key it was
  sent (``Incorrect API key provided: sk-…``), the HTTP layer may quote the
  ``Authorization`` header, and a URL may carry a password (``http://alice:pw@host/v1``);
  every line kgagent prints or logs about the endpoint goes through the redactor first,
  and the URL is shown and recorded as :func:`shown_url` writes it, the password masked.
  Requests still go to the URL as given.
* Why a connection failed (:func:`connection_cause`): the SDK says only "Connection
  error."; the cause is further down the exception chain (refused, TLS to a plain-HTTP
  server, a URL without a scheme, a key that is no valid header value).
* Failures that cannot fix themselves (:func:`unfixable`, :func:`setup_error`): a key
  refused (401, 403), nothing at the URL or no such model (404, a "model not found"
  message), a model that takes no images, a server that answers only streamed requests,
  and a server that refuses the answer mode ``brain.mode`` fixes (``MODE``: the client
  decides that one, since only it knows whether another mode is allowed). An endpoint
  that no request of the run reached (``UNREACHED``, :func:`not_reached`: connection
  refused, unknown host, no route) is one too once its retries are spent: the wrong port,
  a server not started, a typo in the host.
  On an endpoint that has not answered once in a run, they end the run with one line
  that names the cause and what to check.
* Replies that are not a chat completion (:func:`body_summary`): an HTML page, an empty
  body, ``OK``, shown by content type and title, not dumped.
"""

from __future__ import annotations

import errno
import os
import re
import socket
from typing import Any
from urllib.parse import unquote, urlsplit

from kgagent.brain.reply import html_text, is_html, one_line
from kgagent.config_checks import http_url
from kgagent.errors import BrainError, ConfigError

#: the OpenAI API, where the SDK sends requests without a base URL
OPENAI_URL = "https://api.openai.com/v1"
#: the variable the openai SDK reads for its base URL
BASE_URL_ENV = "OPENAI_BASE_URL"


class EndpointUnusable(BrainError):
    """The endpoint failed in a way that cannot fix itself before it ever answered.

    The message is one line: the cause, the server's words (redacted) and what to
    check. It stops the run (the CLI prints it and exits with 1): a run answered
    offline throughout is not the run the user asked for.
    """


def endpoint_url(cfg: Any) -> tuple[str, str]:
    """(the base URL requests go to, where it came from).

    ``brain.base_url`` when set; else ``$OPENAI_BASE_URL`` when set (the openai SDK
    would use it anyway, so kgagent says so rather than naming the OpenAI API); else
    the OpenAI API. A variable that is not an http(s) URL is a :class:`ConfigError`.
    """
    if cfg.base_url:
        return cfg.base_url, "brain.base_url"
    env = os.environ.get(BASE_URL_ENV, "").strip()
    if env:
        if not http_url(env):
            raise ConfigError(
                f"${BASE_URL_ENV} = {shown_url(env)!r} is not an http:// or https:// URL: correct or "
                "unset it, or set brain.base_url (which takes precedence)"
            )
        return env, f"${BASE_URL_ENV}"
    return OPENAI_URL, "the OpenAI API"


#: what a base URL must not end with: the SDK appends it to every request
COMPLETIONS_PATH = "/chat/completions"


def with_v1(url: str) -> str | None:
    """The base URL ``url`` most likely meant, or None when it looks right.

    ``/v1`` appended when its path has no ``v1`` segment; a pasted request URL
    (``…/v1/chat/completions``) without its ``/chat/completions``.
    """
    base = url.rstrip("/")
    pasted = base.endswith(COMPLETIONS_PATH)
    base = base.removesuffix(COMPLETIONS_PATH)
    if "v1" not in [p for p in urlsplit(base).path.split("/") if p]:
        return base + "/v1"
    return base if pasted else None


# ------------------------------------------------------------------ redaction
#: the password of a URL's userinfo: ``scheme://user:PASSWORD@host``
_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]*):([^/\s@]+)@")


def shown_url(url: str) -> str:
    """``url`` as kgagent shows and records it: a password in it masked
    (``http://alice:***@host/v1``); the user name stays, it names the account."""
    return _PASSWORD.sub(lambda m: f"{m.group(1)}:{Redactor.MASK}@", url)


def url_secrets(url: str) -> tuple[str, ...]:
    """The password of ``url``'s userinfo, as written and decoded (none: ``()``), for a
    :class:`Redactor` to find it outside the URL too (a server or library that quotes it)."""
    password = urlsplit(url).password
    return (password, unquote(password)) if password else ()


#: an ``Authorization`` credential quoted back: ``Bearer <token>`` or ``Basic <base64 of
#: user:password>``, up to a space, a quote, a backslash or the punctuation that closes a
#: phrase (``;`` ``,`` ``)`` ``]`` ``}`` ``>``), which stays
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s'\"\\;,)\]}>]+")
_BASIC = re.compile(r"\b(Basic)\s+[A-Za-z0-9+/]{8,}={0,2}")  # not "basic auth" in a sentence
#: OpenAI-style secret keys (``sk-…``, ``sk-proj-…``): never shown, whoever's they are
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-*.…]{6,}")
#: shorter keys are only replaced where they appear whole
_PREFIX_AT = 16
#: the shortest run of a secret's characters that is masked wherever it appears: a server
#: may quote the key without its ``sk-`` prefix, or only its tail or middle. 12 random
#: characters of a key (base62: about 71 bits) are already a secret worth hiding and
#: occur in no ordinary text; a shorter run (OpenAI's error shows the key's last 4
#: characters) would mask words where a key holds one (``secret-token``)
_RUN = 12


class Redactor:
    """Removes a secret from text: the key itself, any ``Bearer …`` or ``Basic …``
    credential, any ``sk-…`` key, a quoted part of the key that starts like it (a server that shows
    ``sk-BAD1234…`` of a longer key), any run of at least 12 of the key's characters in a row
    (the key quoted without its prefix, or its tail), and the password of any URL
    (:func:`shown_url`)."""

    MASK = "***"

    def __init__(self, *secrets: str | None) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)
        self._prefixes = [
            re.compile(re.escape(s[:8]) + r"[^\s'\"]*")
            for s in self.secrets
            if len(s) >= _PREFIX_AT
        ]
        #: every run of _RUN characters of every secret: a text's window found here is a
        #: piece of a key
        self._runs = frozenset(
            s[i : i + _RUN] for s in self.secrets for i in range(len(s) - _RUN + 1)
        )

    def __call__(self, text: Any) -> str:
        s = str(text)
        for secret in self.secrets:
            s = s.replace(secret, self.MASK)
        for prefix in self._prefixes:
            s = prefix.sub(self.MASK, s)
        s = self._mask_runs(s)
        s = _BEARER.sub(lambda m: f"{m.group(1)} {self.MASK}", s)
        s = _BASIC.sub(lambda m: f"{m.group(1)} {self.MASK}", s)
        return shown_url(_SK.sub("sk-" + self.MASK, s))

    def _mask_runs(self, s: str) -> str:
        """``s`` with every stretch made of runs of :data:`_RUN` characters of a secret
        (overlapping or touching) as one mask."""
        if not self._runs or len(s) < _RUN:
            return s
        spans: list[list[int]] = []
        for i in range(len(s) - _RUN + 1):
            if s[i : i + _RUN] in self._runs:
                if spans and i <= spans[-1][1]:
                    spans[-1][1] = i + _RUN
                else:
                    spans.append([i, i + _RUN])
        if not spans:
            return s
        out, at = [], 0
        for start, end in spans:
            out += [s[at:start], self.MASK]
            at = end
        return "".join(out) + s[at:]


# ---------------------------------------------------------------- connections
def connection_cause(exc: BaseException) -> str:
    """The first message down the exception chain below the SDK's "Connection error."."""
    seen: set[int] = set()
    e = exc.__cause__ or exc.__context__
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = one_line(str(e))
        if text:
            if "WRONG_VERSION_NUMBER" in text:
                text += " (an https:// URL for a server that speaks plain http?)"
            return text
        e = e.__cause__ or e.__context__
    return one_line(getattr(exc, "message", "") or str(exc)) or type(exc).__name__


#: a connection that no server took: nothing listens on the port, or no route to the host
_NOT_REACHED_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL}
)


def proxy_for(url: str) -> str | None:
    """The proxy the environment (``http_proxy``, ``https_proxy``, ``all_proxy``, less
    ``no_proxy``) names for ``url``, as it may be shown; None when requests go direct."""
    from urllib.request import getproxies_environment, proxy_bypass_environment

    parts = urlsplit(url)
    proxies = getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    return shown_url(proxy)


def not_reached(exc: BaseException) -> bool:
    """The request reached no server: the connection was refused, the host name is unknown
    (DNS), or there is no route to the host. A timeout (a slow or busy server, or one
    behind a firewall that drops packets) is not one of these."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, socket.gaierror) or (
            isinstance(e, OSError) and e.errno in _NOT_REACHED_ERRNOS
        ):
            return True
        e = e.__cause__ or e.__context__
    return False


# ----------------------------------------------------------- bodies that are not JSON
def body_summary(content_type: str | None, text: str | None) -> str:
    """What came back instead of JSON, in a few words: content type and title or text."""
    ctype = (content_type or "").split(";", 1)[0].strip() or "no content type"
    text = text or ""
    if not text.strip():
        return f"{ctype}, empty"
    if is_html(text):
        return f'{ctype}: "{html_text(text, 60)}"'
    first = next(line for line in text.splitlines() if line.strip())
    return f'{ctype}: "{one_line(first, 60)}"'


# -------------------------------------------------------- failures that stay failures
#: a message that says the model is unknown (OpenAI, vLLM, Ollama, LM Studio wording)
_NO_MODEL = re.compile(
    r"model\b.*\b(not found|does not exist|doesn't exist|not exist|unknown|no such|not loaded|"
    r"is not served|not available on)|\b(unknown|no such|invalid) model|model_not_found",
    re.I,
)
_IMAGES = ("image", "vision", "multimodal", "mmproj")
_IMAGES_REFUSED = (
    "not support",
    "only supported",
    "unsupported",
    "not a multimodal",
    "not allowed",
    "cannot",
    "can't",
    "does not accept",
    "doesn't support",
    "not enabled",
    "is not available",
)
_STREAM_ONLY = re.compile(
    r"stream\s*[=:]\s*true|stream\s*[=:]\s*false is not|streaming is required|"
    r"only stream|stream must be|must stream|requires? stream",
    re.I,
)
#: words of a refusal that blames the answer mode, not the model (see client.FORM_WORDS)
_MODE_WORDS = ("tool", "jinja", "response_format", "json_schema", "grammar", "function")

KEY, ACCESS, MODEL, PATH, IMAGES, STREAM = "key", "access", "model", "path", "images", "stream"
#: the server refuses the answer mode that brain.mode fixes (tools, response_format)
MODE = "mode"
#: no request of the run reached a server: refused, unknown host, no route (:func:`not_reached`)
UNREACHED = "unreached"
#: a 2xx reply that is no chat completion (an HTML page, ``OK``) from an endpoint that never
#: answered one: something else lives at the URL (response.NotACompletion)
NOT_API = "not_api"


def unfixable(status: int, message: str, body: Any = None) -> str | None:
    """The kind of a failure that asking again will not fix, or None.

    ``key`` (401), ``access`` (403), ``model`` (a "model not found" message, or a 404
    that names the model), ``path`` (any other 404: no chat-completions API at the URL),
    ``images`` (the model takes no image input), ``stream`` (the server answers only
    ``stream=true``). A refusal that names the answer mode (tools, response_format…) is
    negotiation's, never one of these.
    """
    text = message.lower()
    code = body.get("code") if isinstance(body, dict) else None
    if status == 401:
        return KEY
    if status == 403:
        return ACCESS
    if not (400 <= status < 500 or status == 500):
        return None
    if code == "model_not_found" or (status < 500 and _NO_MODEL.search(message)):
        return MODEL
    if status == 404:
        return PATH
    if any(w in text for w in _MODE_WORDS):
        return None
    if any(w in text for w in _IMAGES) and any(w in text for w in _IMAGES_REFUSED):
        return IMAGES
    if "stream" in text and _STREAM_ONLY.search(message):
        return STREAM
    return None


#: what each fixed mode asks the server for, as a refusal names it
_MODE_ASKS = {"tools": "tools", "json_schema": "response_format (json_schema)"}


def failure_text(kind: str, error: str, mode: str = "") -> str:
    """A failed call's note for an unfixable failure (``error``: ``HTTP 400: …``;
    ``mode``: the answer mode the call used)."""
    if kind == MODE:
        return f"the server refuses {_MODE_ASKS.get(mode, mode)} ({error}) and {_fixed(mode)}"
    if kind == IMAGES:
        return f"the model takes no images, and kgagent shows it screenshots ({error})"
    if kind == STREAM:
        return f"the server answers only streamed requests, which kgagent does not send ({error})"
    return error


def _fixed(mode: str) -> str:
    return f"brain.mode={mode} allows no other"


def _mode_fix(mode: str, error: str) -> str:
    """How to get answers from a server that refuses the fixed ``mode``."""
    fix = "use brain.mode=auto"
    if "jinja" in error.lower():
        return fix + ", or start llama-server with --jinja"
    if mode == "tools":
        return fix + ", or a model whose chat template has tools"
    return fix + " or text"


def setup_error(
    kind: str,
    error: str,
    *,
    url: str,
    model: str,
    key_env: str,
    key_set: bool,
    mode: str = "",
) -> EndpointUnusable:
    """The one-line error that ends a run whose endpoint never answered (see :func:`unfixable`).

    ``url`` as it may be shown (:func:`shown_url`); ``mode``: the answer mode of the call.
    """
    at = f"the VLM endpoint {url}"
    if kind == MODE:
        asks = _MODE_ASKS.get(mode, mode)
        what = f"{at} refuses {asks} ({error}) and {_fixed(mode)}: {_mode_fix(mode, error)}"
    elif kind == KEY and urlsplit(url).username:
        what = (
            f"{at} refused the credentials ({error}): the user and password in brain.base_url "
            "went as HTTP basic auth, in place of any API key: check them, or leave them out "
            f"of the URL to send the key in ${key_env}"
        )
    elif kind == KEY:
        sent = "" if key_set else f"; ${key_env} is not set, so no key was sent"
        what = (
            f"{at} refused the API key ({error}): check the key in ${key_env} "
            f"(brain.api_key_env names the variable){sent}"
        )
    elif kind == ACCESS:
        what = (
            f"{at} refused access ({error}): check that the key in ${key_env} may use "
            f"model {model!r}, or choose another brain.model"
        )
    elif kind == MODEL:
        what = (
            f"{at} does not know model {model!r} ({error}): check brain.model against the "
            f"server's models (GET {url.rstrip('/')}/models)"
        )
    elif kind in (PATH, NOT_API):
        fix = with_v1(url)
        hint = f": did you mean {fix}?" if fix else " (the API's address, e.g. http://host:8000/v1)"
        if url.rstrip("/").endswith(COMPLETIONS_PATH):
            hint += f" (kgagent appends {COMPLETIONS_PATH} itself)"
        said = f"its reply is {error}" if kind == NOT_API else error
        what = (
            f"{url.rstrip('/')}/chat/completions is not a chat-completions API ({said}): "
            f"check brain.base_url{hint}"
        )
    elif kind == UNREACHED:
        where = urlsplit(url)
        port = where.port or (443 if where.scheme == "https" else 80)
        proxy = proxy_for(url)
        what = (
            f"{at} could not be reached through the proxy {proxy} that the environment "
            f"names ({error}): is the proxy running? A server it cannot reach (one on this "
            f"machine) is reached directly with NO_PROXY={where.hostname}"
            if proxy
            else f"{at} could not be reached ({error}): is the server running, and listening "
            f"on {where.hostname}:{port}? check brain.base_url (the host and the port)"
        )
    elif kind == IMAGES:
        what = (
            f"model {model!r} at {url} takes no images ({error}): kgagent shows the model "
            "screenshots, so brain.model must be a vision model (image input)"
        )
    else:
        what = (
            f"{at} answers only streamed requests ({error}): streaming-only servers are "
            "not supported; use a server or setting that answers stream=false"
        )
    return EndpointUnusable(f"the run stopped: {what}")
