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

from kgagent.config import Config
from kgagent.config_fields import show

from .common import config_source_options
from .output import emit, render

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
    fmt = fmt.lower()
    if fmt == "toml":
        click.echo("# kgagent config: the effective configuration; use it with --config FILE")
        click.echo(cfg.to_toml({o.name: o.source for o in origins}).rstrip("\n"))
    elif fmt == "json":
        emit([{"field": o.name, "value": o.value, "source": o.source} for o in origins], "json")
    else:
        rows = [{"field": o.name, "value": show(o.value), "source": o.source} for o in origins]
        click.echo(render(rows, "table", count=False))
