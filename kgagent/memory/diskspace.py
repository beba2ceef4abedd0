"""Stop writing before the disk is full, and never wait forever on the graph engine.

Why: when its file system fills up, a graph engine fails in the middle of writing
its write-ahead log. Kùzu and LadybugDB then abort the process on close, and
LadybugDB may refuse the torn log on the next open (or, cut at some byte
offsets, crash reading it); a commit can also block forever in the engine's
durability wait. So a writer checks the free space of the memory's file system
before every commit and stops cleanly, with everything committed so far intact,
while a *reserve* is still free: enough for closing the memory (the vector
journal's flush into LanceDB, the engine's checkpoint). And a watchdog ends the
process with a clear message if one engine call does not return in time.

Both limits are module constants until the config has fields for them
(``memory.disk_reserve_mb``, ``memory.commit_timeout_s``); :func:`reserve_bytes`
and :func:`commit_timeout` read those fields when they exist.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import Any

from kgagent.errors import MemoryStoreError

#: Free bytes that must remain on the memory's file system before a commit.
DEFAULT_RESERVE_BYTES = 64 << 20
#: Seconds one engine call of a writer may take before the process is ended.
DEFAULT_COMMIT_TIMEOUT_S = 120.0
#: While more than this much above the reserve, re-check at most once per RECHECK_S.
SLACK_BYTES = 256 << 20
RECHECK_S = 1.0
#: After the watchdog interrupted a call, how long it waits before ending the process.
INTERRUPT_GRACE_S = 5.0


#: What a writer that stops at the reserve did, and what to do (``kgagent play``'s words).
STOPPED = (
    "stopped before the disk fills (everything committed is kept). Free some space, or "
    "move the memory, and run again"
)


class DiskSpaceError(MemoryStoreError):
    """The memory's file system has less free space than the reserve (plus what a copy
    about to begin needs). ``free``, ``reserve`` and ``extra`` are the figures, so a
    caller whose guard watched an internal folder can say it again in its own words
    (:meth:`reworded`)."""

    def __init__(
        self,
        where: Path | str,
        free: int,
        reserve: int,
        outcome: str = STOPPED,
        *,
        extra: int = 0,
        extra_for: str = "",
    ) -> None:
        self.where = where
        self.free = int(free)
        self.reserve = int(reserve)
        self.extra = max(0, int(extra))
        self.extra_for = extra_for
        if self.free >= self.reserve + self.extra:  # a write failed for want of room anyway
            super().__init__(
                f"the file system of {where} has no room left although {mib(self.free)} are "
                f"free (the user's quota, or the file system's inodes, are spent); {outcome}"
            )
            return
        if self.extra:
            below = (
                f"the {mib(self.reserve + self.extra)} needed ({mib(self.extra)} "
                f"{extra_for} and the {mib(self.reserve)} reserve)"
            )
        else:
            below = f"the {mib(self.reserve)} reserve"
        super().__init__(
            f"only {mib(self.free)} free on the file system of {where}, below {below}; {outcome}"
        )

    def reworded(self, where: Path | str, outcome: str) -> DiskSpaceError:
        """The same figures, naming ``where`` (the user's path) and saying ``outcome``
        (what the command did, and what to do) instead."""
        return DiskSpaceError(
            where, self.free, self.reserve, outcome, extra=self.extra, extra_for=self.extra_for
        )


#: Errors of a file system with no room left for this user (full, or the quota spent).
NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def nothing_done(command: str, done: str) -> str:
    """What a ``command`` (``import``, ``merge``) refused for space ``done`` (``wrote
    nothing``), and what to do: the end of a :class:`DiskSpaceError`'s message."""
    return (
        f"the {command} {done} there. Free some space (or {command} into a folder on a "
        "larger disk) and run again"
    )


def reserve_bytes(config: Any) -> int:
    """The reserve from ``memory.disk_reserve_mb`` when the config has it, else the default."""
    mb = getattr(getattr(config, "memory", None), "disk_reserve_mb", None)
    return DEFAULT_RESERVE_BYTES if mb is None else max(0, int(float(mb) * (1 << 20)))


def commit_timeout(config: Any) -> float:
    """``memory.commit_timeout_s`` when the config has it, else the default (0: no watchdog)."""
    s = getattr(getattr(config, "memory", None), "commit_timeout_s", None)
    return DEFAULT_COMMIT_TIMEOUT_S if s is None else max(0.0, float(s))


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer can still use on ``path``'s file system."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def mib(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB"


def require(
    where: Path | str,
    reserve: int,
    outcome: str,
    *,
    at: Path | None = None,
    extra: int = 0,
    extra_for: str = "",
) -> None:
    """Refuse (:class:`DiskSpaceError`) unless the file system of ``at`` (default
    ``where``) has ``reserve`` plus ``extra`` bytes free; the message names ``where``
    and ends with ``outcome``. A reserve of 0 turns the check off, as for
    :class:`SpaceGuard`; a folder that cannot be asked is let through (the write
    itself will say why)."""
    if reserve <= 0:
        return
    try:
        free = free_bytes(Path(at if at is not None else where))
    except OSError:
        return
    if free < reserve + max(0, extra):
        raise DiskSpaceError(where, free, reserve, outcome, extra=extra, extra_for=extra_for)


class SpaceGuard:
    """``check()`` before a commit: refuses once free space is below the reserve."""

    def __init__(self, directory: Path, reserve: int) -> None:
        self.directory = directory
        self.reserve = int(reserve)
        self._ok_until = 0.0

    def check(self) -> None:
        if self.reserve <= 0:
            return
        now = time.monotonic()
        if now < self._ok_until:
            return
        try:
            free = free_bytes(self.directory)
        except OSError:
            return  # the directory went away: the write itself will say so
        if free < self.reserve:
            self._ok_until = 0.0
            raise DiskSpaceError(self.directory, free, self.reserve)
        self._ok_until = now + RECHECK_S if free > self.reserve + SLACK_BYTES else 0.0


class Watchdog:
    """Ends the process if one armed call runs past its deadline.

    A daemon thread polls the armed deadline (arming takes an uncontended lock,
    so it costs next to nothing per query). The engines release the interpreter lock while
    they work, so the thread runs even while a commit is blocked. At the deadline
    it calls ``interrupt`` (a query can be interrupted), waits a few seconds, and
    if the call still has not returned prints one line and ends the process with
    exit status 1: the write was never acknowledged, so nothing committed is
    lost, and the next open replays the engine's log.
    """

    POLL_S = 0.25

    def __init__(self, what: str, interrupt: Any = None) -> None:
        self.what = what
        self._interrupt = interrupt
        self._armed: tuple[float, float, int] | None = None  # (deadline, seconds, sequence)
        self._seq = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def arm(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kgagent-watchdog", daemon=True)
            self._thread.start()
        with self._lock:
            self._seq += 1
            self._armed = (time.monotonic() + seconds, seconds, self._seq)

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    def close(self) -> None:
        self._closed = True
        self.disarm()

    def _run(self) -> None:
        interrupted = 0
        while not self._closed:
            time.sleep(self.POLL_S)
            with self._lock:
                armed = self._armed
                if armed is None or time.monotonic() < armed[0]:
                    continue
                _, seconds, seq = armed
                if self._interrupt is None or interrupted == seq:
                    self._expire(seconds)
                interrupted = seq
                self._armed = (time.monotonic() + INTERRUPT_GRACE_S, seconds, seq)
            try:
                self._interrupt()
            except Exception:  # noqa: BLE001 - best effort; the exit still follows
                pass

    def _expire(self, seconds: float) -> None:
        msg = (
            f"error: {self.what} did not return within {seconds:.0f} s (is the disk full, "
            "failing or a network mount gone?); ending the process. Everything committed "
            "before is kept; run `kgagent memory check` (add --repair if it reports a problem)\n"
        )
        os.write(2, msg.encode())  # not sys.stderr: its lock may be held by the stuck thread
        os._exit(1)
