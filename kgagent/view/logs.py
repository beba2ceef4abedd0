"""The memory's step logs as the view needs them: cached, indexed, followed as they grow.

Logs are named by their position in ``<memory>/runs`` (oldest first), never by a
path from a request; a symbolic link there (``runs`` itself, or a log) is no log of the
memory and is left out, as a link in ``blobs`` is (:func:`kgagent.view.source.read_inside`).
A log is reread only when its size or time changes, so a
page that refreshes every second while ``kgagent play`` appends costs one parse
per new step, not one per request.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgagent.errors import KGAgentError
from kgagent.rounds import (
    Round,
    library_before,
    log_order,
    mark_running,
    rounds_of,
    running_log,
    step_series,
)


@dataclass
class Log:
    """One parsed step log."""

    index: int
    path: Path
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    summary: dict[str, Any] | None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def unfinished(self) -> bool:
        """No summary line: the run is going on, or was killed (:meth:`RunLogs.live`)."""
        return self.summary is None

    @property
    def status(self) -> str:
        """How the run ended (its summary's ``stopped``), or ``incomplete`` without one."""
        return str(self.summary.get("stopped", "done")) if self.summary else "incomplete"

    def recording(self, step: int) -> Path | None:
        """The screenshot ``kgagent play --record`` saved after ``step``, if it is there.

        The folder is the one this log's own header names (``run.record``); the file
        name is built from the step number, so no request names a path.
        """
        folder = ((self.header.get("config") or {}).get("run") or {}).get("record")
        if not folder or step < 0:
            return None
        p = Path(str(folder)).expanduser()
        if not p.is_absolute():
            return None  # relative to a working directory the view cannot know
        f = p / f"step-{int(step):05d}.png"
        return f if f.is_file() else None

    def screen_size(self) -> tuple[int, int] | None:
        """The target's size in pixels when the header records it (``screen: [w, h]``)."""
        s = self.header.get("screen")
        if isinstance(s, list | tuple) and len(s) == 2:
            return int(s[0]), int(s[1])
        return None


class RunLogs:
    """The step logs of one memory, parsed once per change."""

    def __init__(self, memory: Path) -> None:
        self.memory = Path(memory)
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int], Log]] = {}
        self._rounds: tuple[tuple, list[Round]] | None = None

    def paths(self) -> list[Path]:
        """The step logs in ``<memory>/runs``, oldest first: regular files, not links."""
        folder = self.memory / "runs"
        if not _plain(folder, stat.S_ISDIR):
            return []
        return log_order(p for p in folder.glob("*.jsonl") if _plain(p, stat.S_ISREG))

    def load(self, index: int) -> Log | None:
        """Log number ``index`` (0 = oldest; -1 = newest), or None if there is none."""
        paths = self.paths()
        if not paths or not -len(paths) <= index < len(paths):
            return None
        index %= len(paths)
        return self._parse(index, paths[index])

    def live(self, log: Log) -> bool:
        """Whether ``log`` belongs to a run going on now: it has no summary line, it is
        the newest log, and a process holds the memory's writer lock. A run killed before
        its summary leaves a log like a live one's; the lock goes with its process."""
        return log.unfinished and running_log(self.memory, self.paths()) == log.path

    def all(self) -> list[Log]:
        return [self._parse(i, p) for i, p in enumerate(self.paths())]

    def _parse(self, index: int, path: Path) -> Log:
        from kgagent.runlog_read import read_log

        try:
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            key = (0, 0)
        with self._lock:
            hit = self._cache.get(path)
            if hit is not None and hit[0] == key:
                hit[1].index = index
                return hit[1]
        try:
            if not _plain(path, stat.S_ISREG):  # made a link since it was listed
                raise KGAgentError(f"{path.name} is not a regular file")
            header, steps, summary = read_log(path, plain=True)
            log = Log(index, path, header or {}, steps, summary)
        except KGAgentError as e:
            log = Log(index, path, {}, [], None, str(e))
        with self._lock:
            self._cache[path] = (key, log)
        return log

    def rounds(self) -> list[Round]:
        """Per-round Table 2 (:mod:`kgagent.rounds`), recomputed when a log changes."""
        paths = self.paths()
        sig = tuple((p.name, *_stat(p)) for p in paths)
        if self._rounds is not None and self._rounds[0] == sig:
            mark_running(self._rounds[1], self.memory, paths)
            return self._rounds[1]
        parsed = [self._parse(i, p) for i, p in enumerate(paths)]
        rounds = rounds_of(
            [(g.path, g.header, g.steps, g.summary) for g in parsed if g.error is None]
        )
        self._rounds = (sig, rounds)
        mark_running(rounds, self.memory, paths)  # the lock, not the files, says it ended
        return rounds

    def series(self, log: Log) -> dict[str, list[float]]:
        """Per-step curves of a log, its library size counted from the rounds before it."""
        rounds = self.rounds()
        names = [r.log for r in rounds]
        start = library_before(rounds, names.index(log.name)) if log.name in names else 0
        return step_series(log.steps, library_start=start)

    def run_edges(self, index: int) -> tuple[set[tuple[str, str, str]], set[str]] | None:
        """The skill edges a run executed and the states it passed through (graph filter)."""
        log = self.load(index)
        if log is None:
            return None
        edges: set[tuple[str, str, str]] = set()
        states: set[str] = set()
        for s in log.steps:
            if s.get("state_id"):
                states.add(s["state_id"])
            for e in s.get("executions") or []:
                states.update(x for x in (e.get("from_state"), e.get("to_state")) if x)
                if e.get("skill_id") and e.get("from_state") and e.get("to_state"):
                    edges.add((e["from_state"], e["to_state"], e["skill_id"]))
        return edges, states

    def skill_origins(self) -> dict[str, tuple[int, str, int]]:
        """Skill id -> (log index, log name, step) of the step that created it."""
        out: dict[str, tuple[int, str, int]] = {}
        for log in self.all():
            for s in log.steps:
                for k in s.get("skills_added") or []:
                    out.setdefault(k, (log.index, log.name, int(s.get("step", 0))))
        return out

    def state_recording(self, state_id: str) -> tuple[Log, int] | None:
        """The latest recorded screenshot of a state: a step whose last execution reached it."""
        for log in reversed(self.all()):
            folder = ((log.header.get("config") or {}).get("run") or {}).get("record")
            if not folder:
                continue
            for s in reversed(log.steps):
                execs = s.get("executions") or []
                if execs and execs[-1].get("to_state") == state_id:
                    step = int(s.get("step", 0))
                    if log.recording(step) is not None:
                        return log, step
        return None


def _plain(p: Path, kind: Any) -> bool:
    """Whether ``p`` is itself (not through a symbolic link) of ``kind`` (stat.S_ISREG...)."""
    try:
        return bool(kind(os.lstat(p).st_mode))
    except OSError:
        return False


def _stat(p: Path) -> tuple[int, int]:
    try:
        st = p.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, 0
