"""Harness baselines: players that know the environment's actions, which the agent never does.

``random_keys`` is Hafner's random agent (Crafter, 2021): one of a ``gym:ID``
environment's own actions, uniformly, per step (pressed as its key where the
environment's key map has one), the episode restarted when it ends. It has no memory; it writes a step log like the agent's (header, a step line
with the ground truth per step, episode lines, a summary) so that its figures are
read the same way.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kgagent.bench.spec_types import shown_values
from kgagent.config import Config
from kgagent.errors import ConfigError
from kgagent.runlog import LOG_VERSION, RunLogWriter, RunSummary, summarise
from kgagent.seeding import player_rng


def run_random_keys(cfg: Config, steps: int, log_dir: Path) -> RunSummary:
    """``steps`` uniformly random native actions of ``cfg.run.env`` (seeded by run.seed)."""
    from kgagent.actions import Action
    from kgagent.agent.screen import rgb
    from kgagent.envs.registry import make_env

    env: Any = make_env(cfg.run.env, cfg)
    t0 = time.perf_counter()
    try:
        if not hasattr(env, "step_index"):
            raise ConfigError(
                f"random_keys needs an environment with its own action list (gym:ID), not {cfg.run.env}"
            )
        rgb(env.observe(), env)  # a game the agent cannot see is refused here too
        names = env.action_names
        # An action the program has a key for is pressed as that key, as a player (and
        # benchmarks/crafter.py) would; only an action without one (Crafter's no-op) is
        # stepped by its index. The world can tell: Crafter draws night noise from the
        # world's own random numbers when it renders.
        keys = {name: key for key, name in env.key_map.items() if name in names}
        rng = player_rng(cfg.run.seed)  # not the world's numbers (kgagent.seeding)
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-random_keys-{cfg.run.seed}.jsonl"
        records: list[dict[str, Any]] = []
        ends: list[dict[str, Any]] = []  # the episode lines
        episodes, in_episode = 1, 0
        with path.open("w") as fh:
            out = RunLogWriter(fh)
            out.write("run", _header(cfg, env, names))
            ended = False  # the episode ended: the next step starts another (as the runner does)
            for i in range(steps):
                if ended:
                    env.reset()
                    episodes, in_episode, ended = episodes + 1, 0, False
                index = int(rng.integers(len(names)))
                key = keys.get(names[index])
                if key is not None:
                    *_, term, trunc, _ = env.step(Action("key", key=key))
                else:
                    *_, term, trunc, _ = env.step_index(index)
                in_episode += 1
                gt = env.ground_truth()
                truth = {"progression": gt.progression, "score": gt.score, "alive": gt.alive}
                line = {"step": i + 1, "path": "random_keys", "actions": 1, "action": names[index]}
                line["truth"] = {**truth, "extra": gt.extra}
                records.append(line)
                out.write("step", line)
                if term or trunc:
                    end = "terminated" if term else "truncated"
                    info = {"episode": episodes, "steps": in_episode, "reason": end}
                    info = {**info, **env.end_info(), "truth": truth}  # as the runner's
                    info.pop("truncated", None)  # said by ``reason``
                    out.write("episode", info)
                    ends.append(info)
                    ended = True
            if records:  # the ground truth at the last step
                last = dict(records[-1]["truth"])
                last.pop("extra", None)
            else:
                gt = env.ground_truth()
                last = {"progression": gt.progression, "score": gt.score, "alive": gt.alive}
            summary = summarise(
                records,
                env=cfg.run.env,
                seed=cfg.run.seed,
                ablation="random_keys",
                stats={},
                truth=last,
                stopped="steps",
                duration_s=time.perf_counter() - t0,
                ends=ends,
                episodes=episodes,
            )
            summary.log_path = str(path)
            out.write("summary", summary.to_dict())
    finally:
        env.close()
    return summary


def _header(cfg: Config, env: Any, names: list[str]) -> dict[str, Any]:
    return {
        "log_version": LOG_VERSION,
        "env": cfg.run.env,
        "seed": cfg.run.seed,
        "ablation": "random_keys",
        "encoder": "-",
        "brain": "-",
        "memory": None,
        "screen": list(env.size),
        "actions": names,
        "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        "config": shown_values(cfg.to_dict()),
    }
