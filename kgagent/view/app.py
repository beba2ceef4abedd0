"""`kgagent view`: the Dash app over one memory, and the few plain routes it serves.

Dash (with dash-cytoscape for the graph) was chosen because the Bottom-Up
Agent's own monitor is a Dash app, Plotly figures download as PNG and SVG in the
browser without a server-side renderer, and Cytoscape.js draws thousands of
nodes with images and exports the graph as PNG or SVG; both ship their
JavaScript in the Python wheels, so the view works without a network. See
docs/view.md.

Routes besides Dash's own (each reads; none takes a path from the request):

* ``/blob/<sha256>.png`` — a thumbnail or object crop (the id must be 64 hex digits);
* ``/state/<state id>.png`` — a state's screenshot (a recording, else its thumbnail);
* ``/frame/<log>/<step>.png`` — the live picture: screen + the step's actions;
* ``/download/<name>.csv`` — the numbers behind the rounds table and figures, and the
  library's tables (every row, filtered and sorted as the query string says).

Every route, Dash's own included, answers only requests for a host it serves
(loopback, ``--host``, ``--allow-host``): the rest get HTTP 400, a guard against
DNS rebinding (:mod:`kgagent.view.hosts`). A request body is at most
:data:`REQUEST_MAX` bytes; no page may frame the view; nothing that carries the
memory's content is kept in a cache but the content-addressed blobs (:func:`_headers`).
A callback request that the page does not send is a 400 and one line on the terminal,
never a traceback (:func:`_errors`).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgagent.config import Config
from kgagent.errors import ConfigError
from kgagent.view.listing import PerSnapshot, Refused
from kgagent.view.logs import RunLogs
from kgagent.view.source import MemorySource, is_blob_id, passing

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: The largest request body the view reads (Flask's MAX_CONTENT_LENGTH; larger: 413). The
#: pages send only callbacks: control values, a table's sort and filter (at most
#: FILTER_MAX characters), signatures, a few hundred bytes each; the largest is a click on
#: an arrow, whose data names every skill it merges: at most SKILL_LIMIT (2,000) ids of 20
#: characters (k-0000012-0123abcdef), about 50 kB. 1 MiB is twenty times that; a 50 MB
#: body was read whole before.
REQUEST_MAX = 1 << 20
#: Where Dash answers callbacks: a request the page does not send is a 400 here.
UPDATE_ROUTE = "/_dash-update-component"
#: Dash's own scripts and styles and the app's assets: no memory content, cached as Dash says.
STATIC_PREFIXES = ("/_dash-component-suites/", "/assets/", "/_favicon.ico")
#: The content-addressed blobs: the same id is the same bytes for ever.
BLOB_CACHE = "private, max-age=86400, immutable"

log = logging.getLogger("kgagent.view")


@dataclass
class ViewContext:
    """What every page reads: the memory (read-only) and its step logs, and what the pages
    derive from one snapshot (the state list searched as the user types, the library's rows)."""

    source: MemorySource
    logs: RunLogs
    derived: PerSnapshot = field(default_factory=PerSnapshot)

    @property
    def memory(self) -> Path:
        return self.source.path


def create_app(
    memory: str | Path,
    config: Config | None = None,
    *,
    refresh_s: float = 1.0,
    host: str = "127.0.0.1",
    allow_hosts: Iterable[str] = (),
    token: str | None = None,
) -> Any:
    """The Dash app for ``memory`` (not started; ``app.run`` or :func:`serve` starts it).

    It answers only requests whose ``Host`` is a name it serves: the loopback names,
    ``host`` (the address it will be bound to) and ``allow_hosts``; see
    :mod:`kgagent.view.hosts`. Given a ``token``, only requests that carry it
    (:mod:`kgagent.view.access`); None: every request that passes the host check.
    """
    import dash
    import dash_cytoscape as cyto

    from kgagent.memory.lifecycle import no_memory
    from kgagent.view import access, hosts, pages, shell

    if token is not None:
        access.checked(token, "token")
    path = Path(memory).expanduser().resolve()
    if not (path / "manifest.json").is_file():
        raise ConfigError(no_memory(path))
    ctx = ViewContext(MemorySource(path, config, refresh_s=refresh_s), RunLogs(path))
    first = ctx.source.snapshot()  # the first read loads the engines (seconds): before any page
    if first.error and not passing(first.error):  # pages would show nothing, for ever
        raise ConfigError(f"cannot read the memory at {path}: {first.error}")
    cyto.load_extra_layouts()
    app = dash.Dash(
        __name__,
        title="kgagent view",
        update_title=None,
        suppress_callback_exceptions=True,
        serve_locally=True,
    )
    app.server.config["MAX_CONTENT_LENGTH"] = REQUEST_MAX
    app.index_string = shell.INDEX
    app.layout = shell.layout(ctx)
    shell.register(app, ctx)
    pages.register(app, ctx)
    _routes(app.server, ctx)
    _errors(app.server)
    app.server.after_request(_headers)
    # outermost, so that every route (Dash's own, its assets, 404s) is behind them
    if token is not None:
        app.server.wsgi_app = access.guard(app.server.wsgi_app, token)
    app.server.wsgi_app = hosts.guard(app.server.wsgi_app, hosts.HostPolicy(host, allow_hosts))
    return app


def _routes(server: Any, ctx: ViewContext) -> None:
    from flask import Response, abort

    from kgagent.rounds import rounds_csv
    from kgagent.view import figures, frames

    frame_cache: dict[tuple, bytes] = {}
    lock = threading.Lock()

    def png(data: bytes) -> Response:
        return Response(data, mimetype="image/png")  # Cache-Control: _headers

    @server.route("/blob/<name>.png")
    def blob(name: str) -> Response:
        data = ctx.source.blob(name) if is_blob_id(name) else None
        if data is None:
            abort(404)
        return png(data)  # content-addressed: cached (_headers)

    @server.route("/state/<state_id>.png")
    def state_png(state_id: str) -> Response:
        snap = ctx.source.snapshot()
        row = snap.states.get(state_id)
        if row is None:
            abort(404)
        rec = ctx.logs.state_recording(state_id)
        if rec is not None:
            path = rec[0].recording(rec[1])
            if path is not None:
                return png(path.read_bytes())
        data = ctx.source.blob(row.get("thumbnail") or "")
        if data is None:
            abort(404)
        return png(data)

    @server.route("/frame/<int:log_index>/<int:step>.png")
    def frame(log_index: int, step: int) -> Response:
        log = ctx.logs.load(log_index)
        if log is None:
            abort(404)
        rec = next((s for s in log.steps if int(s.get("step", -1)) == step), None)
        if rec is None:
            abort(404)
        key = (log.name, step, len(log.steps))
        with lock:
            hit = frame_cache.get(key)
        if hit is None:
            hit = _frame(ctx, log, rec, frames)
            with lock:
                if len(frame_cache) > 64:
                    frame_cache.clear()
                frame_cache[key] = hit
        return png(hit)

    @server.route("/download/<name>.csv")
    def download(name: str) -> Response:
        from flask import request

        from kgagent.view import page_library

        if name in page_library.TABLES:  # every row the table's filter keeps, in its order
            snap = ctx.source.snapshot()
            if snap.error:  # an empty or an old table would pass for the library
                r = Response(f"the memory cannot be read now: {snap.error}\n", status=503)
                r.headers["Retry-After"] = "5"
                r.mimetype = "text/plain"
                return r
            try:
                text = page_library.download(ctx, name, request.args)
            except Refused as e:  # a link that no page writes; any web page could GET it
                return Response(f"{e}\n", status=400, mimetype="text/plain")
        elif name == "rounds":
            text = rounds_csv(ctx.logs.rounds(), spreadsheet=True)
        elif name in figures.ROUND_FIGURES:
            rounds = ctx.logs.rounds()
            series = [ctx.logs.series(log) for log in _round_logs(ctx, rounds)]
            text = figures.figure_csv(name, rounds, series)
        elif name.startswith("live-") and name[5:].isdigit():
            log = ctx.logs.load(int(name[5:]))
            if log is None:
                abort(404)
            text = _series_csv(ctx.logs.series(log))
        else:
            abort(404)
        r = Response(text, mimetype="text/csv")
        r.headers["Content-Disposition"] = f'attachment; filename="kgagent-{name}.csv"'
        return r


def _headers(resp: Any) -> Any:
    """Headers on every response (Flask's after_request).

    * No other site may frame the view (clickjacking): ``X-Frame-Options`` and the CSP's
      ``frame-ancestors``, and only that in the CSP: Dash's pages run inline scripts.
    * No response that carries the memory's content (pages, callbacks, CSVs, pictures) is
      kept in a cache, the browser's or a proxy's: ``no-store``. A blob is named by its
      sha256, so it is cached, by this browser only. Dash's scripts carry no memory.
    """
    from flask import request

    h = resp.headers
    h.setdefault("X-Content-Type-Options", "nosniff")
    h.setdefault("Referrer-Policy", "no-referrer")
    h["X-Frame-Options"] = "DENY"
    h["Content-Security-Policy"] = "frame-ancestors 'none'"
    if request.path.startswith(STATIC_PREFIXES):
        return resp
    blob = request.path.startswith("/blob/") and resp.status_code == 200
    h["Cache-Control"] = BLOB_CACHE if blob else "no-store"
    return resp


def _errors(server: Any) -> None:
    """Exceptions in a route answer without a traceback, on the page or the terminal.

    Dash answers a callback that raised with HTTP 500 and prints the traceback; a
    hand-made request (a number where the page sends a list, a body of ``[1, 2, 3]``,
    JSON nested past Python's stack) did so too, as often as it was sent. Here a callback
    request that fails is a 400 and a server bug on another route a 500; each is one line
    on the terminal, once per kind (route, exception, where it was raised), so a flood of
    bad requests writes a few lines. Dash's own answers (PreventUpdate: 204) and Flask's
    HTTP errors (404, 413) are as they were.
    """
    from flask import Response, request
    from werkzeug.exceptions import HTTPException

    said: set[tuple[str, str, str]] = set()

    @server.errorhandler(Exception)
    def failed(e: Exception) -> Any:
        if isinstance(e, HTTPException):
            return e
        bad_request = request.path == UPDATE_ROUTE
        where = _raised_at(e)
        route = request.url_rule.rule if request.url_rule is not None else "?"
        kind = (route, type(e).__name__, where)
        if kind not in said and len(said) < 256:
            said.add(kind)
            what = "a callback request failed" if bad_request else f"{route} failed"
            log.error("kgagent view: %s: %s: %s (%s)", what, type(e).__name__, _one_line(e), where)
        if bad_request:
            return Response(
                "not a callback request this view's pages send\n", 400, mimetype="text/plain"
            )
        return Response("the view failed on this request\n", 500, mimetype="text/plain")


def _raised_at(e: BaseException) -> str:
    """``file.py:line`` of the frame that raised ``e`` (its innermost)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "?"
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"


def _one_line(e: BaseException, limit: int = 200) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _round_logs(ctx: ViewContext, rounds: list) -> list:
    by_name = {log.name: log for log in ctx.logs.all()}
    return [by_name[r.log] for r in rounds if r.log in by_name]


def _series_csv(series: dict[str, list[float]]) -> str:
    keys = list(series)
    lines = [",".join(keys)]
    lines += [",".join(str(series[k][i]) for k in keys) for i in range(len(series["step"]))]
    return "\n".join(lines) + "\n"


@dataclass
class FramePlan:
    """What the live picture of a step shows: which screen, whose actions, and the caption."""

    kind: str  # recording | thumbnail | none
    caption: str
    execution: int  # index of the execution whose actions are drawn
    state_id: str  # the state the drawn execution started from


def frame_source(ctx: ViewContext, log: Any, rec: dict[str, Any]) -> FramePlan:
    """Which picture the live page shows for a step, and which execution's actions go on it.

    A recording is the screen the step began on, so it carries the step's first
    execution; a thumbnail can be of any state, so it carries the last execution
    on the thumbnail of the state that execution started from.
    """
    step = int(rec.get("step", 0))
    execs = rec.get("executions") or []
    n = len(execs)

    def which(i: int) -> str:
        if n <= 1:
            return ""
        e = execs[i]
        return f"; actions of execution {i % n + 1} of {n} ({e.get('path', '?')})"

    if log.recording(step - 1) is not None:
        first = (execs[0].get("from_state") if execs else None) or rec.get("state_id", "")
        caption = f"recorded screenshot after step {step - 1}: the screen step {step} acted on"
        return FramePlan("recording", caption + which(0), 0, first)
    last = (execs[-1].get("from_state") if execs else None) or rec.get("state_id", "")
    snap = ctx.source.snapshot()
    thumb = (snap.states.get(last) or {}).get("thumbnail") or ""
    if is_blob_id(thumb):
        note = (
            ""
            if log.screen_size()
            else "; positions approximate (the log does not record the screen size)"
        )
        caption = f"thumbnail of state {last} kept in the memory (the run was not recorded)"
        return FramePlan("thumbnail", caption + which(-1) + note, -1, last)
    if snap.error and last not in snap.states:  # Kùzu: no reader beside the running agent
        why = "the memory cannot be read while the run holds it (record it: play --record DIR)"
    else:
        why = "the run was not recorded and the state has no thumbnail"
    return FramePlan("none", f"no picture: {why}", -1, last)


def _frame(ctx: ViewContext, log: Any, rec: dict[str, Any], frames: Any) -> bytes:
    plan = frame_source(ctx, log, rec)
    actions = frames.actions_of(rec, plan.execution)
    step = int(rec.get("step", 0))
    if plan.kind == "recording":
        path = log.recording(step - 1)
        return frames.compose(path.read_bytes(), actions, log.screen_size())
    size = log.screen_size()
    if size is None:
        detail = ctx.source.state_detail(plan.state_id) or {}
        boxes = [o["bbox"] for o in detail.get("objects", [])]
        all_actions = [a for s in log.steps for a in frames.actions_of(s)]
        size = frames.extent(all_actions, boxes)
    if plan.kind == "thumbnail":
        thumb = ctx.source.snapshot().states[plan.state_id]["thumbnail"]
        return frames.compose(ctx.source.blob(thumb) or b"", actions, size)
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, (233, 236, 239)).save(buf, "PNG")
    return frames.compose(buf.getvalue(), actions, size)


def listen(app: Any, host: str, port: int) -> Any:
    """A threaded WSGI server for ``app`` (a Dash app), bound to ``host``:``port`` and
    listening (port 0: a free one, its ``port`` says which); not yet serving.

    The socket is bound here, so a port in use or an address that is not this
    machine's is a one-line :class:`ConfigError` before anything says it serves.
    """
    import errno
    import logging
    import socket

    from werkzeug.serving import make_server

    if not host.strip():
        raise ConfigError("--host is empty; give an address such as 127.0.0.1")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"cannot serve on {host!r}: {why}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        hint = (
            "; another program uses it: pick another --port (0: any free one)"
            if e.errno == errno.EADDRINUSE
            else "; is that an address of this machine?"
            if e.errno == errno.EADDRNOTAVAIL
            else ""
        )
        raise ConfigError(f"cannot listen on {host} port {port}: {e.strerror or e}{hint}") from None
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    try:
        return make_server(host, port, app.server, threaded=True, fd=sock.fileno())
    finally:
        sock.close()  # the server holds its own descriptor of the socket


def serve(
    memory: str | Path,
    config: Config | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8050,
    refresh_s: float = 1.0,
    allow_hosts: Iterable[str] = (),
    token: str | None = None,
    open_access: bool = False,
) -> None:
    """Build the app and serve it until interrupted (a threaded WSGI server).

    Only requests that carry ``token`` are answered (a random one when None); the URL
    that carries it is printed on stderr. ``open_access``: no token, every request that
    passes the host check is answered.
    """
    from kgagent.view import access

    if not open_access and token is None:
        token = access.new_token()
    app = create_app(
        memory,
        config,
        refresh_s=refresh_s,
        host=host,
        allow_hosts=allow_hosts,
        token=None if open_access else token,
    )
    server = listen(app, host, port)
    print(
        f"kgagent view on {url(host, server.port, None if open_access else token)}", file=sys.stderr
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()


def url(host: str, port: int, token: str | None) -> str:
    """The address to open: ``http://HOST:PORT/``, with ``?token=…`` when there is one."""
    h = f"[{host}]" if ":" in host else host
    return f"http://{h}:{port}/" + (f"?token={token}" if token else "")
