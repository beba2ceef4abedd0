"""Command lines the tests run: ``kgagent play`` with the weight-free perception.

Import as ``from command_lines import …`` (pyproject.toml puts ``tests/`` on the path).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

KGAGENT = (sys.executable, "-m", "kgagent.cli.main")
"""``kgagent`` as a subprocess's command line, with this interpreter."""

WEIGHT_FREE = ("--set", "perception.encoder=pixel", "--set", "perception.segmenter=opencv")
"""The weight-free perception, set explicitly: a test must not depend on weights found."""


def play_args(
    memory: Path, *extra: str, steps: int, env: str | None = None, quiet: bool = True
) -> list[str]:
    """``play`` on ``env`` (the default env when None) for ``steps`` steps into ``memory``,
    with the weight-free perception; ``extra`` is added at the end."""
    where = ["--env", env] if env else []
    loud = [] if not quiet else ["--quiet"]
    return [
        "play",
        *where,
        "--memory",
        str(memory),
        "--steps",
        str(steps),
        *loud,
        *WEIGHT_FREE,
        *extra,
    ]


def play_command(memory: Path, *extra: str, steps: int, env: str | None = None) -> list[str]:
    """:func:`play_args` as a quiet subprocess's command line."""
    return [*KGAGENT, *play_args(memory, *extra, steps=steps, env=env)]


def denied_user() -> list[str]:
    """The command prefix that runs as a user a chmod 000 folder is closed to (empty when
    not root); skips the test where there is none (root without ``setpriv`` or a user
    ``nobody``)."""
    import os
    import shutil

    import pytest

    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot be refused a folder")
    import pwd

    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root without a user nobody: cannot be refused a folder")
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if not _runs_kgagent(tuple(prefix)):
        pytest.skip("the user nobody cannot run kgagent from here (a checkout only root reads)")
    return prefix


@functools.cache
def _runs_kgagent(prefix: tuple[str, ...]) -> bool:
    """Whether ``prefix`` can start this interpreter and import kgagent's CLI: a checkout
    in a folder only its owner may enter (``mktemp -d``) is closed to another user."""
    import subprocess

    probe = [*prefix, sys.executable, "-c", "import kgagent.cli.main"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
