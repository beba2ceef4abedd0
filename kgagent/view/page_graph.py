"""Page 1, the SA-KG: states with thumbnails, weighted skill edges, dashed similarity edges."""

from __future__ import annotations

from typing import Any

import dash_cytoscape as cyto
from dash import Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from kgagent.view import details
from kgagent.view.graphview import (
    DEFAULT_CAP,
    LABEL_LIMIT,
    SIMILAR,
    SKILL_HIGH,
    SKILL_LOW,
    Filters,
    select,
    short_id,
    stylesheet,
)
from kgagent.view.listing import Choices
from kgagent.view.pages import request_value

LAYOUTS = {
    # fCoSE's "default" quality, not "proof": as few overlapping thumbnails, as long edges
    # and as many crossings, in a third to a quarter of the time (300 drawn states of a
    # grown Crafter memory: 0.9-1.2 s against 3.1-4.5 s in headless Chromium);
    # tests/view/measure_layout.py, docs/view.md "Layout quality".
    "fcose": {
        "name": "fcose",
        "animate": False,
        "quality": "default",
        "nodeRepulsion": 60000,
        "idealEdgeLength": 170,
        "nodeSeparation": 140,
        "edgeElasticity": 0.2,
        "gravity": 0.15,
        "numIter": 5000,
        "randomize": True,
        "padding": 20,
    },
    "cose": {"name": "cose", "animate": False, "nodeRepulsion": 600000, "idealEdgeLength": 120},
    "concentric": {"name": "concentric", "animate": False, "minNodeSpacing": 30},
    "breadthfirst": {
        "name": "breadthfirst",
        "animate": False,
        "directed": True,
        "spacingFactor": 1.2,
    },
    "circle": {"name": "circle", "animate": False},
    "grid": {"name": "grid", "animate": False},
}


ALL_RUNS = {"label": "all runs", "value": "all"}
ALL_CLUSTERS = {"label": "all clusters", "value": "all"}


def run_choices(ctx: Any) -> Choices:
    """Every run, newest first."""
    opts = []
    for log in reversed(ctx.logs.all()):
        h = log.header
        label = (
            f"R{log.index} · {h.get('env', '?')} seed {h.get('seed', '?')} · {len(log.steps)} steps"
        )
        note = " (live)" if ctx.logs.live(log) else " (incomplete)" if log.unfinished else ""
        opts.append({"label": label + note, "value": str(log.index)})
    return Choices(opts)


def cluster_choices(ctx: Any, snap: Any) -> Choices:
    """Every cluster, by name."""

    def make() -> Choices:
        return Choices(
            [
                {"label": f"{c['name']} ({len(c['skills'])} skills)", "value": c["id"]}
                for c in sorted(snap.clusters.values(), key=lambda c: (c["name"], c["id"]))
            ]
        )

    return ctx.derived.get(snap, "cluster choices", make)


def state_choices(ctx: Any, snap: Any) -> Choices:
    """Every state, the most visited first (as the graph draws them)."""

    def make() -> Choices:
        rows = sorted(snap.states.values(), key=lambda r: (-int(r.get("visits") or 0), r["id"]))
        return Choices(
            [
                {"label": f"{short_id(r['id'])} ×{r.get('visits', 0)}", "value": r["id"]}
                for r in rows
            ]
        )

    return ctx.derived.get(snap, "state choices", make)


def run_options(ctx: Any, search: Any = None, value: Any = None) -> list[dict[str, Any]]:
    return run_choices(ctx).offer(search, value, fixed=[ALL_RUNS], what="runs")


def cluster_options(ctx: Any, snap: Any, search: Any = None, value: Any = None) -> list:
    return cluster_choices(ctx, snap).offer(search, value, fixed=[ALL_CLUSTERS], what="clusters")


def state_options(ctx: Any, snap: Any, search: Any = None, value: Any = None) -> list:
    """At most OPTION_LIMIT states for the "neighbourhood of" dropdown: those matching what
    was typed (the most visited when nothing was), and the chosen one."""
    return state_choices(ctx, snap).offer(search, value, what="states")


def skill_choices(ctx: Any, snap: Any) -> Choices:
    """Every skill, the fittest first (as the library lists them)."""

    def make() -> Choices:
        rows = sorted(snap.skills.values(), key=lambda k: (-float(k["fitness"]), k["id"]))
        return Choices(
            [
                {
                    "label": f"{k['name']} (φ {float(k['fitness']):.2f}, {k['status']})",
                    "value": k["id"],
                }
                for k in rows
            ]
        )

    return ctx.derived.get(snap, "skill choices", make)


def skill_options(ctx: Any, snap: Any, search: Any = None, value: Any = None) -> list:
    """At most OPTION_LIMIT skills for the "details of skill" dropdown."""
    return skill_choices(ctx, snap).offer(search, value, what="skills")


#: The states "draw at most" accepts.
CAP_MIN, CAP_MAX = 1, 20000


def draw_cap(value: Any) -> tuple[int, str]:
    """The states to draw at most, from what "draw at most" holds, and the message to show
    when that is not a whole number from CAP_MIN to CAP_MAX (then: the default)."""
    if value is None or value == "":
        return DEFAULT_CAP, ""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    if number.is_integer() and CAP_MIN <= number <= CAP_MAX:
        return int(number), ""
    shown = str(value)[:40]
    return DEFAULT_CAP, (
        f"“{shown}” is not a whole number from {CAP_MIN} to {CAP_MAX:,}: "
        f"drawing at most {DEFAULT_CAP} states"
    )


def _label(text: str, control: str) -> html.Label:
    """The visible name of ``control`` (kgagent.view.a11y gives it to what Dash draws)."""
    return html.Label(text, htmlFor=control, id=f"{control}-label", className="ctl")


def layout(ctx: Any) -> html.Div:
    snap = ctx.source.snapshot()
    controls = html.Div(
        [
            _label("run", "g-run"),
            dcc.Dropdown(
                id="g-run",
                options=run_options(ctx),
                value="all",
                clearable=False,
                search_order="original",
            ),
            _label("cluster", "g-cluster"),
            dcc.Dropdown(
                id="g-cluster",
                options=cluster_options(ctx, snap),
                value="all",
                clearable=False,
                search_order="original",
            ),
            _label("skill edges of weight ≥ (Eq. 1)", "g-weight"),
            dcc.Slider(
                id="g-weight",
                min=0,
                max=1,
                step=0.05,
                value=0,
                marks={0: "0", 0.25: ".25", 0.5: ".5", 0.75: ".75", 1: "1"},
            ),
            _label("show", "g-opts"),
            dcc.Checklist(
                id="g-opts",
                options=[
                    {"label": " similarity edges", "value": "sim"},
                    {"label": " edge labels", "value": "labels"},
                    {"label": " one arrow per state pair", "value": "merge"},
                    {"label": " hide states without edges", "value": "iso"},
                ],
                value=["sim", "labels", "merge"],
                labelClassName="opt",
            ),
            _label("neighbourhood of (and its details)", "g-focus"),
            dcc.Dropdown(
                id="g-focus",
                options=state_options(ctx, snap),
                value=None,
                placeholder="whole graph (type a state: s12)",
                search_order="original",
            ),
            _label("hops", "g-hops"),
            dcc.Slider(
                id="g-hops", min=1, max=4, step=1, value=1, marks={i: str(i) for i in range(1, 5)}
            ),
            _label("draw at most (states)", "g-cap"),
            dcc.Input(
                id="g-cap",
                type="number",  # no min/max: a number out of range comes, and is answered
                value=DEFAULT_CAP,
                debounce=True,
                style={"width": "100%"},
            ),
            html.P(id="g-cap-error", className="note", role="status"),
            _label("details of skill", "g-skill"),
            dcc.Dropdown(
                id="g-skill",
                options=skill_options(ctx, snap),
                value=None,
                placeholder="type a skill's name",
                search_order="original",
            ),
            _label("layout", "g-layout"),
            dcc.Dropdown(
                id="g-layout",
                options=[{"label": k, "value": k} for k in LAYOUTS],
                value="fcose",
                clearable=False,
            ),
            html.Div("download the drawing", className="ctl", id="g-download-label"),
            html.Div(
                [
                    html.Button("PNG", id="g-png", className="btn"),
                    html.Button("SVG", id="g-svg", className="btn"),
                ],
                className="btns",
                role="group",
                **{"aria-labelledby": "g-download-label"},
            ),
        ],
        className="panel controls",
    )
    legend = html.Div(
        [
            html.Span(
                [
                    html.Span(className="sw", style={"borderTop": f"3px solid {SKILL_HIGH}"}),
                    "skill edge (width, shade: Eq. 1 weight)",
                ]
            ),
            html.Span(
                [
                    html.Span(className="sw", style={"borderTop": f"3px solid {SKILL_LOW}"}),
                    "low weight",
                ]
            ),
            html.Span(
                [
                    html.Span(className="sw", style={"borderTop": f"2px dashed {SIMILAR}"}),
                    "similarity edge (cosine)",
                ]
            ),
            html.Span("node: state thumbnail, ×visits"),
        ],
        className="legend",
    )
    centre = html.Div(
        [
            html.Div(
                [
                    html.Div(id="g-head", className="counts"),
                    html.Div(id="g-notes", className="note"),
                ],
                className="graphhead",
            ),
            cyto.Cytoscape(
                id="g-cy",
                elements=[],
                layout=LAYOUTS["fcose"],
                stylesheet=stylesheet(True),
                style={
                    "width": "100%",
                    "height": "calc(100vh - 190px)",
                    "minHeight": "480px",
                    "border": "1px solid #dee2e6",
                    "borderRadius": "8px",
                    "background": "#fff",
                },
                minZoom=0.1,
                maxZoom=4,
                wheelSensitivity=0.3,
                boxSelectionEnabled=False,
            ),
            legend,
        ],
        style={"flex": "1", "minWidth": "0"},
    )
    return html.Div(
        [
            dcc.Interval(id="g-tick", interval=5000),
            dcc.Store(id="g-sig"),
            dcc.Store(id="g-selected"),
            html.Div(
                [
                    controls,
                    centre,
                    html.Div(
                        details.hint(),
                        id="g-detail",
                        className="panel detail",
                        role="region",
                        **{"aria-label": "details of the state or skill chosen"},
                    ),
                ],
                className="row",
            ),
        ]
    )


def register(app: Any, ctx: Any) -> None:
    @app.callback(
        Output("g-cy", "elements"),
        Output("g-cy", "stylesheet"),
        Output("g-head", "children"),
        Output("g-notes", "children"),
        Output("g-sig", "data"),
        Output("g-cap-error", "children"),
        Input("g-run", "value"),
        Input("g-cluster", "value"),
        Input("g-weight", "value"),
        Input("g-opts", "value"),
        Input("g-focus", "value"),
        Input("g-hops", "value"),
        Input("g-cap", "value"),
        Input("g-tick", "n_intervals"),
        State("g-sig", "data"),
    )
    def draw(run, cluster, weight, opts, focus, hops, cap, _tick, sig):
        from dash import ctx as dctx

        snap = ctx.source.snapshot()
        new_sig = repr(snap.signature)
        if dctx.triggered_id == "g-tick" and sig == new_sig:
            raise PreventUpdate
        opts = [o for o in opts if isinstance(o, str)] if isinstance(opts, list) else []
        cap, cap_error = draw_cap(cap)
        run = run if isinstance(run, str | int) else None
        cluster = cluster if isinstance(cluster, str) else None
        f = Filters(
            min_weight=request_value(float, weight, 0.0),
            similarity="sim" in opts,
            hide_isolated="iso" in opts,
            merge_parallel="merge" in opts,
            focus=focus if isinstance(focus, str) and focus else None,
            hops=request_value(int, hops, 1),
            cap=cap,
        )
        if run not in (None, "all"):
            got = ctx.logs.run_edges(request_value(int, run, -1))
            if got is not None:
                f.run_edges, f.run_states = got
        if cluster not in (None, "all") and cluster in snap.clusters:
            f.cluster_skills = set(snap.clusters[cluster]["skills"])
        view = select(snap, f)
        labels = "labels" in opts and view.skill_edges <= LABEL_LIMIT
        notes = list(view.notes)
        if "labels" in opts and not labels:
            notes.append(f"edge labels hidden above {LABEL_LIMIT} skill edges (click an edge)")
        head = [
            html.B(f"{view.states:,}", id="g-count-states"),
            f" of {view.states_total:,} state{_s(view.states_total)} · ",
            html.B(f"{view.skill_edges:,}", id="g-count-skill"),
            f" skill edge{_s(view.skill_edges)} · ",
            html.B(f"{view.similar_edges:,}", id="g-count-similar"),
            f" similarity edge{_s(view.similar_edges)}",
        ]
        return (
            view.elements,
            stylesheet(labels, snap.theta_simi),
            head,
            " · ".join(notes),
            new_sig,
            cap_error,
        )

    @app.callback(Output("g-cy", "layout"), Input("g-layout", "value"))
    def relayout(name: Any) -> dict:
        return LAYOUTS.get(name if isinstance(name, str) else "", LAYOUTS["fcose"])

    @app.callback(
        Output("g-cy", "generateImage"),
        Input("g-png", "n_clicks"),
        Input("g-svg", "n_clicks"),
        prevent_initial_call=True,
    )
    def image(_png, _svg):
        from dash import ctx as dctx

        kind = "svg" if dctx.triggered_id == "g-svg" else "png"
        options = {"full": True, "bg": "#ffffff"}
        if kind == "png":
            options["scale"] = 3
        return {"type": kind, "action": "download", "filename": "kgagent-sa-kg", "options": options}

    # A state or a skill is shown when it is clicked in the graph, or chosen from a
    # dropdown ("neighbourhood of", "details of skill"): the keyboard's way to them.
    @app.callback(
        Output("g-detail", "children"),
        Output("g-selected", "data"),
        Input("g-cy", "tapNodeData"),
        Input("g-cy", "tapEdgeData"),
        Input("g-focus", "value"),
        Input("g-skill", "value"),
        State("g-selected", "data"),
        prevent_initial_call=True,
    )
    def detail(node, edge, focus, skill, selected):
        from dash import ctx as dctx

        snap = ctx.source.snapshot()
        prop = dctx.triggered[0]["prop_id"] if dctx.triggered else ""
        if prop == "g-skill.value":
            if not isinstance(skill, str) or not skill:
                raise PreventUpdate
            return _skill(ctx, snap, skill, {}), None
        if prop == "g-focus.value":
            # chosen from the state's own panel ("Show its neighbourhood"): it is shown
            if not isinstance(focus, str) or not focus or focus == selected:
                raise PreventUpdate
            return _state(ctx, snap, focus)
        node = node if isinstance(node, dict) and isinstance(node.get("id"), str) else None
        # an edge as the graph draws it: both ends are state ids
        edge = (
            edge
            if isinstance(edge, dict)
            and isinstance(edge.get("source"), str)
            and isinstance(edge.get("target"), str)
            else None
        )
        if prop.endswith("tapEdgeData"):
            if edge and isinstance(edge.get("skill"), str) and edge["skill"]:
                return _skill(ctx, snap, edge["skill"], edge), None
            if edge:
                return details.similar_panel(edge), None
            raise PreventUpdate
        if not node:
            raise PreventUpdate
        return _state(ctx, snap, node["id"])

    # The dropdown drops a value that is not among its options: the clicked state comes
    # with options that hold it, in the same update.
    @app.callback(
        Output("g-focus", "value"),
        Output("g-focus", "options", allow_duplicate=True),
        Input("g-focus-here", "n_clicks"),
        State("g-selected", "data"),
        prevent_initial_call=True,
    )
    def focus_here(n, selected):
        if not n or not selected:
            raise PreventUpdate
        return selected, state_options(ctx, ctx.source.snapshot(), None, selected)

    # Each dropdown's options are found on the server as the user types (search_value),
    # at most OPTION_LIMIT of them and the chosen one; again when the memory changes.
    @app.callback(
        Output("g-focus", "options"),
        Input("g-focus", "search_value"),
        Input("g-focus", "value"),
        Input("g-sig", "data"),
        prevent_initial_call=True,
    )
    def focus_options(search, value, _sig):
        return state_options(ctx, ctx.source.snapshot(), search, value)

    @app.callback(
        Output("g-skill", "options"),
        Input("g-skill", "search_value"),
        Input("g-skill", "value"),
        Input("g-sig", "data"),
        prevent_initial_call=True,
    )
    def skills(search, value, _sig):
        return skill_options(ctx, ctx.source.snapshot(), search, value)

    @app.callback(
        Output("g-run", "options"),
        Input("g-run", "search_value"),
        Input("g-run", "value"),
        Input("g-sig", "data"),
        prevent_initial_call=True,
    )
    def runs(search, value, _sig):
        return run_options(ctx, search, value)

    @app.callback(
        Output("g-cluster", "options"),
        Input("g-cluster", "search_value"),
        Input("g-cluster", "value"),
        Input("g-sig", "data"),
        prevent_initial_call=True,
    )
    def clusters(search, value, _sig):
        return cluster_options(ctx, ctx.source.snapshot(), search, value)


def _state(ctx: Any, snap: Any, state_id: str) -> tuple[Any, str | None]:
    """A state's panel, and the state it shows (None: none)."""
    d = ctx.source.state_detail(state_id)
    if d is None:
        return details.hint(), None
    rec = ctx.logs.state_recording(state_id)
    return details.state_panel(d, snap, (f"R{rec[0].index}", rec[1]) if rec else None), state_id


def _skill(ctx: Any, snap: Any, skill_id: str, edge: dict[str, Any]) -> html.Div:
    k = snap.skills.get(skill_id)
    ids = []
    for op in (k or {}).get("operations", []):
        ids += [op[key] for key in ("object_id", "object_id2") if op.get(key)]

    def crops(mem: Any) -> dict[str, str]:
        out = {}
        for oid in ids:
            try:
                out[oid] = mem.get_object(oid).crop_blob
            except Exception:  # an object removed since: no crop
                continue
        return out

    try:
        found = ctx.source.read(crops) if ids else {}
    except Exception:  # the panel still shows the skill without crops
        found = {}
    panel = details.skill_panel(skill_id, snap, ctx.logs.skill_origins().get(skill_id), found)
    shared = edge.get("skills")
    if isinstance(shared, list) and len(shared) > 1:
        return html.Div([details.pair_panel(edge, snap), panel])
    return panel


def _s(n: int) -> str:
    """The plural ending for ``n`` things."""
    return "" if n == 1 else "s"
