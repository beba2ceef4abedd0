"""SIGTERM and SIGHUP stop `memory export`, `import` and `merge` as Ctrl-C does: the command
cleans up what it had under way, says so in one line and exits with the shell's code for
the signal (143, 129); its destination is as it was and nothing is left beside it.

Each command runs as a real process and gets the signal once its work is under way (its
temporary file or work folder is there, or it says which part it is at), on a memory
large enough that the work takes seconds."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from command_lines import KGAGENT
from memory.conftest import DIM, ENC, tree_hash  # tests/memory's fixtures

from kgagent.config import Config
from kgagent.memory import Memory

STOPPED = "stopped by {}: what was under way was undone"


def _build(path: Path, states: int, objects: int, side: int, seed: int) -> None:
    """A memory of ``states`` states and ``objects`` objects with ``side``-pixel noise crops
    (incompressible blobs: they make an archive slow to write and to read)."""
    rng = np.random.default_rng(seed)
    with Memory.open(path, Config(), encoder=ENC) as m:
        for _ in range(states):
            v = rng.normal(size=DIM)
            thumb = rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
            m.merge_or_create_state(v / np.linalg.norm(v), thumbnail=thumb)
        for i in range(objects):
            crop = rng.integers(0, 255, size=(side, side, 3), dtype=np.uint8)
            m.upsert_object(crop, (i, 5, side, side), int(rng.integers(0, 2**62)))


@pytest.fixture(scope="module")
def memories(tmp_path_factory) -> dict[str, Path]:
    """A large memory, its archive, and a small memory of the same encoder."""
    root = tmp_path_factory.mktemp("stop")
    big, small = root / "big", root / "small"
    _build(big, 400, 500, 96, 0)
    _build(small, 40, 20, 32, 1)
    archive = root / "big.kgmem.tar.gz"
    res = subprocess.run(
        [*KGAGENT, "memory", "export", str(archive), "--memory", str(big)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return {"big": big, "small": small, "archive": archive}


def _stop_when(cmd: list[str], begun, sig: int, *, close_outputs: bool = False):
    """Run ``cmd`` and send it ``sig`` once ``begun(lines)`` is true (``lines``: what it
    printed on stderr so far); (exit code, stderr). With ``close_outputs`` its output
    pipes lose their reader before the signal, as when the terminal closes."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL if not close_outputs else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    reader = None
    if not close_outputs:
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
    try:
        deadline = time.monotonic() + 120
        while not begun(lines):
            assert proc.poll() is None, f"it ended before its work began: {''.join(lines)}"
            assert time.monotonic() < deadline, "its work never began"
            time.sleep(0.01)
        if close_outputs:
            proc.stdout.close()
            proc.stderr.close()
        proc.send_signal(sig)
        proc.wait(timeout=120)
        if reader is not None:
            reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(lines)


def _beside(path: Path) -> list[str]:
    """What a command left next to ``path``: its dot-named temporaries and work folders."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def _stopped_cleanly(rc: int, err: str, sig: int) -> None:
    name = signal.Signals(sig).name
    assert rc == 128 + sig, (rc, err)
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith(STOPPED.format(name)), err
    assert "Traceback" not in err


def test_sigterm_stops_an_export_and_leaves_no_temporary(memories, tmp_path) -> None:
    out = tmp_path / "out.kgmem.tar.gz"
    out.write_bytes(b"the archive before")
    rc, err = _stop_when(
        [*KGAGENT, "memory", "export", str(out), "--memory", str(memories["big"]), "--force"],
        # its .out.kgmem.tar.gz.XXXX.tmp is there, and it is reading the graph
        lambda lines: bool(_beside(out)) and any(ln.startswith("graph: ") for ln in lines),
        signal.SIGTERM,
    )
    _stopped_cleanly(rc, err, signal.SIGTERM)
    assert _beside(out) == [], err
    assert out.read_bytes() == b"the archive before"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_stop_signal_stops_an_import_and_leaves_the_memory_as_it_was(
    memories, tmp_path, sig
) -> None:
    target = tmp_path / "target"
    shutil.copytree(memories["small"], target)
    before = tree_hash(target)
    rc, err = _stop_when(
        [*KGAGENT, "memory", "import", str(memories["archive"]), "--memory", str(target)]
        + ["--force"],
        # unpacked, loading the graph (SIGTERM); its work folder just made (SIGHUP)
        lambda lines: (
            any(".import-" in n for n in _beside(target))
            and (sig != signal.SIGTERM or any(ln.startswith("graph: ") for ln in lines))
        ),
        sig,
    )
    _stopped_cleanly(rc, err, sig)
    assert _beside(target) == []
    assert tree_hash(target) == before


def test_sigterm_stops_a_merge_and_leaves_the_destination_as_it_was(memories, tmp_path) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(memories["small"], dest)
    before = tree_hash(dest)
    rc, err = _stop_when(
        [*KGAGENT, "memory", "merge", str(memories["archive"]), "--into", str(dest)],
        lambda lines: any(ln.startswith("merging ") for ln in lines),
        signal.SIGTERM,
    )
    _stopped_cleanly(rc, err, signal.SIGTERM)
    assert _beside(dest) == []  # no work folder, no .dest.merge.lock
    assert tree_hash(dest) == before
    check = subprocess.run(
        [*KGAGENT, "memory", "check", "--memory", str(dest), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0 and "repairable" not in check.stdout, check.stdout


def test_sighup_with_the_terminal_gone_stops_an_export_quietly(memories, tmp_path) -> None:
    """The terminal closed: its pipes have no reader, the signal comes after. Nothing it
    prints on the way out turns into a traceback or another exit code."""
    out = tmp_path / "out.kgmem.tar.gz"
    rc, _ = _stop_when(
        [*KGAGENT, "memory", "export", str(out), "--memory", str(memories["big"])],
        lambda _: bool(_beside(out)),
        signal.SIGHUP,
        close_outputs=True,
    )
    assert rc == 128 + signal.SIGHUP
    assert _beside(out) == [] and not out.exists()
