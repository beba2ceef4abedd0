"""Reading step logs: their lines, their episodes, the globs that name them, and the
note a run prints when the previous run on its memory left no summary line."""

from __future__ import annotations

import errno
import glob
import json
import os
import stat
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from kgagent.errors import ConfigError
from kgagent.paths import shell_word


def read_episodes(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """(episode lines, episodes played) of a step log, for a summary rebuilt from it: one
    episode more than the lines when step lines follow the last one (or there is none).
    A line that is not JSON is left to :func:`read_log` to report."""
    ends: list[dict[str, Any]] = []
    steps_after = 0
    with Path(path).open(encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if raw.startswith('{"type": "episode"'):
                try:
                    ends.append(json.loads(raw))
                except json.JSONDecodeError:
                    continue
                steps_after = 0
            elif raw.startswith(_STEP_LINE):
                steps_after += 1
    return ends, len(ends) + (steps_after > 0 or not ends)


def brain_of_header(header: dict[str, Any]) -> dict[str, Any] | None:
    """What a step log's header says of its brain (kind; a VLM's model and configured base
    URL), for a summary rebuilt from the step lines; its call counts are not known."""
    kind = header.get("brain")
    if kind not in ("vlm", "offline"):
        return None
    config = header.get("config")
    cfg = config.get("brain") if isinstance(config, dict) else None
    if kind == "offline" or not isinstance(cfg, dict):
        return {"kind": kind}
    return {"kind": kind, "model": cfg.get("model"), "endpoint": cfg.get("base_url")}


def read_log(
    path: str | Path, *, plain: bool = False
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict | None]:
    """(run header, step lines, summary line) of a JSONL step log. ``plain``: only a
    regular file, itself (the view: a link swapped in after its check is not followed)."""
    header, steps, summary = None, [], None
    p = Path(path)
    try:
        lines = (_read_plain(p) if plain else p.read_bytes()).decode("utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(f"no step log at {p}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p} is not UTF-8 text; is this a kgagent step log?") from None
    except OSError as e:
        raise ConfigError(f"cannot read the step log {p}: {e.strerror or e}") from None
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except json.JSONDecodeError:
            if i == len(lines):  # a run killed mid-write: ignore the torn last line
                break
            raise ConfigError(f"{p}:{i} is not JSON; is this a kgagent step log?") from None
        if not isinstance(d, dict):
            raise ConfigError(f"{p}:{i} is not a JSON object; is this a kgagent step log?")
        t = d.get("type")
        if t == "run":
            header = d
        elif t == "step":
            steps.append(d)
        elif t == "summary":
            summary = d
    if header is None and not steps and summary is None:
        raise ConfigError(f"{p} holds no kgagent step log lines")
    return header, steps, summary


def _read_plain(p: Path) -> bytes:
    """The bytes of ``p`` if it is a regular file and no symbolic link (one open, so no
    swap between a check and the read); a FIFO does not block the open."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(p, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ConfigError(f"{p} is a symbolic link, not a step log") from None
        raise
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{p} is not a regular file, not a step log")
        return f.read()


def step_logs(patterns: Iterable[str]) -> list[str]:
    """The files the globs ``patterns`` match, sorted, each once; a :class:`ConfigError`
    when none matches (a mistyped folder is one line, not an empty report)."""
    patterns = list(patterns)
    files = sorted({f for pattern in patterns for f in glob.glob(pattern)})
    if not files:
        raise ConfigError(f"no step log matches {' '.join(patterns)}")
    return files


#: how a step line and a summary line begin (``RunLogWriter`` writes ``type`` first)
_STEP_LINE, _SUMMARY_LINE = '{"type": "step"', '{"type": "summary"'


def unfinished_run_note(
    folder: str | Path, memory: str | Path, states: Callable[[], set[str]] | None = None
) -> str | None:
    """The line a run prints when it starts, if the previous run on ``memory`` ended
    without its summary line; None when it has one (or there is none).

    The summary is written however a run ends, an error or Ctrl-C included, so a log
    without one was left by a process that was killed (SIGKILL, out of memory, the
    machine stopped) or could not write it. The caller holds the memory's writer lock,
    so that run is not still going on. What a kill loses is docs/reliability.md's: the
    steps a log holds were committed before their lines were written, and are kept.
    ``folder``: where the run writes its step log (the memory's ``runs/``, or
    ``run.log_dir``, where only the logs of ``memory`` count). ``states``: the memory's
    state ids, asked only for such a log: when states its steps name are not among them
    (a memory put back from a copy older than its log, a copy without ``graph.db.wal``),
    the note says that what those steps learned is gone instead of that it was kept.
    """
    from kgagent.rounds import log_order

    folder, memory = Path(folder), Path(memory)
    own = folder.resolve() == (memory / "runs").resolve()
    for path in reversed(log_order(folder.glob("*.jsonl"))):
        seen = _log_outline(path)
        if seen is None:
            continue
        header, steps, summary = seen
        if not own and str(header.get("memory")) != str(memory):
            continue  # another memory's run, in a shared log folder
        if summary:
            return None
        show = f"{shell_word(path.name)} --memory {shell_word(memory)}" if own else shell_word(path)
        named = _logged_states(path) if states is not None and steps else set()
        lost = len(named - states()) if named and states is not None else 0
        shown = path if not own else Path(path.name)
        return _unfinished_line(shown, header, steps, path, show, lost, len(named))
    return None


def _logged_states(path: Path) -> set[str]:
    """The state ids a step log's complete step lines name (where a step began and where
    each of its executions went)."""
    named: set[str] = set()
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not (line.endswith("\n") and line.startswith(_STEP_LINE)):
                    continue
                try:
                    d = json.loads(line)
                except json.JSONDecodeError:
                    continue
                named.add(d.get("state_id"))
                for e in d.get("executions") or []:
                    if isinstance(e, dict):
                        named.update((e.get("from_state"), e.get("to_state")))
    except OSError:
        return set()
    return {s for s in named if isinstance(s, str) and s}


def _log_outline(path: Path) -> tuple[dict[str, Any], int, bool] | None:
    """(header, step lines, has a summary line) of a step log, reading it line by line;
    None when it cannot be read. An empty log (killed before its header) has ``{}``. A
    line without its line feed is one a kill cut short, left out as :func:`read_log` does."""
    header: dict[str, Any] = {}
    steps, summary = 0, False
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh):
                if not line.endswith("\n"):
                    break
                if i == 0 and line.startswith('{"type": "run"'):
                    try:
                        header = json.loads(line)
                    except json.JSONDecodeError:
                        pass
                steps += line.startswith(_STEP_LINE)
                summary = summary or line.startswith(_SUMMARY_LINE)
    except OSError:
        return None
    return header, steps, summary


def _unfinished_line(
    shown: Path,
    header: dict[str, Any],
    steps: int,
    path: Path,
    show: str,
    lost: int = 0,
    named: int = 0,
) -> str:
    started = str(header.get("started") or "").replace("T", " ") or "?"
    try:
        began: datetime | None = datetime.fromisoformat(started)
    except ValueError:
        began = None
    zone = began.tzinfo if began else None  # the run's UTC offset, if it says
    try:
        written = datetime.fromtimestamp(path.stat().st_mtime, zone)  # None: local time
        last = written.strftime("%Y-%m-%d %H:%M:%S")
        if began is not None and (written - began).total_seconds() < -1:
            # touched, or copied without its times: the file's time says nothing of the run
            last = f"? (the file's time, {last}, is before its start)"
    except (OSError, ValueError, OverflowError):
        last = "?"
    if last[:10] == started[:10]:
        last = last[11:]
    did = f"after {steps} step{'' if steps == 1 else 's'}" if steps else "before its first step"
    kept = (
        "What it committed is kept (every step in its log is in the memory; a kill loses at "
        "most the step it was in)"
        if not lost
        else f"Yet {lost} of the {named} states its steps name are not in the memory: the "
        "memory is older than its log (put back from a copy, or copied without "
        "graph.db.wal), and what those steps learned is gone"
    )
    return (
        f"note: the previous run on this memory, {shown} (started {started}, last written "
        f"{last}), has no summary line: it was killed, or died, {did}. {kept}; "
        f"`kgagent runs show {show}` summarises it"
    )
