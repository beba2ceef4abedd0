"""The `kgagent` command: one click group; each command parses options and calls the library.

Errors print as one line. What a user can cause — a :class:`KGAgentError`, or an
``OSError`` / ``ValueError`` from what they handed us (a path that cannot be
read or written, bytes that are not text) — exits with 1; ``--debug`` shows the
traceback instead. A usage error (an unknown option, a bad option value) exits
with 2, as click's do, with the command's ``--help`` named. Running out of memory (a
setting too large for this machine) is one line too, exit 1. A reader that closes the
pipe early (``kgagent query … | head -1``) ends a command that only reads quietly with
exit 0, whatever the format: the reader has what it wanted. A command that writes
(``cli.common.mark_writes``: play, an export, an import, a merge, …) keeps working when
only its progress lines find no reader (``kgagent.terminal.tell``); a broken pipe that
still stops it is an error, exit 1.

Ctrl-C, SIGTERM (``kill``, ``timeout``, a job scheduler) and SIGHUP (the terminal closed)
stop a command the same way: the exception unwinds through its ``finally`` blocks, so an
export, import or merge removes its temporaries and leaves its destination as it was; one
line, and the shell's code for the signal (130, 143, 129). While ``play`` runs its steps
and ``bench`` its cells they take SIGTERM and SIGHUP their own way (they finish the step
under way: kgagent/agent/stopflag.py's ``StopFlag``, kgagent/bench/grid.py); before and
after, as every command does (a ``play`` stopped while it opens the memory or starts its
program closes both, and removes a memory it had just created).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import threading
from typing import Any

import click
from click.exceptions import NoArgsIsHelpError

from kgagent import __version__
from kgagent.errors import KGAgentError
from kgagent.terminal import silence_gone_outputs


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe_error(e: BaseException) -> str:
    """One line for an error a user can act on."""
    if isinstance(e, OSError) and e.strerror:
        where = e.filename if e.filename is not None else ""
        line = _one_line(f"{e.strerror}: {where}" if where else e.strerror)
        return line + _gone_cwd(e)
    return _one_line(str(e)) or type(e).__name__


def _gone_cwd(e: OSError) -> str:
    """A hint when the error is a relative path under a working directory that was deleted
    (``os.getcwd()`` fails too): the path was fine, the place it is relative to is gone."""
    if e.errno != errno.ENOENT or (e.filename is not None and os.path.isabs(e.filename)):
        return ""
    try:
        os.getcwd()
    except FileNotFoundError:
        return (
            " (the current directory was deleted: a relative path cannot be found from it; "
            "cd to an existing directory or give absolute paths)"
        )
    return ""


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
    _drop_stdout()
    sys.exit(0)


def _drop_stdout() -> None:
    """Standard output goes to /dev/null from here on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass


def _hold_standard_fds() -> None:
    """A standard descriptor the caller closed (``kgagent query … >&-``) is opened on
    /dev/null: else the next file the command opens (a memory's database, its log)
    would take its number and receive what an engine prints there, and Python's
    ``sys.stdout`` would be None, which click skips but a row writer does not. What the
    command prints there goes nowhere, as Python's ``print`` does with it closed."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:
            mode = "r" if fd == 0 else "w"
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the command as Ctrl-C's ``KeyboardInterrupt`` is: what
    cleans up on Ctrl-C (``finally``, ``except BaseException``) cleans up on these too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _StopSignals:
    """While a command runs, SIGTERM and SIGHUP raise :class:`StopSignal` in it, once: a
    later one is ignored, so that the cleanup the first began is not cut short (a program
    that means "now" sends SIGKILL). A SIGHUP ignored when the command began (``nohup``)
    stays ignored. The handlers before are put back when the command ends."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, *, ends_process: bool = False) -> None:
        #: the signal that stopped the command (the first one), None when none came
        self.signum: int | None = None
        #: the signal a command stopped on its own way (:meth:`taken`)
        self.taken_signum: int | None = None
        #: the process ends with the command (the ``kgagent`` program, not a test's runner)
        self.ends_process = ends_process
        #: the command's change is in place (:meth:`settle`): nothing is left to undo
        self.settled = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            old = signal.getsignal(sig)
            if sig == signal.SIGHUP and old is signal.SIG_IGN:
                continue
            self._old[sig] = old
            signal.signal(sig, self)

    def __call__(self, signum: int, frame: Any) -> None:
        silence_gone_outputs()  # a closed terminal: what the cleanup prints goes nowhere
        if self.signum is not None or self.taken_signum is not None or self.settled:
            return
        self.signum = signum
        raise StopSignal(signum)

    def settle(self) -> None:
        """The command's change is in place (an archive renamed onto its name, a memory
        moved into place, a run's summary written): a SIGTERM or SIGHUP from here on has
        nothing to undo, so it is ignored and the command says what it did and exits 0,
        instead of exiting 143 saying its work was undone."""
        self.settled = True

    def taken(self, signum: int) -> None:
        """The command stopped on ``signum`` its own way (``play``'s run finished its step:
        kgagent/agent/stopflag.py's ``StopFlag`` tells the handler it replaced): a later
        SIGTERM or SIGHUP is ignored, so that the run's summary is still printed and the
        exit code stays the first signal's."""
        if self.signum is None and self.taken_signum is None:
            self.taken_signum = signum

    def restore(self) -> None:
        stopping = self.signum is not None or self.taken_signum is not None or self.settled
        for sig, old in self._old.items():
            if stopping and self.ends_process:
                old = signal.SIG_IGN  # the process is ending (on a stop, or its work done):
                # a signal does not cut its exit short or change its code (SIGKILL still does)
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._old.clear()

    def exit(self) -> None:
        """One line, and the shell's code for the signal (143 for SIGTERM, 129 for SIGHUP)."""
        assert self.signum is not None
        name = signal.Signals(self.signum).name
        silence_gone_outputs()
        try:
            click.echo(
                f"stopped by {name}: what was under way was undone; anything it was writing "
                "is left as it was",
                err=True,
            )
        except (OSError, ValueError):  # the terminal went after the look above
            pass
        sys.exit(128 + self.signum)


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
        except OSError as e:  # --help or --version into a full disk or a gone reader
            if isinstance(e, BrokenPipeError) and _stdout_closed():
                _quiet_exit()
            click.echo(f"error: {describe_error(e)}", err=True)
            _drop_stdout()  # what is still buffered would fail again at the exit
            sys.exit(1)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        obj = ctx.ensure_object(dict)
        stop = _StopSignals(ends_process=bool(obj.get("ends_process")))
        obj["stop_signals"] = stop  # installed by `cli` for the command
        try:
            try:
                result = super().invoke(ctx)
            finally:
                stop.restore()  # from here on a signal ends the process as it used to
        except click.UsageError as e:
            raise _usage(e) from None
        except StopSignal:
            stop.exit()
        except BrokenPipeError as e:
            if stop.signum is not None:  # the pipe went with the terminal
                stop.exit()
            writes = bool(ctx.obj and ctx.obj.get("writes"))
            if _stdout_closed() and not writes:  # `kgagent query … | head -1`: the reader
                _quiet_exit()  # has what it wanted
            if ctx.obj and ctx.obj.get("debug"):
                raise
            silence_gone_outputs()
            why = (
                "the output was closed before the command finished; it stopped there, and "
                "what it was writing is left as it was"
                if writes
                else describe_error(e)
            )
            click.echo(f"error: {why}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            if stop.signum is not None:  # a command that took it for Ctrl-C, raised anew
                stop.exit()
            # what was under way cleaned up on the way here (a merge or an import leaves
            # the memory as it was); the shell's code for SIGINT, as `play` exits with
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (KGAgentError, OSError, ValueError) as e:
            if stop.signum is not None:  # a cleanup that failed writing to a closed terminal
                stop.exit()
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {describe_error(e)}", err=True)
            # 1; a grid a signal stopped: the shell's code for it (kgagent.bench.grid)
            code = getattr(e, "exit_code", 1) if isinstance(e, KGAgentError) else 1
            sys.exit(code if isinstance(code, int) else 1)
        except MemoryError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {out_of_memory(e)}", err=True)
            sys.exit(1)
        except Exception:
            if stop.signum is not None:  # what the stop cut short, failing on the way out
                stop.exit()
            raise
        if stop.signum is not None:  # a command that took it as Ctrl-C and ended (`view`)
            stop.exit()
        return result


@click.group(cls=KGAgentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kgagent")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kgagent: an API-free GUI agent with a persistent State-Action Knowledge Graph.

    Memory location: --memory PATH on every command that opens one; else
    $KGAGENT_MEMORY; else the config's memory.path; else the user data directory
    (~/.local/share/kgagent/memory on Linux). Settings: --config FILE and
    --set section.field=value (docs/config.md); $KGAGENT_MEMORY and
    $KGAGENT_ENGINE win over both (`kgagent config` shows what is in effect).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    stop = ctx.obj.get("stop_signals")
    if stop is not None:  # `play` and `bench` put their own in place while they run
        stop.install()


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
    _hold_standard_fds()
    cli(prog_name="kgagent", obj={"ends_process": True})


if __name__ == "__main__":
    main()
