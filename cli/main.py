"""The `kgagent` command: one click group; each command parses options and calls the library.

Errors print as one line. What a user can cause — a :class:`KGAgentError`, or an
``OSError`` / ``ValueError`` from what they handed us (a path that cannot be
read or written, bytes that are not text) — exits with 1; ``--debug`` shows the
traceback instead. A usage error (an unknown option, a bad option value) exits
with 2, as click's do, with the command's ``--help`` named. Running out of memory (a
setting too large for this machine) is one line too, exit 1. A reader that closes the
pipe early (``kgagent query … | head -1``) ends the command quietly with exit 0, whatever
the format: the reader has what it wanted.
"""

from __future__ import annotations

import os
import select
import sys

import click
from click.exceptions import NoArgsIsHelpError

from kgagent import __version__
from kgagent.errors import KGAgentError


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe_error(e: BaseException) -> str:
    """One line for an error a user can act on."""
    if isinstance(e, OSError) and e.strerror:
        where = e.filename if e.filename is not None else ""
        return _one_line(f"{e.strerror}: {where}" if where else e.strerror)
    return _one_line(str(e)) or type(e).__name__


def out_of_memory(e: MemoryError) -> str:
    """One line for a failed allocation (numpy says what it could not allocate)."""
    what = _one_line(str(e)).rstrip(".")
    what = what[:1].lower() + what[1:] if what else "an allocation failed"
    return (
        f"out of memory: {what}; a setting may be too large for this machine "
        "(`kgagent config` shows them, docs/config.md their bounds)"
    )


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (``… | head -1``), so that a
    broken pipe elsewhere (a child process, a socket) stays an error. Where that cannot
    be told (a test's stream, no poll), a broken pipe is taken to be standard output's."""
    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
    except (AttributeError, OSError, ValueError):
        return True
    poll.register(fd, select.POLLOUT)
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poll.poll(0))


def _quiet_exit() -> None:
    """Exit 0 without Python's "Exception ignored … BrokenPipeError" at shutdown: what is
    still buffered for standard output goes to /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    sys.exit(0)


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line that names the command's help."""

    def show(self, file=None) -> None:  # type: ignore[override]
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"error: {_one_line(self.format_message()).rstrip('.')}{hint}", err=True)


def _usage(e: click.UsageError) -> click.UsageError:
    if isinstance(e, (NoArgsIsHelpError, OneLineUsageError)):
        return e  # a bare group shows its help
    return OneLineUsageError(e.format_message(), e.ctx)


class KGAgentGroup(click.Group):
    """Turns library errors into one clear line and exit code 1, usage errors into one line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise _usage(e) from None

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            raise _usage(e) from None
        except BrokenPipeError as e:
            if _stdout_closed():  # `kgagent query … | head -1`: the reader has what it wanted
                _quiet_exit()
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {describe_error(e)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            # what was under way cleaned up on the way here (a merge or an import leaves
            # the memory as it was); the shell's code for SIGINT, as `play` exits with
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (KGAgentError, OSError, ValueError) as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {describe_error(e)}", err=True)
            sys.exit(1)
        except MemoryError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {out_of_memory(e)}", err=True)
            sys.exit(1)


@click.group(cls=KGAgentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgagent")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kgagent: an API-free GUI agent with a persistent State-Action Knowledge Graph.

    Memory location: --memory PATH on every command; else $KGAGENT_MEMORY; else
    the config's memory.path; else the user data directory
    (~/.local/share/kgagent/memory on Linux). Settings: --config FILE and
    --set section.field=value (docs/config.md).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from kgagent.cli.bench_cmd import bench_cmd, bench_docs_cmd
    from kgagent.cli.config_cmd import config_cmd
    from kgagent.cli.env_cmd import env_group
    from kgagent.cli.memory_cmd import memory_group
    from kgagent.cli.merge_cmd import merge_cmd
    from kgagent.cli.play import play_cmd
    from kgagent.cli.query import query_cmd
    from kgagent.cli.runs_cmd import runs_group
    from kgagent.cli.view_cmd import view_cmd

    cli.add_command(play_cmd, "play")
    cli.add_command(query_cmd, "query")
    memory_group.add_command(merge_cmd, "merge")
    cli.add_command(memory_group, "memory")
    cli.add_command(env_group, "env")
    cli.add_command(runs_group, "runs")
    cli.add_command(view_cmd, "view")
    cli.add_command(config_cmd, "config")
    cli.add_command(bench_cmd, "bench")
    cli.add_command(bench_docs_cmd, "bench-docs")


_register()


def main() -> None:
    cli(prog_name="kgagent")


if __name__ == "__main__":
    main()
