"""Putting a merged memory in place of the destination, all or nothing.

The merge builds the new memory in a work directory beside the destination
(``.<name>.merge-<random>/memory``) and only then puts it in place:

* with one ``renameat2(RENAME_EXCHANGE)`` where the system has it (Linux): the new
  and the old directory trade places in one step, so at every moment the
  destination is either the old memory or the new one;
* elsewhere with two renames (old aside to ``.../previous``, new into place, old
  restored if the second fails). A process killed between the two leaves the old
  memory in ``previous``; the next merge into that destination puts it back
  (:func:`recover`) before anything else.

Two guards hold while a merge runs: an exclusive ``flock`` on
``.<name>.merge.lock`` beside the destination (one merge per destination), and a
shared POSIX lock on the destination's ``graph.db``. The second is the lock both
graph engines take on their database file, so while the merge holds it no agent
can open the destination to write (read-only readers still can), and a merge is
refused while one is writing. POSIX locks belong to the process and are released
when *any* descriptor of the file closes, so the merge never opens the
destination's database with the engine, and copies ``graph.db`` through the
descriptor that holds the lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from kgagent.errors import MemoryStoreError
from kgagent.memory import staging
from kgagent.memory.files import side_name
from kgagent.memory.lifecycle import BLOBS, GRAPH
from kgagent.memory.lock import is_locked
from kgagent.memory.staging import link_or_copy

try:  # POSIX; elsewhere the merge runs without the two guards
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

#: Directories whose files are never rewritten in place (content-addressed blobs,
#: backups): the work copy hard-links them instead of copying.
LINKED = (BLOBS, "backups")
#: Bytes copied per call when copying the destination's database through its lock.
COPY_CHUNK = 1 << 20
#: The old memory, moved aside by the two-rename fallback until the new one is in place.
PREVIOUS = "previous"
#: The new memory being built (after an exchange: the old one, about to be deleted).
BUILT = "memory"


class MergeError(MemoryStoreError):
    """Memories that cannot be merged, or a destination that cannot be replaced now."""


def work_prefix(dest: Path) -> str:
    return f".{side_name(dest.name)}.merge-"


def lock_path(dest: Path) -> Path:
    return dest.parent / f".{side_name(dest.name)}.merge.lock"


@contextlib.contextmanager
def merge_lock(dest: Path) -> Iterator[None]:
    """One merge per destination at a time (``flock`` on a file beside it).

    The lock file is removed when the merge ends, while it is still locked; so a merge
    that locked a file must check that the file is still the one at the path (not one
    unlinked by the merge before it) and start again otherwise.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    path = lock_path(dest)
    fd = _lock_fd(dest, path)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # still ours: every locker re-checks the path after locking
        os.close(fd)


def _lock_fd(dest: Path, path: Path) -> int:
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise MergeError(_unwritable(dest, e)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise MergeError(
                f"another merge into {dest} is running; wait for it to finish"
            ) from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # unlinked by the merge that held it: lock the new one


def merge_running(dest: Path) -> bool:
    """Whether a live merge into ``dest`` holds its lock (a killed one's lock is free)."""
    return is_locked(lock_path(dest))


def leftovers(dest: Path) -> list[Path]:
    """The work directories of merges into ``dest`` (a killed merge's, unless one runs)."""
    try:
        found = dest.parent.glob(f"{staging.glob_escape(work_prefix(dest))}*")
        return sorted(p for p in found if p.is_dir())
    except OSError:
        return []


def leftovers_row(dest: Path) -> dict[str, object]:
    """The row of `kgagent memory check` for what killed merges left beside ``dest``."""
    found = leftovers(dest)
    if found and merge_running(dest):
        status, detail = "in flight", "the work directory of a merge into this memory running now"
    else:
        status = "repairable" if found else "ok"
        detail = (
            f"{work_prefix(dest)}* beside the memory, left by a killed merge (a copy of the "
            "memory): removed by --repair or by the next merge into it"
        )
    return {"check": "merge_leftovers", "status": status, "count": len(found), "detail": detail}


def leftovers_warning(dest: Path) -> str | None:
    """One line for `play` and `memory info` when killed merges left work directories
    beside ``dest`` (each a copy of the memory, GBs on a big one); None otherwise."""
    dest = dest.resolve()
    found = leftovers(dest)
    if not found or merge_running(dest):
        return None
    size = sum(_size(d) for d in found)
    return (
        f"warning: a killed merge left {len(found)} work "
        f"director{'y' if len(found) == 1 else 'ies'} ({size / 2**20:.1f} MiB) beside the "
        f"memory ({work_prefix(dest)}*): `kgagent memory check --repair` removes "
        f"{'it' if len(found) == 1 else 'them'}"
    )


def _size(folder: Path) -> int:
    """Bytes under ``folder``; files that go while it is walked count as nothing."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def remove_leftovers(dest: Path, say: Callable[[str], None]) -> None:
    """What killed merges into ``dest`` left beside it (:func:`recover`), unless a merge
    into it runs now."""
    if not leftovers(dest) and not lock_path(dest).exists():
        return
    try:
        with merge_lock(dest):
            for work in leftovers(dest):
                say(f"removing {work.name} (left by a killed merge)")
            recover(dest, say)
    except MergeError as e:
        say(f"{e}; its work directory is left alone")


def _unwritable(dest: Path, e: OSError) -> str:
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot merge into {dest}: its folder {dest.parent} is not writable ({e.strerror})"
    return f"cannot merge into {dest}: {e.strerror or e} ({e.filename or dest.parent})"


def make_parent(dest: Path) -> None:
    """The destination's folder (the merge works beside the destination)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise MergeError(f"cannot merge into {dest}: {dest.parent} is not a folder") from None
    except OSError as e:
        raise MergeError(
            f"cannot merge into {dest}: its folder {dest.parent} cannot be made ({e.strerror or e})"
        ) from None


class DestinationGuard:
    """A shared lock on the destination's ``graph.db``: no writer can open it meanwhile."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self._fd: int | None = None

    def __enter__(self) -> DestinationGuard:
        graph = self.dest / GRAPH
        if fcntl is None or not graph.is_file():
            return self
        fd = os.open(graph, os.O_RDONLY)
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise MergeError(
                f"the memory at {self.dest} is in use by a process writing it (an agent?); "
                "stop it, then merge again"
            ) from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def copy_graph(self, to: Path) -> None:
        """Copy ``graph.db`` through the locked descriptor (closing another would drop the lock)."""
        if self._fd is None:
            shutil.copy2(self.dest / GRAPH, to)
            return
        with open(to, "wb") as out:
            offset = 0
            while True:
                chunk = os.pread(self._fd, COPY_CHUNK, offset)
                if not chunk:
                    break
                out.write(chunk)
                offset += len(chunk)
            out.flush()
            os.fsync(out.fileno())


def copy_size(src: Path) -> int:
    """Bytes :func:`copy_memory` writes for the memory at ``src`` (what it links costs
    nothing): the graph database, its log, the manifest, the vectors."""
    total = 0
    for entry in src.iterdir():
        if entry.is_symlink() or entry.name in LINKED:
            continue
        if entry.is_dir():
            total += _size(entry)
        else:
            with contextlib.suppress(OSError):
                total += entry.stat().st_size
    return total


def copy_memory(src: Path, dst: Path, guard: DestinationGuard) -> None:
    """A working copy of the memory at ``src``: database and vectors copied, blobs linked."""
    dst.mkdir()
    for entry in sorted(src.iterdir()):
        target = dst / entry.name
        if entry.name == GRAPH and entry.is_file():
            guard.copy_graph(target)
        elif entry.is_dir() and not entry.is_symlink():
            fn = link_or_copy if entry.name in LINKED else shutil.copy2
            shutil.copytree(entry, target, copy_function=fn, symlinks=True)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


def place(built: Path, dest: Path, replacing: bool, work: Path) -> None:
    """Put ``built`` where ``dest`` is; the old memory is never lost on the way."""
    if not replacing:
        if dest.exists():
            dest.rmdir()  # empty (checked before)
        os.replace(built, dest)
        return
    if staging.exchange(built, dest):
        return  # the old memory is now at ``built``, deleted with the work directory
    old = work / PREVIOUS
    os.replace(dest, old)
    try:
        os.replace(built, dest)
    except BaseException:
        os.replace(old, dest)
        raise


def recover(dest: Path, say: Callable[[str], None]) -> None:
    """Clean up after merges into ``dest`` that were killed; put back a memory moved aside.

    Called with the merge lock held, so no work directory belongs to a running merge.
    A work directory holding ``previous`` (the old memory) was killed between the two
    renames of the fallback: when ``dest`` is missing, ``previous`` goes back; when
    something else is at ``dest`` by now, both are kept and the merge is refused.
    """
    for work in sorted(dest.parent.glob(f"{staging.glob_escape(work_prefix(dest))}*")):
        if not work.is_dir():
            continue
        previous = work / PREVIOUS
        if previous.is_dir():
            if (work / BUILT).exists() and not dest.exists():
                os.replace(previous, dest)
                say(f"an interrupted merge had moved {dest} aside; it is back in place")
            elif dest.exists() and (work / BUILT).exists():
                raise MergeError(
                    f"an interrupted merge left the previous memory of {dest} in {previous}, "
                    f"and {dest} has been recreated since; move the one you want to {dest} "
                    f"and delete {work}"
                )
        shutil.rmtree(work, ignore_errors=True)
