"""The harness around the agent: build everything from a Config, run, log, summarise.

The runner is the only place that holds the :class:`~kgagent.envs.base.Env`
and reads its ground truth (progression, score); the agent sees only the
:class:`~kgagent.envs.base.Screen`. Ground truth goes into the step log and the
summary, never back into the agent.

A run writes one JSONL file: one ``{"type": "step", ...}`` line per step and a
final ``{"type": "summary", ...}`` line (format in ``docs/agent.md``). Ctrl-C
finishes the current step and stops; memory is always closed in ``finally``.
"""

from __future__ import annotations

import copy
import json
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgagent.config import Config
from kgagent.envs.base import Env, Screen
from kgagent.errors import BudgetExceeded, ConfigError
from kgagent.paths import resolve_memory_path
from kgagent.perception.change import idle_change, visual_change

from .loop import Agent, StepRecord

Log = Callable[[str], None]


@dataclass
class RunSummary:
    """What a run achieved: ground truth, ERR, cost and the graph's size (Table 1–2 columns)."""

    env: str
    seed: int
    ablation: str
    steps: int
    progression: float  # ground truth: floors cleared / turns survived
    score: float  # ground truth: run score / techs
    alive: bool
    err: float  # Execution-Responsive Rate: valid transitions / executed skills
    executions: int
    valid_executions: int
    actions: int  # concrete actions sent to the program
    tokens: int
    cost_usd: float
    cost_per_100_steps: float
    library_size: int
    skills_augmented: int
    skills_pruned: int
    nodes: int
    skill_edges: int
    similarity_edges: int
    objects: int = 0
    clusters: int = 0
    paths: dict[str, int] = field(default_factory=dict)  # steps by the path of their last execution
    # per path: [executions, valid transitions, executions that sent no input (an invoked
    # skill whose first operation did not ground; augmentation with nothing to try)]
    executions_by_path: dict[str, list[int]] = field(default_factory=dict)
    stopped: str = "steps"  # steps | terminated | interrupted | budget
    duration_s: float = 0.0
    log_path: str | None = None
    memory_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format_table(self) -> str:
        """A two-column table for people (the CLI prints it at the end of a run)."""
        rows = [
            ("environment", f"{self.env} (seed {self.seed}, {self.ablation})"),
            ("steps", f"{self.steps} ({self.stopped})"),
            ("progression", f"{self.progression:g}"),
            ("score", f"{self.score:g}"),
            ("alive", "yes" if self.alive else "no"),
            ("ERR", f"{self.err:.3f} ({self.valid_executions}/{self.executions} executions)"),
            ("actions", str(self.actions)),
            ("paths", ", ".join(f"{k} {v}" for k, v in sorted(self.paths.items())) or "-"),
            ("executions", _by_path(self.executions_by_path)),
            ("tokens", str(self.tokens)),
            ("cost", f"${self.cost_usd:.4f} (${self.cost_per_100_steps:.4f} / 100 steps)"),
            ("library size", str(self.library_size)),
            ("skills augmented", str(self.skills_augmented)),
            ("skills pruned", str(self.skills_pruned)),
            ("nodes", str(self.nodes)),
            ("skill edges", str(self.skill_edges)),
            ("similarity edges", str(self.similarity_edges)),
            ("objects", str(self.objects)),
            ("clusters", str(self.clusters)),
            ("duration", f"{self.duration_s:.1f} s"),
        ]
        if self.log_path:
            rows.append(("step log", self.log_path))
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


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
    stats: dict[str, int],
    truth: dict[str, Any],
    stopped: str,
    duration_s: float,
) -> RunSummary:
    """Build a summary from step-log dicts (shared by the runner and `kgagent runs show`)."""
    executions = [e for r in records for e in r.get("executions", [])]
    n_exec = len(executions)
    valid = sum(1 for e in executions if e.get("valid_transition"))
    steps = len(records)
    cost = float(sum(r.get("cost_usd", 0.0) for r in records))
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
        actions=int(sum(r.get("actions", 0) for r in records)),
        tokens=int(sum(r.get("tokens", 0) for r in records)),
        cost_usd=cost,
        cost_per_100_steps=100.0 * cost / steps if steps else 0.0,
        library_size=int(stats.get("library_size", 0)),
        skills_augmented=int(stats.get("skills_augmented", 0)),
        skills_pruned=int(stats.get("skills_pruned", 0)),
        nodes=int(stats.get("nodes", 0)),
        skill_edges=int(stats.get("skill_edges", 0)),
        similarity_edges=int(stats.get("similarity_edges", 0)),
        objects=int(stats.get("objects", 0)),
        clusters=int(stats.get("clusters", 0)),
        paths=dict(Counter(r.get("path", "idle") for r in records)),
        executions_by_path=executions_by_path(records),
        stopped=stopped,
        duration_s=duration_s,
    )


class _StopFlag:
    """Ctrl-C sets a flag instead of interrupting: the current step finishes first."""

    def __init__(self, log: Log) -> None:
        self.stop = False
        self._log = log
        self._old: Any = None

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum: int, frame: Any) -> None:
        if self.stop:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.stop = True
        self._log("interrupted: finishing the current step, then stopping (Ctrl-C again to abort)")

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class Runner:
    """Builds env, encoder, segmenter, brain and memory from one Config, and runs the agent.

    ``env``, ``encoder``, ``segmenter`` and ``brain`` may be passed in (tests,
    benchmarks); otherwise they are built from the config. ``progress=False``
    hides the tqdm bar.
    """

    def __init__(
        self,
        config: Config,
        *,
        memory_path: str | Path | None = None,
        env: Env | None = None,
        encoder: Any = None,
        segmenter: Any = None,
        brain: Any = None,
        progress: bool = True,
        log: Log | None = None,
    ) -> None:
        self.cfg = copy.deepcopy(config)
        self.cfg.validate()
        self.cfg.apply_ablation()
        self.memory_path = resolve_memory_path(memory_path or self.cfg.memory.path)
        self._env = env
        self._encoder = encoder
        self._segmenter = segmenter
        self._brain = brain
        self.progress = progress
        self.log: Log = log or (lambda m: print(m, file=sys.stderr))
        self.idle_change: float | None = None  # measured by the noise probe (live targets)

    def _build(self) -> tuple[Env, Any, Any, Any]:
        from kgagent.brain import make_brain
        from kgagent.envs.registry import make_env
        from kgagent.perception import make_encoder, make_segmenter

        env = self._env or make_env(self.cfg.run.env, self.cfg)
        encoder = self._encoder or make_encoder(self.cfg.perception, log=self.log)
        segmenter = self._segmenter or make_segmenter(self.cfg.perception, log=self.log)
        brain = self._brain or make_brain(self.cfg.brain, seed=self.cfg.run.seed, log=self.log)
        return env, encoder, segmenter, brain

    def log_file(self) -> Path:
        base = Path(self.cfg.run.log_dir).expanduser() if self.cfg.run.log_dir else None
        base = base or self.memory_path / "runs"
        base.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = base / f"{stamp}-{self.cfg.run.env}-{self.cfg.run.seed}.jsonl"
        n = 1
        while path.exists():
            path = base / f"{stamp}-{self.cfg.run.env}-{self.cfg.run.seed}-{n}.jsonl"
            n += 1
        return path

    def run(self, steps: int | None = None) -> RunSummary:
        """Run up to ``steps`` (default ``run.steps``, at most ``run.episode_limit``) and summarise."""
        from kgagent.memory import EncoderSpec, Memory

        cfg = self.cfg
        n_steps = min(steps if steps is not None else cfg.run.steps, cfg.run.episode_limit)
        if n_steps < 0:
            raise ConfigError("run.steps must be >= 0")
        env, encoder, segmenter, brain = self._build()
        record_dir = Path(cfg.run.record).expanduser() if cfg.run.record else None
        if record_dir is not None:
            record_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        records: list[dict[str, Any]] = []
        stopped = "steps"
        truth: dict[str, Any] = {}
        stats: dict[str, int] = {}
        log_path: Path | None = None
        mem = None
        try:
            mem = Memory.open(self.memory_path, cfg, encoder=EncoderSpec.of(encoder))
            log_path = self.log_file()
            env.reset(seed=cfg.run.seed)
            if env.live and cfg.desktop.noise_probe_s > 0:
                self._probe_noise(env)  # before the agent copies the config
            agent = Agent(cfg, mem, encoder, segmenter, brain, np.random.default_rng(cfg.run.seed))
            screen = Screen(
                env,
                change_floor=cfg.augment.min_change if env.live else 0.0,
                threshold=cfg.perception.change_threshold,
            )
            bar = _progress(n_steps, self.progress)
            with log_path.open("w") as fh, _StopFlag(self.log) as flag:
                fh.write(json.dumps(self._header(encoder, brain)) + "\n")
                try:
                    for _ in range(n_steps):
                        if screen.done:
                            stopped = "terminated"
                            break
                        if flag.stop:
                            stopped = "interrupted"
                            break
                        try:
                            rec = agent.step(screen)
                        except BudgetExceeded as e:
                            self.log(f"stopping: {e}")
                            stopped = "budget"
                            break
                        gt = env.ground_truth()  # harness only
                        truth = {
                            "progression": gt.progression,
                            "score": gt.score,
                            "alive": gt.alive,
                            "extra": gt.extra,
                        }
                        line = {"type": "step", **rec.to_dict(), "truth": truth}
                        records.append(line)
                        fh.write(json.dumps(line, default=_json_default) + "\n")
                        fh.flush()
                        if record_dir is not None:
                            _save_png(record_dir / f"step-{rec.step:05d}.png", screen.observe())
                        if bar is not None:
                            bar.set_postfix_str(_postfix(rec, records), refresh=False)
                            bar.update(1)
                    else:
                        if screen.done:
                            stopped = "terminated"
                except KeyboardInterrupt:
                    stopped = "interrupted"
                finally:
                    if bar is not None:
                        bar.close()
                    agent.finish()
                    if not truth:
                        gt = env.ground_truth()
                        truth = {
                            "progression": gt.progression,
                            "score": gt.score,
                            "alive": gt.alive,
                        }
                    stats = mem.stats().as_row()
                    summary = summarise(
                        records,
                        env=cfg.run.env,
                        seed=cfg.run.seed,
                        ablation=cfg.run.ablation,
                        stats=stats,
                        truth=truth,
                        stopped=stopped,
                        duration_s=time.perf_counter() - t0,
                    )
                    summary.log_path = str(log_path)
                    summary.memory_path = str(self.memory_path)
                    fh.write(json.dumps({"type": "summary", **summary.to_dict()}) + "\n")
        finally:
            if mem is not None:
                mem.close()
            env.close()
        return summary

    def _probe_noise(self, env: Env) -> None:
        """Measure how much the idle target changes on its own; lift the change floors above it."""
        d = self.cfg.desktop
        idle = idle_change(
            env.observe,
            duration_s=d.noise_probe_s,
            interval_s=max(d.settle_interval_s, 0.01),
            threshold=self.cfg.perception.change_threshold,
        )
        self.idle_change = idle
        if idle > 0:
            # a screen that never holds still settles once consecutive screenshots
            # differ no more than the idle screen does
            threshold = self.cfg.perception.change_threshold
            env.tolerate_motion(lambda a, b: visual_change(a, b, threshold) <= idle)
        raised = self.cfg.raise_change_floors(idle)
        if raised:
            changes = ", ".join(f"{k} {a:.3%} -> {b:.3%}" for k, (a, b) in raised.items())
            self.log(
                f"noise: the target changes {idle:.3%} of its pixels without any action; "
                f"raised {changes} for this run, and an action's screen counts as settled "
                "once consecutive screenshots differ no more than that "
                "(desktop.noise_probe_s=0 turns the probe off)"
            )

    def _header(self, encoder: Any, brain: Any) -> dict[str, Any]:
        return {
            "type": "run",
            "env": self.cfg.run.env,
            "seed": self.cfg.run.seed,
            "ablation": self.cfg.run.ablation,
            "encoder": getattr(encoder, "identity", "?"),
            "brain": getattr(brain, "name", "?"),
            "memory": str(self.memory_path),
            "idle_change": self.idle_change,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "config": self.cfg.to_dict(),
        }


def read_log(path: str | Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict | None]:
    """(run header, step lines, summary line) of a JSONL step log."""
    header, steps, summary = None, [], None
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except FileNotFoundError:
        raise ConfigError(f"no step log at {p}") from None
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except json.JSONDecodeError:
            if i == len(lines):  # a run killed mid-write: ignore the torn last line
                break
            raise ConfigError(f"{p}:{i} is not JSON; is this a kgagent step log?") from None
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


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="play", unit="step", file=sys.stderr, dynamic_ncols=True)


def _postfix(rec: StepRecord, records: list[dict[str, Any]]) -> str:
    added = sum(len(r.get("skills_added", [])) for r in records)
    name = (rec.skill_name or "-")[:28]
    return f"{rec.path}: {name} | +skills {added} | R {rec.r_total:.2f}"


def _save_png(path: Path, image: np.ndarray) -> None:
    import cv2

    cv2.imwrite(str(path), cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple | set):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
