"""Page 4, rounds: the papers' Table 2 per round, progression per round and learning curves.

Each figure downloads as PNG or SVG (drawn by Plotly in the browser) and its
numbers as CSV (``/download/<figure>.csv``); the table as ``/download/rounds.csv``.
"""

from __future__ import annotations

from typing import Any

from dash import Input, Output, State, dash_table, dcc, html
from dash.exceptions import PreventUpdate

from kgagent.rounds import HEADINGS
from kgagent.view import figures

TABLE_COLUMNS = (
    "round",
    "log",
    "env",
    "steps",
    "library_size",
    "skills_augmented",
    "skills_pruned",
    "nodes",
    "skill_edges",
    "similarity_edges",
    "nodes_added",
    "skill_edges_added",
    "similarity_edges_added",
    "progression",
    "score",
    "err",
    "cost_usd",
    "stopped",
)
TITLES = {
    "library": "Skill library per round",
    "graph": "SA-KG size per round",
    "outcome": "Progression and ERR per round",
    "curves": "Learning curves",
    "growth": "Library size over steps",
}
_DOWNLOAD_JS = """
function(png, svg) {
    const t = window.dash_clientside.callback_context.triggered;
    if (!t || !t.length || !t[0].value) { return window.dash_clientside.no_update; }
    const fmt = t[0].prop_id.indexOf('-svg.') >= 0 ? 'svg' : 'png';
    const gd = document.querySelector('#r-fig-NAME .js-plotly-plot');
    if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
    window.Plotly.downloadImage(gd, {format: fmt, filename: 'kgagent-NAME',
        width: gd._fullLayout.width, height: gd._fullLayout.height, scale: fmt === 'png' ? 3 : 1});
    return fmt + ':' + Date.now();
}
"""


def _data(ctx: Any) -> tuple[list, list]:
    rounds = ctx.logs.rounds()
    by_name = {log.name: log for log in ctx.logs.all()}
    series = [ctx.logs.series(by_name[r.log]) for r in rounds if r.log in by_name]
    return rounds, series


def _rows(rounds: list) -> list[dict[str, Any]]:
    rows = []
    for r in rounds:
        d = r.as_row()
        row = {c: d.get(c) for c in TABLE_COLUMNS}
        row["err"] = None if r.err is None else round(r.err, 3)
        row["cost_usd"] = round(r.cost_usd, 4)
        rows.append(row)
    return rows


def _card(name: str, fig: Any) -> html.Div:
    return html.Div(
        [
            dcc.Graph(id=f"r-fig-{name}", figure=fig, config={"displayModeBar": False}),
            html.Div(
                [
                    html.Button("PNG", id=f"r-{name}-png", className="btn"),
                    html.Button("SVG", id=f"r-{name}-svg", className="btn"),
                    html.A(
                        "CSV", href=f"/download/{name}.csv", className="btn", id=f"r-{name}-csv"
                    ),
                    dcc.Store(id=f"r-{name}-done"),
                ],
                className="btns",
            ),
        ],
        className="panel figcard",
    )


def layout(ctx: Any) -> html.Div:
    rounds, series = _data(ctx)
    if not rounds:
        return html.Div(
            [
                html.H2("Rounds"),
                html.P(
                    "No step logs in this memory yet: every `kgagent play` on it is one round.",
                    className="hint",
                    id="r-empty",
                ),
            ]
        )
    cards = [
        _card(name, figures.round_figure(name, rounds, series)) for name in figures.ROUND_FIGURES
    ]
    return html.Div(
        [
            dcc.Interval(id="r-tick", interval=5000),
            dcc.Store(id="r-sig", data=_sig(ctx)),
            html.Div(
                [
                    html.H2("Table 2 per round", style={"margin": 0}),
                    html.A(
                        "table as CSV", href="/download/rounds.csv", className="btn", id="r-csv"
                    ),
                ],
                className="graphhead",
            ),
            html.P(
                "Each run of kgagent play on this memory is one round, resuming the previous one. "
                "Skills augmented and pruned, progression, score, ERR and cost are this round's; "
                "library size, nodes and edges are totals at the round's end (as in the papers' "
                "Table 2), with the growth over the round beside them (+). '-': the run ended "
                "without its summary line.",
                className="hint",
            ),
            dash_table.DataTable(
                id="r-table",
                columns=[
                    {
                        "id": c,
                        "name": HEADINGS.get(c, c),
                        "type": "numeric" if c not in ("log", "env", "stopped") else "text",
                    }
                    for c in TABLE_COLUMNS
                ],
                data=_rows(rounds),
                sort_action="native",
                style_table={"overflowX": "auto", "marginBottom": "16px"},
                style_cell={
                    "fontFamily": "Helvetica, Arial, sans-serif",
                    "fontSize": 13,
                    "padding": "4px 8px",
                },
                style_header={
                    "fontWeight": 600,
                    "backgroundColor": "#f8f9fa",
                    "whiteSpace": "normal",
                    "height": "auto",
                },
                style_cell_conditional=[
                    {"if": {"column_id": "log"}, "fontFamily": "monospace", "fontSize": 12}
                ],
            ),
            html.Div(cards, className="figgrid", id="r-cards"),
        ]
    )


def _sig(ctx: Any) -> str:
    return repr([(p.name, p.stat().st_size) for p in ctx.logs.paths() if p.exists()])


def register(app: Any, ctx: Any) -> None:
    for name in figures.ROUND_FIGURES:
        app.clientside_callback(
            _DOWNLOAD_JS.replace("NAME", name),
            Output(f"r-{name}-done", "data"),
            Input(f"r-{name}-png", "n_clicks"),
            Input(f"r-{name}-svg", "n_clicks"),
            prevent_initial_call=True,
        )

    @app.callback(
        Output("r-table", "data"),
        *[Output(f"r-fig-{name}", "figure") for name in figures.ROUND_FIGURES],
        Output("r-sig", "data"),
        Input("r-tick", "n_intervals"),
        State("r-sig", "data"),
        prevent_initial_call=True,
    )
    def refresh(_n, sig):
        now = _sig(ctx)
        if now == sig:
            raise PreventUpdate
        rounds, series = _data(ctx)
        figs = [figures.round_figure(name, rounds, series) for name in figures.ROUND_FIGURES]
        return (_rows(rounds), *figs, now)
