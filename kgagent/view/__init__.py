"""`kgagent view`: a local, read-only web view of one memory and its runs.

Four pages: the SA-KG (states, skill edges, similarity edges), the skill library,
the live run (following the newest step log) and per-round statistics (the
papers' Table 2 per round, learning curves). :func:`create_app` builds the Dash
app, :func:`serve` runs it; docs/view.md describes the pages.

Importing this package loads nothing heavy; Dash is imported when an app is built.
"""

from __future__ import annotations

from typing import Any


def create_app(*args: Any, **kwargs: Any) -> Any:
    """See :func:`kgagent.view.app.create_app`."""
    from kgagent.view.app import create_app as _create

    return _create(*args, **kwargs)


def serve(*args: Any, **kwargs: Any) -> None:
    """See :func:`kgagent.view.app.serve`."""
    from kgagent.view.app import serve as _serve

    _serve(*args, **kwargs)


__all__ = ["create_app", "serve"]
