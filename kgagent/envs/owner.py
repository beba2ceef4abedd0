"""Whether the bound window still belongs to the process it was bound to.

Why: X hands a dead client's range of resource ids to the next client that connects,
so once the target's program has ended, another program's window can carry the bound
window's id; every input sent "to the target" would then go to that program. Before
each step and each input the env asks the server (the X-Resource extension) which
process made the window, and ends the run as for a closed window when that is not
the bound process any more: another PID, or the same PID number taken by a new
process (its start time, ``/proc/PID/stat``, differs), or a process that has ended.
Without the extension (or for a remote client, which has no local PID) nothing can be
asked and the check passes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kgagent.envs.xwindows import XWindows
from kgagent.errors import EnvironmentError_


def start_time(pid: int) -> int | None:
    """Process ``pid``'s start time (clock ticks since boot, ``/proc/PID/stat`` field 22);
    None when it has ended or ``/proc`` cannot tell."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # field 3 on: the name may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


@dataclass(frozen=True)
class Owner:
    """The process a window was bound to: its PID and, where ``/proc`` tells, start time."""

    pid: int
    started: int | None
    seen: bool  # whether this process could see it when bound (not: another PID namespace)

    @classmethod
    def of(cls, pid: int | None) -> Owner | None:
        return None if pid is None else cls(int(pid), start_time(pid), alive(pid))

    def ended(self) -> bool:
        """Whether the process has ended (or its PID now names another process); False
        when it could not be seen from here at all."""
        if self.started is not None:
            return start_time(self.pid) != self.started
        return self.seen and not alive(self.pid)


def owner_change(x: XWindows, wid: int, owner: Owner | None) -> str | None:
    """Why window ``wid`` is no longer the bound process's (``owner``); None when it is,
    or when the server cannot tell (no X-Resource extension, the window gone)."""
    if owner is None:
        return None
    pid = x.client_pid(wid)
    if pid is None:
        return None
    if pid != owner.pid:
        return f"its id now belongs to another program (pid {pid}, bound to pid {owner.pid})"
    if owner.ended():
        return f"its program (pid {owner.pid}) has ended"
    return None


class TargetHidden(EnvironmentError_):
    """The bound window still exists but cannot be seen (minimised, unmapped)."""


def target_gone(x: XWindows, wid: int, name: str, why: str | None) -> EnvironmentError_:
    """The one-line error for a bound window that is no longer there to act on: closed,
    hidden (:class:`TargetHidden`), or its id now another program's (``why``)."""
    line = f"the target window {name!r} (id {wid:#x}) was closed or is hidden"
    if why:
        return EnvironmentError_(f"{line}: {why}")
    return TargetHidden(line) if x.exists(wid) else EnvironmentError_(line)


def check_owner(x: XWindows, wid: int | None, owner: Owner | None, name: str) -> None:
    """Raise the closed window's error when bound window ``wid`` is no longer ``owner``'s."""
    if wid is not None and (why := owner_change(x, wid, owner)):
        raise target_gone(x, wid, name, why)
