"""The writer's lock of a memory: one process writes a memory at a time.

Why a lock file of our own: the graph engine locks its database file while it is
open, but an import replaces the whole directory, and it must not do that under
a running ``kgagent play`` (which then dies and leaves damaged vectors). Every
writer — ``Memory.open`` read-write, ``kgagent memory import --force`` — takes an
exclusive ``flock`` on ``<memory>/writer.lock`` and holds it until it is done.
The operating system drops the lock when the process dies, even by SIGKILL, so a
crashed writer never leaves a memory locked. Readers take no lock (LadybugDB lets
them read beside a writer).

The same kind of lock marks a staging directory (an import's, a new memory's) or
an export's temporary file as *live*: whatever a killed process left behind can be
recognised, because nobody holds its lock, and removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from kgagent.errors import MemoryStoreError

LOCK_FILE = "writer.lock"
#: How long a writer waits out a reader's probe of the lock (``writer_holder``), which
#: holds it shared for the time of one system call: 5 tries 10 ms apart.
_PROBE_RETRIES, _PROBE_WAIT_S = 5, 0.01


class HeldLock:
    """An exclusive ``flock`` on a file, held until :meth:`release` (or process death)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1

    def __del__(self) -> None:
        # a Memory dropped without close() (a notebook's lost object): once it is collected,
        # its engine is too, and the lock goes with them instead of staying until exit
        try:
            self.release()
        except OSError:
            pass


def try_lock(path: Path, *, create: bool = True) -> HeldLock | None:
    """The lock on ``path``, or None when another process holds it."""
    flags = os.O_RDWR | (os.O_CREAT if create else 0)
    fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return HeldLock(fd, path)


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock on ``path`` (a missing file is not locked)."""
    try:
        held = try_lock(path, create=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: treat as live, never remove it
    if held is None:
        return True
    held.release()
    return False


def lock_memory(directory: Path) -> HeldLock:
    """The writer's lock of the memory at ``directory``; refused while another holds it."""
    path = directory / LOCK_FILE
    try:
        held = try_lock(path)
        # a reader's probe (writer_holder) holds a shared lock for a moment: wait that out
        for _ in range(_PROBE_RETRIES):
            if held is not None:
                break
            time.sleep(_PROBE_WAIT_S)
            held = try_lock(path)
    except OSError as e:
        raise MemoryStoreError(
            f"cannot write to the memory at {directory} ({e.strerror or e}); check that the "
            "directory is writable, or open it read-only"
        ) from None
    if held is None:
        holder = lock_holder(path)
        if holder == f" (pid {os.getpid()})":
            raise MemoryStoreError(
                f"the memory at {directory} is already open for writing in this process: "
                "close() the Memory that has it (or open it with `with Memory.open(...)`)"
            )
        raise MemoryStoreError(
            f"the memory at {directory} is in use by another process{holder} that writes it; "
            "stop that process (or wait for it to finish) and try again"
        )
    try:  # who holds it, for the message another process shows
        os.ftruncate(held.fd, 0)
        os.write(held.fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass
    return held


def writer_holder(directory: Path) -> str | None:
    """When a live process writes the memory at ``directory``: `` (pid N)`` (or "" when
    the lock file does not say who); None when none does, or when that cannot be told
    (a memory this user may only read is probed through a read-only descriptor). The
    probe holds the lock shared for a moment, which :func:`lock_memory` waits out."""
    path = directory / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return lock_holder(path)
        return None
    finally:
        os.close(fd)
    return None


def lock_holder(path: Path) -> str:
    """`` (pid N)`` from the lock file at ``path`` (its holder writes it), or ""."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    return f" (pid {pid})"
