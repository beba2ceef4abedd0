"""What the limits of this process (``ulimit``) mean for a memory, in words a user can act on.

A container or a shell may cap what one process can use: its address space
(``ulimit -v``, ``RLIMIT_AS``), the size of any file it writes (``ulimit -f``,
``RLIMIT_FSIZE``) and the number of files it holds open (``ulimit -n``,
``RLIMIT_NOFILE``). An error caused by such a limit is not damage: nothing needs
restoring, the limit needs raising. This module tells the two apart, and sizes the
graph engine's address space to fit under ``RLIMIT_AS``.

Why the graph engine needs sizing: Kùzu and LadybugDB reserve address space, when
they open a database, for the largest database they may ever map (``max_db_size``,
8 TiB by default) and for their buffer pool (80 % of the machine's memory by
default). Under any finite ``ulimit -v`` that reservation fails ("Mmap for size
8796093022208 failed") and no command can open a memory. Both engines take a
smaller ``max_db_size`` (a power of two) for an existing database as long as the
database fits in it; it is not recorded in the database, so the next open without a
limit is unchanged.
"""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

from kgagent.errors import MemoryStoreError

#: The engines' own default (8 TiB): what a process without an address-space limit maps.
ENGINE_DEFAULT_DB_BYTES = 1 << 43
#: Below this both engines reserve as much for their buffer pool anyway (measured: the
#: address space an open takes does not shrink with a smaller pool, Kùzu 0.11.3 and
#: LadybugDB 0.22.0); it caches pages, so it bounds speed, not what the memory holds.
POOL_BYTES = 256 << 20
#: The smallest max_db_size offered (the engines take nothing below 4 MiB).
MIN_DB_BYTES = 64 << 20
#: max_db_size is at least this many times the database's size at the open (rounded up
#: to a power of two): room for the run to grow the graph, whatever the limit.
GROWTH = 4
#: Address space each engine worker thread takes (its stack and C allocator arena:
#: LadybugDB 72 MiB a thread, Kùzu 8 MiB, plus arenas when a query runs), and the
#: engine's own beyond its pool and threads.
THREAD_BYTES = 80 << 20
ENGINE_BYTES = 64 << 20
#: Worker threads under an address-space limit, unless memory.query_threads says.
LIMITED_THREADS = 2
#: The engine's part of what the limit leaves when it opens: the rest of the process
#: needs the other three quarters and takes them later (LanceDB, numpy's BLAS and the
#: step's images: `kgagent play --env civgame` maps about 3.2 GiB beside the engine; at
#: 1 GiB for the engine under `ulimit -v 4000000` LanceDB hung starting a thread).
ENGINE_SHARE = 0.25


class ProcessLimitError(MemoryStoreError):
    """A file could not be read or written because this process reached a limit (open
    files, memory, ``ulimit``): nothing is damaged, and a caller that would otherwise
    take the file for missing or broken lets this through."""


def _limit(which: int) -> int | None:
    """The soft limit ``which`` of this process; None when there is none."""
    try:
        soft, _ = resource.getrlimit(which)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def address_space_limit() -> int | None:
    """``ulimit -v`` in bytes; None when the address space is not limited."""
    return _limit(resource.RLIMIT_AS)


def file_size_limit() -> int | None:
    """``ulimit -f`` in bytes; None when file sizes are not limited."""
    return _limit(resource.RLIMIT_FSIZE)


def mapped_bytes() -> int:
    """The address space this process maps now (what ``RLIMIT_AS`` counts); 0 where
    the system does not say (no ``/proc``)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def ulimit_v() -> str:
    """The address-space limit as ``ulimit -v`` prints it (KiB), for messages."""
    limit = address_space_limit()
    return "unlimited" if limit is None else f"{limit >> 10}"


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _pow2_at_most(n: int) -> int:
    return 1 << (int(n).bit_length() - 1) if n > 0 else 0


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def database_bytes(graph: Path) -> int:
    """What the engine must be able to map to open ``graph``: the file and its log (a
    replay grows the file by about the log's size)."""
    return _size(graph) + _size(Path(f"{graph}.wal"))


def engine_sizes(graph: Path, threads: int) -> list[dict[str, int]]:
    """The engine's ``Database`` settings to try, in order, under a finite ``ulimit -v``;
    ``[{}]`` (the engine's defaults) when the address space is not limited.

    The engine gets :data:`ENGINE_SHARE` of what the limit leaves after what the process
    maps now: a pool of :data:`POOL_BYTES`, :data:`LIMITED_THREADS` worker threads
    (``threads`` when set) and, for ``max_db_size``, the largest power of two left, but
    never less than :data:`GROWTH` times the database (and :data:`MIN_DB_BYTES`). Each
    further setting halves ``max_db_size``, down to the database's own size rounded up,
    for an open that still fails to map."""
    limit = address_space_limit()
    if limit is None:
        return [{}]
    workers = threads if threads > 0 else LIMITED_THREADS
    share = int((limit - mapped_bytes()) * ENGINE_SHARE)
    room = share - POOL_BYTES - ENGINE_BYTES - workers * THREAD_BYTES
    have = database_bytes(graph)
    least = _pow2_at_least(max(MIN_DB_BYTES, have))
    size = max(least, _pow2_at_least(GROWTH * have), _pow2_at_most(room))
    size = min(size, ENGINE_DEFAULT_DB_BYTES)
    out = []
    while True:
        out.append(
            {"max_db_size": size, "buffer_pool_size": POOL_BYTES, "max_num_threads": workers}
        )
        if size <= least:
            return out
        size //= 2


def address_space_hint(graph: Path, max_db_size: int | None) -> str:
    """Why the engine could not map its memory under ``ulimit -v``, and what to do."""
    limit = address_space_limit()
    held = f"; it was given {_mib(max_db_size)} for the database" if max_db_size else ""
    return (
        f"this process's address-space limit (`ulimit -v` {ulimit_v()} KiB, "
        f"{_mib(limit or 0)}; {_mib(mapped_bytes())} in use) leaves the graph engine too "
        f"little room for the graph ({_mib(database_bytes(graph))}{held}); raise the limit "
        "(`ulimit -v unlimited`, or a larger value) and run the command again"
    )


def process_limit(e: BaseException) -> str | None:
    """The limit of this process (or of the system) that the ``OSError`` ``e`` hit, in
    words with what to do; None when ``e`` is not such an error. Nothing is damaged
    then: the same command works once the limit is raised."""
    if not isinstance(e, OSError) or e.errno is None:
        return None
    return _LIMITS.get(e.errno, lambda: None)()


def limit_in_message(msg: str) -> str | None:
    """:func:`process_limit` for an error that only has words (a library's message that
    quotes the system's: "Too many open files (os error 24)"); None when it names none."""
    low = msg.lower()
    for code in _LIMITS:  # ENFILE's words ("… in system") come before EMFILE's
        if os.strerror(code).lower() in low or f"os error {code})" in low:
            return _LIMITS[code]()
    return None


#: Files a process with a memory open for writing may need open at once, at least. Measured
#: with `kgagent play --steps 3` on a small memory (LadybugDB 0.22.0, LanceDB 0.x): it fails
#: at `ulimit -n` 26 or lower (LanceDB's compaction at close; below 13 LanceDB cannot even
#: start its runtime, and the graph engine's close is cut short), and works at 28; twice that
#: leaves room for a grown memory's files.
MIN_OPEN_FILES = 64
#: The soft limit of open files is raised to this (never above the hard limit) when it is
#: below :data:`MIN_OPEN_FILES`: no higher, so descriptors stay within ``select()``'s 1024.
RAISED_OPEN_FILES = 1024


def ensure_open_files(writing: bool) -> None:
    """Make room for the files a memory holds open, before the memory is touched.

    A soft limit of open files (``ulimit -n``) below :data:`MIN_OPEN_FILES` is raised
    toward :data:`RAISED_OPEN_FILES`, as far as the hard limit lets this process (a soft
    limit is the process's own to raise). A writer that still has less is refused with
    one line: a writer that runs out of descriptors part-way through opening leaves a
    checkpoint unfinished, which every reader then refuses until a writer opens it again.
    """
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return
    if soft == resource.RLIM_INFINITY or soft >= MIN_OPEN_FILES:
        return
    target = RAISED_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, RAISED_OPEN_FILES)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    if writing and soft < MIN_OPEN_FILES:
        raise ProcessLimitError(
            f"this process may hold only {soft} files open (`ulimit -n` {soft}, hard limit "
            f"{hard}); writing a memory needs at least {MIN_OPEN_FILES}: raise both limits "
            "(`ulimit -n 4096` as root, or the container's nofile limit) and run the command "
            "again, nothing was touched"
        )


def _open_files() -> str:
    soft = _limit(resource.RLIMIT_NOFILE)
    now = f" {soft}" if soft is not None else ""
    return (
        f"this process has as many files open as its limit allows (`ulimit -n`{now}); "
        "raise it (`ulimit -n 4096`) and run the command again, nothing is damaged"
    )


def _system_files() -> str:
    return (
        "the system's table of open files is full; close some programs (or raise "
        "fs.file-max) and run the command again, nothing is damaged"
    )


def _no_memory() -> str:
    if address_space_limit() is not None:
        return (
            "this process could not get the memory it asked for under its address-space "
            f"limit (`ulimit -v` {ulimit_v()} KiB); raise it (`ulimit -v unlimited`) and run "
            "the command again, nothing is damaged"
        )
    return (
        "the machine's memory ran out; free some memory and run the command again, nothing "
        "is damaged"
    )


def _file_size() -> str:
    fsize = file_size_limit()
    size = f" {fsize >> 10} KiB" if fsize is not None else ""
    return (
        f"a file reached this process's file-size limit (`ulimit -f`{size}); raise it "
        "(`ulimit -f unlimited`) and run the command again"
    )


def _disk_full() -> str:
    return "the disk is full; free some space and run the command again"


_LIMITS = {
    errno.ENFILE: _system_files,
    errno.EMFILE: _open_files,
    errno.ENOMEM: _no_memory,
    errno.EFBIG: _file_size,
    errno.ENOSPC: _disk_full,
}


def write_cause(files: list[Path], msg: str) -> tuple[str, str]:
    """Why the graph engine failed writing (or reading back) one of ``files``, and what
    to do first: ``(cause, fix)``. The engine's message says "No space left on device"
    or "File too large" when the write failed; when it read back a page it could not
    write it does not, and the file sizes against ``ulimit -f`` and the free space say.
    A checkpoint may also fail for memory ("std::bad_alloc" under ``ulimit -v``)."""
    low = msg.lower()
    fsize = file_size_limit()
    at_limit = fsize is not None and any(_size(p) + (1 << 20) >= fsize for p in files)
    if "no space left" in low or "disk full" in low:
        return "the disk is full", "free some space"
    if "file too large" in low or at_limit:
        size = f" {fsize >> 10} KiB" if fsize is not None else ""
        return (
            f"a file reached this process's file-size limit, `ulimit -f`{size}",
            "raise the limit (`ulimit -f unlimited`)",
        )
    if any(w in low for w in ("bad_alloc", "out of memory", "cannot allocate", "mmap")):
        if address_space_limit() is not None:
            return (
                f"this process ran out of address space, `ulimit -v` {ulimit_v()} KiB",
                "raise the limit (`ulimit -v unlimited`)",
            )
        return "the machine ran out of memory", "free some memory"
    if "io exception" not in low and "rollback" not in low:  # not a file the engine wrote
        return f"the engine's error: {msg[:300]}", "remove that cause"
    for p in files:
        try:
            st = os.statvfs(p.parent)
        except OSError:
            continue
        if st.f_bavail * st.f_frsize < (1 << 20):
            return "the disk is full", "free some space"
    return (
        "a full disk, or a file-size limit (`ulimit -f`)",
        "free some space or raise the file-size limit",
    )
