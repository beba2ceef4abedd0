"""A memory whose blobs/ or vectors/ this user may not read: one line naming the folder.

Blobs there but unreadable are not missing blobs (whose fix, restoring them, would be
wrong), and LanceDB's refusal is not several hundred characters of Rust error
structures. The in-process tests take the permission away by making ``os.scandir``
refuse the folder (as the kernel does: a glob then passes over it without a word, and
root may read any folder anyway); the end-to-end ones run ``kgagent`` as a user the
folder is closed to (``nobody`` through ``setpriv`` when the tests run as root).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from command_lines import KGAGENT, denied_user, play_args

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import Memory
from kgagent.memory.vectors import _lance

from .conftest import Populated

#: What LanceDB 0.40 raised opening a vectors folder closed to its user (chmod 000).
LANCE_DENIED = (
    'Invalid input, Failed to connect to namespace: IO { source: Generic { store: "LocalFileSystem", '
    'source: UnableToWalkDir { source: Error { depth: 0, inner: Io { path: Some("{dir}/__manifest/'
    '_versions"), err: Os { code: 13, kind: PermissionDenied, message: "Permission denied" } } } } }, '
    'location: Location { file: "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/'
    'lance-io-13.0.0/src/object_store.rs", line: 1506, column: 92 }, backtrace: MaybeBacktrace }'
)


def refuse(monkeypatch: pytest.MonkeyPatch, *closed: Path) -> None:
    """Make listing any of ``closed`` fail with EACCES, as for a folder chmod 000."""
    real = os.scandir
    shut = {os.fspath(p) for p in closed}

    def scandir(path: object = ".") -> object:
        if os.fspath(path) in shut:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


def check_error(path: Path) -> str:
    """The one line `memory check` ends with on the memory at ``path``."""
    with Memory.open(path, Config(), read_only=True) as m:
        with pytest.raises(MemoryStoreError) as caught:
            m.check()
    line = str(caught.value)
    assert "\n" not in line
    assert "permission denied" in line and "chmod" in line
    assert "repair" not in line and "restore" not in line  # the blobs are there
    return line


def test_check_says_an_unreadable_blobs_folder_cannot_be_read(
    populated: Populated, monkeypatch: pytest.MonkeyPatch
) -> None:
    blobs = populated.path / "blobs"
    refuse(monkeypatch, blobs)
    line = check_error(populated.path)
    assert line.startswith(f"the blobs folder {blobs} cannot be read (permission denied)")


def test_check_says_an_unreadable_folder_of_blobs_cannot_be_read(
    populated: Populated, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = sorted(p for p in (populated.path / "blobs").iterdir() if p.is_dir())[0]
    refuse(monkeypatch, folder)
    assert check_error(populated.path).startswith(f"the blobs folder {folder} cannot be read")


def test_check_says_an_unreadable_blob_cannot_be_read(
    populated: Populated, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = sorted((populated.path / "blobs").glob("??/*.png"))[0]
    real = pathlib.Path.open

    def open_(self: Path, *args: object, **kwargs: object) -> object:
        if self == blob:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pathlib.Path, "open", open_)
    assert check_error(populated.path).startswith(f"the blob {blob} cannot be read")


def test_lancedb_refusing_the_vectors_folder_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "vectors"
    folder.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: p != folder and real(p, mode))
    with pytest.raises(MemoryStoreError) as caught:
        with _lance("open the vectors", folder):
            raise ValueError(LANCE_DENIED.replace("{dir}", str(folder)))
    line = str(caught.value)
    assert line.startswith(f"the vectors folder {folder} cannot be read (permission denied);")
    assert "it is this user's: chmod -R u+rwX" in line and "nothing was changed" in line
    assert "{" not in line and len(line) - 2 * len(str(folder)) < 200  # no Rust structures


def test_lancedb_refusing_a_folder_in_the_vectors_names_that_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "vectors"
    data = folder / "states.lance" / "data"
    data.mkdir(parents=True)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != data and real(p, mode))
    with pytest.raises(MemoryStoreError) as caught:
        with _lance("read the vectors", folder):
            raise OSError("lance error: LanceError(IO): Permission denied (os error 13)")
    assert str(caught.value).startswith(
        f"the vectors folder {folder} cannot be read (permission denied: {data} is refused);"
    )


def test_lancedb_refusing_a_write_says_written(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    folder.mkdir()
    with pytest.raises(MemoryStoreError) as caught:
        with _lance("compact the vectors", folder):
            raise PermissionError(13, "Permission denied")
    line = str(caught.value)
    assert line.startswith(f"the vectors folder {folder} cannot be written (permission denied);")
    assert "nothing was changed" not in line  # a writer's refused write is its own to recover


def test_other_lancedb_errors_keep_their_words(tmp_path: Path) -> None:
    with pytest.raises(MemoryStoreError) as caught:
        with _lance("read the vectors", tmp_path):
            raise RuntimeError("lance error: corrupt file: not a lance file")
    assert str(caught.value) == (
        f"LanceDB could not read the vectors at {tmp_path}: lance error: corrupt file: "
        "not a lance file"
    )


# ----------------------------------------------------------- end to end, as another user


@pytest.fixture(scope="module")
def played() -> Iterator[Path]:
    """A memory `kgagent play` made, in a folder every user may read."""
    top = Path(tempfile.mkdtemp(prefix="kgagent-unreadable-"))
    try:
        top.chmod(0o755)
        memory = top / "played"
        res = subprocess.run(
            [*KGAGENT, *play_args(memory, steps=6)], capture_output=True, text=True, timeout=300
        )
        assert res.returncode == 0, res.stderr
        yield memory
    finally:
        shutil.rmtree(top, onerror=_open_and_retry)


def _open_and_retry(func: Callable[..., object], path: str, _exc: object) -> None:
    """rmtree's error handler for a folder a test left closed: open it and try again."""
    os.chmod(os.path.dirname(path), 0o755)
    os.chmod(path, 0o755)
    func(path)


def closed_copy(played: Path, part: str, name: str) -> tuple[Path, Path]:
    """A copy of ``played`` readable by all but its ``part`` (chmod 000)."""
    memory = played.parent / name
    shutil.copytree(played, memory)
    for folder, dirs, _ in os.walk(memory):
        for d in dirs:
            os.chmod(os.path.join(folder, d), 0o755)
    os.chmod(memory, 0o755)
    closed = memory / part
    closed.chmod(0)
    return memory, closed


def run_denied(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd)}
    return subprocess.run(
        [*denied_user(), *KGAGENT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_memory_check_of_unreadable_blobs_says_so_as_another_user(played: Path) -> None:
    memory, blobs = closed_copy(played, "blobs", "no-blobs")
    try:
        res = run_denied("memory", "check", "--memory", str(memory), cwd=played.parent)
    finally:
        blobs.chmod(0o755)
    assert res.returncode == 1
    assert "missing_blobs" not in res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: the blobs folder {blobs} cannot be read (permission denied), so whether blobs "
        "are missing or damaged cannot be checked; run kgagent as its owner, or let "
        f"this user read it (its owner: chmod -R go+rX {blobs}); nothing was changed"
    ]


@pytest.mark.parametrize("command", ["info", "check"])
def test_unreadable_vectors_are_one_line_as_another_user(played: Path, command: str) -> None:
    memory, vectors = closed_copy(played, "vectors", f"no-vectors-{command}")
    try:
        res = run_denied("memory", command, "--memory", str(memory), cwd=played.parent)
    finally:
        vectors.chmod(0o755)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        f"error: the vectors folder {vectors} cannot be read (permission denied); run kgagent "
        "as its owner, or let this user read it (its owner: chmod -R go+rX "
        f"{vectors}); nothing was changed"
    ]
