"""Names of the environments ``kgagent play`` and the benchmarks can build.

Why a registry: the CLI and the harness name an environment with a string
(``run.env``); this is the one place that maps names to classes, so that the
desktop driver (and pyautogui) is imported only when it is asked for.
"""

from __future__ import annotations

from kgagent.config import Config
from kgagent.envs.base import Env
from kgagent.errors import ConfigError

ENVS: dict[str, str] = {
    "cardgame": "built-in deck-building card battler (Slay the Spire-like), 1280x720",
    "civgame": "built-in turn-based civilization game (Civilization V-like), 1280x720",
    "desktop": "a real X11 program: bind with desktop.window=TITLE or desktop.region=x,y,w,h",
}


def make_env(name: str, config: Config) -> Env:
    """Build the environment called ``name``; built-in games are seeded with ``config.run.seed``."""
    if name == "cardgame":
        from kgagent.envs.cardgame import CardGame

        return CardGame(seed=config.run.seed)
    if name == "civgame":
        from kgagent.envs.civgame import CivGame

        return CivGame(seed=config.run.seed)
    if name == "desktop":
        from kgagent.envs.desktop import DesktopEnv

        return DesktopEnv(config.desktop)
    raise ConfigError(
        f"unknown environment {name!r}; known: {', '.join(ENVS)} (see `kgagent env list`)"
    )


def describe_envs() -> list[tuple[str, str]]:
    """(name, one-line description) of every environment, for `kgagent env list`."""
    return list(ENVS.items())
