"""`kgagent config`: the effective configuration, and where each value came from.

It takes the ``--config FILE`` and ``--set section.field=value`` that ``kgagent play``
and every other command take, and prints every field's value with its source:
``default (<where the default comes from>)``, ``file PATH``, ``--set`` (``--set (last
of 2)`` when one field is given twice: the last wins), or ``run.ablation = NAME`` for a
switch the ablation sets. ``--format toml`` writes a config file that reproduces the
values (``--config`` reads it back); ``json`` is for programs. A command's own options
(``play --steps``) are not seen here. No logic lives here:
:meth:`kgagent.config.Config.explain` does it.
"""

from __future__ import annotations

from pathlib import Path

import click

from kgagent.brain.endpoint import BASE_URL_ENV, endpoint_url, shown_url
from kgagent.config import Config, FieldOrigin
from kgagent.config_fields import show

from .common import config_source_options
from .output import emit, render, terminal_width

FORMATS = ("table", "toml", "json")


@click.command("config")
@config_source_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS, case_sensitive=False),
    default="table",
    show_default=True,
    help="table for people; toml: a config file that reproduces the values; json for programs.",
)
def config_cmd(config_file: Path | None, overrides: tuple[str, ...], fmt: str) -> None:
    """Print every config field's effective value and where it came from.

    \b
    Examples:
      kgagent config --config my.toml --set memory.theta_merge=0.97
      kgagent config --set run.ablation=no_graph --format toml > run.toml
    """
    cfg, origins = Config.explain(config_file, list(overrides))
    origins = [_base_url_from_environment(o, cfg) for o in origins]
    fmt = fmt.lower()
    if fmt == "toml":
        click.echo("# kgagent config: the effective configuration; use it with --config FILE")
        click.echo(cfg.to_toml({o.name: o.source for o in origins}).rstrip("\n"))
    elif fmt == "json":
        emit([{"field": o.name, "value": o.value, "source": o.source} for o in origins], "json")
    else:
        rows = [{"field": o.name, "value": show(o.value), "source": o.source} for o in origins]
        click.echo(render(rows, "table", count=False, width=terminal_width()))


def _base_url_from_environment(origin: FieldOrigin, cfg: Config) -> FieldOrigin:
    """``brain.base_url`` unset and ``$OPENAI_BASE_URL`` set: requests go there (the openai
    SDK's own variable, read as :func:`kgagent.brain.endpoint.endpoint_url` reads it), so
    say so, with a password in it masked as everywhere; not for the offline brain."""
    if origin.name != "brain.base_url" or cfg.brain.base_url or cfg.brain.kind == "offline":
        return origin
    url, source = endpoint_url(cfg.brain)  # a variable that is no http(s) URL: one line
    if source != f"${BASE_URL_ENV}":
        return origin
    return FieldOrigin(origin.name, shown_url(url), f"{source} (brain.base_url is unset)")
