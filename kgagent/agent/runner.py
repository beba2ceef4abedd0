"""The harness around the agent: build everything from a Config, run, log, summarise.

The runner is the only place that holds the :class:`~kgagent.envs.base.Env` and reads
its ground truth (progression, score); the agent sees only the
:class:`~kgagent.agent.screen.Screen`. Ground truth goes into the step log and the
summary, never back into the agent.

A run writes one JSONL step log (:mod:`kgagent.runlog`; format in ``docs/agent.md``).
A run is one or more episodes: when the program ends before the step budget (a game
over, a launched program that exits) and the environment restarts
(``run.restart``), the next episode begins on the same memory. Ctrl-C, SIGTERM (what
``kill``, ``timeout``, ``docker stop`` and job schedulers send) or SIGHUP (the terminal
closed) finishes the current step
(the brain asks its endpoint nothing more: see :class:`~kgagent.agent.stopflag.StopFlag`), writes the summary and
stops; memory and environment are always closed in ``finally``.
"""

from __future__ import annotations

import operator
import re
import shutil
import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from kgagent.brain.base import Brain
from kgagent.brain.endpoint import EndpointUnusable, shown_url
from kgagent.config import Config
from kgagent.envs.base import Env
from kgagent.errors import BudgetExceeded, ConfigError, KGAgentError
from kgagent.paths import resolve_memory_path
from kgagent.perception.base import Segmenter, StateEncoder
from kgagent.perception.change import idle_change, visual_change
from kgagent.perception.reader import TextReader
from kgagent.runlog import LOG_VERSION, RunLogWriter, RunSummary, StepRecord, summarise
from kgagent.runlog_read import unfinished_run_note
from kgagent.seeding import player_rng
from kgagent.terminal import progress_bar, tell
from kgagent.textsafe import visible

from .baselines import make_agent
from .screen import Screen, call_env
from .stopflag import StopFlag

Log = Callable[[str], None]


class Runner:
    """Builds env, encoder, segmenter, brain and memory from one Config, and runs the agent.

    ``env``, ``encoder``, ``segmenter``, ``brain`` and ``reader`` (a
    :class:`~kgagent.perception.reader.TextReader`) may be passed in (tests, benchmarks,
    parts of the user's own); otherwise they are built from the config. An env passed in
    names the run by its ``name`` (its step log, summary and ``run.env`` in the logged
    config). ``progress=False`` hides the tqdm bar.

    Signals: the first Ctrl-C (or SIGTERM, SIGHUP) finishes the current step, and :meth:`run`
    returns the summary with :attr:`stop_signal` set: a script running several runs
    checks it to stop too. A second Ctrl-C aborts: the step log's summary is written,
    the memory closed, and ``KeyboardInterrupt`` raised (:attr:`last_summary` holds it).
    Signals reach only a run in the main thread: a run in another thread (a notebook's,
    a GUI's) is stopped the same graceful way with :meth:`stop`.
    """

    def __init__(
        self,
        config: Config,
        *,
        memory_path: str | Path | None = None,
        env: Env | None = None,
        encoder: StateEncoder | None = None,
        segmenter: Segmenter | None = None,
        brain: Brain | None = None,
        reader: TextReader | None = None,
        progress: bool = True,
        log: Log | None = None,
    ) -> None:
        config.validate()
        self.cfg = config.effective()  # the configuration the run really uses (logged)
        if env is not None and getattr(env, "name", "env") not in ("", "env"):
            # an env passed in is what runs: its name goes in the log, not run.env's default
            self.cfg.run.env = str(env.name)
        self.memory_path = resolve_memory_path(memory_path or self.cfg.memory.path)
        self._env = env
        self._encoder = encoder
        self._segmenter = segmenter
        self._brain = brain
        self._reader = reader
        self.progress = progress
        self.log: Log = log or tell
        self.idle_change: float | None = None  # measured by the noise probe (live targets)
        self.reprobes = 0  # the noise watched again during the run (desktop.noise_reprobe_after)
        #: the signal that stopped the last run (SIGINT, SIGTERM, SIGHUP); None when nothing did
        self.stop_signal: int | None = None
        #: the last run's summary, also when it ended by raising (an abort, an error)
        self.last_summary: RunSummary | None = None
        self._steps = 0
        self._stop_asked = False  # stop() was called: the run going on (or next) stops
        self._flag: StopFlag | None = None  # the run's, while its steps run
        self._stamp = ""  # the run's start, in its log names (run() sets it)
        self._start: datetime | None = None  # the same, with its UTC offset (the header's)

    def stop(self) -> None:
        """Stop the run going on after its current step, as the first Ctrl-C does: from any
        thread. :meth:`run` then returns its summary (``stopped``: ``interrupted``), with
        :attr:`stop_signal` None. A run still starting stops before its first step; one
        called when no run goes on stops the next :meth:`run` before its first step."""
        self._stop_asked = True
        flag = self._flag
        if flag is not None:
            flag.ask()

    def _build(self) -> tuple[StateEncoder, Segmenter, Brain]:
        from kgagent.brain import make_brain
        from kgagent.perception import make_encoder, make_segmenter

        encoder = self._encoder or make_encoder(self.cfg.perception, log=self.log)
        segmenter = self._segmenter or make_segmenter(self.cfg.perception, log=self.log)
        brain = self._brain or make_brain(self.cfg.brain, seed=self.cfg.run.seed, log=self.log)
        return encoder, segmenter, brain

    def _make_env(self) -> Env:
        """The environment, built after the memory is open (a launched program's log goes
        into the memory's runs folder, which must not exist before the memory does)."""
        from kgagent.envs.registry import make_env

        env = self._env or make_env(
            self.cfg.run.env, self.cfg, run_dir=self.log_dir(), stamp=self._stamp
        )
        restart = env.restarts if self.cfg.run.restart is None else self.cfg.run.restart
        limit = self.cfg.run.episode_limit
        if self._steps > limit and not restart:
            self.log(
                f"note: {self._steps} steps is above run.episode_limit ({limit}) and "
                f"{env.name} episodes do not restart: the run ends after {limit} steps "
                "(raise run.episode_limit to play longer)"
            )
        return env

    def log_dir(self) -> Path:
        """Where the step log (and a launched program's output) goes."""
        base = Path(self.cfg.run.log_dir).expanduser() if self.cfg.run.log_dir else None
        return base or self.memory_path / "runs"

    def log_file(self) -> Path:
        """The step log's path: the run's start time (as a launched program's log has it),
        the environment and the seed."""
        base = self.log_dir()
        base.mkdir(parents=True, exist_ok=True)
        stamp = self._stamp or time.strftime("%Y%m%d-%H%M%S")
        # an environment's name may hold a path separator (gym:ALE/Breakout-v5)
        env = re.sub(r"[^A-Za-z0-9_.:+=-]+", "_", self.cfg.run.env).strip("_") or "env"
        path = base / f"{stamp}-{env}-{self.cfg.run.seed}.jsonl"
        n = 1
        while path.exists():
            path = base / f"{stamp}-{env}-{self.cfg.run.seed}-{n}.jsonl"
            n += 1
        return path

    def run(self, steps: int | None = None) -> RunSummary:
        """Run ``steps`` steps (default ``run.steps``) over one or more episodes, and summarise."""
        from kgagent.memory import EncoderSpec, Memory

        cfg = self.cfg
        n_steps = steps if steps is not None else cfg.run.steps
        try:
            if isinstance(n_steps, bool):
                raise TypeError
            n_steps = operator.index(n_steps)  # an int, numpy's included; not "5" nor 5.0
        except TypeError:
            raise ConfigError(f"steps must be a whole number >= 0, not {n_steps!r}") from None
        if n_steps < 0:
            raise ConfigError("run.steps must be >= 0")
        self._steps = n_steps
        if self._env is None:  # before anything is built or created: one line, no memory
            from kgagent.envs.registry import check_env

            check_env(cfg.run.env)
        encoder, segmenter, brain = self._build()
        record_dir = Path(cfg.run.record).expanduser() if cfg.run.record else None
        t0 = time.perf_counter()
        records: list[dict[str, Any]] = []
        stopped = "steps"
        error: str | None = None  # the exception that ended the run, in one line
        truth: dict[str, Any] = {}
        log_path: Path | None = None
        mem = env = None
        episodes = 1
        ends: list[dict[str, Any]] = []  # the episode lines
        aborted = False  # a second Ctrl-C: raised again once the run is written and closed
        self.stop_signal = self.last_summary = None
        # local time in the names, as the user reads them; the header's ``started`` adds the
        # offset, which orders runs made under different time zones (rounds.log_order)
        self._start = start = datetime.now().astimezone()
        self._stamp = (
            f"{start.year:04d}{start.month:02d}{start.day:02d}"
            f"-{start.hour:02d}{start.minute:02d}{start.second:02d}"
        )
        created = not self.memory_path.exists()
        started = False  # the step log is open: from then on the memory is the user's record
        unstarted = False  # it failed before: a memory it created goes (see _discard)
        try:
            mem = Memory.open(self.memory_path, cfg, encoder=EncoderSpec.of(encoder))
            for note in mem.notes:
                self.log(note)
            # a previous run killed before its summary (we hold the writer's lock: not running)
            if not created and (
                note := unfinished_run_note(self.log_dir(), self.memory_path, _ids(mem))
            ):
                self.log(note)
            env = self._make_env()
            restart = env.restarts if cfg.run.restart is None else cfg.run.restart
            log_path = self.log_file()
            call_env(env, "reset", env.reset, seed=cfg.run.seed)
            if env.live and cfg.desktop.noise_probe_s > 0:
                self._probe_noise(env)  # before the agent copies the config
            agent = make_agent(
                cfg,
                mem,
                encoder,
                segmenter,
                brain,
                player_rng(cfg.run.seed),
                reader=self._reader,
            )
            target = _bound(env)
            if target:
                self.log(f"{env.name}: acting on {target}")
            screen = self._screen(env)
            if record_dir is not None:  # once the run can start: a failed start leaves none
                record_dir.mkdir(parents=True, exist_ok=True)
            in_episode = 0
            bar = _progress(n_steps, self.progress)
            with log_path.open("w") as fh, StopFlag(self.log, brain.interrupt) as flag:
                self._flag = flag
                if self._stop_asked:  # stop() while the run was starting
                    flag.ask()
                started = True
                out = RunLogWriter(fh)
                reader = str(getattr(agent.observer.reader, "identity", "?"))
                header = self._header(encoder, segmenter, brain, env.size)
                out.write("run", {**header, "reader": reader, "target": target})
                try:
                    for _ in range(n_steps):
                        if flag.stop:
                            stopped = "interrupted"
                            break
                        if screen.done or in_episode >= cfg.run.episode_limit:
                            end = _ending(env) if screen.done else "episode_limit"
                            ended = self._episode_end(env, episodes, in_episode, end)
                            out.write("episode", ended)
                            ends.append(ended)
                            if not restart:
                                stopped = end
                                break
                            episodes += 1
                            call_env(env, "reset", env.reset, seed=cfg.run.seed + episodes - 1)
                            agent.new_episode()
                            screen, in_episode = self._screen(env), 0
                            truth = {}  # the new episode's, also if it ends before a step
                        try:
                            rec = agent.step(screen)
                        except BudgetExceeded as e:
                            self.log(f"stopping: {e}")
                            stopped = "budget"
                            break
                        in_episode += 1
                        truth = _truth(env)  # harness only
                        line = {**rec.to_dict(), "truth": truth}
                        if events := env.events():
                            line["env_events"] = events
                        records.append({"type": "step", **line})
                        out.write("step", line)
                        if record_dir is not None:
                            _save_png(record_dir / f"step-{rec.step:05d}.png", screen.observe())
                        if bar is not None:
                            bar.set_postfix_str(_postfix(rec, records), refresh=False)
                            bar.update(1)
                    else:
                        if screen.done:
                            stopped = _ending(env)
                except KeyboardInterrupt:
                    stopped, aborted = "interrupted", True
                except EndpointUnusable as e:
                    stopped, error = "endpoint", _one_line(e)  # the CLI prints it too
                    raise
                except Exception as e:
                    # the target closed, the fail-safe, a broken store: the summary says
                    # so (the CLI prints the same line and exits 1), not "steps"
                    stopped, error = "error", _one_line(e)
                    raise
                finally:
                    if bar is not None:
                        bar.close()
                    finishing: Exception | None = None
                    try:
                        agent.finish()  # writes too: a full disk may refuse it
                    except Exception as e:
                        if error is None:  # else the steps' error, in flight, goes on
                            finishing = e  # raised once the summary is written
                            stopped, error = "error", _one_line(e)
                    for note in env.notes():
                        self.log(note)
                    if not truth:
                        truth = _truth(env)
                        truth.pop("extra")
                    summary = summarise(
                        records,
                        env=cfg.run.env,
                        seed=cfg.run.seed,
                        ablation=cfg.run.ablation,
                        stats=mem.stats().as_row(),
                        truth=truth,
                        stopped=stopped,
                        duration_s=time.perf_counter() - t0,
                        brain=brain.figures(),
                        ends=ends,
                        episodes=episodes,
                    )
                    if stopped == "interrupted" and not (flag.signum is None and flag.stop):
                        # a signal's; a second Ctrl-C raises before a flag (stop(): None)
                        self.stop_signal = flag.signum or signal.SIGINT
                    summary.episodes = episodes
                    summary.error = error
                    summary.log_path = str(log_path)
                    summary.memory_path = str(self.memory_path)
                    summary.target = _bound(env)  # the last start's window (restarts rebind)
                    closing: KGAgentError | None = None
                    if error is None:  # the memory's last checkpoint is part of the run
                        try:
                            mem.close()
                        except KGAgentError as e:
                            closing, summary.stopped, summary.error = e, "error", _one_line(e)
                    out.write("summary", summary.to_dict())
                    self.last_summary = summary
                    if closing is not None:
                        raise closing
                    if finishing is not None:
                        raise finishing
        except BaseException:
            unstarted = created and not started
            raise
        finally:
            self._flag, self._stop_asked = None, False
            try:
                if env is not None:
                    env.close()
            finally:
                if mem is not None:
                    mem.close()
                if unstarted:
                    self._discard()
        if aborted:
            raise KeyboardInterrupt
        return summary

    def _discard(self) -> None:
        """The memory this run created, when the run could not start (no window, no
        display, an environment that failed to build): it holds nothing learned, and left
        behind it would fix the encoder of a path the user will use again. Kept when
        anything else was written into it (a launched program's log, to read)."""
        runs = self.memory_path / "runs"
        if runs.is_dir() and any(runs.iterdir()):
            return
        shutil.rmtree(self.memory_path, ignore_errors=True)

    def _screen(self, env: Env) -> Screen:
        screen = Screen(
            env,
            change_floor=self.cfg.augment.min_change if env.live else 0.0,
            threshold=self.cfg.perception.change_threshold,
        )
        if env.live and self.cfg.desktop.noise_probe_s > 0:
            screen.rewatch_after(
                self.cfg.desktop.noise_reprobe_after, lambda: self._reprobe_noise(env)
            )
        return screen

    @staticmethod
    def _episode_end(env: Env, episode: int, steps: int, reason: str) -> dict[str, Any]:
        """The ``episode`` log line: which episode ended, after how many steps, and why
        (``terminated`` | ``truncated`` | ``episode_limit``); what the environment reports
        at an episode's end; and the ground truth it ended with (``truth``: progression,
        score, alive), from which the summary adds up the run's episodes."""
        info = env.end_info()
        info.pop("truncated", None)  # said by ``reason``
        truth = _truth(env)
        truth.pop("extra")
        return {"episode": episode, "steps": steps, "reason": reason, **info, "truth": truth}

    def _watch_idle(self, env: Env, *, below_threshold: bool = False) -> float:
        """The idle target's Δ (:func:`idle_change`); the settle tolerates as much motion.
        With ``below_threshold`` it tolerates changes below the grey-level threshold even
        when the Δ is 0 (otherwise it then waits for equal screenshots)."""
        d = self.cfg.desktop
        threshold = self.cfg.perception.change_threshold
        idle = idle_change(
            env.observe,
            duration_s=d.noise_probe_s,
            interval_s=max(d.settle_interval_s, 0.01),
            threshold=threshold,
        )
        # a screen that never holds still settles once consecutive screenshots differ
        # no more than the idle screen does
        env.tolerate_motion(
            (lambda a, b: visual_change(a, b, threshold) <= idle)
            if idle > 0 or below_threshold
            else None
        )
        return idle

    def _reprobe_noise(self, env: Env) -> None:
        """Inputs in a row whose screen never held still: the target's noise may have grown
        since the start (a game's night, an animation that began). Watch it again; the
        settle follows, and from now on also takes changes below the grey-level threshold
        for stillness (faint noise: the agent does not count them as changes either). The
        change floors (the agent's) stay as measured at the start."""
        n, env.unsettled = env.unsettled, 0
        idle = self._watch_idle(env, below_threshold=True)
        self.reprobes += 1
        self.log(
            f"noise: {n} inputs in a row did not hold still within "
            f"desktop.settle_timeout_s; watched the target again: it changes {idle:.3%} of "
            "its pixels without any action (by more than perception.change_threshold grey "
            "levels), and an action's screen now counts as settled once consecutive "
            "screenshots differ no more than that (the change floors stay)"
        )

    def _probe_noise(self, env: Env) -> None:
        """Measure how much the idle target changes on its own; lift the change floors above it."""
        d = self.cfg.desktop
        idle = self._watch_idle(env)
        self.idle_change = idle
        raised = self.cfg.raise_change_floors(idle)
        if raised:
            changes = ", ".join(f"{k} {a:.3%} -> {b:.3%}" for k, (a, b) in raised.items())
            self.log(
                f"noise: the target changes {idle:.3%} of its pixels without any action; "
                f"raised {changes} for this run, and an action's screen counts as settled "
                "once consecutive screenshots differ no more than that "
                "(desktop.noise_probe_s=0 turns the probe off)"
            )
        if (floor := d.noise_margin * idle) >= 1.0:
            self.log(
                f"noise: warning: a floor of {floor:.0%} of the "
                "pixels is more than any action can change, so no action will count as "
                "changing the screen; bind to a part of it that holds still (--region X,Y,W,H) "
                "or set the floors by hand with desktop.noise_probe_s=0"
            )

    def _header(
        self,
        encoder: StateEncoder,
        segmenter: Segmenter,
        brain: Brain,
        env_size: tuple[int, int],
    ) -> dict[str, Any]:
        return {
            "log_version": LOG_VERSION,
            "env": self.cfg.run.env,
            "seed": self.cfg.run.seed,
            "ablation": self.cfg.run.ablation,
            "encoder": getattr(encoder, "identity", "?"),
            "segmenter": getattr(segmenter, "identity", type(segmenter).__name__),
            "brain": getattr(brain, "name", "?"),
            "memory": str(self.memory_path),
            "screen": list(env_size),
            "idle_change": self.idle_change,
            "started": (self._start or datetime.now().astimezone()).isoformat(timespec="seconds"),
            "config": _shown_config(self.cfg),
        }


def _shown_config(cfg: Config) -> dict[str, Any]:
    """The configuration as the step log keeps it: a password in the brain's URL masked."""
    d = cfg.to_dict()
    brain = d.get("brain", {})
    if brain.get("base_url"):
        brain["base_url"] = shown_url(brain["base_url"])
    return d


def _ids(mem: Any) -> Callable[[], set[str]]:
    """The memory's state ids, read when asked (a killed run's note checks its log by them)."""
    return lambda: {r["id"] for r in mem.run_named("state_revisions")}


def _bound(env: Any) -> str | None:
    """What the environment is bound to now (the window of the program's last start), for
    a summary; None for one that does not say."""
    describe = getattr(env, "describe_target", None)
    return describe() if callable(describe) else None


#: The characters of a skill's name in the progress bar's postfix (cut ones end in "...").
POSTFIX_NAME = 28


def _progress(total: int, enabled: bool) -> Any:
    return progress_bar(total, "play", "step") if enabled else None


def _postfix(rec: StepRecord, records: list[dict[str, Any]]) -> str:
    added = sum(len(r.get("skills_added", [])) for r in records)
    name = visible(rec.skill_name or "-")  # a name may hold a hostile label
    name = name if len(name) <= POSTFIX_NAME else name[: POSTFIX_NAME - 3] + "..."
    return f"{rec.path}: {name} | +skills {added} | R {rec.r_total:.2f}"


def _one_line(e: BaseException) -> str:
    """An exception as the summary's ``error``: its message on one line, else its type."""
    return " ".join(str(e).split()) or type(e).__name__


def _ending(env: Env) -> str:
    """Why an episode the environment ended is over: ``truncated`` when its ``end_info``
    says it was cut short (Gymnasium's ``truncated``: a time limit), else ``terminated``."""
    return "truncated" if env.end_info().get("truncated") else "terminated"


def _truth(env: Env) -> dict[str, Any]:
    gt = env.ground_truth()
    return {"progression": gt.progression, "score": gt.score, "alive": gt.alive, "extra": gt.extra}


def _save_png(path: Path, image: np.ndarray) -> None:
    import cv2

    cv2.imwrite(str(path), cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))
