"""`kgagent play`: run the agent on an environment and print the run's summary.

No logic lives here: options become a :class:`~kgagent.config.Config`, and
:class:`kgagent.agent.runner.Runner` does the rest. With no arguments it plays
the built-in card game with the offline brain, weight-free perception where no
weights are configured, and the default memory.
"""

from __future__ import annotations

from pathlib import Path

import click

from kgagent.config import ABLATIONS, Config
from kgagent.envs.registry import ENVS
from kgagent.errors import ConfigError

from .common import config_options, memory_option


def _region(value: str | None) -> tuple[int, int, int, int] | None:
    if value is None:
        return None
    try:
        x, y, w, h = (int(v) for v in value.split(","))
    except ValueError:
        raise ConfigError(f"--region must be x,y,w,h in pixels, not {value!r}") from None
    if w <= 0 or h <= 0:
        raise ConfigError(f"--region needs a positive width and height, not {value!r}")
    return (x, y, w, h)


@click.command("play")
@click.option(
    "--env",
    "env_name",
    type=click.Choice(sorted(ENVS)),
    default=None,
    help="Environment to play (default: run.env, the built-in card game).",
)
@click.option("--window", default=None, help="desktop: bind to the window with this title/class.")
@click.option("--region", default=None, metavar="X,Y,W,H", help="desktop: bind to a screen region.")
@click.option(
    "--steps", type=click.IntRange(min=0), default=None, help="Steps to run (default: run.steps)."
)
@click.option("--seed", type=int, default=None, help="Seed of the game and of the agent.")
@memory_option
@config_options
@click.option(
    "--brain-url", default=None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."
)
@click.option("--brain-model", default=None, help="Model name at the endpoint.")
@click.option(
    "--ablation",
    type=click.Choice(ABLATIONS),
    default=None,
    help="Run an ablation of the papers (default: full).",
)
@click.option(
    "--record",
    type=click.Path(file_okay=False),
    default=None,
    help="Save the screenshot after every step into this directory.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the JSONL step log goes (default: <memory>/runs).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def play_cmd(
    env_name: str | None,
    window: str | None,
    region: str | None,
    steps: int | None,
    seed: int | None,
    memory: Path,
    config: Config,
    brain_url: str | None,
    brain_model: str | None,
    ablation: str | None,
    record: str | None,
    log_dir: str | None,
    quiet: bool,
) -> None:
    """Let the agent play ENV, learning into the memory, and print a summary table."""
    from kgagent.agent.runner import Runner

    cfg = config
    if env_name:
        cfg.run.env = env_name
    if window:
        cfg.desktop.window = window
    if region:
        cfg.desktop.region = _region(region)
    if (window or region) and not env_name:
        cfg.run.env = "desktop"
    if steps is not None:
        cfg.run.steps = steps
    if seed is not None:
        cfg.run.seed = seed
    if brain_url:
        cfg.brain.base_url = brain_url
    if brain_model:
        cfg.brain.model = brain_model
    if ablation:
        cfg.run.ablation = ablation
    if record:
        cfg.run.record = record
    if log_dir:
        cfg.run.log_dir = log_dir
    cfg.validate()
    summary = Runner(cfg, memory_path=memory, progress=not quiet).run()
    click.echo(summary.format_table())
