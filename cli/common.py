"""Shared click options: ``--memory PATH`` and ``--config FILE`` / ``--set section.field=value``.

Memory location, first match wins: ``--memory PATH``; ``$KGAGENT_MEMORY``; the
config's ``memory.path`` (from ``--config`` / ``--set``); the user data
directory (``~/.local/share/kgagent/memory`` on Linux, see :mod:`kgagent.paths`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from kgagent.config import Config
from kgagent.paths import resolve_memory_path

F = TypeVar("F", bound=Callable[..., Any])

MEMORY_HELP = (
    "Memory directory. Default: $KGAGENT_MEMORY, else the config's memory.path, else the user "
    "data directory (~/.local/share/kgagent/memory on Linux)."
)


def _resolve_memory(ctx: click.Context, param: click.Parameter, value: Any) -> Path:
    return resolve_memory_path(value)


def memory_option(func: F) -> F:
    """``--memory PATH`` as the ``memory`` argument (a resolved :class:`Path`)."""
    return click.option(
        "--memory",
        "memory",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=_resolve_memory,
        help=MEMORY_HELP,
    )(func)


def config_options(func: F) -> F:
    """``--config FILE`` and repeatable ``--set section.field=value``, passed on as ``config``.

    The command receives ``config: Config`` (defaults, then the file, then the
    overrides). When the command also has ``--memory`` and it was not given, the
    config's ``memory.path`` is used unless ``$KGAGENT_MEMORY`` is set.
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

    wrapper = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="SECTION.FIELD=VALUE",
        help="Override one config field (repeatable), e.g. --set memory.engine=kuzu.",
    )(wrapper)
    wrapper = click.option(
        "--config",
        "config_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="A TOML config file (sections as in kgagent.config).",
    )(wrapper)
    return wrapper  # type: ignore[return-value]
