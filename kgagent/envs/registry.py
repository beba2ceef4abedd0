"""Names of the environments ``kgagent play`` and the benchmarks can build.

Why a registry: the CLI and the harness name an environment with a string
(``run.env``); this is the one place that maps names to classes, so that the
desktop driver (and pyautogui) or Gymnasium is imported only when it is asked for.
"""

from __future__ import annotations

import time
from pathlib import Path

from kgagent.config import Config
from kgagent.envs.base import Env
from kgagent.errors import ConfigError

GYM_PREFIX = "gym:"

ENVS: dict[str, str] = {
    "cardgame": "built-in deck-building card battler (Slay the Spire-like), 1280x720",
    "civgame": "built-in turn-based civilization game (Civilization V-like), 1280x720",
    "desktop": (
        "a real X11 program: bind with desktop.window=TITLE|class:C|pid:N or "
        "desktop.region=x,y,w,h, or start one with desktop.launch=CMD"
    ),
    "gym:ID": (
        "a Gymnasium environment as pixels and keys (its own key map), e.g. gym:crafter, "
        "gym:ALE/Breakout-v5; needs the games extra"
    ),
}


def is_env_name(name: str) -> bool:
    """Whether ``name`` names an environment (``gym:ID`` for any non-empty ID)."""
    return (name in ENVS and name != "gym:ID") or (
        name.startswith(GYM_PREFIX) and len(name) > len(GYM_PREFIX)
    )


def check_env(name: str) -> None:
    """Refuse, in one line, an environment that cannot be built, before a run sets anything
    up: an unknown name, or a ``gym:ID`` that Gymnasium cannot make (an unknown id, a
    ``gym:MODULE:ID`` whose module does not import)."""
    if not is_env_name(name):
        raise ConfigError(
            f"unknown environment {name!r}; known: {', '.join(ENVS)} (see `kgagent env list`)"
        )
    if name.startswith(GYM_PREFIX):
        from kgagent.envs.gym_ids import unknown_reason

        reason = unknown_reason(name[len(GYM_PREFIX) :])
        if reason is not None:
            raise ConfigError(reason)


def make_env(
    name: str, config: Config, *, run_dir: str | Path | None = None, stamp: str | None = None
) -> Env:
    """Build the environment called ``name``, seeded with ``config.run.seed``.

    ``run_dir``: the run's folder; a launched program's output goes there
    (``<stamp>-desktop-<seed>.program.log``, ``stamp`` the run's start as its step log has
    it; now when not given) unless ``desktop.program_log`` names a file.
    """
    if name == "cardgame":
        from kgagent.envs.cardgame import CardGame

        return CardGame(seed=config.run.seed)
    if name == "civgame":
        from kgagent.envs.civgame import CivGame

        return CivGame(seed=config.run.seed)
    if name == "desktop":
        from kgagent.envs.desktop import DesktopEnv, DesktopOptions

        opts = DesktopOptions.of(config.desktop)
        if opts.launch and not opts.program_log:
            folder = run_dir or config.run.log_dir
            if folder:
                when = stamp or time.strftime("%Y%m%d-%H%M%S")
                log = Path(folder).expanduser() / f"{when}-desktop-{config.run.seed}.program.log"
                opts.program_log = str(log)
        return DesktopEnv(config.desktop, options=opts)
    if name.startswith(GYM_PREFIX) and len(name) > len(GYM_PREFIX):
        from kgagent.envs.gym import GymEnv, GymOptions

        opts_g = GymOptions.of(getattr(config, "gym", None))
        return GymEnv(name[len(GYM_PREFIX) :], seed=config.run.seed, options=opts_g)
    raise ConfigError(
        f"unknown environment {name!r}; known: {', '.join(ENVS)} (see `kgagent env list`)"
    )


def describe_envs() -> list[tuple[str, str]]:
    """(name, one-line description) of every environment, for `kgagent env list`."""
    return list(ENVS.items())
