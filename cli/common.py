"""The options every command shares: ``--memory``, ``--config`` / ``--set``, ``--format``.

:func:`common_options` puts them on a command in one order with one meaning, so
that ``kgagent play``, ``query``, ``memory …`` and ``runs …`` read alike.

Memory location, first match wins: ``--memory PATH``; ``$KGAGENT_MEMORY``; the
config's ``memory.path`` (from ``--config`` / ``--set``); the user data
directory (``~/.local/share/kgagent/memory`` on Linux, see :mod:`kgagent.paths`).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import click
from click.core import ParameterSource

from kgagent.config import Config, read_text_limited
from kgagent.errors import KGAgentError
from kgagent.paths import resolve_memory_path
from kgagent.terminal import tell

from .output import format_option

F = TypeVar("F", bound=Callable[..., Any])

#: The largest query or other text read from a file or standard input.
MAX_INPUT_BYTES = 1 << 20

MEMORY_HELP = (
    "Memory directory. Default: $KGAGENT_MEMORY, else the config's memory.path, else the user "
    "data directory (~/.local/share/kgagent/memory on Linux)."
)


class NonEmptyPath(click.Path):
    """A :class:`click.Path` that refuses an empty string: ``Path("")`` is the current
    folder, so ``--memory ""`` (an unset shell variable) read or wrote there."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, str) and value == "":
            self.fail("the path is empty", param, ctx)
        return super().convert(value, param, ctx)


def env_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An environment's name, checked as a usage error (exit 2) before anything is built."""
    from kgagent.envs.registry import ENVS, is_env_name

    if value is None or is_env_name(value):
        return value
    raise click.BadParameter(f"{value!r} is not an environment; known: {', '.join(ENVS)}")


def _resolve_memory(ctx: click.Context, param: click.Parameter, value: Any) -> Path:
    return resolve_memory_path(value)


def memory_option(func: F) -> F:
    """``--memory PATH`` as the ``memory`` argument (a resolved :class:`Path`)."""
    return click.option(
        "--memory",
        "memory",
        type=NonEmptyPath(file_okay=False, path_type=Path),
        default=None,
        callback=_resolve_memory,
        help=MEMORY_HELP,
    )(func)


def config_options(func: F) -> F:
    """``--config FILE`` and repeatable ``--set section.field=value``, passed on as ``config``.

    The command receives ``config: Config`` (defaults, then the file, then the
    overrides, validated). When the command also has ``--memory`` and it was not
    given, the config's ``memory.path`` is used unless ``$KGAGENT_MEMORY`` is set.
    """

    @functools.wraps(func)
    def wrapper(
        *args: Any, config_file: Path | None, overrides: tuple[str, ...], **kwargs: Any
    ) -> Any:
        cfg = Config.load(config_file, list(overrides))
        ctx = click.get_current_context()
        if (
            "memory" in kwargs
            and cfg.memory.path
            and not os.environ.get("KGAGENT_MEMORY")
            and ctx.get_parameter_source("memory") in (ParameterSource.DEFAULT, None)
        ):
            kwargs["memory"] = Path(cfg.memory.path).expanduser()
        return func(*args, config=cfg, **kwargs)

    return config_source_options(wrapper)  # type: ignore[return-value]


def config_source_options(func: F) -> F:
    """``--config FILE`` and ``--set`` as they are given, as ``config_file`` and
    ``overrides``: for a command that reads them itself (``kgagent config``)."""
    func = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="SECTION.FIELD=VALUE",
        help="Override one config field (repeatable; given twice, the last wins), "
        "e.g. --set memory.engine=kuzu; $KGAGENT_MEMORY and $KGAGENT_ENGINE win over it.",
    )(func)
    return click.option(
        "--config",
        "config_file",
        type=NonEmptyPath(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="A TOML config file (docs/config.md lists every field).",
    )(func)


class FiniteRange(click.FloatRange):
    """A :class:`click.FloatRange` that refuses ``nan`` (which every comparison of the
    range lets through, so ``--timeout nan`` meant no limit) and infinities; give it a
    ``max`` too, so that a huge value is refused here, not by an engine's overflow."""

    name = "finite number range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


def common_options(
    *, memory: bool = True, config: bool = True, fmt: bool = True
) -> Callable[[F], F]:
    """The shared options a command takes, always in the order --memory, --config/--set, --format.

    The command receives ``memory: Path``, ``config: Config`` and ``fmt: str`` for
    the options it asked for.
    """

    def decorate(func: F) -> F:
        if fmt:
            func = format_option(func)
        if config:
            func = config_options(func)
        if memory:
            func = memory_option(func)
        return func

    return decorate


def mark_writes() -> None:
    """This command changes something (a memory, a file): a broken pipe while it works is
    then an error, exit 1 (it stopped half-way), not a reader that has what it wanted
    (``kgagent query … | head -1``: exit 0). See cli/main.py."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().ensure_object(dict)["writes"] = True


def own_process() -> bool:
    """Whether this command runs in the ``kgagent`` process it will end (``main``),
    rather than called in the process of a host (a notebook, a test runner) whose
    threads are not ours: what may fork and what must start a fresh interpreter
    (:mod:`kgagent.memory.isolated`)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and (ctx.find_root().obj or {}).get("ends_process"))


def work_done() -> None:
    """The command's change is in place: a SIGTERM or SIGHUP from here on is ignored
    (nothing is left to undo), so the command prints what it did and exits 0 (see
    cli/main.py's ``_StopSignals.settle``)."""
    ctx = click.get_current_context(silent=True)
    stop = (
        ctx.find_root().obj.get("stop_signals") if ctx is not None and ctx.find_root().obj else None
    )
    if stop is not None:
        stop.settle()


def open_memory(path: Path, config: Config, *, write: bool) -> Any:
    """Open an existing memory for a command: read-only unless ``write``, never created."""
    from kgagent.memory import Memory

    mem = Memory.open(path, config, read_only=not write, create=False)
    for note in mem.notes:
        tell(note)
    return mem


def read_input(source: Path | IO[Any], what: str, error: type[KGAgentError] = KGAgentError) -> str:
    """The text of a file or a stream the user handed us: at most 1 MiB, UTF-8.

    A device (``/dev/zero``), a binary file or a path that cannot be read ends in one
    clear ``error`` instead of a traceback or a read that never ends.
    """
    if isinstance(source, Path):
        try:
            with source.open("rb") as fh:
                return read_text_limited(fh, f"{what} {source}", MAX_INPUT_BYTES, error)
        except OSError as e:
            raise error(f"cannot read {what} {source}: {e.strerror or e}") from None
    stream = getattr(source, "buffer", source)
    return read_text_limited(stream, what, MAX_INPUT_BYTES, error)
