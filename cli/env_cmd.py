"""`kgagent env`: list the environments and render one's first screen.

No logic lives here: it calls :mod:`kgagent.envs.registry`.
"""

from __future__ import annotations

from pathlib import Path

import click

from kgagent.config import Config
from kgagent.envs.registry import describe_envs, make_env
from kgagent.errors import EnvironmentError_


@click.group("env")
def env_group() -> None:
    """Environments the agent can play."""


@env_group.command("list")
def list_cmd() -> None:
    """List environment names with a one-line description."""
    for name, desc in describe_envs():
        click.echo(f"{name:10s} {desc}")


@env_group.command("show")
@click.argument("name")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the built-in game.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="PNG file to write.")
@click.option("--window", default=None, help="desktop only: window title or class to bind to.")
def show_cmd(name: str, seed: int, out: str, window: str | None) -> None:
    """Render the first screen of environment NAME to a PNG file."""
    from kgagent.envs.render import to_png

    cfg = Config()
    cfg.run.seed = seed
    if window:
        cfg.desktop.window = window
    env = make_env(name, cfg)
    try:
        obs, _info = env.reset(seed)
        try:
            to_png(obs, out)
        except OSError as e:
            raise EnvironmentError_(f"cannot write {out}: {e}") from None
    finally:
        env.close()
    h, w = obs.shape[:2]
    click.echo(f"wrote {Path(out)} ({w}x{h}, {name}, seed {seed})")
