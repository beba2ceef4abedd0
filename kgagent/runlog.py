"""The run log: what a run writes (reading it back: :mod:`kgagent.runlog_read`).

A run of ``kgagent play`` writes one JSONL file: a ``{"type": "run", ...}`` header
(environment, seed, encoder, brain, the effective configuration and
``log_version``), one ``{"type": "step", ...}`` line per step (a
:class:`StepRecord` plus the harness's ground truth), an ``{"type": "episode", ...}``
line where an episode ends and the program is started again, and a final
``{"type": "summary", ...}`` line (a :class:`RunSummary`). The format is
described in docs/agent.md ("Step log").

This module imports only the standard library (and :mod:`kgagent.runlog_read` only
kgagent's errors and paths besides), so reading logs (``kgagent runs``, the benchmarks,
``kgagent view``) needs neither OpenCV nor torch.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import IO, Any

#: Version of the step-log format, recorded in every header. 2: header records the
#: effective configuration and ``log_version``; episode lines.
LOG_VERSION = 2

#: Fields of a step that repeat its last execution's.
_MIRRORED = (
    "skill_id",
    "skill_name",
    "operations",
    "grounding",
    "change",
    "r_progress",
    "r_semantic",
    "r_state",
    "r_novel",
    "r_total",
    "valid_transition",
    "new_state",
)


@dataclass
class ExecutionRecord:
    """One executed skill (or augmentation attempt, or random action) within a step."""

    path: str
    from_state: str
    to_state: str
    skill_id: str | None = None
    skill_name: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    grounding: list[dict[str, Any]] = field(default_factory=list)  # per executed op
    change: float = 0.0
    new_state: bool = False
    new_screen: bool = False  # the after-screen was a configuration new in this episode
    echo: bool = False  # all its typing did was show up in a text field (no reaction)
    r_progress: float = 0.0
    r_semantic: float = 0.0
    r_state: float = 0.0
    r_novel: float = 0.0
    r_total: float = 0.0
    evaluated: bool = False
    #: the brain's judgement behind R_progress and R_semantic (``consistent``,
    #: ``progressive``, ``reason``, at most 300 characters); None: not evaluated, or the
    #: brain could not judge
    judgement: dict[str, Any] | None = None
    valid_transition: bool = False
    actions: int = 0
    error: str | None = None
    note: str = ""


@dataclass
class StepRecord:
    """What one step did; the top-level fields mirror the step's last execution."""

    step: int
    state_id: str
    path: str
    skill_id: str | None = None
    skill_name: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    grounding: list[dict[str, Any]] = field(default_factory=list)
    change: float = 0.0
    r_progress: float = 0.0
    r_semantic: float = 0.0
    r_state: float = 0.0
    r_novel: float = 0.0
    r_total: float = 0.0
    tokens: int = 0
    estimated_tokens: int = 0  # of ``tokens``, estimated (the server sent no usage)
    reasoning_tokens: int = 0  # of ``tokens``, the model's thinking (as its server says)
    cost_usd: float = 0.0
    brain_notes: list[str] = field(default_factory=list)  # answers not from the model, and why
    valid_transition: bool = False
    new_state: bool = False
    state_created: bool = False  # the observed state v_i was created this step
    executions: list[ExecutionRecord] = field(default_factory=list)
    actions: int = 0  # concrete actions sent to the program this step
    cluster_id: str | None = None
    explore_prob: float | None = None
    #: why the step took its path (kgagent/agent/decision.py): stage 1's candidates and
    #: draws, stage 2's clusters and arms, each list bounded
    decision: dict[str, Any] = field(default_factory=dict)
    skills_added: list[str] = field(default_factory=list)
    skills_pruned: list[str] = field(default_factory=list)
    skills_suspended: list[str] = field(default_factory=list)
    refined: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    #: where the step's time went, ms by part (kgagent/agent/timing.py)
    times_ms: dict[str, float] = field(default_factory=dict)
    #: times a live target's screen had changed after an action settled and before the
    #: next step or execution began (a late reaction or the program's own motion;
    #: credited to no input)
    late_changes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def take_last_execution(self) -> None:
        """The top-level fields mirror the step's last execution (paths, rewards, actions)."""
        if not self.executions:
            return
        last = self.executions[-1]
        self.path = last.path
        for name in _MIRRORED:
            setattr(self, name, getattr(last, name))
        self.actions = sum(e.actions for e in self.executions)


@dataclass
class RunSummary:
    """What a run achieved: ground truth, ERR, cost and the graph's size (Table 1–2 columns)."""

    env: str
    seed: int
    ablation: str
    steps: int
    # ground truth at the last step: the last episode's where there were several
    progression: float  # floors cleared / turns survived
    score: float  # run score / techs
    alive: bool
    err: float  # Execution-Responsive Rate: valid transitions / executed skills
    executions: int
    valid_executions: int
    actions: int  # concrete actions sent to the program
    tokens: int
    cost_usd: float
    cost_per_100_steps: float
    # the memory's graph at the end of the run (None: a run killed before its summary)
    library_size: int | None
    skills_augmented: int | None  # every skill the memory ever made, all runs
    skills_pruned: int | None
    nodes: int | None
    skill_edges: int | None
    similarity_edges: int | None
    objects: int | None = 0
    clusters: int | None = 0
    paths: dict[str, int] = field(default_factory=dict)  # steps by the path of their last execution
    # per path: [executions, valid transitions, executions that sent no input (an invoked
    # skill whose first operation did not ground; augmentation with nothing to try)]
    executions_by_path: dict[str, list[int]] = field(default_factory=dict)
    estimated_tokens: int = 0  # of ``tokens``, estimated (replies without usage)
    late_changes: int = 0  # changes found after an action had settled (step lines' sum)
    # steps | terminated | episode_limit | interrupted | budget | endpoint | error
    stopped: str = "steps"
    error: str | None = None  # stopped by an exception (endpoint, error): its one line
    episodes: int = 1
    duration_s: float = 0.0
    log_path: str | None = None
    memory_path: str | None = None
    # who answered the VLM roles, and how (None: not recorded; older logs, killed runs)
    brain: str | None = None  # vlm | offline
    brain_model: str | None = None
    brain_endpoint: str | None = None  # the base URL requests went to (a password masked)
    brain_calls: int | None = None  # role calls
    brain_requests: int | None = None  # HTTP requests, retries and steps down included
    brain_retries: int | None = None  # of the requests, sent again after a failed one ...
    brain_rate_limited: int | None = None  # ... of them after HTTP 429 ...
    brain_rate_limit_wait_s: float | None = None  # ... and the seconds waited before those
    brain_failed_calls: int | None = None  # role calls the endpoint could not answer
    brain_offline_calls: int | None = None  # answered offline: failed, paused, known, stopping
    brain_unanswered_calls: int | None = None  # no answer at all: the run stopped during them
    #: some tokens were estimated (replies without usage), so the cost is an estimate too
    cost_estimated: bool = False
    #: what a desktop run acted on (the bound window, or the region), as its header says
    target: str | None = None
    #: the run's episodes, from its episode lines (None: not known, a log without them):
    #: how many ended (the last one too when it ended at the run's last step) ...
    episodes_finished: int | None = None
    #: ... each episode's score at its end, in order (the last one's so far when it had
    #: not ended), and their sum: ``score`` is the last episode's only
    episode_scores: list[float] | None = None
    score_total: float | None = None
    #: of ``tokens``, those the model spent thinking, as its server said (0: none said)
    reasoning_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format_table(self) -> str:
        """A two-column table for people (the CLI prints it at the end of a run)."""
        rows = [
            ("environment", f"{self.env} (seed {self.seed}, {self.ablation})"),
            *([("target", self.target)] if self.target else []),
            ("steps", f"{self.steps} ({self.stopped})" + _episodes(self.episodes)),
            ("progression", f"{self.progression:g}{self._last()}"),
            ("score", f"{self.score:g}{self._last()}"),
            ("alive", ("yes" if self.alive else "no") + self._last()),
            *self._over_episodes(),
            ("ERR", _err(self.err, self.valid_executions, self.executions)),
            ("actions", str(self.actions)),
            ("paths", ", ".join(f"{k} {v}" for k, v in sorted(self.paths.items())) or "-"),
            ("executions", _by_path(self.executions_by_path)),
            ("tokens", self._tokens()),
            ("cost", self._cost()),
            ("library size", _known(self.library_size)),
            ("skills augmented", _known(self.skills_augmented, " (in the memory, all runs)")),
            ("skills pruned", _known(self.skills_pruned, " (in the memory, all runs)")),
            ("nodes", _known(self.nodes)),
            ("skill edges", _known(self.skill_edges)),
            ("similarity edges", _known(self.similarity_edges)),
            ("objects", _known(self.objects)),
            ("clusters", _known(self.clusters)),
            ("duration", f"{self.duration_s:.1f} s"),
        ]

        def at(name: str) -> int:
            return next(i for i, r in enumerate(rows) if r[0] == name)

        if self.late_changes:
            late = f"{self.late_changes} changes came after an action had settled"
            rows.insert(at("actions") + 1, ("late changes", late))
        if self.error:
            rows.insert(at("steps") + 1, ("error", self.error))
        if self.brain is not None:
            i = at("tokens")
            rows[i:i] = self._brain_rows()
        if self.log_path:
            rows.append(("step log", self.log_path))
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _last(self) -> str:
        """`` (the last episode's)`` where the run had several episodes."""
        return " (the last episode's)" if self.episodes > 1 else ""

    def _over_episodes(self) -> list[tuple[str, str]]:
        """The ``all episodes`` row of a run of several: the score summed over them, how
        many ended, and the finished ones' mean score."""
        if self.episodes <= 1 or self.score_total is None:
            return []
        scores, done = self.episode_scores or [], self.episodes_finished or 0
        text = f"score {self.score_total:g} in {self.episodes} episodes; "
        text += f"all {done} finished" if done == self.episodes else f"{done} finished"
        if done and len(scores) >= done:
            text += f" (mean score {sum(scores[:done]) / done:.4g})"
        if done < self.episodes:
            text += ", the last one unfinished"
        return [("all episodes", text)]

    def _tokens(self) -> str:
        parts = [f"{self.estimated_tokens} estimated"] if self.estimated_tokens else []
        parts += [f"{self.reasoning_tokens} thinking"] if self.reasoning_tokens else []
        return f"{self.tokens}" + (f" ({'; '.join(parts)})" if parts else "")

    def _cost(self) -> str:
        estimated = self.cost_estimated or self.estimated_tokens > 0
        what = ", estimated: replies without token counts" if estimated else ""
        return f"${self.cost_usd:.4f} (${self.cost_per_100_steps:.4f} / 100 steps{what})"

    def _brain_rows(self) -> list[tuple[str, str]]:
        """``brain`` and ``role calls`` rows; a figure the log lacks is shown as ``-``."""
        who = str(self.brain)
        if self.brain_model:
            who += f": model {self.brain_model}"
        if self.brain_endpoint:
            who += f" at {self.brain_endpoint}"
        calls = _known(self.brain_calls)
        if self.brain == "offline":
            return [("brain", who), ("role calls", f"{calls} (answered offline, no requests)")]
        figures = (
            f"{calls}: {_plural(self.brain_requests, 'request')}{self._retried()}, "
            f"{_known(self.brain_failed_calls)} failed, "
            f"{_known(self.brain_offline_calls)} answered offline"
        )
        if n := self.brain_unanswered_calls:
            figures += f", {n} unanswered (the run stopped during {'it' if n == 1 else 'them'})"
        return [("brain", who), ("role calls", figures)]

    def _retried(self) -> str:
        """`` (4 retried after HTTP 429, 4.0 s waited)``: the requests that were retries."""
        retries, limited = self.brain_retries or 0, self.brain_rate_limited or 0
        if not retries:
            return ""
        waited = f"{self.brain_rate_limit_wait_s or 0.0:.1f} s waited"
        if limited == retries:
            return f" ({retries} retried after HTTP 429, {waited})"
        if limited:
            return f" ({retries} retried, {limited} of them after HTTP 429, {waited})"
        return f" ({retries} retried)"


def _known(n: int | None, unit: str = "") -> str:
    """A graph figure of the summary; ``-`` where the run ended before it was counted."""
    return "-" if n is None else f"{n}{unit}"


def _plural(n: int | None, noun: str) -> str:
    """``1 request``, ``2 requests``, ``- requests`` (not counted)."""
    return f"{_known(n)} {noun}" + ("" if n == 1 else "s")


def _by_path(by_path: dict[str, list[int]]) -> str:
    """``hq 277 (87% valid, 13 sent nothing), ...`` for the summary table."""
    parts = []
    for path, (n, valid, nothing) in sorted(by_path.items()):
        notes = [f"{valid / n:.0%} valid"] if n else []
        if nothing:
            notes.append(f"{nothing} sent nothing")
        parts.append(f"{path} {n} ({', '.join(notes)})" if notes else f"{path} {n}")
    return ", ".join(parts) or "-"


def executions_by_path(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per path: [executions, valid transitions, executions that sent no input]."""
    by_path: dict[str, list[int]] = {}
    for r in records:
        for e in r.get("executions", []):
            row = by_path.setdefault(str(e.get("path", "?")), [0, 0, 0])
            row[0] += 1
            row[1] += bool(e.get("valid_transition"))
            row[2] += e.get("actions", 0) == 0
    return by_path


def summarise(
    records: list[dict[str, Any]],
    *,
    env: str,
    seed: int,
    ablation: str,
    stats: dict[str, int] | None,
    truth: dict[str, Any],
    stopped: str,
    duration_s: float,
    brain: dict[str, Any] | None = None,
    ends: list[dict[str, Any]] | None = None,
    episodes: int = 1,
) -> RunSummary:
    """Build a summary from step-log dicts (shared by the runner and `kgagent runs show`).
    ``stats``: the memory's graph at the end (``GraphStats``); None when not known (a run
    killed before its summary line): its figures are then None. ``brain``: the brain's
    ``figures()`` (kind, model, endpoint, calls, requests, retries, rate_limited,
    rate_limit_wait_s, failed_calls, offline_calls, unanswered_calls); None when not
    known: the brain fields are then None. ``ends``: the run's episode lines, in order,
    and ``episodes`` how many it played (one more than the lines when the last had not
    ended by one); None: not known, the figures over the episodes are then None.
    ``truth`` is the last step's, the last episode's."""

    def graph(name: str) -> int | None:
        return None if stats is None else int(stats.get(name, 0))

    executions = [e for r in records for e in r.get("executions", [])]
    n_exec = len(executions)
    valid = sum(1 for e in executions if e.get("valid_transition"))
    steps = len(records)
    cost = float(sum(r.get("cost_usd") or 0.0 for r in records))
    estimated = int(sum(r.get("estimated_tokens") or 0 for r in records))
    b = brain or {}
    return RunSummary(
        env=env,
        seed=seed,
        ablation=ablation,
        steps=steps,
        progression=float(truth.get("progression", 0.0)),
        score=float(truth.get("score", 0.0)),
        alive=bool(truth.get("alive", True)),
        err=valid / n_exec if n_exec else 0.0,
        executions=n_exec,
        valid_executions=valid,
        actions=int(sum(r.get("actions") or 0 for r in records)),
        tokens=int(sum(r.get("tokens") or 0 for r in records)),
        estimated_tokens=estimated,
        reasoning_tokens=int(sum(r.get("reasoning_tokens") or 0 for r in records)),
        cost_estimated=estimated > 0,
        cost_usd=cost,
        cost_per_100_steps=100.0 * cost / steps if steps else 0.0,
        library_size=graph("library_size"),
        skills_augmented=graph("skills_augmented"),
        skills_pruned=graph("skills_pruned"),
        nodes=graph("nodes"),
        skill_edges=graph("skill_edges"),
        similarity_edges=graph("similarity_edges"),
        objects=graph("objects"),
        clusters=graph("clusters"),
        paths=dict(Counter(r.get("path", "idle") for r in records)),
        executions_by_path=executions_by_path(records),
        late_changes=sum(int(r.get("late_changes", 0)) for r in records),
        stopped=stopped,
        duration_s=duration_s,
        brain=b.get("kind"),
        brain_model=b.get("model"),
        brain_endpoint=b.get("endpoint"),
        brain_calls=b.get("calls"),
        brain_requests=b.get("requests"),
        brain_retries=b.get("retries"),
        brain_rate_limited=b.get("rate_limited"),
        brain_rate_limit_wait_s=b.get("rate_limit_wait_s"),
        brain_failed_calls=b.get("failed_calls"),
        brain_offline_calls=b.get("offline_calls"),
        brain_unanswered_calls=b.get("unanswered_calls"),
        episodes=episodes,
        **_over_episodes(ends, episodes, truth, stopped),
    )


#: ``stopped`` of a run whose last step ended its episode (and ``reason`` of such an episode)
_ENDED = ("terminated", "truncated", "episode_limit")


def _over_episodes(
    ends: list[dict[str, Any]] | None, episodes: int, truth: dict[str, Any], stopped: str
) -> dict[str, Any]:
    """``episodes_finished``, ``episode_scores`` and ``score_total`` from the episode
    lines (their ``truth``) and the last step's ground truth, for the last episode when
    it has no line; empty when the lines lack the ground truth (logs before it)."""
    if ends is None or any(not isinstance(e.get("truth"), dict) for e in ends):
        return {}
    scores = [float(e["truth"].get("score", 0.0)) for e in ends]
    finished = len(ends)
    if episodes > len(ends):  # the last episode has no line: it had not ended by one
        scores.append(float(truth.get("score", 0.0)))
        finished += stopped in _ENDED  # ... or it ended at the run's last step
    return {
        "episodes_finished": finished,
        "episode_scores": scores,
        "score_total": float(sum(scores)),
    }


class RunLogWriter:
    """Appends the lines of one run log; every line is flushed, so a killed run keeps its steps."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh

    def write(self, kind: str, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps({"type": kind, **record}, default=_json_default) + "\n")
        self._fh.flush()


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):  # numpy scalars and arrays, without importing numpy
        return o.tolist()
    if isinstance(o, tuple | set):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _episodes(n: int | None) -> str:
    """The steps' episodes, when there was more than one (a program started again)."""
    return f" in {n} episodes" if n and n > 1 else ""


def _err(err: float, valid: int, executions: int) -> str:
    """ERR with its fraction; undefined (``-``) without executions."""
    if not executions:
        return "- (no executions)"
    return f"{err:.3f} ({valid}/{executions} executions)"
