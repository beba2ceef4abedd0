"""Page routing: which layout a path gets, and the registration of every page's callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from dash import html
from dash.exceptions import PreventUpdate

T = TypeVar("T")


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
    return html.Div([html.H2("No such page"), html.P(f"{path} is not a page of this view.")])


def register(app: Any, ctx: Any) -> None:
    from kgagent.view import page_graph, page_library, page_live, page_rounds

    for module in (page_graph, page_library, page_live, page_rounds):
        module.register(app, ctx)


def request_value(cast: Callable[[Any], T], value: Any, default: T) -> T:
    """A callback's input as ``cast`` makes it (``default`` when empty). A value no
    control of the page sends (a hand-made request) updates nothing: never a 500."""
    if value is None or value == "":
        return default
    try:
        return cast(value)
    except (TypeError, ValueError, OverflowError):
        raise PreventUpdate from None
