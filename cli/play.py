"""`kgagent play`: run the agent on an environment and print the run's summary.

No logic lives here: options become a :class:`~kgagent.config.Config`, and
:class:`kgagent.agent.runner.Runner` does the rest. With no arguments it plays
the built-in card game with the offline brain, weight-free perception where no
weights are configured, and the default memory. The whole configuration is
validated before the memory is opened.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kgagent.config import ABLATIONS, Config
from kgagent.envs.registry import ENVS, is_env_name
from kgagent.errors import ConfigError

from .common import common_options
from .output import emit_record


def _env_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or is_env_name(value):
        return value
    known = ", ".join(ENVS)
    raise click.BadParameter(f"{value!r} is not an environment; known: {known}")


@click.command("play")
@click.option(
    "--env",
    "env_name",
    default=None,
    callback=_env_name,
    metavar="ENV",
    help=f"Environment to play: {', '.join(ENVS)} (default: run.env, the built-in card game).",
)
@click.option(
    "--window",
    default=None,
    help="desktop: bind to the window with this title, class:NAME, title:TEXT or pid:N.",
)
@click.option("--region", default=None, metavar="X,Y,W,H", help="desktop: bind to a screen region.")
@click.option(
    "--launch",
    default=None,
    metavar="CMD",
    help="desktop: start CMD, bind to its first window, restart it when it exits, stop it at the end.",
)
@click.option(
    "--display",
    default=None,
    metavar="DISPLAY|new",
    help="desktop: the X display (default $DISPLAY; without one, --launch starts a private Xvfb).",
)
@click.option(
    "--screen", default=None, metavar="WxH", help="desktop: size of a private Xvfb's screen."
)
@click.option(
    "--steps", type=click.IntRange(min=0), default=None, help="Steps to run (default: run.steps)."
)
@click.option("--seed", type=int, default=None, help="Seed of the game and of the agent (>= 0).")
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
@common_options()
def play_cmd(
    env_name: str | None,
    window: str | None,
    region: str | None,
    launch: str | None,
    display: str | None,
    screen: str | None,
    steps: int | None,
    seed: int | None,
    brain_url: str | None,
    brain_model: str | None,
    ablation: str | None,
    record: str | None,
    log_dir: str | None,
    quiet: bool,
    memory: Path,
    config: Config,
    fmt: str,
) -> None:
    """Let the agent play ENV, learning into the memory, and print the run's summary."""
    from kgagent.agent.runner import Runner

    cfg = config
    for flag, given in (("--window", window), ("--region", region), ("--launch", launch)):
        if given is not None and not given.strip():
            # an unset shell variable ("--launch $PROG"): say so, not "no X display"
            raise ConfigError(f"{flag} is empty: give it a value, or leave it out")
    if region:
        cfg.set_dotted(f"desktop.region={region}")
    if screen:
        cfg.set_dotted(f"desktop.screen_size={screen.lower().replace('x', ',')}")
    if (window or region or launch) and not env_name:
        env_name = "desktop"
    for dotted, value in (
        ("run.env", env_name),
        ("desktop.window", window),
        ("desktop.launch", launch),
        ("desktop.display", display),
        ("run.steps", steps),
        ("run.seed", seed),
        ("brain.base_url", brain_url),
        ("brain.model", brain_model),
        ("run.ablation", ablation),
        ("run.record", record),
        ("run.log_dir", log_dir),
    ):
        if value is not None and value != "":
            section, name = dotted.split(".")
            setattr(getattr(cfg, section), name, value)
    cfg.validate()  # before the memory is opened: a bad value writes nothing
    runner = Runner(cfg, memory_path=memory, progress=not quiet)
    summary = runner.run()
    emit_record(summary.to_dict(), fmt, table=summary.format_table())
    if runner.stop_signal is not None:
        # stopped by a signal, cleanly: the shell's code for it, so a script can tell
        sys.exit(128 + runner.stop_signal)
