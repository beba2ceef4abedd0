"""A Kùzu memory lets one process open it: a reader refused while an agent writes it is
told which process that is and what to do, as the writer refusals say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from command_lines import KGAGENT

#: Opens a Kùzu memory read-write and holds it until its standard input closes.
HOLD = """
import sys
from kgagent.config import Config
from kgagent.memory import Memory
m = Memory.open(sys.argv[1], Config.load(None, ["memory.engine=kuzu"]))
print("open", flush=True)
sys.stdin.read()
m.close()
"""


def test_a_kuzu_reader_names_the_process_that_writes_the_memory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KGAGENT_ENGINE"}  # it would choose
    mem = tmp_path / "m"
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(mem)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "open"
        res = subprocess.run(
            [*KGAGENT, "memory", "info", "--memory", str(mem), "--set", "memory.engine=kuzu"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        writer.stdin.close()
        writer.wait(timeout=60)
    assert res.returncode == 1, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"is in use by another process (pid {writer.pid}) that writes it" in line, line
    assert "wait for it to finish, or stop it" in line


def test_a_writer_refused_by_a_reader_does_not_name_itself(tmp_path: Path) -> None:
    """A writer takes the memory's lock before it opens the graph: when a reader holds the
    Kùzu file, the lock file's holder is the writer itself, not the other process."""
    from kgagent.memory.engine import _in_use
    from kgagent.memory.lock import lock_memory

    mem = tmp_path / "m"
    mem.mkdir()
    held = lock_memory(mem)
    try:
        line = _in_use(mem / "graph.db", "kuzu", "IO exception: Could not set lock on file")
    finally:
        held.release()
    assert f"pid {os.getpid()}" not in line
    assert "could not lock it" in line and "wait for it to finish, or stop it" in line
