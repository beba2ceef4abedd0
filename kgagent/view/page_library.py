"""Page 2, the library: every skill and cluster as sortable, filterable tables, one page
of each on the page (20,000 skills were 4.3 MB: see kgagent.view.listing)."""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import urlencode

from dash import Input, Output, State, dash_table, dcc, html, no_update
from dash.exceptions import PreventUpdate

from kgagent.textsafe import CsvWriter
from kgagent.view.details import when
from kgagent.view.listing import PAGE_SIZE, Refused, table_page, table_rows

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

#: The library's order until a heading is clicked.
DEFAULT_SORT = [{"column_id": "fitness", "direction": "desc"}]
CLUSTER_SORT = [{"column_id": "name", "direction": "asc"}]
CLUSTER_PAGE = 15

# Filtering, sorting and paging run on the server over every row (kgagent.view.listing):
# the page holds one page of the table, whatever the library's size.
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
        {"if": {"filter_query": "{status} = pruned"}, "color": "#6c757d"},  # 4.7:1 on white
        {"if": {"filter_query": "{status} = suspended"}, "color": "#8a5a00"},
        {"if": {"column_type": "numeric"}, "textAlign": "right"},
    ],
    sort_action="custom",
    filter_action="custom",
    page_action="custom",
)


def skill_rows(ctx: Any, snap: Any = None) -> list[dict[str, Any]]:
    """Every skill as a table row, best fitness first; computed once per snapshot and
    change of the step logs (which say in which run and step a skill was created)."""
    snap = snap if snap is not None else ctx.source.snapshot()
    return ctx.derived.get(snap, ("skill rows", _logs_sig(ctx)), lambda: _skill_rows(ctx, snap))


def _skill_rows(ctx: Any, snap: Any) -> list[dict[str, Any]]:
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


def cluster_rows(ctx: Any, snap: Any = None) -> list[dict[str, Any]]:
    snap = snap if snap is not None else ctx.source.snapshot()

    def make() -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"],
                "name": c["name"],
                "skills": len(c["skills"]),
                "selections": c["selections"],
                "description": c["description"],
            }
            for c in sorted(snap.clusters.values(), key=lambda c: (c["name"], c["id"]))
        ]

    return ctx.derived.get(snap, "cluster rows", make)


def _logs_sig(ctx: Any) -> tuple:
    out = []
    for p in ctx.logs.paths():
        try:
            st = p.stat()
            out.append((p.name, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((p.name, 0, 0))
    return tuple(out)


def csv_href(name: str, sort_by: Any, filter_query: Any) -> str:
    """The link that downloads every row of a table as it is filtered and sorted."""
    args = {"sort": json.dumps(sort_by or []), "filter": filter_query or ""}
    return f"/download/{name}.csv?{urlencode(args)}"


def table_csv(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    buf = io.StringIO()
    w = CsvWriter(buf, spreadsheet=True)  # a download is opened in a spreadsheet
    w.writerow([title for _, title, _ in columns])
    for r in rows:
        w.writerow(["" if r.get(c) is None else r.get(c) for c, _, _ in columns])
    return buf.getvalue()


#: The tables ``/download/<name>.csv`` serves whole.
TABLES = ("skills", "clusters")


def download(ctx: Any, name: str, args: Any) -> str:
    """``/download/skills.csv`` or ``clusters.csv``: every row the table's filter keeps,
    in its order (the query string carries both, as the page's link writes them).

    :class:`Refused` for a filter or sort beyond the bounds of :mod:`kgagent.view.listing`
    (the route answers 400): any web page can make a browser GET this link."""
    if name == "skills":
        rows, columns = skill_rows(ctx), SKILL_COLUMNS
    else:
        rows, columns = cluster_rows(ctx), CLUSTER_COLUMNS
    try:
        sort_by = json.loads(args.get("sort") or "[]")
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        sort_by = []
    kept, _ = table_rows(
        rows,
        sort_by=sort_by,
        filter_query=args.get("filter") or "",
        columns=[c for c, _, _ in columns],
    )
    return table_csv(kept, columns)


def _summary(rows: list[dict[str, Any]]) -> str:
    active = sum(1 for r in rows if r["status"] == "active")
    return (
        f"{len(rows):,} skills ({active:,} active). Click (or press Enter on) a heading's "
        "arrows to sort; type in the row under it to filter (e.g. >0.5, active); sorting and "
        "filtering cover every skill, not only the page shown. Pruned skills are grey, "
        "suspended ones amber."
    )


def layout(ctx: Any) -> html.Div:
    snap = ctx.source.snapshot()
    skills = skill_rows(ctx, snap)
    first = table_page(skills, sort_by=DEFAULT_SORT)
    clusters = table_page(cluster_rows(ctx, snap), size=CLUSTER_PAGE, sort_by=CLUSTER_SORT)
    return html.Div(
        [
            dcc.Interval(id="l-tick", interval=5000),
            dcc.Store(id="l-sig", data=_sig(ctx, snap)),
            dcc.Store(id="l-csig", data=_sig(ctx, snap)),
            html.H2("Skill library", style={"margin": "0 0 4px"}),
            html.P(_summary(skills), className="hint", id="l-summary"),
            html.Div(
                [
                    html.Span(first.note("skills"), id="l-shown", className="note"),
                    html.A(
                        "CSV",
                        href=csv_href("skills", DEFAULT_SORT, ""),
                        id="l-skills-csv",
                        className="btn",
                        title="every skill the filter keeps, in this order",
                    ),
                ],
                className="graphhead",
            ),
            _filter_error("l-skills"),
            dash_table.DataTable(
                id="l-skills",
                columns=[{"id": c, "name": n, "type": t} for c, n, t in SKILL_COLUMNS],
                data=first.rows,
                page_current=0,
                page_size=PAGE_SIZE,
                page_count=first.page_count,
                sort_by=DEFAULT_SORT,
                filter_query="",
                **_TABLE_STYLE,
            ),
            html.H2("Clusters", style={"margin": "24px 0 4px"}),
            html.P(
                "Skill clusters (Eq. 5-7): the invocation picks a cluster, then a skill in it.",
                className="hint",
            ),
            html.Div(
                [
                    html.Span(clusters.note("clusters"), id="l-cshown", className="note"),
                    html.A(
                        "CSV",
                        href=csv_href("clusters", CLUSTER_SORT, ""),
                        id="l-clusters-csv",
                        className="btn",
                    ),
                ],
                className="graphhead",
            ),
            _filter_error("l-clusters"),
            dash_table.DataTable(
                id="l-clusters",
                columns=[{"id": c, "name": n, "type": t} for c, n, t in CLUSTER_COLUMNS],
                data=clusters.rows,
                page_current=0,
                page_size=CLUSTER_PAGE,
                page_count=clusters.page_count,
                sort_by=CLUSTER_SORT,
                filter_query="",
                **_TABLE_STYLE,
            ),
        ]
    )


def _filter_error(table: str) -> html.P:
    """Where the page says, in words, which filter the table cannot read (the table itself
    only tints the cell): written in the browser by kgagent.view.a11y's script."""
    return html.P(id=f"{table}-filter-error", className="note", role="status")


def _sig(ctx: Any, snap: Any) -> str:
    return repr((snap.signature, _logs_sig(ctx)))


def register(app: Any, ctx: Any) -> None:
    @app.callback(
        Output("l-skills", "data"),
        Output("l-skills", "page_count"),
        Output("l-skills", "page_current"),
        Output("l-summary", "children"),
        Output("l-shown", "children"),
        Output("l-skills-csv", "href"),
        Output("l-sig", "data"),
        Input("l-skills", "page_current"),
        Input("l-skills", "page_size"),
        Input("l-skills", "sort_by"),
        Input("l-skills", "filter_query"),
        Input("l-tick", "n_intervals"),
        State("l-sig", "data"),
        prevent_initial_call=True,
    )
    def skills(page, size, sort_by, filter_query, _n, sig):
        from dash import ctx as dctx

        snap = ctx.source.snapshot()
        now = _sig(ctx, snap)
        if dctx.triggered_id == "l-tick" and now == sig:
            raise PreventUpdate
        rows = skill_rows(ctx, snap)
        cols = [c for c, _, _ in SKILL_COLUMNS]
        try:
            p = table_page(
                rows, page=page, size=size, sort_by=sort_by, filter_query=filter_query, columns=cols
            )
        except Refused as e:  # the table stays as it was; the note says why
            return (*[no_update] * 4, str(e), no_update, no_update)
        href = csv_href("skills", sort_by, filter_query)
        return p.rows, p.page_count, p.page, _summary(rows), p.note("skills"), href, now

    @app.callback(
        Output("l-clusters", "data"),
        Output("l-clusters", "page_count"),
        Output("l-clusters", "page_current"),
        Output("l-cshown", "children"),
        Output("l-clusters-csv", "href"),
        Output("l-csig", "data"),
        Input("l-clusters", "page_current"),
        Input("l-clusters", "page_size"),
        Input("l-clusters", "sort_by"),
        Input("l-clusters", "filter_query"),
        Input("l-tick", "n_intervals"),
        State("l-csig", "data"),
        prevent_initial_call=True,
    )
    def clusters(page, size, sort_by, filter_query, _n, sig):
        from dash import ctx as dctx

        snap = ctx.source.snapshot()
        now = _sig(ctx, snap)
        if dctx.triggered_id == "l-tick" and now == sig:
            raise PreventUpdate
        rows = cluster_rows(ctx, snap)
        cols = [c for c, _, _ in CLUSTER_COLUMNS]
        try:
            p = table_page(
                rows, page=page, size=size, sort_by=sort_by, filter_query=filter_query, columns=cols
            )
        except Refused as e:  # the table stays as it was; the note says why
            return (*[no_update] * 3, str(e), no_update, no_update)
        href = csv_href("clusters", sort_by, filter_query)
        return p.rows, p.page_count, p.page, p.note("clusters"), href, now
