"""How a run stops: Ctrl-C, SIGTERM and SIGHUP, or :meth:`Runner.stop`, finish the current
step first (:class:`StopFlag`)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

from kgagent.terminal import silence_gone_outputs

Log = Callable[[str], None]


class StopFlag:
    """Ctrl-C, SIGTERM and SIGHUP set a flag instead of interrupting: the current step
    finishes first.

    A second Ctrl-C stops at once (a person at the keyboard who will not wait). SIGTERM
    and SIGHUP (the terminal was closed) only ever ask for the graceful stop, however often
    they come: a program that means "now" sends SIGKILL after it, as ``docker stop`` and
    ``timeout -k`` do. The first signal also tells the brain (``on_stop``:
    :meth:`Brain.interrupt`), which sends no new request and abandons the one in flight, so
    the step ends in seconds.

    After a closed terminal, writing to it fails (EIO; EPIPE for a pipe whose reader went
    with it): at each signal, and once more when the run ends, the outputs that lead nowhere
    any more are pointed at /dev/null (:func:`~kgagent.terminal.silence_gone_outputs`), so
    that the run's last lines and its summary table go nowhere instead of raising before
    the step log's summary line is written. A SIGHUP ignored when the run began (``nohup``)
    stays ignored.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, log: Log, on_stop: Callable[[], None] | None = None) -> None:
        self.stop = False
        #: the signal that asked for the stop (the first one)
        self.signum: int | None = None
        self._log = log
        #: told at the first signal, last (the brain: it may cut a request short by raising)
        self._on_stop = on_stop
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                old = signal.getsignal(sig)
                if sig == signal.SIGHUP and old is signal.SIG_IGN:
                    continue  # nohup: the user asked for the run to outlive the terminal
                self._old[sig] = old
                signal.signal(sig, self._handler)
        return self

    def _handler(self, signum: int, frame: Any) -> None:
        silence_gone_outputs()
        if self.stop:
            if signum == signal.SIGINT:  # a second Ctrl-C: stop now
                raise KeyboardInterrupt
            return
        self.stop, self.signum = True, signum
        what = "interrupted" if signum == signal.SIGINT else signal.Signals(signum).name
        again = " (Ctrl-C again to abort)" if signum == signal.SIGINT else ""
        try:
            self._log(f"{what}: finishing the current step, then stopping{again}")
        except (OSError, ValueError):  # an output that went after the look above
            pass
        if self._on_stop is not None:
            self._on_stop()

    def ask(self) -> None:
        """The graceful stop, asked from Python (:meth:`Runner.stop`, from any thread): as
        the first signal does, with no signal (:attr:`signum` stays None)."""
        if self.stop:
            return
        self.stop = True
        try:
            self._log("stop asked: finishing the current step, then stopping")
        except (OSError, ValueError):
            pass
        if self._on_stop is not None:
            self._on_stop()  # a brain's interrupt only sets its flag from another thread

    def __exit__(self, *exc: object) -> None:
        if self.signum is not None:
            silence_gone_outputs()  # a pipe's reader that went with the terminal meanwhile
        for sig, old in self._old.items():
            # A handler that would stop the command (the CLI's): the run is written (its
            # summary line too), so it is told, before it is put back, that a stop was
            # made here (``taken``) or that nothing is left to undo (``settle``): a signal
            # during the closing that follows does not cut it short.
            taken, settle = getattr(old, "taken", None), getattr(old, "settle", None)
            if self.signum is not None and callable(taken):
                taken(self.signum)
            elif callable(settle):
                settle()
            if old is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(sig, old)
