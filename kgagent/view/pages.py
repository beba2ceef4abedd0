"""Page routing: which layout a path gets, and the registration of every page's callbacks."""

from __future__ import annotations

from typing import Any

from dash import html


def layout_for(path: str, ctx: Any) -> Any:
    from kgagent.view import page_graph, page_library, page_live, page_rounds

    if path in ("/", "/graph"):
        return page_graph.layout(ctx)
    if path == "/library":
        return page_library.layout(ctx)
    if path == "/live":
        return page_live.layout(ctx)
    if path == "/rounds":
        return page_rounds.layout(ctx)
    return html.Div([html.H3("No such page"), html.P(f"{path} is not a page of this view.")])


def register(app: Any, ctx: Any) -> None:
    from kgagent.view import page_graph, page_library, page_live, page_rounds

    for module in (page_graph, page_library, page_live, page_rounds):
        module.register(app, ctx)
