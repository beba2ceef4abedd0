"""Per-round statistics (the papers' Table 2) from the step logs of one memory.

A *round* is one run of ``kgagent play`` that resumes the memory the previous
run left. A run's summary line holds the graph's statistics as they stand at its
end, which are totals over the memory; the papers' Table 2 mixes totals and
per-round counts, and this module reproduces exactly that mix (their Civ V
table checks: library 76 + augmented 33 - pruned 3 = library 106):

* per round, counted from the round's own step lines: ``skills_augmented``
  (``skills_added``), ``skills_pruned``, and the run's progression, score, ERR,
  tokens and cost;
* at the end of the round (totals from its summary line): ``library_size``,
  ``nodes``, ``skill_edges``, ``similarity_edges``, and what each grew by over
  the round (``nodes_added`` ...: the difference from the previous round's
  totals; similarity edges can shrink when states merge).

A round without a summary line (a run killed before it wrote one, or one still
running) has no end totals: its library size is the previous round's plus its
additions minus its prunings, the other totals are ``None`` and ``complete`` is
false. Every addition and pruning the agent makes is written to a step line, so
the step counts and the summaries' differences agree (``mismatch`` names a
column where they do not, for instance a memory whose logs were deleted or that
was merged with another between rounds).

Only the standard library is used, so ``kgagent runs`` and ``kgagent view`` read
rounds without the agent's dependencies.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from kgagent.errors import ConfigError
from kgagent.paths import shell_word
from kgagent.runlog_read import read_log
from kgagent.textsafe import CsvWriter

#: Table 2's columns in the papers' order, then the run's outcome.
TABLE2 = (
    "library_size",
    "skills_augmented",
    "skills_pruned",
    "nodes",
    "skill_edges",
    "similarity_edges",
    "progression",
    "score",
    "err",
    "cost_usd",
)

#: Column headings for people.
HEADINGS = {
    "round": "round",
    "log": "log",
    "env": "env",
    "steps": "steps",
    "library_size": "library size",
    "skills_augmented": "skills augmented",
    "skills_pruned": "skills pruned",
    "nodes": "nodes",
    "skill_edges": "skill edges",
    "similarity_edges": "similarity edges",
    "nodes_added": "+nodes",
    "skill_edges_added": "+skill edges",
    "similarity_edges_added": "+similarity edges",
    "progression": "progression",
    "score": "score",
    "err": "ERR",
    "executions": "executions",
    "tokens": "tokens",
    "cost_usd": "cost $",
    "stopped": "stopped",
}

_STAMP = re.compile(r"^(\d{8}-\d{6})")
#: How much of a step log's header line is read, at most, for its start time.
_HEADER_MAX = 1 << 20
_STARTED = re.compile(rb'"started": "([^"\\]*)"')
_TOTALS = ("library_size", "nodes", "skill_edges", "similarity_edges")


@dataclass
class Round:
    """One round: what it added and pruned, and the memory's totals at its end."""

    round: int  # 0-based, as the papers number them (Round 0, Round 1, ...)
    log: str  # the step log's file name
    env: str
    seed: int
    ablation: str
    steps: int
    stopped: str  # the summary's reason, or "incomplete" without a summary line
    complete: bool  # the run wrote its summary line
    skills_augmented: int  # this round
    skills_pruned: int  # this round
    library_size: int | None  # at the end of the round
    nodes: int | None
    skill_edges: int | None
    similarity_edges: int | None
    nodes_added: int | None = None  # growth over the round (needs the previous round's totals)
    skill_edges_added: int | None = None
    similarity_edges_added: int | None = None
    progression: float = 0.0  # ground truth at the round's last step
    score: float = 0.0
    err: float | None = None  # None: the round executed nothing
    executions: int = 0
    valid_executions: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    mismatch: list[str] = field(default_factory=list)  # columns where steps and summaries disagree

    def as_row(self) -> dict[str, Any]:
        d = asdict(self)
        d["mismatch"] = ",".join(self.mismatch)
        return d


def log_order(paths: Iterable[str | Path]) -> list[Path]:
    """Step logs in the order their runs happened.

    A run's start is its header's ``started`` where that carries its UTC offset (logs
    written since the offset was recorded): runs on one memory may be made under different
    time zones (``TZ``, a container in UTC, a laptop that travelled), and their file names
    hold the local time of each. Otherwise it is the time the file name begins with (the
    run's start, to the second), read in this machine's time zone: older logs keep their
    name order among themselves, and fall among newer ones where they would have on this
    machine. Runs on one memory cannot overlap, so within one second the file written last
    is the later run.
    """

    def key(p: Path) -> tuple[float, int, str]:
        try:
            mtime = p.stat().st_mtime_ns
        except OSError:
            mtime = 0
        return (run_start(p), mtime, p.name)

    return sorted((Path(p) for p in paths), key=key)


def run_start(path: str | Path) -> float:
    """When the run of step log ``path`` began, in seconds since the epoch (see
    :func:`log_order`); ``-inf`` when neither its header nor its name says."""
    p = Path(path)
    started = _header_start(p)
    if started is not None:
        return started
    m = _STAMP.match(p.name)
    if m:
        d = m.group(1)
        try:  # local time, as the run's process had it
            at = datetime(int(d[:4]), int(d[4:6]), int(d[6:8]), int(d[9:11]), int(d[11:13]))
            return at.replace(second=int(d[13:15])).timestamp()
        except (ValueError, OverflowError, OSError):
            pass
    return float("-inf")


def _header_start(path: Path) -> float | None:
    """The header's ``started`` as a point in time, where it has its UTC offset.

    Found in the header line's text rather than parsed from its JSON (that holds the whole
    configuration, and the view orders the logs at every refresh): in JSON text
    ``"started": "`` can only be a key, since a quote inside a string is escaped, and the
    header's own ``started`` comes before its ``config``."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(_HEADER_MAX)
    except OSError:
        return None
    m = _STARTED.search(first) if first.startswith(b'{"type": "run"') else None
    if m is None:
        return None
    try:
        at = datetime.fromisoformat(m.group(1).decode("ascii"))
    except ValueError:  # not a time, or not ASCII
        return None
    if at.tzinfo is None:
        return None  # a log written before the offset was kept: local time, as its name
    return at.timestamp()


def memory_logs(memory: str | Path) -> list[Path]:
    """The step logs in ``<memory>/runs``, oldest first (empty when there are none)."""
    folder = Path(memory) / "runs"
    return log_order(folder.glob("*.jsonl")) if folder.is_dir() else []


#: what ``stopped`` says of a run going on now (a log without its summary line yet)
RUNNING = "running"


def running_log(memory: str | Path, logs: Sequence[Path] | None = None) -> Path | None:
    """The step log of a run going on now in ``memory``: the newest log, while a process
    holds the memory's writer lock; None otherwise. (A log without its summary line is a
    running run's, or a killed one's: the lock goes with the killed process.)"""
    from kgagent.memory.lock import writer_holder

    paths = memory_logs(memory) if logs is None else list(logs)
    if not paths or writer_holder(Path(memory)) is None:
        return None
    return paths[-1]


def mark_running(rounds: list[Round], memory: str | Path, logs: Sequence[Path]) -> None:
    """The last round without a summary line says ``running`` while its run goes on,
    ``incomplete`` once it does not (a killed run)."""
    if rounds and not rounds[-1].complete:
        live = running_log(memory, logs)
        going_on = live is not None and live.name == rounds[-1].log
        rounds[-1].stopped = RUNNING if going_on else "incomplete"


def compute_rounds(
    logs: Sequence[str | Path], on_bad: Callable[[ConfigError], None] | None = None
) -> list[Round]:
    """One :class:`Round` per step log, in the order given (see :func:`log_order`).

    A file that is not a step log raises :class:`~kgagent.errors.ConfigError` (one
    line), or, with ``on_bad``, is handed to it and left out of the rounds.
    """
    parsed = []
    for path in logs:
        try:
            parsed.append((Path(path), *read_log(path)))
        except ConfigError as e:
            if on_bad is None:
                raise
            on_bad(e)
    return rounds_of(parsed)


def rounds_of(
    logs: Sequence[tuple[Path, dict[str, Any] | None, list[dict[str, Any]], dict[str, Any] | None]],
) -> list[Round]:
    """The rounds of step logs already read: ``(path, header, steps, summary)`` each, in order."""
    out: list[Round] = []
    prev: Round | None = None
    for i, (path, header, steps, summary) in enumerate(logs):
        r = _round(i, path, header or {}, steps, summary)
        _link(r, prev)
        out.append(r)
        prev = r
    return out


def memory_rounds(memory: str | Path) -> list[Round]:
    """The rounds of one memory: every step log in ``<memory>/runs``, oldest first."""
    return compute_rounds(memory_logs(memory))


def _round(
    i: int, path: Path, header: dict[str, Any], steps: list[dict[str, Any]], summary: dict | None
) -> Round:
    added = sum(len(s.get("skills_added") or []) for s in steps)
    pruned = sum(len(s.get("skills_pruned") or []) for s in steps)
    execs = [e for s in steps for e in s.get("executions") or []]
    valid = sum(1 for e in execs if e.get("valid_transition"))
    truth = (steps[-1].get("truth") or {}) if steps else {}
    sm = summary or {}
    r = Round(
        round=i,
        log=path.name,
        env=str(header.get("env", sm.get("env", "?"))),
        seed=int(header.get("seed", sm.get("seed", 0)) or 0),
        ablation=str(header.get("ablation", sm.get("ablation", "?"))),
        steps=len(steps),
        stopped=str(sm.get("stopped", "incomplete")) if summary else "incomplete",
        complete=summary is not None,
        skills_augmented=added,
        skills_pruned=pruned,
        library_size=_int(sm.get("library_size")) if summary else None,
        nodes=_int(sm.get("nodes")) if summary else None,
        skill_edges=_int(sm.get("skill_edges")) if summary else None,
        similarity_edges=_int(sm.get("similarity_edges")) if summary else None,
        progression=float(sm.get("progression", truth.get("progression", 0.0)) or 0.0),
        score=float(sm.get("score", truth.get("score", 0.0)) or 0.0),
        executions=len(execs),
        valid_executions=valid,
        err=valid / len(execs) if execs else None,  # no executions: no rate
        tokens=int(sum(s.get("tokens", 0) or 0 for s in steps)),
        cost_usd=float(sum(s.get("cost_usd", 0.0) or 0.0 for s in steps)),
    )
    return r


def _link(r: Round, prev: Round | None) -> None:
    """Fill what needs the previous round: growth, an estimated library size, cross-checks."""
    if prev is None:
        if r.complete and r.library_size is not None:
            # a memory that started empty: its first summary is the round's own growth
            base = r.library_size - r.skills_augmented + r.skills_pruned
            if base == 0:
                r.nodes_added, r.skill_edges_added = r.nodes, r.skill_edges
                r.similarity_edges_added = r.similarity_edges
        return
    if r.library_size is None and prev.library_size is not None:
        r.library_size = prev.library_size + r.skills_augmented - r.skills_pruned
    for name in ("nodes", "skill_edges", "similarity_edges"):
        now, before = getattr(r, name), getattr(prev, name)
        if now is not None and before is not None:
            setattr(r, f"{name}_added", now - before)
    if r.complete and prev.complete and r.library_size is not None:
        if prev.library_size is not None:
            expect = prev.library_size + r.skills_augmented - r.skills_pruned
            if expect != r.library_size:
                r.mismatch.append("library_size")


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def rounds_rows(rounds: Sequence[Round], columns: Sequence[str] | None = None) -> list[dict]:
    """The rounds as plain dicts (all fields, or ``columns`` after ``round`` and ``log``)."""
    rows = [r.as_row() for r in rounds]
    if columns is None:
        return rows
    keep = ["round", "log", *columns]
    return [{k: row[k] for k in keep} for row in rows]


def format_rounds(rounds: Sequence[Round], columns: Sequence[str] = TABLE2) -> str:
    """An aligned text table of Table 2 per round (what ``kgagent runs show`` prints).

    Totals a round without a summary cannot have are printed as ``-``; a note
    under the table says which rounds are incomplete.
    """
    if not rounds:
        return "no rounds (no step logs)"
    cols = ["round", *columns]
    head = [HEADINGS.get(c, c) for c in cols]
    body = [[_shown(r, c) for c in cols] for r in rounds]
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in body]
    notes = [
        f"round {r.round} ({r.log}): "
        + (
            "running; totals when it ends"
            if r.stopped == RUNNING
            else "no summary line (killed, or died)"
        )
        + (
            "; ~library size: the previous round's plus this round's additions minus its "
            "prunings, from its step lines"
            if r.library_size is not None
            else ""
        )
        + "; nodes and edges unknown (counted in the summary line)"
        for r in rounds
        if not r.complete
    ]
    notes += [
        f"round {r.round}: {', '.join(r.mismatch)} differs from the previous round's plus this "
        "round's additions and prunings (logs missing, or the memory changed between rounds)"
        for r in rounds
        if r.mismatch
    ]
    lines.append(
        "library size, nodes and edges: totals at the end of each round; skills augmented and "
        "pruned, progression, score, ERR and cost: this round only"
    )
    return "\n".join(lines + notes)


def rounds_csv(
    rounds: Sequence[Round], columns: Sequence[str] | None = None, *, spreadsheet: bool = False
) -> str:
    """The rounds as CSV with a header (all fields unless ``columns`` names some);
    ``spreadsheet``: a text cell a spreadsheet would run as a formula starts with ``'``
    (:class:`kgagent.textsafe.CsvWriter`; a log's name or a stop reason is text)."""
    rows = rounds_rows(rounds, columns)
    names = (
        list(rows[0]) if rows else ["round", "log", *(columns or [f.name for f in fields(Round)])]
    )
    buf = io.StringIO()
    w = CsvWriter(buf, spreadsheet=spreadsheet)
    w.writerow(names)
    for row in rows:
        w.writerow(["" if row[k] is None else row[k] for k in names])
    return buf.getvalue()


def _shown(r: Round, column: str) -> str:
    """A cell of the table: ``~`` before a total a round without a summary estimates."""
    cell = _cell(getattr(r, column), column)
    return f"~{cell}" if column == "library_size" and not r.complete and cell != "-" else cell


def _cell(v: Any, column: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if column == "err":
        return f"{v:.3f}"
    if column == "cost_usd":
        return f"{v:.4f}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def step_series(steps: Sequence[dict[str, Any]], library_start: int = 0) -> dict[str, list[float]]:
    """Per-step curves of one run: progression, R_total, cumulative ERR and library size.

    ``library_start`` is the library size before the run's first step (the
    previous round's); each step adds its ``skills_added`` and removes its
    ``skills_pruned``.
    """
    out: dict[str, list[float]] = {
        k: [] for k in ("step", "progression", "score", "r_total", "err", "library_size")
    }
    n = valid = 0
    lib = library_start
    for s in steps:
        execs = s.get("executions") or []
        n += len(execs)
        valid += sum(1 for e in execs if e.get("valid_transition"))
        lib += len(s.get("skills_added") or []) - len(s.get("skills_pruned") or [])
        truth = s.get("truth") or {}
        out["step"].append(int(s.get("step", len(out["step"]) + 1)))
        out["progression"].append(float(truth.get("progression", 0.0) or 0.0))
        out["score"].append(float(truth.get("score", 0.0) or 0.0))
        out["r_total"].append(float(s.get("r_total", 0.0) or 0.0))
        out["err"].append(valid / n if n else 0.0)
        out["library_size"].append(float(lib))
    return out


def library_before(rounds: Sequence[Round], index: int) -> int:
    """The library size when round ``index`` began (0 before the first round)."""
    if index <= 0:
        r = rounds[0] if rounds else None
        if r is not None and r.library_size is not None and r.complete:
            return r.library_size - r.skills_augmented + r.skills_pruned
        return 0
    prev = rounds[index - 1]
    if prev.library_size is not None:
        return prev.library_size
    return library_before(rounds, index - 1) + prev.skills_augmented - prev.skills_pruned


#: why a memory with experience can have no step logs
NO_LOGS_WHY = "an imported or merged memory has none: step logs stay where the runs were"


def require_logs(memory: str | Path) -> list[Path]:
    """The memory's step logs, or a one-line error saying how to make some."""
    logs = memory_logs(memory)
    if not logs:
        raise ConfigError(
            f"no step logs in {Path(memory) / 'runs'}; run `kgagent play --memory {shell_word(memory)}` "
            f"first ({NO_LOGS_WHY})"
        )
    return logs
