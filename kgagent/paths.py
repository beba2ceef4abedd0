"""Where memories live by default.

The default memory is ``<user data dir>/kgagent/memory`` (on Linux
``~/.local/share/kgagent/memory``), overridable by ``KGAGENT_MEMORY`` or
``--memory PATH`` on every command.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import platformdirs


def default_memory_path() -> Path:
    env = os.environ.get("KGAGENT_MEMORY")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("kgagent", appauthor=False)) / "memory"


def resolve_memory_path(path: str | os.PathLike | None) -> Path:
    return Path(path).expanduser() if path else default_memory_path()


def shell_word(path: str | os.PathLike) -> str:
    """``path`` as a shell word, for commands printed in messages: a path with a space or a
    quote is copied and run as printed (``--memory '/tmp/no such ü'``)."""
    return shlex.quote(os.fspath(path))
