"""The `kgagent` command: one click group; each command parses options and calls the library.

Errors a user can cause (``KGAgentError``) print as one line and exit with 1;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys

import click

from kgagent import __version__
from kgagent.errors import KGAgentError


class KGAgentGroup(click.Group):
    """Turns library errors into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KGAgentError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {e}", err=True)
            sys.exit(1)


@click.group(cls=KGAgentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgagent")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kgagent: an API-free GUI agent with a persistent State-Action Knowledge Graph.

    Memory location: --memory PATH on every command; default $KGAGENT_MEMORY or
    the user data directory (~/.local/share/kgagent/memory on Linux).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from kgagent.cli.env_cmd import env_group
    from kgagent.cli.memory_cmd import memory_group
    from kgagent.cli.play import play_cmd
    from kgagent.cli.query import query_cmd
    from kgagent.cli.runs_cmd import runs_group

    cli.add_command(play_cmd, "play")
    cli.add_command(query_cmd, "query")
    cli.add_command(memory_group, "memory")
    cli.add_command(env_group, "env")
    cli.add_command(runs_group, "runs")


_register()


def main() -> None:
    cli(prog_name="kgagent")


if __name__ == "__main__":
    main()
