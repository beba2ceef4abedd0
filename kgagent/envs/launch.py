"""Start and stop the programs a desktop run needs: the program itself and, when there
is no display, a private Xvfb.

Why this shape: the agent must be able to learn a program from nothing but a command
line, on a machine with no screen, and leave nothing running behind it. Every child
gets its own process group (its own session), so that stopping it reaches the
processes it started too, and Ctrl-C in a terminal reaches kgagent alone, which then
stops the program in its own time. Stopping is SIGTERM to the group, then SIGKILL
after a timeout.

Safety nets, for when the normal ``close()`` never runs:

* a registry of the live groups, killed by an ``atexit`` handler;
* while any group is live, SIGTERM to kgagent (when it still has Python's default
  handler) becomes ``SystemExit(143)``, so that ``finally`` blocks, and ``close()``
  with them, run before the process exits;
* each child asks for ``PR_SET_PDEATHSIG`` (Linux) before it becomes the program: the
  kernel sends it SIGTERM when the thread that started it ends, even if kgagent is
  killed with SIGKILL. (So a program must be launched from a thread that outlives it:
  the main thread or the runner's.) That reaches the child alone, not what it started
  (``sh -c 'xclock & wait'``: the xclock), so
* each group has a *watcher*: a small Python process in a session of its own, holding
  the read end of a pipe whose write end only kgagent holds. When kgagent ends, however
  it ends, the kernel closes that end; the watcher reads EOF and stops the group as
  :func:`stop_group` does (SIGTERM, SIGKILL after the timeout). It exits as soon as the
  group is empty, and runs nothing of the program's.
"""

from __future__ import annotations

import atexit
import collections
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from kgagent.envs.xwindows import Window, listed
from kgagent.errors import ConfigError, EnvironmentError_

# ---------------------------------------------------------------- safety nets
_LIVE: dict[int, subprocess.Popen[bytes]] = {}  # process group id -> its leader
_LIVE_LOCK = threading.Lock()
_SIGTERM_OLD: Any = None


def _on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _register(proc: subprocess.Popen[bytes]) -> None:
    global _SIGTERM_OLD
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
        if (
            _SIGTERM_OLD is None
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            _SIGTERM_OLD = signal.signal(signal.SIGTERM, _on_sigterm)


def _unregister(pgid: int) -> None:
    global _SIGTERM_OLD
    with _LIVE_LOCK:
        _LIVE.pop(pgid, None)
        if (
            not _LIVE
            and _SIGTERM_OLD is not None
            and threading.current_thread() is threading.main_thread()
        ):
            if signal.getsignal(signal.SIGTERM) is _on_sigterm:
                signal.signal(signal.SIGTERM, _SIGTERM_OLD)
            _SIGTERM_OLD = None


def live_groups() -> list[int]:
    """Process groups started here and not yet stopped (for tests and diagnostics)."""
    with _LIVE_LOCK:
        return list(_LIVE)


@atexit.register
def _kill_all() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        stop_group(proc, timeout_s=1.0)


# The child sets PR_SET_PDEATHSIG itself and then becomes the program (execvp), so no
# Python code runs between fork and exec in kgagent's process: no preexec_fn, whose
# fork would run the fork handlers of every threaded library loaded (LanceDB warns).
_TRAMPOLINE = """import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(143)  # kgagent is gone already
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as e:
    sys.stderr.write(f"kgagent: cannot run {sys.argv[2]}: {e.strerror}\\n")
    sys.exit(127)
"""


# The watcher of one process group (see the module's docstring): argv is the group's id and
# the grace in seconds between SIGTERM and SIGKILL; stdin is the pipe from kgagent.
_WATCHER = """import os, select, signal, sys, time
pgid, grace = int(sys.argv[1]), float(sys.argv[2])
def alive():
    try:
        os.killpg(pgid, 0)
    except OSError:  # empty; or, its id taken by another user's group: not ours
        return False
    return True
while alive():
    if select.select([0], [], [], 0.5)[0] and not os.read(0, 64):
        break  # EOF: kgagent has gone (or stopped the group itself)
else:
    sys.exit(0)
for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        sys.exit(0)
    end = time.monotonic() + wait
    while alive() and time.monotonic() < end:
        time.sleep(0.05)
"""
_WATCHERS: dict[int, tuple[int, subprocess.Popen[bytes]]] = {}  # group id -> (fd, watcher)


def _watch(pgid: int, grace_s: float) -> None:
    """Start the watcher that stops group ``pgid`` when kgagent ends without stopping it.

    The pipe's ends are not inheritable (``os.pipe``), so no other child holds the write
    end open; the watcher gets the read end as its stdin, a session of its own (Ctrl-C
    and a signal to kgagent's group miss it) and ``/`` as its directory."""
    r, w = os.pipe()
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHER, str(pgid), f"{grace_s:g}"],
            stdin=r,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd="/",
        )
    except OSError:
        os.close(w)  # no watcher: PR_SET_PDEATHSIG and the atexit handler remain
        return
    finally:
        os.close(r)
    with _LIVE_LOCK:
        _WATCHERS[pgid] = (w, watcher)


def _unwatch(pgid: int) -> None:
    """The group is stopped: let its watcher go (EOF, then it finds the group empty)."""
    with _LIVE_LOCK:
        fd, watcher = _WATCHERS.pop(pgid, (-1, None))
    if watcher is None:
        return
    os.close(fd)
    try:
        watcher.wait(2.0)
    except subprocess.TimeoutExpired:
        pass  # reaped by a later Popen (subprocess's own clean-up)


def stop_group(proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """SIGTERM to the process's group, SIGKILL after ``timeout_s``; returns its exit code."""
    pgid = proc.pid  # started with start_new_session: the leader's pid is the group's id
    with _LIVE_LOCK:
        live = pgid in _LIVE
    if not live:  # stopped before: its group id may belong to someone else by now
        return proc.poll()
    if proc.poll() is None:
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
    # the leader is gone; processes it left in its group go too
    _signal_group(pgid, signal.SIGKILL)
    _unregister(pgid)
    _unwatch(pgid)
    return proc.returncode


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


#: where systems put programs that a user's PATH may lack (Debian's games, snaps)
OFF_PATH_DIRS = ("/usr/games", "/usr/local/games", "/snap/bin", "/usr/sbin", "/sbin")


def _not_found(argv: list[str]) -> EnvironmentError_:
    name = argv[0]
    found = [
        f"{d}/{name}"
        for d in OFF_PATH_DIRS
        if "/" not in name and shutil.which(name, path=d) is not None
    ]
    hint = (
        f" on PATH (there is {found[0]}: give that path, or add {Path(found[0]).parent} to PATH)"
        if found
        else ""
    )
    return EnvironmentError_(f"cannot start {shlex.join(argv)!r}: {name} not found{hint}")


def child_environ(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a started program gets: ``env`` (default: this process's) less
    what OpenCV's import added to this process for itself. The ``opencv-python`` wheel
    points ``QT_QPA_PLATFORM_PLUGIN_PATH`` and ``QT_QPA_FONTDIR`` at the Qt it bundles and
    puts its libraries first on ``LD_LIBRARY_PATH``; a Qt program started with them
    aborts ("Could not load the Qt platform plugin "xcb"": KDE's kcalc). Values of the
    user's own are kept."""
    out = dict(os.environ if env is None else env)
    cv2 = sys.modules.get("cv2")
    where = getattr(cv2, "__file__", None)
    if not where:
        return out
    root = os.path.dirname(os.path.abspath(where)) + os.sep
    for name in ("QT_QPA_PLATFORM_PLUGIN_PATH", "QT_QPA_FONTDIR"):
        if out.get(name, "").startswith(root):
            del out[name]
    if "LD_LIBRARY_PATH" in out:  # cv2 made it "its dirs:" + what it was
        kept = ":".join(p for p in out["LD_LIBRARY_PATH"].split(":") if not p.startswith(root))
        if kept:
            out["LD_LIBRARY_PATH"] = kept
        else:
            del out["LD_LIBRARY_PATH"]
    return out


#: Each toolkit's own switch to draw on the X display it is given, and the session type
#: some of them read to choose (GTK, Qt, SDL 1.2/2 and 3, Firefox, Electron). In a
#: Wayland session (GNOME's and KDE's default) a program started with the session's
#: environment opens its window on the Wayland desktop, even when told an X display: the
#: agent, which sees and drives X windows only, would wait for a window that never comes,
#: and the program would be on the user's screen instead of the private one.
X11_TOOLKITS: dict[str, str] = {
    "GDK_BACKEND": "x11",
    "QT_QPA_PLATFORM": "xcb",
    "SDL_VIDEODRIVER": "x11",
    "SDL_VIDEO_DRIVER": "x11",
    "MOZ_ENABLE_WAYLAND": "0",
    "ELECTRON_OZONE_PLATFORM_HINT": "x11",
    "XDG_SESSION_TYPE": "x11",
}


def on_x_display(display: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a program started on X display ``display``: ``env`` (default:
    this process's) with ``DISPLAY`` set, the toolkits told to use it
    (:data:`X11_TOOLKITS`, over any value of the user's: one naming another backend, or
    an off-screen one, hides the window from the agent), and without ``WAYLAND_DISPLAY``
    (a program that speaks only Wayland then says so at start-up, which the agent quotes)."""
    out = dict(os.environ if env is None else env)
    out.pop("WAYLAND_DISPLAY", None)
    out.update(X11_TOOLKITS, DISPLAY=display)
    return out


def _spawn(argv: list[str], grace_s: float = 5.0, **kw: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a group of its own, registered and watched; ``grace_s``: the
    watcher's wait between SIGTERM and SIGKILL."""
    if shutil.which(argv[0]) is None:
        raise _not_found(argv)
    kw["env"] = child_environ(kw.get("env"))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _TRAMPOLINE, str(os.getpid()), *argv],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **kw,
        )
    except OSError as e:
        raise EnvironmentError_(f"cannot start {shlex.join(argv)!r}: {e.strerror}") from None
    _register(proc)
    _watch(proc.pid, grace_s)
    return proc


# ---------------------------------------------------------------- Xvfb
def private_display_wanted(display: str | None, launch: str | None) -> bool:
    """Whether a run starts a private Xvfb: ``display="new"``, or a program to launch and
    no display named at all (neither ``display`` nor ``$DISPLAY``)."""
    return display == "new" or (display is None and not os.environ.get("DISPLAY") and bool(launch))


def choose_display(
    display: str | None, launch: str | None, size: tuple[int, int]
) -> tuple[str, PrivateX | None]:
    """The X display a desktop run uses, and the private Xvfb started for it (None: the
    one named, or ``$DISPLAY``); one line when there is none to use."""
    if private_display_wanted(display, launch):
        x = PrivateX(size)
        return x.display, x
    disp = display or os.environ.get("DISPLAY")
    if not disp:
        raise EnvironmentError_(
            "no X display: DISPLAY is not set; start one (e.g. `Xvfb :99 &`) and export "
            "DISPLAY=:99, or launch the program (desktop.launch) to get a private Xvfb"
        )
    return disp, None


class PrivateX:
    """A private Xvfb on a free display number, stopped by :meth:`stop`."""

    def __init__(self, size: tuple[int, int] = (1280, 800), timeout_s: float = 10.0) -> None:
        if shutil.which("Xvfb") is None:
            raise EnvironmentError_(
                "no X display and no Xvfb to start one: install it (apt-get install xvfb) "
                "or set DISPLAY"
            )
        w, h = (int(v) for v in size)
        if w < 64 or h < 64:
            raise EnvironmentError_(
                f"the private display's size must be at least 64x64, not {w}x{h}"
            )
        self.size = (w, h)
        r, wfd = os.pipe()
        try:
            # -displayfd: Xvfb picks a free display number itself and writes it here;
            # -noreset: without it the server resets whenever its last client leaves and
            # refuses connections meanwhile (kgagent's probe leaves before the program comes)
            argv = ["Xvfb", "-displayfd", str(wfd), "-screen", "0", f"{w}x{h}x24"]
            self.proc = _spawn(
                [*argv, "-nolisten", "tcp", "-noreset"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(wfd,),
                grace_s=2.0,
            )
            os.close(wfd)
            wfd = -1
            number = self._read_number(r, timeout_s)
        finally:
            os.close(r)
            if wfd >= 0:
                os.close(wfd)
        self.display = f":{number}"

    @property
    def where(self) -> str:
        """The display in words, for messages: its number alone would read as the user's."""
        return f"a private Xvfb ({self.display})"

    def _read_number(self, fd: int, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                code = stop_group(self.proc, 1.0)
                raise EnvironmentError_(
                    f"Xvfb did not start within {timeout_s:g} s (exit code {code})"
                )
            buf += chunk
        return buf.decode().strip()

    def stop(self) -> None:
        stop_group(self.proc, timeout_s=2.0)


# ---------------------------------------------------------------- programs
def program_argv(cmd: str | list[str]) -> list[str]:
    """The command as an argv (no shell). A leading ``python``/``python3`` is the Python
    kgagent runs under, so that ``python -m crafter.run_gui`` finds the same packages."""
    try:
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    except ValueError as e:  # an unbalanced quote
        raise ConfigError(f"desktop.launch: cannot split the command ({e}): {cmd}") from None
    if not argv:
        raise EnvironmentError_("the program to launch is empty; give a command, e.g. xcalc")
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


def default_program_log() -> Path:
    """Where a launched program's output goes when the caller names no file."""
    base = Path(tempfile.gettempdir()) / f"kgagent-{os.getuid()}"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.program.log"


class Program:
    """A command started as a child in its own process group, its output in a log file."""

    def __init__(
        self,
        cmd: str | list[str],
        display: str,
        log_path: str | Path,
        stop_timeout_s: float = 5.0,
        where: str | None = None,
    ) -> None:
        """``where``: the display in words (:attr:`PrivateX.where`); default: its name."""
        self.argv = program_argv(cmd)
        self.display = display
        self.where = where or display
        self.log_path = Path(log_path).expanduser()
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.endings: dict[int, str] = {}  # how each start ended, once seen (:meth:`seen_end`)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def start(self) -> None:
        """Start the program (stopping a previous run of it first)."""
        self.stop()
        self.starts += 1
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log: IO[bytes] = self.log_path.open("ab")
        except OSError as e:
            raise EnvironmentError_(
                f"cannot write the program log {self.log_path}: {e.strerror}"
            ) from None
        with log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            log.write(
                f"--- kgagent: start {self.starts} of {self.command} on {self.display} at {stamp}\n".encode()
            )
            log.flush()
            env = on_x_display(self.display)
            self.proc = _spawn(
                self.argv,
                grace_s=self.stop_timeout_s,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def exit_code(self) -> int | None:
        """The exit code once it has exited (negative: killed by that signal)."""
        return None if self.proc is None else self.proc.poll()

    @property
    def ending(self) -> str:
        """How it ended, in words: "exited with code 3", "was killed by SIGSEGV"."""
        code = self.exit_code
        if code is None:
            return "is running"
        if code >= 0:
            return f"exited with code {code}"
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"

    def seen_end(self) -> None:
        """Its user saw it end: remember how (once per start)."""
        if self.proc is not None and not self.running:
            self.endings[self.starts] = self.ending

    def endings_note(self) -> str | None:
        """One line on how it ended during a run (counted per start), or None."""
        if not self.endings:
            return None
        n = len(self.endings)
        hows = collections.Counter(self.endings.values()).most_common()
        return (
            f"the program ended {'once' if n == 1 else f'{n} times'} during the run: "
            + ", ".join(f"{how} ×{k}" for how, k in hows)
            + f"; its output is in {self.log_path}"
        )

    def no_window(self, timeout_s: float, others: Sequence[Window] = (), query: str = "") -> str:
        """The error when it runs and shows no window within ``timeout_s``; ``others``: the
        windows that appeared meanwhile, none of them the program's that ``query`` (the
        desktop.window setting) names."""
        which = f" matching {query!r} (desktop.window)" if query else ""
        own = [w for w in others if w.pid is not None and self.owns(w.pid)]
        foreign = [w for w in others if w not in own]
        seen = ""
        if own:
            seen += f"; its windows: {listed(own, 4)}"
        if foreign:
            seen += (
                f"; windows of other processes appeared meanwhile: {listed(foreign, 4)} (the "
                "program may run in a session of its own: bind it with --window pid:N)"
            )
        return (
            f"no window of {self.command!r}{which} appeared on {self.where} within "
            f"{timeout_s:g} s (desktop.launch_timeout_s){seen}; its output is in {self.log_path}"
        )

    def handed_on(self, others: Sequence[Window]) -> str:
        """The error when the command ended with code 0 at start-up and windows of other
        processes appeared: it handed the program on (``setsid``, a launcher), so kgagent
        cannot stop what it started, and a retry would start another copy."""
        return (
            f"{self.command!r} exited with code 0 at start-up and windows of another process "
            f"appeared: {listed(others, 4)}. The command handed the program on, so kgagent "
            "cannot stop it or start it again; it is still running. Start the program "
            f"yourself and bind it with --window pid:N; its output is in {self.log_path}"
        )

    def start_up_failure(self, times: int) -> str:
        """The error when its latest ``times`` starts all ended before it took an input,
        with the last lines of its output (a program's reason often takes more than one).
        Exit code 0 is no crash: the command handed the program on and ended."""
        last = self.tail(3)
        handed_on = (
            " (it may start the program in the background and exit, or hand over to an "
            "instance already running: start the program yourself and use --window)"
            if self.exit_code == 0
            else ""
        )
        return (
            f"{self.command!r} {self.ending} at start-up {times} times in a row{handed_on}; "
            f"its output is in {self.log_path}"
            + (f" (its last words: {last[:400]})" if last else "")
        )

    def owns(self, pid: int) -> bool:
        """Whether ``pid`` is the program or a process in its group."""
        if self.proc is None:
            return False
        if pid == self.proc.pid:
            return True
        try:
            return os.getpgid(pid) == self.proc.pid
        except (ProcessLookupError, PermissionError):
            return False

    def wait_exit(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` for it to exit; its exit code, or None if still running."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> int | None:
        """Stop it (and its group); its exit code. A no-op when it is not running."""
        if self.proc is None:
            return None
        return stop_group(self.proc, self.stop_timeout_s)

    def tail(self, lines: int = 1) -> str:
        """The last lines its latest start wrote to its log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        starts = [i for i, t in enumerate(text) if t.startswith("--- kgagent: start")]
        said = [t.strip() for t in text[starts[-1] + 1 if starts else 0 :] if t.strip()]
        return " | ".join(said[-lines:])
