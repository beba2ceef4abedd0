"""Unwritable or invalid places: /proc, /sys, a file where a memory should be, a
read-only (immutable) directory. Each is one line and exit 1, never a traceback,
and a memory that cannot be written is refused before a step half-writes it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.memory.archive import export_memory

ENC = EncoderSpec("test:v1", 16, (0.95, 0.88))


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def one_line(res) -> str:
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    assert "Traceback" not in res.output
    return errors[0]


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("places")
    mem = d / "memory"
    import numpy as np

    with Memory.open(mem, Config(), encoder=ENC) as m:
        m.merge_or_create_state(np.eye(16)[0])
    archive = d / "good.kgmem.tar.gz"
    export_memory(mem, archive)
    return mem, archive


PLAY = ("play", "--env", "civgame", "--steps", "1", "--quiet")


@pytest.mark.parametrize("place", ["/proc/kgagent-test/m", "/sys/kgagent-test/m"])
def test_proc_and_sys_are_refused_in_one_line(good, place: str) -> None:
    mem, archive = good
    assert "cannot create a memory" in one_line(run(*PLAY, "--memory", place))
    assert "writable" in one_line(run("memory", "import", str(archive), "--memory", place))
    assert "writable" in one_line(
        run("memory", "export", place + ".kgmem.tar.gz", "--memory", str(mem))
    )


def test_a_file_where_the_memory_should_be(good, tmp_path: Path) -> None:
    _, archive = good
    f = tmp_path / "a-file"
    f.write_text("not a memory")
    assert "is a file" in one_line(run(*PLAY, "--set", f"memory.path={f}"))
    assert "is a file" in one_line(run(*PLAY, env={"KGAGENT_MEMORY": str(f)}))
    assert "not a directory" in one_line(
        run("memory", "import", str(archive), "--set", f"memory.path={f}")
    )
    assert f.read_text() == "not a memory"
    for cmd in (["memory", "info"], ["memory", "import", str(archive)]):
        usage = run(*cmd, "--memory", str(f))  # --memory itself says it wants a directory
        assert usage.exit_code == 2 and len(usage.output.strip().splitlines()) == 1


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` made unwritable: a read-only bind mount, else ``chattr +i``; skip if neither."""
    res = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, text=True)
    if res.returncode == 0:
        ro = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(path)], capture_output=True, text=True
        )
        if ro.returncode == 0:
            try:
                yield
            finally:
                subprocess.run(["umount", "-l", str(path)], capture_output=True)
            return
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
    res = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(
            "cannot make a directory read-only here (no bind mounts, no chattr +i): "
            + (res.stderr.strip() or "not permitted")
        )
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_read_only_places_are_refused_before_anything_is_written(good, tmp_path: Path) -> None:
    mem, archive = good
    if os.geteuid() != 0:
        pytest.skip("making a directory read-only needs root here")
    # A memory directory that cannot take new files: refused at open, nothing half-written.
    victim = tmp_path / "victim"
    Memory.open(victim, Config(), encoder=ENC).close()
    files_before = sorted(p.name for p in victim.rglob("*"))
    with read_only(victim):
        line = one_line(run(*PLAY, "--memory", str(victim)))
        assert "cannot" in line
    assert sorted(p.name for p in victim.rglob("*")) == files_before
    check = run("memory", "check", "--memory", str(victim))
    assert check.exit_code == 0, check.output  # no orphan vector row, nothing to repair
    # Import and export next to a read-only directory.
    parent = tmp_path / "ro"
    parent.mkdir()
    with read_only(parent):
        assert "writable" in one_line(
            run("memory", "import", str(archive), "--memory", str(parent / "m"))
        )
        assert "writable" in one_line(
            run("memory", "export", str(parent / "x.kgmem.tar.gz"), "--memory", str(mem))
        )
    assert not any(parent.iterdir())


def test_a_read_only_blob_folder_is_refused_at_open(tmp_path: Path) -> None:
    """A step writes its thumbnail into blobs/<2 hex>/: one such folder made read-only was
    found only by a step (`steps 0 (error)`, `Permission denied: …/.tmp`), not at open."""
    if os.geteuid() != 0:
        pytest.skip("making a directory read-only needs root here")
    import numpy as np

    victim = tmp_path / "victim"
    with Memory.open(victim, Config(), encoder=ENC) as m:
        m.merge_or_create_state(np.eye(16)[0], thumbnail=np.zeros((8, 8, 3), np.uint8))
    (folder,) = sorted((victim / "blobs").glob("??"))
    from kgagent.errors import MemoryStoreError

    with read_only(folder), pytest.raises(MemoryStoreError) as e:
        Memory.open(victim, Config(), encoder=ENC)  # as `kgagent play` opens it
    assert str(e.value).startswith(f"the memory at {victim} cannot be written ({folder}:")
    with Memory.open(victim, Config(), read_only=True) as m:  # a reader is not refused
        assert m.stats().nodes == 1


def test_usage_errors_are_one_line_exit_2() -> None:
    for args in (
        ["query", "--limit", "-1", "RETURN 1"],
        ["query", "--timeout", "abc", "RETURN 1"],
        ["query", "--no-such-option"],
        ["memory", "import"],
    ):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (args, res.output)
        assert "--help" in lines[0]


def test_play_subprocess_on_proc_has_no_traceback(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "kgagent.cli.main", *PLAY, "--memory", "/proc/kgagent-x/m"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr
