"""Who may read the view: the holder of its token.

The view listens on 127.0.0.1, but every user of the machine can reach that address,
and the memory holds what the agent saw: screenshots, the text it read, what it typed.
A folder closed with ``umask 077`` keeps other users out of the files, so the server
must not let them in either. As Jupyter does, ``kgagent view`` makes a random token
(``secrets.token_urlsafe``, 32 bytes) and prints the URL that carries it; a request is
answered when it carries the token

* in the query string, ``?token=TOKEN`` (the printed URL): the answer then sets a cookie
  holding it, ``HttpOnly`` and ``SameSite=Strict``, so the page's own requests carry it;
* in that cookie, named after a digest of the token so that views on other ports of the
  same host keep their own;
* or in an ``Authorization: Bearer TOKEN`` header (a script, curl).

Every other request, Dash's own routes and assets included, gets HTTP 403 with one line
of plain text. Tokens are compared in constant time (:func:`hmac.compare_digest`).
``kgagent view --no-token`` serves without one (behind a proxy that authenticates).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from kgagent.errors import ConfigError
from kgagent.view.hosts import refuse

COOKIE_PREFIX = "kgagent-view-"
#: What a token given by the user may hold: URL- and cookie-safe characters, and not short.
TOKEN_RE = re.compile(r"[A-Za-z0-9._~-]{16,256}")
REFUSAL = (
    "kgagent view asks for its token: open the URL it printed (…/?token=…), "
    "or send the header 'Authorization: Bearer TOKEN'\n"
)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def checked(token: str, where: str) -> str:
    """``token`` when it is fit to be one; else a one-line :class:`ConfigError`."""
    if not TOKEN_RE.fullmatch(token):
        raise ConfigError(
            f"{where}: a view token must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ - "
            f"(got {len(token)} characters)"
        )
    return token


def cookie_name(token: str) -> str:
    return COOKIE_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:16]


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def _cookie(environ: dict[str, Any], name: str) -> str:
    for part in environ.get("HTTP_COOKIE", "").split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v.strip().strip('"')
    return ""


def guard(wsgi_app: Callable[..., Any], token: str) -> Callable[..., Any]:
    """``wsgi_app`` answering only requests that carry ``token`` (see the module)."""
    name = cookie_name(token)
    set_cookie = f"{name}={token}; Path=/; HttpOnly; SameSite=Strict"

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        auth = environ.get("HTTP_AUTHORIZATION", "")
        if auth[:7].lower() == "bearer " and _same(auth[7:].strip(), token):
            return wsgi_app(environ, start_response)
        if _same(_cookie(environ, name), token):
            return wsgi_app(environ, start_response)
        query = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if any(k == "token" and _same(v, token) for k, v in query):

            def with_cookie(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
                return start_response(status, [*headers, ("Set-Cookie", set_cookie)], *exc)

            return wsgi_app(environ, with_cookie)
        return refuse(start_response, "403 Forbidden", REFUSAL)

    return app
