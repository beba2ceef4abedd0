"""Lines for a person at a terminal, which may have gone: a pipe whose reader left
(``kgagent play 2>&1 | head -1``), a terminal that hung up. What only tells progress
must never be the reason a run or an export stops half-way, so a write that finds
nobody reading points the outputs that lead nowhere at /dev/null and the work goes on.

Standard library only, as :mod:`kgagent.runlog`.
"""

from __future__ import annotations

import errno
import os
import select
import sys
import time
from collections.abc import Iterable
from typing import Any


def tell(line: str) -> None:
    """``line`` on standard error, for a person watching; when nobody reads it any more
    (a pipe whose reader has gone: ``kgagent play 2>&1 | head -1``; a terminal that hung
    up), the outputs that lead nowhere are pointed at /dev/null and the work goes on:
    a progress line is never the reason a run or an export stops half-way."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.EIO) or not silence_gone_outputs():
            raise


class StderrUntilGone:
    """Standard error for a progress bar (tqdm writes there itself, not through
    :func:`tell`): a write or flush that finds nobody reading any more points the outputs
    that lead nowhere at /dev/null, as :func:`tell` does, instead of raising out of the
    step that drew the bar. Everything else is the current ``sys.stderr``'s."""

    def write(self, text: str) -> int:
        try:
            return sys.stderr.write(text)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.EIO) or not silence_gone_outputs():
                raise
            return len(text)

    def flush(self) -> None:
        try:
            sys.stderr.flush()
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.EIO) or not silence_gone_outputs():
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stderr, name)


def silence_gone_outputs(fds: Iterable[int] = (1, 2)) -> list[int]:
    """Point those of standard output and error that lead nowhere any more at /dev/null:
    a terminal that hung up (closed: SIGHUP; writing there fails with EIO) or a pipe whose
    reader has gone (``kgagent play | tee``, closed with the terminal: EPIPE). What a
    stopping command still prints (its last lines, a run's summary table) then goes nowhere
    instead of ending it in a traceback before its work is put away; a run's step log keeps
    its summary. An output that still leads somewhere (a file, a live terminal or pipe) is
    left alone. Returns the descriptors pointed at /dev/null."""
    gone = []
    for fd in fds:
        try:
            poll = select.poll()
            poll.register(fd, select.POLLOUT)
            events = poll.poll(0)
        except (AttributeError, OSError, ValueError):  # closed, or no poll here
            continue
        if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events):
            gone.append(fd)
    if gone:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return []
        try:
            for fd in gone:
                os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    return gone


#: The one standard error of the bars: tqdm clears a bar before a line written to the
#: stream it draws on, which it tells by equality.
STDERR = StderrUntilGone()

#: Seconds between two plain progress lines (standard error not a terminal).
PLAIN_EVERY_S = 30.0


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def progress_bar(total: int, desc: str, unit: str) -> Any:
    """A progress bar on standard error: tqdm's on a terminal; elsewhere (a file, a pipe,
    a CI log) and on a terminal that asks for no cursor movement (``TERM=dumb``: a screen
    reader's, an editor's shell) :class:`PlainProgress`'s lines, without tqdm's carriage
    returns and block characters. Both take ``update``, ``set_postfix_str``, ``write``
    and ``close``. A tqdm that cannot draw with the ``$TQDM_*`` settings it reads from
    the environment gives plain lines too, and says so."""
    if not _isatty(sys.stderr) or os.environ.get("TERM") == "dumb":
        return PlainProgress(total, desc, unit)
    from tqdm import tqdm

    try:
        return tqdm(total=total, desc=desc, unit=unit, file=STDERR, dynamic_ncols=True)
    except Exception as e:  # noqa: BLE001 - tqdm's own settings ($TQDM_ASCII=1 divides by 0)
        tell(f"note: tqdm cannot draw a bar ({type(e).__name__}; check $TQDM_*): plain lines")
        return PlainProgress(total, desc, unit)


class PlainProgress:
    """Progress for a reader that is not a terminal: one line (``play: 40/150 steps | …``)
    at most every :data:`PLAIN_EVERY_S` seconds, and one at the end, through :func:`tell`."""

    def __init__(self, total: int, desc: str, unit: str, every_s: float = PLAIN_EVERY_S):
        self.total, self.desc, self.unit, self.every_s = total, desc, unit, every_s
        self.n = 0
        self.postfix = ""
        self._shown = ""
        self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self._last >= self.every_s:
            self._show()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def write(self, line: str, file: Any = None) -> None:
        tell(line)

    def close(self) -> None:
        if self._line() != self._shown:  # where it ended, unless that was the last line
            self._show()

    def _line(self) -> str:
        line = f"{self.desc}: {self.n}/{self.total} {self.unit}{'' if self.total == 1 else 's'}"
        return f"{line} | {self.postfix}" if self.postfix else line

    def _show(self) -> None:
        self._shown, self._last = self._line(), time.monotonic()
        tell(self._shown)
