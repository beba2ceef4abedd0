"""Tab completion, as the README sets it up: the shell's script, and what it completes."""

from __future__ import annotations

import os
import subprocess

from command_lines import KGAGENT


def _complete(words: str, cword: int) -> list[str]:
    env = {
        **os.environ,
        "_KGAGENT_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    # click reads the program's name from argv[0]; the module runs as ``kgagent``
    res = subprocess.run(KGAGENT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [line.split(",", 1)[1] for line in res.stdout.splitlines()]  # "type,value"


def test_the_shell_script_is_printed() -> None:
    env = {**os.environ, "_KGAGENT_COMPLETE": "bash_source"}
    res = subprocess.run(KGAGENT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "complete -o nosort -F" in res.stdout, res.stderr


def test_commands_and_options_complete() -> None:
    assert "memory" in _complete("kgagent mem", 1)
    assert {"export", "import", "forget"} <= set(_complete("kgagent memory ", 2))
    assert "--steps" in _complete("kgagent play --st", 2)
