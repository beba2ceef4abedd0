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

from kgagent.errors import ConfigError


def default_memory_path() -> Path:
    env = os.environ.get("KGAGENT_MEMORY")
    if env:
        return _expanded(env, "$KGAGENT_MEMORY")
    try:
        return Path(platformdirs.user_data_dir("kgagent", appauthor=False)) / "memory"
    except RuntimeError:  # no $HOME, and a user id without a passwd entry (a container's)
        raise ConfigError(
            "no home directory for the default memory (~/.local/share/kgagent/memory): "
            "$HOME is unset and this user has no entry in the password database; pass "
            "--memory DIR, or set $KGAGENT_MEMORY, $XDG_DATA_HOME or $HOME"
        ) from None


def resolve_memory_path(path: str | os.PathLike | None) -> Path:
    return _expanded(path, "--memory") if path else default_memory_path()


def _expanded(path: str | os.PathLike, given: str) -> Path:
    """``path`` with a leading ``~`` expanded; one line when there is no home to expand it to."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise ConfigError(
            f"{given} {str(path)!r} starts with ~, and this user has no home directory "
            "($HOME is unset, no password database entry): give an absolute path"
        ) from None


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
    return why, permission_fix(where, recursive=recursive)


def permission_fix(where: Path, *, recursive: bool = False, write: bool = False) -> str:
    """The ``chmod`` that lets this user in: on its own folder (closed to its owner) the
    owner's bits; on another user's, the group's and others' (its owner must run it)."""
    try:
        own = os.stat(where).st_uid == os.geteuid()
    except OSError:
        own = False
    if own:
        mode = "-R u+rwX" if recursive else "u+rwx"
        return f"it is this user's: chmod {mode} {shell_word(where)}"
    bits = "rwX" if write else "rX"
    mode = f"-R go+{bits}" if recursive else f"go+{bits.lower()}"
    return (
        f"run kgagent as its owner, or let this user {'write' if write else 'read'} it "
        f"(its owner: chmod {mode} {shell_word(where)})"
    )
