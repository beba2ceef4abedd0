"""The frame around the pages: the HTML shell with its style, the top bar, page routing."""

from __future__ import annotations

import json
from typing import Any

from dash import Input, Output, dcc, html

from kgagent.view import a11y

PAGES = (
    ("/", "SA-KG"),
    ("/library", "Library"),
    ("/live", "Live run"),
    ("/rounds", "Rounds"),
)

CSS = """
:root { --ink:#212529; --muted:#6c757d; --line:#dee2e6; --bg:#f8f9fa; --accent:#0072B2; }
* { box-sizing: border-box; }
body { margin:0; font-family: Helvetica, Arial, sans-serif; color:var(--ink); background:#fff;
       font-size:14px; }
a { color: var(--accent); }
.topbar { display:flex; flex-wrap:wrap; align-items:center; gap:8px 24px; padding:10px 20px; border-bottom:1px solid var(--line);
          background:#fff; position:sticky; top:0; z-index:10; }
.brand { font-weight:700; font-size:16px; white-space:nowrap; }
.brand small { font-weight:400; color:var(--muted); margin-left:8px; font-family:monospace; font-size:12px; }
.nav { display:flex; gap:4px; }
.nav a { padding:6px 12px; border-radius:6px; text-decoration:none; color:var(--ink); }
.nav a.active { background:var(--ink); color:#fff; }
.chips { display:flex; flex-wrap:wrap; gap:4px 14px; margin-left:auto; color:var(--muted); font-size:13px;
         white-space:nowrap; }
.chips b { color:var(--ink); font-variant-numeric: tabular-nums; }
.banner { margin:8px 20px; padding:8px 12px; border-radius:6px; background:#fff3cd; color:#664d03;
          border:1px solid #ffe69c; }
.page { padding:14px 20px; }
.row { display:flex; gap:16px; align-items:flex-start; }
.panel { border:1px solid var(--line); border-radius:8px; padding:12px; background:#fff; }
.controls { width:250px; flex:none; }
.controls .ctl { display:block; font-size:12px; color:var(--muted); margin:10px 0 4px;
                  text-transform:uppercase; letter-spacing:.04em; }
.controls input[type=checkbox] { margin-right:6px; }
.controls .opt { display:block; font-size:13px; margin:3px 0; }
.detail { width:380px; flex:none; max-height:calc(100vh - 90px); overflow:auto; }
.page h2 { font-size:1.17em; margin:1em 0; }
.detail h2 { margin:0 0 4px; font-size:16px; }
.detail h3 { margin:14px 0 6px; font-size:13px; text-transform:uppercase; letter-spacing:.04em;
             color:var(--muted); }
.mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size:12px; color:var(--muted); }
.kv { display:grid; grid-template-columns: auto 1fr; gap:2px 12px; font-size:13px; }
.kv span:nth-child(odd) { color:var(--muted); }
table.mini { border-collapse:collapse; width:100%; font-size:12px; }
table.mini th { text-align:left; color:var(--muted); font-weight:400; border-bottom:1px solid var(--line);
                padding:3px 4px; }
table.mini td { border-bottom:1px solid #f1f3f5; padding:3px 4px; font-variant-numeric: tabular-nums; }
.shot { width:100%; border:1px solid var(--line); border-radius:4px; image-rendering:auto; }
.caption { color:var(--muted); font-size:12px; margin:4px 0 0; }
.crops { display:flex; flex-wrap:wrap; gap:6px; }
.crop { border:1px solid var(--line); border-radius:4px; padding:3px; font-size:11px; text-align:center;
        max-width:110px; }
.crop img { max-width:100px; max-height:60px; display:block; margin:0 auto 2px; }
.graphhead { display:flex; justify-content:space-between; align-items:baseline; margin-bottom:6px; }
.counts { font-size:13px; }
.note { color:#8a5a00; font-size:12px; }
.legend { display:flex; gap:18px; font-size:12px; color:var(--muted); margin-top:6px; align-items:center; }
.sw { display:inline-block; width:28px; height:0; vertical-align:middle; margin-right:6px; }
.badge { display:inline-block; padding:2px 8px; border-radius:10px; color:#fff; font-size:12px; font-weight:600; }
.btns { display:flex; gap:6px; }
.btn { border:1px solid var(--line); background:#fff; border-radius:6px; padding:4px 10px; cursor:pointer;
       font-size:12px; color:var(--ink); text-decoration:none; }
.btn:hover { background:var(--bg); }
.figgrid { display:grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap:16px; }
.figcard .btns { justify-content:flex-end; margin-top:-4px; }
.hint { color:var(--muted); font-size:13px; }
.dash-table-container .dash-spreadsheet-container .dash-spreadsheet-inner th { font-weight:600; }
.inline-label { font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.04em; }
/* narrow screens: the panels one above another, the graph full width */
@media (max-width: 900px) {
  .topbar { position:static; }
  .brand small { display:none; }
  .chips { margin-left:0; }
  .row { flex-direction:column; align-items:stretch; }
  .controls, .detail { width:auto; max-height:none; }
  .figgrid { grid-template-columns: 1fr; }
}
"""

INDEX = (
    """<!DOCTYPE html>
<html lang="en">
  <head>
    {%metas%}
    <title>{%title%}</title>
    {%favicon%}
    {%css%}
    <style>"""
    + CSS
    + a11y.CSS
    + """</style>
  </head>
  <body>
    {%app_entry%}
    <footer>{%config%}{%scripts%}{%renderer%}<script>"""
    + a11y.SCRIPT
    + """</script></footer>
  </body>
</html>"""
)

SITE = "kgagent view"


#: Sets the document's title and the page's heading in the browser as the path changes
#: (no request; the page names come from PAGES).
TITLE_JS = (
    "function (path) {"
    f" const names = {json.dumps(dict(PAGES))};"
    " const p = (!path || path === '/graph') ? '/' : path;"
    " const name = names[p] || 'No such page';"
    f" document.title = name + ' · {SITE}';"
    " return name; }"
)


def layout(ctx: Any) -> html.Div:
    return html.Div(
        [
            dcc.Location(id="url"),
            dcc.Interval(id="tick", interval=3000),
            html.Header(
                [
                    html.Div([SITE, html.Small(str(ctx.memory))], className="brand"),
                    html.Nav(id="nav", className="nav", **{"aria-label": "pages"}),
                    html.Div(id="chips", className="chips"),
                ],
                className="topbar",
            ),
            html.Main(
                [
                    html.H1(id="page-title", className="sr-only"),
                    html.Div(id="banner"),
                    html.Div(id="page", className="page"),
                ]
            ),
        ]
    )


def register(app: Any, ctx: Any) -> None:
    from kgagent.view import pages

    app.clientside_callback(TITLE_JS, Output("page-title", "children"), Input("url", "pathname"))

    @app.callback(Output("nav", "children"), Input("url", "pathname"))
    def nav(path: str | None) -> list:
        path = path or "/"
        return [
            dcc.Link(title, href=href, className="active" if path == href else "", id=f"nav-{i}")
            for i, (href, title) in enumerate(PAGES)
        ]

    @app.callback(Output("page", "children"), Input("url", "pathname"))
    def page(path: str | None) -> Any:
        return pages.layout_for(path or "/", ctx)

    @app.callback(
        Output("chips", "children"), Output("banner", "children"), Input("tick", "n_intervals")
    )
    def chips(_: int | None) -> tuple[list, Any]:
        snap = ctx.source.snapshot()
        s = snap.stats
        newest = ctx.logs.load(-1)
        items = [
            ("states", s.get("nodes", 0)),
            ("skills", s.get("library_size", 0)),
            ("skill edges", s.get("skill_edges", 0)),
            ("similarity edges", s.get("similarity_edges", 0)),
            ("runs", len(ctx.logs.paths())),
        ]
        out = [
            html.Span([html.B(f"{v:,}"), f" {k}"], id=f"chip-{k.replace(' ', '-')}")
            for k, v in items
        ]
        if newest is not None and newest.steps and ctx.logs.live(newest):
            out.append(html.Span("● run in progress", style={"color": "#D55E00"}))
        older = "showing an older one" if snap.signature else "nothing read yet"
        banner = (
            html.Div(
                f"The latest read of the memory failed; {older}: {snap.error}", className="banner"
            )
            if snap.error
            else None
        )
        return out, banner
