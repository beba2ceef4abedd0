"""Page 3, the live run: follows the newest step log as ``kgagent play`` appends to it."""

from __future__ import annotations

from typing import Any

from dash import Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from kgagent.view import figures
from kgagent.view.a11y import ink_on
from kgagent.view.graphview import short_id
from kgagent.view.listing import Choices
from kgagent.view.pages import request_value

FOLLOW = "follow"


FOLLOW_OPTION = {"label": "newest run (follow)", "value": FOLLOW}


def log_options(ctx: Any, search: Any = None, value: Any = None) -> list[dict[str, Any]]:
    """The "follow" option, then at most OPTION_LIMIT runs (newest first, or those matching
    what was typed), and the chosen one."""
    opts = []
    for log in reversed(ctx.logs.all()):
        state = "live" if ctx.logs.live(log) else log.status
        opts.append(
            {
                "label": f"R{log.index} · {log.name} · {len(log.steps)} steps ({state})",
                "value": str(log.index),
            }
        )
    return Choices(opts).offer(search, value, fixed=[FOLLOW_OPTION], what="runs")


def layout(ctx: Any) -> html.Div:
    return html.Div(
        [
            dcc.Interval(id="v-tick", interval=1000),
            dcc.Store(id="v-last"),
            html.Div(
                [
                    html.Label("run", htmlFor="v-log", id="v-log-label", className="inline-label"),
                    html.Div(
                        dcc.Dropdown(
                            id="v-log",
                            options=log_options(ctx),
                            value=FOLLOW,
                            clearable=False,
                            search_order="original",
                        ),
                        style={"width": "520px", "maxWidth": "100%"},
                    ),
                    html.Label(
                        "charts over",
                        htmlFor="v-window",
                        id="v-window-label",
                        className="inline-label",
                    ),
                    dcc.RadioItems(
                        id="v-window",
                        options=[
                            {"label": " last 50 steps", "value": 50},
                            {"label": " last 200", "value": 200},
                            {"label": " whole run", "value": 0},
                        ],
                        value=200,
                        inline=True,
                        inputStyle={"marginLeft": "12px"},
                    ),
                    html.A("numbers (CSV)", id="v-csv", className="btn", href="#"),
                ],
                className="row",
                style={"alignItems": "center", "marginBottom": "12px", "flexWrap": "wrap"},
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.Img(
                                id="v-frame", className="shot", alt="the screen of the current step"
                            ),
                            html.P(id="v-caption", className="caption"),
                        ],
                        className="panel",
                        style={"flex": "1.4", "minWidth": "0"},
                    ),
                    html.Div(
                        [
                            # read out when it changes, politely: focus and scroll stay
                            html.Div(
                                id="v-status",
                                role="status",
                                **{"aria-live": "polite", "aria-atomic": "true"},
                            ),
                            html.Div(id="v-info"),
                            dcc.Graph(
                                id="v-rewards",
                                config={"displayModeBar": False},
                                style={"height": "240px"},
                            ),
                        ],
                        className="panel",
                        style={"flex": "1", "minWidth": "0"},
                    ),
                ],
                className="row",
            ),
            html.Div(
                dcc.Graph(
                    id="v-chart",
                    config={"displaylogo": False, "toImageButtonOptions": {"scale": 3}},
                ),
                className="panel",
                style={"marginTop": "16px"},
            ),
        ]
    )


#: The tick and cross of a transition's validity (text: 4.5:1 on white).
VALID, INVALID = "#00785A", "#B34E00"


def _badge(path: str) -> html.Span:
    """A decision path in the colour its line has in the charts, its text readable on it."""
    colour = figures.PATH_COLOURS.get(path, "#666666")
    return html.Span(path, className="badge", style={"background": colour, "color": ink_on(colour)})


def _status(log: Any, rec: dict[str, Any], live: bool) -> html.Div:
    """The line a screen reader reads out as the run goes on: step N of run R, its state."""
    status = (
        "running"
        if live
        else "incomplete (no summary line: the run was killed)"
        if log.unfinished
        else f"finished ({log.status})"
    )
    return html.Div(
        [
            html.Span("step ", className="hint"),
            html.B(str(rec.get("step")), id="v-step"),
            html.Span(
                f" of run R{log.index} · {log.header.get('env', '?')} · {status}",
                className="hint",
            ),
        ],
        style={"fontSize": "18px"},
    )


def _info(log: Any, rec: dict[str, Any]) -> list[Any]:
    execs = rec.get("executions") or []
    trail: list[Any] = []
    for i, e in enumerate(execs):
        if i:
            trail.append(" → ")
        trail.append(_badge(str(e.get("path", "?"))))
    if not trail:
        trail = [_badge(str(rec.get("path", "idle")))]
    rows = [
        html.Tr(
            [
                html.Td(_badge(str(e.get("path", "?")))),
                html.Td(e.get("skill_name") or "-"),
                html.Td(f"{short_id(e.get('from_state', ''))} → {short_id(e.get('to_state', ''))}"),
                html.Td(
                    "✓" if e.get("valid_transition") else "✗",
                    style={"color": VALID if e.get("valid_transition") else INVALID},
                ),
                html.Td(f"{float(e.get('r_total', 0.0)):+.2f}"),
            ]
        )
        for e in execs
    ]
    truth = rec.get("truth") or {}
    return [
        html.Div(log.name, className="mono"),
        html.Div(
            [html.Span("decision path: ", className="hint"), *trail], style={"margin": "10px 0"}
        ),
        html.Table(
            [
                html.Thead(
                    html.Tr(
                        [
                            html.Th(h, scope="col")
                            for h in ("path", "skill", "transition", "valid", "R_total")
                        ]
                    )
                ),
                html.Tbody(rows),
            ],
            className="mini",
        )
        if rows
        else html.P("no skill executed this step", className="hint"),
        html.Div(
            [
                html.Span("ground truth (harness only): ", className="hint"),
                f"progression {truth.get('progression', 0)}, score {truth.get('score', 0)}",
            ],
            style={"marginTop": "8px", "fontSize": "13px"},
        ),
    ]


def register(app: Any, ctx: Any) -> None:
    from kgagent.view.app import frame_source

    @app.callback(
        Output("v-frame", "src"),
        Output("v-caption", "children"),
        Output("v-status", "children"),
        Output("v-info", "children"),
        Output("v-rewards", "figure"),
        Output("v-chart", "figure"),
        Output("v-csv", "href"),
        Output("v-last", "data"),
        Input("v-tick", "n_intervals"),
        Input("v-log", "value"),
        Input("v-window", "value"),
        State("v-last", "data"),
    )
    def follow(_n, choice, window, last):
        from dash import ctx as dctx

        log = ctx.logs.load(-1 if choice in (None, FOLLOW) else request_value(int, choice, -1))
        window = request_value(int, window, 0)
        if log is None:
            msg = html.P(
                "No step logs yet: start `kgagent play` on this memory and this page follows it.",
                className="hint",
                id="v-empty",
            )
            return (
                None,
                "",
                msg,
                None,
                figures.reward_figure({}),
                figures.live_figure(_empty()),
                "#",
                None,
            )
        live = ctx.logs.live(log)
        mark = [log.name, len(log.steps), window, live]
        if dctx.triggered_id == "v-tick" and last == mark:
            raise PreventUpdate
        if not log.steps:
            msg = html.P(f"{log.name}: waiting for the first step…", className="hint", id="v-empty")
            return (
                None,
                "",
                msg,
                None,
                figures.reward_figure({}),
                figures.live_figure(_empty()),
                "#",
                mark,
            )
        rec = log.steps[-1]
        step = int(rec.get("step", 0))
        caption = frame_source(ctx, log, rec).caption
        series = ctx.logs.series(log)
        return (
            f"/frame/{log.index}/{step}.png",
            caption,
            _status(log, rec, live),
            _info(log, rec),
            _rewards(rec),
            figures.live_figure(series, window or None),
            f"/download/live-{log.index}.csv",
            mark,
        )

    @app.callback(
        Output("v-log", "options"),
        Input("v-log", "search_value"),
        Input("v-log", "value"),
        Input("v-last", "data"),
        prevent_initial_call=True,
    )
    def options(search, value, _last):
        return log_options(ctx, search, value)


def _rewards(rec: dict[str, Any]) -> Any:
    """The reward terms of the step's last evaluated execution (a skill that ran)."""
    execs = [e for e in rec.get("executions") or [] if e.get("evaluated") or e.get("skill_id")]
    if not execs:
        return figures.reward_figure(rec, "reward terms (Eq. 9): nothing evaluated this step")
    e = execs[-1]
    name = (e.get("skill_name") or "skill")[:40]
    return figures.reward_figure(e, f"reward terms (Eq. 9) of {name}")


def _empty() -> dict[str, list[float]]:
    return {k: [] for k in ("step", "progression", "score", "r_total", "err", "library_size")}
