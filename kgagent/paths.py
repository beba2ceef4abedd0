"""Where memories live by default.

The default memory is ``<user data dir>/kgagent/memory`` (on Linux
``~/.local/share/kgagent/memory``), overridable by ``KGAGENT_MEMORY`` or
``--memory PATH`` on every command.
"""

from __future__ import annotations

import errno
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


def read_refused(e: OSError, where: Path, *, recursive: bool = False) -> tuple[str, str]:
    """(why, fix) for a part of a memory this user may not read: the OS's reason in lower
    case, and, for a refused permission, who can read it and the ``chmod`` that opens it
    to its owner (``recursive``: a folder whose files are read too); else the disk."""
    why = (e.strerror or type(e).__name__).lower()
    if e.errno not in (errno.EACCES, errno.EPERM):
        return why, "check the disk it is on"
    mode = "-R u+rwX" if recursive else "u+rwx"
    return why, (
        "run kgagent as its owner, or let this user read it "
        f"(its owner: chmod {mode} {shell_word(where)})"
    )
