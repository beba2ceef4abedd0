"""Which ``Host`` headers the view answers: a guard against DNS rebinding.

A guard beside the view's token (:mod:`kgagent.view.access`), and the only one with
``--no-token``. A web page on another site cannot read the view directly (the browser's
same-origin rule), but it can point its own name at 127.0.0.1 (DNS rebinding): the
browser then sends the page's requests to the view as requests for that name, and the
page reads the answers. Such requests carry the attacker's name in ``Host``, so the view
answers only the names it serves:

* the loopback names ``localhost``, ``127.0.0.1`` and ``[::1]``;
* the address or name it was told to bind (``--host``);
* bound to a network address, this machine's host names (``socket.gethostname()``
  and its fully qualified name); bound to every address (``0.0.0.0``, ``::``), also
  any IP address, since an address typed in a browser cannot be rebound;
* the names given with ``--allow-host`` (a name a proxy forwards, say).

Any port is accepted (an SSH tunnel or a proxy may change it). Every other
request, Dash's own routes included, gets HTTP 400 with one line of plain text
naming the host refused and the option that allows it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The name in a ``Host`` header (or an ``--allow-host`` value), without port or
    brackets, lower-case and without a trailing dot: ``[::1]:8050`` → ``::1``."""
    h = header.strip().lower()
    if h.startswith("["):  # [v6] or [v6]:port
        end = h.find("]")
        h = h[1:end] if end > 0 else h[1:]
    elif h.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


class HostPolicy:
    """The names a view bound to ``bind`` answers, plus ``extra`` (``--allow-host``)."""

    def __init__(self, bind: str = "127.0.0.1", extra: Iterable[str] = ()) -> None:
        b = host_name(bind)
        self.any_ip = b in WILDCARD
        names = set(LOOPBACK_NAMES)
        if not self.any_ip:
            names.add(b)
        if b not in LOOPBACK_NAMES and not _is_loopback(b):
            names |= _machine_names()
        names |= {host_name(x) for x in extra if host_name(x)}
        self.names = frozenset(names)

    def allows(self, header: str | None) -> bool:
        if header is None:  # HTTP/1.0 without Host: no browser sends that, nothing to rebind
            return True
        name = host_name(header)
        return name in self.names or (self.any_ip and _is_ip(name))


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _machine_names() -> set[str]:
    out: set[str] = set()
    for get in (socket.gethostname, socket.getfqdn):
        try:
            n = host_name(get())
        except OSError:
            continue
        if n:
            out.add(n)
            out.add(n.split(".", 1)[0])
    return out


def refusal(header: str) -> str:
    """The one-line body of a refused request."""
    shown = "".join(c if c.isprintable() else "?" for c in header)[:200]
    name = host_name(shown) or shown
    return (
        f"kgagent view refused a request for host {shown!r}: it answers only the names it "
        f"serves (a guard against DNS rebinding); if {name!r} is yours, restart it with "
        f"--allow-host {name}\n"
    )


def guard(wsgi_app: Callable[..., Any], policy: HostPolicy) -> Callable[..., Any]:
    """``wsgi_app`` answering only requests whose ``Host`` the policy allows."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        header = environ.get("HTTP_HOST")
        if policy.allows(header):
            return wsgi_app(environ, start_response)
        return refuse(start_response, "400 Bad Request", refusal(header or ""))

    return app


def refuse(start_response: Callable[..., Any], status: str, line: str) -> list[bytes]:
    """A refusal before the app: ``status`` and one line of plain text, not cached."""
    body = line.encode("utf-8", "replace")
    start_response(
        status,
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-store"),
        ],
    )
    return [body]
