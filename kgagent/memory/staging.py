"""Staging directories next to a memory, and the journal that makes a swap recoverable.

An import builds the new memory in ``.<name>.import-XXXX/`` next to the target
(``memory/``; the archive's files in ``archive/``), and a new memory is created
as ``.<name>.create-XXXX/`` and renamed into place, so a reader never sees half
of either. Each staging directory holds ``owner.lock``, locked (:mod:`~kgagent.memory.lock`)
by the process working in it: one that nobody holds was left by a killed
process, and the next import, export or open of that memory removes it.

Replacing a memory is one ``renameat2(RENAME_EXCHANGE)`` on Linux: the old and
the new directory trade places in one step. Elsewhere it takes two renames: the old one aside into the staging
directory (``previous/``), the new one into place. Between them the target does
not exist. So the swap first writes ``swap.json`` (durably); a process killed
between the renames leaves that journal behind, and the next open of the memory
(or the next import) finishes the swap: the new memory was complete and checked
before the swap began. A journal found while the target is still in place means
the kill came before the first rename: the import is dropped, the old memory
stays.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kgagent.memory.files import atomic_write, side_name
from kgagent.memory.lock import HeldLock, is_locked, try_lock

OWNER = "owner.lock"
#: Seconds after which an unnamed staging directory is surely a dead process's.
YOUNG_S = 60.0
JOURNAL = "swap.json"
NEW = "memory"
PREVIOUS = "previous"
#: Called between the two renames of a swap; tests set it to kill the process there.
between_renames: Callable[[], None] | None = None


def follow_link(target: Path, error: type[Exception]) -> Path:
    """Where a destination that is a symbolic link points: a merge or an import replaces
    the directory there, and the link stays (renaming onto the link would replace the
    link itself with a directory, and leave its target as it was). A link to nothing is
    refused with ``error``: which directory was meant cannot be told."""
    if not target.is_symlink():
        return target
    try:
        return target.resolve(strict=True)
    except (OSError, RuntimeError):
        raise error(
            f"{target} is a symbolic link to {os.readlink(target)}, which does not exist; "
            "create that directory or remove the link"
        ) from None


def make(target: Path, kind: str) -> tuple[Path, HeldLock]:
    """A new staging directory ``.<name>.<kind>-XXXX`` next to ``target``, locked by us."""
    target.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    # Made under a name recover() does not look at, locked, then renamed: nobody can
    # take it for a dead process's leftovers in between.
    young = target.parent / f".{side_name(target.name)}.{kind}~{token}"
    young.mkdir()  # the umask's permissions: it may become the memory itself
    try:
        held = try_lock(young / OWNER)
        assert held is not None  # a directory nobody else knows yet
        work = target.parent / f".{side_name(target.name)}.{kind}-{token}"
        os.rename(young, work)  # the lock (a descriptor) goes with it
    except BaseException:
        shutil.rmtree(young, ignore_errors=True)
        raise
    return work, held


def _siblings(target: Path, kind: str) -> list[Path]:
    try:
        return sorted(target.parent.glob(f".{glob_escape(side_name(target.name))}.{kind}-*"))
    except OSError:
        return []


def _young(target: Path, kind: str) -> list[Path]:
    """Staging directories a killed process left before it could name them (older than
    YOUNG_S: a live one is renamed within microseconds)."""
    try:
        found = target.parent.glob(f".{glob_escape(side_name(target.name))}.{kind}~*")
        return [p for p in found if time.time() - p.stat().st_mtime > YOUNG_S]
    except OSError:
        return []


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _empty_or_missing(p: Path) -> bool:
    if not p.exists():
        return True
    return p.is_dir() and not any(p.iterdir())


def swap_in_progress(target: Path) -> bool:
    """A live import is replacing ``target`` right now."""
    return any((w / JOURNAL).exists() and is_locked(w / OWNER) for w in _siblings(target, "import"))


def interrupted_swap(target: Path) -> Path | None:
    """The staging directory of a killed import that left ``target`` missing, if any."""
    if not _empty_or_missing(target):
        return None
    for w in _siblings(target, "import"):
        if (w / JOURNAL).exists() and not is_locked(w / OWNER):
            return w
    return None


def recover(target: Path) -> list[str]:
    """Finish a swap a killed import left half done; remove stale staging directories.

    Returns what was done, one line each. Live staging directories (their owner
    holds the lock) are left alone.
    """
    done: list[str] = []
    for kind in ("import", "create"):
        for young in _young(target, kind):  # killed between mkdir and rename: empty
            shutil.rmtree(young, ignore_errors=True)
        for work in _siblings(target, kind):
            if not work.is_dir() or is_locked(work / OWNER):
                continue
            if kind == "import" and (work / JOURNAL).exists() and _empty_or_missing(target):
                for part, what in ((NEW, "finished"), (PREVIOUS, "undid")):
                    if (work / part).is_dir():
                        os.replace(work / part, target)
                        done.append(f"{what} an interrupted import into {target}")
                        break
            shutil.rmtree(work, ignore_errors=True)
            done.append(f"removed {work.name} (left by a killed {kind})")
    return done


def remove(work: Path) -> None:
    """Remove a staging directory after a failure the caller handled (or a success).

    ``shutil.rmtree`` holds a descriptor per level of the tree, which a process at its
    limit of open files (``ulimit -n``: what may have made the work fail) does not have:
    it leaves the directory behind. What it leaves is removed bottom-up, one directory
    open at a time (``os.walk`` closes each before it descends). Whatever still remains
    goes with the next open or import of the memory (:func:`recover`), or for a merge's
    work directory the next merge into it or ``memory check --repair``."""
    shutil.rmtree(work, ignore_errors=True)
    if not os.path.lexists(work):
        return
    try:
        for root, dirs, files in os.walk(work, topdown=False):
            for name in files:
                os.unlink(os.path.join(root, name))
            for name in dirs:
                sub = os.path.join(root, name)
                if os.path.islink(sub):  # a link to a directory: the link, not its target
                    os.unlink(sub)
                else:
                    os.rmdir(sub)
        os.rmdir(work)
    except OSError:
        pass


def link_or_copy(src: str | Path, dst: str | Path) -> None:
    """A hard link of the file ``src`` at ``dst``, else (another file system, no links) a copy.

    A symbolic link is linked or copied as a link, never followed.
    """
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``).

    False where the system or file system does not offer it; then :func:`swap` (an
    import) or two renames (a merge, :mod:`~kgagent.memory.merge_place`).
    """
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap(new: Path, target: Path, work: Path) -> None:
    """Replace the memory at ``target`` by ``new``, recoverably (see the module doc)."""
    atomic_write(work / JOURNAL, json.dumps({"target": str(target)}).encode())
    old = work / PREVIOUS
    os.replace(target, old)
    if between_renames is not None:
        between_renames()
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        raise
    (work / JOURNAL).unlink(missing_ok=True)


def stale_temp_files(directory: Path, prefix: str) -> list[Path]:
    """Files ``<prefix>*.tmp`` in ``directory`` that no live process holds locked."""
    try:
        found = sorted(directory.glob(f"{glob_escape(prefix)}*.tmp"))
    except OSError:
        return []
    return [p for p in found if p.is_file() and not is_locked(p)]


def lock_file(path: Path) -> HeldLock:
    """Lock a temporary file we just created, so that nobody takes it for stale."""
    held = try_lock(path, create=False)
    assert held is not None
    return held
