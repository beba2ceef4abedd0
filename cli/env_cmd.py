"""`kgagent env`: list the environments and render one's first screen.

No logic lives here: it calls :mod:`kgagent.envs.registry`.
"""

from __future__ import annotations

from pathlib import Path

import click

from kgagent.config import Config
from kgagent.config_fields import MAX_INT
from kgagent.envs.registry import describe_envs, make_env
from kgagent.errors import EnvironmentError_

from .common import NonEmptyPath, common_options, env_name, mark_writes
from .output import emit


@click.group("env")
def env_group() -> None:
    """Environments the agent can play."""


@env_group.command("list")
@common_options(memory=False, config=False)
def list_cmd(fmt: str) -> None:
    """List environment names with a one-line description."""
    emit([{"name": name, "description": desc} for name, desc in describe_envs()], fmt)


def _png_path(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if Path(value).suffix.lower() != ".png":
        raise click.BadParameter(f"{value!r}: env show writes a PNG image; name a .png file")
    return value


@env_group.command("show")
@click.argument("name", callback=env_name)
@click.option(
    "--seed",
    default=None,
    type=click.IntRange(min=0, max=MAX_INT),
    help="Seed of the built-in game (default: run.seed).",
)
@click.option(
    "--out",
    required=True,
    type=NonEmptyPath(dir_okay=False),
    callback=_png_path,
    help="PNG file to write (its name must end in .png).",
)
@click.option("--window", default=None, help="desktop only: window title or class to bind to.")
@common_options(memory=False, fmt=False)
def show_cmd(name: str, seed: int | None, out: str, window: str | None, config: Config) -> None:
    """Render the first screen of environment NAME to a PNG file."""
    mark_writes()
    from kgagent.memory.files import png_bytes

    cfg = config
    if seed is not None:
        cfg.run.seed = seed
    if window and name != "desktop":  # it would be dropped without a word
        raise click.UsageError(f"--window applies to desktop only, not to {name}: leave it out")
    if window:
        cfg.desktop.window = window
    cfg.validate()
    env = make_env(name, cfg)
    try:
        obs, _info = env.reset(cfg.run.seed)
        try:  # encoded here, so that a failed write says why (OpenCV's says neither)
            Path(out).write_bytes(png_bytes(obs))
        except OSError as e:
            raise EnvironmentError_(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        env.close()
    h, w = obs.shape[:2]
    click.echo(f"wrote {Path(out)} ({w}x{h}, {name}, seed {cfg.run.seed})")
