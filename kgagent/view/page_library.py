"""Page 2, the library: every skill and cluster as sortable, filterable tables."""

from __future__ import annotations

from typing import Any

from dash import Input, Output, State, dash_table, dcc, html
from dash.exceptions import PreventUpdate

from kgagent.view.details import when

SKILL_COLUMNS = [
    ("name", "skill", "text"),
    ("status", "status", "text"),
    ("fitness", "fitness φ", "numeric"),
    ("executions", "executions n", "numeric"),
    ("edges", "skill edges", "numeric"),
    ("failures", "failures", "numeric"),
    ("cluster", "cluster", "text"),
    ("created_run", "created in run", "text"),
    ("created_step", "at step", "numeric"),
    ("created", "created", "text"),
    ("parent", "grown from", "text"),
    ("id", "id", "text"),
]
CLUSTER_COLUMNS = [
    ("name", "cluster", "text"),
    ("skills", "skills", "numeric"),
    ("selections", "selections", "numeric"),
    ("description", "description", "text"),
    ("id", "id", "text"),
]

_TABLE_STYLE = dict(
    style_table={"overflowX": "auto"},
    style_cell={
        "fontFamily": "Helvetica, Arial, sans-serif",
        "fontSize": 13,
        "padding": "4px 8px",
        "textAlign": "left",
        "maxWidth": 360,
        "overflow": "hidden",
        "textOverflow": "ellipsis",
    },
    style_header={
        "fontWeight": 600,
        "backgroundColor": "#f8f9fa",
        "borderBottom": "1px solid #adb5bd",
    },
    style_data_conditional=[
        {"if": {"filter_query": "{status} = pruned"}, "color": "#adb5bd"},
        {"if": {"filter_query": "{status} = suspended"}, "color": "#8a5a00"},
        {"if": {"column_type": "numeric"}, "textAlign": "right"},
    ],
    sort_action="native",
    filter_action="native",
    page_action="native",
    export_format="csv",
    export_headers="display",
)


def skill_rows(ctx: Any) -> list[dict[str, Any]]:
    snap = ctx.source.snapshot()
    origins = ctx.logs.skill_origins()
    edges: dict[str, int] = {}
    for e in snap.skill_edges:
        edges[e["skill"]] = edges.get(e["skill"], 0) + 1
    rows = []
    for k in snap.skills.values():
        origin = origins.get(k["id"])
        clusters = [
            snap.clusters[c]["name"]
            for c in snap.skill_clusters.get(k["id"], [])
            if c in snap.clusters
        ]
        rows.append(
            {
                "id": k["id"],
                "name": k["name"],
                "status": k["status"],
                "fitness": round(k["fitness"], 4),
                "executions": k["executions"],
                "edges": edges.get(k["id"], 0),
                "failures": k["failures"],
                "cluster": ", ".join(clusters),
                "created_run": f"R{origin[0]}" if origin else "",
                "created_step": origin[2] if origin else None,
                "created": when(k["created_at"]),
                "parent": snap.skills.get(k["parent_id"] or "", {}).get("name", "")
                if k["parent_id"]
                else "",
            }
        )
    rows.sort(key=lambda r: (-r["fitness"], r["id"]))
    return rows


def cluster_rows(ctx: Any) -> list[dict[str, Any]]:
    snap = ctx.source.snapshot()
    return [
        {
            "id": c["id"],
            "name": c["name"],
            "skills": len(c["skills"]),
            "selections": c["selections"],
            "description": c["description"],
        }
        for c in sorted(snap.clusters.values(), key=lambda c: c["name"])
    ]


def layout(ctx: Any) -> html.Div:
    skills = skill_rows(ctx)
    active = sum(1 for r in skills if r["status"] == "active")
    return html.Div(
        [
            dcc.Interval(id="l-tick", interval=5000),
            dcc.Store(id="l-sig", data=repr(ctx.source.snapshot().signature)),
            html.H3("Skill library", style={"margin": "0 0 4px"}),
            html.P(
                f"{len(skills)} skills ({active} active). Click a heading to sort; type in the row "
                "under it to filter (e.g. >0.5, active). Pruned skills are grey, suspended ones amber.",
                className="hint",
                id="l-summary",
            ),
            dash_table.DataTable(
                id="l-skills",
                columns=[{"id": c, "name": n, "type": t} for c, n, t in SKILL_COLUMNS],
                data=skills,
                page_size=25,
                sort_by=[{"column_id": "fitness", "direction": "desc"}],
                **_TABLE_STYLE,
            ),
            html.H3("Clusters", style={"margin": "24px 0 4px"}),
            html.P(
                "Skill clusters (Eq. 5-7): the invocation picks a cluster, then a skill in it.",
                className="hint",
            ),
            dash_table.DataTable(
                id="l-clusters",
                columns=[{"id": c, "name": n, "type": t} for c, n, t in CLUSTER_COLUMNS],
                data=cluster_rows(ctx),
                page_size=15,
                **_TABLE_STYLE,
            ),
        ]
    )


def register(app: Any, ctx: Any) -> None:
    @app.callback(
        Output("l-skills", "data"),
        Output("l-clusters", "data"),
        Output("l-sig", "data"),
        Input("l-tick", "n_intervals"),
        State("l-sig", "data"),
        prevent_initial_call=True,
    )
    def refresh(_n, sig):
        snap = ctx.source.snapshot()
        if repr(snap.signature) == sig:
            raise PreventUpdate
        return skill_rows(ctx), cluster_rows(ctx), repr(snap.signature)
