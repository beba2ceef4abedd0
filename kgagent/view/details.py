"""The graph page's side panel: what one state or one skill is, in the papers' terms."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dash import html

from kgagent.view.graphview import short_id
from kgagent.view.source import is_blob_id


def when(t: Any) -> str:
    """``t`` (seconds since the epoch) in the server's time zone with its offset, as
    `kgagent memory info` and `runs list` give times: comparable between machines."""
    try:
        if not t:
            return "-"
        return datetime.fromtimestamp(float(t)).astimezone().isoformat(sep=" ", timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return "-"


def _kv(pairs: list[tuple[str, Any]]) -> html.Div:
    cells: list[Any] = []
    for k, v in pairs:
        cells += [html.Span(k), html.Span(v)]
    return html.Div(cells, className="kv")


#: Rows a list in a panel shows at most (the strongest first); a line says how many more.
PANEL_ROWS = 50


def _more(shown: int, total: int, order: str = "the strongest") -> Any:
    if total <= shown:
        return None
    return html.P(f"showing {shown:,} of {total:,} ({order})", className="note")


def _table(head: list[str], rows: list[list[Any]], empty: str, total: int | None = None) -> Any:
    """A small table of at most PANEL_ROWS rows; ``total``: how many there are in all."""
    if not rows:
        return html.P(empty, className="hint")
    total = len(rows) if total is None else total
    rows = rows[:PANEL_ROWS]
    table = html.Table(
        [
            html.Thead(html.Tr([html.Th(h, scope="col") for h in head])),
            html.Tbody([html.Tr([html.Td(c) for c in r]) for r in rows]),
        ],
        className="mini",
    )
    more = _more(len(rows), total)
    return html.Div([table, more]) if more else table


def hint() -> html.Div:
    return html.Div(
        [
            html.H2("Nothing selected"),
            html.P(
                "Click a state to see its screenshot, objects, HQ candidates and potential; "
                "click a skill edge (red) to see its skill. From the keyboard: choose a state "
                "in “neighbourhood of”, or a skill in “details of skill”.",
                className="hint",
            ),
        ],
        id="g-detail-empty",
    )


def state_panel(d: dict[str, Any], snap: Any, recording: tuple[str, int] | None) -> html.Div:
    """A state: screenshot, visits, V_S (Eq. 10), HQ candidates (Eq. 3), edges, objects."""
    sid = d["id"]
    if d.get("error"):
        return html.Div([html.H2(f"State {short_id(sid)}"), html.P(d["error"], className="note")])
    skills = snap.skills
    caption = (
        f"recorded screenshot: run {recording[0]}, after step {recording[1]}"
        if recording
        else "thumbnail kept in the memory (full screenshots: kgagent play --record DIR)"
    )
    hq_rows = [
        [
            c["name"],
            f"{c['weight']:.3f}",
            f"{short_id(c['from_state'])} → {short_id(c['to_state'])}",
        ]
        for c in d.get("hq", [])
    ]
    out_rows = [
        [
            skills.get(e["skill"], {}).get("name", e["skill"]),
            short_id(e["dst"]),
            f"{e['weight']:.3f}",
            e["count"],
            f"{e['change']:.3f}",
            f"{e['r_total']:.2f}",
        ]
        for e in sorted(d.get("out_edges", []), key=lambda e: -e["weight"])
    ]
    in_rows = [
        [
            skills.get(e["skill"], {}).get("name", e["skill"]),
            short_id(e["src"]),
            f"{e['weight']:.3f}",
            e["count"],
        ]
        for e in sorted(d.get("in_edges", []), key=lambda e: -e["weight"])
    ]
    similar_all = d.get("similar", [])
    similar = [f"{short_id(u)} ({w:.3f})" for u, w in similar_all[:PANEL_ROWS]]
    objects = d.get("objects", [])
    crops = [
        html.Div(
            [
                html.Img(src=f"/blob/{o['crop']}.png", alt=o["name"])
                if is_blob_id(o["crop"])
                else None,
                html.Div(o["name"] or o["id"]),
                html.Div("{}, {} {}×{}".format(*o["bbox"]), className="mono"),
            ],
            className="crop",
        )
        for o in objects[:PANEL_ROWS]
    ]
    return html.Div(
        [
            html.H2(f"State {short_id(sid)}", id="g-detail-title"),
            html.Div(sid, className="mono"),
            html.Img(
                src=f"/state/{sid}.png?v={d.get('visits', 0)}",
                className="shot",
                id="g-shot",
                style={"marginTop": "8px"},
            ),
            html.P(caption, className="caption", id="g-shot-caption"),
            _kv(
                [
                    ("visits", d.get("visits", 0)),
                    ("first seen", when(d.get("first_seen"))),
                    ("last seen", when(d.get("last_seen"))),
                    ("potential V_S (Eq. 10)", f"{d.get('potential', 0.0):.3f}"),
                    ("HQ candidates", len(d.get("hq", []))),
                ]
            ),
            html.Button(
                "Show its neighbourhood",
                id="g-focus-here",
                className="btn",
                style={"marginTop": "8px"},
            ),
            html.H3("HQ candidates (Eq. 3), best edge weight"),
            _table(
                ["skill", "weight", "edge"],
                hq_rows,
                "none: no skill leaves this state or its similar states",
            ),
            html.H3(f"Skill edges out ({len(out_rows)})"),
            _table(["skill", "to", "w", "n", "Δ", "R"], out_rows, "none"),
            html.H3(f"Skill edges in ({len(in_rows)})"),
            _table(["skill", "from", "w", "n"], in_rows, "none"),
            html.H3(f"Similar states ({len(similar_all)})"),
            html.P(", ".join(similar) or "none", className="hint"),
            _more(len(similar), len(similar_all), "the most similar"),
            html.H3(f"Objects ({len(objects)})"),
            html.Div(crops, className="crops") if crops else html.P("none", className="hint"),
            _more(len(crops), len(objects), "the first"),
        ]
    )


def skill_panel(
    skill_id: str,
    snap: Any,
    origin: tuple[int, str, int] | None,
    crops: dict[str, str],
) -> html.Div:
    """A skill: operations (with the objects they act on), fitness, executions, edges, cluster."""
    k = snap.skills.get(skill_id)
    if k is None:
        return html.Div(
            [
                html.H2("Unknown skill"),
                html.P(f"{skill_id} is not in this memory.", className="hint"),
            ]
        )
    clusters = [
        snap.clusters[c]["name"]
        for c in snap.skill_clusters.get(skill_id, [])
        if c in snap.clusters
    ]
    parent = snap.skills.get(k["parent_id"] or "", {}).get("name") if k["parent_id"] else None
    ops = []
    for op in k["operations"]:
        parts: list[Any] = [html.B(op.get("kind", "?")), " "]
        for key, name_key in (("object_id", "object_name"), ("object_id2", "object_name2")):
            oid = op.get(key)
            if oid:
                crop = crops.get(oid)
                if crop and is_blob_id(crop):
                    parts.append(
                        html.Img(
                            src=f"/blob/{crop}.png",
                            style={
                                "maxHeight": "28px",
                                "verticalAlign": "middle",
                                "margin": "0 4px",
                                "border": "1px solid #dee2e6",
                            },
                        )
                    )
                parts.append(op.get(name_key) or oid)
        for key in ("key", "text", "point", "point2", "scroll"):
            if op.get(key) not in (None, 0, ""):
                parts.append(f" {key}={op[key]!r}")
        ops.append(html.Li(parts))
    edges = [e for e in snap.skill_edges if e["skill"] == skill_id]
    edge_rows = [
        [
            f"{short_id(e['src'])} → {short_id(e['dst'])}",
            f"{e['weight']:.3f}",
            e["count"],
            f"{e['change']:.3f}",
            f"{e['r_total']:.2f}",
        ]
        for e in sorted(edges, key=lambda e: -e["weight"])
    ]
    created = when(k["created_at"])
    if origin:
        created += f" (run R{origin[0]}, step {origin[2]})"
    return html.Div(
        [
            html.H2(k["name"], id="g-detail-title"),
            html.Div(skill_id, className="mono"),
            _kv(
                [
                    ("status", k["status"]),
                    ("fitness φ", f"{k['fitness']:.3f}"),
                    ("executions n", k["executions"]),
                    ("failures in a row", k["failures"]),
                    ("low rewards in a row", k["low_rewards"]),
                    ("cluster", ", ".join(clusters) or "-"),
                    ("grown from", parent or "-"),
                    ("created", created),
                ]
            ),
            html.H3(f"Operations ({len(ops)})"),
            html.Ol(ops, style={"paddingLeft": "20px", "margin": 0}),
            html.H3(f"Skill edges ({len(edges)})"),
            _table(
                ["edge", "w (Eq. 1)", "n", "mean Δ", "last R"],
                edge_rows,
                "none (pruned skills keep no edges)",
            ),
            html.H3("Description"),
            html.P(k["description"] or "-", className="hint"),
        ]
    )


def similar_panel(data: dict[str, Any]) -> html.Div:
    weight = data.get("weight")
    cosine = f"{weight:.4f}" if isinstance(weight, int | float) else "?"  # as the page sent it
    return html.Div(
        [
            html.H2("Similarity edge", id="g-detail-title"),
            _kv(
                [
                    (
                        "states",
                        f"{short_id(str(data['source']))} — {short_id(str(data['target']))}",
                    ),
                    ("cosine", cosine),
                ]
            ),
            html.P(
                "Two states whose features are similar (θ_simi < cosine ≤ θ_merge); each "
                "lends the other its skills as HQ candidates (Eq. 2-3).",
                className="hint",
            ),
        ]
    )


def pair_panel(edge: dict[str, Any], snap: Any) -> html.Div:
    """Every skill on one drawn arrow (parallel skill edges merged), best first."""
    src, dst = edge.get("source"), edge.get("target")
    skills = edge.get("skills")
    on_arrow = [k for k in skills if isinstance(k, str)] if isinstance(skills, list) else []
    found = {x["skill"]: x for x in snap.skill_edges if x["src"] == src and x["dst"] == dst}
    pair = [found[k] for k in on_arrow if k in found]
    rows = [
        [snap.skills.get(x["skill"], {}).get("name", x["skill"]), f"{x['weight']:.3f}", x["count"]]
        for x in pair[:PANEL_ROWS]
    ]
    return html.Div(
        [
            html.H3(
                f"{len(pair)} skills lead {short_id(str(src))} → {short_id(str(dst))}",
                style={"marginTop": 0},
            ),
            _table(["skill", "w (Eq. 1)", "n"], rows, "none", len(pair)),
            html.Hr(style={"border": 0, "borderTop": "1px solid #dee2e6", "margin": "12px 0"}),
        ]
    )
